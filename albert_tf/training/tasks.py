"""What the trainer needs to know about a task: its model, its loss and metric terms as
per-replica (numerator, denominator) sums, and the tasks this project trains —
pretraining (MLM + SOP), classification / regression / multiple choice, SQuAD spans.

The trainer divides each term by its denominator summed over all replicas and
micro-batches (`divisors`), so every loss is an exact global mean.
"""

from __future__ import annotations

import abc


class Task(abc.ABC):
    """What the trainer needs to know about a task (pretraining, classification, ...).

    losses, metrics: {name: denominator key}. The loss is Σ sum[name]/den[key] over
      `losses`; metrics (and each loss) are reported as sum[name]/den[key].
    denominator_offsets: {term name: ε} added to that term's denominator before dividing
      (official MLM loss: Σ w + 1e-5); see `divisors`.
    build_model() → a built keras.Model.
    denominators(batch) → {key: float32 scalar}: per-replica counts (e.g. masked tokens,
      examples), summed over replicas and micro-batches by the trainer.
    terms(batch, outputs) → {name: float32 scalar}: per-replica sums of every loss and metric.
    call_model(model, batch, training) → the model's outputs for `terms` (default:
      `model(batch, training=training)`).
    best_metric: the metric whose maximum on the evaluation set selects the best
      checkpoint (None: none kept).
    """

    losses: dict = {}
    metrics: dict = {}
    denominator_offsets: dict = {}
    best_metric: str | None = None

    @abc.abstractmethod
    def build_model(self):
        """A built keras.Model."""

    @abc.abstractmethod
    def denominators(self, batch) -> dict:
        """{key: float32 scalar} per-replica counts."""

    @abc.abstractmethod
    def terms(self, batch, outputs) -> dict:
        """{name: float32 scalar} per-replica sums."""

    def call_model(self, model, batch, training: bool):
        return model(batch, training=training)

    # What the run's checkpoints (and best/) hold of `model`: all of it, unless a task
    # trains only part of it (LoRA: adapters and head); then `partial_checkpoints` and the
    # trainer loads --init_checkpoint on resume too, before the run's own checkpoint.
    partial_checkpoints: bool = False

    def checkpointed(self, model):
        return model


def divisors(terms: dict, denominators: dict, offsets: dict) -> dict:
    """{term name: what it is divided by} for `terms` ({name: denominator key}): its
    denominator plus the task's offset for it (official MLM loss: Σ w + 1e-5), never less
    than 1e-5 (an empty batch divides 0 by 1e-5, not by 0). Takes tensors (in the step)
    or floats (for reports)."""
    import tensorflow as tf

    return {
        name: tf.maximum(denominators[key] + offsets.get(name, 0.0), 1e-5)
        for name, key in terms.items()
    }


class PretrainingTask(Task):
    """MLM (weighted by `masked_lm_weights`, mean over masked tokens) + SOP cross-entropy
    (mean over examples). Metrics: MLM and SOP accuracy. `sop_weight` 0 trains MLM only
    (data made with --sentence_order none)."""

    best_metric = "mlm_accuracy"

    def __init__(
        self,
        albert_config,
        max_seq_length: int,
        max_predictions_per_seq: int,
        sop_weight: float = 1.0,
    ):
        self.albert_config = albert_config
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        self.sop_weight = sop_weight
        self.losses = {"mlm_loss": "masked"}
        self.denominator_offsets = {"mlm_loss": 1e-5}  # official: Σ w·nll / (Σ w + 1e-5)
        if sop_weight:
            self.losses["sop_loss"] = "examples"
        self.metrics = {"mlm_accuracy": "masked", "sop_accuracy": "examples"}

    def build_model(self):
        from albert_tf.modeling.models import AlbertPretrainer

        model = AlbertPretrainer(self.albert_config)
        model.build()
        return model

    def call_model(self, model, batch, training):
        # The losses read the last block only at [CLS] and the masked positions.
        return model(batch, training=training, last_block_at_masked_only=True)

    def denominators(self, batch):
        import tensorflow as tf

        return {
            "masked": tf.reduce_sum(tf.cast(batch["masked_lm_weights"], tf.float32)),
            "examples": tf.cast(tf.shape(batch["input_ids"])[0], tf.float32),
        }

    def terms(self, batch, outputs):
        import tensorflow as tf

        weights = tf.cast(batch["masked_lm_weights"], tf.float32)  # [B, P]
        labels = batch["masked_lm_ids"]  # [B, P]
        logits = tf.cast(outputs["mlm_logits"], tf.float32)  # [B, P, V]
        nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        correct = tf.cast(
            tf.equal(tf.argmax(logits, -1, output_type=labels.dtype), labels), tf.float32
        )
        sop_labels = tf.reshape(batch["next_sentence_labels"], [-1])  # [B]
        sop_logits = tf.cast(outputs["sop_logits"], tf.float32)  # [B, 2]
        sop_nll = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=sop_labels, logits=sop_logits
        )
        sop_correct = tf.cast(
            tf.equal(tf.argmax(sop_logits, -1, output_type=sop_labels.dtype), sop_labels),
            tf.float32,
        )
        terms = {
            "mlm_loss": tf.reduce_sum(weights * nll),
            "mlm_accuracy": tf.reduce_sum(weights * correct),
            "sop_accuracy": tf.reduce_sum(sop_correct),
        }
        if self.sop_weight:
            terms["sop_loss"] = self.sop_weight * tf.reduce_sum(sop_nll)
        return terms


class ClassificationTask(Task):
    """Sentence (pair) classification — cross-entropy, accuracy — or regression (STS-B:
    `num_labels=1`, mean squared error), or multiple choice (`num_choices`: inputs
    [batch, choices, seq], softmax over the choices). Batches carry `label_ids` [batch]
    (float32 for regression). Task-specific metrics (MCC, F1, correlations) are computed by
    the runner on predictions (`data_pipeline.classification.metrics`)."""

    def __init__(
        self,
        albert_config,
        num_labels: int = 2,
        num_choices: int | None = None,
        dropout: float = 0.1,
        class_weights=None,
    ):
        self.albert_config = albert_config
        self.num_labels = num_labels
        self.num_choices = num_choices
        self.dropout = dropout
        self.regression = num_choices is None and num_labels == 1
        # --class_weights: the loss is Σ w[y]·nll / Σ w[y] (albert_tf.training.class_weights)
        self.class_weights = None if class_weights is None else tuple(map(float, class_weights))
        if self.class_weights and (
            self.regression or num_choices or len(self.class_weights) != num_labels
        ):
            raise ValueError(f"class weights {self.class_weights} do not fit this task's labels")
        self.losses = {"task_loss": "weighted" if self.class_weights else "examples"}
        self.metrics = {} if self.regression else {"accuracy": "examples"}
        self.best_metric = None if self.regression else "accuracy"

    @classmethod
    def for_task(cls, albert_config, spec, labels, dropout: float = 0.1, class_weights=None):
        """The task of a `data_pipeline.classification.tasks.TaskSpec` with its `labels`
        (None for regression): its head size, choices and the metric the best checkpoint
        follows."""
        task = cls(
            albert_config,
            num_labels=1 if spec.is_regression else len(labels or [0, 1]),
            num_choices=spec.choices,
            dropout=dropout,
            class_weights=class_weights,
        )
        task.best_metric = spec.best_metric
        return task

    def build_model(self):
        from albert_tf.modeling.models import AlbertClassifier, AlbertMultipleChoice

        if self.num_choices:
            model = AlbertMultipleChoice(self.albert_config, self.dropout)
        else:
            model = AlbertClassifier(self.albert_config, self.num_labels, self.dropout)
        model.build()
        return model

    def denominators(self, batch):
        import tensorflow as tf

        dens = {"examples": tf.cast(tf.shape(batch["label_ids"])[0], tf.float32)}
        if self.class_weights:
            labels = tf.cast(batch["label_ids"], tf.int32)
            dens["weighted"] = tf.reduce_sum(tf.gather(self.class_weights, labels))
        return dens

    def terms(self, batch, outputs):
        import tensorflow as tf

        logits = tf.cast(outputs["logits"], tf.float32)
        if self.regression:
            error = logits[:, 0] - tf.cast(batch["label_ids"], tf.float32)
            return {"task_loss": tf.reduce_sum(tf.square(error))}
        labels = tf.cast(batch["label_ids"], tf.int32)
        nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        if self.class_weights:
            from albert_tf.training.class_weights import weighted_cross_entropy_sums

            nll = weighted_cross_entropy_sums(labels, logits, self.class_weights)[0]
        correct = tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels)
        return {
            "task_loss": tf.reduce_sum(nll),
            "accuracy": tf.reduce_sum(tf.cast(correct, tf.float32)),
        }


class SquadTask(Task):
    """Extractive question answering (SQuAD): cross-entropy of the start and of the end
    position over the sequence, averaged (the official loss); batches carry
    `start_positions`, `end_positions` int32 [batch] (0, the [CLS] position, when the
    window holds no answer). `span_accuracy`: both positions right. EM/F1 are computed by
    the runner on predictions (data_pipeline.squad.evaluation)."""

    losses = {"span_loss": "examples"}
    metrics = {"span_accuracy": "examples"}
    best_metric = "f1"

    def __init__(self, albert_config):
        self.albert_config = albert_config

    def build_model(self):
        from albert_tf.modeling.models import AlbertQuestionAnswering

        model = AlbertQuestionAnswering(self.albert_config)
        model.build()
        return model

    def denominators(self, batch):
        import tensorflow as tf

        return {"examples": tf.cast(tf.shape(batch["start_positions"])[0], tf.float32)}

    def terms(self, batch, outputs):
        import tensorflow as tf

        nll, correct = 0.0, 1.0
        for side in ("start", "end"):
            logits = tf.cast(outputs[f"{side}_logits"], tf.float32)
            labels = tf.cast(batch[f"{side}_positions"], tf.int32)
            nll += tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            correct *= tf.cast(
                tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32
            )
        return {"span_loss": 0.5 * tf.reduce_sum(nll), "span_accuracy": tf.reduce_sum(correct)}


class SquadV2Task(SquadTask):
    """SQuAD with the official ALBERT v2.0 head (`AlbertQuestionAnsweringV2`): the
    official loss, (start NLL + end NLL) / 2 with the end conditioned on the gold start,
    plus 0.5 × the sigmoid cross-entropy of the answer-class logit against `is_impossible`
    (a window without the answer counts as impossible, as the official features).
    `span_accuracy`: both positions right (end under teacher forcing);
    `answer_class_accuracy`: the answer-class decision at logit 0."""

    losses = {"span_loss": "examples", "answer_class_loss": "examples"}
    metrics = {"span_accuracy": "examples", "answer_class_accuracy": "examples"}

    def __init__(self, albert_config, start_n_top: int = 5, end_n_top: int = 5):
        super().__init__(albert_config)
        self.start_n_top, self.end_n_top = start_n_top, end_n_top

    def build_model(self):
        from albert_tf.modeling.models import AlbertQuestionAnsweringV2

        model = AlbertQuestionAnsweringV2(self.albert_config, self.start_n_top, self.end_n_top)
        model.build()
        return model

    def terms(self, batch, outputs):
        import tensorflow as tf

        nll, correct = 0.0, 1.0
        for side in ("start", "end"):
            log_probs = tf.cast(outputs[f"{side}_log_probs"], tf.float32)
            labels = tf.cast(batch[f"{side}_positions"], tf.int32)
            nll -= tf.gather(log_probs, labels[:, None], batch_dims=1)[:, 0]
            correct *= tf.cast(
                tf.equal(tf.argmax(log_probs, -1, output_type=tf.int32), labels), tf.float32
            )
        impossible = tf.cast(batch["is_impossible"], tf.float32)
        logits = tf.cast(outputs["cls_logits"], tf.float32)
        answer = tf.nn.sigmoid_cross_entropy_with_logits(labels=impossible, logits=logits)
        right = tf.cast(tf.equal(tf.cast(logits > 0, tf.float32), impossible), tf.float32)
        return {
            "span_loss": 0.5 * tf.reduce_sum(nll),
            "span_accuracy": tf.reduce_sum(correct),
            "answer_class_loss": 0.5 * tf.reduce_sum(answer),
            "answer_class_accuracy": tf.reduce_sum(right),
        }
