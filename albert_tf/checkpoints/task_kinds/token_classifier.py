"""The token-classification (NER) kind: one tag per word, read from the first piece of the
word in the window that gives it the most context (data_pipeline.tagging.alignment), and
the tag scheme entities are decoded with."""

from __future__ import annotations

import dataclasses

from albert_tf.checkpoints.task_kinds.kind import (
    TaskKind,
    TransformersHead,
    backbone_only,
    config_labels,
    label_maps,
    sentencepiece_only,
)


@dataclasses.dataclass(frozen=True)
class TokenClassifierFields:
    """labels: the tags in the head's output order ("O" first, as
    data_pipeline.tagging.data.discover_labels orders them). doc_stride: pieces between the
    starts of a long sentence's windows (≥ 1; a stride longer than a window's
    max_seq_length - 2 pieces steps one window, as data_pipeline.tagging.alignment.windows
    does). scheme: the strict tag scheme entities are read with
    (data_pipeline.tagging.metrics.SCHEMES), None for seqeval's default lenient reading.
    max_windows: the most windows one serving request may need (None:
    albert_tf.serving.request_windows.DEFAULT_MAX_WINDOWS); `export --max_windows` sets it."""

    task_name: str = "ner"
    labels: tuple[str, ...] = ()
    doc_stride: int = 128
    scheme: str | None = None
    max_windows: int | None = None


def _model(config, fields: TokenClassifierFields):
    from albert_tf.modeling.token_classifier import AlbertTokenClassifier

    return AlbertTokenClassifier(config, len(fields.labels), dropout=0.0)


def _check(fields: TokenClassifierFields) -> None:
    from data_pipeline.tagging.metrics import SCHEMES

    if not fields.labels:
        raise ValueError("a token classifier needs 'labels' (its tags, in the head's order)")
    if len(set(fields.labels)) != len(fields.labels):
        raise ValueError(f"'labels' has a repeated tag: {list(fields.labels)}")
    if fields.doc_stride < 1:
        raise ValueError(f"'doc_stride' must be ≥ 1, not {fields.doc_stride}")
    if fields.scheme is not None and fields.scheme not in SCHEMES:
        raise ValueError(f"'scheme' {fields.scheme!r} is not one of {', '.join(SCHEMES)} or null")
    if fields.max_windows is not None and fields.max_windows < 1:
        raise ValueError(f"'max_windows' must be ≥ 1, not {fields.max_windows}")


KIND = TaskKind(
    name="token_classifier",
    title="token classifier",
    fields=TokenClassifierFields,
    build_model=_model,
    check=_check,
    on_device=sentencepiece_only,
    transformers=TransformersHead(
        "AlbertForTokenClassification",
        pooler=False,
        config_out=lambda fields: label_maps(fields.labels),
        task_in=lambda hf: {"labels": config_labels(hf)},  # (tags: never a regression)
    ),
    keras_hub=backbone_only("classifier_head (token classification: no KerasHub task)"),
    export_options=("max_windows",),
    pipeline_tag="token-classification",
)
