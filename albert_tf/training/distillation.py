"""Knowledge distillation for classification (Hinton et al. 2015): the student learns the
teacher's softened distribution and the labels.

Per example, with student logits s, teacher logits t [labels], temperature T, weight α:

    loss = α · T² · KL(softmax(t/T) ‖ softmax(s/T)) + (1 - α) · CE(label, softmax(s))

T² keeps the soft term's gradient on the scale of the hard term's as T grows (Hinton,
Section 2). The teacher is frozen and deterministic (evaluation mode, no dropout), so its
logits are a function of the example alone: they are computed once, before training, in
one pass over the training features (`teacher_logits`), and each batch looks up its rows
by `example_index` (`with_teacher_logits`). The same values as a teacher forward pass in
every step, at one teacher pass instead of one per epoch, and the teacher (say an
xxlarge) is not in memory while the student trains.

Unlabelled examples (`--distill_unlabelled_file`, data_pipeline.classification.unlabelled)
are training examples without a label: a batch's `labelled` [batch] is 0 for them, and
their loss is the soft term alone at full weight, T²·KL (there is no hard term to share
it with); `accuracy` and `label_ce` count the labelled examples only (denominator
"labelled"), `distill_kl` every example.
"""

from __future__ import annotations

from albert_tf.training.tasks import Task

TEACHER_LOGITS = "teacher_logits"
LABELLED = "labelled"


def distillation_loss(
    student_logits, teacher_logits, labels, temperature: float, alpha: float, labelled=None
):
    """(loss, kl, ce), each float32 [batch]: the formula of the module docstring; where
    `labelled` (float [batch], None: all 1) is 0, loss = T²·KL (ce is still computed on the
    placeholder label: mask it).

    student_logits, teacher_logits: float [batch, labels]; labels: int [batch]."""
    import tensorflow as tf

    s = tf.cast(student_logits, tf.float32)
    t = tf.cast(teacher_logits, tf.float32)
    log_ps = tf.nn.log_softmax(s / temperature, axis=-1)
    log_pt = tf.nn.log_softmax(t / temperature, axis=-1)
    # p·(log p - log q), 0 where p = 0 (a padding choice's -1e9 logit)
    kl = tf.reduce_sum(tf.math.multiply_no_nan(log_pt - log_ps, tf.exp(log_pt)), axis=-1)
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(labels, tf.int32), logits=s)
    loss = alpha * temperature**2 * kl + (1.0 - alpha) * ce
    if labelled is not None:
        m = tf.cast(labelled, tf.float32)
        loss = m * loss + (1.0 - m) * temperature**2 * kl
    return loss, kl, ce


class DistillationTask(Task):
    """A classification `task` trained on `distillation_loss`; batches carry
    `teacher_logits` [batch, labels]. Reports `task_loss` (the distillation loss),
    `accuracy`, and its two parts `distill_kl` and `label_ce`."""

    def __init__(self, task: Task, temperature: float, alpha: float):
        if getattr(task, "regression", False):
            raise ValueError("distillation needs a classification task, not a regression")
        if not temperature > 0 or not 0 <= alpha <= 1:
            raise ValueError(
                f"distillation: temperature {temperature} > 0, alpha {alpha} in [0, 1]"
            )
        self.task, self.temperature, self.alpha = task, temperature, alpha
        self.albert_config = getattr(task, "albert_config", None)  # (layer-wise decay's map)
        self.losses = {"task_loss": "examples"}
        self.metrics = {name: LABELLED for name in task.metrics}
        self.metrics.update(distill_kl="examples", label_ce=LABELLED)
        self.denominator_offsets, self.best_metric = task.denominator_offsets, task.best_metric

    def build_model(self):
        return self.task.build_model()

    def denominators(self, batch):
        import tensorflow as tf

        out = dict(self.task.denominators(batch))
        out[LABELLED] = tf.reduce_sum(_labelled(batch))
        return out

    def call_model(self, model, batch, training):
        return self.task.call_model(model, batch, training)

    def terms(self, batch, outputs):
        import tensorflow as tf

        m = _labelled(batch)
        loss, kl, ce = distillation_loss(
            outputs["logits"],
            batch[TEACHER_LOGITS],
            batch["label_ids"],
            self.temperature,
            self.alpha,
            m,
        )
        logits = tf.cast(outputs["logits"], tf.float32)
        right = tf.equal(
            tf.argmax(logits, -1, output_type=tf.int32), tf.cast(batch["label_ids"], tf.int32)
        )
        out = (
            {"accuracy": tf.reduce_sum(m * tf.cast(right, tf.float32))}
            if "accuracy" in self.metrics
            else {}
        )
        out.update(
            task_loss=tf.reduce_sum(loss),
            distill_kl=tf.reduce_sum(kl),
            label_ce=tf.reduce_sum(m * ce),
        )
        return out


def _labelled(batch):
    """float32 [batch]: 1 for a labelled example, 0 for an unlabelled one (all 1 when the
    batch says nothing)."""
    import tensorflow as tf

    if LABELLED in batch:
        return tf.cast(batch[LABELLED], tf.float32)
    return tf.ones(tf.shape(batch["label_ids"])[:1], tf.float32)


def teacher_logits(model, dataset):
    """float32 [max example_index + 1, labels]: `model`'s evaluation-mode logits of every
    example of `dataset` (batches with `example_index`), at its index (rows of absent
    indices stay zero)."""
    import numpy as np

    rows, values = [], []
    for batch in dataset:
        inputs = {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}
        values.append(np.asarray(model(inputs, training=False)["logits"], np.float32))
        rows.append(batch["example_index"].numpy())
    rows, values = np.concatenate(rows), np.concatenate(values)
    table = np.zeros((int(rows.max()) + 1, values.shape[1]), np.float32)
    table[rows] = values
    return table


def with_teacher_logits(dataset, table, labelled: int | None = None):
    """`dataset`'s batches with `teacher_logits` = table[example_index] added, and with
    `labelled` (example_index < `labelled`: the unlabelled examples come after the
    labelled ones) when `labelled` is given."""
    import tensorflow as tf

    table = tf.constant(table)

    def add(batch):
        out = {**batch, TEACHER_LOGITS: tf.gather(table, batch["example_index"])}
        if labelled is not None:
            out[LABELLED] = tf.cast(batch["example_index"] < labelled, tf.float32)
        return out

    return dataset.map(add, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
