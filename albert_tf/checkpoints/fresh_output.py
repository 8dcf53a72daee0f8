"""The conversion writers' one rule for their output directory: it must be new or empty.

`convert --source ...` and every `convert --to ...` write fixed file names (ckpt-1,
albert_config.json, model.safetensors, a KerasHub preset's files), so a second conversion
into the same directory replaced the first one's weights silently, under the runs that
were started from them. As `save_finetuned` (an export directory that is not empty) and
`export_encoder` (a directory that already holds a checkpoint) do, the writers refuse it
in one line naming the flag and the directory. Checked under the directory's lock, whose
own file does not count."""

from __future__ import annotations

import os

from data_pipeline.io import filesystem
from data_pipeline.io.locks import LOCK_NAME


def check_fresh_output(output_dir: str, flag: str = "--output_dir") -> None:
    """FileExistsError (one line naming `flag` and `output_dir`) when `output_dir` holds
    anything but its lock file."""
    if not filesystem.isdir(output_dir):
        return
    held = sorted(
        n.rstrip("/") for n in filesystem.listdir(output_dir) if n.rstrip("/") != LOCK_NAME
    )
    if held:
        raise FileExistsError(
            f"{flag} {output_dir} already holds {os.path.join(output_dir, held[0])} "
            f"({len(held)} entries: another conversion?); give a new or empty directory"
        )
