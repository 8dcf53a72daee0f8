"""The files a training run keeps in its output directory besides its checkpoints' state:
the checkpoint writes themselves (a failed write leaves nothing half-written), `best/` and
`best/best.json` (the checkpoint with the best evaluation metric), `metrics.jsonl` (one row
per training loop and per evaluation), the TensorBoard evaluation events (`eval/`) and the
console progress line. The trainer (`albert_tf.training.trainer`) decides when; this module
decides what is written, and where.

An evaluation-only run (a model evaluated without training it: `evaluated` names what it
evaluated) never writes the training run's records: no metrics.jsonl row, no TensorBoard
event, no best/; its report is `eval_results.<what it evaluated>.json`, never the training
run's `eval_results.json` (`results_path`). Scores of another file, or of the same file
with other settings, are never compared with the training run's as one metric.
"""

from __future__ import annotations

import json
import math
import os
import time

from albert_tf.checkpoints.run_record import RESULTS_FILE
from albert_tf.training.resume import clean_temporaries
from data_pipeline.io import filesystem
from data_pipeline.io.atomic import append_text, write_json

METRICS_FILE = "metrics.jsonl"
BEST_DIR = "best"
BEST_RECORD = "best.json"

TEST_RESULTS = "test_results.json"


class RunFiles:
    """The run files of `output_dir` (the worker's own directory); progress lines to `log`.
    `evaluated`: the name of what an evaluation-only run evaluates (None: a training run).
    `on_best(best_dir, step)`: called each time best/ is rewritten (the runners make it a
    servable fine-tuned model directory: task.json, albert_config.json, vocabulary)."""

    def __init__(self, output_dir: str, log=print, evaluated: str | None = None, on_best=None):
        self.output_dir = output_dir
        self.log = log
        self.evaluated = evaluated
        self.on_best = on_best

    def results_path(self) -> str:
        """Where this run's evaluation report goes: eval_results.json for a training run,
        eval_results.<what it evaluated>.json for an evaluation-only run."""
        if self.evaluated is None:
            return os.path.join(self.output_dir, RESULTS_FILE)
        name = "".join(c if c.isalnum() or c in "._-" else "_" for c in self.evaluated)
        return os.path.join(self.output_dir, f"eval_results.{name}.json")

    # --- checkpoints ------------------------------------------------------------------------
    def save(self, manager, step: int) -> str:
        """Writes checkpoint `step` through `manager` (a `tf.train.CheckpointManager`); a
        failed write (disk full) removes what it left and raises one line, the earlier
        checkpoints intact."""
        import tensorflow as tf

        try:
            return manager.save(checkpoint_number=step)
        except (tf.errors.OpError, OSError) as e:
            directory = manager.directory
            clean_temporaries(directory)
            reason = getattr(e, "message", None) or str(e)
            raise OSError(
                f"cannot write checkpoint ckpt-{step} in {directory}: "
                f"{reason.strip().splitlines()[0] if reason.strip() else type(e).__name__}; "
                f"the earlier checkpoints are intact"
            ) from None

    # --- metrics ----------------------------------------------------------------------------
    def append_metrics(self, row: dict) -> None:
        """One row of metrics.jsonl. On URLs (no append on object stores) the small file is
        rewritten whole."""
        path = os.path.join(self.output_dir, METRICS_FILE)
        append_text(path, json.dumps(row) + "\n")

    def record_eval(self, step: int, result: dict, model, best_metric: str | None) -> None:
        """TensorBoard, log line, metrics.jsonl and the best checkpoint for one evaluation
        (`result`: {metric: value}) of `model` at `step`; the log line only in an
        evaluation-only run (the module docstring)."""
        import tensorflow as tf

        if self.evaluated is not None:
            shown = ", ".join(f"{k} {v:.4f}" for k, v in result.items())
            self.log(f"eval of {self.evaluated} (step {step}): {shown}")
            return

        writer = tf.summary.create_file_writer(os.path.join(self.output_dir, "eval"))
        with writer.as_default(step=step):
            for name, value in result.items():
                tf.summary.scalar(name, value)
        writer.flush()
        self.log(f"eval step {step}: " + ", ".join(f"{k} {v:.4f}" for k, v in result.items()))
        self.append_metrics({"step": step, "split": "eval", **result})
        if best_metric and best_metric in result:
            self.keep_best(model, step, best_metric, result[best_metric], result)

    def record_test(self, evaluated: str, figures: dict, step: int, **extra) -> str:
        """A labelled test file's scores (`figures`: {metric: value} of the predictions
        written, by the model at `step`) as test_results.json and one log line; returns
        the path. Never a training record: nothing is ranked on a test file."""
        path = os.path.join(self.output_dir, TEST_RESULTS)
        write_json(path, {"test_file": evaluated, "step": step, "scores": figures, **extra})
        shown = ", ".join(f"{k} {v:.4f}" for k, v in figures.items())
        self.log(f"test {evaluated} (labelled, scored): {shown} -> {path}")
        return path

    # --- best/ -------------------------------------------------------------------------------
    def best_record(self) -> dict | None:
        """The best evaluation so far ({"metric", "value", "step", "eval"}; `checkpoint`
        is in best/best.json), or None before the first evaluation with a best metric."""
        record = os.path.join(self.output_dir, BEST_DIR, BEST_RECORD)
        if not filesystem.exists(record):
            return None
        with filesystem.open(record) as f:
            best = json.load(f)
        return {k: best[k] for k in ("metric", "value", "step", "eval")}

    def keep_best(self, model, step: int, name: str, value: float, result: dict) -> None:
        """Writes `model` as best/ckpt-`step` with best/best.json when `value` (a finite
        value of metric `name`, higher is better) beats the one recorded."""
        import tensorflow as tf

        best_dir = os.path.join(self.output_dir, BEST_DIR)
        record = os.path.join(best_dir, BEST_RECORD)
        previous = None
        if filesystem.exists(record):
            with filesystem.open(record) as f:
                previous = json.load(f)
        if previous is not None and previous["value"] >= value or not math.isfinite(value):
            return
        filesystem.makedirs(best_dir)
        ckpt = tf.train.Checkpoint(model=model)
        manager = tf.train.CheckpointManager(ckpt, best_dir, max_to_keep=1)
        path = manager.save(checkpoint_number=step)
        write_json(
            record,
            {"metric": name, "value": value, "step": step, "checkpoint": path, "eval": result},
        )
        self.log(f"best {name} {value:.4f} at step {step} -> {path}")
        if self.on_best is not None:
            self.on_best(best_dir, step)

    def restore_best(self, model) -> dict | None:
        """Restores best/'s weights into `model` (written by `keep_best` as
        tf.train.Checkpoint(model=...)) and returns best/best.json's record; None (the
        model left as it is) when no evaluation kept one."""
        import tensorflow as tf

        record = os.path.join(self.output_dir, BEST_DIR, BEST_RECORD)
        if not filesystem.exists(record):
            return None
        with filesystem.open(record) as f:
            best = json.load(f)
        # The checkpoint path is recorded as written; the directory may have moved since.
        prefix = os.path.join(os.path.dirname(record), os.path.basename(best["checkpoint"]))
        status = tf.train.Checkpoint(model=model).read(prefix)
        status.assert_existing_objects_matched().expect_partial()
        return dict(best, checkpoint=prefix)

    def evaluation_at(self, step: int) -> dict | None:
        """The evaluation metrics.jsonl records at `step` (without its split and step), or
        None when the run made none there."""
        path = os.path.join(self.output_dir, METRICS_FILE)
        if not filesystem.exists(path):
            return None
        with filesystem.open(path) as f:
            for line in f:
                row = json.loads(line)
                if row.get("split") == "eval" and row.get("step") == step:
                    return {k: v for k, v in row.items() if k not in ("split", "step")}
        return None

    # --- the console ------------------------------------------------------------------------
    def progress(self, step: int, total: int, values: dict, pace: Pace, now: float | None = None):
        """The progress line of a loop ending at `step` of `total` (at `now`, a time.time()):
        every loss and metric, gradient norm, learning rate, examples/s and the time left
        (`pace`: this segment's, Pace.time_left)."""
        shown = ", ".join(
            f"{k} {values[k]:.4f}"
            for k in values
            if k not in ("learning_rate", "examples_per_second", "grad_norm")
        )
        left = pace.time_left(step, total, time.time() if now is None else now)
        self.log(
            f"step {step}/{total} | {shown} | grad_norm "
            f"{values.get('grad_norm', float('nan')):.3f} | lr "
            f"{values['learning_rate']:.3g} | {values['examples_per_second']:.1f} ex/s"
            f" | ETA {left}"
        )


class Pace:
    """The time left of one segment of a run (its start, or a resume, to its end) at the
    pace of its loops after the first. A segment's first loop also traces and compiles the
    step and fills the input pipeline, which on a small model takes as long as many steady
    loops: an estimate from it alone was 2-3x too long. Its line gives that estimate as an
    upper bound ("<= H:MM:SS (start-up included)"); every later line counts only the steps
    since the first loop ended."""

    def __init__(self, start_step: int, start: float):
        self.start_step, self.start = start_step, start
        self.steady: tuple[int, float] | None = None  # (step, time) the first loop ended

    def time_left(self, step: int, total: int, now: float) -> str:
        """The ETA of the loop ending at `step` of `total` at `now` (a time.time())."""
        if self.steady is None:
            self.steady = (step, now)
            bound = _left(step - self.start_step, now - self.start, total - step)
            return f"<= {_hms(bound)} (start-up included)"
        since_step, since = self.steady
        return _hms(_left(step - since_step, now - since, total - step))


def _left(done: int, elapsed: float, remaining: int) -> float:
    """Seconds for `remaining` steps at `done` steps in `elapsed` seconds."""
    rate = done / max(elapsed, 1e-9)
    return remaining / rate if rate > 0 else float("nan")


def _hms(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
