"""run_classifier.py end to end on real GLUE files (tiny model, few steps: the plumbing,
metrics, cache and outputs; accuracy itself needs a pretrained model)."""

import json

import pytest

from tests.support.harness import WORKFLOW_CONFIG, run_on_two_cpus
from tests.support.in_process import run_command
from tests.support.tpu_recorder import record_tpu

TINY = WORKFLOW_CONFIG


def _run(tmp_path, shared_data, task, folder, out, *extra):
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(TINY))
    return run_command(
        "run_classifier.py",
        f"--task_name={task}",
        f"--data_dir={shared_data / 'glue' / folder}",
        f"--output_dir={out}",
        f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}",
        f"--albert_config_file={config}",
        "--max_seq_length=64",
        "--train_batch_size=32",
        "--train_step=20",
        "--steps_per_loop=10",
        "--eval_batch_size=128",
        "--learning_rate=1e-3",
        *extra,
    )


@pytest.mark.slow
def test_mrpc_train_eval_predict_and_cache(tmp_path, shared_data):
    out = tmp_path / "mrpc"
    run = _run(
        tmp_path, shared_data, "mrpc", "MRPC", out, "--do_train", "--do_eval", "--do_predict"
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "converted" in run.stdout
    results = json.loads((out / "eval_results.json").read_text())
    assert set(results["final"]) >= {"f1", "accuracy", "acc_and_f1"}
    assert 0.0 <= results["final"]["accuracy"] <= 1.0
    assert results["best"]["metric"] == "acc_and_f1"
    rows = (out / "MRPC.tsv").read_text().splitlines()
    assert rows[0] == "index\tprediction" and len(rows) == 1 + 1725
    assert {r.split("\t")[1] for r in rows[1:]} <= {"0", "1"}
    probs = [
        json.loads(line) for line in (out / "mrpc_test_predictions.jsonl").read_text().splitlines()
    ]
    assert len(probs) == 1725
    assert abs(sum(probs[0]["probabilities"].values()) - 1) < 1e-4
    # Second run: features come from the cache.
    again = _run(tmp_path, shared_data, "mrpc", "MRPC", out, "--do_eval")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "converted" not in again.stdout and "cached" in again.stdout


@pytest.mark.slow
def test_stsb_regression_reports_correlations(tmp_path, shared_data):
    out = tmp_path / "stsb"
    run = _run(tmp_path, shared_data, "sts-b", "STS-B", out, "--do_train", "--do_eval")
    assert run.returncode == 0, run.stderr[-2000:]
    final = json.loads((out / "eval_results.json").read_text())["final"]
    assert set(final) >= {"pearson", "spearman", "corr"}
    assert -1.0 <= final["pearson"] <= 1.0


def test_wrong_files_are_clear_errors(tmp_path, shared_data):
    # RTE's files read as QNLI: the header names the file and what was expected.
    run = _run(tmp_path, shared_data, "qnli", "RTE", tmp_path / "qnli", "--do_eval")
    assert run.returncode == 1
    assert "is not the qnli dev header" in run.stderr and "RTE/dev.tsv" in run.stderr
    missing = _run(tmp_path, shared_data, "mrpc", "NO-SUCH-TASK", tmp_path / "m", "--do_eval")
    assert missing.returncode == 1
    assert "mrpc dev file not found" in missing.stderr


def test_evaluating_a_random_head_is_an_error(tmp_path, shared_data):
    """--do_eval/--do_predict without --do_train on a model whose head is not in
    --init_checkpoint (an encoder or pretraining checkpoint) would report the random head's
    accuracy: one line naming the head instead."""
    from albert_tf import AlbertConfig, AlbertEncoder, save_checkpoint

    encoder = AlbertEncoder(AlbertConfig.from_dict(TINY))
    encoder.build()
    save_checkpoint(encoder, str(tmp_path / "encoder"))
    for extra, message in (
        (
            [f"--init_checkpoint={tmp_path / 'encoder'}"],
            "error: --do_eval/--do_predict without --do_train: classifier_head is at random "
            "initialization (not in --init_checkpoint)",
        ),
        ([], "the whole model (no --init_checkpoint"),
    ):
        run = _run(tmp_path, shared_data, "rte", "RTE", tmp_path / "out", "--do_eval", *extra)
        assert run.returncode == 1 and message in run.stderr, run.stderr[-2000:]
        assert not (tmp_path / "out" / "eval_results.json").exists()


@pytest.mark.slow
def test_users_csv_with_quotes_and_discovered_labels(tmp_path, shared_data):
    import csv

    data = tmp_path / "data"
    data.mkdir()
    for split, n in (("train", 120), ("dev", 40), ("test", 20)):
        with open(data / f"{split}.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["sentence", "label"])
            for i in range(n):
                good = i % 2 == 0
                w.writerow(
                    [
                        ('a wonderful, "lovely" day' if good else "an awful mess") + f" {i}",
                        "pos" if good else "neg",
                    ]
                )
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(TINY))
    out = tmp_path / "out"
    # lr 1e-3: the official AdamW (no bias correction) takes first steps (1-β1)/√(1-β2)
    # ≈ 3.2× Keras' size, and 3e-3 left this tiny model at chance.
    cmd = [
        "run_classifier.py",
        "--task_name=csv",
        f"--data_dir={data}",
        "--text_a_column=sentence",
        "--label_column=label",
        f"--output_dir={out}",
        f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}",
        f"--albert_config_file={config}",
        "--max_seq_length=32",
        "--train_batch_size=16",
        "--train_step=40",
        "--steps_per_loop=20",
        "--learning_rate=1e-3",
        "--do_train",
        "--do_eval",
        "--do_predict",
    ]
    run = run_command(*cmd)
    assert run.returncode == 0, run.stderr[-2000:]
    config_written = json.loads((out / "run_config.json").read_text())
    assert config_written["labels"] == ["neg", "pos"]
    assert json.loads((out / "eval_results.json").read_text())["final"]["accuracy"] > 0.9
    rows = (out / "CSV.tsv").read_text().splitlines()[1:]
    assert len(rows) == 20 and {r.split("\t")[1] for r in rows} <= {"neg", "pos"}


@pytest.mark.slow
def test_race_multiple_choice(tmp_path, shared_data):
    race = shared_data / "race" / "expmrc-race-dev.json"
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(dict(TINY, max_position_embeddings=128)))
    out = tmp_path / "race"
    cmd = [
        "run_classifier.py",
        "--task_name=race",
        f"--train_file={race}",
        f"--dev_file={race}",
        f"--test_file={race}",
        f"--output_dir={out}",
        f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}",
        f"--albert_config_file={config}",
        "--max_seq_length=128",
        "--train_batch_size=8",
        "--train_step=10",
        "--steps_per_loop=10",
        "--eval_batch_size=32",
        "--learning_rate=1e-3",
        "--do_train",
        "--do_eval",
        "--do_predict",
    ]
    run = run_command(*cmd)
    assert run.returncode == 0, run.stderr[-2000:]
    final = json.loads((out / "eval_results.json").read_text())["final"]
    assert 0.0 <= final["accuracy"] <= 1.0
    preds = [
        json.loads(line) for line in (out / "race_test_predictions.jsonl").read_text().splitlines()
    ]
    assert len(preds) == 561
    from data_pipeline.classification.multiple_choice import read_race

    for p, e in zip(preds, read_race(str(race))):
        assert p["guid"] == e.guid
        probs = p["probabilities"]
        assert abs(sum(probs.values()) - 1) < 1e-4
        # Padding choices (questions with fewer than 4 options) get no probability.
        for letter in "ABCD"[len(e.options) :]:
            assert probs[letter] < 1e-6


@pytest.mark.slow
def test_num_runs_reports_median_and_spread_over_seeds(tmp_path, shared_data):
    out = tmp_path / "rte"
    run = _run(
        tmp_path,
        shared_data,
        "rte",
        "RTE",
        out,
        "--do_train",
        "--do_eval",
        "--num_runs=2",
        "--train_step=10",
        "--seed=7",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    results = json.loads((out / "eval_results.json").read_text())
    assert results["runs"] == 2 and results["seeds"] == [7, 8]
    acc = results["summary"]["accuracy"]
    assert acc["min"] <= acc["median"] <= acc["max"]
    per_run = [json.loads((out / f"run_{i}" / "eval_results.json").read_text()) for i in range(2)]
    assert [r["seed"] for r in per_run] == [7, 8]
    import tensorflow as tf

    a = tf.train.load_checkpoint(str(out / "run_0" / "checkpoints"))
    b = tf.train.load_checkpoint(str(out / "run_1" / "checkpoints"))
    import numpy as np

    keys = [
        n
        for n in a.get_variable_to_shape_map()
        if n.endswith(".ATTRIBUTES/VARIABLE_VALUE") and "save_counter" not in n and "iter" not in n
    ]
    assert any(not np.array_equal(a.get_tensor(k), b.get_tensor(k)) for k in keys)


def _chnsenticorp(tmp_path, shared_data, out, tokenizer_flag, vocab_size, *extra):
    """run_classifier on ChnSentiCorp (tiny model, 10 steps) with `tokenizer_flag`; checks
    the run, its evaluation and its 1,200 test predictions."""
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(dict(TINY, vocab_size=vocab_size)))
    run = run_command(
        "run_classifier.py",
        "--task_name=chnsenticorp",
        f"--data_dir={shared_data / 'chinese' / 'ChnSentiCorp'}",
        f"--output_dir={out}",
        tokenizer_flag,
        f"--albert_config_file={config}",
        "--max_seq_length=64",
        "--train_batch_size=32",
        "--train_step=10",
        "--steps_per_loop=10",
        "--eval_batch_size=200",
        "--learning_rate=1e-3",
        "--do_train",
        "--do_eval",
        "--do_predict",
        *extra,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "chnsenticorp train: 9,600 examples" in run.stdout
    final = json.loads((out / "eval_results.json").read_text())["final"]
    assert 0.0 <= final["accuracy"] <= 1.0
    rows = (out / "CHNSENTICORP.tsv").read_text().splitlines()
    assert len(rows) == 1 + 1200
    assert {r.split("\t")[1] for r in rows[1:]} <= {"negative", "positive"}
    return run


@pytest.mark.slow
def test_chnsenticorp_chinese_end_to_end(tmp_path, shared_data):
    """Chinese sentiment end to end; the vocabulary is the German ALBERT model's, so most
    characters are <unk> — this checks the plumbing and the labels, not accuracy."""
    spm = f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}"
    run = _chnsenticorp(tmp_path, shared_data, tmp_path / "chn", spm, TINY["vocab_size"])
    assert "chnsenticorp dev: 1,200 examples" in run.stdout


@pytest.mark.parametrize(
    "runner,extra,tokenizer,message",
    [
        (
            "run_squad.py",
            ["--train_file=x.json", "--predict_file=x.json", "--export_dir=e"]
            + ["--export_format=tflite"],
            ["vocab"],
            "on-device SQuAD",
        ),
    ],
)
def test_tokenizer_flags_one_line_errors(
    tmp_path, wordpiece_vocab, runner, extra, tokenizer, message
):
    """run_squad refuses an on-device export of a WordPiece model (that file windows the
    text with a SentencePiece model); nothing is written. (Both or neither of
    --spm_model_file/--vocab_file: `TokenizerSpec.from_files`, tested in-process in
    test_pretraining_wordpiece.py and test_wordpiece.py; a subprocess each costs ~6 s.)"""
    files = {"vocab": f"--vocab_file={wordpiece_vocab}", "spm": "--spm_model_file=m.model"}
    args = [f"--output_dir={tmp_path / 'out'}", "--do_train", "--do_predict", *extra]
    run = run_command(runner, *args, *(files[t] for t in tokenizer))
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert run.returncode == 1 and len(errors) == 1, run.stderr[-2000:]
    assert message in errors[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "task,folder,metric,names",
    [
        ("sst-2", "SST-2", "accuracy", {"0", "1"}),
        ("cola", "CoLA", "mcc", {"0", "1"}),
        ("rte", "RTE", "accuracy", {"entailment", "not_entailment"}),
    ],
)
def test_glue_tasks_end_to_end(tmp_path, shared_data, task, folder, metric, names):
    """SST-2, CoLA and RTE (MRPC and STS-B: above) train,
    evaluate with the task's metric, keep the best checkpoint by it and write the GLUE
    submission file with the label names GLUE expects."""
    out = tmp_path / task
    run = _run(
        tmp_path,
        shared_data,
        task,
        folder,
        out,
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--eval_every=10",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    results = json.loads((out / "eval_results.json").read_text())
    assert results["best"]["metric"] == metric
    assert -1.0 <= results["final"][metric] <= 1.0
    evals = [
        json.loads(line)
        for line in (out / "metrics.jsonl").read_text().splitlines()
        if json.loads(line)["split"] == "eval"
    ]
    assert results["best"]["value"] == max(e[metric] for e in evals)
    name = "SST-2" if task == "sst-2" else task.upper()
    rows = (out / f"{name}.tsv").read_text().splitlines()
    assert rows[0] == "index\tprediction"
    assert [r.split("\t")[0] for r in rows[1:4]] == ["0", "1", "2"]
    assert {r.split("\t")[1] for r in rows[1:]} <= names


@pytest.mark.slow
def test_export_dir_writes_a_serving_model_of_the_fine_tuned_weights(tmp_path, shared_data):
    """--export_dir writes EXPORT_DIR/1, a SavedModel that takes raw text, with the
    fine-tuned checkpoint + config + vocabulary + task.json in assets.extra/finetuned. The
    model rebuilt from that directory and the SavedModel (as a client loads it) both give the
    runner's own test-set probabilities; the same command again with --export_format
    tflite writes the int8 LiteRT file, whose probabilities are near the runner's. (A
    second SavedModel export is version 2: test_export.)"""
    import numpy as np

    from albert_tf.checkpoints.finetuned import load_finetuned
    from data_pipeline.classification.features import classifier_dataset
    from tests.support.serving_client import served

    out, export = tmp_path / "sst2", tmp_path / "export"
    run = _run(
        tmp_path,
        shared_data,
        "sst-2",
        "SST-2",
        out,
        "--do_train",
        "--do_predict",
        f"--export_dir={export}",
        "--classifier_dropout=0.2",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"SavedModel: {export / '1'}" in run.stdout
    model, task = load_finetuned(str(export / "1" / "assets.extra" / "finetuned"))
    assert list(task.details.labels) == ["0", "1"] and task.max_seq_length == 64
    assert task.do_lower_case is True and task.kind == "classifier"
    assert task.details.text_pair is False
    assert (export / "1" / "assets" / "spm.model").read_bytes() == (
        shared_data / "spm" / "de-30k-clean.model"
    ).read_bytes()
    expected = [
        json.loads(line)["probabilities"]
        for line in (out / "sst-2_test_predictions.jsonl").read_text().splitlines()
    ]
    (records,) = (out / "cache").glob("sst-2-test*.tfrecord")
    batch = next(iter(classifier_dataset(str(records), 256, 64, drop_remainder=False)))
    logits = model(
        {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}, training=False
    )["logits"].numpy()
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    order = batch["example_index"].numpy()
    want = np.array([[expected[i]["0"], expected[i]["1"]] for i in order])
    np.testing.assert_allclose(probs, want, atol=2e-6)
    lines = (shared_data / "glue" / "SST-2" / "test.tsv").read_text().splitlines()[1:]
    sentences = [line.split("\t")[1] for line in lines]
    served = served(export / "1", {"text_a": [sentences[i] for i in order]})
    np.testing.assert_allclose(served["probabilities"], want, atol=1e-5)
    # The same command again (its run is finished: nothing trains) with the on-device
    # format: the LiteRT file of the same weights.
    again = _run(
        tmp_path,
        shared_data,
        "sst-2",
        "SST-2",
        out,
        "--do_train",
        "--classifier_dropout=0.2",
        f"--export_dir={export}",
        "--export_format=tflite",
        "--export_quantize=int8",
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert not (export / "2").exists() and (export / "1" / "saved_model.pb").exists()
    # --export_format tflite: an on-device file beside the versions, with int8 weights.
    lite = export / "litert" / "classifier-int8.tflite"
    assert f"LiteRT: {lite}" in again.stdout
    from albert_tf.serving.tflite_predict import LiteModel

    got = LiteModel(str(lite)).classify([sentences[i] for i in order[:20]])["probabilities"]
    np.testing.assert_allclose(got, want[:20], atol=0.05)  # int8 weights: near the runner's


@pytest.mark.slow
def test_fine_tunes_from_a_converted_transformers_checkpoint(tmp_path, shared_data):
    """The parity test's kind of Hugging Face model, converted by
    albert_tf.checkpoints.convert, is a valid --init_checkpoint: the encoder is restored
    (the classifier head is new) and fine-tuning lowers the loss."""
    from albert_tf.checkpoints.convert import convert
    from tests.support.references import hf_pretraining_model

    hf_pretraining_model(
        tmp_path / "hf", vocab_size=30000, max_position_embeddings=64, hidden_act="gelu_new"
    )
    convert("transformers", str(tmp_path / "hf"), str(tmp_path / "converted"))
    out = tmp_path / "rte"
    config = tmp_path / "converted" / "albert_config.json"
    cmd = [
        "run_classifier.py",
        "--task_name=rte",
        f"--data_dir={shared_data / 'glue' / 'RTE'}",
        f"--output_dir={out}",
        f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}",
        f"--albert_config_file={config}",
        f"--init_checkpoint={tmp_path / 'converted'}",
        "--max_seq_length=64",
        "--train_batch_size=32",
        "--train_step=30",
        "--steps_per_loop=10",
        "--eval_batch_size=128",
        "--learning_rate=1e-3",
        # (the official update: its larger first steps move RTE's loss of random weights
        # within these 30 steps; the bias-corrected default needs more)
        "--optimizer=adamw",
        "--do_train",
        "--do_eval",
    ]
    run = run_command(*cmd)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "init_checkpoint: restored encoder" in run.stdout, run.stdout[-2000:]
    train = [
        json.loads(line)
        for line in (out / "metrics.jsonl").read_text().splitlines()
        if json.loads(line)["split"] == "train"
    ]
    assert len(train) == 3 and train[-1]["loss"] < train[0]["loss"]


@pytest.mark.slow
def test_tpu_strategy_path_has_static_shapes_and_gives_the_padded_run(
    tmp_path, shared_data, monkeypatch
):
    """--strategy tpu with TensorFlow's TPU entry points recorded instead of called
    (tests/support/tpu_recorder.py), one CPU in the TPU's place: the resolver gets --tpu, every
    dataset the run distributes (train and eval) has static [batch, max_seq_length] shapes,
    and the run equals a --pad_to_max_seq_length run on the default strategy."""
    seen = record_tpu(monkeypatch)
    common = ("--do_train", "--do_eval", "--classifier_dropout=0")
    tpu = _run(
        tmp_path,
        shared_data,
        "mrpc",
        "MRPC",
        tmp_path / "tpu",
        *common,
        "--strategy=tpu",
        "--tpu=local",
    )
    assert tpu.returncode == 0, tpu.stderr[-2000:]
    assert seen["resolver"] == ["local"] and seen["initialize"] == 1
    shapes = [shape for dataset in seen["datasets"] for shape in dataset]
    assert [32, 64] in shapes and [128, 64] in shapes, seen  # train and eval batches
    assert all(None not in shape for shape in shapes), seen
    padded = _run(
        tmp_path,
        shared_data,
        "mrpc",
        "MRPC",
        tmp_path / "padded",
        *common,
        "--pad_to_max_seq_length",
    )
    assert padded.returncode == 0, padded.stderr[-2000:]
    final = {
        name: json.loads((tmp_path / name / "eval_results.json").read_text())["final"]
        for name in ("tpu", "padded")
    }
    assert final["tpu"].keys() == final["padded"].keys()
    for metric, value in final["padded"].items():
        assert final["tpu"][metric] == pytest.approx(value, rel=1e-5, abs=1e-6), metric


@pytest.mark.slow
def test_mirrored_on_two_cpus_gives_the_default_strategy_metrics(tmp_path, shared_data):
    """Two replicas of batch 16 against one device with batch 32 in two micro-batches of 16:
    the same training losses and dev metrics (no dropout, so the runs are the same
    computation). The batches are grouped by length (the default): each replica, like each
    micro-batch, gets the next batch of 16 of the one pipeline, padded to its own bucket,
    so this is also gradient accumulation over batches of different lengths."""
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(TINY))

    def command(out, strategy, *extra):
        return [
            "run_classifier.py",
            "--task_name=mrpc",
            f"--data_dir={shared_data / 'glue' / 'MRPC'}",
            f"--output_dir={out}",
            f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}",
            f"--albert_config_file={config}",
            "--max_seq_length=64",
            "--eval_batch_size=128",
            "--learning_rate=1e-3",
            "--classifier_dropout=0",
            f"--strategy={strategy}",
            "--do_eval",
            *extra,
        ]

    train = ("--do_train", "--train_step=20", "--steps_per_loop=10")
    odd = tmp_path / "odd"
    mirrored, refused, default = run_on_two_cpus(
        command(tmp_path / "mirrored", "mirrored", *train, "--train_batch_size=32"),
        # A global batch the two replicas cannot share: one line, before anything is written.
        command(tmp_path / "refused", "mirrored", *train, "--train_batch_size=33"),
        command(
            tmp_path / "default", "default", *train, "--train_batch_size=32", "--grad_accum_steps=2"
        ),
    )
    # Without --do_train the train batch is not split, so it need not suit the replicas.
    # (A process of its own: TensorFlow's collective instances outlive a strategy, and this
    # run's first collective is another kind than a training run's first.)
    (evaluate_only,) = run_on_two_cpus(
        command(
            odd,
            "mirrored",
            "--train_batch_size=33",
            f"--init_checkpoint={tmp_path / 'mirrored' / 'checkpoints'}",
        )
    )
    results = {}
    for strategy, run in (("default", default), ("mirrored", mirrored)):
        out = tmp_path / strategy
        assert run.returncode == 0, run.stderr[-2000:]
        replicas = json.loads((out / "run_config.json").read_text())["replicas"]
        assert replicas == (2 if strategy == "mirrored" else 1)
        rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
        results[strategy] = (rows, json.loads((out / "eval_results.json").read_text())["final"])
    (ref_rows, ref_final), (rows, final) = results["default"], results["mirrored"]
    assert refused.returncode == 1
    assert (
        "error: --train_batch_size=33 must be divisible by --grad_accum_steps=1 × 2 replicas"
    ) in refused.stderr, refused.stderr[-2000:]
    assert not (tmp_path / "refused" / "run_config.json").exists()
    assert evaluate_only.returncode == 0, evaluate_only.stderr[-2000:]
    assert json.loads((odd / "run_config.json").read_text())["replicas"] == 2
    assert [r["step"] for r in rows] == [r["step"] for r in ref_rows]
    for ref, row in zip(ref_rows, rows):
        for name in ("loss", "accuracy", "f1"):
            if name in ref:
                assert row[name] == pytest.approx(ref[name], rel=1e-4, abs=1e-5), (ref, name)
    for name, value in ref_final.items():
        assert final[name] == pytest.approx(value, rel=1e-4, abs=1e-5), name


def test_micro_batch_size_must_divide_exactly():
    from albert_tf.training.run_setup import micro_batch_size

    assert micro_batch_size(32, 2, 2) == 16
    assert micro_batch_size(24, 3, 8) == 8
    for args in ((33, 1, 2), (32, 3, 1), (12, 2, 4)):
        with pytest.raises(ValueError, match=r"^--train_batch_size=\d+ must be divisible by"):
            micro_batch_size(*args)
