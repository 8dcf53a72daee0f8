"""Atomic file writes: the one way this project writes a file that another run, a reader
or a resumed job may look at.

A file is written under a temporary name beside its target (same filesystem, so the
rename is atomic), flushed and fsynced, then renamed over the target. A crash, a kill or
an exception leaves the previous file (or none) — never a half-written one — and the
temporary file is removed when Python gets the chance.
"""

from __future__ import annotations

import contextlib
import json
import os


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "w", encoding: str | None = "utf-8", **open_kwargs):
    """`open(path, mode, ...)` that becomes visible at `path` only when the block
    completes."""
    binary = "b" in mode
    tmp = f"{path}.tmp{os.getpid()}"
    f = open(tmp, mode, encoding=None if binary else encoding, **open_kwargs)
    try:
        yield f
        f.flush()
        os.fsync(f.fileno())
        f.close()
        os.replace(tmp, path)
    except BaseException:
        f.close()
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def write_text(path: str, text: str) -> None:
    with atomic_open(path) as f:
        f.write(text)


def write_json(path: str, obj, indent: int | None = 1, sort_keys: bool = True, default=str) -> None:
    """`obj` as JSON (with a final newline) at `path`, atomically."""
    with atomic_open(path) as f:
        json.dump(obj, f, indent=indent, sort_keys=sort_keys, default=default)
        f.write("\n")
