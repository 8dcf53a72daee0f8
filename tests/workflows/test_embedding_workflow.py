"""run_embedding.py end to end on real slices: cosine regression on 480 STS-B train pairs
evaluated on 100 STS-B dev pairs (a tiny model from scratch), in-batch negatives on MRPC
positives; the Spearman before and after in eval_results.json (checked against scipy on the
best checkpoint), the export answering as a client asks it, as the Python AlbertEmbedder on
the best checkpoint does, and bad input as one line with nothing written."""

import json

import numpy as np
import pytest

from tests.support.harness import SHARED_DATA, WORKFLOW_CONFIG
from tests.support.in_process import run_command
from tests.support.serving_client import served

SPM = SHARED_DATA / "spm" / "de-30k-clean.model"
GLUE = SHARED_DATA / "glue"
LENGTH = 32


def _args(out, config, *extra):
    return [
        "run_embedding.py",
        f"--output_dir={out}",
        f"--spm_model_file={SPM}",
        f"--albert_config_file={config}",
        f"--max_seq_length={LENGTH}",
        "--train_batch_size=16",
        "--steps_per_loop=20",
        "--save_checkpoints_steps=20",
        "--learning_rate=3e-4",
        *extra,
    ]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Slices of STS-B train (480 pairs), dev (100) and MRPC train (300 rows), the tiny
    config."""
    if not SPM.exists() or not (GLUE / "STS-B").is_dir() or not (GLUE / "MRPC").is_dir():
        pytest.skip(f"real data not available: {SPM}, {GLUE}/STS-B or MRPC is absent")
    root = tmp_path_factory.mktemp("embedding")
    for name, source, rows in [
        ("train.tsv", GLUE / "STS-B" / "train.tsv", 480),
        ("dev.tsv", GLUE / "STS-B" / "dev.tsv", 100),
        ("mrpc.tsv", GLUE / "MRPC" / "train.tsv", 300),
    ]:
        lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
        (root / name).write_text("".join(lines[: rows + 1]), encoding="utf-8")
    (root / "albert_config.json").write_text(json.dumps(WORKFLOW_CONFIG))
    return root


@pytest.fixture(scope="module")
def runs(data):
    """Both objectives' runs: cosine (evaluated, exported) and contrastive."""
    config = data / "albert_config.json"
    cosine = run_command(
        *_args(
            data / "cosine",
            config,
            "--do_train",
            f"--train_file={data / 'train.tsv'}",
            f"--eval_file={data / 'dev.tsv'}",
            "--train_step=40",
            "--eval_every=20",
            f"--export_dir={data / 'export'}",
            "--do_predict",
            f"--predict_file={data / 'dev.tsv'}",
        ),
        timeout=900,
    )
    contrastive = run_command(
        *_args(
            data / "contrastive",
            config,
            "--do_train",
            "--objective=contrastive",
            f"--train_file={data / 'mrpc.tsv'}",
            "--train_format=mrpc",
            "--train_step=20",
            "--steps_per_loop=10",
            "--save_checkpoints_steps=10",
            "--num_runs=2",
            f"--eval_file={data / 'dev.tsv'}",
        ),
        timeout=900,
    )
    for run in (cosine, contrastive):
        assert run.returncode == 0, run.report()
    return {"cosine": cosine, "contrastive": contrastive}


def _metrics(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_both_objectives_lower_the_loss_and_cosine_raises_spearman(runs, data):
    for name, out, steps in [
        ("cosine", data / "cosine", [20, 40]),
        ("contrastive", data / "contrastive" / "run_0", [10, 20]),
    ]:
        train = [r for r in _metrics(out) if r["split"] == "train"]
        assert [r["step"] for r in train] == steps
        first, last = train[0]["embedding_loss"], train[-1]["embedding_loss"]
        print(f"{name}: embedding_loss {first:.4f} → {last:.4f}")
        assert last < 0.8 * first, name
    assert "train: 214 pairs from" in runs["contrastive"].stdout  # MRPC's first 300: positives
    report = json.loads((data / "cosine" / "eval_results.json").read_text())
    evals = [r for r in _metrics(data / "cosine") if r["split"] == "eval"]
    assert [r["step"] for r in evals] == [0, 20, 40]  # before training, --eval_every, end
    before, after = report["unsupervised"]["spearman"], report["final"]["spearman"]
    print(f"STS-B dev Spearman (100 pairs): {before:.3f} → {after:.3f}")
    assert before == evals[0]["spearman"] and after == evals[-1]["spearman"]
    assert after > before + 0.05  # learned from 480 pairs, measured on others
    best = max(evals, key=lambda r: r["spearman"])
    assert report["best"]["step"] == best["step"] and report["best"]["value"] == best["spearman"]
    record = json.loads((data / "cosine" / "run_config.json").read_text())
    assert record["runner"] == "run_embedding" and record["pooling"] == "mean"


@pytest.mark.slow
def test_num_runs_reports_the_spread_over_seeds(runs, data):
    """--num_runs 2 (contrastive): OUTPUT_DIR/run_i per seed, eval_results.json over them."""
    out = data / "contrastive"
    report = json.loads((out / "eval_results.json").read_text())
    assert report["runs"] == 2 and report["seeds"] == [12345, 12346]
    per_run = [json.loads((out / f"run_{i}" / "eval_results.json").read_text()) for i in (0, 1)]
    assert [r["seed"] for r in per_run] == [12345, 12346]
    assert report["per_run"] == [{"spearman": r["final"]["spearman"]} for r in per_run]
    assert report["unsupervised"] == [r["unsupervised"] for r in per_run]
    values = sorted(r["final"]["spearman"] for r in per_run)
    assert report["summary"]["spearman"]["min"] == values[0]
    assert report["summary"]["spearman"]["median"] == pytest.approx(sum(values) / 2)
    assert "over 2 seeds: spearman median" in runs["contrastive"].stdout


def _best_embedder(out, normalize):
    """The AlbertEmbedder (mean pooling) restored from OUT/best, in this process."""
    import tensorflow as tf

    from albert_tf.modeling.config import AlbertConfig
    from albert_tf.modeling.pooling import AlbertEmbedder

    best = json.loads((out / "best" / "best.json").read_text())
    model = AlbertEmbedder(AlbertConfig(**WORKFLOW_CONFIG), pooling="mean", normalize=normalize)
    model.build()
    status = tf.train.Checkpoint(model=model).read(best["checkpoint"])
    status.assert_existing_objects_matched().expect_partial()
    return model, best


@pytest.mark.slow
def test_the_export_is_the_best_checkpoint_served(runs, data):
    """The SavedModel, loaded as a client loads it, embeds raw dev sentences as the Python
    AlbertEmbedder on best/ does (normalized, within 1e-5); similarity is their cosine;
    the best Spearman recomputed here with scipy equals the recorded one."""
    from scipy.stats import spearmanr

    from albert_tf.training.sentence_similarity import embed, single_sentence_features
    from data_pipeline.classification.pair_files import scored_pairs
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    (version,) = sorted((data / "export").iterdir())
    info = json.loads((version / "assets.extra" / "task.json").read_text())
    assert (info["kind"], info["pooling"], info["normalize"]) == ("encoder", "mean", True)
    assert info["max_seq_length"] == LENGTH
    pairs = scored_pairs(str(data / "dev.tsv"))
    tokenizer = AlbertTokenizer(str(SPM))
    first = single_sentence_features(pairs.texts_a, tokenizer, LENGTH)
    second = single_sentence_features(pairs.texts_b, tokenizer, LENGTH)
    model, best = _best_embedder(data / "cosine", normalize=True)
    u, v = embed(model, first), embed(model, second)
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(u * v, axis=1)
    assert spearmanr(cosines, pairs.scores).statistic == pytest.approx(best["value"], abs=1e-6)
    got_u = served(version, {"text": pairs.texts_a}, "embed")["embeddings"]
    got_v = served(version, {"text": pairs.texts_b}, "embed")["embeddings"]
    both = {"text_a": pairs.texts_a, "text_b": pairs.texts_b}
    np.testing.assert_allclose(got_u, u, atol=1e-5)
    np.testing.assert_allclose(got_v, v, atol=1e-5)
    np.testing.assert_allclose(
        served(version, both, "similarity")["similarity"], cosines, atol=1e-5
    )


@pytest.mark.slow
def test_predictions_are_each_pairs_similarity_with_its_gold_score(runs, data, tmp_path):
    """--do_predict: similarities.jsonl, one line a pair in the file's order, the cosine
    of the best checkpoint's embeddings with the gold score beside it; the Spearman of
    those lines (test_results.json) is the best checkpoint's dev figure. A file without
    a score column (a prediction-only run from best/) gets the same similarities, no
    score and no test_results.json."""
    from scipy.stats import spearmanr

    from data_pipeline.classification.pair_files import scored_pairs

    pairs = scored_pairs(str(data / "dev.tsv"))
    rows = [
        json.loads(x) for x in (data / "cosine" / "similarities.jsonl").read_text().splitlines()
    ]
    assert [r["line"] for r in rows] == pairs.lines and len(rows) == 100
    assert [(r["text_a"], r["text_b"], r["score"]) for r in rows] == list(
        zip(pairs.texts_a, pairs.texts_b, pairs.scores)
    )
    similarities = [r["similarity"] for r in rows]
    assert all(-1 <= x <= 1 for x in similarities)
    best = json.loads((data / "cosine" / "best" / "best.json").read_text())
    test = json.loads((data / "cosine" / "test_results.json").read_text())
    assert test["test_file"] == "dev.tsv" and test["step"] == best["step"]
    assert test["scores"]["spearman"] == pytest.approx(best["value"], abs=1e-5)
    assert spearmanr(similarities, pairs.scores).statistic == pytest.approx(best["value"], abs=1e-5)
    assert (
        f"predictions: {data / 'cosine' / 'similarities.jsonl'} (100 pairs)"
        in runs["cosine"].stdout
    )
    unscored = tmp_path / "pairs.tsv"
    unscored.write_text(
        "sentence1\tsentence2\n"
        + "".join(f"{a}\t{b}\n" for a, b in zip(pairs.texts_a, pairs.texts_b)),
        encoding="utf-8",
    )
    out = tmp_path / "predict"
    again = run_command(
        *_args(
            out,
            data / "albert_config.json",
            f"--init_checkpoint={data / 'cosine' / 'best'}",
            "--do_predict",
            f"--predict_file={unscored}",
        ),
        timeout=600,
    )
    assert again.returncode == 0, again.report()
    plain = [json.loads(x) for x in (out / "similarities.jsonl").read_text().splitlines()]
    assert [r["line"] for r in plain] == list(range(2, 102))
    assert all("score" not in r for r in plain) and not (out / "test_results.json").exists()
    np.testing.assert_allclose([r["similarity"] for r in plain], similarities, atol=1e-5)


def test_bad_input_is_one_line_naming_flag_file_and_line(data, tmp_path):
    config = data / "albert_config.json"
    bad_score = tmp_path / "score.tsv"
    bad_score.write_text("sentence1\tsentence2\tscore\na b\tc d\t3\ne f\tg h\tabout 4\n")
    missing = tmp_path / "missing.jsonl"
    missing.write_text('{"sentence1": "a b", "sentence2": "c"}\n{"sentence1": "d"}\n')
    negatives = tmp_path / "negatives.tsv"
    negatives.write_text("sentence1\tsentence2\tlabel\na\tb\t0\n")
    cases = [
        (
            ["--do_train", f"--train_file={bad_score}"],
            f"error: --train_file: {bad_score}:3: score 'about 4' (column 'score') is not a number",
        ),
        (
            ["--do_train", "--objective=contrastive", f"--train_file={missing}"],
            f"error: --train_file: {missing}:2: text_b_column='sentence2' is not a key",
        ),
        (
            [
                "--do_train",
                "--objective=contrastive",
                f"--train_file={negatives}",
                "--label_column=label",
            ],
            f"error: --train_file: {negatives}: no positive pairs (column 'label' is never '1')",
        ),
    ]
    started = [
        (run_command(*_args(tmp_path / f"o{i}", config, *extra)), message)
        for i, (extra, message) in enumerate(cases)
    ]
    for run, message in started:
        assert run.returncode == 1, run.report()
        assert run.stderr.strip().startswith(message), run.report()
        assert len(run.stderr.strip().splitlines()) == 1, run.report()
    assert not any((tmp_path / f"o{i}").exists() for i in range(len(cases)))


def test_flag_checks_and_choices(tmp_path):
    """The up-front checks (one line each, before any file is read), and the flag choices
    listed without TensorFlow equal the library's."""
    from albert_tf.modeling.pooling import POOLINGS
    from albert_tf.runners.driver import check, command
    from albert_tf.runners.families import FAMILIES
    from albert_tf.runners.recipe import apply_recipe
    from albert_tf.training import embedding_settings as ef
    from albert_tf.training.embedding_task import OBJECTIVES
    from data_pipeline.classification.pair_files import PAIR_FORMATS

    assert (ef.POOLINGS, ef.OBJECTIVES, ef.FORMATS) == (POOLINGS, OBJECTIVES, PAIR_FORMATS)
    family = FAMILIES["embedding"]
    contrastive = ["--do_train", "--train_file=t", "--objective=contrastive"]
    cases = [
        (
            [],
            "^nothing to do: give --do_train with --train_file, --eval_file and/or --do_predict "
            "with --predict_file$",
        ),
        (["--do_predict"], r"^--do_predict needs --predict_file \(the pairs to predict\)$"),
        (["--do_train"], r"^--do_train needs --train_file \(the training pairs\)$"),
        (["--eval_file=d.tsv", "--recipe=paper"], "^--recipe=paper: the ALBERT paper gives no"),
        (["--eval_file=d.tsv", "--length_buckets=16"], "^--length_buckets: run_embedding.py pads"),
        (
            [*contrastive, "--train_batch_size=1"],
            "^--train_batch_size=1: the contrastive objective's negatives are the batch's other",
        ),
    ]
    (tmp_path / "file").write_text("")
    cases.append(
        (["--eval_file=d.tsv", f"--export_dir={tmp_path / 'file' / 'x'}"], "^--export_dir ")
    )
    for argv, message in cases:
        s = command(family).parse(["run_embedding.py", "--output_dir=o", "--preset=base", *argv])
        with pytest.raises((ValueError, OSError), match=message):
            check(family, apply_recipe(family, s))


@pytest.mark.slow
def test_a_finished_run_resumes_to_zero_steps_and_keeps_its_figures(runs, data):
    """The same command again: the trainer resumes at step 40 (no loop), the starting
    figure is read back from metrics.jsonl, not re-measured on trained weights."""
    out, config = data / "cosine", data / "albert_config.json"
    before = json.loads((out / "eval_results.json").read_text())
    again = run_command(
        *_args(
            out,
            config,
            "--do_train",
            f"--train_file={data / 'train.tsv'}",
            f"--eval_file={data / 'dev.tsv'}",
            "--train_step=40",
            "--eval_every=20",
        ),
        timeout=600,
    )
    assert again.returncode == 0, again.report()
    assert "resumed from" in again.stdout and "/40 |" not in again.stdout
    after = json.loads((out / "eval_results.json").read_text())
    assert after["unsupervised"] == before["unsupervised"]
    assert after["final"]["spearman"] == pytest.approx(before["final"]["spearman"], abs=1e-6)
    record = json.loads((out / "run_config.json").read_text())
    assert [s["start_step"] for s in record["segments"]] == [0, 40]
