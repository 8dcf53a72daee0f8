"""TokenClassificationTask: its loss is the mean cross-entropy over the counted tokens of the
global batch (a numpy reference from the equations), and gradient accumulation over
micro-batches with different token counts equals the one large batch."""

import numpy as np
import pytest

from tests.support.harness import tiny_config

SEQ, LABELS = 12, 5


def _batch(n=16, seed=0):
    """Windows with padding and a -1 label on [CLS], [SEP], later pieces and padding: rows
    count different numbers of tokens, so per-batch means differ from the global mean."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, SEQ + 1, n)
    ids = rng.integers(5, 99, (n, SEQ)).astype(np.int32)
    mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype(np.int32)
    ids[:, 0] = 2
    ids[mask == 0] = 0
    labels = rng.integers(0, LABELS, (n, SEQ)).astype(np.int32)
    later_piece = rng.random((n, SEQ)) < 0.3
    labels[later_piece | (mask == 0)] = -1
    labels[:, 0] = -1
    labels[np.arange(n), lengths - 1] = -1  # [SEP]
    return {
        "input_ids": ids,
        "input_mask": mask,
        "segment_ids": np.zeros_like(ids),
        "label_ids": labels,
    }


def _config():
    return tiny_config(
        max_position_embeddings=SEQ, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0
    )


def _reference(logits, labels):
    """(mean cross-entropy, accuracy) over the positions whose label is not -1, from the
    equations: -log softmax(logits)[label], argmax == label."""
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    counted = labels != -1
    nll = -np.take_along_axis(log_probs, np.where(counted, labels, 0)[..., None], -1)[..., 0]
    correct = logits.argmax(-1) == labels
    return nll[counted].mean(), correct[counted].mean()


def test_terms_are_sums_over_counted_tokens():
    import tensorflow as tf

    from albert_tf.training.token_classification import TokenClassificationTask

    task = TokenClassificationTask(_config(), LABELS, dropout=0.0)
    batch = _batch()
    logits = np.random.default_rng(1).normal(size=(16, SEQ, LABELS)).astype(np.float32)
    terms = task.terms(batch, {"logits": tf.constant(logits)})
    dens = task.denominators(batch)
    counted = int((batch["label_ids"] != -1).sum())
    assert float(dens["tokens"]) == counted and float(dens["examples"]) == 16
    loss, accuracy = _reference(logits, batch["label_ids"])
    assert float(terms["token_loss"]) / counted == pytest.approx(loss, rel=1e-5)
    assert float(terms["token_accuracy"]) / counted == pytest.approx(accuracy, abs=1e-7)
    assert 0 < accuracy < 1  # both outcomes occur, so the mask is what decides


def _trainer(tmp_path, name, micro, accum=1, steps=1, lr=0.0):
    import tensorflow as tf

    from albert_tf.training import Trainer, TrainerConfig
    from albert_tf.training.token_classification import TokenClassificationTask

    data = _batch()

    def fn(ctx):
        return (
            tf.data.Dataset.from_tensor_slices(data)
            .repeat()
            .batch(ctx.get_per_replica_batch_size(micro), drop_remainder=True)
        )

    config = TrainerConfig(
        output_dir=str(tmp_path / name),
        num_train_steps=steps,
        learning_rate=lr,
        optimizer="adamw",
        grad_accum_steps=accum,
        steps_per_loop=steps,
    )
    task = TokenClassificationTask(_config(), LABELS, dropout=0.0)
    return Trainer(task, config, tf.distribute.get_strategy(), fn, log=lambda *_: None)


def test_reported_loss_is_the_mean_over_the_global_batchs_tokens(tmp_path):
    trainer = _trainer(tmp_path, "one", micro=8, accum=2)  # two micro-batches of 8
    logits = trainer.model(_batch(), training=False)["logits"].numpy()
    loss, accuracy = _reference(logits, _batch()["label_ids"])
    half = [_reference(logits[i : i + 8], _batch()["label_ids"][i : i + 8])[0] for i in (0, 8)]
    assert abs(np.mean(half) - loss) > 1e-4  # a mean of micro-batch means would differ
    result = trainer.train()["train"]
    assert result["token_loss"] == pytest.approx(loss, rel=1e-5)
    assert result["token_accuracy"] == pytest.approx(accuracy, abs=1e-6)


@pytest.mark.integration  # a training loop of tens of steps: over the unit tier's 5 s
def test_gradient_accumulation_equals_the_large_batch(tmp_path):
    def weights(trainer):
        return [v.numpy().astype(np.float64) for v in trainer.model.trainable_variables]

    big = _trainer(tmp_path, "big", micro=16, steps=2, lr=1e-3)
    big.train()
    accumulated = _trainer(tmp_path, "acc", micro=8, accum=2, steps=2, lr=1e-3)
    accumulated.train()
    for a, b in zip(weights(big), weights(accumulated)):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
    small = _trainer(tmp_path, "small", micro=8, steps=2, lr=1e-3)  # a different update
    small.train()
    assert max(np.max(np.abs(a - b)) for a, b in zip(weights(big), weights(small))) > 1e-4
