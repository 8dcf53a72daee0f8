"""The serving registry: each task kind's serving modules (SavedModel and LiteRT) live in
one module of this package, found here by the kind's name (the task kinds themselves, with
their task.json fields and models, are `albert_tf.checkpoints.task_kinds`). A new task
family adds its module and one line below."""

from __future__ import annotations

from albert_tf.serving.base import ServingTask
from albert_tf.serving.tasks import (
    classifier,
    encoder,
    fill_mask,
    multiple_choice,
    squad,
    token_classifier,
    zero_shot,
)

SERVING: dict[str, ServingTask] = {
    "classifier": classifier.TASK,
    "multiple_choice": multiple_choice.TASK,
    "squad": squad.TASK,
    "token_classifier": token_classifier.TASK,
    "encoder": encoder.TASK,
    "fill_mask": fill_mask.TASK,
    "zero_shot": zero_shot.TASK,
}


def serving_task(kind: str) -> ServingTask:
    """The serving builders of `kind`; ValueError (one line) for a kind with none."""
    if kind not in SERVING:
        raise ValueError(f"--task {kind!r} is not one of {', '.join(SERVING)}")
    return SERVING[kind]
