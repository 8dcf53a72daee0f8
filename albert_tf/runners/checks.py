"""The runners' up-front checks, each a one-line ValueError before anything is written
(`run_setup.run_main` prints it as `error: ...`, exit code 1): the flags' ranges, the
starting checkpoint, the output directory, the sequence length against the model's
positions and the vocabulary against its embedding table."""

from __future__ import annotations

import os


def check_init_checkpoint(path: str) -> None:
    """ValueError (one line) when --init_checkpoint names no checkpoint, or one whose index
    does not read or whose data files are missing (a truncated copy); read before anything
    is written. (A data file cut short is found when the weights are read.)"""
    from albert_tf.checkpoints.own import resolve_checkpoint
    from albert_tf.training.resume import unreadable

    try:
        prefix = resolve_checkpoint(path)
    except FileNotFoundError as e:
        raise ValueError(f"--init_checkpoint={path}: {e}") from None
    why = unreadable(prefix)
    if why:
        raise ValueError(f"--init_checkpoint={path}: {prefix} cannot be used: {why}")


def check_output_dir(path: str | None, flag: str = "--output_dir") -> None:
    """ValueError (one line) when `path` is not a directory this process can write to, or
    cannot be created (its nearest existing ancestor is a file or not writable). Remote
    file systems (gs://, ...) are left to their first use."""
    if not path:
        raise ValueError(f"{flag} is required")
    if "://" in path:
        return
    target = os.path.abspath(path)
    existing = target
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if existing == target:
        if not os.path.isdir(target):
            raise ValueError(f"{flag}={path} is not a directory")
        if not os.access(target, os.W_OK | os.X_OK):
            raise ValueError(f"{flag}={path} is not writable")
    elif not os.path.isdir(existing):
        raise ValueError(f"{flag}={path} cannot be created: {existing} is not a directory")
    elif not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{flag}={path} cannot be created: {existing} is not writable")


def check_sequence_length(
    albert_config, max_seq_length: int, what: str = "--max_seq_length", source: str = ""
) -> None:
    """ValueError unless sequences of `max_seq_length` fit the model's position table.
    `what`: who sets the length (a flag, or the records' meta_data.json); `source`: where
    the config comes from (settings.config_source)."""
    if max_seq_length > albert_config.max_position_embeddings:
        raise ValueError(
            f"{what}={max_seq_length} is more than max_position_embeddings="
            f"{albert_config.max_position_embeddings} of {source}"
        )


def check_vocab_size(albert_config, vocab_size: int, what: str, source: str = "") -> None:
    """ValueError unless the model's word embeddings have a row for every id of a
    vocabulary of `vocab_size` pieces (`what`: where that vocabulary is; `source`: as for
    `check_sequence_length`). A larger model vocabulary is fine (released models pad
    theirs); a smaller one fails on the first large id, or on GPU silently reads zeros."""
    if vocab_size > albert_config.vocab_size:
        raise ValueError(
            f"{what} has {vocab_size:,} pieces, but vocab_size={albert_config.vocab_size:,} "
            f"in {source}: ids >= {albert_config.vocab_size:,} have no "
            "embedding"
        )


def check_records_vocabulary(albert_config, files: list[str], source: str) -> None:
    """check_vocab_size for the vocabulary each meta_data.json beside pretraining records
    `files` records (records without one are not checked)."""
    from data_pipeline.pretraining.meta_data import read_meta_data

    for directory in dict.fromkeys(os.path.dirname(f) for f in files):
        found = read_meta_data(directory)
        if found and isinstance(found[1].get("vocab_size"), int):
            path, meta = found
            check_vocab_size(
                albert_config, meta["vocab_size"], f"{path}: the records' vocabulary", source
            )
