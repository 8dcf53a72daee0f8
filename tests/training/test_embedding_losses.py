"""Embedding losses against numpy references written from their definitions, finite
gradients (zero vectors too), and the in-batch loss's behaviour under permutations."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.training.embedding_losses import (
    cosine_similarity_loss,
    multiple_negatives_ranking_loss,
    sts_labels,
)

TOL = 1e-5


def np_cos(u, v):
    return np.sum(u * v, -1) / (np.linalg.norm(u, axis=-1) * np.linalg.norm(v, axis=-1))


def np_ranking(anchors, candidates, scale):
    """-log softmax over candidates of scale·cos, at the anchor's own positive; mean."""
    total = 0.0
    for i, a in enumerate(anchors):
        logits = np.array([scale * np_cos(a, c) for c in candidates], np.float64)
        logits -= logits.max()
        total += -(logits[i] - np.log(np.exp(logits).sum()))
    return total / len(anchors)


@pytest.fixture
def vectors():
    rng = np.random.default_rng(0)
    return rng.normal(size=(6, 8)).astype(np.float32), rng.normal(size=(6, 8)).astype(np.float32)


def test_sts_labels_scale_scores_to_unit_interval():
    np.testing.assert_allclose(sts_labels([0.0, 2.5, 5.0]).numpy(), [0.0, 0.5, 1.0])


def test_cosine_similarity_loss_matches_numpy(vectors):
    u, v = vectors
    labels = np.linspace(0, 1, 6).astype(np.float32)
    want = np.mean((np_cos(u, v) - labels) ** 2)
    np.testing.assert_allclose(cosine_similarity_loss(u, v, labels).numpy(), want, atol=TOL)
    # The cosine does not depend on the vectors' lengths.
    np.testing.assert_allclose(
        cosine_similarity_loss(3 * u, 0.5 * v, labels).numpy(), want, atol=TOL
    )


@pytest.mark.parametrize("scale", [1.0, 20.0])
@pytest.mark.parametrize("hard_negatives", [0, 3])
def test_ranking_loss_matches_numpy(vectors, scale, hard_negatives):
    anchors, positives = vectors
    negatives = np.random.default_rng(1).normal(size=(hard_negatives, 8)).astype(np.float32)
    candidates = np.concatenate([positives, negatives])
    got = multiple_negatives_ranking_loss(anchors, candidates, scale).numpy()
    np.testing.assert_allclose(got, np_ranking(anchors, candidates, scale), rtol=1e-5)


def test_gradients_are_finite_also_for_zero_vectors(vectors):
    u, v = (tf.Variable(x) for x in vectors)
    u[0].assign(tf.zeros(8))  # a zero embedding: cosine 0, no NaN
    labels = tf.fill([6], 0.5)
    with tf.GradientTape(persistent=True) as tape:
        losses = [
            cosine_similarity_loss(u, v, labels),
            multiple_negatives_ranking_loss(u, v),
        ]
    for loss in losses:
        assert np.isfinite(loss.numpy())
        for grad in tape.gradient(loss, [u, v]):
            assert np.all(np.isfinite(grad.numpy()))
            assert np.any(grad.numpy() != 0)


def test_ranking_loss_under_permutations(vectors):
    """Permuting anchors and positives together keeps every pair and every negative set:
    the same loss. Permuting the positives alone re-pairs the anchors: the loss is the
    numpy reference's for the new pairs, and differs from the original."""
    anchors, positives = vectors
    perm = np.array([3, 0, 5, 1, 4, 2])
    base = multiple_negatives_ranking_loss(anchors, positives).numpy()
    together = multiple_negatives_ranking_loss(anchors[perm], positives[perm]).numpy()
    np.testing.assert_allclose(together, base, rtol=1e-6)
    alone = multiple_negatives_ranking_loss(anchors, positives[perm]).numpy()
    np.testing.assert_allclose(alone, np_ranking(anchors, positives[perm], 20.0), rtol=1e-5)
    assert abs(alone - base) > 1e-3


def test_ranking_loss_prefers_matching_pairs(vectors):
    anchors, _ = vectors
    noise = np.random.default_rng(2).normal(size=anchors.shape).astype(np.float32)
    close = multiple_negatives_ranking_loss(anchors, anchors + 0.1 * noise).numpy()
    far = multiple_negatives_ranking_loss(anchors, noise).numpy()
    assert close < 0.05 < 1.0 < far
