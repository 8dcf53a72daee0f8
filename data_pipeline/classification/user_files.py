"""The user's own classification files: csv, tsv and jsonl whose columns (or keys) the flags
name, and the labels they use.

A header row names the columns; csv uses proper CSV quoting (a quoted field may hold commas,
quotes as "" and newlines), tsv is split on tabs only, as GLUE. Labels are kept as strings
(discover them with `discover_labels`) or parsed as floats with `regression=True`. Every
malformed row (wrong number of columns, a malformed CSV quote, invalid UTF-8 or JSON, a
missing key, an empty or non-numeric label) raises ValueError naming `file:line`; a file
without examples raises too.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from data_pipeline.classification.examples import Example
from data_pipeline.classification.multi_label import check_delimiter, parse_labels
from data_pipeline.io import filesystem
from data_pipeline.io.text_lines import json_object, numbered_lines

# A column (or key) of this name is the examples' own id: prediction files keep it
# ("guid"; GLUE's TSV "index"), where examples without one are numbered "row-N".
ID_COLUMN = "id"


def read_delimited(
    path: str,
    text_a_column: str,
    text_b_column: str | None = None,
    label_column: str | None = None,
    delimiter: str = ",",
    regression: bool = False,
    unlabeled: bool = False,
    label_delimiter: str | None = None,
) -> list[Example]:
    """Examples from a csv (delimiter ",", CSV quoting) or tsv (delimiter "\\t", split on
    tabs only, as GLUE) file whose first row names the columns.

    Args:
      text_a_column, text_b_column, label_column: header names; text_b and label optional
        (no label column: labels are None, as for test files).
      regression: labels are parsed as floats.
      unlabeled: a header without `label_column` is a file without labels (test files),
        not an error.
      label_delimiter: multi-label: the label cell holds names separated by it, read by
        `multi_label.parse_labels` into a tuple (None: one label a row).
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
    if ID_COLUMN in header and ID_COLUMN not in (text_a_column, text_b_column, label_column):
        index["id"] = header.index(ID_COLUMN)
    examples = []
    for number, fields in rows:
        if not fields or fields == [""]:
            continue
        if len(fields) != len(header):
            raise ValueError(
                f"{path}:{number}: {len(fields)} fields, expected {len(header)} as in the header"
            )
        examples.append(
            _make_example(path, number, len(examples), fields, index, regression, label_delimiter)
        )
    if not examples:
        raise ValueError(f"{path}: no examples (only a header)")
    if label_delimiter is not None and "label_column" in index:
        check_delimiter(examples, label_delimiter, path, f"label_column={label_column!r}")
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


def _make_example(path, number, n, values, index, regression, label_delimiter=None):
    label = None
    if "label_column" in index and label_delimiter is not None:
        label = parse_labels(values[index["label_column"]], label_delimiter, path, number)
    elif "label_column" in index:
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
        elif isinstance(raw, (list, dict)):
            raise ValueError(f"{path}:{number}: label {raw!r} is not a single label")
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
    given = values[index["id"]] if "id" in index else None
    guid = str(given).strip() if given is not None and str(given).strip() else f"row-{n}"
    return Example(guid, texts[0], texts[1], label, number)


def read_jsonl(
    path: str,
    text_a_column: str,
    text_b_column: str | None = None,
    label_column: str | None = None,
    regression: bool = False,
    label_delimiter: str | None = None,
) -> list[Example]:
    """Examples from JSON lines, one object a line; the columns are its keys (multi-label,
    `label_delimiter` given: the label is a JSON list of names, or names delimited)."""
    index = {
        flag: name
        for flag, name in (
            ("text_a_column", text_a_column),
            ("text_b_column", text_b_column),
            ("label_column", label_column),
        )
        if name is not None
    }
    used = set(index.values())
    examples = []
    for number, line in numbered_lines(path):
        if not line.strip():
            continue
        obj = json_object(path, number, line)
        for flag, name in index.items():
            if name not in obj:
                raise ValueError(
                    f"{path}:{number}: {flag}={name!r} is not a key; the object has {sorted(obj)}"
                )
        own = dict(index, id=ID_COLUMN) if ID_COLUMN in obj and ID_COLUMN not in used else index
        examples.append(
            _make_example(path, number, len(examples), obj, own, regression, label_delimiter)
        )
    if not examples:
        raise ValueError(f"{path}: no examples (the file is empty)")
    if label_delimiter is not None and "label_column" in index:
        check_delimiter(examples, label_delimiter, path, f"label_column={label_column!r}")
    return examples


def discover_labels(examples: Sequence[Example]) -> list[str]:
    """The distinct labels of (training) examples, sorted: numerically when all are
    integers ("2" before "10"), else as strings. The order is the label index order."""
    found = {e.label for e in examples if e.label is not None}
    try:
        return sorted(found, key=int)
    except (TypeError, ValueError):
        return sorted(found, key=str)
