"""TrainerConfig: how the trainer trains (steps, schedule, optimizer, checkpoints,
evaluation, precision, seed), one frozen value the runners build from their flags.

Each field is declared once, with its help text and range (`data_pipeline.cli.setting`):
the runners' flags of the same names, their defaults, their one-line range errors and the
value built from the parsed flags all come from here (albert_tf.runners.trainer_flags)."""

from __future__ import annotations

import dataclasses

from data_pipeline.cli import check_fields, setting

OPTIMIZERS = ("lamb", "adamw", "lamb_keras", "adamw_keras")
DTYPES = ("float32", "bfloat16", "float16")


@dataclasses.dataclass(frozen=True)
class TrainerConfig:
    """How to train; a value out of its field's range or choices is a one-line ValueError
    (`check_fields`)."""

    output_dir: str = setting(help="Checkpoints, TensorBoard events, run_config.json.")
    num_train_steps: int = setting(help="Optimizer steps.", minimum=1)
    # (0 is allowed: a run at learning rate 0 keeps its weights, e.g. to evaluate them.)
    learning_rate: float = setting(help="Peak learning rate.", minimum=0)
    num_warmup_steps: int = setting(0, "Linear warmup steps.", minimum=0)
    poly_power: float = setting(1.0, "Power of the polynomial learning-rate decay.", minimum=0)
    optimizer: str = setting(
        "lamb",
        "lamb / adamw: the official updates (no Adam bias correction; no decay and no trust "
        "ratio on LayerNorm and biases); *_keras: with Keras' bias correction "
        "(albert_tf.training.optimization).",
        choices=OPTIMIZERS,
    )
    weight_decay_rate: float = setting(
        0.01, "Weight decay (not on LayerNorm and biases).", minimum=0
    )
    clip_norm: float = setting(1.0, "Global gradient-norm clip.", above=0)
    grad_accum_steps: int = setting(
        1, "Micro-batches per update (train_batch_size is the update's batch).", minimum=1
    )
    steps_per_loop: int = setting(
        100, "Steps per tf.function call (the official iterations_per_loop).", minimum=1
    )
    save_checkpoints_steps: int = setting(1000, "Checkpoint period.", minimum=1)
    keep_checkpoint_max: int = setting(5, "Checkpoints kept.", minimum=1)
    eval_every: int = setting(0, "Evaluate every N steps (0: at the end only).", minimum=0)
    max_eval_steps: int = setting(100, "Evaluation batches at most.", minimum=1)
    jit_compile: bool = setting(False, "XLA-compile the per-replica step.")
    dtype: str = setting(
        "float32",
        "Compute dtype (mixed precision; float16 adds loss scaling).",
        choices=DTYPES,
    )
    seed: int = setting(12345, "Seed of initialization, dropout and input order.")
    on_nonfinite: str = setting(
        "stop",
        "A NaN/inf loss or gradient: stop with an error naming the step (nothing from it is "
        "written), or skip that update and go on (counted in the log).",
        choices=("stop", "skip_step"),
    )
    recompute: str = setting(
        "none",
        "Activation recomputation: keep only each layer's (group's) input for the backward "
        "pass and recompute its activations there; less memory for one more forward "
        "(albert_tf.modeling.recompute).",
        choices=("none", "layer", "group"),
    )

    def __post_init__(self):
        check_fields(self)
