"""Sentence embeddings: every pooling against a numpy reference written from its definition
on batches whose rows are padded differently, unit norm, the encoder's own all-layer
outputs, and mean pooling equal to sentence-transformers' on Hugging Face `AlbertModel`
with the same weights."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.pooling import POOLINGS, AlbertEmbedder, masked_max, pool
from tests.support.harness import random_batch, tiny_config

TOL = 1e-5


def reference_pool(sequence, pooled, mask, pooling):
    """numpy, row by row over the real tokens only."""
    out = []
    for h, p, m in zip(sequence, pooled, mask.astype(bool)):
        real = h[m]  # [T, H]
        out.append({"pooler": p, "cls": h[0], "mean": real.mean(0), "max": real.max(0)}[pooling])
    return np.stack(out)


@pytest.fixture(scope="module")
def encoder():
    encoder = AlbertEncoder(tiny_config())
    encoder.build()
    return encoder


@pytest.fixture(scope="module")
def batch():
    b = random_batch(batch=4, seq=11)  # rows 1 and 2 padded (7 and 3 real tokens)
    b["input_mask"][3, 5:] = 0  # and row 3 (5 real tokens)
    b["input_ids"][3, 5:] = 0
    return {k: b[k] for k in ("input_ids", "input_mask", "segment_ids")}


@pytest.mark.parametrize("pooling", POOLINGS)
@pytest.mark.parametrize("normalize", [False, True])
def test_pooling_matches_numpy_reference(encoder, batch, pooling, normalize):
    embedder = AlbertEmbedder(encoder.config, encoder, pooling=pooling, normalize=normalize)
    got = embedder(batch)["embeddings"].numpy()
    out = encoder(batch)
    want = reference_pool(
        out["sequence_output"].numpy(), out["pooled_output"].numpy(), batch["input_mask"], pooling
    )
    if normalize:
        want = want / np.linalg.norm(want, axis=1, keepdims=True)
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    assert got.shape == (4, encoder.config.hidden_size)
    np.testing.assert_allclose(got, want, atol=TOL)


def test_padding_never_counts(encoder, batch):
    """Changing what sits at padded positions (ids and segments) changes no embedding."""
    other = {k: v.copy() for k, v in batch.items()}
    pad = batch["input_mask"] == 0
    other["input_ids"][pad] = 77
    other["segment_ids"][pad] = 1
    for pooling in POOLINGS:
        embedder = AlbertEmbedder(encoder.config, encoder, pooling=pooling)
        np.testing.assert_allclose(
            embedder(batch)["embeddings"].numpy(),
            embedder(other)["embeddings"].numpy(),
            atol=TOL,
            err_msg=pooling,
        )


def test_max_over_negative_values_ignores_padding():
    """All real values negative, padding zeros (larger): the max is still the real max."""
    sequence = -np.arange(1, 25, dtype=np.float32).reshape(2, 4, 3)
    sequence[:, 2:] = 0.0
    mask = np.array([[1, 1, 0, 0], [1, 0, 0, 0]], np.int32)
    got = masked_max(sequence, mask).numpy()
    np.testing.assert_array_equal(got, [[-1, -2, -3], [-13, -14, -15]])
    empty = masked_max(sequence, np.zeros_like(mask)).numpy()
    np.testing.assert_array_equal(empty, np.zeros((2, 3)))  # no real token: zeros


def test_all_layer_outputs_are_the_encoders_own(batch):
    config = tiny_config(num_hidden_groups=2, inner_group_num=2)
    encoder = AlbertEncoder(config)
    encoder.build()
    embedder = AlbertEmbedder(config, encoder, pooling="cls")
    got = embedder(batch, output_hidden_states=True)
    want = encoder(batch, output_hidden_states=True)
    assert len(got["encoder_outputs"]) == config.num_hidden_layers * config.inner_group_num
    for ours, theirs in zip(got["encoder_outputs"], want["encoder_outputs"]):
        assert ours.shape == (4, 11, config.hidden_size)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(
        got["encoder_outputs"][-1].numpy(), want["sequence_output"].numpy()
    )
    np.testing.assert_array_equal(got["embedding_output"].numpy(), want["embedding_output"].numpy())
    assert "encoder_outputs" not in embedder(batch)


def test_unknown_pooling_is_one_line():
    message = r"^pooling 'sum': expected one of pooler, cls, mean, max$"
    with pytest.raises(ValueError, match=message):
        AlbertEmbedder(tiny_config(), pooling="sum")
    with pytest.raises(ValueError, match="expected one of"):
        pool({}, None, "avg")


def test_mean_pooling_equals_sentence_transformers_on_hugging_face(tmp_path, batch):
    """Hugging Face AlbertModel, random weights, copied through `read_transformers` (the
    converter's reader) and `assign_official`; sentence-transformers' mean pooling
    (models.Pooling, pooling_mode_mean_tokens) written out on its last_hidden_state."""
    import torch

    from albert_tf.checkpoints import assign_official, read_transformers
    from tests.support.references import hf_pretraining_model

    hf = hf_pretraining_model(tmp_path, heads=False)
    config, weights, unknown = read_transformers(str(tmp_path))
    assert not unknown
    embedder = AlbertEmbedder(config, pooling="mean")
    embedder.build()
    result = assign_official(embedder, weights, str(tmp_path))
    assert not result.missing and not result.unused

    with torch.no_grad():
        mask = torch.tensor(batch["input_mask"], dtype=torch.long)
        tokens = hf(
            input_ids=torch.tensor(batch["input_ids"], dtype=torch.long),
            attention_mask=mask,
            token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
        ).last_hidden_state
        expanded = mask.unsqueeze(-1).expand(tokens.size()).float()
        want = torch.sum(tokens * expanded, 1) / torch.clamp(expanded.sum(1), min=1e-9)
    got = embedder(batch)["embeddings"].numpy()
    np.testing.assert_allclose(got, want.numpy(), atol=TOL)


def test_embedder_runs_in_a_graph_with_dynamic_shapes(encoder, batch):
    embedder = AlbertEmbedder(encoder.config, encoder, pooling="max", normalize=True)
    spec = {k: tf.TensorSpec([None, None], tf.int32) for k in batch}
    fn = tf.function(lambda x: embedder(x)["embeddings"], input_signature=[spec])
    np.testing.assert_allclose(fn(batch).numpy(), embedder(batch)["embeddings"].numpy(), atol=TOL)
