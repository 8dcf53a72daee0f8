"""What a classification task is made of: its files and their reader, its labels, its dev
splits, the metric that ranks its checkpoints and what its serving model is told. The
runner turns its flags into a `TaskSpec` once; everything below receives values.

`FAMILIES` is the one registry of task names: each maps to a `TaskFamily` (its reader, its
files' extension, whether it is multiple choice). Tasks:
  GLUE (cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli) and Chinese (chnsenticorp,
    afqmc): DATA_DIR in the original layouts (`benchmark_files`, which registers a task by
    its layouts); labels are the task's; metrics as GLUE reports them
    (`metrics.task_metrics`); mnli is evaluated on dev_matched and dev_mismatched.
  the user's own files: csv, tsv, jsonl (`user_files.read_delimited` / `read_jsonl`,
    columns named by the spec), labels discovered from the train file (else the dev file),
    ranked by accuracy, or by the Pearson/Spearman mean with `regression`; with
    `multi_label`, several labels a row (`multi_label`), ranked by micro F1
    (`multi_label_metrics`);
  multiple choice: race (RACE JSON), multiple_choice_jsonl (`multiple_choice`);
    `num_choices` logits a question.
A user file is the spec's `<split>_file`, else `DATA_DIR/<split>.<ext>` (ext: the family's:
csv, tsv, jsonl; json for race).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from data_pipeline.classification import (
    benchmark_files,
    metrics,
    multi_label,
    multiple_choice,
    user_files,
)
from data_pipeline.cli import setting
from data_pipeline.io import filesystem


@dataclasses.dataclass(frozen=True)
class TaskFamily:
    """How the tasks of one family are read: `read(spec, split, path)` → its examples
    (`examples.Example`, or `examples.MultipleChoiceExample` when `multiple_choice`).

    extension: the user's own files: DATA_DIR/<split>.<extension> is a split's default file,
      labels are discovered from the train (else dev) file and checkpoints ranked by
      accuracy (by correlation with `regression`). None: a benchmark task, whose files,
      labels and metrics are its own (`benchmark_files`, `metrics.task_metrics`).
    multiple_choice: one logit an option, `num_choices` options a question.
    """

    read: Callable[[TaskSpec, str, str], list]
    extension: str | None = None
    multiple_choice: bool = False


def _benchmark(spec: TaskSpec, split: str, path: str) -> list:
    return benchmark_files.read_task_file(path, spec.name, split)


def _delimited(delimiter: str) -> Callable[[TaskSpec, str, str], list]:
    def read(spec: TaskSpec, split: str, path: str) -> list:
        return user_files.read_delimited(
            path,
            spec.text_a_column,
            spec.text_b_column,
            spec.label_column,
            delimiter,
            spec.regression,
            unlabeled=split.startswith("test"),
            label_delimiter=spec.label_delimiter if spec.multi_label else None,
        )

    return read


def _jsonl(spec: TaskSpec, split: str, path: str) -> list:
    return user_files.read_jsonl(
        path,
        spec.text_a_column,
        spec.text_b_column,
        spec.label_column,
        spec.regression,
        spec.label_delimiter if spec.multi_label else None,
    )


FAMILIES: dict[str, TaskFamily] = {
    **{task: TaskFamily(_benchmark) for task in benchmark_files.GLUE_LAYOUTS},
    "csv": TaskFamily(_delimited(","), "csv"),
    "tsv": TaskFamily(_delimited("\t"), "tsv"),
    "jsonl": TaskFamily(_jsonl, "jsonl"),
    "race": TaskFamily(lambda spec, split, path: multiple_choice.read_race(path), "json", True),
    "multiple_choice_jsonl": TaskFamily(
        lambda spec, split, path: multiple_choice.read_multiple_choice_jsonl(path), "jsonl", True
    ),
}


@dataclasses.dataclass(frozen=True)
class ClassificationTaskSettings:
    """The task: which one, and where and how its files are (TaskSpec's fields)."""

    task_name: str | None = setting(
        None,
        "cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli, chnsenticorp, afqmc; race, "
        "multiple_choice_jsonl; csv, tsv, jsonl.",
    )
    data_dir: str | None = setting(None, "The task's directory (its train/dev/test files).")
    train_file: str | None = setting(
        None, "csv/tsv/jsonl/race tasks: the training file (default DATA_DIR/train.EXT)."
    )
    dev_file: str | None = setting(None, "... the dev file (default DATA_DIR/dev.EXT).")
    test_file: str | None = setting(None, "... the test file (default DATA_DIR/test.EXT).")
    text_a_column: str = setting("text_a", "csv/tsv/jsonl: first text column.")
    text_b_column: str | None = setting(None, "csv/tsv/jsonl: second text column, if any.")
    label_column: str = setting("label", "csv/tsv/jsonl: label column.")
    regression: bool = setting(False, "csv/tsv/jsonl: the label is a number (MSE).")
    num_choices: int = setting(4, "race/multiple_choice_jsonl: choices per question.", minimum=1)
    multi_label: bool = setting(
        False,
        "csv/tsv/jsonl: any number of labels an example (sigmoid + binary cross-entropy; "
        "--threshold, --tune_thresholds), the label column holding them separated by "
        "--label_delimiter (jsonl: or a JSON list).",
    )
    label_delimiter: str = setting(",", "--multi_label: what separates the labels of a cell.")


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
    multi_label: csv/tsv/jsonl: any number of labels an example (`multi_label`: sigmoid
      outputs, thresholds, micro F1 ranks); label_delimiter separates them in a cell.
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
    multi_label: bool = False
    label_delimiter: str = ","

    def __post_init__(self):
        object.__setattr__(self, "name", self.name.lower())
        if self.multi_label and (self.regression or self.name not in ("csv", "tsv", "jsonl")):
            raise ValueError(
                f"--multi_label is for the csv, tsv and jsonl tasks without --regression, "
                f"not task {self.name}{' with --regression' if self.regression else ''}"
            )
        if self.multi_label and not self.label_delimiter:
            raise ValueError("--label_delimiter must not be empty")

    @property
    def family(self) -> TaskFamily:
        """The task's entry in `FAMILIES`; a ValueError naming the known tasks if none."""
        if self.name not in FAMILIES:
            raise ValueError(f"task {self.name!r} is not one of {sorted(FAMILIES)}")
        return FAMILIES[self.name]

    @property
    def user_files(self) -> bool:
        """The user's own files (csv, tsv, jsonl, multiple choice), not a GLUE/Chinese task."""
        return self.family.extension is not None

    @property
    def choices(self) -> int | None:
        """Logits a question for multiple choice; None for (pair) classification."""
        return self.num_choices if self.family.multiple_choice else None

    @property
    def is_regression(self) -> bool:
        if self.user_files:
            return self.regression and not self.choices
        return benchmark_files.is_regression(self.name)

    @property
    def dev_splits(self) -> list[str]:
        """The splits evaluated (mnli: dev_matched and dev_mismatched)."""
        if self.user_files:
            return ["dev"]
        return [s for s in benchmark_files.splits(self.name) if s.startswith("dev")]

    @property
    def metric_task(self) -> str:
        """The `metrics.task_metrics` name: the task's own, else by label kind."""
        if self.user_files:
            return "sts-b" if self.is_regression else "accuracy"
        return self.name

    @property
    def best_metric(self) -> str:
        """The metric that ranks checkpoints (higher is better)."""
        if self.multi_label:
            return "micro_f1"
        if self.user_files:
            return "corr" if self.is_regression else "accuracy"
        return metrics.primary_metric(self.name)

    def source(self, split: str) -> str:
        """The file holding `split` (train, dev, test; mnli also dev_mismatched, ...)."""
        if not self.user_files:
            if not self.data_dir:
                raise ValueError(f"--data_dir is needed for task {self.name}")
            return benchmark_files.task_file(self.data_dir, self.name, split)
        given = getattr(self, f"{split.split('_')[0]}_file")
        if given:
            return given
        if not self.data_dir:
            raise ValueError(f"give --{split}_file or --data_dir for task {self.name}")
        return os.path.join(self.data_dir, f"{split}.{self.family.extension}")

    def read(self, split: str, path: str | None = None) -> list:
        """The examples of `split` (from `path`, default `source(split)`):
        `examples.Example`s, or `examples.MultipleChoiceExample`s for multiple choice."""
        path = path or self.source(split)
        return self.family.read(self, split, path)

    def labels(self) -> list[str] | None:
        """Label names in index order: the task's, or discovered from the user's train
        (else dev) file; None for regression and multiple choice."""
        if self.is_regression or self.choices:
            return None
        if not self.user_files:
            return benchmark_files.label_names(self.name)
        for split in ("train", "dev"):
            path = self.source(split)
            if filesystem.exists(path):
                found = self.read(split, path)
                if self.multi_label:
                    return multi_label.discover_labels(found)
                return user_files.discover_labels(found)
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
            if e.label is None:
                continue
            bad = multi_label.unknown_label(e, known) if self.multi_label else str(e.label)
            if bad is not None and bad not in known:
                raise ValueError(
                    f"{path}:{e.line or '?'}: label {bad!r} is not one of the training labels "
                    f"{labels}"
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
        self,
        labels,
        text_pair: bool,
        max_seq_length: int,
        do_lower_case: bool,
        step: int,
        thresholds: tuple[float, ...] | None = None,
    ) -> dict:
        """The task.json of the exported model (albert_tf.serving): what it predicts and
        how it tokenizes (multi-label: each label's decision threshold, `thresholds`)."""
        multi = {"multi_label": True, "thresholds": thresholds} if self.multi_label else {}
        return {
            **multi,
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
