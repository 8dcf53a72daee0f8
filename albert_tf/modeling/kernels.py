"""Elementwise kernels of the encoder: tanh-GELU, LayerNorm of a residual sum, and the
masked attention softmax, each with its gradient written out by hand.

Why this module exists. TensorFlow runs an elementwise chain such as the GELU (and its
gradient) as a dozen or more separate passes over a [batch*seq, I] tensor, and in bf16
each pass is scalar Eigen code. Each function here therefore has two implementations that
compute the same values:

- Where gradients are recorded (training), the forward and the backward are each one
  XLA-compiled loop (`tf.function(jit_compile=True)`), computed in float32 for
  low-precision inputs (float64 stays float64). This also holds when the training step
  itself is not compiled; inside a step compiled with XLA the kernels are simply inlined.
- Where no gradient can be recorded (inference), the plain TensorFlow ops are traced:
  oneDNN fuses the plain GELU into the matmul before it, which the compiled kernel would
  prevent, and the compiled LayerNorm and softmax gained nothing there.
- Under `trace_options(portable_kernels=True)` (`albert_tf.modeling.trace_options`) the
  plain ops are traced in every case: SavedModels are exported that way so that runtimes
  built without XLA (TF Serving's default build) can load them.

The choice is made per call by `_xla_kernels()`. The Keras layers that use these
functions are in `layers.py`.
"""

from __future__ import annotations

import math

import tensorflow as tf

from albert_tf.modeling.trace_options import current_trace_options, trace_options

_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


def portable_kernels():
    """`trace_options(portable_kernels=True)`: plain TensorFlow ops instead of the
    XLA-compiled kernels within the block. The name `albert_tf.serving` enters."""
    return trace_options(portable_kernels=True)


def _xla_kernels() -> bool:
    """Whether to use the XLA-compiled kernels here: allowed (not portable), and
    gradients recorded."""
    return not current_trace_options().portable_kernels and _recording()


def _recording() -> bool:
    try:
        from tensorflow.python.eager import record

        return record.could_possibly_record()
    except (ImportError, AttributeError):  # private API: assume training if it moves
        return True


def _wide(x):
    return x if x.dtype == tf.float64 else tf.cast(x, tf.float32)


def _gelu_forward(x):
    xf = _wide(x)
    t = tf.tanh(xf * (_GELU_C + (_GELU_C * _GELU_A) * xf * xf))
    return tf.cast(0.5 * xf * (1.0 + t), x.dtype)


def _gelu_backward(x, dy):
    # d/dx = 0.5(1+t) + 0.5·√(2/π)·x·(1-t²)(1+3·0.044715·x²), t the tanh.
    xf = _wide(x)
    x2 = xf * xf
    t = tf.tanh(xf * (_GELU_C + (_GELU_C * _GELU_A) * x2))
    derivative = 0.5 * (1.0 + t) + xf * (1.0 - t * t) * (
        0.5 * _GELU_C + (1.5 * _GELU_C * _GELU_A) * x2
    )
    return tf.cast(_wide(dy) * derivative, x.dtype)


_gelu_forward_xla = tf.function(_gelu_forward, jit_compile=True, reduce_retracing=True)
_gelu_backward_xla = tf.function(_gelu_backward, jit_compile=True, reduce_retracing=True)


@tf.custom_gradient
def gelu_tanh(x):
    """GELU in the official tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).

    Same values as `keras.activations.gelu(x, approximate=True)`. The gradient is written
    out analytically, 0.5(1+t) + 0.5·√(2/π)·x·(1-t²)(1+3·0.044715·x²) with t the tanh.
    When training, both directions are one XLA-compiled kernel each (computed in float32
    for low-precision x). Otherwise the formula is traced as written, the pattern oneDNN
    fuses into the preceding matmul.
    """
    if _xla_kernels():
        return _gelu_forward_xla(x), lambda dy: _gelu_backward_xla(x, dy)
    t = tf.tanh(_GELU_C * (x + _GELU_A * x * x * x))

    def grad(dy):
        return dy * (
            0.5 * (1.0 + t) + (0.5 * _GELU_C) * x * (1.0 - t * t) * (1.0 + 3.0 * _GELU_A * x * x)
        )

    return 0.5 * x * (1.0 + t), grad


def _layer_norm_forward(epsilon, gamma, beta, x, residual=None):
    x = _wide(x) if residual is None else _wide(x) + _wide(residual)
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    return (x - mean) * (tf.math.rsqrt(variance + epsilon) * gamma) + beta


def _layer_norm_backward(epsilon, gamma, dy, x, residual=None):
    """Gradients for x, residual (the same: their sum is normalized), gamma, beta."""
    total = _wide(x) if residual is None else _wide(x) + _wide(residual)
    mean, variance = tf.nn.moments(total, axes=[-1], keepdims=True)
    rstd = tf.math.rsqrt(variance + epsilon)
    normalized = (total - mean) * rstd
    dn = dy * gamma
    dx = rstd * (
        dn
        - tf.reduce_mean(dn, -1, keepdims=True)
        - normalized * tf.reduce_mean(dn * normalized, -1, keepdims=True)
    )

    def over_rows(t):
        return tf.reduce_sum(tf.reshape(t, [-1, tf.shape(t)[-1]]), 0)

    return (
        tf.cast(dx, x.dtype),
        None if residual is None else tf.cast(dx, residual.dtype),
        over_rows(dy * normalized),
        over_rows(dy),
    )


_layer_norm_forward_xla = tf.function(_layer_norm_forward, jit_compile=True, reduce_retracing=True)
_layer_norm_backward_xla = tf.function(
    _layer_norm_backward, jit_compile=True, reduce_retracing=True
)


def layer_norm_residual(x, residual, gamma, beta, epsilon: float):
    """LayerNorm(x + residual) (or of x alone, residual None) over the last axis, in
    float32 (float64 stays float64).

    x may be low precision (a sub-layer's bf16 output), residual float32 (the residual
    stream); each gets its gradient in its own dtype. When training, forward and
    backward are one XLA-compiled kernel each, the add and casts included (the backward
    recomputes the row statistics rather than keeping them). Otherwise plain TensorFlow
    ops (inference, SavedModels).
    """
    dtype = tf.float64 if x.dtype == tf.float64 else tf.float32
    gamma, beta = tf.cast(gamma, dtype), tf.cast(beta, dtype)
    if not _xla_kernels():
        total = (
            tf.cast(x, dtype)
            if residual is None
            else (tf.cast(x, dtype) + tf.cast(residual, dtype))
        )
        # Five full-size intermediates (tf.nn.moments + batch_normalization make six, and
        # are slower; docs/performance-history.md).
        centered = total - tf.reduce_mean(total, axis=-1, keepdims=True)
        variance = tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True)
        return centered * (tf.math.rsqrt(variance + epsilon) * gamma) + beta
    forward, backward = _layer_norm_forward_xla, _layer_norm_backward_xla
    if residual is None:

        @tf.custom_gradient
        def alone(x, gamma, beta):
            def grad(dy):
                dx, _, dgamma, dbeta = backward(epsilon, gamma, dy, x)
                return dx, dgamma, dbeta

            return forward(epsilon, gamma, beta, x), grad

        return alone(x, gamma, beta)

    @tf.custom_gradient
    def summed(x, residual, gamma, beta):
        def grad(dy):
            return backward(epsilon, gamma, dy, x, residual)

        return forward(epsilon, gamma, beta, x, residual), grad

    return summed(x, residual, gamma, beta)


def _softmax_forward(logits, bias):
    return tf.cast(tf.nn.softmax(_wide(logits) + bias, axis=-1), logits.dtype)


def _softmax_backward(logits, bias, dprobs):
    # Recomputes the float32 probabilities (cheaper than keeping them, and as exact).
    probs = tf.nn.softmax(_wide(logits) + bias, axis=-1)
    d = _wide(dprobs)
    return tf.cast(probs * (d - tf.reduce_sum(d * probs, -1, keepdims=True)), logits.dtype)


_softmax_forward_xla = tf.function(_softmax_forward, jit_compile=True, reduce_retracing=True)
_softmax_backward_xla = tf.function(_softmax_backward, jit_compile=True, reduce_retracing=True)


def attention_softmax(logits, bias):
    """softmax(logits + bias) over the last axis, computed in float32, returned in the
    logits' dtype: [batch, heads, Q, seq] scores and a [batch, 1, 1, seq] additive mask.

    When training with low-precision logits, the casts, add and softmax of each direction
    are one XLA-compiled kernel; float32 logits and inference use TensorFlow's ops, which
    are faster there.
    """
    if logits.dtype in (tf.float32, tf.float64) or not _xla_kernels():
        return _softmax_forward(logits, bias)

    @tf.custom_gradient
    def fused(logits):
        return _softmax_forward_xla(logits, bias), lambda dp: _softmax_backward_xla(
            logits, bias, dp
        )

    return fused(logits)
