"""The GLUE and Chinese benchmark tasks in their original file layouts: which columns each
split's file has, its header, its labels, and the reader that checks them row by row.

GLUE files are read as the official GLUE/ALBERT code reads them: tab-separated with
`csv.QUOTE_NONE`, i.e. split on tabs and nothing else. A double quote is text, never a
field quote: MRPC, RTE and STS-B have sentences that open a quote and close it on another
row (`"The foodservice pie business ...` in MRPC dev), and a quoting reader would glue
rows together. Layouts per task and split (`GLUE_LAYOUTS`) are checked row by row:
  cola   train/dev: no header; source, label, original label, sentence.  test: `index sentence`
  sst-2  `sentence label`;  test `index sentence`
  mrpc   UTF-8 BOM; `Quality #1 ID #2 ID #1 String #2 String`; test: `index` for `Quality`
  sts-b  ten columns `index genre filename year old_index source1 source2 sentence1
         sentence2 score`, score a float 0-5;  test: nine (no score)
  qqp    `id qid1 qid2 question1 question2 is_duplicate`;  test `id question1 question2`
  mnli   train 12 columns, dev_matched/dev_mismatched 16, test_* 10; sentence1/2 in
         columns 8/9, gold label last
  qnli, rte, wnli   `index <text a> <text b> label`;  test without label
Chinese: ChnSentiCorp `text<TAB>label` (no header; labels negative/positive; test has a
`qid text_a` header), AFQMC `s1<TAB>s2<TAB>label` (no header; test has no label column).

Every malformed row (wrong number of columns, a label outside the task's list, a score that
is not a number, invalid UTF-8) raises ValueError naming `file:line`; a file without
examples raises too.
"""

from __future__ import annotations

import dataclasses
import os

from data_pipeline.classification.examples import Example
from data_pipeline.io.text_lines import numbered_lines

REGRESSION_TASKS = ("sts-b",)

_LABELS = {
    "mnli": ("contradiction", "entailment", "neutral"),
    "rte": ("entailment", "not_entailment"),
    "qnli": ("entailment", "not_entailment"),
    "chnsenticorp": ("negative", "positive"),
}
_BINARY = ("0", "1")


@dataclasses.dataclass(frozen=True)
class _Layout:
    header: tuple[str, ...] | None  # expected header (None: the file has none)
    columns: int
    text_a: int
    text_b: int | None
    label: int | None
    guid: int | None = None  # column holding the row's id, if any


def _pair_layout(header, label=True):
    cols = ("index",) + tuple(header) + (("label",) if label else ())
    return _Layout(cols, len(cols), 1, 2, 3 if label else None, 0)


GLUE_LAYOUTS: dict[str, dict[str, _Layout]] = {
    "cola": {
        "train": _Layout(None, 4, 3, None, 1),
        "dev": _Layout(None, 4, 3, None, 1),
        "test": _Layout(("index", "sentence"), 2, 1, None, None, 0),
    },
    "sst-2": {
        "train": _Layout(("sentence", "label"), 2, 0, None, 1),
        "dev": _Layout(("sentence", "label"), 2, 0, None, 1),
        "test": _Layout(("index", "sentence"), 2, 1, None, None, 0),
    },
    "mrpc": {
        s: _Layout(("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"), 5, 3, 4, 0)
        for s in ("train", "dev")
    }
    | {"test": _Layout(("index", "#1 ID", "#2 ID", "#1 String", "#2 String"), 5, 3, 4, None, 0)},
    "sts-b": {
        s: _Layout(
            (
                "index",
                "genre",
                "filename",
                "year",
                "old_index",
                "source1",
                "source2",
                "sentence1",
                "sentence2",
                "score",
            ),
            10,
            7,
            8,
            9,
            0,
        )
        for s in ("train", "dev")
    }
    | {
        "test": _Layout(
            (
                "index",
                "genre",
                "filename",
                "year",
                "old_index",
                "source1",
                "source2",
                "sentence1",
                "sentence2",
            ),
            9,
            7,
            8,
            None,
            0,
        )
    },
    "qqp": {
        s: _Layout(("id", "qid1", "qid2", "question1", "question2", "is_duplicate"), 6, 3, 4, 5, 0)
        for s in ("train", "dev")
    }
    | {"test": _Layout(("id", "question1", "question2"), 3, 1, 2, None, 0)},
    "mnli": {
        "train": _Layout(None, 12, 8, 9, 11, 0),
        "dev_matched": _Layout(None, 16, 8, 9, 15, 0),
        "dev_mismatched": _Layout(None, 16, 8, 9, 15, 0),
        "test_matched": _Layout(None, 10, 8, 9, None, 0),
        "test_mismatched": _Layout(None, 10, 8, 9, None, 0),
    },
    "qnli": {
        "train": _pair_layout(("question", "sentence")),
        "dev": _pair_layout(("question", "sentence")),
        "test": _pair_layout(("question", "sentence"), label=False),
    },
    "rte": {
        "train": _pair_layout(("sentence1", "sentence2")),
        "dev": _pair_layout(("sentence1", "sentence2")),
        "test": _pair_layout(("sentence1", "sentence2"), label=False),
    },
    "wnli": {
        "train": _pair_layout(("sentence1", "sentence2")),
        "dev": _pair_layout(("sentence1", "sentence2")),
        "test": _pair_layout(("sentence1", "sentence2"), label=False),
    },
    "chnsenticorp": {
        "train": _Layout(None, 2, 0, None, 1),
        "dev": _Layout(None, 2, 0, None, 1),
        "test": _Layout(("qid", "text_a"), 2, 1, None, None, 0),
    },
    "afqmc": {
        "train": _Layout(None, 3, 0, 1, 2),
        "dev": _Layout(None, 3, 0, 1, 2),
        "test": _Layout(None, 2, 0, 1, None),
    },
}
# MNLI's header is long (parse trees, label1..label5); only its first column is checked.
_MNLI_FIRST = "index"

_FILE_NAMES = {"afqmc": "{split}.txt"}


def label_names(task_name: str) -> list[str] | None:
    """The task's labels in index order (GLUE's order); None for regression (sts-b)."""
    task = _task(task_name)
    if task in REGRESSION_TASKS:
        return None
    return list(_LABELS.get(task, _BINARY))


def is_regression(task_name: str) -> bool:
    return _task(task_name) in REGRESSION_TASKS


def splits(task_name: str) -> list[str]:
    """The split names a task's files have (mnli: dev_matched, dev_mismatched, ...)."""
    return list(GLUE_LAYOUTS[_task(task_name)])


def _task(task_name: str) -> str:
    task = task_name.lower()
    if task not in GLUE_LAYOUTS:
        raise ValueError(f"task {task_name!r} is not one of {sorted(GLUE_LAYOUTS)}")
    return task


def task_file(data_dir: str, task_name: str, split: str) -> str:
    """The file of `split` in a task's data directory (`dev` means `dev_matched` for mnli)."""
    task = _task(task_name)
    split = _split(task, split)
    return os.path.join(data_dir, _FILE_NAMES.get(task, "{split}.tsv").format(split=split))


def _split(task: str, split: str) -> str:
    if task == "mnli" and split in ("dev", "test"):
        split += "_matched"
    if split not in GLUE_LAYOUTS[task]:
        raise ValueError(
            f"split {split!r} is not one of {list(GLUE_LAYOUTS[task])} for task {task!r}"
        )
    return split


def read_task(data_dir: str, task_name: str, split: str) -> list[Example]:
    """Examples of `split` ("train", "dev", "test"; mnli also "dev_mismatched",
    "test_mismatched") of a GLUE or Chinese task from `data_dir`."""
    return read_task_file(task_file(data_dir, task_name, split), task_name, split)


def read_task_file(path: str, task_name: str, split: str) -> list[Example]:
    """Examples from one file in the task's original layout (module docstring)."""
    task = _task(task_name)
    split = _split(task, split)
    layout = GLUE_LAYOUTS[task][split]
    labels = None if task in REGRESSION_TASKS else set(label_names(task))
    has_header = layout.header is not None or task == "mnli"
    examples = []
    for number, line in numbered_lines(path):
        if not line.strip() and number > 1:
            continue  # a blank line (e.g. a trailing one) carries no example
        fields = line.split("\t")
        if has_header and not examples and number == 1:
            _check_header(path, task, split, layout, fields)
            continue
        if len(fields) != layout.columns:
            raise ValueError(
                f"{path}:{number}: {len(fields)} tab-separated fields, expected "
                f"{layout.columns} for {task} {split}"
            )
        label = None
        if layout.label is not None:
            label = fields[layout.label].strip()
            if labels is None:
                label = _score(path, number, label)
            elif label not in labels:
                raise ValueError(
                    f"{path}:{number}: label {label!r} is not one of {label_names(task)} for {task}"
                )
        n = fields[layout.guid] if layout.guid is not None else str(len(examples))
        text_b = fields[layout.text_b] if layout.text_b is not None else None
        examples.append(Example(f"{split}-{n}", fields[layout.text_a], text_b, label, number))
    if not examples:
        raise ValueError(f"{path}: no examples (the file is empty or has only a header)")
    return examples


def _check_header(path, task, split, layout, fields):
    if task == "mnli":
        if fields[0] != _MNLI_FIRST or len(fields) != layout.columns:
            raise ValueError(
                f"{path}:1: header has {len(fields)} columns starting "
                f"{fields[0]!r}; expected {layout.columns} starting "
                f"{_MNLI_FIRST!r} for mnli {split}"
            )
        return
    if tuple(f.strip() for f in fields) != layout.header:
        raise ValueError(
            f"{path}:1: header {fields} is not the {task} {split} header {list(layout.header)}"
        )


def _score(path, number, text) -> float:
    try:
        score = float(text)
    except ValueError:
        raise ValueError(f"{path}:{number}: score {text!r} is not a number") from None
    if not 0.0 <= score <= 5.0:
        raise ValueError(f"{path}:{number}: score {score} is outside [0, 5]")
    return score
