"""What identifies a run (`RunIdentity`'s fields, albert_tf.checkpoints.run_record): the
training file's or records' fingerprint, the tokenizer's, the task and its labels, the
model config. A resumed run must match it (albert_tf.training.resume_checks)."""

from __future__ import annotations

import hashlib
import os

from albert_tf.checkpoints.run_record import RunIdentity
from data_pipeline.io import filesystem


def file_sha256(path: str) -> str:
    """sha256 of a file's bytes; of a directory, of its files' relative names and bytes
    (sorted): the identity of a training file or folder (RACE's)."""
    from albert_tf.checkpoints.tokenizer_record import file_sha256 as one_file

    if not filesystem.isdir(path):
        return one_file(path)
    digest = hashlib.sha256()
    for root, _, names in sorted(os.walk(path)):
        for name in sorted(names):
            full = os.path.join(root, name)
            digest.update(os.path.relpath(full, path).encode() + b"\0")
            digest.update(one_file(full).encode())
    return digest.hexdigest()


def run_identity(
    runner: str, task: str, albert_config, tokenizer, labels=None, data: dict | None = None
) -> RunIdentity:
    """The `RunIdentity` of a run: `albert_config` an AlbertConfig, `tokenizer` a built
    tokenizer or a recorded {"kind", "sha256", ...} (None: not known), `data` what the
    runner knows of its training data (None: it does not train)."""
    if tokenizer is not None and not isinstance(tokenizer, dict):
        tokenizer = tokenizer_identity(tokenizer)
    return RunIdentity(
        runner,
        task,
        None if labels is None else list(labels),
        albert_config.to_dict(),
        tokenizer,
        data,
    )


def training_file_identity(path: str | None, **settings) -> dict:
    """A fine-tuning run's data: the training file's (or folder's) sha256 and the settings
    its features are built with. A file that does not exist is left to the reader's own
    error (sha256 None)."""
    found = bool(path) and filesystem.exists(path)
    return {"train_sha256": file_sha256(path) if found else None, **settings}


def tokenizer_identity(tokenizer) -> dict | None:
    """{"kind", "sha256"} of a built tokenizer (None: none)."""
    from data_pipeline.tokenization.spec import tokenizer_kind

    if tokenizer is None:
        return None
    return {"kind": tokenizer_kind(tokenizer), "sha256": tokenizer.checksum}


def records_identity(files: list[str]) -> dict:
    """What identifies pretraining records `files`: the sha256 of each directory's
    meta_data.json (written once per complete job, deterministic), else of the files'
    names and sizes; and the file count."""
    from data_pipeline.pretraining.data_config import META_FILE

    digest = hashlib.sha256()
    for directory in sorted(dict.fromkeys(os.path.dirname(f) for f in files)):
        meta = os.path.join(directory, META_FILE)
        if filesystem.exists(meta):
            digest.update(file_sha256(meta).encode())
        else:
            for f in sorted(p for p in files if os.path.dirname(p) == directory):
                digest.update(f"{os.path.basename(f)}:{filesystem.getsize(f)}\n".encode())
    return {"records_sha256": digest.hexdigest(), "files": len(files)}
