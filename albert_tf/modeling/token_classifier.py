"""Token classification (NER): encoder + a label distribution for every token, and its
masked cross-entropy.

The head is Hugging Face's `AlbertForTokenClassification`: dropout on the encoder's
sequence output, then one dense layer H → num_labels applied to every token (the official
ALBERT code has no tagging head). It is a `ClassificationHead` on [batch, seq, H] instead
of [batch, H], under the same attribute, `classifier_head`, so its variables have the
official run_classifier names `output_weights` [num_labels, H] (transposed) and
`output_bias`, exactly where `albert_tf.checkpoints.transformers` already puts Hugging
Face's `classifier.weight` / `classifier.bias`.

Logits are returned at every position, padding included, as Hugging Face does; the loss and
the predictions read only the positions the data marks (`label_ids` != -1, `word_index`
of data_pipeline.tagging.features).
"""

from __future__ import annotations

import tensorflow as tf

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.models import AlbertClassifier

IGNORED = -1  # label id of the positions the loss does not count


class AlbertTokenClassifier(AlbertClassifier):
    """Encoder + per-token classification head.

    Args:
      config: an `AlbertConfig`.
      num_labels: tags (the task's label list).
      dropout: on the sequence output (Hugging Face's classifier_dropout_prob, 0.1).

    Call: the encoder inputs (int32 [batch, seq]: input_ids, input_mask, segment_ids;
    other keys of a batch are ignored) → {"logits": float32 [batch, seq, num_labels]}.
    """

    def __init__(self, config: AlbertConfig, num_labels: int, dropout: float = 0.1, **kwargs):
        if num_labels < 1:
            raise ValueError(f"num_labels must be at least 1, got {num_labels}")
        kwargs.setdefault("name", "albert_token_classifier")
        super().__init__(config, num_labels, dropout, **kwargs)

    def call(self, inputs, training=False):
        inputs = {k: inputs[k] for k in ("input_ids", "input_mask", "segment_ids")}
        sequence = self.encoder(inputs, training=training)["sequence_output"]  # [B, S, H]
        return {"logits": self.classifier_head(sequence, training=training)}


def token_loss_terms(logits, label_ids):
    """(Σ cross-entropy over the counted tokens, number of counted tokens), float32
    scalars: the trainer's per-replica sum and denominator, summed over replicas and
    micro-batches before dividing, so the loss is a mean over every counted token of the
    global batch. logits [batch, seq, num_labels]; label_ids int [batch, seq], -1 where not
    counted. Positions beyond logits' seq (a shorter bucket) must not be passed."""
    logits = tf.cast(logits, tf.float32)
    labels = tf.cast(label_ids, tf.int32)
    counted = labels != IGNORED
    nll = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.where(counted, labels, tf.zeros_like(labels)), logits=logits
    )  # [batch, seq]; the placeholder 0 of ignored positions is masked out below
    weights = tf.cast(counted, tf.float32)
    return tf.reduce_sum(nll * weights), tf.reduce_sum(weights)


def masked_token_cross_entropy(logits, label_ids):
    """Mean cross-entropy over the tokens whose label is not -1 (0.0 when none is
    counted, where Hugging Face's CrossEntropyLoss(ignore_index) gives NaN)."""
    total, count = token_loss_terms(logits, label_ids)
    return tf.math.divide_no_nan(total, count)
