"""Token classification (NER) as a trainer `Task`: the per-token head, its loss and its
token accuracy as per-replica (numerator, denominator) sums.

A batch carries `label_ids` int [batch, seq] (data_pipeline.tagging.features): a word's
label id on its first piece, -1 on every other position ([CLS], [SEP], a word's later
pieces, padding). Both terms are divided by the number of counted positions (label_ids
!= -1) summed over every replica and micro-batch, so the loss is the mean cross-entropy
over the counted tokens of the whole global batch — not a mean of per-batch means, which
would weigh a token of a short batch more than one of a long batch.

Entity precision/recall/F1 need whole words and sentences; the runner computes them on
predictions (`evaluate_fn`, data_pipeline.tagging.metrics) and the best checkpoint
follows their micro F1 ("f1").

With class weights (--class_weights) the loss is the weighted mean over the counted
tokens, Σ w[y]·nll / Σ w[y], as the classification loss is (albert_tf.training.
class_weights), its denominator "weighted_tokens" summed the same way.
"""

from __future__ import annotations

from albert_tf.training.tasks import Task


class TokenClassificationTask(Task):
    """Encoder + per-token head (`AlbertTokenClassifier`, Hugging Face's
    AlbertForTokenClassification): loss "token_loss", the mean cross-entropy over the
    counted tokens; metric "token_accuracy", the fraction of counted tokens whose argmax is
    their label; both over the denominator "tokens".

    Args:
      albert_config: an AlbertConfig.
      num_labels: the tag list's length.
      dropout: on the sequence output before the head (classifier dropout, 0.1).
      class_weights: one weight per label, or None (unweighted).
    """

    metrics = {"token_accuracy": "tokens"}
    best_metric = "f1"

    def __init__(self, albert_config, num_labels: int, dropout: float = 0.1, class_weights=None):
        self.albert_config = albert_config
        self.num_labels = num_labels
        self.dropout = dropout
        self.class_weights = None if class_weights is None else tuple(map(float, class_weights))
        if self.class_weights is not None and len(self.class_weights) != num_labels:
            raise ValueError(f"class weights {self.class_weights} do not fit {num_labels} labels")
        self.losses = {"token_loss": "weighted_tokens" if self.class_weights else "tokens"}

    def build_model(self):
        from albert_tf.modeling.token_classifier import AlbertTokenClassifier

        model = AlbertTokenClassifier(self.albert_config, self.num_labels, self.dropout)
        model.build()
        return model

    def denominators(self, batch):
        import tensorflow as tf

        from albert_tf.modeling.token_classifier import IGNORED

        counted = tf.not_equal(tf.cast(batch["label_ids"], tf.int32), IGNORED)
        out = {
            "tokens": tf.reduce_sum(tf.cast(counted, tf.float32)),
            # no term's: the trainer's progress line reports windows per second from it
            "examples": tf.cast(tf.shape(batch["label_ids"])[0], tf.float32),
        }
        if self.class_weights:
            from albert_tf.training.class_weights import token_weights

            weights = token_weights(batch["label_ids"], self.class_weights)
            out["weighted_tokens"] = tf.reduce_sum(weights)
        return out

    def terms(self, batch, outputs):
        import tensorflow as tf

        from albert_tf.modeling.token_classifier import IGNORED, token_loss_terms

        logits = outputs["logits"]  # [batch, seq, num_labels]
        labels = tf.cast(batch["label_ids"], tf.int32)  # [batch, seq], -1: not counted
        total, _ = token_loss_terms(logits, labels)
        if self.class_weights:
            from albert_tf.training.class_weights import weighted_token_cross_entropy_sums

            total = weighted_token_cross_entropy_sums(logits, labels, self.class_weights)[0]
        predicted = tf.argmax(tf.cast(logits, tf.float32), -1, output_type=tf.int32)
        correct = tf.logical_and(tf.equal(predicted, labels), tf.not_equal(labels, IGNORED))
        return {"token_loss": total, "token_accuracy": tf.reduce_sum(tf.cast(correct, tf.float32))}
