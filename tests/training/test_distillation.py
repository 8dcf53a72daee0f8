"""Distillation (albert_tf.training.distillation): the loss against a numpy reference
written from Hinton's definition, on a real tiny classifier's logits through the task's
terms; the teacher's logits looked up by example_index in shuffled batches."""

import numpy as np
import pytest

from tests.support.harness import tiny_config


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _reference(s, t, labels, temperature, alpha):
    """α·T²·Σ p_t (log p_t - log p_s) + (1-α)·(-log softmax(s)[label]), per example."""
    s, t = s.astype(np.float64), t.astype(np.float64)
    pt, ps = _softmax(t / temperature), _softmax(s / temperature)
    kl = (pt * (np.log(pt) - np.log(ps))).sum(-1)
    ce = -np.log(_softmax(s)[np.arange(len(labels)), labels])
    return alpha * temperature**2 * kl + (1 - alpha) * ce, kl, ce


@pytest.mark.parametrize("temperature, alpha", [(1.0, 1.0), (2.0, 0.5), (4.0, 0.0), (3.0, 0.9)])
def test_loss_equals_the_definition(temperature, alpha):
    from albert_tf.training.distillation import distillation_loss

    rng = np.random.default_rng(0)
    s, t = rng.normal(0, 3, (6, 3)).astype(np.float32), rng.normal(0, 3, (6, 3)).astype(np.float32)
    labels = rng.integers(0, 3, 6)
    got = [x.numpy() for x in distillation_loss(s, t, labels, temperature, alpha)]
    for g, w in zip(got, _reference(s, t, labels, temperature, alpha)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    # the same logits: no KL
    same = distillation_loss(s, s, labels, temperature, alpha)[1].numpy()
    np.testing.assert_allclose(same, 0, atol=1e-6)


def test_task_terms_on_a_real_classifier_and_its_gradient_toward_the_teacher():
    import keras
    import tensorflow as tf

    from albert_tf.training import ClassificationTask
    from albert_tf.training.distillation import DistillationTask

    keras.utils.set_random_seed(0)
    task = DistillationTask(ClassificationTask(tiny_config(), num_labels=3, dropout=0.0), 2.0, 0.7)
    model = task.build_model()
    rng = np.random.default_rng(1)
    batch = {
        "input_ids": rng.integers(5, 99, (4, 9)).astype(np.int32),
        "input_mask": np.ones((4, 9), np.int32),
        "segment_ids": np.zeros((4, 9), np.int32),
        "label_ids": np.array([0, 1, 2, 1], np.int32),
        "teacher_logits": rng.normal(0, 2, (4, 3)).astype(np.float32),
    }
    with tf.GradientTape() as tape:
        outputs = task.call_model(model, batch, training=False)
        terms = task.terms(batch, outputs)
    s = outputs["logits"].numpy()
    loss, kl, ce = _reference(s, batch["teacher_logits"], batch["label_ids"], 2.0, 0.7)
    np.testing.assert_allclose(terms["task_loss"].numpy(), loss.sum(), rtol=1e-5)
    np.testing.assert_allclose(terms["distill_kl"].numpy(), kl.sum(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(terms["label_ce"].numpy(), ce.sum(), rtol=1e-5)
    assert set(task.metrics) >= {"accuracy", "distill_kl", "label_ce"}
    # d loss / d s = α·T²·(1/T)·(softmax(s/T) - softmax(t/T)) + (1-α)·(softmax(s) - onehot)
    logits_grad = tape.gradient(terms["task_loss"], outputs["logits"]).numpy()
    onehot = np.eye(3)[batch["label_ids"]]
    want = 0.7 * 2.0 * (_softmax(s / 2.0) - _softmax(batch["teacher_logits"] / 2.0)) + 0.3 * (
        _softmax(s) - onehot
    )
    np.testing.assert_allclose(logits_grad, want, rtol=1e-4, atol=1e-6)


def test_regression_and_bad_values_are_one_line():
    from albert_tf.training import ClassificationTask
    from albert_tf.training.distillation import DistillationTask

    with pytest.raises(ValueError, match="not a regression"):
        DistillationTask(ClassificationTask(tiny_config(), num_labels=1), 2.0, 0.5)
    with pytest.raises(ValueError, match="alpha 1.5 in"):
        DistillationTask(ClassificationTask(tiny_config(), num_labels=2), 2.0, 1.5)


def test_teacher_logits_follow_example_index_through_shuffled_batches():
    import tensorflow as tf

    from albert_tf.training.distillation import teacher_logits, with_teacher_logits

    n = 10
    rng = np.random.default_rng(2)
    index = rng.permutation(np.arange(3, 3 + n)).astype(np.int32)  # not 0..n-1, not in order
    ids = rng.integers(5, 99, (n, 4)).astype(np.int32)
    data = {
        "input_ids": ids,
        "input_mask": np.ones_like(ids),
        "segment_ids": np.zeros_like(ids),
        "example_index": index,
    }

    class Fake:  # logits that name their example: (first id, 2·first id)
        def __call__(self, inputs, training=False):
            first = tf.cast(inputs["input_ids"][:, :1], tf.float32)
            return {"logits": tf.concat([first, 2 * first], axis=1)}

    table = teacher_logits(Fake(), tf.data.Dataset.from_tensor_slices(data).batch(3))
    assert table.shape == (3 + n, 2) and not table[:3].any()
    batches = tf.data.Dataset.from_tensor_slices(data).shuffle(n, seed=1).batch(4)
    for batch in with_teacher_logits(batches, table):
        first = batch["input_ids"].numpy()[:, 0].astype(np.float32)
        np.testing.assert_array_equal(
            batch["teacher_logits"].numpy(), np.stack([first, 2 * first], 1)
        )
