"""A teacher's outputs by example (`--teacher_logits_file`): distillation from any model,
whatever framework computed them (albert_tf.tools.hf_teacher_logits writes one from a
Hugging Face sequence classifier).

JSON lines, UTF-8:

    {"labels": ["negative", "positive"]}                 line 1: the outputs' order
    {"id": "17", "logits": [-1.2, 0.8]}                  then one example a line,
    {"text": "a gripping film", "probabilities": [0.1, 0.9]}
    {"text": "a premise", "text_pair": "a hypothesis", "logits": [...]}

An example is named by its id — its guid, as prediction files name it (the data file's id
column, GLUE's "<split>-<index>", else "row-<0-based row>"; unlabelled text:
"unlabelled-<0-based line>"), or for a labelled example the number ending it — or by its
text (and second text for a pair task), labelled and unlabelled examples alike. `logits`
are taken as they are; `probabilities` as their logarithms (logits up to a constant, which
the softmax ignores; a 0 is taken as 1e-30). The labels must be the task's in its order;
a missing example, a duplicate, a row of another width, or a value that is not a finite
number is one ValueError naming the flag, the file and the line.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from data_pipeline.io import filesystem

FLAG = "--teacher_logits_file"
FLOOR = 1e-30  # the smallest probability taken (log: -69)


@dataclasses.dataclass(frozen=True)
class TeacherLogits:
    """The file's rows: by id and by (text, text_pair), each (line, float32 [labels])."""

    path: str
    labels: tuple[str, ...]
    by_id: dict
    by_text: dict

    def logits_for(self, examples) -> np.ndarray:
        """float32 [len(examples), labels]: each example's row (by id, else by text)."""
        out = np.zeros((len(examples), len(self.labels)), np.float32)
        for i, e in enumerate(examples):
            number = example_number(e) if e.label is not None else None  # (labelled only)
            row = self.by_id.get(e.guid) or self.by_id.get(number)
            row = row or self.by_text.get((e.text_a, e.text_b))
            if row is None:
                where = f" (line {e.line} of its file)" if e.line else ""
                raise ValueError(
                    f"{FLAG}={self.path}: no logits for example {e.guid}{where}: give a line "
                    f'with its "id" {e.guid!r} or its "text" {e.text_a[:40]!r}'
                )
            out[i] = row[1]
        return out


def example_number(example) -> str | None:
    """The number an "id" may name instead of the whole guid: "train-17", "row-17" → "17"."""
    prefix, _, number = example.guid.rpartition("-")
    return number if prefix and number.isdigit() else None


def read_teacher_logits(path: str, labels) -> TeacherLogits:
    """The file at `path`, checked against the task's `labels` (module docstring)."""
    if not filesystem.isfile(path):
        raise ValueError(f"{FLAG}={path}: no such file")
    from data_pipeline.io.text_lines import json_object, numbered_lines

    by_id, by_text, header = {}, {}, None
    try:
        rows = [(n, json_object(path, n, line)) for n, line in numbered_lines(path) if line.strip()]
    except ValueError as e:  # (file:line of bad UTF-8 or JSON)
        raise ValueError(f"{FLAG}={e}") from None
    for n, row in rows:
        where = f"{FLAG}={path}:{n}"
        if header is None:
            header = _labels(row, labels, where)
            continue
        values = _values(row, len(header), where)
        key, table = _key(row, where, by_id, by_text)
        if key in table:
            raise ValueError(f"{where}: {key!r} again (line {table[key][0]})")
        table[key] = (n, values)
    if header is None:
        raise ValueError(f"{FLAG}={path}: empty (line 1 names the labels)")
    return TeacherLogits(path, header, by_id, by_text)


def _labels(row: dict, labels, where: str) -> tuple[str, ...]:
    given = row.get("labels")
    if not isinstance(given, list) or set(row) != {"labels"}:
        raise ValueError(f'{where}: the first line is {{"labels": [...]}}, the outputs\' order')
    if labels is None or [str(x) for x in given] != list(labels):
        raise ValueError(f"{where}: labels {given} are not the task's {list(labels or [])}")
    return tuple(str(x) for x in given)


def _values(row: dict, width: int, where: str) -> np.ndarray:
    kinds = [k for k in ("logits", "probabilities") if k in row]
    if len(kinds) != 1:
        raise ValueError(f'{where}: give "logits" or "probabilities" (one of them)')
    values = row[kinds[0]]
    if not isinstance(values, list) or not all(_finite(v) for v in values):
        raise ValueError(f"{where}: {kinds[0]} must be a list of finite numbers")
    if len(values) != width:
        raise ValueError(f"{where}: {len(values)} {kinds[0]}, the task has {width} labels")
    if kinds[0] == "probabilities":
        if not all(0 <= v <= 1 for v in values):
            raise ValueError(f"{where}: probabilities must be in [0, 1]")
        return np.log(np.maximum(np.asarray(values, np.float64), FLOOR)).astype(np.float32)
    return np.asarray(values, np.float32)


def _key(row: dict, where: str, by_id: dict, by_text: dict):
    if "id" in row:
        return str(row["id"]), by_id
    if isinstance(row.get("text"), str):
        pair = row.get("text_pair")
        if pair is not None and not isinstance(pair, str):
            raise ValueError(f'{where}: "text_pair" must be a string')
        return (row["text"], pair), by_text
    raise ValueError(f'{where}: name the example by "id" or "text"')


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
