"""The serving registry: each task kind's builders (`ServingTask`: its SavedModel and LiteRT
modules, in its folder of `albert_tf.serving.tasks`), one line a kind. The exporters find a
kind here (`albert_tf.serving.export.serving_task`); the on-device runner has its own
registry (`albert_tf.serving.tflite_predict.RUNNERS`), which needs no TensorFlow."""

from __future__ import annotations

from albert_tf.serving.base import ServingTask
from albert_tf.serving.tasks.classifier import modules as classifier
from albert_tf.serving.tasks.encoder import modules as encoder
from albert_tf.serving.tasks.fill_mask import modules as fill_mask
from albert_tf.serving.tasks.multiple_choice import modules as multiple_choice
from albert_tf.serving.tasks.squad import modules as squad
from albert_tf.serving.tasks.token_classifier import modules as token_classifier
from albert_tf.serving.tasks.zero_shot import modules as zero_shot

SERVING: dict[str, ServingTask] = {
    t.kind: t
    for t in (
        classifier.TASK,
        multiple_choice.TASK,
        squad.TASK,
        token_classifier.TASK,
        encoder.TASK,
        fill_mask.TASK,
        zero_shot.TASK,
    )
}
