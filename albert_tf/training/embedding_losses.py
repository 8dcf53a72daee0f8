"""Losses for training sentence embeddings (`AlbertEmbedder`), after sentence-transformers.

Cosine-similarity regression (sentence-transformers' CosineSimilarityLoss): the mean of
(cos(u_i, v_i) - y_i)² over the pairs. STS-B gold scores (0-5) become labels in [0, 1] by
`sts_labels` (score / 5, as sentence-transformers' STS-B training script does), not in
[-1, 1]: "unrelated" (0) then asks for orthogonal embeddings, not opposite ones, which is
what unrelated sentences get from a pretrained encoder; cosine's negative half is unused.

In-batch negatives (sentence-transformers' MultipleNegativesRankingLoss): anchor a_i's
positive is p_i, every other p_j of the batch (and any extra hard negatives n_k appended
after the positives) is a negative; the loss is the mean cross-entropy of
softmax_j(scale · cos(a_i, c_j)) against j = i. `scale` 20 (sentence-transformers' default)
is the inverse temperature 0.05: cosines lie in [-1, 1], and without a scale the softmax
over them stays near uniform and the gradients small.

Cosines are computed on L2-normalized vectors (x / max(‖x‖, 1e-6)): a zero vector gives
cosine 0 and finite gradients, not NaN.
"""

from __future__ import annotations

import tensorflow as tf

STS_MAX_SCORE = 5.0
DEFAULT_SCALE = 20.0


def sts_labels(scores):
    """STS-B gold scores in [0, 5] → float32 labels in [0, 1] (score / 5; see above)."""
    return tf.cast(scores, tf.float32) / STS_MAX_SCORE


def _unit(x):
    return tf.math.l2_normalize(tf.cast(x, tf.float32), axis=-1, epsilon=1e-12)


def cosine_similarity(u, v):
    """float [B, H], [B, H] → float32 [B]: cos(u_i, v_i)."""
    return tf.reduce_sum(_unit(u) * _unit(v), axis=-1)


def cosine_similarity_loss(u, v, labels):
    """float [B, H], [B, H], labels float [B] (in [0, 1]: `sts_labels`) → scalar float32:
    mean_i (cos(u_i, v_i) - labels_i)²."""
    return tf.reduce_mean(tf.square(cosine_similarity(u, v) - tf.cast(labels, tf.float32)))


def in_batch_logits(anchors, candidates, scale: float = DEFAULT_SCALE):
    """float [B, H], [C, H] (C ≥ B; the first B are the positives) → float32 [B, C]:
    scale · cos(a_i, c_j)."""
    return scale * tf.matmul(_unit(anchors), _unit(candidates), transpose_b=True)


def multiple_negatives_ranking_loss(anchors, candidates, scale: float = DEFAULT_SCALE):
    """In-batch negatives (module docstring).

    Args:
      anchors: float [B, H].
      candidates: float [C, H], C ≥ B: the positives (row i is anchor i's) then optional
        hard negatives shared by the whole batch.
      scale: multiplies the cosines before the softmax (inverse temperature).

    Returns a scalar float32: mean_i -log softmax(scale · cos(a_i, c_·))_i.
    """
    logits = in_batch_logits(anchors, candidates, scale)  # [B, C]
    labels = tf.range(tf.shape(logits)[0])
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return tf.reduce_mean(losses)
