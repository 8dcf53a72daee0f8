"""The classifier's multi-label decision settings (`MultiLabelSettings`), their checks, and
the held-out part of the training file the thresholds are tuned on.

With `--multi_label` (a task flag, `TaskSpec.multi_label`) every label whose sigmoid
probability reaches its threshold is predicted. The thresholds are `--threshold` for all,
or tuned (`--tune_thresholds global|per_label`) on `--held_out_fraction` of the training
examples drawn with `--seed` and never trained on: never on the dev set the figures are
reported for (the rule of SQuAD v2.0's null threshold).
"""

from __future__ import annotations

import dataclasses

from data_pipeline.cli import setting


@dataclasses.dataclass(frozen=True)
class MultiLabelSettings:
    """How a multi-label classifier decides (flags of the same names)."""

    threshold: float = setting(
        0.5,
        "--multi_label: the probability at or over which a label is predicted (every label; "
        "the default where --tune_thresholds finds no better).",
        above=0,
        below=1,
    )
    tune_thresholds: str = setting(
        "none",
        "--multi_label: none (--threshold), global (one threshold maximizing micro F1) or "
        "per_label (each label's maximizing its F1), tuned on --held_out_fraction of the "
        "training examples, recorded in eval_results.json and the exported task.json.",
        choices=("none", "global", "per_label"),
    )
    held_out_fraction: float = setting(
        0.1,
        "--tune_thresholds, --sweep: the fraction of the training examples held out of "
        "training (drawn with --seed) to tune the thresholds on, or to select the point on.",
        above=0,
        below=1,
    )


def check_multi_label(s) -> None:
    """ValueError (one line) for a multi-label setting given without --multi_label, or
    --tune_thresholds without --do_train (the held-out examples come from training)."""
    if not s.multi_label:
        for name in ("threshold", "tune_thresholds", "held_out_fraction"):
            if s.given(name) and not (name == "held_out_fraction" and s.sweep):
                raise ValueError(f"--{name} is for multi-label tasks (--multi_label)")
    elif s.tune_thresholds != "none" and not s.do_train:
        raise ValueError(
            f"--tune_thresholds={s.tune_thresholds} tunes on examples held out of "
            "training: give --do_train (a trained model's thresholds are in its task.json)"
        )


def held_out(s, part: str):
    """The `HeldOut` part ("fit": trained on, "tune": thresholds, or --sweep's points
    scored) of the training file under --tune_thresholds or --sweep, None without them."""
    from data_pipeline.classification.held_out import HeldOut

    if not s.sweep and (not s.multi_label or s.tune_thresholds == "none"):
        return None
    return HeldOut(s.held_out_fraction, s.seed, part)


def multi_label_evaluation(dev: tuple, tune: tuple | None, labels, s) -> tuple[dict, dict]:
    """(metrics, per label) of the dev predictions at the thresholds of `s`, tuned on
    `tune` when asked: `multi_label_metrics.tuned_evaluation`."""
    from data_pipeline.classification.multi_label_metrics import tuned_evaluation

    return tuned_evaluation(dev, tune, labels, s.tune_thresholds, s.threshold)
