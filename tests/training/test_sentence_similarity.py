"""STS-B pairs through the GLUE reader, Spearman against scipy, and a real slice: cosine
regression on STS-B train pairs with a plain TensorFlow loop lowers the loss and raises
dev Spearman above the untrained model's."""

import time

import numpy as np
import pytest
import scipy.stats
import tensorflow as tf

from albert_tf.training.sentence_similarity import (
    cosine_scores,
    cosine_spearman,
    spearman,
    sts_pairs,
)
from data_pipeline.classification.metrics import average_ranks
from tests.support.harness import tiny_config


def test_spearman_matches_scipy_with_ties():
    """The embedding evaluation's Spearman is GLUE STS-B's (one owner): scipy's with ties,
    0.0 when a side is constant (a collapsed model scores no correlation, not NaN, so the
    best-checkpoint comparison stays defined)."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.integers(0, 6, 50).astype(float)  # many ties
        y = x + rng.normal(size=50)
        np.testing.assert_allclose(spearman(x, y), scipy.stats.spearmanr(x, y).statistic)
        np.testing.assert_allclose(average_ranks(x), scipy.stats.rankdata(x))
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0
    with pytest.raises(ValueError, match="2 predictions for 3 labels"):
        spearman([1, 2], [1, 2, 3])


def test_cosine_scores():
    u = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    v = np.array([[0.0, 2.0], [3.0, 3.0], [1.0, 0.0]])
    np.testing.assert_allclose(cosine_scores(u, v), [0.0, 1.0, 0.0])


def test_sts_pairs_read_the_glue_file(shared_data, tok):
    pairs = sts_pairs(str(shared_data / "glue" / "STS-B"), "dev", tok, 32)
    assert len(pairs) == 1500
    assert pairs.scores.min() >= 0 and pairs.scores.max() <= 5
    ids, mask = pairs.first["input_ids"], pairs.first["input_mask"]
    assert ids.shape == (1500, 32) and ids.dtype == np.int32
    assert np.all(ids[:, 0] == tok.cls_id)
    last = mask.sum(1) - 1
    assert np.all(ids[np.arange(1500), last] == tok.sep_id)
    assert not pairs.second["segment_ids"].any()
    # First dev pair: "A man with a hard hat is dancing." / "... wearing a hard hat ...", 5.0
    want = [tok.cls_id] + tok.encode("A man with a hard hat is dancing.") + [tok.sep_id]
    assert list(ids[0, : len(want)]) == want and pairs.scores[0] == 5.0
    assert len(pairs.take(10)) == 10
    with pytest.raises(ValueError, match="'train' or 'dev'"):
        sts_pairs(str(shared_data / "glue" / "STS-B"), "test", tok, 32)


def test_cosine_regression_on_sts_b_slice_learns(shared_data, tok):
    """A tiny random-init model (German SentencePiece vocabulary), mean pooling, 150 Adam
    steps of batch 32 over 640 STS-B train pairs: the loss falls and dev Spearman (500
    pairs) rises above the untrained model's."""
    import keras

    from albert_tf.modeling.pooling import AlbertEmbedder
    from albert_tf.training.embedding_losses import cosine_similarity_loss, sts_labels

    start = time.time()
    data = str(shared_data / "glue" / "STS-B")
    train = sts_pairs(data, "train", tok, 24, limit=640)
    dev = sts_pairs(data, "dev", tok, 24, limit=500)
    keras.utils.set_random_seed(0)
    config = tiny_config(
        vocab_size=tok.vocab_size,
        max_position_embeddings=24,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    embedder = AlbertEmbedder(config, pooling="mean")
    embedder.build()
    untrained = cosine_spearman(embedder, dev)

    variables = [v for v in embedder.trainable_variables if "pooler" not in v.path]
    optimizer = keras.optimizers.Adam(2e-3)

    @tf.function
    def step(a, b, scores):
        with tf.GradientTape() as tape:
            u = embedder(a, training=True)["embeddings"]
            v = embedder(b, training=True)["embeddings"]
            loss = cosine_similarity_loss(u, v, sts_labels(scores))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    dataset = (
        tf.data.Dataset.from_tensor_slices((train.first, train.second, train.scores))
        .shuffle(640, seed=0)
        .repeat()
        .batch(32)
        .take(150)
    )
    losses = [float(step(a, b, y)) for a, b, y in dataset]
    trained = cosine_spearman(embedder, dev)
    first, last = np.mean(losses[:20]), np.mean(losses[-20:])
    print(
        f"loss {first:.4f} → {last:.4f}; dev Spearman {untrained:.3f} → {trained:.3f} "
        f"({time.time() - start:.0f} s)"
    )
    assert last < 0.5 * first
    assert trained > untrained + 0.05
