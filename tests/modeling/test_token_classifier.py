"""AlbertTokenClassifier: logits equal to Hugging Face's AlbertForTokenClassification on the
same random weights (through the official names), the masked token cross-entropy against
a numpy reference written from the equation and against Hugging Face's loss."""

import json

import numpy as np
import pytest

from albert_tf.modeling.token_classifier import (
    AlbertTokenClassifier,
    masked_token_cross_entropy,
    token_loss_terms,
)
from tests.support.harness import random_batch, tiny_config


def _numpy_loss(logits, labels):
    """mean over counted tokens of  log Σ_j exp(z_j) − z_label   (labels −1: not counted)."""
    logits = logits.astype(np.float64)
    top = logits.max(axis=-1, keepdims=True)
    log_norm = np.log(np.exp(logits - top).sum(axis=-1)) + top[..., 0]
    counted = labels != -1
    picked = np.take_along_axis(logits, np.where(counted, labels, 0)[..., None], -1)[..., 0]
    nll = (log_norm - picked)[counted]
    return nll.sum(), counted.sum()


def test_loss_against_numpy_reference():
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 3, (4, 9, 7)).astype(np.float32)
    labels = rng.integers(0, 7, (4, 9))
    labels[rng.random((4, 9)) < 0.4] = -1
    labels[3] = -1  # a row with nothing counted
    total, count = token_loss_terms(logits, labels)
    want_total, want_count = _numpy_loss(logits, labels)
    assert float(count) == want_count and want_count > 10
    np.testing.assert_allclose(float(total), want_total, rtol=1e-6)
    np.testing.assert_allclose(
        float(masked_token_cross_entropy(logits, labels)), want_total / want_count, rtol=1e-6
    )
    # the ignored positions do not matter, whatever their logits
    noisy = logits.copy()
    noisy[labels == -1] = 1e3
    assert float(masked_token_cross_entropy(noisy, labels)) == pytest.approx(
        want_total / want_count, rel=1e-6
    )
    assert float(masked_token_cross_entropy(logits, np.full((4, 9), -1))) == 0.0


def test_shapes_dropout_and_names():
    from albert_tf.checkpoints.official import official_name_map

    config = tiny_config()
    model = AlbertTokenClassifier(config, num_labels=9, dropout=0.5)
    model.build()
    batch = random_batch(batch=3, seq=11)
    batch["label_ids"] = np.zeros((3, 11), np.int32)  # extra batch keys are ignored
    out = model(batch, training=False)["logits"]
    assert out.shape == (3, 11, 9) and out.dtype.name == "float32"
    again = model(batch, training=False)["logits"]
    np.testing.assert_array_equal(out.numpy(), again.numpy())
    assert not np.allclose(model(batch, training=True)["logits"].numpy(), out.numpy())
    names = official_name_map(model)
    assert names["output_weights"].transpose and names["output_weights"].variable.shape == (32, 9)
    assert names["output_bias"].component == "classifier_head"
    with pytest.raises(ValueError, match="num_labels"):
        AlbertTokenClassifier(config, num_labels=0)


def test_logits_and_loss_equal_hugging_face(tmp_path):
    import torch

    from albert_tf.checkpoints.official import assign_official
    from albert_tf.checkpoints.transformers import (
        config_from_transformers,
        transformers_to_official,
    )
    from tests.support.references import hf_model

    hf = hf_model(tmp_path / "hf", "AlbertForTokenClassification", num_labels=5)
    state = {k: v.detach().numpy() for k, v in hf.state_dict().items()}
    official, unknown = transformers_to_official(state)
    assert not unknown and official["output_weights"].shape == (5, 32)
    config = config_from_transformers(json.loads((tmp_path / "hf" / "config.json").read_text()))
    model = AlbertTokenClassifier(config, num_labels=5, dropout=0.1)
    report = assign_official(model, official, "hf")
    # Hugging Face's token classifier has no pooler (add_pooling_layer=False); ours has one
    # it never reads
    assert report.missing == ["bert/pooler/dense/kernel", "bert/pooler/dense/bias"]
    assert not report.mismatched and not report.unused
    np.testing.assert_array_equal(
        model.classifier_head.dense.kernel.numpy(), state["classifier.weight"].T
    )

    batch = random_batch(batch=3, seq=11)
    labels = np.random.default_rng(1).integers(0, 5, (3, 11))
    labels[batch["input_mask"] == 0] = -1
    labels[:, 0] = -1
    with torch.no_grad():
        want = hf(
            input_ids=torch.tensor(batch["input_ids"], dtype=torch.long),
            attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
            labels=torch.tensor(np.where(labels == -1, -100, labels), dtype=torch.long),
        )
    got = model(batch, training=False)["logits"].numpy()
    np.testing.assert_allclose(got, want.logits.numpy(), atol=1e-5)
    assert np.abs(got).max() > 1  # not a comparison of near-zero numbers
    np.testing.assert_allclose(
        float(masked_token_cross_entropy(got, labels)), float(want.loss), rtol=1e-5
    )
