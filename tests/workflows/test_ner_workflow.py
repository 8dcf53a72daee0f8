"""run_ner.py end to end on real slices of CoNLL-2003 (English, BIO) and resume_zh (Chinese,
BMES, one character a line): a tiny model from scratch, so the plumbing, the metrics' round
trip, resume and bad input are what is checked (quality needs a pretrained model:
experiments/ner_quality.py)."""

import json

import pytest

from tests.support.harness import SHARED_DATA, WORKFLOW_CONFIG
from tests.support.in_process import run_command
from tests.support.serving_client import served
from tests.support.tf_serving_ops import WORDPIECE_OPS, assert_stock_server_links

TINY = WORKFLOW_CONFIG
SPM = SHARED_DATA / "spm" / "de-30k-clean.model"


def _sentences(path, n):
    """The first `n` sentences of a column file, as its lines (blank line after each)."""
    out, count = [], 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            out.append(line)
            count += not line.strip()
            if count == n:
                break
    return "".join(out)


def _conll_args(data, out, config, *extra):
    return [
        "run_ner.py",
        f"--data_dir={data}",
        f"--output_dir={out}",
        f"--spm_model_file={SPM}",
        f"--albert_config_file={config}",
        "--nodo_lower_case",
        "--max_seq_length=64",
        "--doc_stride=32",
        "--train_batch_size=16",
        "--train_step=150",
        "--steps_per_loop=75",
        "--eval_batch_size=64",
        "--learning_rate=1e-3",
        "--length_buckets=32",
        *extra,
    ]


@pytest.fixture(scope="module")
def conll(tmp_path_factory):
    """DATA_DIR with 200 training sentences of CoNLL-2003 and 50 dev sentences (also as
    test, so predictions.conll is the evaluated set), and the tiny config."""
    source = SHARED_DATA / "ner" / "conll2003"
    if not source.is_dir() or not SPM.exists():
        pytest.skip(f"real data not available: {source} or {SPM} is absent")
    root = tmp_path_factory.mktemp("ner")
    data = root / "conll"
    data.mkdir()
    (data / "train.txt").write_text(_sentences(source / "train.txt", 200), encoding="utf-8")
    dev = _sentences(source / "dev.txt", 50)
    (data / "dev.txt").write_text(dev, encoding="utf-8")
    (data / "test.txt").write_text(dev, encoding="utf-8")
    config = root / "albert_config.json"
    config.write_text(json.dumps(TINY))
    return root, data, config


@pytest.fixture(scope="module")
def trained(conll):
    """One training run (train, evaluate, predict) shared by the checks."""
    root, data, config = conll
    out = root / "out"
    run = run_command(
        *_conll_args(data, out, config, "--do_train", "--do_eval", "--do_predict"),
        f"--export_dir={root / 'export'}",
    )
    assert run.returncode == 0, run.report()
    return run, out


def _read_predictions(path):
    """(tokens, gold, predicted) per sentence of a `token gold predicted` file."""
    sentences, current = [], ([], [], [])
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line:
            sentences.append(current)
            current = ([], [], [])
            continue
        for column, value in zip(current, line.split(" ")):
            column.append(value)
    assert current == ([], [], [])  # the file ends with a blank line
    return sentences


@pytest.mark.slow
def test_eval_results_are_the_metrics_of_the_written_predictions(trained, conll):
    from data_pipeline.tagging.data import read_conll
    from data_pipeline.tagging.metrics import entity_report, tagging_metrics

    run, out = trained
    _, data, _ = conll
    assert "converted" in run.stdout
    results = json.loads((out / "eval_results.json").read_text())
    assert results["tag_scheme"] == "IOB2" and results["labels"][0] == "O"
    assert set(results["labels"]) == {"O"} | {
        f"{p}-{t}" for p in "BI" for t in ("PER", "LOC", "ORG", "MISC")
    }
    assert results["best"]["metric"] == "f1" and results["step"] == 150
    written = _read_predictions(out / "predictions.conll")
    dev = read_conll(str(data / "dev.txt"))
    assert [(list(s.tokens), list(s.tags)) for s in dev] == [(t, g) for t, g, _ in written]
    gold, predicted = [g for _, g, _ in written], [p for _, _, p in written]
    assert all(set(p) <= set(results["labels"]) for p in predicted)
    final = results["final"]
    assert final == pytest.approx(tagging_metrics(gold, predicted, "IOB2"), abs=1e-12)
    report = entity_report(gold, predicted, "IOB2")
    assert results["per_type"]["PER"]["support"] == report.per_type["PER"].support > 0
    # Something was learned, so the round trip compares real numbers: entities found.
    assert report.micro.correct > 0 and 0 < final["f1"] < 1


@pytest.mark.slow
def test_the_runners_savedmodel_tags_raw_text_as_its_predictions_file(trained, conll, tmp_path):
    """run_ner.py --export_dir: the SavedModel, asked as a client asks it, given each dev
    sentence as one raw string, returns per word the tag predictions.conll holds."""
    run, out = trained
    root, _, _ = conll
    (version,) = sorted((root / "export").iterdir())
    info = json.loads((version / "assets.extra" / "finetuned" / "task.json").read_text())
    assert info["kind"] == "token_classifier" and info["doc_stride"] == 32
    written = _read_predictions(out / "predictions.conll")
    out = served(version, {"text": [" ".join(t) for t, _, _ in written]})
    tags = [[t.decode() for t in row[:n]] for row, n in zip(out["tags"], out["num_words"])]
    assert tags == [p for _, _, p in written]
    assert any(t != "O" for row in tags for t in row)  # entities, not only "O"


@pytest.mark.slow
def test_a_finished_run_resumes_to_zero_steps(trained, conll):
    root, data, config = conll
    _, out = trained
    before = json.loads((out / "eval_results.json").read_text())["final"]
    again = run_command(*_conll_args(data, out, config, "--do_train", "--do_eval"))
    assert again.returncode == 0, again.report()
    assert "converted" not in again.stdout and "cached" in again.stdout
    assert "step 150/150" in trained[0].stdout and "/150 |" not in again.stdout  # no loop
    assert json.loads((out / "eval_results.json").read_text())["final"] == before
    record = json.loads((out / "run_config.json").read_text())
    assert [s["start_step"] for s in record["segments"]] == [0, 150]


def test_bad_inputs_are_one_line_and_write_nothing(conll, tmp_path):
    _, data, config = conll
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "train.txt").write_text((data / "train.txt").read_text())
    lines = (data / "dev.txt").read_text().splitlines(keepends=True)
    lines[6] = lines[6].split(" ")[0] + " B-FOOD\n"
    (bad / "dev.txt").write_text("".join(lines))
    cases = [
        (
            _conll_args(bad, tmp_path / "o1", config, "--do_eval"),
            f"error: {bad / 'dev.txt'}:7: tag 'B-FOOD' is not one of the 9 labels",
        ),
        (
            _conll_args(data, tmp_path / "o2", config, "--do_train", "stray"),
            "error: unexpected arguments ['stray']",
        ),
        (
            _conll_args(data, tmp_path / "o3", config, "--do_train", "--class_weights=1,2"),
            "error: --class_weights=1,2: 2 weight(s) for 9 labels (O, B-LOC,",
        ),
        (
            _conll_args(data, tmp_path / "o4", config, "--do_train", "--lora_rank=2"),
            "error: --lora_rank=2 needs --init_checkpoint",
        ),
    ]
    for args, message in cases:
        run = run_command(*args)
        assert run.returncode == 1, run.report()
        assert run.stderr.strip().startswith(message), run.report()
        assert len(run.stderr.strip().splitlines()) == 1, run.report()
    assert not any((tmp_path / f"o{i}" / "cache").exists() for i in (1, 2, 3, 4))


def test_tag_scheme_and_recipe_choices():
    from albert_tf.runners.driver import command
    from albert_tf.runners.families import FAMILIES
    from albert_tf.runners.recipe import apply_recipe
    from data_pipeline.tagging.settings import resolve_tag_scheme

    bio = ["O", "B-LOC", "B-PER", "I-LOC", "I-PER"]
    bmes = ["O", "B-NAME", "E-NAME", "M-NAME", "S-NAME"]
    assert resolve_tag_scheme("auto", bio) == "IOB2"
    assert resolve_tag_scheme("auto", bmes) == "BMES"
    assert resolve_tag_scheme("auto", ["O", "I-PER"]) is None  # IO: seqeval's default mode
    assert resolve_tag_scheme("none", bio) is None
    assert resolve_tag_scheme("IOBES", bmes[:3] + ["S-NAME"]) == "IOBES"
    with pytest.raises(ValueError, match=r"^--tag_scheme=BMES: the training labels: tag 'I-LOC'"):
        resolve_tag_scheme("BMES", bio)
    family = FAMILIES["ner"]
    s = command(family).parse(["run_ner.py", "--output_dir=o", "--recipe=paper"])
    with pytest.raises(ValueError, match="no ALBERT source publishes NER hyper-parameters"):
        apply_recipe(family, s)
    s = s.replace(recipe=None)
    assert apply_recipe(family, s) is s


@pytest.mark.slow
def test_resume_zh_bmes_one_character_a_line_with_wordpiece(tmp_path):
    source = SHARED_DATA / "ner" / "resume_zh"
    if not source.is_dir():
        pytest.skip(f"real data not available: {source} is absent")
    data = tmp_path / "zh"
    data.mkdir()
    (data / "train.txt").write_text(_sentences(source / "train.txt", 150), encoding="utf-8")
    (data / "dev.txt").write_text(_sentences(source / "dev.txt", 40), encoding="utf-8")
    # A WordPiece vocabulary of the slices' characters (the Chinese layout: one piece each).
    lines = [line for f in ("train.txt", "dev.txt") for line in (data / f).read_text().splitlines()]
    chars = sorted({line.split(" ")[0] for line in lines if line})
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    (tmp_path / "vocab.txt").write_text("\n".join(special + chars) + "\n", encoding="utf-8")
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(dict(TINY, vocab_size=len(special) + len(chars))))
    out = tmp_path / "out"
    run = run_command(
        "run_ner.py",
        f"--data_dir={data}",
        f"--output_dir={out}",
        f"--vocab_file={tmp_path / 'vocab.txt'}",
        f"--albert_config_file={config}",
        "--max_seq_length=64",
        "--doc_stride=32",
        "--train_batch_size=16",
        "--train_step=60",
        "--steps_per_loop=60",
        "--eval_batch_size=64",
        "--learning_rate=1e-3",
        "--do_train",
        "--pad_to_max_seq_length",
        "--do_eval",
        f"--export_dir={tmp_path / 'export'}",
    )
    assert run.returncode == 0, run.report()
    assert "0 words without pieces" in run.stdout
    results = json.loads((out / "eval_results.json").read_text())
    assert results["tag_scheme"] == "BMES"
    assert {t[:2] for t in results["labels"]} == {"O", "B-", "M-", "E-", "S-"}
    assert results["final"]["accuracy"] > 0.5
    # Its SavedModel (the vocab.txt in the graph) runs on the stock TF Serving's ops.
    assert WORDPIECE_OPS <= assert_stock_server_links(tmp_path / "export" / "1")
