"""Sentence embeddings from the encoder: pooling over tokens, optional L2 normalization.

Poolings (the names `AlbertEmbedder` and run_embedding.py's --pooling take):
  pooler  the encoder's `pooled_output`, tanh(dense(h_[CLS])) (the SOP head's input);
  cls     the last block's output at [CLS], h_[CLS], without the pooler's dense + tanh;
  mean    the mean of the last block's output over the real tokens ([CLS] and [SEP]
          included, padding excluded), as sentence-transformers' mean pooling:
          sum_t m_t·h_t / max(sum_t m_t, 1e-9);
  max     the element-wise maximum over the real tokens; padded positions never win,
          also where every real value is negative (they are replaced by the dtype's
          lowest value, not by 0). A row without any real token pools to zeros.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder, unpack_inputs

POOLINGS = ("pooler", "cls", "mean", "max")


def check_pooling(pooling: str) -> str:
    """`pooling` if it is one of POOLINGS, else a one-line ValueError."""
    if pooling not in POOLINGS:
        raise ValueError(f"pooling {pooling!r}: expected one of {', '.join(POOLINGS)}")
    return pooling


def masked_mean(sequence, input_mask):
    """float [B, S, H], int/bool [B, S] (1 = real token) → float32 [B, H]: the mean over
    the real tokens (a row without any is zeros: the count is clamped to 1e-9)."""
    sequence = tf.cast(sequence, tf.float32)
    mask = tf.expand_dims(
        tf.cast(input_mask, tf.float32), -1
    )  # [B, S, 1] (no new-axis slice: LiteRT)
    total = tf.reduce_sum(sequence * mask, axis=1)  # [B, H]
    count = tf.maximum(tf.reduce_sum(mask, axis=1), 1e-9)  # [B, 1]
    return total / count


def masked_max(sequence, input_mask):
    """float [B, S, H], int/bool [B, S] → float32 [B, H]: the maximum over the real tokens
    (padding set to float32's lowest value first, so it never wins; a row without any
    real token is zeros)."""
    sequence = tf.cast(sequence, tf.float32)
    real = tf.expand_dims(tf.cast(input_mask, tf.bool), -1)  # [B, S, 1]
    lowest = tf.fill(tf.shape(sequence), tf.float32.min)
    pooled = tf.reduce_max(tf.where(real, sequence, lowest), axis=1)  # [B, H]
    any_real = tf.reduce_any(real, axis=1)  # [B, 1]
    return tf.where(any_real, pooled, tf.zeros_like(pooled))


def pool(outputs: dict, input_mask, pooling: str):
    """The encoder's outputs (`sequence_output` [B, S, H], `pooled_output` [B, H]) and the
    input mask [B, S] → float32 [B, H] under `pooling` (module docstring)."""
    check_pooling(pooling)
    if pooling == "pooler":
        return tf.cast(outputs["pooled_output"], tf.float32)
    sequence = outputs["sequence_output"]
    if pooling == "cls":
        return tf.cast(sequence[:, 0], tf.float32)
    if pooling == "mean":
        return masked_mean(sequence, input_mask)
    return masked_max(sequence, input_mask)


def l2_normalize(embeddings):
    """[B, H] → [B, H] of unit L2 norm (x / max(‖x‖, 1e-6): a zero row stays zero)."""
    return tf.math.l2_normalize(tf.cast(embeddings, tf.float32), axis=-1, epsilon=1e-12)


class AlbertEmbedder(keras.Model):
    """Encoder + pooling (+ L2 normalization): sentence embeddings.

    Args:
      config: an `AlbertConfig`.
      encoder: optionally an existing `AlbertEncoder` (shared, not copied). It sits in
        the attribute `encoder`, so `load_checkpoint` restores it from any model's
        checkpoint, as for the task models.
      pooling: one of POOLINGS (module docstring).
      normalize: L2-normalize the embeddings (dot product = cosine similarity).

    Call args:
      inputs: dict with `input_ids`, optional `input_mask`, `segment_ids`, int [B, S],
        a list in that order, or bare `input_ids` (as `AlbertEncoder`).
      training: enables dropout.
      output_hidden_states: also return every block's output.

    Returns a dict:
      embeddings: float32 [B, H].
      with output_hidden_states: `encoder_outputs`, the list of the L × inner_group_num
        blocks' outputs, each float32 [B, S, H] (Model Garden's `encoder_outputs`: the
        last one is the `sequence_output`; the embedding layer's output is not in it),
        and `embedding_output` [B, S, H] (the blocks' input).
    """

    def __init__(
        self,
        config: AlbertConfig,
        encoder: AlbertEncoder | None = None,
        pooling: str = "mean",
        normalize: bool = False,
        **kwargs,
    ):
        kwargs.setdefault("name", "albert_embedder")
        super().__init__(**kwargs)
        self.config = config
        self.pooling = check_pooling(pooling)
        self.normalize = bool(normalize)
        self.encoder = encoder if encoder is not None else AlbertEncoder(config)

    def build(self, input_shape=None):
        if not self.encoder.built:
            self.encoder.build()

    def call(self, inputs, training=False, output_hidden_states=False):
        ids, input_mask, segment_ids = unpack_inputs(inputs)
        features = {"input_ids": ids, "input_mask": input_mask, "segment_ids": segment_ids}
        outputs = self.encoder(
            features, training=training, output_hidden_states=output_hidden_states
        )
        embeddings = pool(outputs, input_mask, self.pooling)
        if self.normalize:
            embeddings = l2_normalize(embeddings)
        result = {"embeddings": embeddings}
        if output_hidden_states:
            result["encoder_outputs"] = outputs["encoder_outputs"]
            result["embedding_output"] = outputs["embedding_output"]
        return result
