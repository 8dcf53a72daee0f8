"""Which checkpoint a restarted run resumes from — never silently none.

`tf.train.latest_checkpoint` trusts the `checkpoint` state file: when that file is garbled
it returns None, and when the files of the checkpoint it names are gone the restore fails
later. Either way a run that restarts from step 0 writes ckpt-2, ckpt-4, ... over the valid
checkpoints of the earlier run. Here:

- the candidates are the checkpoints the state file lists *and* every `ckpt-N.index` on
  disk (a missing or unreadable state file hides none of them), newest first;
- the trainer restores the newest one that reads completely (`restore_newest`); each one
  skipped is named, with why, and (once an older one has been restored) moved to
  `checkpoints/unreadable/`, where it can be inspected and is not mistaken for a good one
  again;
- if checkpoint files exist but none reads, the run stops with one line instead of
  starting over;
- the state file is rewritten to list the checkpoints kept, so `tf.train.CheckpointManager`
  (which parses it) starts from a consistent directory;
- leftover `*_temp` directories of an interrupted save are removed.
"""

from __future__ import annotations

import os
import re

from data_pipeline.io import filesystem

_NUMBER = re.compile(r"-(\d+)$")


def _number(prefix: str) -> int:
    found = _NUMBER.search(prefix)
    return int(found.group(1)) if found else -1


def _normpath(path: str) -> str:
    """os.path.normpath, which would turn "gs://b" into "gs:/b", for local paths only."""
    return path if filesystem.is_url(path) else os.path.normpath(path)


def _first_line(text) -> str:
    text = str(text).strip()
    return text.splitlines()[0] if text else "unknown error"


def clean_temporaries(directory: str) -> list[str]:
    """Removes the `<prefix>_temp*` directories an interrupted save leaves; returns them."""
    removed = []
    for path in filesystem.glob(os.path.join(filesystem.escape(directory), "*_temp*")):
        if filesystem.isdir(path):
            filesystem.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def candidates(directory: str) -> tuple[list[str], list[str]]:
    """(checkpoint prefixes in `directory` newest first, notes on what was odd)."""
    import tensorflow as tf

    notes, listed = [], []
    if filesystem.exists(os.path.join(directory, "checkpoint")):
        problem = "it names no checkpoint"
        try:  # (TensorFlow logs a ParseError and returns None for a garbled file)
            state = tf.train.get_checkpoint_state(directory)
        except Exception as e:  # a decode error, ...
            state, problem = None, _first_line(e)
        if state is not None and state.model_checkpoint_path:
            listed = [
                p if os.path.isabs(p) or filesystem.is_url(p) else os.path.join(directory, p)
                for p in state.all_model_checkpoint_paths
            ] or [state.model_checkpoint_path]
        else:
            notes.append(
                f"{os.path.join(directory, 'checkpoint')} is unreadable ({problem}); "
                f"using the checkpoint files found beside it"
            )
    on_disk = [
        p[: -len(".index")]
        for p in filesystem.glob(os.path.join(filesystem.escape(directory), "*.index"))
    ]
    prefixes = {_normpath(p) for p in listed + on_disk if p}
    return sorted(prefixes, key=_number, reverse=True), notes


def unreadable(prefix: str) -> str | None:
    """Why the checkpoint at `prefix` cannot be restored (None: its index reads and every
    data shard it names exists with a size at least what the index records)."""
    import tensorflow as tf

    if not filesystem.exists(prefix + ".index"):
        return "its .index file is missing"
    try:
        from albert_tf.checkpoints.own import checkpoint_reader

        reader = checkpoint_reader(prefix)
        reader.get_variable_to_shape_map()
    except tf.errors.OpError as e:
        return f"its .index file is unreadable ({_first_line(e.message)})"
    shards = filesystem.glob(filesystem.escape(prefix) + ".data-*-of-*")
    expected = re.compile(re.escape(os.path.basename(prefix)) + r"\.data-\d+-of-(\d+)$")
    counts = {int(m.group(1)) for m in map(expected.match, map(os.path.basename, shards)) if m}
    if not shards or len(counts) != 1 or len(shards) != counts.pop():
        return "data files are missing"
    return None


def newest_readable_step(directory: str) -> int | None:
    """The step of the checkpoint a run in `directory` would resume from (the newest whose
    files read, as `restore_newest` picks; the trainer numbers checkpoints by step), or
    None when the directory holds no checkpoint files (a new run). Reads only: a run is
    checked against its checkpoints before anything is written."""
    if not filesystem.isdir(directory):
        return None
    found, _ = candidates(directory)
    for prefix in found:
        if unreadable(prefix) is None:
            return max(_number(prefix), 0)
    return 0 if found else None  # (none reads: restore_newest stops the run in one line)


def quarantine(prefix: str) -> str:
    """Moves every file of the checkpoint `prefix` into `unreadable/` beside it; returns the
    directory."""
    directory = os.path.join(os.path.dirname(prefix), "unreadable")
    filesystem.makedirs(directory)
    for path in filesystem.glob(filesystem.escape(prefix) + ".*"):
        filesystem.replace(path, os.path.join(directory, os.path.basename(path)))
    return directory


def restore_newest(checkpoint, directory: str, log=print, repair: bool = True) -> str | None:
    """Restores `checkpoint` (a `tf.train.Checkpoint`) from the newest checkpoint in
    `directory` that reads completely and returns its prefix; None when the directory has
    no checkpoint at all. `repair=False` (a non-chief worker reading the chief's
    directory) changes nothing there: no cleaning, moving or state rewrite.

    Raises:
      ValueError (one line): checkpoints exist but none can be read, or the newest readable
        one does not fit this run's model and optimizer (another config: not a reason to
        fall back to an older one).
    """
    import tensorflow as tf

    if not filesystem.isdir(directory):
        return None
    for path in clean_temporaries(directory) if repair else []:
        log(f"removed {path} (left by an interrupted checkpoint save)")
    found, notes = candidates(directory)
    for note in notes:
        log(note)
    problems, skipped = [], []
    for prefix in found:
        why = unreadable(prefix)
        if why is None:
            try:
                checkpoint.restore(prefix).assert_consumed()
            except (AssertionError, ValueError) as e:
                raise ValueError(
                    f"cannot resume from {prefix}: it does not fit this run's model and "
                    f"optimizer (written with another config? use a new output_dir): "
                    f"{_first_line(e)}"
                ) from None
            except (tf.errors.OpError, IndexError) as e:  # (a data file cut short)
                why = f"it does not read ({_first_line(getattr(e, 'message', e))})"
        if why is None:
            for bad in skipped if repair else []:  # a run that cannot resume moves nothing
                log(f"moved the unreadable {bad} to {quarantine(bad)}")
            if repair and (skipped or notes):
                log(f"resuming from {prefix}, the newest readable checkpoint")
                kept = [p for p in found if _number(p) <= _number(prefix)]
                tf.compat.v1.train.update_checkpoint_state(
                    directory, prefix, all_model_checkpoint_paths=list(reversed(kept))
                )
            return prefix
        skipped.append(prefix)
        problems.append(f"{os.path.basename(prefix)}: {why}")
        log(f"cannot resume from {prefix}: {why}")
    if found:
        raise ValueError(
            f"cannot resume: no checkpoint in {directory} is readable "
            f"({'; '.join(problems)}); restore them or use a new --output_dir"
        )
    if notes and repair:  # a state file naming nothing that exists
        filesystem.remove(os.path.join(directory, "checkpoint"))
    return None
