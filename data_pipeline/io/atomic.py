"""Atomic file writes: the one way this project writes a file that another run, a reader
or a resumed job may look at.

A file is written under a temporary name beside its target (same filesystem, so the
rename is atomic), flushed and fsynced, then renamed over the target. A crash, a kill or
an exception leaves the previous file (or none) — never a half-written one — and the
temporary file is removed when Python gets the chance.

Nothing is written through a symbolic link planted in the output directory: the temporary
file is created new (`filesystem.open_new`: O_EXCL | O_NOFOLLOW), the rename replaces a link
at the target instead of following it, and `append_text` opens with O_NOFOLLOW.
A write that fails (a full disk) is an OSError naming the file being written.

Output-directory locks live in `data_pipeline.io.locks`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os

from data_pipeline.io import filesystem


@contextlib.contextmanager
def naming(path: str):
    """An OSError without a file name raised in the block (a write or an fsync failing:
    ENOSPC, EIO, EFBIG) gets `path`, so its one-line message says which file it was."""
    try:
        yield
    except OSError as e:
        if e.filename is not None or e.errno is None:
            raise
        raise OSError(e.errno, e.strerror, path) from None


def write_failure(error: OSError, path: str, kept: str) -> OSError:
    """A failed write of `path` (`error`: ENOSPC, EFBIG, EIO, ...) as an OSError whose one
    argument is its whole line: "cannot write PATH: REASON; KEPT". Made for pipeline
    runners that re-raise a step's error as its type with the step's name appended to its
    first argument (Apache Beam): an OSError(errno, strerror, filename) has a number
    there, so Beam turned it into a RuntimeError naming no file, which no command expects
    (two tracebacks)."""
    reason = error.strerror or str(error) or type(error).__name__
    return OSError(f"cannot write {path}: {reason}; {kept}")


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "w", encoding: str | None = "utf-8", **open_kwargs):
    """`open(path, mode, ...)` that becomes visible at `path` only when the block
    completes. `path` may be a URL (`data_pipeline.io.filesystem`): the temporary object is
    renamed over the target with overwrite, which is atomic on ram:// and, on object stores
    such as GCS, a copy of one whole object (readers see the old or the new one).
    `open_kwargs` (e.g. `newline`) apply to local text files."""
    binary = "b" in mode
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files ('w' or 'wb'), not mode {mode!r}")
    tmp = f"{path}.tmp{os.getpid()}"
    remote = filesystem.is_url(path)
    if binary or remote or not open_kwargs:
        f = filesystem.open_new(tmp, mode, encoding=encoding)
    else:  # text options: the new binary file wrapped with them
        import io

        raw = filesystem.open_new(tmp, "wb")
        f = io.TextIOWrapper(raw, encoding=encoding, **open_kwargs)
    try:
        yield f
        with naming(path):
            f.flush()
            if not remote:  # object stores make an object durable when it is closed
                os.fsync(f.fileno())
            f.close()
        filesystem.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            f.close()
        with contextlib.suppress(OSError):
            filesystem.remove(tmp)
        raise


def write_text(path: str, text: str) -> None:
    with atomic_open(path) as f, naming(path):
        f.write(text)


def json_text(obj, indent: int | None = 1, sort_keys: bool = True, default=str) -> str:
    """What `write_json` writes: `obj` as JSON with a final newline."""
    return json.dumps(obj, indent=indent, sort_keys=sort_keys, default=default) + "\n"


def write_json(path: str, obj, indent: int | None = 1, sort_keys: bool = True, default=str) -> None:
    """`obj` as JSON (with a final newline) at `path`, atomically."""
    write_text(path, json_text(obj, indent, sort_keys, default))


_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


def append_text(path: str, text: str) -> None:
    """Appends `text` to `path` (created if missing). A symbolic link at `path` is refused,
    never appended through. Object stores cannot append, so on URLs the file is read and
    written again whole (atomically); meant for small logs such as metrics.jsonl."""
    if filesystem.is_url(path):
        old = filesystem.read_text(path) if filesystem.exists(path) else ""
        write_text(path, old + text)
        return
    try:
        fd = os.open(path, _APPEND, 0o666)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise OSError(
                errno.ELOOP, "is a symbolic link: refusing to append through it", path
            ) from None
        raise
    with naming(path), os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(text)
