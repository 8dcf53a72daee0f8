"""ALBERT building blocks: factorized embeddings and the post-LN Transformer sub-layers.

Everything here follows the official google-research/albert `modeling.py` (see
`docs/design/forward-pass.md`): truncated-normal initialization, LayerNorm epsilon 1e-12, an
additive -10000 attention mask, GELU in its tanh form, post-LN residual blocks.

Mixed precision: matmuls run in the layer's compute dtype (bfloat16/float16 under a mixed
policy); LayerNorm, the attention softmax and the residual stream stay in float32. Inside
the encoder the hidden stream is kept as a 2-D [batch*seq, H] matrix so that every dense
layer is one plain GEMM. The elementwise math between the GEMMs (GELU, LayerNorm of a
residual sum, the attention softmax) is in `kernels.py`.
"""

from __future__ import annotations

import math

import keras
import tensorflow as tf

from albert_tf.modeling import recompute
from albert_tf.modeling.cast_once import CastOnce
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.dropout import Dropout
from albert_tf.modeling.kernels import attention_softmax, gelu_tanh, layer_norm_residual
from albert_tf.modeling.trace_options import current_trace_options


def get_activation(name: str):
    """Maps a config `hidden_act` to a function (see `config.ACTIVATIONS`)."""
    if name in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
        return gelu_tanh
    if name == "gelu_exact":
        return lambda x: keras.activations.gelu(x, approximate=False)
    if name == "relu":
        return keras.activations.relu
    raise ValueError(f"unknown activation {name!r}")


def initializer(config: AlbertConfig):
    """Truncated normal (cut at 2 stddev), as the official `create_initializer`."""
    return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


def dense(config: AlbertConfig, units: int, name: str, activation=None) -> keras.layers.Dense:
    return keras.layers.Dense(
        units, activation=activation, name=name, kernel_initializer=initializer(config)
    )


class LayerNorm(keras.layers.LayerNormalization):
    """LayerNorm over the last axis, computed in float32, optionally of a sum:
    `call(x, residual=r)` = LayerNorm(x + r) (the post-LN residual).

    Same function as `keras.layers.LayerNormalization` (same variables); computed by
    `kernels.layer_norm_residual`.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._convert_input_args = False  # a bf16 x is widened inside the kernel

    def call(self, inputs, residual=None):
        out = layer_norm_residual(inputs, residual, self.gamma, self.beta, self.epsilon)
        return tf.cast(out, self.compute_dtype)


def layer_norm(config: AlbertConfig, name: str = "LayerNorm") -> LayerNorm:
    # float32 policy: normalization statistics and the residual stream stay in float32
    # under mixed precision.
    return LayerNorm(epsilon=config.layer_norm_eps, name=name, dtype="float32")


def compute_weights(pairs, dtype: str) -> tuple:
    """(kernel, bias) tensor pairs, ready for `apply_dense` in `dtype`.

    `pairs`: float32 (kernel, bias) tensors, e.g. a Dense layer's variables or a fused
    kernel built from several of them (see `AttentionSublayer.compute_weights`).

    Under mixed precision a shared block is called L times per forward pass; its float32
    variables are cast once per pass, here, instead of at every call. Each use still gets
    its own gradient path (`_tensor`), so gradients are cast to float32 per use and
    summed in float32, exactly as with per-call casts. Must be called where Keras does
    not autocast variable reads (the encoder is built with `autocast=False`).
    """
    out = []
    for kernel, bias in pairs:
        kernel, bias = tf.convert_to_tensor(kernel), tf.convert_to_tensor(bias)
        if dtype != "float32":
            kernel, bias = CastOnce(kernel, dtype), CastOnce(bias, dtype)
        out.append((kernel, bias))
    return tuple(out)


def variables_of(*layers) -> list:
    """[(kernel, bias)] of Keras Dense layers; a kernel with a LoRA update attached
    (`lora_update`, albert_tf.modeling.lora) is W + update(), what the GEMM then reads."""
    return [(_kernel(layer), layer.bias) for layer in layers]


def _kernel(layer):
    update = getattr(layer, "lora_update", None)
    return layer.kernel if update is None else tf.convert_to_tensor(layer.kernel) + update()


def _tensor(w):
    """The tensor to compute with; for a `CastOnce`, an identity of its low-precision
    value whose gradient is cast to float32 and sent straight to the float32 source."""
    if not isinstance(w, CastOnce):
        return w
    value = w.value

    @tf.custom_gradient
    def identity(source):
        return tf.identity(value), lambda dy: tf.cast(dy, source.dtype)

    return identity(w.source)


def apply_dense(x, weights, activation=None):
    """x @ kernel + bias (one GEMM; MatMul+BiasAdd(+GELU) fuse in TensorFlow's oneDNN path)."""
    return _dense(x, _tensor(weights[0]), _tensor(weights[1]), activation)


def _dense(x, kernel, bias, activation=None):
    y = tf.nn.bias_add(tf.matmul(tf.cast(x, kernel.dtype), kernel), bias)
    return activation(y) if activation is not None else y


class AlbertEmbeddings(keras.layers.Layer):
    """Factorized embeddings (paper Section 3.1): word + position + segment, LayerNorm, dropout.

    Tables have width E (`embedding_size`), not H; the encoder projects E→H afterwards.
    The word table is also the output matrix of the MLM head (tied).

    Call args:
      input_ids: int [batch, seq].
      segment_ids: int [batch, seq].
    Returns:
      float32 [batch, seq, E].
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.config = config
        self.layer_norm = layer_norm(config)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def build(self, input_shape=None):
        c = self.config
        self.word_embeddings = self.add_weight(
            name="word_embeddings",
            shape=(c.vocab_size, c.embedding_size),
            initializer=initializer(c),
        )
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(c.max_position_embeddings, c.embedding_size),
            initializer=initializer(c),
        )
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings",
            shape=(c.type_vocab_size, c.embedding_size),
            initializer=initializer(c),
        )
        self.layer_norm.build((None, c.embedding_size))

    def call(self, input_ids, segment_ids, training=False):
        seq_length = input_ids.shape[1]
        if seq_length is not None and seq_length > self.config.max_position_embeddings:
            raise ValueError(
                f"sequence length {seq_length} exceeds max_position_embeddings="
                f"{self.config.max_position_embeddings}"
            )
        x = tf.gather(self.word_embeddings, input_ids)
        x += tf.gather(self.token_type_embeddings, segment_ids)
        x += self.position_embeddings[: tf.shape(input_ids)[1]][tf.newaxis]
        return self.dropout(self.layer_norm(x), training=training)


class AttentionSublayer(keras.layers.Layer):
    """Multi-head self-attention with output projection, dropout and post-LN residual.

    Official scope `attention_1/` (+ the `LayerNorm` after it). Q/K/V/output kernels are
    [H, H] variables like the official checkpoint; the computation uses them fused into
    one [H, 3H] projection (see `compute_weights`).

    Call args:
      x: [batch*seq, H] hidden matrix.
      attention_bias: float32 [batch, 1, 1, seq], 0 for real tokens and -10000 for padding.
      batch_size, seq_length: scalars to unflatten x.
      return_probs: also return float32 attention probabilities [batch, heads, Q, seq].
      query_rows: optional int32 [batch*Q] rows of x (Q per sequence, sequence b's rows
        first; rows of the packed matrix with `token_rows`): the output is computed only
        there, attending to every row of x as keys and values. The encoder's last block
        uses it when only some positions are needed (pretraining: [CLS] and the masked
        positions; a classifier: [CLS]).
      token_rows: optional `packing.TokenRows`: x holds only the batch's real tokens, [T, H] (the
        encoder's `packed` mode). The projections and LayerNorm then run on the T rows;
        only q, k and v are gathered onto the [batch, heads, seq, D] grid of the
        attention core, and its output back to the T rows.
    Returns:
      float32 [batch*seq, H] (or [batch*Q, H], [T, H]) = LayerNorm(x + dropout(dense(
      attention(x)))).

    Under `trace_options(recompute="attention")` the core (q·kᵀ, softmax, dropout, ·v)
    keeps only q, k, v for the backward pass and is recomputed there (same values and
    gradients; see `albert_tf.modeling.recompute`).
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        # Keras would cast float inputs to the compute dtype; the residual stream and the
        # attention bias must stay float32 (apply_dense casts to the compute dtype).
        self._convert_input_args = False
        self.config = config
        hidden = config.hidden_size
        self.query = dense(config, hidden, "query")
        self.key = dense(config, hidden, "key")
        self.value = dense(config, hidden, "value")
        self.output_dense = dense(config, hidden, "dense")
        self.layer_norm = layer_norm(config)
        self.probs_dropout = Dropout(config.attention_probs_dropout_prob)
        self.output_dropout = Dropout(config.hidden_dropout_prob)

    def build(self, input_shape=None):
        h = self.config.hidden_size
        for layer in (self.query, self.key, self.value, self.output_dense):
            layer.build((None, h))
        self.layer_norm.build((None, h))

    def compute_weights(self, dtype):
        """(fused Q|K|V kernel [H, 3H] and bias [3H]), (output kernel, bias) for
        `call(weights=...)`.

        Fused once per forward pass (the block is shared by every layer): one GEMM
        instead of three per layer, and the 1/√D of the attention logits folded into the
        query weights instead of scaling [batch, heads, seq, D] at every layer (exact
        when D is a power of two, as in every released config).
        """
        scale = 1.0 / math.sqrt(self.config.attention_head_size)
        (wq, bq), (wk, bk), (wv, bv), out = variables_of(
            self.query, self.key, self.value, self.output_dense
        )
        fused = (
            tf.concat([tf.convert_to_tensor(wq) * scale, wk, wv], axis=1),
            tf.concat([tf.convert_to_tensor(bq) * scale, bk, bv], axis=0),
        )
        return compute_weights((fused, out), dtype)

    def _split_heads(self, x, batch_size, length):
        c = self.config
        x = tf.reshape(x, [batch_size, length, c.num_attention_heads, c.attention_head_size])
        return tf.transpose(x, [0, 2, 1, 3])  # [B, N, length, D]

    def call(
        self,
        x,
        attention_bias,
        batch_size,
        seq_length,
        weights=None,
        training=False,
        return_probs=False,
        query_rows=None,
        token_rows=None,
    ):
        c = self.config
        h = c.hidden_size
        w_qkv, w_out = weights or self.compute_weights(self.compute_dtype)
        kernel, bias = _tensor(w_qkv[0]), _tensor(w_qkv[1])
        if query_rows is None:
            queries, query_length = x, seq_length
            qkv = _dense(x, kernel, bias)  # [B*S, 3H] ([T, 3H] packed)
            if token_rows is not None:  # onto the grid (padding: any row, masked)
                q, k, v = token_rows.attention_inputs(qkv, c.attention_head_size)
            else:
                qkv = tf.reshape(
                    qkv, [batch_size, seq_length, 3, c.num_attention_heads, c.attention_head_size]
                )
                q, k, v = tf.unstack(tf.transpose(qkv, [2, 0, 3, 1, 4]))  # [B, N, S, D] each
        else:
            queries = tf.gather(x, query_rows)  # [B*Q, H]
            query_length = tf.shape(query_rows)[0] // batch_size
            q = self._split_heads(
                _dense(queries, kernel[:, :h], bias[:h]), batch_size, query_length
            )
            kv = _dense(x, kernel[:, h:], bias[h:])  # [B*S, 2H] ([T, 2H] packed)
            if token_rows is not None:
                k, v = token_rows.key_value_inputs(kv, c.attention_head_size)
            else:
                kv = tf.reshape(
                    kv, [batch_size, seq_length, 2, c.num_attention_heads, c.attention_head_size]
                )
                k, v = tf.unstack(tf.transpose(kv, [2, 0, 3, 1, 4]))
        if current_trace_options().recompute == "attention" and not return_probs:
            context = self._recomputed_core(q, k, v, attention_bias, training)
        else:
            logits = tf.matmul(q, k, transpose_b=True)  # [B, N, Q, S]
            probs = attention_softmax(logits, attention_bias)  # float32 math, logits' dtype
            context = tf.matmul(self.probs_dropout(probs, training=training), v)
        if token_rows is not None and query_rows is None:
            context = token_rows.context(context)  # [T, H]
        else:
            context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [-1, h])
        out = self.output_dropout(apply_dense(context, w_out), training=training)
        out = self.layer_norm(out, residual=queries)
        if return_probs:  # the float32 probabilities (probs may be stored in bf16)
            return out, tf.nn.softmax(tf.cast(logits, tf.float32) + attention_bias, axis=-1)
        return out

    def _recomputed_core(self, q, k, v, attention_bias, training):
        """dropout(softmax(q·kᵀ + bias))·v [B, N, Q, D] from q [B, N, Q, D] and k, v
        [B, N, S, D], keeping only q, k and v for the backward pass: the [B, N, Q, S]
        logits and probabilities are recomputed there (`recompute.recomputed`, which
        replays the dropout masks). Under `trace_options(recompute="attention")`; with
        `return_probs` the probabilities are returned, hence kept, and the plain path
        runs instead."""

        def core(q, kv):
            logits = tf.matmul(q, kv[0], transpose_b=True)
            probs = attention_softmax(logits, attention_bias)
            return tf.matmul(self.probs_dropout(probs, training=training), kv[1])

        # A symbolic `training` may be true: dropout counts as active then (as the encoder).
        active = (training if isinstance(training, bool) else True) and (
            self.config.attention_probs_dropout_prob > 0
        )
        context, _ = recompute.recomputed(core, q, (k, v), dropout_active=active)
        return context


class FeedForwardSublayer(keras.layers.Layer):
    """Position-wise FFN H→I→H with activation, dropout and post-LN residual.

    Official scope `ffn_1/` (+ `LayerNorm_1`).

    Call args:
      x: [batch*seq, H].
    Returns:
      float32 [batch*seq, H] = LayerNorm(x + dropout(W2·act(W1·x))).
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self._convert_input_args = False  # keep the float32 residual (see AttentionSublayer)
        self.config = config
        self.activation = get_activation(config.hidden_act)
        self.intermediate = dense(config, config.intermediate_size, "intermediate")
        self.output_dense = dense(config, config.hidden_size, "output")
        self.layer_norm = layer_norm(config, "LayerNorm_1")
        self.dropout = Dropout(config.hidden_dropout_prob)

    def build(self, input_shape=None):
        c = self.config
        self.intermediate.build((None, c.hidden_size))
        self.output_dense.build((None, c.intermediate_size))
        self.layer_norm.build((None, c.hidden_size))

    def compute_weights(self, dtype):
        """Intermediate and output (kernel, bias) for `call(weights=...)`."""
        return compute_weights(variables_of(self.intermediate, self.output_dense), dtype)

    def call(self, x, weights=None, training=False):
        w_in, w_out = weights or self.compute_weights(self.compute_dtype)
        hidden = apply_dense(x, w_in, self.activation)
        out = self.dropout(apply_dense(hidden, w_out), training=training)
        return self.layer_norm(out, residual=x)


class TransformerBlock(keras.layers.Layer):
    """One post-LN Transformer block: attention sub-layer, then FFN sub-layer.

    The sub-layers are given, not created, so that cross-layer sharing is plain object
    reuse: blocks of a group share both (sharing="all"), or only one of them
    (sharing="attention" / "ffn", paper Table 4).
    """

    def __init__(self, attention: AttentionSublayer, ffn: FeedForwardSublayer, **kwargs):
        super().__init__(**kwargs)
        self._convert_input_args = False  # keep the float32 residual (see AttentionSublayer)
        self.attention = attention
        self.ffn = ffn

    def build(self, input_shape=None):
        for sub in (self.attention, self.ffn):
            if not sub.built:
                sub.build(input_shape)

    def call(
        self,
        x,
        attention_bias,
        batch_size,
        seq_length,
        weights=None,
        training=False,
        query_rows=None,
        token_rows=None,
    ):
        """`weights`: optional (attention weights, ffn weights) from the sub-layers'
        `compute_weights`, prepared once per forward pass by the encoder. `query_rows`:
        compute the block's output only at these rows of x; `token_rows`: x is the real
        tokens only (see `AttentionSublayer`)."""
        attention_weights, ffn_weights = weights or (None, None)
        x = self.attention(
            x,
            attention_bias,
            batch_size,
            seq_length,
            weights=attention_weights,
            training=training,
            query_rows=query_rows,
            token_rows=token_rows,
        )
        return self.ffn(x, weights=ffn_weights, training=training)
