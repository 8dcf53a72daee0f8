"""run_classifier.py --doc_stride end to end on a slice of real movie reviews (tiny model, a
few steps: the plumbing; accuracy itself is experiments/long_documents_quality.py's):
windows in, metrics and predictions per document out, the aggregation switched at
evaluation on the cached windows, the export's task.json saying how to window."""

import json

import pytest

from tests.support.in_process import run_command
from tests.support.tiny import WORKFLOW as TINY


def _slice(shared_data, folder, n):
    """n reviews of each label (the files are sorted by label), interleaved."""
    for split in ("train", "dev"):
        path = shared_data / "long_documents" / "movie_reviews" / f"{split}.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        neg = [r for r in rows if r["label"] == "neg"][:n]
        pos = [r for r in rows if r["label"] == "pos"][:n]
        lines = [json.dumps(r) for pair in zip(neg, pos) for r in pair]
        (folder / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "test.jsonl").write_text((folder / "dev.jsonl").read_text())


def _run(tmp_path, shared_data, out, *extra):
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(TINY))
    return run_command(
        "run_classifier.py",
        "--task_name=jsonl",
        f"--data_dir={tmp_path / 'data'}",
        "--text_a_column=text",
        f"--output_dir={out}",
        f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}",
        f"--albert_config_file={config}",
        "--max_seq_length=64",
        "--train_batch_size=16",
        "--train_step=6",
        "--eval_batch_size=128",
        "--learning_rate=1e-3",
        "--doc_stride=48",
        "--max_document_windows=12",
        *extra,
        timeout=900,  # (a shared machine; about 40 s of CPU on a quiet one)
    )


@pytest.mark.slow  # three runner processes and an export (~1 min on 2 quiet cores)
def test_windows_train_evaluate_predict_and_export_per_document(tmp_path, shared_data):
    (tmp_path / "data").mkdir()
    _slice(shared_data, tmp_path / "data", 8)
    out = tmp_path / "out"
    run = _run(
        tmp_path,
        shared_data,
        out,
        "--do_train",
        "--do_eval",
        "--do_predict",
        f"--export_dir={tmp_path / 'export'}",
    )
    assert run.returncode == 0, run.report()
    assert "jsonl dev: 16 documents in 192 windows of max_seq_length=64" in run.stdout
    assert "16 of more than one, 16 cut to --max_document_windows" in run.stdout
    accuracy = json.loads((out / "eval_results.json").read_text())["final"]["accuracy"]
    # Per document: k of 16, and the test copy of dev predicted the same way.
    predictions = [json.loads(x) for x in (out / "jsonl_test_predictions.jsonl").open()]
    gold = [json.loads(x)["label"] for x in (tmp_path / "data" / "dev.jsonl").open()]
    assert len(predictions) == 16
    right = sum(p["label"] == g for p, g in zip(predictions, gold))
    assert abs(accuracy - right / 16) < 1e-9
    task = json.loads(
        (tmp_path / "export" / "1" / "assets.extra" / "finetuned" / "task.json").read_text()
    )
    assert (task["doc_stride"], task["max_document_windows"], task["aggregate"]) == (
        48,
        12,
        "mean_logits",
    )
    assert task["text_pair"] is False
    # The other aggregation, on the same model and cached windows.
    again = _run(tmp_path, shared_data, out, "--do_eval", "--aggregate=max_prob")
    assert again.returncode == 0, again.report()
    assert "converted" not in again.stdout and "cached" in again.stdout
    # (an evaluation-only run: its own report, the training run's left as it was)
    k = json.loads((out / "eval_results.dev.jsonl.json").read_text())["final"]["accuracy"] * 16
    assert json.loads((out / "eval_results.json").read_text())["final"]["accuracy"] == accuracy
    assert abs(k - round(k)) < 1e-6
    # A multiple-choice task cannot be windowed: one line naming the flag.
    bad = _run(tmp_path, shared_data, tmp_path / "mc", "--do_eval", "--task_name=race")
    assert bad.returncode == 1
    assert "error: --doc_stride windows single texts; multiple-choice tasks are not" in bad.stderr
