"""--lora_rank, --lora_alpha, --lora_targets (generated from
albert_tf.modeling.lora_settings.LoraSettings): the settings, their checks, the task they wrap and
the model a LoRA run exports (the adapters merged)."""

from __future__ import annotations

from absl import flags

from albert_tf.modeling.lora_settings import LoraSettings
from data_pipeline.cli import config_from_flags, define_flags_from

FLAGS = flags.FLAGS


def define_lora_flags() -> None:
    define_flags_from(LoraSettings, FLAGS)


def lora_settings_from_flags() -> LoraSettings:
    """The LoRA settings; a one-line ValueError for a bad target, or a rank without
    --init_checkpoint (the frozen base would be random)."""
    settings = config_from_flags(LoraSettings, FLAGS)
    if settings.enabled and not FLAGS.init_checkpoint:
        raise ValueError(
            f"--lora_rank={settings.lora_rank} needs --init_checkpoint: the encoder is frozen "
            f"at it (a random encoder would stay random)"
        )
    return settings


def lora_task(task, seed: int):
    """`task`, with LoRA adapters (seeded by `seed`) when --lora_rank > 0."""
    settings = lora_settings_from_flags()
    if not settings.enabled:
        return task
    from albert_tf.training.lora_task import LoraTask

    return LoraTask(task, settings, seed)


def exported_model(task, model):
    """What --export_dir writes for `model` of `task`: the adapters merged into the
    kernels (a plain model of the base's shapes) for a LoRA task, else `model`."""
    merge = getattr(task, "merged_model", None)
    return merge(model) if merge is not None else model
