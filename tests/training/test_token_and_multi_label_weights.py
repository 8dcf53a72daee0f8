"""Class weights of the token and multi-label losses (albert_tf.training.class_weights), on
the real logits of tiny models: the weighted token loss is the weighted mean over the
counted tokens (PyTorch's CrossEntropyLoss(weight, ignore_index=-1), and a numpy reference
from the definition), also when the batch is split; the multi-label loss with positive
weights is PyTorch's BCEWithLogitsLoss(pos_weight) and its formula; `auto`'s positive
weights are negatives/positives, clipped, counted from the records."""

import numpy as np
import pytest

from tests.support.harness import random_batch, tiny_config


def _trainer_loss(task, model, batch, parts, loss="task_loss"):
    """The trainer's loss: numerators and denominators summed over `parts`, then divided."""
    from albert_tf.training import divisors

    sums, dens = {}, {}
    for part in parts:
        sub = {k: v[part] for k, v in batch.items()}
        for k, v in task.terms(sub, task.call_model(model, sub, False)).items():
            sums[k] = sums.get(k, 0.0) + float(v)
        for k, v in task.denominators(sub).items():
            dens[k] = dens.get(k, 0.0) + float(v)
    return sums[loss] / float(divisors(task.losses, dens, task.denominator_offsets)[loss])


def _sharpen(model, head="classifier_head"):
    """Logits far from uniform, so that the weights matter."""
    for v in model.trainable_variables:
        if head in v.path and v.path.endswith("kernel"):
            v.assign(v * 100.0)


def test_weighted_token_loss_is_the_weighted_mean_over_counted_tokens():
    import tensorflow as tf
    import torch

    from albert_tf.training.token_classification import TokenClassificationTask

    weights = (0.2, 3.0, 1.5, 0.7)
    task = TokenClassificationTask(tiny_config(), 4, dropout=0.0, class_weights=weights)
    model = task.build_model()
    _sharpen(model)
    batch = {k: tf.constant(v) for k, v in random_batch(batch=4, seq=11, seed=5).items()}
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 4, (4, 11)).astype(np.int32)
    labels[rng.random((4, 11)) < 0.4] = -1  # later pieces, [CLS], padding: not counted
    labels[np.asarray(batch["input_mask"]) == 0] = -1
    batch["label_ids"] = tf.constant(labels)
    logits = np.asarray(model(batch, training=False)["logits"], np.float64)  # [4, 11, 4]
    # numpy, from the definition: Σ w[y]·(−log softmax(x)[y]) / Σ w[y] over counted tokens
    log_p = logits - logits.max(-1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
    counted = labels >= 0
    y = labels[counted]
    w = np.array(weights)[y]
    expected = (w * -log_p[counted][np.arange(len(y)), y]).sum() / w.sum()
    # (PyTorch ignores -100: the uncounted tokens' -1 mapped to it)
    torch_labels = torch.tensor(np.where(counted, labels, -100).reshape(-1), dtype=torch.long)
    reference = torch.nn.CrossEntropyLoss(weight=torch.tensor(weights, dtype=torch.float64))(
        torch.tensor(logits.reshape(-1, 4)), torch_labels
    ).item()
    assert abs(expected - reference) < 1e-10
    unweighted = (-log_p[counted][np.arange(len(y)), y]).mean()
    assert abs(expected - unweighted) > 1e-2  # the weights matter here
    assert task.losses == {"token_loss": "weighted_tokens"}
    assert abs(_trainer_loss(task, model, batch, [slice(0, 4)], "token_loss") - expected) < 1e-5
    split = _trainer_loss(task, model, batch, [slice(0, 1), slice(1, 4)], "token_loss")
    assert abs(split - expected) < 1e-5  # the whole batch's weighted mean, not a mean of means
    plain = TokenClassificationTask(tiny_config(), 4, dropout=0.0)
    assert plain.losses == {"token_loss": "tokens"}
    with pytest.raises(ValueError, match="do not fit 4 labels"):
        TokenClassificationTask(tiny_config(), 4, class_weights=(1.0, 2.0))


def test_multi_label_positive_weights_are_torch_bce_pos_weight():
    import keras
    import tensorflow as tf
    import torch

    from albert_tf.training.multi_label import MultiLabelClassificationTask

    keras.utils.set_random_seed(0)  # (the weights' effect below depends on the logits)
    pos = (4.0, 0.5, 1.0)
    task = MultiLabelClassificationTask(tiny_config(), 3, dropout=0.0, pos_weights=pos)
    model = task.build_model()
    _sharpen(model)
    batch = {k: tf.constant(v) for k, v in random_batch(batch=5, seq=9, seed=2).items()}
    gold = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 0], [0, 0, 0], [1, 0, 1]], np.float32)
    batch["label_ids"] = tf.constant(gold)
    x = np.asarray(model(batch, training=False)["logits"], np.float64)  # [5, 3]
    # numpy, from the definition: −[p·y·log σ(x) + (1 − y)·log(1 − σ(x))], mean over all
    log_sig, log_one_minus = -np.logaddexp(0, -x), -np.logaddexp(0, x)
    expected = (-(np.array(pos) * gold * log_sig + (1 - gold) * log_one_minus)).mean()
    reference = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(pos, dtype=torch.float64))(
        torch.tensor(x), torch.tensor(gold, dtype=torch.float64)
    ).item()
    assert abs(expected - reference) < 1e-10
    plain = torch.nn.BCEWithLogitsLoss()(torch.tensor(x), torch.tensor(gold, dtype=torch.float64))
    assert abs(plain.item() - reference) > 1e-2  # the weights matter here
    assert abs(_trainer_loss(task, model, batch, [slice(0, 2), slice(2, 5)]) - expected) < 1e-5


def test_auto_positive_weights_are_negatives_over_positives_clipped(tmp_path):
    import tensorflow as tf

    from albert_tf.training.class_weights import (
        POS_WEIGHT_CLIP,
        multi_label_counts,
        parse_class_weights,
        positive_weights,
        resolve_class_weights,
    )

    rng = np.random.default_rng(0)
    hot = (rng.random((300, 4)) < [0.5, 0.1, 0.002, 0.0]).astype(np.float32)
    hot[:299, 0] = 1.0  # one negative in 300: 1/299, clipped up
    path = str(tmp_path / "train.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for row in hot:
            feature = {"label_ids": tf.train.Feature(float_list=tf.train.FloatList(value=row))}
            w.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )
    positives, total = multi_label_counts(path, 4)
    assert positives == hot.sum(0).astype(int).tolist() and total == 300
    p = hot.sum(0).astype(np.float64)
    expected = np.clip((300 - p) / np.maximum(p, 1), 1 / POS_WEIGHT_CLIP, POS_WEIGHT_CLIP)
    expected[p == 0] = POS_WEIGHT_CLIP
    ours = resolve_class_weights("auto", list("abcd"), lambda: (positives, total), True)
    np.testing.assert_allclose(ours, expected, rtol=1e-12)
    assert ours[0] == 1 / POS_WEIGHT_CLIP and ours[3] == POS_WEIGHT_CLIP
    assert positive_weights([30, 10], 40) == (1 / 3, 3.0)
    # multi-label weights are given as for one label an example: one per label
    assert parse_class_weights("2,1", ["a", "b"], False, None, multi_label=True) == (2.0, 1.0)
    with pytest.raises(ValueError, match=r"^--class_weights=2: 1 weight\(s\) for 2 labels"):
        parse_class_weights("2", ["a", "b"], False, None, multi_label=True)
