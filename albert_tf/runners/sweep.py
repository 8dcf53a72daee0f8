"""`--sweep NAME=v1,v2,...` (repeatable): the grid of fine-tuning settings
(albert_tf.training.sweep), each point a settings value (`Settings.replace`) checked as a
run's settings are, the combinations refused, and the sweep run: every point in
OUTPUT_DIR/sweep/<point>.

A sweep may vary the settings whose field says `sweepable=True` (read per run: trainer
config, schedule, head, adapters; not what is built once for every point: features, model
config, teacher). The training file is split by `--held_out_fraction` (drawn with --seed,
the same part for every point and seed) into the part trained on and the held-out part
every point is scored on (evaluated first, so the best checkpoint and early stopping follow
it too), at each run's best checkpoint; the dev splits are evaluated for the table only. A
point finished before is reused only when its runs are of this run's identity (the training
data's fingerprint included), as a resumed single run. `--export_dir` exports the winner's
best checkpoint once every point is trained.
"""

from __future__ import annotations

import json
import typing

from data_pipeline.command import fields_with

# Settings that change no figure of a finished point (what is swept, what is only read after).
UNCOMPARED = ("sweep", "allow_changed", "do_predict", "eval_batch_size")


def sweepable(s) -> dict:
    """{name: parser} of the settings of `s` a sweep may vary (their fields' `sweepable`)."""
    cls = type(s)
    hints = typing.get_type_hints(cls)
    out = {}
    for name in fields_with([cls], "sweepable"):
        kind = next((a for a in typing.get_args(hints[name]) if a is not type(None)), None)
        out[name] = kind or hints[name]
    return out


def sweep_points(s) -> list:
    """The grid's `Point`s of --sweep (empty without it); ValueError naming --sweep."""
    from albert_tf.training.sweep import grid, parse_sweeps

    if not s.sweep:
        return []
    return grid(parse_sweeps(s.sweep, sweepable(s)))


def point_settings(s, point):
    """The settings value of one sweep point."""
    return s.replace(**point.as_dict())


def check_sweep(family, s, points, check) -> None:
    """ValueError (one line) for --sweep without --do_train and --do_eval, with
    --multi_label, with --export_dir and --lora_rank, sweeping a setting another overrides,
    or a point whose values fail `check(point settings)` (the run's checks)."""
    if not points:
        return
    given = dict(points[0].settings)
    if not (s.do_train and s.do_eval):
        raise ValueError("--sweep trains and scores every point: give --do_train and --do_eval")
    if s.has("multi_label") and s.multi_label:  # the held-out part tunes its thresholds
        raise ValueError(
            "--sweep is not for --multi_label: its held-out part tunes the thresholds, so "
            "it cannot also score the points without bias"
        )
    if s.export_dir and s.has("lora_rank") and s.lora_rank:
        raise ValueError(
            "--sweep with --export_dir and --lora_rank: a LoRA run's best/ holds its adapters "
            "only; export the winner's run with python -m albert_tf.serving.export"
        )
    overridden = {
        "num_train_epochs": ("train_step", "num_train_steps"),
        "warmup_proportion": ("warmup_step", "num_warmup_steps"),
    }
    for name, winners in overridden.items():
        for other in winners:
            if name in given and (getattr(s, other) or other in given):
                raise ValueError(f"--sweep {name}: has no effect with --{other}")
    for point in points:
        try:
            check(point_settings(s, point))
        except ValueError as e:
            raise ValueError(f"--sweep point {point.name}: {e}") from None


def run_sweep(family, s, points, seeds, run_seeds, identity) -> dict:
    """Runs every point not finished before: `run_seeds(point settings, directory)` (each
    seed's result with its "eval" and "best"); then selects on the family's held-out metric
    at each run's best checkpoint, writes the table and `best`, prints the table, and with
    --export_dir exports the winner's best checkpoint. Returns the table. ValueError (one
    line) when a point's directory holds runs of another identity (`identity`: this run's
    RunIdentity; e.g. the training file edited since): before anything is trained."""
    from albert_tf.training.resume_checks import check_same_run
    from albert_tf.training.sweep import SweepDirectory, seed_dir
    from data_pipeline.io.locks import hold_output_lock

    directory = SweepDirectory(s.output_dir)
    hold_output_lock(directory.root, f"{family.runner} --sweep")
    for point in points:
        for i in range(len(seeds)):
            check_same_run(seed_dir(directory.point_dir(point), i, len(seeds)), identity, True)

    def run_point(point, point_dir):
        return [best_figures(r) for r in run_seeds(point_settings(s, point), point_dir)]

    swept = {name for name, _ in points[0].settings}
    values = {k: v for k, v in s.values().items() if k not in swept | set(UNCOMPARED)}
    settings = json.loads(json.dumps(values, default=str, sort_keys=True))
    metric = family.best_metric(s)
    table = directory.run(points, seeds, run_point, metric, settings=settings)
    if s.export_dir:
        table["exported"] = export_winner(s, table["served"])
    return table


def best_figures(result: dict) -> dict:
    """The figures of a run's best checkpoint (what it serves): its final evaluation's when
    best/ is of the last step (the same weights, measured now: a dev file replaced since is
    read), else best/'s record; the final ones when no evaluation kept a best."""
    best = result.get("best")
    if best is None or best["step"] == result.get("step"):
        return result["eval"]
    return best["eval"]


def export_winner(s, served: str) -> list[str]:
    """--export_dir of a sweep: the winner's best checkpoint (`served`, a servable best/),
    exported as `python -m albert_tf.serving.export --init_checkpoint SERVED` does."""
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.serving.export import export_formats, print_exports
    from albert_tf.serving.formats import export_formats as formats

    print(f"export: the sweep's winner, {served}", flush=True)
    kind = TaskInfo.read(served).kind  # (the served model's own: e.g. multiple choice)
    paths = export_formats(kind, served, s.export_dir, **formats(s))
    print_exports(paths, finetuned=True)
    return paths
