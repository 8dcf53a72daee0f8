"""Output heads on top of the encoder.

Pretraining heads (paper Section 3.1 / 4.1): the masked-LM head, whose output matrix is
the word-embedding table (tied), and the sentence-order-prediction head on the pooled
output. Both return float32 logits so that losses and softmax run in float32 under a
mixed-precision policy.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.dropout import Dropout
from albert_tf.modeling.layers import dense, get_activation, layer_norm


def gather_positions(sequence, positions):
    """[batch, seq, H] at int [batch, P] positions → [batch, P, H]."""
    return tf.gather(sequence, tf.cast(positions, tf.int32), batch_dims=1)


class MaskedLMHead(keras.layers.Layer):
    """MLM head: dense H→E with the model's activation, LayerNorm, then logits against
    the (tied) word-embedding table plus an output bias [V].

    Official scope `cls/predictions/` (`transform/dense`, `transform/LayerNorm`,
    `output_bias`). Evaluated only at the masked positions, which is what makes the
    pretraining step cheap: [batch, P, V] logits instead of [batch, seq, V].

    Call args:
      sequence_output: [batch, seq, H], or [batch, P, H] already at the masked positions
        (then `positions` is None).
      positions: int [batch, P], the `masked_lm_positions`, or None.
      embedding_table: [V, E], the encoder's word embeddings.
    Returns:
      float32 logits [batch, P, V].
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.dense = dense(
            config, config.embedding_size, "dense", activation=get_activation(config.hidden_act)
        )
        self.layer_norm = layer_norm(config)

    def build(self, input_shape=None):
        c = self.config
        self.dense.build((None, c.hidden_size))
        self.layer_norm.build((None, c.embedding_size))
        self.output_bias = self.add_weight(
            name="output_bias", shape=(c.vocab_size,), initializer="zeros"
        )

    def call(self, sequence_output, positions, embedding_table):
        if positions is not None:
            sequence_output = gather_positions(sequence_output, positions)
        x = self.layer_norm(self.dense(sequence_output))
        x = tf.cast(x, self.compute_dtype)
        logits = tf.matmul(x, tf.cast(embedding_table, x.dtype), transpose_b=True)
        return tf.cast(logits, tf.float32) + tf.cast(self.output_bias, tf.float32)


class SentenceOrderHead(keras.layers.Layer):
    """SOP head: dense on `pooled_output` → 2 logits (0 = in order, 1 = swapped).

    Official scope `cls/seq_relationship/` (there the kernel is stored transposed, [2, H]).

    Call args:
      pooled_output: [batch, H].
    Returns:
      float32 logits [batch, 2].
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.dense = dense(config, 2, "dense")

    def build(self, input_shape=None):
        self.dense.build((None, self.config.hidden_size))

    def call(self, pooled_output):
        return tf.cast(self.dense(pooled_output), tf.float32)


class ClassificationHead(keras.layers.Layer):
    """Fine-tuning head (official run_classifier): dropout on `pooled_output`, then a dense
    layer to `num_outputs` logits (1 for regression such as STS-B, or one score per choice
    in multiple choice).

    Official variables `output_weights` [num_outputs, H] (transposed) and `output_bias`.

    Call args:
      pooled_output: [batch, H].
    Returns:
      float32 [batch, num_outputs].
    """

    def __init__(self, config: AlbertConfig, num_outputs: int, dropout: float = 0.1, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.num_outputs = num_outputs
        self.dropout = Dropout(dropout)
        self.dense = dense(config, num_outputs, "dense")

    def build(self, input_shape=None):
        self.dense.build((None, self.config.hidden_size))

    def call(self, pooled_output, training=False):
        return tf.cast(self.dense(self.dropout(pooled_output, training=training)), tf.float32)
