"""run_classifier.py --lora_rank end to end on SST-2 (tiny model from a saved encoder):
the run's checkpoints hold adapters and head only, run_config.json records the LoRA
flags, and the exported model (adapters merged, plain shapes) gives the runner's own
test-set probabilities; bad LoRA flags are one line and write nothing."""

import json

import numpy as np
import pytest

from tests.workflows.test_run_classifier import TINY, _run


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
        tmp_path, shared_data, "sst-2", "SST-2", out, "--do_train", "--do_predict",
        f"--init_checkpoint={_encoder(tmp_path)}", "--lora_rank=4", "--lora_alpha=8",
        "--lora_targets=query,value,ffn", f"--export_dir={export}", "--train_step=10",
    )  # fmt: skip
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
    ],
)
def test_bad_lora_flags_are_one_line_and_write_nothing(tmp_path, shared_data, extra, message):
    out = tmp_path / "out"
    run = _run(tmp_path, shared_data, "sst-2", "SST-2", out, "--do_train", *extra)
    assert run.returncode == 1 and message in run.stderr, run.stderr[-2000:]
    assert len([line for line in run.stderr.splitlines() if "error" in line]) == 1
    assert not out.exists() or not any(out.iterdir())
