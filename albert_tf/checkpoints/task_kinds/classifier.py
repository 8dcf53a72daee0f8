"""The classifier kind (run_classifier's GLUE and csv/tsv/jsonl tasks, regression included):
labels in the head's output order, pair or single sentence."""

from __future__ import annotations

import dataclasses

from albert_tf.checkpoints.task_kinds.kind import TaskKind


@dataclasses.dataclass(frozen=True)
class ClassifierFields:
    """labels: the head's outputs in order ([] for regression: one score); text_pair:
    whether the model was trained on sentence pairs (its serving signature takes text_b)."""

    task_name: str | None = None
    labels: tuple[str, ...] = ()
    regression: bool = False
    text_pair: bool = True


def _model(config, fields: ClassifierFields):
    from albert_tf.modeling.models import AlbertClassifier

    outputs = 1 if fields.regression else len(fields.labels)
    return AlbertClassifier(config, outputs, dropout=0.0)


def _check(fields: ClassifierFields) -> None:
    if not fields.regression and not fields.labels:
        raise ValueError("a classifier needs 'labels' (or 'regression': true)")


KIND = TaskKind(
    name="classifier",
    title="classifier",
    fields=ClassifierFields,
    build_model=_model,
    check=_check,
    transformers_class="AlbertForSequenceClassification",
)
