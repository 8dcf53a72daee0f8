"""What a classification task is made of: its files and their reader, its labels, its dev
splits, the metric that ranks its checkpoints and what its serving model is told. The
runner turns its flags into a `TaskSpec` once; everything below receives values.

Tasks:
  GLUE (cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli) and Chinese (chnsenticorp,
    afqmc): DATA_DIR in the original layouts (`data.read_task`); labels are the task's;
    metrics as GLUE reports them (`metrics.task_metrics`); mnli is evaluated on
    dev_matched and dev_mismatched.
  the user's own files: csv, tsv, jsonl (`data.read_delimited` / `read_jsonl`, columns
    named by the spec), labels discovered from the train file (else the dev file), ranked
    by accuracy, or by the Pearson/Spearman mean with `regression`;
  multiple choice: race (RACE JSON), multiple_choice_jsonl; `num_choices` logits a question.
A user file is the spec's `<split>_file`, else `DATA_DIR/<split>.<ext>` (ext: csv, tsv,
jsonl; json for race).
"""

from __future__ import annotations

import dataclasses
import os

from data_pipeline.io import filesystem
from data_pipeline.classification import data as classifier_data
from data_pipeline.classification import metrics

FILE_TASKS = {
    "csv": "csv",
    "tsv": "tsv",
    "jsonl": "jsonl",
    "race": "json",
    "multiple_choice_jsonl": "jsonl",
}
CHOICE_TASKS = ("race", "multiple_choice_jsonl")


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """One classification task and where its data is.

    name: a task of the module docstring (any case).
    data_dir: the task's directory (GLUE/Chinese: required; user files: the default place).
    train_file, dev_file, test_file: user-file tasks: the split's file, overriding DATA_DIR.
    text_a_column, text_b_column, label_column: csv/tsv/jsonl column names (text_b: None
      for single sentences).
    regression: csv/tsv/jsonl: the label is a number (GLUE: the task decides; sts-b is).
    num_choices: multiple-choice tasks: logits a question (options padded to it).
    """

    name: str
    data_dir: str | None = None
    train_file: str | None = None
    dev_file: str | None = None
    test_file: str | None = None
    text_a_column: str = "text_a"
    text_b_column: str | None = None
    label_column: str = "label"
    regression: bool = False
    num_choices: int = 4

    def __post_init__(self):
        object.__setattr__(self, "name", self.name.lower())

    @property
    def user_files(self) -> bool:
        """The user's own files (csv, tsv, jsonl, multiple choice), not a GLUE/Chinese task."""
        return self.name in FILE_TASKS

    @property
    def choices(self) -> int | None:
        """Logits a question for multiple choice; None for (pair) classification."""
        return self.num_choices if self.name in CHOICE_TASKS else None

    @property
    def is_regression(self) -> bool:
        if self.user_files:
            return self.regression and not self.choices
        return classifier_data.is_regression(self.name)

    @property
    def dev_splits(self) -> list[str]:
        """The splits evaluated (mnli: dev_matched and dev_mismatched)."""
        if self.user_files:
            return ["dev"]
        return [s for s in classifier_data.splits(self.name) if s.startswith("dev")]

    @property
    def metric_task(self) -> str:
        """The `metrics.task_metrics` name: the task's own, else by label kind."""
        if self.user_files:
            return "sts-b" if self.is_regression else "accuracy"
        return self.name

    @property
    def best_metric(self) -> str:
        """The metric that ranks checkpoints (higher is better)."""
        if self.user_files:
            return "corr" if self.is_regression else "accuracy"
        return metrics.primary_metric(self.name)

    def source(self, split: str) -> str:
        """The file holding `split` (train, dev, test; mnli also dev_mismatched, ...)."""
        if not self.user_files:
            if not self.data_dir:
                raise ValueError(f"--data_dir is needed for task {self.name}")
            return classifier_data.task_file(self.data_dir, self.name, split)
        given = getattr(self, f"{split.split('_')[0]}_file")
        if given:
            return given
        if not self.data_dir:
            raise ValueError(f"give --{split}_file or --data_dir for task {self.name}")
        return os.path.join(self.data_dir, f"{split}.{FILE_TASKS[self.name]}")

    def read(self, split: str, path: str | None = None) -> list:
        """The examples of `split` (from `path`, default `source(split)`):
        `data.Example`s, or `data.MultipleChoiceExample`s for multiple choice."""
        path = path or self.source(split)
        if self.name == "race":
            return classifier_data.read_race(path)
        if self.name == "multiple_choice_jsonl":
            return classifier_data.read_multiple_choice_jsonl(path)
        if self.name in ("csv", "tsv"):
            return classifier_data.read_delimited(
                path,
                self.text_a_column,
                self.text_b_column,
                self.label_column,
                "," if self.name == "csv" else "\t",
                self.regression,
                unlabeled=split.startswith("test"),
            )
        if self.name == "jsonl":
            return classifier_data.read_jsonl(
                path, self.text_a_column, self.text_b_column, self.label_column, self.regression
            )
        return classifier_data.read_task_file(path, self.name, split)

    def labels(self) -> list[str] | None:
        """Label names in index order: the task's, or discovered from the user's train
        (else dev) file; None for regression and multiple choice."""
        if self.is_regression or self.choices:
            return None
        if not self.user_files:
            return classifier_data.label_names(self.name)
        for split in ("train", "dev"):
            path = self.source(split)
            if filesystem.exists(path):
                return classifier_data.discover_labels(self.read(split, path))
        raise FileNotFoundError(f"no train or dev file to discover the labels of {self.name} from")

    def check_labels(
        self, split: str, labels: list[str] | None, examples: list | None = None
    ) -> None:
        """ValueError naming `file:line` of the first example of `split` (its `examples`,
        default: read from its file) whose label is not one of `labels` (the training
        labels); nothing to check for regression, multiple choice or a missing file."""
        if not labels or self.choices:
            return
        path = self.source(split)
        if examples is None:
            if not filesystem.exists(path):
                return  # (reported where the features are made)
            examples = self.read(split, path)
        known = set(labels)
        for e in examples:
            if e.label is not None and str(e.label) not in known:
                raise ValueError(
                    f"{path}:{e.line or '?'}: label {str(e.label)!r} is not one of the "
                    f"training labels {labels}"
                )

    def output_names(self, labels: list[str] | None) -> list[str] | None:
        """What the logits' columns are: `labels`, choices A, B, C, ... for multiple
        choice, None for regression (one column, the score)."""
        return [chr(ord("A") + i) for i in range(self.choices)] if self.choices else labels

    def evaluate(self, outputs: dict) -> dict[str, float]:
        """{metric: value} from {dev split: (logits [N, labels or choices], label_ids [N])}.
        Several splits (mnli) are prefixed `split/`, and the first one's metrics are also
        given unprefixed (checkpoints are ranked by the matched set)."""
        result = {}
        for split, (logits, label_ids) in outputs.items():
            predictions = logits[:, 0] if self.is_regression else logits.argmax(-1)
            values = metrics.task_metrics(self.metric_task, predictions, label_ids)
            prefix = "" if len(outputs) == 1 else f"{split}/"
            result.update({prefix + k: v for k, v in values.items()})
        if len(outputs) > 1:
            first = next(iter(outputs)) + "/"
            result.update(
                {k[len(first) :]: v for k, v in list(result.items()) if k.startswith(first)}
            )
        return result

    def serving_task(
        self, labels, text_pair: bool, max_seq_length: int, do_lower_case: bool, step: int
    ) -> dict:
        """The task.json of the exported model (albert_tf.serving): what it predicts and
        how it tokenizes."""
        return {
            "kind": "multiple_choice" if self.choices else "classifier",
            "task_name": self.name,
            "text_pair": bool(self.choices) or text_pair,
            "labels": labels,
            "regression": self.is_regression,
            "num_choices": self.choices,
            "max_seq_length": max_seq_length,
            "do_lower_case": do_lower_case,
            "step": step,
        }
