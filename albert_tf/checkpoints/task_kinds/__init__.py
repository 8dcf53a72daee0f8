"""The registry of task kinds: each task family is one module of this package (its task.json
fields, its model, its rules and hooks; `kind.TaskKind`) and one line below. A new family
adds its module and its line here, and its serving folder `albert_tf.serving.tasks.<kind>`
(registered in the exporters' SERVING and the on-device runner's RUNNERS)."""

from __future__ import annotations

from albert_tf.checkpoints.task_kinds import (
    classifier,
    encoder,
    fill_mask,
    multiple_choice,
    squad,
    token_classifier,
    zero_shot,
)
from albert_tf.checkpoints.task_kinds.kind import TaskKind

KINDS: dict[str, TaskKind] = {
    k.name: k
    for k in (
        classifier.KIND,
        multiple_choice.KIND,
        squad.KIND,
        token_classifier.KIND,
        encoder.KIND,
        fill_mask.KIND,
        zero_shot.KIND,
    )
}
# The kinds a fine-tuned model directory (task.json) may hold.
FINETUNED_KINDS = tuple(name for name, k in KINDS.items() if k.finetuned)


def task_kind(name) -> TaskKind:
    """The registered kind `name`; ValueError (one line, the known kinds) otherwise."""
    if name not in KINDS:
        raise ValueError(f"task kind {name!r} is not one of {', '.join(KINDS)}")
    return KINDS[name]
