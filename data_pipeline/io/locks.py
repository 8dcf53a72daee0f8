"""Exclusive output-directory locks: one writer per output directory. A second writer
fails at once with a message naming the first (`output_lock`, `hold_output_lock`).

The lock file is never followed through a symbolic link: a `.lock` planted as a link (to a
file anywhere) is refused with one line, and nothing it points to is read or written.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import datetime
import errno
import json
import os
import shlex
import socket
import stat
import sys
import threading
import time

from data_pipeline.io import filesystem

try:
    import fcntl
except ImportError:  # not POSIX: output directories are not locked
    fcntl = None

LOCK_NAME = ".lock"
_UNLOCKABLE = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


class OutputLocked(OSError):
    """Another writer holds the directory's lock. The message is one line naming the
    directory and the holder; `holder` is what the holder recorded (None if unreadable)."""

    def __init__(self, message: str, *, directory: str = "", holder: dict | None = None):
        super().__init__(message)
        self.directory = directory
        self.holder = holder


@dataclasses.dataclass
class _Held:
    fd: int | None  # None: the file system cannot lock (a warning was printed)
    count: int
    pid: int  # the process that took it (a forked child inherits it but never removes it)
    path: str
    created: list[str]  # directories the lock created, deepest first


# Never through a symbolic link; O_NONBLOCK: a FIFO planted as the lock file does not block
# the open (it is then refused as not a regular file).
_SAFE = os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | _SAFE

_HELD: dict[tuple[str, str], _Held] = {}  # (realpath of the directory, lock name) → lock
_HELD_GUARD = threading.Lock()
_FOR_LIFE: list[OutputLock] = []


class OutputLock:
    """An exclusive (or shared) lock on an output directory, so that two writers never mix
    their files in it: `fcntl.flock` on `DIRECTORY/.lock`, non-blocking. A second writer
    fails at once with `OutputLocked` (an OSError, so the tools' and runners' handlers print
    `error: <message>` and exit 1):

        /runs/a is in use by another writer (pid 1234 on host-x, run_pretraining, since
        2026-11-23T14:55:01+00:00); wait for it to finish or use another directory

    Use `output_lock(directory, what)` (a context manager) or `hold_output_lock` (until the
    process exits).

    - The directory is created if needed. The lock file records the holder (pid, host,
      `what`, the command line, the start time) once the lock is taken. A clean release
      removes the lock file, and the directories the lock created if they are still empty
      (a writer that failed before writing anything leaves nothing behind).
    - Stale locks need no handling: the kernel drops a flock when the last descriptor of
      its holder is closed, which includes the holder's death (SIGKILL, OOM, power loss of
      the process). The `.lock` file a killed holder leaves behind is simply locked again
      by the next writer and its content overwritten.
    - The descriptor is not inherited by exec'd programs (O_CLOEXEC), but a forked child
      (multiprocessing workers) shares it, and with it the lock: while a killed writer's
      orphaned workers still write, a new writer is refused (the message then says that the
      recorded pid has exited and its child processes hold the lock).
    - Re-entrant per process: a process that already holds the lock on a directory gets it
      again (counted; released when every acquisition is released), whatever the mode.
      Locks on a directory and on its subdirectory are independent.
    - `shared=True` takes a shared lock: shared holders coexist, an exclusive one excludes
      them all (`create_pretraining_data --num_tasks N`: the tasks of one job share the
      directory). `name` picks another lock file in the directory (a per-task lock).
    - Remote paths (containing "://", e.g. gs://) cannot be locked with fcntl: nothing is
      locked and nothing is written; two writers there are not detected (object stores have
      no flock, and no lock of their own is implemented), so users must not start two
      writers on one remote directory.
      A local file system without flock support (some network or FUSE mounts) gets a
      warning on stderr and no lock either; a platform without fcntl locks nothing.
    - The lock file is opened with O_NOFOLLOW and must be a regular file: a `.lock` that is
      a symbolic link (planted to make the holder's record overwrite another file) or a
      FIFO or device is refused with one line naming it, and left as it is.
    """

    def __init__(self, directory: str, what: str, *, shared: bool = False, name: str = LOCK_NAME):
        self.directory = os.fspath(directory)
        self.what = what
        self.shared = shared
        self.name = name
        self.remote = filesystem.is_url(self.directory)  # fcntl cannot lock these
        self.path = None if self.remote else os.path.join(self.directory, name)
        self._key: tuple[str, str] | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock (False for remote paths)."""
        return self._key is not None

    def acquire(self) -> OutputLock:
        """Takes the lock now or raises `OutputLocked` (OSError when the directory cannot be
        created). Returns self; a no-op when already held by this object or remote."""
        if self.remote or self._key is not None:
            return self
        with _HELD_GUARD:
            created = _make_dirs(self.directory)
            key = (os.path.realpath(self.directory), self.name)
            held = _HELD.get(key)
            if held is not None:
                held.count += 1
            else:
                try:
                    fd = _open_locked(self.directory, self.path, self.shared)
                except BaseException:
                    _remove_empty(created)
                    raise
                if fd is not None:
                    _write_holder(fd, self.what)
                _HELD[key] = _Held(fd, 1, os.getpid(), self.path, created)
            self._key = key
        return self

    def release(self) -> None:
        """Releases this object's acquisition (no-op when not held)."""
        with _HELD_GUARD:
            key, self._key = self._key, None
            held = _HELD.get(key) if key is not None else None
            if held is None:
                return
            held.count -= 1
            if held.count > 0:
                return
            del _HELD[key]
            if held.fd is None:
                return
            try:
                if held.pid == os.getpid():
                    # Remove the file only when no other (shared) holder has it: while we
                    # hold it exclusively, a writer that opened this file fails its check
                    # that the file is still the one at the path, and starts over.
                    try:
                        fcntl.flock(held.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except OSError:
                        pass
                    else:
                        with contextlib.suppress(OSError):
                            os.unlink(held.path)
                        _remove_empty(held.created)
            finally:
                os.close(held.fd)

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def output_lock(
    directory: str, what: str, *, shared: bool = False, name: str = LOCK_NAME
) -> OutputLock:
    """The lock on `directory` for the writer `what` (a command name), taken now:

        with output_lock(output_dir, "create_pretraining_data"):
            ...  # write into output_dir

    Raises OutputLocked when another writer holds it (see `OutputLock`)."""
    return OutputLock(directory, what, shared=shared, name=name).acquire()


def hold_output_lock(directory: str, what: str) -> OutputLock:
    """`output_lock` held until the process exits (released by an atexit handler; a killed
    process releases it with its death)."""
    lock = output_lock(directory, what)
    with _HELD_GUARD:
        if not _FOR_LIFE:
            atexit.register(_release_for_life)
        _FOR_LIFE.append(lock)
    return lock


def read_lock_holder(directory: str, name: str = LOCK_NAME) -> dict | None:
    """What the last holder of `directory`'s lock recorded (pid, host, what, command,
    since), or None (no lock file, or not yet written)."""
    try:
        fd = os.open(os.path.join(os.fspath(directory), name), os.O_RDONLY | _SAFE)
    except OSError:
        return None
    try:
        data = os.read(fd, 1 << 16) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        holder = json.loads(data.decode("utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    return holder if isinstance(holder, dict) else None


def _release_for_life() -> None:
    while _FOR_LIFE:
        _FOR_LIFE.pop().release()


def _make_dirs(directory: str) -> list[str]:
    """Creates `directory` and its missing parents; returns those it created, deepest
    first. A dangling symbolic link in the way is an OSError naming it and its target."""
    missing = []
    path = os.path.abspath(directory)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        if os.path.islink(path):  # (makedirs would say only "File exists")
            raise OSError(
                f"{directory} cannot be created: {path} is a dangling symbolic link (to "
                f"{os.readlink(path)}); remove it or give another directory"
            )
        missing.append(path)
        path = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise OSError(f"{directory} cannot be created: {e.strerror}") from None
    return missing


def _remove_empty(directories: list[str]) -> None:
    for d in directories:
        try:
            os.rmdir(d)
        except OSError:
            return


def _open_locked(directory: str, path: str, shared: bool) -> int | None:
    """A descriptor of `path` holding the flock (None when the file system has none)."""
    if fcntl is None:
        return None
    mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
    for _ in range(100):
        try:
            fd = os.open(path, _OPEN_FLAGS, 0o644)
        except FileNotFoundError:  # a releasing holder removed the directory it created
            _make_dirs(directory)
            continue
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise OSError(_planted(path, "a symbolic link")) from None
            raise OSError(f"{directory} is not writable: {path}: {e.strerror}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(_planted(path, "not a regular file"))
        try:
            fcntl.flock(fd, mode)
        except BlockingIOError:
            os.close(fd)
            holder = _wait_for_holder(directory, os.path.basename(path))
            raise OutputLocked(
                _locked_message(directory, holder), directory=directory, holder=holder
            ) from None
        except OSError as e:
            os.close(fd)
            if e.errno not in _UNLOCKABLE:
                raise OSError(f"cannot lock {path}: {e.strerror}") from None
            print(
                f"warning: cannot lock {path} ({e.strerror}): a second writer on {directory} "
                f"would not be detected",
                file=sys.stderr,
            )
            return None
        # Locked, but a releasing holder may have removed this file between our open and
        # flock (then the path is another file, or none): start over on the current one.
        try:
            st, ours = os.lstat(path), os.fstat(fd)
            if (st.st_dev, st.st_ino) == (ours.st_dev, ours.st_ino):
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)
    raise OSError(f"cannot lock {path}: the lock file keeps being replaced")


def _planted(path: str, what: str) -> str:
    return (
        f"{path} is {what}: refusing to lock through it (nothing it points to was touched); "
        f"remove it if it is not yours"
    )


def _write_holder(fd: int, what: str) -> None:
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "what": what,
        "command": shlex.join(sys.argv)[:1000],
        "since": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }
    data = (json.dumps(info, sort_keys=True) + "\n").encode()
    # Never empty for a reader: the new content over the old, then cut to length.
    os.pwrite(fd, data, 0)
    os.ftruncate(fd, len(data))


def _wait_for_holder(directory: str, name: str) -> dict | None:
    """The holder's record; a holder that has just taken the lock writes it a moment later."""
    for _ in range(10):
        holder = read_lock_holder(directory, name)
        if holder is not None:
            return holder
        time.sleep(0.05)
    return None


def _pid_exited(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (OSError, ValueError, TypeError, OverflowError):
        return False
    return False


def _locked_message(directory: str, holder: dict | None) -> str:
    if holder is None:
        who = "holder not recorded"
    else:
        who = (
            f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}, "
            f"{holder.get('what', '?')}, since {holder.get('since', '?')}"
        )
        if holder.get("host") == socket.gethostname() and _pid_exited(holder.get("pid")):
            who += "; that process has exited and its child processes still hold the lock"
    return (
        f"{directory} is in use by another writer ({who}); wait for it to finish or use "
        f"another directory"
    )
