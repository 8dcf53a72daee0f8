"""The console lines of a long phase that has no progress line of its own (an evaluation
pass, the test file's predictions, an export, a conversion, a teacher's logits): one line
as it starts, saying what it works on, and one as it ends, saying what it wrote and how long
it took, so that minutes of silence read as work, not as a hang. A phase that fails prints
no end line: the error's one line follows its start line."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator


class Phase:
    """What a running phase reports at its end: `wrote(what)` adds a path or a count."""

    def __init__(self):
        self.written: list[str] = []

    def wrote(self, what: str) -> None:
        self.written.append(str(what))


@contextlib.contextmanager
def phase(name: str, log: Callable[[str], None] | None = None) -> Iterator[Phase]:
    """`NAME ...` now, `NAME: done in T[; wrote A, B]` when the block ends without an
    error (T: seconds under 100, else H:MM:SS); to `log` (default: stdout, flushed)."""
    log = log or _print
    log(f"{name} ...")
    start = time.monotonic()
    done = Phase()
    yield done
    wrote = f"; wrote {', '.join(done.written)}" if done.written else ""
    log(f"{name}: done in {took(time.monotonic() - start)}{wrote}")


def _print(line: str) -> None:
    print(line, flush=True)


def took(seconds: float) -> str:
    """`12.3 s` under 100 s, else `H:MM:SS`."""
    if seconds < 100:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"
