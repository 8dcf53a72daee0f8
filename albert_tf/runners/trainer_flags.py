"""The flags every runner shares, generated from their dataclasses: the trainer's
(`TrainerConfig`, albert_tf.training.config), where the model comes from (`ModelSettings`)
and how it is distributed (`DistributionSettings`); and what the runners build from them:
the TrainerConfig, the AlbertConfig, the run setup.

A runner defines them with `define_trainer_flags(**its defaults)`; each flag's name, help,
default and range are its field's (data_pipeline.cli)."""

from __future__ import annotations

import dataclasses

from absl import flags

from albert_tf.runners.control_settings import recorded_controls
from albert_tf.runners.run_setup import setup_run
from albert_tf.training.config import TrainerConfig
from data_pipeline.cli import Bounds, config_from_flags, define_flags_from, setting

FLAGS = flags.FLAGS

STRATEGIES = ("default", "one_device", "mirrored", "multi_worker_mirrored", "tpu")


@dataclasses.dataclass(frozen=True)
class ModelSettings:
    """The model a run trains: its config (a file or a preset) and its starting weights."""

    albert_config_file: str | None = setting(None, "An albert_config.json (official keys).")
    preset: str | None = setting(
        None,
        "Instead of --albert_config_file: base, large, xlarge, xxlarge (v2: dropout 0), or "
        "base-v1 ... (dropout 0.1).",
    )
    init_checkpoint: str | None = setting(
        None,
        "Start from these weights (ours, albert_tf.checkpoints.convert, official TF1/TF-Hub).",
    )


@dataclasses.dataclass(frozen=True)
class DistributionSettings:
    """Where a run computes (albert_tf.training.distribution.make_strategy)."""

    strategy: str = setting("default", "tf.distribute strategy.", choices=STRATEGIES)
    tpu: str | None = setting(None, "TPU name or grpc:// address (--strategy tpu).")
    num_gpus: int = setting(0, "GPUs to use (mirrored/one_device; 0: all / CPU).", minimum=0)


@dataclasses.dataclass(frozen=True)
class ResumeSettings:
    """What a resumed run may change (albert_tf.checkpoints.run_record.GUARDED_SETTINGS)."""

    allow_changed: tuple[str, ...] = setting(
        (),
        "Resuming a run (--output_dir with its checkpoints): the settings that may differ "
        "from its last segment's (e.g. learning_rate,num_train_steps); any other change is "
        "an error. Each segment is kept in run_config.json.",
    )


def define_trainer_flags(steps_may_be_zero: bool = False, **defaults) -> None:
    """The flags of TrainerConfig, ModelSettings and DistributionSettings in the global
    FLAGS. `defaults`: the runner's defaults (learning_rate, optimizer, num_train_steps,
    ...); `steps_may_be_zero`: --num_train_steps 0 means "derived" (fine-tuning: from the
    epochs) rather than out of range."""
    bounds = {"num_train_steps": Bounds(minimum=0)} if steps_may_be_zero else None
    define_flags_from(TrainerConfig, FLAGS, defaults=defaults, bounds=bounds)
    define_flags_from(ModelSettings, FLAGS)
    define_flags_from(DistributionSettings, FLAGS)
    define_flags_from(ResumeSettings, FLAGS)


def trainer_config_from_flags(**overrides):
    """TrainerConfig from the flags; runners that derive values (the step counts from
    epochs, one output directory per seed) pass them as `overrides`."""
    return config_from_flags(TrainerConfig, FLAGS, **overrides)


def config_source() -> str:
    """Where the model config comes from, as the user gave it (for error messages)."""
    if FLAGS.albert_config_file:
        return f"--albert_config_file={FLAGS.albert_config_file}"
    return f"--preset={FLAGS.preset}"


def albert_config_from_flags(dropout: float | None = None):
    """--albert_config_file or --preset → AlbertConfig (exactly one must be given), with
    the encoder's hidden and attention dropout set to `dropout` where it is given."""
    from albert_tf.modeling.config import AlbertConfig

    if bool(FLAGS.albert_config_file) == bool(FLAGS.preset):
        raise ValueError("give exactly one of --albert_config_file and --preset")
    if FLAGS.albert_config_file:
        config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
    else:
        config = AlbertConfig.preset(FLAGS.preset)
    if dropout is not None:
        config = config.replace(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    return config


def batch_buckets(length_buckets: str, padded: bool, strategy: str) -> tuple[int, ...] | None:
    """The lengths batches are grouped by and padded to (data_pipeline.length_buckets), or
    None: batches padded to max_seq_length (`padded`, an empty `length_buckets`, and on
    TPUs, `strategy` "tpu", which need static shapes). A ValueError names --length_buckets."""
    from data_pipeline.length_buckets import parse_buckets

    if padded or strategy == "tpu" or not length_buckets:
        return None
    try:
        return parse_buckets(length_buckets)
    except ValueError as e:
        raise ValueError(f"--length_buckets: {e}") from None


def setup_run_from_flags(
    runner: str,
    trainer_config,
    albert_config,
    training: bool,
    length_buckets,
    identity=None,
    **extra,
):
    """`run_setup.setup_run` with the flags every runner shares (strategy, TPU, GPUs, train
    batch, --allow_changed), the run's `identity` (a RunIdentity: what a resume must match)
    and a run_config.json of {"flags", "albert_config", "input_pipeline", **extra}
    (`length_buckets`: what the run's batches are built with, which a resumed run must
    match: run_setup.check_same_batches)."""
    return setup_run(
        runner,
        trainer_config,
        strategy_name=FLAGS.strategy,
        tpu=FLAGS.tpu,
        num_gpus=FLAGS.num_gpus,
        train_batch_size=FLAGS.train_batch_size,
        training=training,
        identity=identity,
        allow_changed=tuple(FLAGS.allow_changed or ()),
        controls=recorded_controls(),
        run_config={
            "flags": FLAGS.flag_values_dict(),
            "albert_config": albert_config.to_dict(),
            "input_pipeline": {
                "length_buckets": None if length_buckets is None else list(length_buckets)
            },
            **extra,
        },
    )
