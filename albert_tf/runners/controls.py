"""The fine-tuning controls, one table: each control's settings, when a run asks for it, and
what a run records of it. A family declares the controls it takes (`Family.controls`); the
driver refuses any other a run asks for, in one line (`check_controls`), so no control is
ever silently ignored.

    lora             --lora_rank > 0 (LoraSettings): adapters on a frozen encoder
    distillation     --teacher_checkpoint | --teacher_logits_file, --distill_unlabelled_file
    class_weights    --class_weights (ClassWeightSettings)
    early_stopping   --early_stopping_patience > 0 (TrainerConfig)
    layer_lr_decay   --layer_lr_decay < 1 (TrainerConfig)
    recompute        --recompute other than none (TrainerConfig)
    num_runs         --num_runs > 1 (RunsSettings): one run per seed
    sweep            --sweep (SweepSettings): a grid selected on held-out training data

The settings a resumed run may change only with --allow_changed (resume="guarded") or never
(resume="fixed") are marked on their fields; `training.resume_checks.resume_rules` derives
the lists.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from albert_tf.training.resume_checks import control_groups

CONTROL_GROUPS = control_groups()


@dataclasses.dataclass(frozen=True)
class Control:
    """A control: its name, the flag a refusal names, and whether settings `s` ask for it."""

    name: str
    flag: str
    asked: Callable[[object], bool]


CONTROLS = (
    Control("lora", "lora_rank", lambda s: s.lora_rank > 0),
    Control(
        "distillation",
        "teacher_checkpoint",
        lambda s: bool(s.teacher_checkpoint or s.teacher_logits_file or s.distill_unlabelled_file),
    ),
    Control("class_weights", "class_weights", lambda s: bool(s.class_weights)),
    Control("early_stopping", "early_stopping_patience", lambda s: s.early_stopping_patience > 0),
    Control("layer_lr_decay", "layer_lr_decay", lambda s: s.layer_lr_decay != 1.0),
    Control("recompute", "recompute", lambda s: s.recompute != "none"),
    Control("num_runs", "num_runs", lambda s: s.num_runs > 1),
    Control("sweep", "sweep", lambda s: bool(s.sweep)),
)

ALL_CONTROLS = frozenset(c.name for c in CONTROLS)


def check_controls(runner: str, supported: frozenset, s) -> None:
    """ValueError (one line) for the first control `s` asks for that `supported` (the
    family's declaration) does not hold."""
    for control in CONTROLS:
        if control.name not in supported and control.asked(s):
            value = getattr(s, control.flag)
            if isinstance(value, tuple):
                value = ",".join(map(str, value))
            raise ValueError(
                f"--{control.flag}={value}: {runner} does not take {control.name} (it takes "
                f"{', '.join(sorted(supported & ALL_CONTROLS)) or 'no control'})"
            )


def recorded_controls(s) -> dict:
    """{setting: JSON value} of the task controls a run segment records (and a resume
    compares): LoRA's, the teacher's, the class weights; an unused control's details are
    None, so that changing a setting it ignores is no change."""
    rank = s.lora_rank
    teacher = s.teacher_checkpoint or s.teacher_logits_file or None
    return {
        "lora_rank": rank,
        "lora_alpha": s.lora_alpha if rank else None,
        "lora_targets": list(s.lora_targets or ()) if rank else None,
        "teacher_checkpoint": s.teacher_checkpoint or None,
        "teacher_logits_file": s.teacher_logits_file or None,
        "distill_temperature": s.distill_temperature if teacher else None,
        "distill_alpha": s.distill_alpha if teacher else None,
        "distill_unlabelled_file": s.distill_unlabelled_file if teacher else None,
        "class_weights": s.class_weights or None,
    }
