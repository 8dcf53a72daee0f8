"""TrainerConfig: how the trainer trains (steps, schedule, optimizer, checkpoints,
evaluation, precision, seed), one frozen value the runners build from their flags."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class TrainerConfig:
    """How to train (flags map onto these fields one to one)."""

    output_dir: str
    num_train_steps: int
    learning_rate: float
    num_warmup_steps: int = 0
    poly_power: float = 1.0
    optimizer: str = "lamb"
    weight_decay_rate: float = 0.01
    clip_norm: float = 1.0
    grad_accum_steps: int = 1
    steps_per_loop: int = 100
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5
    eval_every: int = 0
    max_eval_steps: int = 100
    jit_compile: bool = False
    dtype: str = "float32"
    seed: int = 12345
    on_nonfinite: str = "stop"
    recompute: str = "none"  # activation recomputation: albert_tf.modeling.recompute

    def __post_init__(self):
        if self.dtype not in ("float32", "bfloat16", "float16"):
            raise ValueError(f"dtype={self.dtype!r} is not one of float32, bfloat16, float16")
        if self.on_nonfinite not in ("stop", "skip_step"):
            raise ValueError(f"on_nonfinite={self.on_nonfinite!r} is not one of stop, skip_step")
        if self.recompute not in ("none", "layer", "group"):
            raise ValueError(f"recompute={self.recompute!r} is not one of none, layer, group")
        for name in (
            "num_train_steps",
            "grad_accum_steps",
            "steps_per_loop",
            "save_checkpoints_steps",
            "keep_checkpoint_max",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 1")
