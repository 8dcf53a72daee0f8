"""A data file's numbered lines and JSON lines, each error one line naming `file:line`:
what the task readers (classification, tagging) and the on-device runner read rows through."""

from __future__ import annotations

import json

from data_pipeline.io import filesystem


def numbered_lines(path: str):
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


def json_object(path, number, line) -> dict:
    """The JSON object on line `number` of `path`, or a ValueError naming both."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{number}: invalid JSON ({e.msg})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
    return obj
