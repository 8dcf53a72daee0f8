"""Class weights in a classification loss (`--class_weights auto|w1,w2,...`).

The loss is the weighted mean PyTorch's `CrossEntropyLoss(weight=w)` defines:

    loss = Σ_i w[y_i]·nll_i / Σ_i w[y_i]

so the trainer gets it as the numerator Σ w[y]·nll over the denominator Σ w[y]
(`weighted_cross_entropy_sums`), both summed over every replica and micro-batch before
dividing (albert_tf.training.tasks): accumulation and replicas give the weighted mean of
the whole batch, as for the unweighted loss. `auto` is scikit-learn's "balanced" weights,
n_samples / (n_classes · count_c), from the label counts of the training features (after
--max_train_examples).

Token classification (run_ner.py) weighs each counted token (a word's first piece) the
same way, Σ_tokens w[y]·nll / Σ_tokens w[y] (`weighted_token_cross_entropy_sums`; `auto`:
balanced from the training words' tags). Multi-label classification has no single class
to weigh: there a weight is the positive weight p_l of each label's binary cross-entropy,
PyTorch's `BCEWithLogitsLoss(pos_weight=p)`, −[p_l·y·log σ(x) + (1 − y)·log(1 − σ(x))],
still averaged over examples and labels (albert_tf.training.multi_label); `auto` is
negatives/positives of each label in the training features, clipped to
[1/POS_WEIGHT_CLIP, POS_WEIGHT_CLIP] (a label no training example has gets the cap).
"""

from __future__ import annotations

import dataclasses

from data_pipeline.cli import setting

FLAG = "--class_weights"
POS_WEIGHT_CLIP = 100.0


FLOAT32_MAX = 3.4028234663852886e38  # (numpy.finfo(numpy.float32).max)


def parse_class_weights(
    text: str | None, labels, regression: bool, choices: int | None, multi_label: bool = False
):
    """What `--class_weights` asks for: None (not given), "auto", or a tuple of one weight
    per label in `labels`' order (`multi_label`: each label's positive weight). ValueError
    (one line) for a regression or multiple-choice task, a count other than the labels', a
    weight that is no positive finite number, or one float32 (the loss) cannot hold."""
    import math

    if not text:
        return None
    if regression:
        raise ValueError(f"{FLAG}={text}: a regression task has no classes to weigh")
    if choices:
        raise ValueError(f"{FLAG}={text}: a multiple-choice task has no fixed classes to weigh")
    if text.strip() == "auto":
        return "auto"
    parts = [p.strip() for p in text.split(",")]
    weights = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{FLAG}={text}: {part!r} is not a positive number")
        if value > FLOAT32_MAX:  # (finite here, infinite in the loss: NaN at the first step)
            raise ValueError(
                f"{FLAG}={text}: {part!r} is beyond float32 ({FLOAT32_MAX:.3g}), the precision "
                f"the loss is weighted in; weights are relative: scale them down"
            )
        weights.append(value)
    if len(weights) != len(labels):
        raise ValueError(
            f"{FLAG}={text}: {len(weights)} weight(s) for {len(labels)} labels "
            f"({', '.join(map(str, labels))}), one per label in that order, or auto"
        )
    return tuple(weights)


def balanced_class_weights(counts) -> tuple[float, ...]:
    """scikit-learn's "balanced" weights n / (k · count_c) for the label `counts` (one per
    class). ValueError (one line) when a class has no example."""
    counts = [int(c) for c in counts]
    missing = [i for i, c in enumerate(counts) if c <= 0]
    if missing:
        raise ValueError(
            f"{FLAG}=auto: label index {missing[0]} has no training example (balanced "
            f"weights need every class); give the weights instead"
        )
    total, k = sum(counts), len(counts)
    return tuple(total / (k * c) for c in counts)


def label_counts(record_path: str, num_labels: int) -> list[int]:
    """How many records of a classification TFRecord file (data_pipeline.classification.
    features) have each label index 0..num_labels-1."""
    import numpy as np
    import tensorflow as tf

    spec = {"label_ids": tf.io.FixedLenFeature([1], tf.int64)}
    counts = np.zeros(num_labels, np.int64)
    dataset = tf.data.TFRecordDataset(record_path).batch(4096)
    for records in dataset.map(lambda r: tf.io.parse_example(r, spec)["label_ids"][:, 0]):
        counts += np.bincount(records.numpy(), minlength=num_labels)[:num_labels]
    return counts.tolist()


def positive_weights(positives, total: int) -> tuple[float, ...]:
    """Multi-label `auto`: (total − positives_l) / positives_l for each label, clipped to
    [1/POS_WEIGHT_CLIP, POS_WEIGHT_CLIP] (POS_WEIGHT_CLIP when a label has no positive)."""
    out = []
    for p in (int(p) for p in positives):
        ratio = (total - p) / p if p > 0 else POS_WEIGHT_CLIP
        out.append(float(min(max(ratio, 1.0 / POS_WEIGHT_CLIP), POS_WEIGHT_CLIP)))
    return tuple(out)


def multi_label_counts(record_path: str, num_labels: int) -> tuple[list[int], int]:
    """(positives of each label, records) of a multi-label TFRecord file (label_ids float
    multi-hot [num_labels], data_pipeline.classification.features)."""
    import numpy as np
    import tensorflow as tf

    spec = {"label_ids": tf.io.FixedLenFeature([num_labels], tf.float32)}
    positives, total = np.zeros(num_labels, np.int64), 0
    dataset = tf.data.TFRecordDataset(record_path).batch(4096)
    for hot in dataset.map(lambda r: tf.io.parse_example(r, spec)["label_ids"]):
        positives += (hot.numpy() > 0.5).sum(0).astype(np.int64)
        total += int(hot.shape[0])
    return positives.tolist(), total


def resolve_class_weights(asked, labels, counts_fn, multi_label: bool = False):
    """The weights of `asked` (`parse_class_weights`): "auto" → balanced from
    `counts_fn()` (label counts, read only then); `multi_label`: positive weights from
    `counts_fn()` = (positives of each label, examples)."""
    if asked == "auto":
        return (
            positive_weights(*counts_fn()) if multi_label else balanced_class_weights(counts_fn())
        )
    return asked


def describe_class_weights(weights, labels) -> str | None:
    """The log's line for the class weights a run applies (`weights` in `labels`' order;
    None: no weights, no line)."""
    if not weights:
        return None
    names = labels if labels and len(labels) == len(weights) else range(len(weights))
    return "class weights: " + ", ".join(f"{n} {w:.4g}" for n, w in zip(names, weights))


def weighted_cross_entropy_sums(labels, logits, weights):
    """(Σ w[y]·nll, Σ w[y]) as float32 scalars: the numerator and denominator of the
    weighted mean cross-entropy. labels: int [...]; logits: [..., C]; weights: C floats."""
    import tensorflow as tf

    labels = tf.cast(labels, tf.int32)
    logits = tf.cast(logits, tf.float32)
    nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    per_example = tf.gather(tf.constant(weights, tf.float32), labels)
    return tf.reduce_sum(per_example * nll), tf.reduce_sum(per_example)


def token_weights(label_ids, weights):
    """float32 [batch, seq]: w[label] at the counted tokens (label_ids != -1), 0 elsewhere.
    label_ids int [batch, seq]; weights: one float per label."""
    import tensorflow as tf

    labels = tf.cast(label_ids, tf.int32)
    counted = labels >= 0
    safe = tf.where(counted, labels, tf.zeros_like(labels))
    return tf.gather(tf.constant(weights, tf.float32), safe) * tf.cast(counted, tf.float32)


def weighted_token_cross_entropy_sums(logits, label_ids, weights):
    """(Σ w[y]·nll, Σ w[y]) over the counted tokens (label_ids != -1) as float32 scalars:
    the weighted token loss's numerator and denominator. logits [batch, seq, C];
    label_ids int [batch, seq]; weights: C floats."""
    import tensorflow as tf

    labels = tf.cast(label_ids, tf.int32)
    safe = tf.where(labels >= 0, labels, tf.zeros_like(labels))  # (weight 0 there)
    nll = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=safe, logits=tf.cast(logits, tf.float32)
    )
    w = token_weights(labels, weights)
    return tf.reduce_sum(w * nll), tf.reduce_sum(w)


@dataclasses.dataclass(frozen=True)
class ClassWeightSettings:
    """Weighing the loss by class (albert_tf.training.class_weights)."""

    class_weights: str | None = setting(
        None,
        "Weigh the loss by class: auto (n / (classes · count), scikit-learn's balanced, "
        "from the training labels) or one weight per label in the task's label order, "
        "comma-separated; the loss is their weighted mean. --multi_label: each label's "
        "positive weight in its binary cross-entropy (auto: negatives/positives, clipped "
        "to [0.01, 100]). Token classification: per tag, over the words' first pieces.",
        resume="guarded",
    )
