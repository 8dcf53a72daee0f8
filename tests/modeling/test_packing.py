"""The packed encoder (albert_tf.modeling.packing): only the real tokens through the
projections, FFN and LayerNorms, and the same outputs as the padded computation."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertEncoder
from albert_tf.modeling.packing import TokenRows
from albert_tf.modeling.trace_options import current_trace_options, trace_options
from tests.support.harness import tiny_config

LENGTHS = [9, 3, 12, 1, 7]  # rows of a batch padded to 12; one with no padding


def batch(lengths=LENGTHS, seq=12, seed=0):
    rng = np.random.default_rng(seed)
    mask = (np.arange(seq)[None, :] < np.array(lengths)[:, None]).astype(np.int32)
    ids = rng.integers(5, 99, (len(lengths), seq)).astype(np.int32) * mask
    segments = (np.arange(seq)[None, :] >= 2).astype(np.int32) * mask
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


@pytest.fixture(scope="module")
def encoder():
    model = AlbertEncoder(tiny_config(inner_group_num=2, num_hidden_groups=2))
    model.build()
    return model


def test_token_rows_index_the_real_tokens():
    mask = tf.constant(batch()["input_mask"])
    rows = TokenRows.of_mask(mask, num_heads=2)
    flat = mask.numpy().reshape(-1)
    np.testing.assert_array_equal(rows.rows.numpy(), np.flatnonzero(flat))
    # Every grid position points at a real token of the packed matrix; real ones at their own.
    head_rows = rows.head_rows.numpy()  # [3, B, N, S], rows of [T*3*N, D]
    assert head_rows.shape == (3, 5, 2, 12)
    T = flat.sum()
    assert head_rows.min() >= 0 and head_rows.max() < T * 3 * 2
    token = head_rows // 6  # the packed token of each entry
    b, s = np.nonzero(mask.numpy())
    np.testing.assert_array_equal(token[0, b, 0, s], np.arange(T))
    np.testing.assert_array_equal(head_rows[2, b, 1, s] % 6, 2 * 2 + 1)  # v, head 1
    # context_rows: token t, head n → row (b·N + n)·S + s of [B*N*S, D].
    np.testing.assert_array_equal(rows.context_rows.numpy()[:, 1], (b * 2 + 1) * 12 + s)


def test_packed_equals_padded_at_real_positions_and_is_zero_at_padding(encoder):
    inputs = {k: tf.constant(v) for k, v in batch().items()}
    padded = encoder(inputs, output_hidden_states=True)
    packed = encoder(inputs, output_hidden_states=True, packed=True)
    mask = inputs["input_mask"].numpy().astype(bool)
    for name in ("sequence_output", "embedding_output"):
        np.testing.assert_allclose(
            packed[name].numpy()[mask], padded[name].numpy()[mask], atol=1e-5
        )
        assert not packed[name].numpy()[~mask].any()
    assert len(packed["encoder_outputs"]) == len(padded["encoder_outputs"]) == 8
    for got, want in zip(packed["encoder_outputs"], padded["encoder_outputs"]):
        np.testing.assert_allclose(got.numpy()[mask], want.numpy()[mask], atol=1e-5)
    np.testing.assert_allclose(
        packed["pooled_output"].numpy(), padded["pooled_output"].numpy(), atol=1e-5
    )
    # A row's outputs do not depend on the other rows' lengths.
    alone = encoder({k: v[2:3] for k, v in inputs.items()}, packed=True)
    np.testing.assert_allclose(
        alone["sequence_output"].numpy()[0], packed["sequence_output"].numpy()[2], atol=1e-5
    )


def test_the_option_packs_traced_calls_and_leaves_output_positions_alone(encoder):
    inputs = {k: tf.constant(v) for k, v in batch().items()}
    assert not current_trace_options().packed

    @tf.function
    def forward(x):
        return encoder(x)["sequence_output"]

    with trace_options(packed=True):
        assert current_trace_options().packed
        got = forward(inputs).numpy()
        # output_positions (pretraining) keeps the padded path inside a scope.
        positions = encoder(inputs, output_positions=tf.constant([[1, 2]] * 5))
    assert not current_trace_options().packed
    assert not got[~inputs["input_mask"].numpy().astype(bool)].any()  # packed: zero padding
    assert positions["positions_output"].shape == (5, 2, 32)
    with pytest.raises(ValueError, match="output_positions and packed"):
        encoder(inputs, output_positions=tf.constant([[1]] * 5), packed=True)


def test_packed_gradients_equal_padded(encoder):
    """Not used for training today; the gathers are differentiable all the same."""
    inputs = {k: tf.constant(v) for k, v in batch().items()}
    mask = tf.cast(inputs["input_mask"], tf.float32)[..., None]
    grads = []
    for packed in (False, True):
        with tf.GradientTape() as tape:
            out = encoder(inputs, packed=packed)["sequence_output"]
            loss = tf.reduce_sum(tf.square(out * mask))
        grads.append(tape.gradient(loss, encoder.trainable_variables))
    assert sum(g is not None for g in grads[0]) >= 10
    for a, b in zip(*grads):
        assert (a is None) == (b is None)
        if a is None:  # the pooler: not in this loss
            continue
        np.testing.assert_allclose(
            tf.convert_to_tensor(b).numpy(), tf.convert_to_tensor(a).numpy(), atol=2e-4, rtol=1e-3
        )


def test_a_mask_without_real_tokens_still_computes(encoder):
    """An empty request's placeholder row (all padding) packs position 0, as the padded
    path computes every position: finite outputs of the right shape, no empty gather."""
    inputs = {k: tf.zeros([2, 6], tf.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    out = encoder(inputs, packed=True)
    assert out["sequence_output"].shape == (2, 6, 32)
    assert np.isfinite(out["pooled_output"].numpy()).all()
