"""Selective recomputation (recompute="attention", albert_tf.modeling.recompute):
each attention sub-layer keeps q, k, v and recomputes its core in the backward pass. The
loss and every gradient are the plain pass's (dropout on, masks replayed; dropout off;
LoRA adapters), the probabilities are really dropped (the forward's softmax feeds no
backward op), and the blocks themselves are not recomputed."""

import numpy as np
import pytest

from tests.modeling.test_recompute import (
    CONFIG,
    assert_close,
    assert_shifted_masks_change_the_gradients,
    gradients,
)
from tests.support.harness import random_batch, tiny_config


def _model(**overrides):
    """A tiny pretrainer (four layers in two groups, float32), the last block at the
    masked positions only in `gradients` (the core with query rows)."""
    import keras

    from albert_tf.modeling.models import AlbertPretrainer

    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(0)
    model = AlbertPretrainer(tiny_config(**{**CONFIG, **overrides}))
    model.build()
    return model


@pytest.fixture(scope="module")
def dropout_model():
    """(model with dropout 0.1, batch, plain-pass loss and gradients)."""
    model, batch = _model(), random_batch()
    return model, batch, gradients(model, batch, "none")


def test_gradients_equal_the_plain_pass_with_dropout(dropout_model):
    """Every variable's gradient, attention and hidden dropout 0.1 inside a
    `DropoutSeed`: the recomputed core draws the forward's masks."""
    model, batch, plain = dropout_model
    assert_close(plain, gradients(model, batch, "attention"), "float32")


def test_the_masks_are_replayed(dropout_model, monkeypatch):
    """The check above has teeth: a recomputation drawing the next masks instead of the
    forward's gives other gradients."""
    assert_shifted_masks_change_the_gradients(*dropout_model, "attention", monkeypatch)


def test_gradients_equal_the_plain_pass_without_dropout():
    model = _model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    batch = random_batch()
    assert_close(gradients(model, batch, "none"), gradients(model, batch, "attention"), "float32")


def test_gradients_equal_the_plain_pass_bfloat16():
    """Mixed bfloat16: q, k, v and the logits in bfloat16, the softmax's fused kernel."""
    from tests.modeling.test_recompute import _model as mixed_model

    model, batch = mixed_model("bfloat16"), random_batch()
    assert_close(gradients(model, batch, "none"), gradients(model, batch, "attention"), "bfloat16")


def test_active_dropout_without_a_dropout_seed_is_an_error(dropout_model):
    import tensorflow as tf

    from albert_tf.modeling.trace_options import trace_options

    model, batch, _ = dropout_model
    with (
        pytest.raises(ValueError, match="needs a DropoutSeed"),
        trace_options(recompute="attention"),
    ):
        with tf.GradientTape():
            model(batch, training=True)


def _softmax_kept_for_backward(model, batch, mode) -> tuple[int, int]:
    """(Softmax ops in the traced step, how many of the forward's have a consumer in the
    backward pass). Forward = the ops the loss depends on; an output consumed by any
    other op (the gradient's) is kept alive until the backward reaches it."""
    import tensorflow as tf

    from albert_tf.modeling.dropout import step_seed
    from tests.modeling.test_recompute import _loss

    @tf.function
    def fn():
        with tf.GradientTape() as tape:
            loss = _loss(model, batch, mode, step_seed(7, 1))
        return loss, tape.gradient(loss, model.trainable_variables)

    graph = fn.get_concrete_function().graph
    loss = tf.nest.flatten(fn.get_concrete_function().structured_outputs)[0]
    forward, todo = set(), [loss.op]
    while todo:
        op = todo.pop()
        if op.name not in forward:
            forward.add(op.name)
            todo += [t.op for t in op.inputs] + list(op.control_inputs)
    softmax = [op for op in graph.get_operations() if op.type == "Softmax"]
    kept = [
        op
        for op in softmax
        if op.name in forward
        and any(c.name not in forward for t in op.outputs for c in t.consumers())
    ]
    return len(softmax), len(kept)


def test_the_forward_probabilities_are_not_kept_for_the_backward(dropout_model):
    """Plain: each of the 4 layers' forward softmax output feeds the backward. Attention
    mode: none does; the backward runs its own 4 softmaxes (the recomputation)."""
    model, batch, _ = dropout_model
    assert _softmax_kept_for_backward(model, batch, "none") == (4, 4)
    assert _softmax_kept_for_backward(model, batch, "attention") == (8, 0)


def test_return_probs_and_blocks_are_as_the_plain_pass():
    """Under "attention" the encoder cuts no block segments, and an attention call
    returning its probabilities (kept anyway) gives the plain values."""
    import tensorflow as tf

    from albert_tf.modeling.recompute import segments
    from albert_tf.modeling.trace_options import trace_options

    model = _model(attention_probs_dropout_prob=0.0)
    config = model.config
    assert segments(config, "attention") == segments(config, "none")
    attention = model.encoder.blocks[0].attention
    x = tf.random.stateless_normal([2 * 5, config.hidden_size], [1, 2])
    bias = tf.constant([0.0, 0, 0, -1e4, -1e4])[None, None, None, :] * tf.ones([2, 1, 1, 1])
    plain = attention(x, bias, batch_size=2, seq_length=5, return_probs=True)
    with trace_options(recompute="attention"):
        got = attention(x, bias, batch_size=2, seq_length=5, return_probs=True)
        alone = attention(x, bias, batch_size=2, seq_length=5)
    for a, b in zip(plain, got):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(alone.numpy(), plain[0].numpy(), rtol=1e-6, atol=1e-6)


def test_lora_adapter_gradients_equal_the_plain_pass():
    import tensorflow as tf

    from albert_tf.modeling.trace_options import trace_options
    from tests.modeling.test_lora import _inputs, _pair, _randomize_b
    from tests.modeling.test_lora import _loss as lora_loss

    _, adapted, holder = _pair()
    _randomize_b(holder)
    x, labels = _inputs(), tf.constant([0, 2, 1])
    variables = adapted.trainable_variables
    assert any("lora_" in v.path for v in variables)
    with tf.GradientTape() as tape:
        loss = lora_loss(adapted, x, labels)
    plain = tape.gradient(loss, variables)
    with tf.GradientTape() as tape, trace_options(recompute="attention"):
        got_loss = lora_loss(adapted, x, labels)
    assert float(got_loss) == pytest.approx(float(loss), rel=1e-6)
    for g, r, v in zip(plain, tape.gradient(got_loss, variables), variables):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-5, atol=1e-7, err_msg=v.path)
