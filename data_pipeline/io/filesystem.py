"""Paths and URLs: the one place this project touches a file system by name.

Every path a user gives (flags, input globs, output and export directories, caches) may be
a local path or a URL — `gs://bucket/dir`, `s3://...` (with tensorflow-io's plugin),
`hdfs://...`, or TensorFlow's in-memory `ram://...`. The functions here take either:

- local paths go through `os`, `glob`, `shutil` and the builtin `open`, exactly as before
  (no TensorFlow import: the data writer's worker processes must never load it);
- URLs (anything with "://") go through `tf.io.gfile`, imported on first use; where
  TensorFlow is not installed (the Beam writer's environment), through Apache Beam's
  FileSystems (`data_pipeline.io.beam_files`).

Object stores have no atomic directory rename, no append and no flock; the callers keep
those to local paths (see `atomic`, `staged_directory`, `atomic.append_text`) and
docs/design/filesystems.md says what that means for users.

Nothing here writes through a symbolic link planted at a name it creates: new local files
are created with O_CREAT | O_EXCL | O_NOFOLLOW (`open_new`), and a local copy is written
beside its target and renamed over it (a rename replaces a link, never follows it).

TensorFlow's errors are turned into OSError (FileNotFoundError when the path is missing) so
that the tools' and runners' `error: ...` handlers report them as one line.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import functools
import glob as _glob
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator

SEPARATOR = "://"


def is_url(path) -> bool:
    """Whether `path` names a file through a URL scheme (gs://, s3://, hdfs://, ram://)."""
    return SEPARATOR in os.fspath(path)


@functools.cache
def _tensorflow():
    """TensorFlow, or None in an environment without it (the Beam writer's)."""
    try:
        import tensorflow as tf
    except ImportError:
        return None
    return tf


def _gfile():
    """`tf.io.gfile`; without TensorFlow, its subset over Apache Beam's FileSystems
    (`data_pipeline.io.beam_files`)."""
    tf = _tensorflow()
    if tf is None:
        from data_pipeline.io import beam_files

        return beam_files
    return tf.io.gfile


@contextlib.contextmanager
def _as_os_error(path: str):
    """TensorFlow's (or Beam's) file-system errors as OSError, naming `path`."""
    tf = _tensorflow()
    if tf is None:
        try:
            yield
        except FileNotFoundError:
            raise
        except OSError as e:
            if type(e).__name__ == "NotFoundError":
                raise FileNotFoundError(str(e)) from None
            raise
        except Exception as e:  # Beam's BeamIOError and the like
            raise OSError(f"{path}: {e}") from None
        return
    try:
        yield
    except tf.errors.NotFoundError as e:
        raise FileNotFoundError(f"{path}: not found ({e.message or 'no such file'})") from None
    except tf.errors.OpError as e:
        raise OSError(f"{path}: {e.message or type(e).__name__}") from None


# --- queries ---------------------------------------------------------------------------------


def exists(path: str) -> bool:
    if not is_url(path):
        return os.path.exists(path)
    return isfile(path) or isdir(path)


def isdir(path: str) -> bool:
    """Whether `path` is a directory. On URLs: a directory object, or the prefix of a file
    below it. (ram:// calls every prefix of a file name a directory — `DIR/ckpt-2` when
    `DIR/ckpt-2.index` exists — so a directory must also match itself or hold a child.)"""
    if not is_url(path):
        return os.path.isdir(path)
    with _as_os_error(path):
        if not _gfile().isdir(path):
            return False
        pattern = escape(path.rstrip("/"))
        return bool(_gfile().glob(pattern) or _gfile().glob(pattern + "/*"))


def isfile(path: str) -> bool:
    if not is_url(path):
        return os.path.isfile(path)
    with _as_os_error(path):
        try:
            return not _gfile().stat(path).is_directory
        except Exception as e:  # NotFoundError; anything else is reported as OSError
            if type(e).__name__ == "NotFoundError":
                return False
            raise


def getsize(path: str) -> int:
    if not is_url(path):
        return os.path.getsize(path)
    with _as_os_error(path):
        return _gfile().stat(path).length


def glob(pattern: str) -> list[str]:
    """Paths matching `pattern` (`*`, `?`, `[...]` within one path component), unsorted.
    Local patterns expand `~`. On URLs, directories exist only as prefixes of files."""
    if not is_url(pattern):
        return _glob.glob(os.path.expanduser(pattern))
    with _as_os_error(pattern):
        return list(_gfile().glob(pattern))


escape = _glob.escape


def listdir(path: str) -> list[str]:
    """Names in directory `path` (no trailing "/"). On URLs a directory that exists only as
    the prefix of deeper files may be missing: find files with `glob`, not `listdir`."""
    if not is_url(path):
        return os.listdir(path)
    with _as_os_error(path):
        return [n.rstrip("/") for n in _gfile().listdir(path)]


def walk_files(directory: str) -> Iterator[str]:
    """Every file under `directory`, as paths relative to it ("/"-separated)."""
    if not is_url(directory):
        for root, _, files in os.walk(directory):
            for name in files:
                yield os.path.relpath(os.path.join(root, name), directory).replace(os.sep, "/")
        return
    with _as_os_error(directory):
        for root, _, files in _gfile().walk(directory):
            rel = root[len(directory) :].strip("/")
            for name in files:
                yield f"{rel}/{name}" if rel else name


# --- reading and writing ---------------------------------------------------------------------


def open(path: str, mode: str = "r", encoding: str | None = "utf-8", **kwargs):  # noqa: A001
    """A file object for `path`: the builtin `open` for local paths, `tf.io.gfile.GFile`
    for URLs (text modes read and write UTF-8; seek/tell/read(n) work in "rb"). A missing
    file raises FileNotFoundError. `kwargs` (e.g. `newline`) apply to local files only."""
    if not is_url(path):
        return builtins.open(path, mode, encoding=None if "b" in mode else encoding, **kwargs)
    if "r" in mode and not exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    with _as_os_error(path):
        return _gfile().GFile(path, mode)


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


def open_new(path: str, mode: str = "wb", encoding: str | None = "utf-8"):
    """A new file at `path` for writing ("wb" or "w"), for names this project owns (a
    temporary file beside its target). Local paths: created with O_CREAT | O_EXCL |
    O_NOFOLLOW, so a symbolic link planted at `path` is never written through; whatever is
    already there (a killed run's leftover, a planted link) is unlinked first (the entry
    itself, not what a link points to), and a second collision is an OSError naming `path`.
    URLs: `open(path, mode)` (object stores have no links)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"open_new writes new files ('w' or 'wb'), not mode {mode!r}")
    if is_url(path):
        return open(path, mode, encoding=encoding)
    for attempt in range(2):
        try:
            fd = os.open(path, _NEW_FILE, 0o666)
            break
        except FileExistsError:
            if attempt:
                raise FileExistsError(
                    errno.EEXIST, "keeps reappearing while it is being created", path
                ) from None
            os.unlink(path)  # a directory there: IsADirectoryError naming it
    if "b" in mode:
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding=encoding)


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def read_text(path: str) -> str:
    with open(path, "r") as f:
        return f.read()


def makedirs(path: str) -> None:
    """`path` and its missing parents (no error when it exists)."""
    if not is_url(path):
        os.makedirs(path, exist_ok=True)
        return
    with _as_os_error(path):
        _gfile().makedirs(path)


def replace(source: str, target: str) -> None:
    """Renames file `source` to `target`, replacing it (os.replace semantics; atomic on
    local disks and ram://, a copy then a delete on object stores). Both on one system."""
    if not is_url(source) and not is_url(target):
        os.replace(source, target)
        return
    with _as_os_error(source):
        _gfile().rename(source, target, overwrite=True)


def remove(path: str) -> None:
    if not is_url(path):
        os.remove(path)
        return
    with _as_os_error(path):
        _gfile().remove(path)


def rmtree(path: str, ignore_errors: bool = False) -> None:
    """Removes directory `path` and everything under it."""
    if not is_url(path):
        shutil.rmtree(path, ignore_errors=ignore_errors)
        return
    try:
        with _as_os_error(path):
            _gfile().rmtree(path)
    except OSError:
        if not ignore_errors:
            raise


def copy(source: str, target: str) -> None:
    """Copies file `source` to `target` (overwriting it); either may be a URL, so this also
    uploads and downloads."""
    if is_url(target):
        with _as_os_error(target):
            _gfile().copy(source, target, overwrite=True)
        return
    # A local target: a new file beside it, renamed over it (never written through a link).
    tmp = f"{target}.tmp{os.getpid()}"
    try:
        with open(source, "rb") as src, open_new(tmp) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def copy_tree(source: str, target: str, last: Iterable[str] = ()) -> None:
    """Copies every file under directory `source` into directory `target` (either may be a
    URL; existing files are overwritten). Files whose name is in `last` are copied after
    all others: a reader that waits for them (a `checkpoint` index, a `saved_model.pb`)
    never sees a half-copied tree."""
    last = set(last)
    files = sorted(walk_files(source), key=lambda rel: rel.rsplit("/", 1)[-1] in last)
    for rel in files:
        destination = join(target, rel)
        parent = destination.rsplit("/", 1)[0] if is_url(target) else os.path.dirname(destination)
        makedirs(parent)
        copy(join(source, rel), destination)


def join(directory: str, *names: str) -> str:
    """`os.path.join` that keeps "/" for URLs."""
    if not is_url(directory):
        return os.path.join(directory, *names)
    return "/".join([directory.rstrip("/"), *(n.strip("/") for n in names)])


# --- local stand-ins for tools that need local files -----------------------------------------


@contextlib.contextmanager
def local_copy(path: str, suffix: str = "") -> Iterator[str]:
    """A local path holding `path`'s content for the block: `path` itself when local, a
    downloaded temporary copy (removed afterwards) for a URL. For libraries that only open
    local files (SentencePiece's trainer, LiteRT)."""
    if not is_url(path):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="albert-download-") as tmp:
        local = os.path.join(tmp, "file" + suffix)
        copy(path, local)
        yield local


@contextlib.contextmanager
def staged_directory(target: str, last: Iterable[str] = ()) -> Iterator[str]:
    """A local directory to write into for URL `target`: when the block completes, its
    files are copied into `target` (those named in `last` at the end, see `copy_tree`);
    after an exception nothing is copied. Object stores have no atomic directory rename,
    so a tree is built locally and published file by file, its completion marker last."""
    if not is_url(target):
        raise ValueError(f"staged_directory is for URLs, not the local path {target}")
    with tempfile.TemporaryDirectory(prefix="albert-staging-") as tmp:
        yield tmp
        copy_tree(tmp, target, last)
