"""Official fine-tuned checkpoints keep their heads: run_classifier's `output_weights` /
`output_bias` (classification, STS-B regression), run_race's (one score per choice) and
run_squad_v1's `cls/squad/...`, from TF1 checkpoints and from TF-Hub fine-tunes (encoder
under `module/`). Every load reports each weight it did not restore, and a head left at
initialization is a warning line naming it.

The head names and layouts are written out here from the official code (kernel stored
[outputs, H]; logits = x · Wᵀ + b), independently of albert_tf.checkpoints."""

import logging

import numpy as np
import pytest

from albert_tf import AlbertEncoder, load_checkpoint, save_checkpoint
from albert_tf.checkpoints import CheckpointError
from albert_tf.modeling.models import (
    AlbertClassifier,
    AlbertMultipleChoice,
    AlbertQuestionAnswering,
)
from tests.support.harness import random_batch, tiny_config
from tests.support.references import hf_pretraining_model, official_arrays, write_tf1_checkpoint

H = 32
# kind: (official kernel name, official bias name, outputs)
HEADS = {
    "classifier": ("output_weights", "output_bias", 3),
    "regression": ("output_weights", "output_bias", 1),
    "race": ("output_weights", "output_bias", 1),
    "squad_v1": ("cls/squad/output_weights", "cls/squad/output_bias", 2),
}


@pytest.fixture(scope="module")
def encoder_arrays(tmp_path_factory):
    """Official-named encoder arrays of a random Hugging Face ALBERT (tiny_config's
    shape), without pretraining heads, as a fine-tuning run's checkpoint holds them."""
    hf = hf_pretraining_model(tmp_path_factory.mktemp("hf"), heads=False)
    return official_arrays(hf, 1, 1, heads=False)


def _model(kind):
    config = tiny_config()
    if kind == "squad_v1":
        return AlbertQuestionAnswering(config)
    if kind == "race":
        return AlbertMultipleChoice(config, dropout=0.0)
    return AlbertClassifier(config, HEADS[kind][2], dropout=0.0)


def _head_by_hand(kind, model, batch, kernel, bias):
    """The official head's logits from our encoder's outputs and the two arrays."""
    if kind == "squad_v1":
        sequence = model.encoder(batch)["sequence_output"].numpy()
        logits = sequence @ kernel.T + bias  # [B, S, 2]
        return {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}
    if kind == "race":
        flat = {k: v.reshape(-1, v.shape[-1]) for k, v in batch.items()}
        pooled = model.encoder(flat)["pooled_output"].numpy()
        return {"logits": (pooled @ kernel.T + bias).reshape(batch["input_ids"].shape[:2])}
    return {"logits": model.encoder(batch)["pooled_output"].numpy() @ kernel.T + bias}


def _batch(kind):
    batch = {k: v for k, v in random_batch().items() if k != "masked_lm_positions"}
    if kind == "race":  # [3 questions, 2 choices, seq]
        other = random_batch(seed=1)
        batch = {k: np.stack([batch[k], other[k]], axis=1) for k in batch}
    return batch


@pytest.mark.parametrize("tfhub", [False, True], ids=["tf1", "tfhub"])
@pytest.mark.parametrize("kind", sorted(HEADS))
def test_official_head_gives_the_logits_of_its_arrays(tmp_path, encoder_arrays, kind, tfhub):
    kernel_name, bias_name, outputs = HEADS[kind]
    rng = np.random.default_rng(7)
    kernel = rng.normal(0, 0.5, (outputs, H)).astype(np.float32)
    bias = rng.normal(0, 0.5, (outputs,)).astype(np.float32)
    arrays = {(f"module/{k}" if tfhub else k): v for k, v in encoder_arrays.items()}
    arrays.update({kernel_name: kernel, bias_name: bias})
    prefix = write_tf1_checkpoint(str(tmp_path / "model.ckpt"), arrays)
    model = _model(kind)
    report = load_checkpoint(model, prefix)
    head = {"squad_v1": "span_head", "race": "choice_head"}.get(kind, "classifier_head")
    assert report.format == "tf1" and head in report.restored
    assert report.missing == [] and report.not_restored == [] and report.warnings() == []
    batch = _batch(kind)
    got = model(batch)
    expected = _head_by_hand(kind, model, batch, kernel, bias)
    for key, value in expected.items():
        mask = batch["input_mask"].astype(bool) if kind == "squad_v1" else Ellipsis
        np.testing.assert_allclose(got[key].numpy()[mask], value[mask], atol=1e-5, rtol=1e-5)
    # A head at random initialization would be far off: the comparison can fail.
    fresh = _model(kind)
    fresh.build()
    fresh_logits = fresh(batch)[next(iter(expected))].numpy()
    assert np.max(np.abs(fresh_logits - got[next(iter(expected))].numpy())) > 1e-2


def test_pretraining_checkpoint_reports_the_random_head(tmp_path, encoder_arrays, caplog):
    prefix = write_tf1_checkpoint(str(tmp_path / "model.ckpt"), encoder_arrays)
    model = _model("classifier")
    with caplog.at_level(logging.WARNING, logger="albert_tf.checkpoints"):
        report = load_checkpoint(model, prefix)
    assert report.restored == ["encoder", "pooler"] and report.missing == ["classifier_head"]
    assert report.not_restored == [w.path for w in model.classifier_head.weights]
    assert len(report.not_restored) == 2
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "has no classifier_head" in lines[0]
    assert "random initialization" in lines[0] and "classifier_head/dense/kernel" in lines[0]


def test_own_encoder_checkpoint_reports_every_head_weight(tmp_path):
    encoder = AlbertEncoder(tiny_config())
    encoder.build()
    save_checkpoint(encoder, str(tmp_path))
    model = _model("squad_v1")
    report = load_checkpoint(model, str(tmp_path))
    assert report.format == "albert_tf" and report.missing == ["span_head"]
    assert sorted(report.not_restored) == sorted(w.path for w in model.span_head.weights)
    assert "span_head/kernel" in str(report) and "span_head" in report.warnings()[0]


def test_head_of_another_label_count_is_refused(tmp_path, encoder_arrays):
    arrays = dict(
        encoder_arrays,
        output_weights=np.zeros((3, H), np.float32),
        output_bias=np.zeros((3,), np.float32),
    )
    prefix = write_tf1_checkpoint(str(tmp_path / "model.ckpt"), arrays)
    with pytest.raises(
        CheckpointError,
        match=r"output_weights: source \[3, 32\] vs model "
        r"\[2, 32\]",
    ):
        load_checkpoint(AlbertClassifier(tiny_config(), 2), prefix)
