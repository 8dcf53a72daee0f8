"""The encoder export: the bare encoder of any checkpoint (pooled and sequence output), no
head, never a fine-tuned model directory of its own. Its fields are the sentence embedding
the export's `embed` and `similarity` compute (`albert_tf.modeling.pooling`), recorded in
the SavedModel's assets.extra/task.json and the LiteRT file's metadata."""

from __future__ import annotations

import dataclasses

from albert_tf.checkpoints.task_kinds.kind import TaskKind, TransformersHead


@dataclasses.dataclass(frozen=True)
class EncoderFields:
    """pooling: pooler | cls | mean | max (`albert_tf.modeling.pooling.POOLINGS`);
    normalize: L2-normalize the embeddings; encoder_outputs: `embed` also returns every
    block's output (Model Garden's `encoder_outputs`)."""

    pooling: str = "mean"
    normalize: bool = False
    encoder_outputs: bool = False


def _check(fields: EncoderFields) -> None:
    from albert_tf.modeling.pooling import check_pooling

    check_pooling(fields.pooling)


def _model(config, fields: EncoderFields):
    from albert_tf.modeling.encoder import AlbertEncoder

    return AlbertEncoder(config)


KIND = TaskKind(
    name="encoder",
    title="encoder",
    fields=EncoderFields,
    build_model=_model,
    check=_check,
    any_checkpoint=lambda restored, path: None,  # (every checkpoint has the encoder)
    transformers=TransformersHead("AlbertModel"),
    export_options=("pooling", "normalize", "encoder_outputs"),
    pipeline_tag="feature-extraction",
)
