"""run_classifier.py's `--sweep NAME=v1,v2,...` (repeatable): the grid of fine-tuning settings
(albert_tf.training.sweep), each value parsed by the swept flag's own parser and checked
with the runner's range checks, the combinations refused, and the sweep run: every point
with the flags set to its values, in OUTPUT_DIR/sweep/<point>.

With --sweep the training file is split by `--held_out_fraction` (drawn with --seed, the
same part for every point and seed) into the part trained on and the held-out part every
point is scored on (evaluated first, so the best checkpoint and early stopping follow it
too); the dev splits are evaluated for the table only.
"""

from __future__ import annotations

import contextlib
import dataclasses

from absl import flags

from data_pipeline.cli import define_flags_from, setting

FLAGS = flags.FLAGS

# The fine-tuning settings a sweep may vary: read per run (trainer config, schedule, head,
# adapters), not by what is built once for every point (features, model config, teacher).
SWEPT = (
    "learning_rate",
    "train_batch_size",
    "num_train_epochs",
    "train_step",
    "warmup_proportion",
    "weight_decay_rate",
    "layer_lr_decay",
    "classifier_dropout",
    "lora_rank",
)


@dataclasses.dataclass(frozen=True)
class SweepSettings:
    """The grid of a sweep (albert_tf.training.sweep)."""

    sweep: tuple[str, ...] = setting(
        (),
        "NAME=v1,v2,...: train every combination of the values (× the seeds "
        f"of --num_runs) in OUTPUT_DIR/sweep/<point>, NAME one of {', '.join(SWEPT)}; the "
        "winner is the best median metric on --held_out_fraction of the training examples "
        "(held out of training), never the dev set (reported beside it): "
        "sweep/sweep_results.json, sweep/best (albert_tf.training.sweep).",
        repeatable=True,
    )


def define_sweep_flags() -> None:
    define_flags_from(SweepSettings, FLAGS)


def sweep_points_from_flags() -> list:
    """The grid's `Point`s of --sweep (empty without it); ValueError naming --sweep."""
    from albert_tf.training.sweep import grid, parse_sweeps

    if not FLAGS.sweep:
        return []
    return grid(parse_sweeps(FLAGS.sweep, {name: FLAGS[name].parser.parse for name in SWEPT}))


@contextlib.contextmanager
def point_flags(point):
    """The flags set to `point`'s values inside the block, restored after it."""
    saved = {name: FLAGS[name].value for name, _ in point.settings}
    try:
        for name, value in point.settings:
            FLAGS[name].value = value
        yield
    finally:
        for name, value in saved.items():
            FLAGS[name].value = value


def check_sweep_flags(check_settings) -> None:
    """ValueError (one line) for --sweep without --do_train and --do_eval, with
    --multi_label or --export_dir, sweeping a setting another flag overrides, or a point
    whose values fail `check_settings()` (the runner's range checks, run with the flags
    set to each point's values)."""
    points = sweep_points_from_flags()
    if not points:
        return
    given = dict(points[0].settings)
    if not (FLAGS.do_train and FLAGS.do_eval):
        raise ValueError("--sweep trains and scores every point: give --do_train and --do_eval")
    if FLAGS.multi_label:  # the held-out part is where its thresholds are tuned
        raise ValueError(
            "--sweep is not for --multi_label: its held-out part tunes the thresholds, so "
            "it cannot also score the points without bias"
        )
    if FLAGS.export_dir:  # every point would be exported; the winner is known at the end
        raise ValueError(
            "--sweep with --export_dir: the winner is known only when every point is "
            "trained; export OUTPUT_DIR/sweep/<the point in sweep/best> with "
            "python -m albert_tf.serving.export"
        )
    overridden = {
        "num_train_epochs": ("train_step", "num_train_steps"),
        "warmup_proportion": ("warmup_step", "num_warmup_steps"),
    }
    for name, winners in overridden.items():
        for other in winners:
            if name in given and (FLAGS[other].value or other in given):
                raise ValueError(f"--sweep {name}: has no effect with --{other}")
    for point in points:
        with point_flags(point):
            try:
                check_settings()
            except ValueError as e:
                raise ValueError(f"--sweep point {point.name}: {e}") from None


def held_out_first(held_out, dev: dict) -> dict:
    """The splits a run evaluates: under --sweep the held-out features first (their
    metrics rank checkpoints and points), then `dev` ({split: features})."""
    from albert_tf.training.sweep import HELD_OUT

    return {HELD_OUT: held_out, **dev} if FLAGS.sweep else dev


def run_sweep_from_flags(run_seeds, metric: str, seeds: list[int]) -> dict:
    """Runs every point of --sweep not finished before: `run_seeds(directory)` (the
    runner's seeds into `directory`, returning each run's result with its "eval") with the
    flags set to the point; then selects on the held-out `metric`, writes the table and
    `best`, prints the table. Returns the table."""
    from albert_tf.training.sweep import SweepDirectory
    from data_pipeline.io.locks import hold_output_lock

    directory = SweepDirectory(FLAGS.output_dir)
    hold_output_lock(directory.root, "run_classifier --sweep")

    def run_point(point, point_dir):
        with point_flags(point):
            return [r["eval"] for r in run_seeds(point_dir)]

    points = sweep_points_from_flags()
    return directory.run(points, seeds, run_point, metric, settings=_run_settings(points))


# Flags that change no figure of a finished point (what is swept, what is only read after).
UNCOMPARED = ("sweep", "allow_changed", "do_predict", "eval_batch_size")


def _run_settings(points) -> dict:
    """The flags a finished point's figures depend on, other than its swept values, as
    JSON: a resumed sweep reuses a point only under the same."""
    import json

    swept = {name for name, _ in points[0].settings}
    values = {k: v for k, v in FLAGS.flag_values_dict().items() if k not in swept | set(UNCOMPARED)}
    return json.loads(json.dumps(values, default=str, sort_keys=True))
