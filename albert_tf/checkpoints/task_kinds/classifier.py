"""The classifier kind (run_classifier's GLUE and csv/tsv/jsonl tasks, regression and
multi-label included): labels in the head's output order, pair or single sentence."""

from __future__ import annotations

import dataclasses

from albert_tf.checkpoints.task_kinds.kind import (
    TaskKind,
    TransformersHead,
    config_labels,
    label_maps,
)


@dataclasses.dataclass(frozen=True)
class ClassifierFields:
    """labels: the head's outputs in order ([] for regression: one score); text_pair:
    whether the model was trained on sentence pairs (its serving signature takes text_b);
    multi_label: one sigmoid a label, every label at or over its threshold is predicted;
    thresholds: multi-label: each label's threshold on its probability (() : 0.5 each)."""

    task_name: str | None = None
    labels: tuple[str, ...] = ()
    regression: bool = False
    text_pair: bool = True
    multi_label: bool = False
    thresholds: tuple[float, ...] = ()

    def decision_thresholds(self) -> tuple[float, ...]:
        """Multi-label: each label's threshold (0.5 where none is recorded)."""
        return self.thresholds or tuple(0.5 for _ in self.labels)

    # Long documents (data_pipeline.classification.long_documents): windows every
    # doc_stride pieces (0: truncation), the first max_document_windows of a document (0:
    # all), combined by `aggregate`; max_windows: the most windows one serving request may
    # need (None: albert_tf.serving.request_windows.DEFAULT_MAX_WINDOWS).
    doc_stride: int = 0
    max_document_windows: int = 0
    aggregate: str = "mean_logits"
    max_windows: int | None = None


def _model(config, fields: ClassifierFields):
    from albert_tf.modeling.models import AlbertClassifier

    outputs = 1 if fields.regression else len(fields.labels)
    return AlbertClassifier(config, outputs, dropout=0.0)


def _check(fields: ClassifierFields) -> None:
    if not fields.regression and not fields.labels:
        raise ValueError("a classifier needs 'labels' (or 'regression': true)")
    if fields.thresholds and not fields.multi_label:
        raise ValueError("'thresholds' are for a multi-label classifier ('multi_label': true)")
    if fields.multi_label and fields.regression:
        raise ValueError("a classifier is not both 'multi_label' and 'regression'")
    if fields.thresholds and len(fields.thresholds) != len(fields.labels):
        raise ValueError(
            f"'thresholds' has {len(fields.thresholds)} values for {len(fields.labels)} labels"
        )
    if any(not 0 < t < 1 for t in fields.thresholds):
        raise ValueError(f"'thresholds' must be in (0, 1), not {list(fields.thresholds)}")
    from data_pipeline.classification.long_documents import DocumentWindows

    DocumentWindows(fields.doc_stride, fields.max_document_windows, fields.aggregate).check_task(
        False, fields.regression, fields.multi_label
    )
    if fields.doc_stride and fields.text_pair:
        raise ValueError("'doc_stride' windows single texts; 'text_pair' must be false")
    if fields.max_windows is not None and fields.max_windows < 1:
        raise ValueError(f"'max_windows' must be ≥ 1, not {fields.max_windows}")


def _config_out(fields: ClassifierFields) -> dict:
    """id2label from the labels (regression: one output, "score"), and problem_type for
    regression and multi-label."""
    out = label_maps(["score"] if fields.regression else fields.labels)
    if fields.regression:
        out["problem_type"] = "regression"
    elif fields.multi_label:
        out["problem_type"] = "multi_label_classification"
    return out


def _task_in(hf: dict) -> dict:
    """labels from id2label in id order; one output or problem_type "regression" is a
    regression; problem_type "multi_label_classification": multi_label (thresholds 0.5);
    pairs allowed (the config does not say)."""
    labels = config_labels(hf)
    multi_label = hf.get("problem_type") == "multi_label_classification"
    regression = not multi_label and (len(labels) == 1 or hf.get("problem_type") == "regression")
    task = {"labels": [] if regression else labels, "regression": regression, "text_pair": True}
    return dict(task, multi_label=True) if multi_label else task


def _keras_hub(keras_hub, backbone, model, task, vocabulary):
    """KerasHub's AlbertTextClassifier with this head (and a preprocessor at the model's
    sequence length when the vocabulary ships); a regression's head is not written."""
    if task.details.regression:
        return backbone, ["classifier_head (regression)"]
    preprocessor = None
    if vocabulary:
        tokenizer = keras_hub.models.AlbertTokenizer(proto=vocabulary)
        preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor(
            tokenizer, sequence_length=task.max_seq_length or 512
        )
    preset = keras_hub.models.AlbertTextClassifier(
        backbone, len(task.details.labels), preprocessor=preprocessor, dropout=0.0
    )
    head = model.classifier_head.dense
    preset.output_dense.kernel.assign(head.kernel.numpy())
    preset.output_dense.bias.assign(head.bias.numpy())
    return preset, []


KIND = TaskKind(
    name="classifier",
    title="classifier",
    fields=ClassifierFields,
    build_model=_model,
    check=_check,
    transformers=TransformersHead("AlbertForSequenceClassification", True, _config_out, _task_in),
    keras_hub=_keras_hub,
    export_options=("max_windows",),
    pipeline_tag="text-classification",
)
