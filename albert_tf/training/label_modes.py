"""How run_classifier turns a classifier's logits into decisions, one class per mode: one
label (softmax; regression and multiple choice included) or several (`--multi_label`:
sigmoid and per-label thresholds). A mode builds the training task, scores the dev
predictions, writes the test predictions and names the export's extra task.json fields,
so the runner has no branch per mode.

The multi-label decision settings (`MultiLabelSettings`), their checks, and the held-out
part of the training file the thresholds are tuned on: every label whose sigmoid
probability reaches its threshold is predicted; the thresholds are `--threshold` for all,
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


class SingleLabel:
    """One label an example: softmax cross-entropy (class weights allowed), the task's GLUE
    metrics, the GLUE submission file and a JSONL of probabilities."""

    def __init__(self, spec, labels, s=None):
        self.spec, self.labels, self.s = spec, labels, s
        self.predicted = None  # {class: count} of the last evaluation's dev predictions

    def task(self, albert_config, dropout: float, class_weights):
        from albert_tf.training import ClassificationTask

        return ClassificationTask.for_task(
            albert_config, self.spec, self.labels, dropout, class_weights=class_weights
        )

    def evaluate(self, outputs: dict, predict_tune) -> dict:
        """{metric: value} of {dev split: (logits, label_ids)}; `predict_tune` unused.
        Keeps the first dev split's predicted classes (`predicted`; none for regression)."""
        if not self.spec.is_regression:
            dev = next((k for k in outputs if k.startswith("dev")), next(iter(outputs)))
            names = self.labels or [f"choice {i}" for i in range(outputs[dev][0].shape[-1])]
            found = outputs[dev][0].argmax(-1)
            self.predicted = {str(names[i]): int((found == i).sum()) for i in set(found.tolist())}
        return self.spec.evaluate(outputs)

    def adopt(self, directory: str) -> None:
        """One label an example decides by the largest logit: nothing to take."""

    def score(self, logits, label_ids) -> dict:
        """{metric: value} of a labelled test file's predictions, decided as they were
        written (nothing tuned on them)."""
        return self.spec.evaluate({"test": (logits, label_ids)})

    def report(self) -> dict:
        """What eval_results.json adds beside the metrics (nothing)."""
        return {}

    def write_predictions(self, output_dir: str, logits) -> str:
        from data_pipeline.classification.submission import write_submission

        names = self.spec.output_names(self.labels)
        tsv, jsonl = write_submission(
            output_dir, self.spec.name, self.spec.read("test"), logits, names
        )
        return f"{tsv}, {jsonl}"

    def thresholds(self):
        return None


class MultiLabel(SingleLabel):
    """Any number of labels an example (`--multi_label`): sigmoid + binary cross-entropy,
    labels at or over their thresholds (`--threshold`, or tuned on the held-out part of
    train with `--tune_thresholds`: `multi_label_evaluation`), a JSONL of
    the labels and probabilities, the thresholds in task.json."""

    def __init__(self, spec, labels, s):
        super().__init__(spec, labels, s)
        self.per_label = {}  # the last evaluation's thresholds and F1 of each label
        self.fixed = None  # the thresholds recorded with the model (`adopt`), or None

    def task(self, albert_config, dropout: float, class_weights):
        from albert_tf.training.multi_label import MultiLabelClassificationTask

        return MultiLabelClassificationTask.for_task(
            albert_config, self.spec, self.labels, dropout, pos_weights=class_weights
        )

    def evaluate(self, outputs: dict, predict_tune) -> dict:
        """Metrics of the dev predictions at the thresholds tuned on `predict_tune()` (the
        held-out training part's (logits, label_ids); None without tuning)."""
        from data_pipeline.classification.multi_label_metrics import tuned_evaluation

        if self.fixed is not None:  # the model's own thresholds: nothing tuned again
            dev, labels = outputs["dev"], self.labels
            found, details = tuned_evaluation(dev, None, labels, "none", fixed=self.fixed)
        else:
            found, details = multi_label_evaluation(
                outputs["dev"], predict_tune(), self.labels, self.s
            )
        self.per_label.update(details)
        return found

    def score(self, logits, label_ids) -> dict:
        from data_pipeline.classification.multi_label_metrics import tuned_evaluation

        found, _ = tuned_evaluation(
            (logits, label_ids), None, self.labels, "none", fixed=self.thresholds()
        )
        return found

    def adopt(self, directory: str) -> None:
        """Decides at the thresholds recorded with the model of `directory` (its task.json,
        else the eval_results.json of the run that trained it), not at --threshold: an
        evaluation-only run and the best checkpoint use the thresholds tuned for that
        model. An explicit --threshold, or nothing recorded, keeps --threshold."""
        found = None if self.s.given("threshold") else recorded_thresholds(directory)
        if found is not None:
            self.fixed = tuple(found.get(name, self.s.threshold) for name in self.labels)
            print(f"thresholds: the model's own, from {directory}", flush=True)

    def report(self) -> dict:
        """eval_results.json's "thresholds" and "f1" of each label."""
        return dict(self.per_label)

    def thresholds(self) -> tuple[float, ...]:
        """Each label's threshold as the final model's last evaluation found it (tuned when
        asked: training evaluates at its end), else --threshold."""
        if self.fixed is not None:
            return self.fixed
        found = self.per_label.get("thresholds") or {}
        return tuple(found.get(name, self.s.threshold) for name in self.labels)

    def write_predictions(self, output_dir: str, logits) -> str:
        from data_pipeline.classification.multi_label_predictions import (
            write_multi_label_predictions,
        )

        return write_multi_label_predictions(
            output_dir,
            self.spec.name,
            self.spec.read("test"),
            logits,
            self.labels,
            self.thresholds(),
        )


def recorded_thresholds(directory: str) -> dict | None:
    """{label: threshold} recorded with the multi-label model of `directory`: a fine-tuned
    model directory's task.json (a run's best/, an export), else a run directory's
    eval_results.json ("thresholds", its final model's); None when neither has them."""
    import json
    import os

    from albert_tf.checkpoints.task_info import is_finetuned_dir
    from data_pipeline.io import filesystem

    if is_finetuned_dir(directory):
        from albert_tf.checkpoints.task_info import TaskInfo

        details = TaskInfo.read(directory).details
        found = getattr(details, "thresholds", ())
        return dict(zip(details.labels, found)) if found else None
    report = os.path.join(directory, "eval_results.json")
    if not filesystem.isdir(directory) or not filesystem.exists(report):
        return None
    return json.loads(filesystem.read_text(report)).get("thresholds")


def label_mode(spec, labels, s) -> SingleLabel:
    """The mode of the task `spec` (a data_pipeline.classification.tasks.TaskSpec) with
    the run's settings `s`."""
    return (MultiLabel if spec.multi_label else SingleLabel)(spec, labels, s)
