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
from albert_tf.modeling.layers import dense, get_activation, initializer, layer_norm


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


def answerable_positions(input_mask, segment_ids):
    """float32 [batch, seq] `p_mask` of the official SQuAD v2.0 code: 0 where an answer may
    start or end (the context tokens, and [CLS] = "no answer"), 1 elsewhere (question,
    separators, padding). Derived from the packing `[CLS] question [SEP] context [SEP]`:
    the context is segment 1 minus its last real token."""
    mask = tf.cast(input_mask, tf.int32)
    last = tf.reduce_sum(mask, axis=1, keepdims=True) - 1  # [B, 1]
    position = tf.range(tf.shape(mask)[1])[None, :]
    context = (tf.cast(segment_ids, tf.int32) == 1) & (mask == 1) & (position < last)
    allowed = context | (position == 0)
    return 1.0 - tf.cast(allowed, tf.float32)


class SquadV2Head(keras.layers.Layer):
    """The official ALBERT SQuAD v2.0 head (squad_utils.create_v2_model, XLNet-style):

      start:   logits = dense(H→1) per token; masked by `p_mask` (−1e30), log-softmax.
      end:     conditioned on a start: dense(2H→H, tanh) of [token; start token], LayerNorm,
               dense(H→1), masked, log-softmax. Training uses the gold start; inference
               the `start_n_top` most likely starts, then the `end_n_top` best ends of each.
      answer:  cls_logits = dense(H→1, no bias) of dropout(dense(2H→H, tanh) of [Σ softmax
               (start) · tokens; [CLS] token]): the logit that the question has no answer.

    Official variables (no outer scope): `start_logits/dense`, `end_logits/dense_0`,
    `end_logits/LayerNorm`, `end_logits/dense_1`, `answer_class/dense_0`,
    `answer_class/dense_1/kernel`.

    Call args:
      sequence_output: [B, S, H]; p_mask: float32 [B, S] (`answerable_positions`);
      start_positions: int [B] (training: the gold start) or None (inference).
    Returns float32: training {start_log_probs, end_log_probs [B, S], cls_logits [B]};
      inference {start_log_probs [B, S], start_top_log_probs, start_top_index [B, k],
      end_top_log_probs, end_top_index [B, k * k_end], cls_logits [B]}.
    """

    def __init__(
        self,
        config: AlbertConfig,
        start_n_top: int = 5,
        end_n_top: int = 5,
        dropout: float = 0.1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.config = config
        self.start_n_top, self.end_n_top = start_n_top, end_n_top
        h = config.hidden_size
        self.start_dense = dense(config, 1, "start_dense")
        self.end_dense_0 = dense(config, h, "end_dense_0", activation="tanh")
        self.end_layer_norm = layer_norm(config, "end_layer_norm")
        self.end_dense_1 = dense(config, 1, "end_dense_1")
        self.answer_dense_0 = dense(config, h, "answer_dense_0", activation="tanh")
        self.answer_dropout = Dropout(dropout)
        self.answer_dense_1 = keras.layers.Dense(
            1, use_bias=False, name="answer_dense_1", kernel_initializer=initializer(config)
        )

    def build(self, input_shape=None):
        h = self.config.hidden_size
        self.start_dense.build((None, h))
        self.end_dense_0.build((None, 2 * h))
        self.end_layer_norm.build((None, h))
        self.end_dense_1.build((None, h))
        self.answer_dense_0.build((None, 2 * h))
        self.answer_dense_1.build((None, h))

    def _end_logits(self, tokens, start_features):
        """tokens [..., H], start_features broadcast to them → float32 end logits [...]."""
        x = tf.concat([tokens, start_features], axis=-1)
        x = self.end_layer_norm(self.end_dense_0(x))
        return tf.cast(self.end_dense_1(x)[..., 0], tf.float32)

    def call(self, sequence_output, p_mask, start_positions=None, training=False):
        seq = tf.cast(sequence_output, tf.float32)
        length = tf.shape(seq)[1]
        start_logits = tf.cast(self.start_dense(seq)[..., 0], tf.float32)
        start_masked = start_logits * (1.0 - p_mask) - 1e30 * p_mask
        start_log_probs = tf.nn.log_softmax(start_masked, axis=-1)
        out = {"start_log_probs": start_log_probs}
        if start_positions is not None:
            start = gather_positions(seq, tf.reshape(start_positions, [-1, 1]))  # [B, 1, H]
            start = tf.broadcast_to(start, tf.shape(seq))
            end_logits = self._end_logits(seq, start)
            end_masked = end_logits * (1.0 - p_mask) - 1e30 * p_mask
            out["end_log_probs"] = tf.nn.log_softmax(end_masked, axis=-1)
        else:
            k = tf.minimum(self.start_n_top, length)
            top_log_probs, top_index = tf.nn.top_k(start_log_probs, k=k)  # [B, k]
            start = gather_positions(seq, top_index)  # [B, k, H]
            # (expand_dims, not [:, None]: LiteRT has no new-axis slice on dynamic shapes)
            tokens = tf.expand_dims(seq, 1)
            tokens = tf.broadcast_to(tokens, [tf.shape(seq)[0], k, length, seq.shape[-1]])
            start = tf.broadcast_to(tf.expand_dims(start, 2), tf.shape(tokens))
            end_logits = self._end_logits(tokens, start)  # [B, k, S]
            mask = tf.expand_dims(p_mask, 1)
            end_log_probs = tf.nn.log_softmax(end_logits * (1.0 - mask) - 1e30 * mask, -1)
            end_top, end_index = tf.nn.top_k(end_log_probs, k=tf.minimum(self.end_n_top, length))
            batch = tf.shape(seq)[0]
            out.update(
                start_top_log_probs=top_log_probs,
                start_top_index=top_index,
                end_top_log_probs=tf.reshape(end_top, [batch, -1]),
                end_top_index=tf.reshape(end_index, [batch, -1]),
            )
        cls_feature = seq[:, 0]
        start_p = tf.nn.softmax(start_masked, axis=-1)
        start_feature = tf.reduce_sum(seq * tf.expand_dims(start_p, -1), axis=1)  # (no Einsum)
        answer = self.answer_dense_0(tf.concat([start_feature, cls_feature], axis=-1))
        answer = self.answer_dropout(answer, training=training)
        out["cls_logits"] = tf.cast(self.answer_dense_1(answer)[:, 0], tf.float32)
        return out
