"""URLs without TensorFlow: the part of `tf.io.gfile` that `data_pipeline.io.filesystem` uses,
over Apache Beam's `FileSystems`.

The Beam writer's environment (requirements-beam.txt) has no TensorFlow, yet its driver
lists and sizes the input files and its workers read their byte ranges and the
SentencePiece model — on Dataflow, from gs://. `filesystem` takes this module in place of
`tf.io.gfile` when TensorFlow cannot be imported; Beam's FileSystems then serve the same
schemes (gs:// with apache-beam[gcp], s3:// with [aws], hdfs://). Writes in that
environment are the Beam writer's own (through FileSystems too).

Only what the data writer needs is here: glob, stat, isdir, GFile (read and write modes),
rename, remove, copy, makedirs. Anything else raises OSError naming what to install.
"""

from __future__ import annotations

import dataclasses


class NotFoundError(OSError):
    """A missing path (named like TensorFlow's, which `filesystem` tells apart)."""


@dataclasses.dataclass(frozen=True)
class Stat:
    length: int
    is_directory: bool = False


def _fs():
    from apache_beam.io.filesystems import FileSystems

    return FileSystems


def glob(pattern: str) -> list[str]:
    return [m.path for r in _fs().match([pattern]) for m in r.metadata_list]


def stat(path: str) -> Stat:
    if isdir(path):
        return Stat(0, is_directory=True)
    matches = [m for r in _fs().match([path]) for m in r.metadata_list if m.path == path]
    if matches:
        return Stat(matches[0].size_in_bytes)
    raise NotFoundError(f"{path}: no such file")


def isdir(path: str) -> bool:
    """Object stores have no directories: a prefix of some file's name counts as one."""
    return bool(glob(path.rstrip("/") + "/*"))


class GFile:
    """A file object for `path` in "r"/"rb" (seekable) or "w"/"wb"; text is UTF-8."""

    def __init__(self, path: str, mode: str = "r"):
        from apache_beam.io.filesystem import CompressionTypes

        plain = CompressionTypes.UNCOMPRESSED
        if "r" in mode:
            self._file = _fs().open(path, compression_type=plain)
        elif "w" in mode:
            self._file = _fs().create(path, compression_type=plain)
        else:
            raise OSError(f"{path}: mode {mode!r} needs TensorFlow (tf.io.gfile)")
        self._text = "b" not in mode

    def read(self, n: int = -1):
        data = self._file.read() if n is None or n < 0 else self._file.read(n)
        return data.decode("utf-8") if self._text else data

    def write(self, data) -> None:
        self._file.write(data.encode("utf-8") if self._text else data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def readable(self) -> bool:  # (gzip.open reads through this object)
        return True

    def close(self) -> None:
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def rename(source: str, target: str, overwrite: bool = False) -> None:
    if overwrite and _fs().exists(target):
        _fs().delete([target])
    _fs().rename([source], [target])


def remove(path: str) -> None:
    _fs().delete([path])


def copy(source: str, target: str, overwrite: bool = False) -> None:
    if overwrite and _fs().exists(target):
        _fs().delete([target])
    _fs().copy([source], [target])


def makedirs(path: str) -> None:
    _fs().mkdirs(path) if not isdir(path) and not _fs().exists(path) else None


def __getattr__(name: str):
    raise OSError(f"{name} on a URL needs TensorFlow (tf.io.gfile); this environment has none")
