"""The encoder export: the bare encoder of any checkpoint (pooled and sequence output), no
head and no task fields; never a fine-tuned model directory of its own."""

from __future__ import annotations

import dataclasses

from albert_tf.checkpoints.task_kinds.kind import TaskKind


@dataclasses.dataclass(frozen=True)
class EncoderFields:
    """(none: the encoder has no task settings)"""


def _model(config, fields: EncoderFields):
    from albert_tf.modeling.encoder import AlbertEncoder

    return AlbertEncoder(config)


KIND = TaskKind(
    name="encoder",
    title="encoder",
    fields=EncoderFields,
    build_model=_model,
    finetuned=False,
    transformers_class="AlbertModel",
)
