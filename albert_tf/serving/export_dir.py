"""The export directory (`--export_dir`): checked before anything is written, so a path
that cannot hold an export is one line naming it and what it is, not a "File exists"
traceback after the work."""

from __future__ import annotations

import os

from data_pipeline.io import filesystem


def check_export_dir(path: str, inside: str | None = None, flag: str = "--export_dir") -> None:
    """OSError (one line naming `flag` and `path`) when `path` (or its sub-directory
    `inside`), or a directory above it, is not a directory that exists or can be made: a
    file, a dangling symbolic link, or a link to a file."""
    if filesystem.is_url(path):
        return  # (object stores have no files in the way of a prefix)
    probe = os.path.abspath(os.path.join(path, inside) if inside else path)
    while True:
        if os.path.islink(probe) and not os.path.exists(probe):
            raise FileExistsError(
                f"{flag} {path}: {probe} is a dangling symbolic link (to "
                f"{os.readlink(probe)}); remove it or give another directory"
            )
        if os.path.exists(probe) and not os.path.isdir(probe):
            raise FileExistsError(
                f"{flag} {path}: {probe} is a file, not a directory; give another directory"
            )
        parent = os.path.dirname(probe)
        if parent == probe or os.path.isdir(probe):
            return
        probe = parent
