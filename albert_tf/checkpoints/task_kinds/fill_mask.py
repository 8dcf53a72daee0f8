"""The fill-mask export: the pretraining model's masked-LM head on text with "[MASK]"s
(`albert_tf.serving.tasks.fill_mask`), from any checkpoint that has the head; like the
encoder, never a fine-tuned model directory of its own. Its field: how many candidates
each mask answers with."""

from __future__ import annotations

import dataclasses

from albert_tf.checkpoints.task_kinds.kind import TaskKind, TransformersHead


@dataclasses.dataclass(frozen=True)
class FillMaskFields:
    """top_k: the candidates per mask, most probable first (1..vocabulary size)."""

    top_k: int = 5


def _check(fields: FillMaskFields) -> None:
    if fields.top_k < 1:
        raise ValueError(f"top_k={fields.top_k}: expected at least 1")


def _model(config, fields: FillMaskFields):
    from albert_tf.modeling.models import AlbertPretrainer

    return AlbertPretrainer(config)


def _any_checkpoint(restored, path: str) -> None:
    """A plain checkpoint serves fill-mask only with its masked-LM head."""
    if "mlm_head" not in restored:
        raise ValueError(
            f"{path} has no masked-LM head (restored: {', '.join(restored)}); "
            "--task fill_mask needs a pretraining checkpoint"
        )


KIND = TaskKind(
    name="fill_mask",
    title="fill-mask",
    fields=FillMaskFields,
    build_model=_model,
    check=_check,
    any_checkpoint=_any_checkpoint,
    transformers=TransformersHead("AlbertForMaskedLM"),
    export_options=("top_k",),
    pipeline_tag="fill-mask",
)
