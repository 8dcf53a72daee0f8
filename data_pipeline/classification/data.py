"""Readers for fine-tuning data: GLUE TSVs, Chinese CLUE-style files, the user's own
csv/tsv/jsonl, and RACE-style multiple choice. They turn raw files into examples; the
runner never parses a raw file itself.

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

The user's own data (`read_delimited`, `read_jsonl`): a header row names the columns;
csv uses proper CSV quoting (a quoted field may hold commas, quotes as "" and newlines),
tsv is split on tabs only, as GLUE. Labels are kept as strings (discover them with
`discover_labels`) or parsed as floats with `regression=True`.

Every malformed row (wrong number of columns, a label outside the task's list, a score
that is not a number, invalid UTF-8, a missing JSON key) raises ValueError naming
`file:line`; a file without examples raises too.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
from collections.abc import Sequence

from data_pipeline.io import filesystem

GLUE_TASKS = ("cola", "sst-2", "mrpc", "sts-b", "qqp", "mnli", "qnli", "rte", "wnli")
CHINESE_TASKS = ("chnsenticorp", "afqmc")
REGRESSION_TASKS = ("sts-b",)

_LABELS = {
    "mnli": ("contradiction", "entailment", "neutral"),
    "rte": ("entailment", "not_entailment"),
    "qnli": ("entailment", "not_entailment"),
    "chnsenticorp": ("negative", "positive"),
}
_BINARY = ("0", "1")


@dataclasses.dataclass(frozen=True)
class Example:
    """One classification/regression example.

    guid: "<split>-<n>": n is the file's index/id column where there is one (GLUE test
      predictions are submitted by it), else the 0-based row number.
    text_a, text_b: the texts (text_b None for single-sentence tasks).
    label: a label name (str), a float score (regression), or None (test files).
    line: the line of the file where the example starts (for error messages; None: not
      read from a file). Not part of the example's value (equality ignores it).
    """

    guid: str
    text_a: str
    text_b: str | None
    label: str | float | None
    line: int | None = dataclasses.field(default=None, compare=False)


def choice_text(question: str, option: str) -> str:
    """The second sequence of one option (official RACE code): the question with its "_"
    blank filled by the option, else the question and the option joined by a space."""
    return question.replace("_", option) if "_" in question else f"{question} {option}"


@dataclasses.dataclass(frozen=True)
class MultipleChoiceExample:
    """One multiple-choice question (RACE): `[CLS] context [SEP] question + option [SEP]`
    per option, one logit each.

    options: the choices as the data gives them (RACE has questions with 2 or 3 options;
      the feature writer pads to a fixed count). label: index into options, or None.
    level: "middle" / "high" where the data says (RACE ids or directories), else None.
    """

    guid: str
    context: str
    question: str
    options: tuple[str, ...]
    label: int | None
    level: str | None = None


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


def _lines(path: str):
    """(line number, text) of each line, BOM and line end removed; bad UTF-8 → file:line."""
    with filesystem.open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(
                    f"{path}:{number}: invalid UTF-8 ({e.reason} at byte {e.start})"
                ) from None
            yield number, text.rstrip("\r\n")


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
    for number, line in _lines(path):
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


# --- the user's own data ------------------------------------------------------------------


def read_delimited(
    path: str,
    text_a_column: str,
    text_b_column: str | None = None,
    label_column: str | None = None,
    delimiter: str = ",",
    regression: bool = False,
    unlabeled: bool = False,
) -> list[Example]:
    """Examples from a csv (delimiter ",", CSV quoting) or tsv (delimiter "\\t", split on
    tabs only, as GLUE) file whose first row names the columns.

    Args:
      text_a_column, text_b_column, label_column: header names; text_b and label optional
        (no label column: labels are None, as for test files).
      regression: labels are parsed as floats.
      unlabeled: a header without `label_column` is a file without labels (test files),
        not an error.
    """
    with filesystem.open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: invalid UTF-8 ({e.reason})") from None
    if delimiter == "\t":
        reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows = _numbered_rows(path, reader)
    try:
        _, header = next(rows)
    except StopIteration:
        raise ValueError(f"{path}: empty file (expected a header row)") from None
    header = [h.strip() for h in header]
    wanted = [
        ("text_a_column", text_a_column),
        ("text_b_column", text_b_column),
        ("label_column", label_column),
    ]
    index = {}
    for flag, name in wanted:
        if name is None:
            continue
        if name not in header:
            if flag == "label_column" and unlabeled:
                continue
            raise ValueError(f"{path}:1: {flag}={name!r} is not a column; the header has {header}")
        index[flag] = header.index(name)
    examples = []
    for number, fields in rows:
        if not fields or fields == [""]:
            continue
        if len(fields) != len(header):
            raise ValueError(
                f"{path}:{number}: {len(fields)} fields, expected {len(header)} as in the header"
            )
        examples.append(_make_example(path, number, len(examples), fields, index, regression))
    if not examples:
        raise ValueError(f"{path}: no examples (only a header)")
    return examples


def _numbered_rows(path, reader):
    """(first line number, fields) of each csv record; csv errors → file:line."""
    start = 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise ValueError(f"{path}:{reader.line_num}: malformed CSV ({e})") from None
        yield start, fields
        start = reader.line_num + 1


def _make_example(path, number, n, values, index, regression):
    label = None
    if "label_column" in index:
        raw = values[index["label_column"]]
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            raise ValueError(f"{path}:{number}: empty label")
        if regression:
            try:
                label = float(raw)
            except (TypeError, ValueError):
                raise ValueError(
                    f"{path}:{number}: label {raw!r} is not a number (regression)"
                ) from None
        else:
            label = str(raw).strip()
    texts = []
    for flag in ("text_a_column", "text_b_column"):
        if flag not in index:
            texts.append(None)
            continue
        value = values[index[flag]]
        if not isinstance(value, str):
            raise ValueError(f"{path}:{number}: {flag} value {value!r} is not a string")
        texts.append(value)
    return Example(f"row-{n}", texts[0], texts[1], label, number)


def read_jsonl(
    path: str,
    text_a_column: str,
    text_b_column: str | None = None,
    label_column: str | None = None,
    regression: bool = False,
) -> list[Example]:
    """Examples from JSON lines, one object a line; the columns are its keys."""
    index = {
        flag: name
        for flag, name in (
            ("text_a_column", text_a_column),
            ("text_b_column", text_b_column),
            ("label_column", label_column),
        )
        if name is not None
    }
    examples = []
    for number, line in _lines(path):
        if not line.strip():
            continue
        obj = json_object(path, number, line)
        for flag, name in index.items():
            if name not in obj:
                raise ValueError(
                    f"{path}:{number}: {flag}={name!r} is not a key; the object has {sorted(obj)}"
                )
        examples.append(_make_example(path, number, len(examples), obj, index, regression))
    if not examples:
        raise ValueError(f"{path}: no examples (the file is empty)")
    return examples


def json_object(path, number, line) -> dict:
    """The JSON object on line `number` of `path`, or a ValueError naming both."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{number}: invalid JSON ({e.msg})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
    return obj


def discover_labels(examples: Sequence[Example]) -> list[str]:
    """The distinct labels of (training) examples, sorted: numerically when all are
    integers ("2" before "10"), else as strings. The order is the label index order."""
    found = {e.label for e in examples if e.label is not None}
    try:
        return sorted(found, key=int)
    except (TypeError, ValueError):
        return sorted(found, key=str)


# --- multiple choice ----------------------------------------------------------------------


def _answer_index(path, where, answer, options) -> int:
    if isinstance(answer, str) and len(answer) == 1 and "A" <= answer <= "Z":
        index = ord(answer) - ord("A")
    elif isinstance(answer, int) and not isinstance(answer, bool):
        index = answer
    else:
        raise ValueError(f"{path}: {where}: answer {answer!r} is not a letter A.. or an index")
    if not 0 <= index < len(options):
        raise ValueError(f"{path}: {where}: answer {answer!r} but only {len(options)} options")
    return index


def _level(article_id: str, path: str) -> str | None:
    for source in (str(article_id), *reversed(os.path.normpath(path).split(os.sep))):
        for level in ("middle", "high"):
            if source.lower().startswith(level):
                return level
    return None


def read_race(path: str) -> list[MultipleChoiceExample]:
    """RACE questions from `path`: the ExpMRC layout `{"data": [article, ...]}` or one
    original RACE article file. Each article has `article`, `questions`, `options` (a list
    per question) and `answers` ("A".."D") and `id`.

    level: "middle"/"high" from the id ("high1234.txt", original RACE) or a directory
    named middle/high; None otherwise (ExpMRC ids are hex digests and do not say).
    """
    with filesystem.open(path) as f:
        try:
            obj = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
    articles = obj["data"] if isinstance(obj, dict) and "data" in obj else [obj]
    examples = []
    for a, article in enumerate(articles):
        where = f"article {a}"
        for key in ("article", "questions", "options", "answers"):
            if key not in article:
                raise ValueError(f"{path}: {where}: missing key {key!r}")
        questions, options, answers = (article["questions"], article["options"], article["answers"])
        if not len(questions) == len(options) == len(answers):
            raise ValueError(
                f"{path}: {where}: {len(questions)} questions, "
                f"{len(options)} option lists, {len(answers)} answers; "
                f"expected equal counts"
            )
        article_id = str(article.get("id", a))
        level = _level(article_id, path)
        for q, (question, opts, answer) in enumerate(zip(questions, options, answers)):
            if len(opts) < 2:
                raise ValueError(
                    f"{path}: {where} question {q}: {len(opts)} options; expected at least 2"
                )
            label = _answer_index(path, f"{where} question {q}", answer, opts)
            examples.append(
                MultipleChoiceExample(
                    f"{article_id}-{q}", article["article"], question, tuple(opts), label, level
                )
            )
    if not examples:
        raise ValueError(f"{path}: no questions")
    return examples


def read_multiple_choice_jsonl(path: str) -> list[MultipleChoiceExample]:
    """The user's multiple choice: one JSON object a line with `context` (or `article`),
    `question`, `options` (a list) and optionally `label` (index or letter) and `level`."""
    examples = []
    for number, line in _lines(path):
        if not line.strip():
            continue
        obj = json_object(path, number, line)
        context = obj.get("context", obj.get("article"))
        if context is None or "question" not in obj or "options" not in obj:
            raise ValueError(
                f"{path}:{number}: expected keys context (or article), "
                f"question, options; got {sorted(obj)}"
            )
        opts = obj["options"]
        if not isinstance(opts, list) or len(opts) < 2:
            raise ValueError(f"{path}:{number}: options must be a list of at least 2")
        label = None
        if obj.get("label") is not None:
            label = _answer_index(path, f"line {number}", obj["label"], opts)
        examples.append(
            MultipleChoiceExample(
                str(obj.get("id", f"row-{len(examples)}")),
                context,
                obj["question"],
                tuple(opts),
                label,
                obj.get("level"),
            )
        )
    if not examples:
        raise ValueError(f"{path}: no examples (the file is empty)")
    return examples
