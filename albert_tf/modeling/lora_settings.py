"""LoRA's settings (`--lora_rank`, `--lora_alpha`, `--lora_targets`) and the kernels they
can name, apart from the adapters (albert_tf.modeling.lora) so that the runners define
their flags without loading TensorFlow."""

from __future__ import annotations

import dataclasses

from data_pipeline.cli import check_fields, setting

# target name → (sub-layer kind, attribute names of its Dense layers)
TARGETS = {
    "query": ("attention", ("query",)),
    "key": ("attention", ("key",)),
    "value": ("attention", ("value",)),
    "attention_output": ("attention", ("output_dense",)),
    "ffn": ("ffn", ("intermediate", "output_dense")),
}


@dataclasses.dataclass(frozen=True)
class LoraSettings:
    """LoRA fine-tuning (rank 0: full fine-tuning)."""

    lora_rank: int = setting(
        0,
        "LoRA: train rank-r updates of the encoder's projections (--lora_targets) and the "
        "head, the encoder frozen; checkpoints hold the adapters and the head, the export "
        "has them merged (0: full fine-tuning).",
        minimum=0,
        resume="fixed",
        sweepable=True,
    )
    lora_alpha: float | None = setting(
        None, "LoRA scale alpha/rank (default: alpha = rank, scale 1).", above=0, resume="guarded"
    )
    lora_targets: tuple[str, ...] = setting(
        ("query", "value"),
        f"LoRA: the projections adapted, of {', '.join(TARGETS)} (ffn: both FFN kernels).",
        resume="fixed",
    )

    def __post_init__(self):
        check_fields(self)
        unknown = [t for t in self.lora_targets if t not in TARGETS]
        if unknown or not self.lora_targets:
            raise ValueError(
                f"lora_targets={','.join(self.lora_targets)!s}: give one or more of "
                f"{', '.join(TARGETS)}"
            )

    @property
    def enabled(self) -> bool:
        return self.lora_rank > 0

    @property
    def scale(self) -> float:
        """alpha / r."""
        alpha = self.lora_rank if self.lora_alpha is None else self.lora_alpha
        return alpha / self.lora_rank
