"""The SQuAD kind: windows, span search and (v2.0) the null threshold the model was tuned
with; the head is the start/end span head ("bert") or the official ALBERT v2.0 head
("albert")."""

from __future__ import annotations

import dataclasses

from albert_tf.checkpoints.task_kinds.kind import TaskKind, TransformersHead, sentencepiece_only

HEADS = ("bert", "albert")


@dataclasses.dataclass(frozen=True)
class SquadFields:
    """The runner's settings (run_squad's flags of the same names), as its SavedModel and
    on-device runner repeat them; start_n_top / end_n_top size the ALBERT head's beam."""

    version_2_with_negative: bool = False
    doc_stride: int = 128
    max_query_length: int = 64
    max_answer_length: int = 30
    n_best_size: int = 20
    null_score_diff_threshold: float = 0.0
    squad_head: str = "bert"
    start_n_top: int = 5
    end_n_top: int = 5
    # The most windows one serving request may need (None: the serving default,
    # albert_tf.serving.request_windows.DEFAULT_MAX_WINDOWS); `export --max_windows` sets it.
    max_windows: int | None = None


def _model(config, fields: SquadFields):
    from albert_tf.modeling.models import AlbertQuestionAnswering, AlbertQuestionAnsweringV2

    if fields.squad_head == "albert":
        return AlbertQuestionAnsweringV2(config, fields.start_n_top, fields.end_n_top, dropout=0.0)
    return AlbertQuestionAnswering(config)


def _check(fields: SquadFields) -> None:
    if fields.squad_head not in HEADS:
        raise ValueError(f"'squad_head' {fields.squad_head!r} is not one of {', '.join(HEADS)}")
    for name in ("doc_stride", "max_query_length", "max_answer_length", "n_best_size"):
        if getattr(fields, name) < 1:
            raise ValueError(f"{name!r} must be ≥ 1, not {getattr(fields, name)}")


def _config_out(fields: SquadFields) -> dict:
    if fields.squad_head == "albert":
        raise ValueError(
            "the official ALBERT SQuAD v2.0 head (--squad_head albert) has no Hugging Face "
            "class (AlbertForQuestionAnswering is the start/end head: --squad_head bert)"
        )
    return {}


def _keras_hub(keras_hub, backbone, model, task, vocabulary):
    """KerasHub has no ALBERT question-answering model: the backbone alone."""
    return backbone, ["squad_v2_head" if task.details.squad_head == "albert" else "span_head"]


KIND = TaskKind(
    name="squad",
    title="SQuAD",
    fields=SquadFields,
    build_model=_model,
    check=_check,
    on_device=sentencepiece_only,
    transformers=TransformersHead("AlbertForQuestionAnswering", False, _config_out),
    keras_hub=_keras_hub,
    export_options=(
        "doc_stride",
        "max_query_length",
        "max_answer_length",
        "n_best_size",
        "null_score_diff_threshold",
        "max_windows",
    ),
    pipeline_tag="question-answering",
)
