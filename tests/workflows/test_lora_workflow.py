"""run_classifier.py --lora_rank and --teacher_checkpoint end to end on SST-2 (tiny model
from a saved encoder): the run's checkpoints hold adapters and head only, run_config.json
records the LoRA flags, and the exported model (adapters merged, plain shapes) gives the
runner's own test-set probabilities; distillation reports its loss as the mix of its parts;
bad LoRA and teacher flags are one line and write nothing; a resumed run with another LoRA
rank or teacher is one line."""

import json
import shutil

import numpy as np
import pytest

from tests.support.tiny import WORKFLOW as TINY
from tests.workflows.test_run_classifier import _run


def _encoder(tmp_path):
    from albert_tf import AlbertConfig, AlbertEncoder, save_checkpoint

    encoder = AlbertEncoder(AlbertConfig.from_dict(TINY))
    encoder.build()
    save_checkpoint(encoder, str(tmp_path / "encoder"))
    return tmp_path / "encoder"


@pytest.mark.slow
def test_lora_run_exports_the_merged_model_of_its_predictions(tmp_path, shared_data):
    import tensorflow as tf

    from albert_tf.checkpoints.finetuned import load_finetuned
    from albert_tf.checkpoints.loading import _model_children
    from data_pipeline.classification.features import classifier_dataset

    out, export = tmp_path / "sst2", tmp_path / "export"
    run = _run(
        tmp_path,
        shared_data,
        "sst-2",
        "SST-2",
        out,
        "--do_train",
        "--do_predict",
        f"--init_checkpoint={_encoder(tmp_path)}",
        "--lora_rank=4",
        "--lora_alpha=8",
        "--lora_targets=query,value,ffn",
        f"--export_dir={export}",
        "--train_step=10",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    latest = tf.train.latest_checkpoint(str(out / "checkpoints"))
    assert _model_children(latest) == {"lora", "classifier_head"}
    recorded = json.loads((out / "run_config.json").read_text())["flags"]
    assert recorded["lora_rank"] == 4 and recorded["lora_alpha"] == 8.0
    assert list(recorded["lora_targets"]) == ["query", "value", "ffn"]
    model, _ = load_finetuned(str(export / "1" / "assets.extra" / "finetuned"))
    assert not any("lora" in v.path for v in model.weights)
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
    want = np.array([[expected[i]["0"], expected[i]["1"]] for i in batch["example_index"].numpy()])
    np.testing.assert_allclose(probs, want, atol=1e-5)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--lora_rank=4"], "error: --lora_rank=4 needs --init_checkpoint"),
        (
            ["--lora_rank=4", "--lora_targets=query,vaule"],
            "error: lora_targets=query,vaule: give one or more of query, key, value",
        ),
        (
            ["--distill_unlabelled_file=x.txt"],
            "error: --distill_unlabelled_file=x.txt needs --teacher_checkpoint",
        ),
    ],
)
def test_bad_lora_flags_are_one_line_and_write_nothing(tmp_path, shared_data, extra, message):
    out = tmp_path / "out"
    run = _run(tmp_path, shared_data, "sst-2", "SST-2", out, "--do_train", *extra)
    assert run.returncode == 1 and message in run.stderr, run.stderr[-2000:]
    assert len([line for line in run.stderr.splitlines() if "error" in line]) == 1
    assert not out.exists() or not any(out.iterdir())


def _teacher(tmp_path, shared_data, labels):
    """A fine-tuned classifier directory (a teacher) with SST-2's vocabulary, of a bigger
    config than the student's TINY."""
    import keras

    from albert_tf import AlbertConfig
    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tokenization.spec import TokenizerSpec

    keras.utils.set_random_seed(3)
    info = TaskInfo.build(kind="classifier", labels=labels, regression=False, do_lower_case=True)
    model = info.model(AlbertConfig.from_dict(dict(TINY, hidden_size=96, num_hidden_layers=3)))
    model.build()
    spm = TokenizerSpec.from_files(str(shared_data / "spm" / "de-30k-clean.model"))
    directory = tmp_path / f"teacher-{len(labels)}"
    return save_finetuned(model, str(directory), info, spm)


@pytest.mark.slow
def test_distillation_run_trains_on_the_teachers_soft_targets(tmp_path, shared_data):
    out = tmp_path / "student"
    teacher = _teacher(tmp_path, shared_data, ["0", "1"])
    # --distill_unlabelled_file: 40 dev sentences without their labels
    rows = (shared_data / "glue" / "SST-2" / "dev.tsv").read_text(encoding="utf-8")
    text = tmp_path / "unlabelled.txt"
    text.write_text("".join(r.split("\t")[0] + "\n" for r in rows.splitlines()[1:41]))
    run = _run(
        tmp_path,
        shared_data,
        "sst-2",
        "SST-2",
        out,
        "--do_train",
        "--train_step=10",
        "--max_train_examples=256",
        f"--teacher_checkpoint={teacher}",
        "--distill_temperature=3",
        "--distill_alpha=0.8",
        f"--init_checkpoint={_encoder(tmp_path)}",
        "--lora_rank=2",
        f"--distill_unlabelled_file={text}",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "--distill_unlabelled_file: 40 unlabelled examples" in run.stdout
    assert "sst-2 train+unlabelled: 296 examples" in run.stdout  # 256 labelled + 40
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in rows if r["split"] == "train"]
    assert train and all(r["distill_kl"] >= 0 and r["label_ce"] > 0 for r in train)
    last = train[-1]  # the reported loss: labelled α·T²·KL + (1−α)·CE, unlabelled T²·KL
    # (exact per example in tests/training/test_distill_unlabelled.py); over the batch it
    # lies between α·T²·mean KL and T²·mean KL + (1−α)·mean CE of the labelled
    assert 0.8 * 9 * last["distill_kl"] - 1e-6 <= last["task_loss"]
    assert last["task_loss"] <= 9 * last["distill_kl"] + 0.2 * last["label_ce"] + 1e-6
    recorded = json.loads((out / "run_config.json").read_text())["flags"]
    assert recorded["teacher_checkpoint"] == teacher and recorded["distill_alpha"] == 0.8
    segment = json.loads((out / "run_config.json").read_text())["segments"][-1]["settings"]
    assert segment["teacher_checkpoint"] == teacher and segment["lora_rank"] == 2
    # resumed with another rank (never allowed) or teacher (guarded): one line, no change
    shutil.copytree(teacher, tmp_path / "teacher-copy")
    student = [
        "--do_train",
        "--train_step=10",
        "--max_train_examples=256",
        "--distill_temperature=3",
        "--distill_alpha=0.8",
        f"--init_checkpoint={tmp_path / 'encoder'}",
        f"--distill_unlabelled_file={text}",
    ]
    before = sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*"))
    for changed, message in (
        (["--lora_rank=4", f"--teacher_checkpoint={teacher}"], "lora_rank: 2 → 4"),
        (
            ["--lora_rank=2", f"--teacher_checkpoint={tmp_path / 'teacher-copy'}"],
            "teacher_checkpoint: ",
        ),
    ):
        again = _run(tmp_path, shared_data, "sst-2", "SST-2", out, *student, *changed)
        errors = [line for line in again.stderr.splitlines() if line.startswith("error:")]
        assert again.returncode == 1 and len(errors) == 1, again.stderr[-2000:]
        assert message in errors[0] and "Traceback" not in again.stderr
    assert "--allow_changed=teacher_checkpoint" in errors[0]
    assert sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*")) == before
    wrong = _teacher(tmp_path, shared_data, ["0", "1", "2"])
    bad = _run(
        tmp_path,
        shared_data,
        "sst-2",
        "SST-2",
        tmp_path / "bad",
        "--do_train",
        f"--teacher_checkpoint={wrong}",
    )
    assert bad.returncode == 1, bad.stderr[-2000:]
    assert "its labels ['0', '1', '2'] are not the task's ['0', '1']" in bad.stderr
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").iterdir())
