"""TrainerConfig: how the trainer trains (steps, schedule, optimizer, checkpoints,
evaluation, precision, seed), one frozen value the runners build from their flags.

Each field is declared once, with its help text and range (`data_pipeline.cli.setting`):
the runners' flags of the same names, their defaults, their one-line range errors and the
value built from the parsed command line all come from here (data_pipeline.command)."""

from __future__ import annotations

import dataclasses

from albert_tf.training.early_stopping import early_stopping_error
from albert_tf.training.layer_decay import layer_decay_error
from data_pipeline.cli import check_fields, setting

OPTIMIZERS = ("lamb", "adamw", "lamb_keras", "adamw_keras")
DTYPES = ("float32", "bfloat16", "float16")


@dataclasses.dataclass(frozen=True)
class TrainerConfig:
    """How to train; a value out of its field's range or choices is a one-line ValueError
    (`check_fields`)."""

    output_dir: str = setting(help="Checkpoints, TensorBoard events, run_config.json.")
    # (0 is allowed: a run at learning rate 0 keeps its weights, e.g. to evaluate them.)
    learning_rate: float = setting(
        help="Peak learning rate.", minimum=0, resume="guarded", sweepable=True
    )
    num_train_steps: int = setting(help="Optimizer steps.", minimum=1, resume="guarded")
    num_warmup_steps: int = setting(0, "Linear warmup steps.", minimum=0, resume="guarded")
    poly_power: float = setting(
        1.0, "Power of the polynomial learning-rate decay.", minimum=0, resume="guarded"
    )
    optimizer: str = setting(
        "lamb",
        "lamb / adamw: the official updates (no Adam bias correction; no decay and no trust "
        "ratio on LayerNorm and biases); *_keras: with Keras' bias correction "
        "(albert_tf.training.optimization).",
        choices=OPTIMIZERS,
        resume="guarded",
    )
    weight_decay_rate: float = setting(
        0.01,
        "Weight decay (not on LayerNorm and biases).",
        minimum=0,
        resume="guarded",
        sweepable=True,
    )
    clip_norm: float = setting(1.0, "Global gradient-norm clip.", above=0, resume="guarded")
    grad_accum_steps: int = setting(
        1,
        "Micro-batches per update (train_batch_size is the update's batch).",
        minimum=1,
        resume="guarded",
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
        resume="guarded",
    )
    seed: int = setting(12345, "Seed of initialization, dropout and input order.", resume="guarded")
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
        "(albert_tf.modeling.recompute). attention: keep q, k, v and recompute the "
        "attention core: most of the memory at sequence 512 for ~2% more FLOPs.",
        choices=("none", "layer", "group", "attention"),
    )
    early_stopping_patience: int = setting(
        0,
        "Stop after this many --eval_every evaluations without the task's metric improving "
        "(0: never; albert_tf.training.early_stopping). The best checkpoint stays in best/.",
        minimum=0,
        resume="guarded",
    )
    early_stopping_min_delta: float = setting(
        0.0,
        "The least rise of the metric that counts as an improvement.",
        minimum=0,
        resume="guarded",
    )
    layer_lr_decay: float = setting(
        1.0,
        "Layer-wise learning-rate decay d: a variable's rate is lr·d^(its depth below the "
        "head), depth counted in parameter sets (a shared group is one; "
        "albert_tf.training.layer_decay). 1: the same rate everywhere.",
        above=0,
        maximum=1,
        resume="guarded",
        sweepable=True,
    )

    def __post_init__(self):
        check_fields(self)
        message = settings_conflict(self)
        if message:
            raise ValueError(message)


def settings_conflict(values) -> str | None:
    """The one-line error for settings that do not go together (early stopping without
    periodic evaluation, layer-wise decay with Keras' AdamW), or None. `values`: a
    TrainerConfig or the parsed flags (checked before a runner writes anything)."""
    return early_stopping_error(values.early_stopping_patience, values.eval_every) or (
        layer_decay_error(values.layer_lr_decay, values.optimizer)
    )
