"""Multi-label classification's training task: the classifier head's L logits, each an
independent sigmoid, trained with binary cross-entropy.

The loss is Hugging Face's `problem_type="multi_label_classification"` one
(`BCEWithLogitsLoss` on the head's logits, mean over examples and labels): each example
adds its mean over labels to the `task_loss` sum, which the trainer divides by the global
example count. `pos_weights` (--class_weights): each label's positive weight p_l,
−[p_l·y·log σ(x) + (1 − y)·log(1 − σ(x))] (PyTorch's `pos_weight`;
albert_tf.training.class_weights), the same mean. Decisions, thresholds and F1 are the
runner's evaluation (`data_pipeline.classification.multi_label_metrics`); the step reports
`label_accuracy` (the fraction of right (example, label) decisions at probability 0.5).
"""

from __future__ import annotations

from albert_tf.training.tasks import ClassificationTask


class MultiLabelClassificationTask(ClassificationTask):
    """`AlbertClassifier` with `num_labels` sigmoid outputs; batches carry `label_ids`
    float32 multi-hot [batch, num_labels]; `pos_weights`: num_labels floats, or None."""

    def __init__(self, albert_config, num_labels: int, dropout: float = 0.1, pos_weights=None):
        super().__init__(albert_config, num_labels=num_labels, dropout=dropout)
        self.pos_weights = None if pos_weights is None else tuple(map(float, pos_weights))
        if self.pos_weights is not None and len(self.pos_weights) != num_labels:
            raise ValueError(f"positive weights {self.pos_weights} do not fit {num_labels} labels")
        self.regression = False
        self.metrics = {"label_accuracy": "examples"}
        self.best_metric = "micro_f1"

    @classmethod
    def for_task(cls, albert_config, spec, labels, dropout: float = 0.1, pos_weights=None):
        """The task of a multi-label `TaskSpec` with its discovered `labels`."""
        return cls(albert_config, len(labels), dropout, pos_weights)

    def terms(self, batch, outputs):
        import tensorflow as tf

        logits = tf.cast(outputs["logits"], tf.float32)  # [B, L]
        gold = tf.cast(batch["label_ids"], tf.float32)  # [B, L]
        if self.pos_weights is None:
            bce = tf.nn.sigmoid_cross_entropy_with_logits(labels=gold, logits=logits)
        else:
            bce = tf.nn.weighted_cross_entropy_with_logits(
                labels=gold, logits=logits, pos_weight=tf.constant(self.pos_weights)
            )
        right = tf.cast(tf.equal(tf.cast(logits >= 0, tf.float32), gold), tf.float32)
        return {
            "task_loss": tf.reduce_sum(tf.reduce_mean(bce, axis=-1)),
            "label_accuracy": tf.reduce_sum(tf.reduce_mean(right, axis=-1)),
        }
