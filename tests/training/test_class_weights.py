"""Class weights (albert_tf.training.class_weights): `auto` is scikit-learn's balanced
weights; the classification task's loss with weights is PyTorch's
CrossEntropyLoss(weight=...) on the real logits of a tiny model (and stays the whole
batch's weighted mean when the batch is split, as accumulation and replicas split it);
label counts read from a TFRecord file; bad values are one line."""

import numpy as np
import pytest

from tests.support.harness import random_batch, tiny_config


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auto_is_sklearn_balanced(seed):
    from sklearn.utils.class_weight import compute_class_weight

    from albert_tf.training.class_weights import balanced_class_weights

    rng = np.random.default_rng(seed)
    k = 2 + seed
    y = rng.choice(k, size=101, p=np.linspace(1, 3, k) / np.linspace(1, 3, k).sum())
    expected = compute_class_weight("balanced", classes=np.arange(k), y=y)
    ours = balanced_class_weights(np.bincount(y, minlength=k))
    np.testing.assert_allclose(ours, expected, rtol=1e-12)


def test_weighted_loss_is_torch_cross_entropy_with_weight():
    import tensorflow as tf
    import torch

    from albert_tf.training import ClassificationTask, divisors

    weights = (0.5, 2.0, 1.25)
    task = ClassificationTask(tiny_config(), num_labels=3, dropout=0.0, class_weights=weights)
    model = task.build_model()
    for v in model.trainable_variables:  # logits far from uniform, so the weights matter
        if "classifier_head" in v.path and v.path.endswith("kernel"):
            v.assign(v * 100.0)
    batch = random_batch(batch=6, seed=3)
    labels = np.array([0, 2, 2, 1, 0, 2], np.int32)
    batch["label_ids"] = tf.constant(labels)
    logits = model(batch, training=False)["logits"]
    reference = torch.nn.CrossEntropyLoss(weight=torch.tensor(weights, dtype=torch.float64))(
        torch.tensor(logits.numpy(), dtype=torch.float64), torch.tensor(labels, dtype=torch.long)
    ).item()
    unweighted = torch.nn.CrossEntropyLoss()(
        torch.tensor(logits.numpy(), dtype=torch.float64), torch.tensor(labels, dtype=torch.long)
    ).item()
    assert abs(reference - unweighted) > 1e-3  # the weights matter here

    def loss_of(parts):
        """The trainer's loss: numerators and denominators summed over parts, then divided."""
        sums, dens = {}, {}
        for part in parts:
            sub = {k: v[part] for k, v in batch.items()}
            terms = task.terms(sub, model(sub, training=False))
            for k, v in terms.items():
                sums[k] = sums.get(k, 0.0) + v
            for k, v in task.denominators(sub).items():
                dens[k] = dens.get(k, 0.0) + v
        safe = divisors(task.losses, dens, task.denominator_offsets)
        return float(sums["task_loss"] / safe["task_loss"])

    assert abs(loss_of([slice(0, 6)]) - reference) < 1e-6
    assert abs(loss_of([slice(0, 2), slice(2, 6)]) - reference) < 1e-6  # split batch
    plain = ClassificationTask(tiny_config(), num_labels=3, dropout=0.0)
    assert plain.losses == {"task_loss": "examples"} and task.losses == {"task_loss": "weighted"}


def test_label_counts_read_the_records(tmp_path):
    import tensorflow as tf

    from albert_tf.training.class_weights import label_counts

    labels = np.random.default_rng(0).integers(0, 3, 5000)
    path = str(tmp_path / "train.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for y in labels:
            feature = {"label_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[y]))}
            writer.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )
    assert label_counts(path, 3) == np.bincount(labels, minlength=3).tolist()


def test_bad_values_are_one_line():
    from albert_tf.training.class_weights import balanced_class_weights, parse_class_weights

    labels = ["0", "1"]
    assert parse_class_weights(None, labels, False, None) is None
    assert parse_class_weights("auto", labels, False, None) == "auto"
    assert parse_class_weights("1, 3.5", labels, False, None) == (1.0, 3.5)
    cases = [
        ("1,2,3", False, None, "3 weight\\(s\\) for 2 labels \\(0, 1\\)"),
        ("1,0", False, None, "'0' is not a positive number"),
        ("1,-2", False, None, "'-2' is not a positive number"),
        ("1,nan", False, None, "'nan' is not a positive number"),
        ("1,x", False, None, "'x' is not a positive number"),
        ("auto", True, None, "a regression task has no classes"),
        ("1,2", False, 4, "a multiple-choice task"),
    ]
    for text, regression, choices, message in cases:
        with pytest.raises(ValueError, match=message) as e:
            parse_class_weights(text, labels, regression, choices)
        assert str(e.value).startswith(f"--class_weights={text}") and "\n" not in str(e.value)
    with pytest.raises(ValueError, match="label index 1 has no training example"):
        balanced_class_weights([4, 0, 2])


def test_a_weight_float32_cannot_hold_is_refused_naming_the_flag():
    """T12: --class_weights 1e39,1 (finite in Python, inf in the float32 loss) stopped on
    NaN with a hint naming the learning rate."""
    import numpy as np

    from albert_tf.training.class_weights import FLOAT32_MAX, parse_class_weights

    assert FLOAT32_MAX == float(np.finfo(np.float32).max)
    with pytest.raises(ValueError) as e:
        parse_class_weights("1e39,1", ["0", "1"], False, None)
    assert str(e.value).startswith("--class_weights=1e39,1: '1e39' is beyond float32")
    assert parse_class_weights("1e30,1", ["0", "1"], False, None) == (1e30, 1.0)
    assert np.isfinite(np.float32(1e30))
