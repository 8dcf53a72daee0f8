"""run_classifier.py --multi_label end to end on a slice of GoEmotions (tiny model, one run
shared by the tests): per-label thresholds tuned on a held-out part of train, recorded in
eval_results.json and task.json; test predictions; the SavedModel and the LiteRT file,
each asked as a client asks it, return the runner's probabilities and labels; --class_weights
auto records each label's negatives/positives over the training records, clipped."""

import json

import numpy as np
import pytest

from tests.support.harness import SHARED_DATA, WORKFLOW_CONFIG
from tests.support.in_process import run_command

TINY = WORKFLOW_CONFIG
TRAIN, DEV = 400, 80


def _slice(source, target, rows):
    with open(source, encoding="utf-8") as f:
        lines = [next(f) for _ in range(rows + 1)]
    target.write_text("".join(lines), encoding="utf-8")


def _base(tmp, data, out, *extra):
    config = tmp / "albert_config.json"
    config.write_text(json.dumps(TINY))
    return (
        "run_classifier.py",
        "--task_name=tsv",
        f"--data_dir={data}",
        "--text_a_column=text",
        "--label_column=labels",
        f"--output_dir={out}",
        f"--spm_model_file={SHARED_DATA / 'spm' / 'de-30k-clean.model'}",
        f"--albert_config_file={config}",
        "--max_seq_length=64",
        "--train_batch_size=32",
        "--eval_batch_size=128",
        "--learning_rate=1e-3",
        *extra,
    )


@pytest.fixture(scope="session")
def run(tmp_path_factory):
    """The one fine-tuning run: (output dir, export dir, data dir, the runner)."""
    source = SHARED_DATA / "multilabel" / "goemotions"
    if not source.is_dir():
        pytest.skip(f"real data not available: {source} is absent")
    tmp = tmp_path_factory.mktemp("multilabel")
    data = tmp / "data"
    data.mkdir()
    _slice(source / "train.tsv", data / "train.tsv", TRAIN)
    _slice(source / "dev.tsv", data / "dev.tsv", DEV)
    _slice(source / "dev.tsv", data / "test.tsv", DEV)
    out, export = tmp / "out", tmp / "export"
    done = run_command(
        *_base(tmp, data, out),
        "--multi_label",
        "--tune_thresholds=per_label",
        "--held_out_fraction=0.2",
        "--class_weights=auto",
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--train_step=20",
        "--steps_per_loop=10",
        f"--export_dir={export}",
        "--export_format=savedmodel",
        "--export_format=tflite",
        timeout=900,
    )
    assert done.returncode == 0, done.report()
    return out, export, data, done


def test_thresholds_are_tuned_on_held_out_train_and_recorded(run):
    out, export, _, done = run
    assert "tsv train-fit: 320 examples" in done.stdout
    assert "tsv train-tune: 80 examples" in done.stdout
    results = json.loads((out / "eval_results.json").read_text())
    task = json.loads((export / "1" / "assets.extra" / "finetuned" / "task.json").read_text())
    assert task["multi_label"] is True and len(task["thresholds"]) == len(task["labels"])
    assert list(results["thresholds"]) == task["labels"]
    assert list(results["thresholds"].values()) == task["thresholds"]
    final = results["final"]
    assert set(final) >= {"micro_f1", "macro_f1", "subset_accuracy", "hamming_loss"}
    assert set(final) >= {"micro_precision", "micro_recall", "at_0.5/micro_f1"}
    assert 0 < final["micro_f1"] <= 1 and 0 <= final["hamming_loss"] <= 1
    assert results["best"]["metric"] == "micro_f1"
    assert set(results["f1"]) == set(task["labels"])
    assert all(0 < t < 1 for t in task["thresholds"]) and len(set(task["thresholds"])) > 1


def _predictions(out):
    lines = (out / "tsv_test_predictions.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _texts(data):
    rows = (data / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    return [r.split("\t")[0] for r in rows]


def _check_labels(rows, probabilities, labels, thresholds):
    """Each row's labels are exactly those at or over their thresholds (rows within 1e-5
    of a threshold are not held to it: float32 against the file's six decimals)."""
    for names, p in zip(rows, probabilities):
        close = np.abs(p - thresholds) < 1e-5
        want = {n for n, on in zip(labels, p >= thresholds) if on}
        assert {n for n, c in zip(names, close) if not c} == {
            n for n in want if not close[labels.index(n)]
        }


def test_predictions_are_the_labels_over_their_thresholds(run):
    out, export, _, _ = run
    task = json.loads((export / "1" / "assets.extra" / "finetuned" / "task.json").read_text())
    labels, thresholds = task["labels"], np.array(task["thresholds"])
    rows = _predictions(out)
    assert len(rows) == DEV
    probabilities = np.array([[r["probabilities"][n] for n in labels] for r in rows])
    _check_labels([r["labels"] for r in rows], probabilities, labels, thresholds)
    assert any(r["labels"] for r in rows)


def test_savedmodel_in_a_fresh_process_returns_the_runners_predictions(run, tmp_path):
    from tests.support.serving_client import served

    out, export, data, _ = run
    task = json.loads((export / "1" / "assets.extra" / "finetuned" / "task.json").read_text())
    labels, thresholds = task["labels"], np.array(task["thresholds"])
    rows = _predictions(out)
    want = np.array([[r["probabilities"][n] for n in labels] for r in rows])
    served = served(export / "1", {"text_a": _texts(data)})
    np.testing.assert_allclose(served["probabilities"], want, atol=2e-5)
    predicted = served["predicted"].astype(bool)
    np.testing.assert_array_equal(predicted, served["probabilities"] >= thresholds)
    names = [[s.decode() for s in row if s] for row in served["label"]]
    assert names == [[n for n, on in zip(labels, row) if on] for row in predicted]
    _check_labels([r["labels"] for r in rows], served["probabilities"], labels, thresholds)


def test_litert_runner_in_a_fresh_process_returns_the_runners_predictions(run, tmp_path):
    out, export, data, _ = run
    lite = export / "litert" / "classifier-float32.tflite"
    assert lite.exists()
    lines = tmp_path / "lines.txt"
    lines.write_text("\n".join(_texts(data)) + "\n", encoding="utf-8")
    done = run_command("-m", "albert_tf.serving.tflite_predict", "--model", lite, "--input", lines)
    assert done.returncode == 0, done.report()
    got = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    rows = _predictions(out)
    assert len(got) == len(rows) == DEV
    labels = list(rows[0]["probabilities"])
    mine = np.array([[g["probabilities"][n] for n in labels] for g in got])
    want = np.array([[r["probabilities"][n] for n in labels] for r in rows])
    np.testing.assert_allclose(mine, want, atol=2e-5)
    task = json.loads((export / "1" / "assets.extra" / "finetuned" / "task.json").read_text())
    _check_labels([g["labels"] for g in got], want, labels, np.array(task["thresholds"]))


def test_multi_label_flags_bad_input_is_one_line(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.tsv").write_text("text\tlabels\nfine\tjoy\nok\tjoy,love\n")
    (data / "dev.tsv").write_text("text\tlabels\nfine\tjoy\nbad\tlove,fear\n")
    cases = [
        (
            ["--multi_label", "--tune_thresholds=global", "--do_eval"],
            "--tune_thresholds=global tunes on examples held out of training",
        ),
        (["--multi_label", "--do_train", "--train_step=1"], "dev.tsv:3: label 'fear'"),
    ]
    for extra, message in cases:
        done = run_command(*_base(tmp_path, data, tmp_path / "out", *extra))
        assert done.returncode == 1 and message in done.stderr, done.report()
        assert not (tmp_path / "out" / "eval_results.json").exists()


def test_auto_class_weights_are_negatives_over_positives_of_the_training_records(run):
    import tensorflow as tf

    out, _, _, _ = run
    record = json.loads((out / "run_config.json").read_text())
    labels = record["labels"]
    (path,) = (out / "cache").glob("*train-fit*.tfrecord")
    spec = {"label_ids": tf.io.FixedLenFeature([len(labels)], tf.float32)}
    hot = np.stack(
        [
            tf.io.parse_single_example(r, spec)["label_ids"].numpy()
            for r in tf.data.TFRecordDataset(str(path))
        ]
    )
    assert hot.shape == (320, len(labels))
    positives = hot.sum(0).astype(np.float64)
    expected = np.where(positives > 0, (320 - positives) / np.maximum(positives, 1), 100.0)
    np.testing.assert_allclose(record["class_weights"], np.clip(expected, 0.01, 100.0), rtol=1e-12)
    assert record["segments"][-1]["settings"]["class_weights"] == "auto"
