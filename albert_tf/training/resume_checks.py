"""Whether a run may go on in an output directory that holds checkpoints, checked before
anything is written there: the same run (`RunRecord.check_same_run`: task, labels, model
config, tokenizer, training data), settings changed only where allowed (the resume rules
of the settings' fields, passed in), never fewer steps than done, and batches built the
same way (the checkpoint's data position belongs to its pipeline)."""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING

from data_pipeline.cli import setting
from data_pipeline.command import fields_with
from data_pipeline.io import filesystem

if TYPE_CHECKING:
    from albert_tf.checkpoints.run_record import RunIdentity, RunRecord


def check_resume(
    output_dir: str,
    identity: RunIdentity,
    training: bool,
    settings: dict | None = None,
    allow_changed: tuple[str, ...] | list[str] = (),
    rules=None,
    log=print,
) -> tuple[RunRecord | None, int | None]:
    """What a run on `output_dir` resumes, checked before anything is written: (its record,
    the step of its newest readable checkpoint), (None, step) for checkpoints without a
    record (nothing to compare: their restore decides), (None, None) when there is no
    checkpoint (a new run).

    ValueError (one line) when the checkpoints are of another run (`RunRecord.
    check_same_run`: task, labels, model config, tokenizer, and when `training` the training
    data), and with `settings` (the run's, when it trains) when `num_train_steps` is below the step
    reached (nothing to do: the run is not shortened, nothing is written) or a guarded
    setting changed without `allow_changed` (`RunRecord.check_settings` with `rules`: which
    settings are guarded or fixed)."""
    from albert_tf.checkpoints.run_record import RunRecord
    from albert_tf.training.resume import newest_readable_step

    step = newest_readable_step(os.path.join(output_dir, "checkpoints"))
    if step is None:
        return None, None
    record = RunRecord.read(output_dir)
    if record is not None:
        record.check_same_run(identity, output_dir, training)
    if settings is None or record is None:  # (checkpoints of no record: resume.py decides)
        return record, step
    wanted = settings["num_train_steps"]
    if wanted < step:
        raise ValueError(
            f"{output_dir} holds a run trained to step {step}, more than the {wanted} training "
            f"steps asked for (--num_train_steps/--train_step): nothing to do, nothing was "
            f"changed; ask for {step} or more to go on, or use another --output_dir"
        )
    for line in record.check_settings(settings, tuple(allow_changed), rules):
        log(f"resuming with a changed setting (--allow_changed): {line}")
    return record, step


def check_same_run(output_dir: str, identity: RunIdentity, training: bool) -> None:
    """`check_resume`'s identity check alone, for the runners that write into `output_dir`
    (the feature cache) before their settings are known: ValueError (one line) when
    `output_dir` holds checkpoints of another run."""
    check_resume(output_dir, identity, training)


def check_same_batches(output_dir: str, input_pipeline: dict | None) -> None:
    """ValueError (one line) when `output_dir` holds checkpoints of a run whose batches were
    built otherwise (run_config.json's "input_pipeline", e.g. length buckets against padded
    batches): the checkpoint's data position belongs to that pipeline and cannot be
    restored into this one. Read before anything is written."""
    from albert_tf.checkpoints.run_record import RunRecord

    if input_pipeline is None:
        return
    if not filesystem.glob(os.path.join(output_dir, "checkpoints", "*.index")):
        return
    try:
        record = RunRecord.read(output_dir)
    except (OSError, ValueError):
        return  # an unreadable record decides nothing; resume.py checks the checkpoints
    before = record.details.get("input_pipeline") if record else None
    if before is not None and before != input_pipeline:
        describe = lambda p: ", ".join(f"{k}={v}" for k, v in sorted(p.items()))  # noqa: E731
        raise ValueError(
            f"{output_dir} holds checkpoints of a run with other batches ({describe(before)}; "
            f"now {describe(input_pipeline)}): its data position cannot be restored; resume "
            f"with the same settings or use another --output_dir"
        )


@dataclasses.dataclass(frozen=True)
class ResumeSettings:
    """What a resumed run may change (the settings marked resume="guarded")."""

    allow_changed: tuple[str, ...] = setting(
        (),
        "Resuming a run (--output_dir with its checkpoints): the settings that may differ "
        "from its last segment's (e.g. learning_rate,num_train_steps); any other change is "
        "an error. Each segment is kept in run_config.json.",
    )


@dataclasses.dataclass(frozen=True)
class ResumeRules:
    """The settings a resumed run may change only with --allow_changed (`guarded`) and
    never (`fixed`), from the fields' `resume` metadata."""

    guarded: tuple[str, ...]
    fixed: tuple[str, ...]


def control_groups() -> tuple[type, ...]:
    """The fine-tuning controls' settings groups (albert_tf.runners.controls): LoRA's,
    distillation's, the class weights', --num_runs'."""
    from albert_tf.modeling.lora_settings import LoraSettings
    from albert_tf.training.class_weights import ClassWeightSettings
    from albert_tf.training.sweep import RunsSettings
    from albert_tf.training.teacher import DistillationSettings

    return (LoraSettings, DistillationSettings, ClassWeightSettings, RunsSettings)


def resume_rules(groups=None) -> ResumeRules:
    """The rules of `groups` (default: every fine-tuning and pretraining group), in the
    groups' field order (the order changes are named in)."""
    if groups is None:
        from albert_tf.training.config import TrainerConfig
        from albert_tf.training.finetuning_settings import FinetuningSettings

        groups = (TrainerConfig, FinetuningSettings, *control_groups())
    return ResumeRules(
        fields_with(groups, "resume", "guarded"), fields_with(groups, "resume", "fixed")
    )
