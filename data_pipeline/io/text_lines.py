"""A data file's numbered lines and JSON lines, each error one line naming `file:line`:
what the task readers (classification, tagging) and the on-device runner read rows through."""

from __future__ import annotations

import json

from data_pipeline.io import filesystem


def numbered_lines(path: str):
    """(line number, text) of each line, BOM and line end removed; bad UTF-8 → file:line.

    A line ends at LF, CRLF or a bare CR alike (Python's universal newlines without its
    other separators): a file saved with old-Mac CR-only line ends is as many lines as it
    shows in an editor, not one line holding the whole file. A CR is never part of a
    UTF-8 multi-byte sequence and JSON strings cannot hold a raw one, so splitting at it
    never cuts a character or a JSON value."""
    number = 0
    with filesystem.open(path, "rb") as f:
        for index, raw in enumerate(f):
            if index == 0 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(
                    f"{path}:{number + 1}: invalid UTF-8 ({e.reason} at byte {e.start})"
                ) from None
            text = text[:-1] if text.endswith("\n") else text
            text = text[:-1] if text.endswith("\r") else text
            for part in text.split("\r"):
                number += 1
                yield number, part


def json_object(path, number, line) -> dict:
    """The JSON object on line `number` of `path`, or a ValueError naming both."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{number}: invalid JSON ({e.msg})") from None
    except RecursionError:  # (arrays or objects nested too deep for the parser)
        raise ValueError(f"{path}:{number}: JSON nested too deeply to read") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
    return obj
