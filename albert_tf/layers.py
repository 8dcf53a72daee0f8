"""ALBERT building blocks: factorized embeddings and the post-LN Transformer sub-layers.

Everything here follows the official google-research/albert `modeling.py` (see
`docs/architecture.md`): truncated-normal initialization, LayerNorm epsilon 1e-12, an
additive -10000 attention mask, GELU in its tanh form, post-LN residual blocks.

Mixed precision: matmuls run in the layer's compute dtype (bfloat16/float16 under a mixed
policy); LayerNorm, the attention softmax and the residual stream stay in float32. Inside
the encoder the hidden stream is kept as a 2-D [batch*seq, H] matrix so that every dense
layer is one plain GEMM.
"""

from __future__ import annotations

import math

import keras
import tensorflow as tf

from albert_tf.config import AlbertConfig


def get_activation(name: str):
    """Maps a config `hidden_act` to a function (see `config.ACTIVATIONS`)."""
    if name in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
        return lambda x: keras.activations.gelu(x, approximate=True)
    if name == "gelu_exact":
        return lambda x: keras.activations.gelu(x, approximate=False)
    if name == "relu":
        return keras.activations.relu
    raise ValueError(f"unknown activation {name!r}")


def initializer(config: AlbertConfig):
    """Truncated normal (cut at 2 stddev), as the official `create_initializer`."""
    return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


def dense(config: AlbertConfig, units: int, name: str, activation=None) -> keras.layers.Dense:
    return keras.layers.Dense(units, activation=activation, name=name,
                              kernel_initializer=initializer(config))


def layer_norm(config: AlbertConfig, name: str = "LayerNorm") -> keras.layers.LayerNormalization:
    # float32 policy: normalization statistics and the residual stream stay in float32
    # under mixed precision.
    return keras.layers.LayerNormalization(epsilon=config.layer_norm_eps, name=name,
                                           dtype="float32")


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
        self.dropout = keras.layers.Dropout(config.hidden_dropout_prob)

    def build(self, input_shape=None):
        c = self.config
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(c.vocab_size, c.embedding_size),
            initializer=initializer(c))
        self.position_embeddings = self.add_weight(
            name="position_embeddings", shape=(c.max_position_embeddings, c.embedding_size),
            initializer=initializer(c))
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings", shape=(c.type_vocab_size, c.embedding_size),
            initializer=initializer(c))
        self.layer_norm.build((None, c.embedding_size))

    def call(self, input_ids, segment_ids, training=False):
        seq_length = input_ids.shape[1]
        if seq_length is not None and seq_length > self.config.max_position_embeddings:
            raise ValueError(
                f"sequence length {seq_length} exceeds max_position_embeddings="
                f"{self.config.max_position_embeddings}")
        x = tf.gather(self.word_embeddings, input_ids)
        x += tf.gather(self.token_type_embeddings, segment_ids)
        x += self.position_embeddings[: tf.shape(input_ids)[1]][tf.newaxis]
        return self.dropout(self.layer_norm(x), training=training)


class AttentionSublayer(keras.layers.Layer):
    """Multi-head self-attention with output projection, dropout and post-LN residual.

    Official scope `attention_1/` (+ the `LayerNorm` after it). Q/K/V/output kernels are
    [H, H] like the official checkpoint.

    Call args:
      x: [batch*seq, H] hidden matrix.
      attention_bias: float32 [batch, 1, 1, seq], 0 for real tokens and -10000 for padding.
      batch_size, seq_length: scalars to unflatten x.
      return_probs: also return float32 attention probabilities [batch, heads, seq, seq].
    Returns:
      float32 [batch*seq, H] = LayerNorm(x + dropout(dense(attention(x)))).
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        # Keras would cast float inputs to the compute dtype; the residual stream and the
        # attention bias must stay float32 (the dense sub-layers cast for themselves).
        self._convert_input_args = False
        self.config = config
        hidden = config.hidden_size
        self.query = dense(config, hidden, "query")
        self.key = dense(config, hidden, "key")
        self.value = dense(config, hidden, "value")
        self.output_dense = dense(config, hidden, "dense")
        self.layer_norm = layer_norm(config)
        self.probs_dropout = keras.layers.Dropout(config.attention_probs_dropout_prob)
        self.output_dropout = keras.layers.Dropout(config.hidden_dropout_prob)

    def build(self, input_shape=None):
        h = self.config.hidden_size
        for layer in (self.query, self.key, self.value, self.output_dense):
            layer.build((None, h))
        self.layer_norm.build((None, h))

    def _split_heads(self, x, batch_size, seq_length):
        c = self.config
        x = tf.reshape(x, [batch_size, seq_length, c.num_attention_heads, c.attention_head_size])
        return tf.transpose(x, [0, 2, 1, 3])  # [B, N, S, D]

    def call(self, x, attention_bias, batch_size, seq_length, training=False,
             return_probs=False):
        c = self.config
        # Scaling q instead of the [B,N,S,S] logits: same value, S/D times fewer multiplies.
        q = self._split_heads(self.query(x), batch_size, seq_length)
        q *= tf.cast(1.0 / math.sqrt(c.attention_head_size), q.dtype)
        k = self._split_heads(self.key(x), batch_size, seq_length)
        v = self._split_heads(self.value(x), batch_size, seq_length)
        logits = tf.matmul(q, k, transpose_b=True)
        probs = tf.nn.softmax(tf.cast(logits, tf.float32) + attention_bias, axis=-1)
        context = tf.matmul(tf.cast(self.probs_dropout(probs, training=training), v.dtype), v)
        context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [-1, c.hidden_size])
        out = self.output_dropout(self.output_dense(context), training=training)
        out = self.layer_norm(tf.cast(out, tf.float32) + tf.cast(x, tf.float32))
        return (out, probs) if return_probs else out


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
        self.intermediate = dense(config, config.intermediate_size, "intermediate",
                                  activation=get_activation(config.hidden_act))
        self.output_dense = dense(config, config.hidden_size, "output")
        self.layer_norm = layer_norm(config, "LayerNorm_1")
        self.dropout = keras.layers.Dropout(config.hidden_dropout_prob)

    def build(self, input_shape=None):
        c = self.config
        self.intermediate.build((None, c.hidden_size))
        self.output_dense.build((None, c.intermediate_size))
        self.layer_norm.build((None, c.hidden_size))

    def call(self, x, training=False):
        out = self.dropout(self.output_dense(self.intermediate(x)), training=training)
        return self.layer_norm(tf.cast(out, tf.float32) + tf.cast(x, tf.float32))


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

    def call(self, x, attention_bias, batch_size, seq_length, training=False):
        x = self.attention(x, attention_bias, batch_size, seq_length, training=training)
        return self.ffn(x, training=training)
