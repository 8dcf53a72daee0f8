"""Multi-label examples: a text with any number of labels (GoEmotions' emotions, topic tags).

A label cell holds the names separated by a delimiter ("anger,joy"; the csv reader has
already undone CSV quoting, so a quoted field may hold the delimiter of the file), or, in
jsonl, a JSON list of names (a string is split like a cell); a cell written as a JSON list
(`["anger", "joy"]`, as some exporters write a TSV) is read as that list, not split. Names
are stripped; an empty list, an empty name ("a,,b") or a repeated name is a ValueError
naming `file:line`, and so is a delimiter that splits no cell of a file whose cells hold
another (`check_delimiter`). The label set is every name the training examples use,
sorted as `user_files.discover_labels` sorts; features carry the labels as a multi-hot
float32 vector [L] in that order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np


def parse_labels(raw, delimiter: str, path: str, line: int) -> tuple[str, ...]:
    """The label names of one cell (`raw`: a string, or a JSON list of strings), in the
    order given; ValueError naming `path:line` for an empty list, an empty or repeated
    name, or a value that is neither."""
    if isinstance(raw, str) and _json_list(raw):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ValueError(
                f"{path}:{line}: labels {raw!r} look like a JSON list but are not one ({e.msg})"
            ) from None
    if isinstance(raw, str):
        names = raw.split(delimiter) if raw.strip() else []
    elif isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        names = raw
    else:
        raise ValueError(f"{path}:{line}: labels {raw!r} are not a string or a list of strings")
    names = [n.strip() for n in names]
    if not names:
        raise ValueError(f"{path}:{line}: empty label list (a multi-label example needs one)")
    if "" in names:
        raise ValueError(f"{path}:{line}: an empty label name in {raw!r} (delimiter {delimiter!r})")
    if len(set(names)) != len(names):
        raise ValueError(f"{path}:{line}: a label is repeated in {raw!r}")
    return tuple(names)


# Delimiters a label cell may hold when --label_delimiter names another (`check_delimiter`).
OTHER_DELIMITERS = (",", ";", "|")


def _json_list(raw: str) -> bool:
    text = raw.strip()
    return text.startswith("[") and text.endswith("]")


def check_delimiter(examples: Sequence, delimiter: str, path: str, column: str) -> None:
    """ValueError (one line naming `path`, the line and `column`) when `delimiter` split no
    label cell of the file while a cell holds another delimiter: then every combination of
    labels ("anger,joy") would silently become a label of its own."""
    if any(e.label is not None and len(e.label) > 1 for e in examples):
        return
    for e in examples:
        for name in e.label or ():
            found = [d for d in OTHER_DELIMITERS if d != delimiter and d in name.strip()]
            if found:
                raise ValueError(
                    f"{path}:{e.line}: {column}: --label_delimiter {delimiter!r} splits no "
                    f"label cell of the file, and {name!r} holds {found[0]!r}: give "
                    f"--label_delimiter {found[0]!r} (or one label a cell)"
                )


def discover_labels(examples: Sequence) -> list[str]:
    """Every label name the examples (label: a tuple of names) use, sorted numerically
    when all are integers, else as strings: the index order of the multi-hot vector."""
    found = {name for e in examples if e.label is not None for name in e.label}
    try:
        return sorted(found, key=int)
    except (TypeError, ValueError):
        return sorted(found, key=str)


def unknown_label(example, known: set) -> str | None:
    """The first of the example's labels not in `known`, or None."""
    return next((name for name in example.label or () if name not in known), None)


def multi_hot(examples: Sequence, labels: Sequence[str]) -> np.ndarray:
    """float32 [N, L]: 1 where example n has label l (unlabeled examples: all zeros)."""
    index = {name: i for i, name in enumerate(labels)}
    out = np.zeros([len(examples), len(labels)], np.float32)
    for n, e in enumerate(examples):
        for name in e.label or ():
            out[n, index[name]] = 1.0
    return out
