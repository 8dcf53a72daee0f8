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


def test_the_option_packs_traced_calls_with_and_without_output_positions(encoder):
    inputs = {k: tf.constant(v) for k, v in batch().items()}
    assert not current_trace_options().packed

    @tf.function
    def forward(x):
        return encoder(x)["sequence_output"]

    with trace_options(packed=True):
        assert current_trace_options().packed
        got = forward(inputs).numpy()
        packed = encoder(inputs, output_positions=tf.constant([[0, 2]] * 5))
    assert not current_trace_options().packed
    assert not got[~inputs["input_mask"].numpy().astype(bool)].any()  # packed: zero padding
    padded = encoder(inputs, output_positions=tf.constant([[0, 2]] * 5))
    np.testing.assert_allclose(
        packed["pooled_output"].numpy(), padded["pooled_output"].numpy(), atol=1e-5
    )
    real = inputs["input_mask"].numpy()[:, 2] > 0  # row 3 is one token: its 2 is padding
    got, want = packed["positions_output"].numpy(), padded["positions_output"].numpy()
    np.testing.assert_allclose(got[real], want[real], atol=1e-5)


def test_the_last_block_at_a_few_positions_of_the_packed_rows(encoder):
    """`output_positions` under packing: the last block's keys and values from the packed
    rows (`TokenRows.key_value_inputs`), its queries only at [CLS] and those positions
    (`TokenRows.packed_index`): the full packed pass's values there, and the classifier's
    [CLS]-only pooled output."""
    inputs = {k: tf.constant(v) for k, v in batch().items()}
    positions = np.array([[8, 1], [2, 0], [11, 5], [0, 0], [6, 3]], np.int32)  # all real
    full = encoder(inputs, packed=True)
    got = encoder(inputs, output_positions=tf.constant(positions), packed=True)
    want = np.take_along_axis(full["sequence_output"].numpy(), positions[..., None], axis=1)
    np.testing.assert_allclose(got["positions_output"].numpy(), want, atol=1e-5)
    np.testing.assert_allclose(
        got["pooled_output"].numpy(), full["pooled_output"].numpy(), atol=1e-5
    )
    none = tf.zeros([5, 0], tf.int32)  # `pooled_output_only`: [CLS] alone
    cls_only = encoder(inputs, output_positions=none, packed=True)["pooled_output"]
    np.testing.assert_allclose(cls_only.numpy(), full["pooled_output"].numpy(), atol=1e-5)
    empty = {k: tf.zeros([2, 6], tf.int32) for k in inputs}  # no real token: still finite
    out = encoder(empty, output_positions=tf.zeros([2, 0], tf.int32), packed=True)
    assert np.isfinite(out["pooled_output"].numpy()).all()


def test_key_value_rows_pick_the_keys_and_values_of_the_fused_rows():
    mask = tf.constant(batch()["input_mask"])
    rows = TokenRows.of_mask(mask, num_heads=2)
    T = int(mask.numpy().sum())
    qkv = tf.random.stateless_normal([T, 3 * 2 * 4], seed=[1, 2])  # [T, 3H], N=2, D=4
    _, k, v = rows.attention_inputs(qkv, 4)
    k2, v2 = rows.key_value_inputs(qkv[:, 8:], 4)
    np.testing.assert_array_equal(k2.numpy(), k.numpy())
    np.testing.assert_array_equal(v2.numpy(), v.numpy())
    # Real (row 0's first, row 1's second, the last real), then padding: the real token
    # before it (row 1 has 3 tokens; row 4 ends at 54).
    grid = tf.constant([0, 13, 54, 15, 59])
    np.testing.assert_array_equal(rows.packed_index(grid).numpy(), [0, 10, T - 1, 11, T - 1])


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
