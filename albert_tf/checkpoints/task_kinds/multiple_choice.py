"""The multiple-choice kind (RACE, multiple_choice_jsonl): each choice encoded alone, one
logit per choice."""

from __future__ import annotations

import dataclasses

from albert_tf.checkpoints.task_kinds.kind import TaskKind, TransformersHead, backbone_only


@dataclasses.dataclass(frozen=True)
class MultipleChoiceFields:
    """num_choices: the options per question the model was trained with (fewer are padded);
    labels: the options' names, if the task has them."""

    task_name: str | None = None
    num_choices: int | None = None
    labels: tuple[str, ...] = ()
    text_pair: bool = True


def _model(config, fields: MultipleChoiceFields):
    from albert_tf.modeling.models import AlbertMultipleChoice

    return AlbertMultipleChoice(config, dropout=0.0)


KIND = TaskKind(
    name="multiple_choice",
    title="multiple-choice",
    fields=MultipleChoiceFields,
    build_model=_model,
    transformers=TransformersHead("AlbertForMultipleChoice"),
    keras_hub=backbone_only("choice_head"),
    pipeline_tag="multiple-choice",
)
