"""Class weights in a classification loss (`--class_weights auto|w1,w2,...`).

The loss is the weighted mean PyTorch's `CrossEntropyLoss(weight=w)` defines:

    loss = Σ_i w[y_i]·nll_i / Σ_i w[y_i]

so the trainer gets it as the numerator Σ w[y]·nll over the denominator Σ w[y]
(`weighted_cross_entropy_sums`), both summed over every replica and micro-batch before
dividing (albert_tf.training.tasks): accumulation and replicas give the weighted mean of
the whole batch, as for the unweighted loss. `auto` is scikit-learn's "balanced" weights,
n_samples / (n_classes · count_c), from the label counts of the training features (after
--max_train_examples). The sums take any logits [..., C] with labels [...], so a token or
multi-class head can call them with its own mask folded into the weights; this project's
token classifier has no training task yet, so only run_classifier.py uses them.
"""

from __future__ import annotations

FLAG = "--class_weights"


def parse_class_weights(
    text: str | None, labels, regression: bool, choices: int | None, multi_label: bool = False
):
    """What `--class_weights` asks for: None (not given), "auto", or a tuple of one weight
    per label in `labels`' order. ValueError (one line) for a regression, multi-label or
    multiple-choice task, a count other than the labels', a weight that is no positive
    finite number."""
    import math

    if not text:
        return None
    if regression:
        raise ValueError(f"{FLAG}={text}: a regression task has no classes to weigh")
    if choices:
        raise ValueError(f"{FLAG}={text}: a multiple-choice task has no fixed classes to weigh")
    if multi_label:
        raise ValueError(
            f"{FLAG}={text}: weighs each example's one class; --multi_label examples have "
            "several (not supported)"
        )
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


def resolve_class_weights(asked, labels, counts_fn) -> tuple[float, ...] | None:
    """The weights of `asked` (`parse_class_weights`): "auto" → balanced from
    `counts_fn()` (label counts, read only then)."""
    if asked == "auto":
        return balanced_class_weights(counts_fn())
    return asked


def weighted_cross_entropy_sums(labels, logits, weights):
    """(Σ w[y]·nll, Σ w[y]) as float32 scalars: the numerator and denominator of the
    weighted mean cross-entropy. labels: int [...]; logits: [..., C]; weights: C floats."""
    import tensorflow as tf

    labels = tf.cast(labels, tf.int32)
    logits = tf.cast(logits, tf.float32)
    nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    per_example = tf.gather(tf.constant(weights, tf.float32), labels)
    return tf.reduce_sum(per_example * nll), tf.reduce_sum(per_example)
