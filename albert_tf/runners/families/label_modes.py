"""How run_classifier turns a classifier's logits into decisions, one class per mode: one
label (softmax; regression and multiple choice included) or several (`--multi_label`:
sigmoid and per-label thresholds tuned on held-out training examples). A mode builds the
training task, scores the dev predictions, writes the test predictions and names the
export's extra task.json fields, so the runner has no branch per mode.
"""

from __future__ import annotations


class SingleLabel:
    """One label an example: softmax cross-entropy (class weights allowed), the task's GLUE
    metrics, the GLUE submission file and a JSONL of probabilities."""

    def __init__(self, spec, labels, s=None):
        self.spec, self.labels, self.s = spec, labels, s

    def task(self, albert_config, dropout: float, class_weights):
        from albert_tf.training import ClassificationTask

        return ClassificationTask.for_task(
            albert_config, self.spec, self.labels, dropout, class_weights=class_weights
        )

    def evaluate(self, outputs: dict, predict_tune) -> dict:
        """{metric: value} of {dev split: (logits, label_ids)}; `predict_tune` unused."""
        return self.spec.evaluate(outputs)

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
    train with `--tune_thresholds`: `multi_label.multi_label_evaluation`), a JSONL of
    the labels and probabilities, the thresholds in task.json."""

    def __init__(self, spec, labels, s):
        super().__init__(spec, labels, s)
        self.per_label = {}  # the last evaluation's thresholds and F1 of each label

    def task(self, albert_config, dropout: float, class_weights):
        from albert_tf.training.multi_label import MultiLabelClassificationTask

        return MultiLabelClassificationTask.for_task(
            albert_config, self.spec, self.labels, dropout, pos_weights=class_weights
        )

    def evaluate(self, outputs: dict, predict_tune) -> dict:
        """Metrics of the dev predictions at the thresholds tuned on `predict_tune()` (the
        held-out training part's (logits, label_ids); None without tuning)."""
        from albert_tf.runners.families.multi_label import multi_label_evaluation

        found, details = multi_label_evaluation(outputs["dev"], predict_tune(), self.labels, self.s)
        self.per_label.update(details)
        return found

    def report(self) -> dict:
        """eval_results.json's "thresholds" and "f1" of each label."""
        return dict(self.per_label)

    def thresholds(self) -> tuple[float, ...]:
        """Each label's threshold as the final model's last evaluation found it (tuned when
        asked: training evaluates at its end), else --threshold."""
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


def label_mode(spec, labels, s) -> SingleLabel:
    """The mode of the task `spec` (a data_pipeline.classification.tasks.TaskSpec) with
    the run's settings `s`."""
    return (MultiLabel if spec.multi_label else SingleLabel)(spec, labels, s)
