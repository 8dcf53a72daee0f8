"""The one run setup every runner does before its task starts, the up-front checks before
it, and the one way a runner fails: a single `error: ...` line on stderr and exit code 1
(143 when preempted, 130 on Ctrl-C).

    run = setup_run("run_classifier", trainer_config, strategy_name=..., tpu=...,
                    num_gpus=..., train_batch_size=..., training=True,
                    run_config={"flags": settings.values(), ...},
                    identity=RunIdentity(...), allow_changed=("learning_rate",))
    run.strategy, run.micro_batch, run.output_dir

The checks are one-line ValueErrors before anything is written: the starting checkpoint,
the output directory, the sequence length against the model's positions and the vocabulary
against its embedding table. A directory holding checkpoints is resumed only by the same
run (`check_same_run`, before anything is written) with the same settings unless a change
is allowed (`--allow_changed`); run_config.json (`albert_tf.checkpoints.run_record.
RunRecord`) keeps every segment. Nothing here reads flags: the runners pass values in.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from data_pipeline.cli import check_no_positional
from data_pipeline.io import filesystem
from data_pipeline.io.locks import OutputLock, hold_output_lock

# run_config.json's name and format are albert_tf.checkpoints.run_record's; that module is
# imported where used, so that a runner's start (flag parsing, --help) loads no TensorFlow.
if TYPE_CHECKING:
    from albert_tf.checkpoints.run_record import RunIdentity


@dataclasses.dataclass(frozen=True)
class RunSetup:
    """strategy: the `tf.distribute.Strategy`; replicas: its replica count; micro_batch: the
    global batch of one micro-step (train batch / grad_accum_steps, checked to split over
    the replicas; one example per replica when the run does not train); output_dir: where
    this worker writes (the chief: the run's output_dir); lock: the exclusive lock on
    output_dir this process holds until it exits (`data_pipeline.io.locks.hold_output_lock`;
    not locked when remote)."""

    strategy: object
    replicas: int
    micro_batch: int
    output_dir: str
    lock: OutputLock | None = None


def micro_batch_size(train_batch_size: int, grad_accum_steps: int, replicas: int) -> int:
    """The global micro-batch: --train_batch_size split into --grad_accum_steps parts, each
    split again over the replicas. Raises ValueError (one line) unless both splits are
    exact, rather than silently training on fewer examples per update or failing inside
    tf.distribute."""
    micro = train_batch_size // grad_accum_steps
    if micro * grad_accum_steps != train_batch_size or micro % replicas:
        raise ValueError(
            f"--train_batch_size={train_batch_size} must be divisible by "
            f"--grad_accum_steps={grad_accum_steps} × {replicas} replicas"
        )
    return micro


def setup_run(
    runner: str,
    trainer_config,
    *,
    strategy_name: str,
    tpu: str | None,
    num_gpus: int,
    train_batch_size: int,
    training: bool,
    run_config: dict,
    identity: RunIdentity | None = None,
    allow_changed: tuple[str, ...] | list[str] = (),
    controls: dict | None = None,
    rules=None,
) -> RunSetup:
    """Builds the strategy, checks the batch split (ValueError, one line, before anything is
    written), creates the worker's output directory, locks it for the rest of the process
    (`OutputLocked`, an OSError, when another writer holds it: `run_main` prints its one
    line and exits 1 before anything is written), checks a resumed run (`check_resume`:
    the same run, the same settings unless `allow_changed`, not fewer steps than done) and
    writes `run_config.json` there (`RunRecord`): {"runner", "trainer_config", "replicas",
    **run_config} at the top level, the identity, and the segments (a training invocation
    on checkpoints adds one; otherwise the record of those checkpoints is kept as it is).

    The lock is re-entrant per process: several runs of one process (run_classifier
    --num_runs: OUTPUT_DIR/run_i) each lock their directory, and locking one directory
    twice does not fail against itself. `controls`: the task's settings recorded (and
    compared) with the trainer's (albert_tf.runners.controls); `rules`: which settings a
    resume guards or fixes (resume_checks.resume_rules; default: every runner's)."""
    from albert_tf.checkpoints.run_record import (
        RunIdentity,
        RunRecord,
        Segment,
        check_allowed,
        utc_now,
    )
    from albert_tf.training import make_strategy, task_output_dir
    from albert_tf.training.resume_checks import check_resume, check_same_batches

    if rules is None:
        from albert_tf.training.resume_checks import resume_rules

        rules = resume_rules()
    check_allowed(allow_changed, rules.guarded)
    strategy = make_strategy(strategy_name, tpu, num_gpus)
    replicas = strategy.num_replicas_in_sync
    # Only training reads the train pipeline; otherwise the trainer just builds it (one
    # example per replica), and the train batch need not suit the replicas.
    micro = (
        micro_batch_size(train_batch_size, trainer_config.grad_accum_steps, replicas)
        if training
        else replicas
    )
    output_dir = task_output_dir(strategy, trainer_config.output_dir)
    lock = hold_output_lock(output_dir, runner)  # creates output_dir (not when remote)
    if lock.remote:
        filesystem.makedirs(output_dir)
    if training:
        check_same_batches(output_dir, run_config.get("input_pipeline"))
    identity = identity or RunIdentity(runner, albert_config=run_config.get("albert_config"))
    settings = dict(dataclasses.asdict(trainer_config), replicas=replicas)
    settings.pop("output_dir")
    settings["train_batch_size"] = train_batch_size
    settings.update(controls or {})
    record, step = check_resume(
        output_dir, identity, training, settings if training else None, allow_changed, rules
    )
    details = {
        "runner": runner,
        "trainer_config": dataclasses.asdict(trainer_config),
        "replicas": replicas,
        **run_config,
    }
    segment = Segment(step or 0, utc_now(), settings)
    if record is None:
        RunRecord(identity, (segment,) if training else (), details).write(output_dir)
    elif training:
        record.with_segment(segment, details, identity).write(output_dir)
    return RunSetup(strategy, replicas, micro, output_dir, lock)


def setup_settings_run(
    runner: str, trainer_config, s, albert_config, buckets, *, training, identity, **kwargs
) -> RunSetup:
    """`setup_run` with what a runner's settings `s` give: strategy, batch, --allow_changed,
    and run_config.json's "flags", "albert_config" (of `albert_config`), "input_pipeline"
    (the length `buckets`, None: padded); `kwargs`: `controls`, then the runner's own
    run_config.json entries."""
    controls = kwargs.pop("controls", None)
    return setup_run(
        runner,
        trainer_config,
        strategy_name=s.strategy,
        tpu=s.tpu,
        num_gpus=s.num_gpus,
        train_batch_size=s.train_batch_size,
        training=training,
        identity=identity,
        allow_changed=tuple(s.allow_changed or ()),
        controls=controls,
        run_config={
            "flags": s.values(),
            "command": s.command_line(f"python {runner}.py"),
            "albert_config": albert_config.to_dict(),
            "input_pipeline": {"length_buckets": None if buckets is None else list(buckets)},
            **kwargs,
        },
    )


def run_command(command, run, argv=None) -> int:
    """A runner's console command: `command` (a data_pipeline.command.Command) parses argv
    once (--help: its flags, grouped, before TensorFlow), then `run(settings)`; the exit
    code (`run_main`)."""

    def body():
        s = command.parse(sys.argv if argv is None else argv)
        from absl import logging

        logging.set_verbosity(logging.WARNING)  # TF's INFO lines would drown the progress
        run(s)
        return 0

    return run_main(body)


def run_main(body: Callable[[], int | None], argv=()) -> int:
    """Runs `body` unless `argv` (what absl left after the flags) holds stray arguments; a
    ValueError or OSError (stray arguments, bad flags, files, checkpoints, configs: every
    error this project raises for bad input) becomes one `error: ...` line and exit code 1,
    a preemption exit code 143 (the conventional SIGTERM code), Ctrl-C (SIGINT) one line
    and exit code 130 (the trainer's `Interrupted` names the step and the last
    checkpoint; a run resumes from it exactly), SIGTERM outside the training loop one line
    and exit code 143, the `with` blocks on the way out run (`stops.sigterm_raises`)."""
    from albert_tf.training import Interrupted, Preempted
    from albert_tf.training.stops import Terminated, sigterm_raises

    try:
        check_no_positional(argv)
        with sigterm_raises():
            return body() or 0
    except (Preempted, Terminated) as e:
        print(str(e), file=sys.stderr)
        return 143
    except Interrupted as e:
        print(str(e), file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("interrupted (outside the training loop; no checkpoint changed)", file=sys.stderr)
        return 130
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def check_run_settings(s) -> None:
    """The checks every runner makes of its settings `s` before reading a file: the
    starting checkpoint, what --allow_changed names, the settings that do not go
    together."""
    from albert_tf.checkpoints.run_record import check_allowed
    from albert_tf.training.config import settings_conflict
    from albert_tf.training.resume_checks import resume_rules

    if s.init_checkpoint:
        check_init_checkpoint(s.init_checkpoint)
    check_allowed(s.allow_changed or (), resume_rules().guarded)
    conflict = settings_conflict(s)
    if conflict:
        raise ValueError(conflict)


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
    `files` records; records without one (the official tool's, or a copy without it) have
    the ids of their first records checked against the model's vocab_size instead, so a
    larger vocabulary's records are one line naming the file, not an InvalidArgumentError
    from the embedding lookup mid-run (or, on GPU, zeros read silently)."""
    from data_pipeline.pretraining.meta_data import META_FILE, largest_token_id, read_meta_data

    size = albert_config.vocab_size
    by_directory: dict[str, list[str]] = {}
    for f in files:
        by_directory.setdefault(os.path.dirname(f), []).append(f)
    for directory, inside in by_directory.items():
        found = read_meta_data(directory)
        if found and isinstance(found[1].get("vocab_size"), int):
            path, meta = found
            check_vocab_size(
                albert_config, meta["vocab_size"], f"{path}: the records' vocabulary", source
            )
            continue
        for path in inside:
            top = largest_token_id(path)
            if top is not None and top >= size:
                raise ValueError(
                    f"{path}: its records hold token id {top:,}, but vocab_size={size:,} in "
                    f"{source}: ids >= {size:,} have no embedding (no {META_FILE} beside the "
                    "records says which vocabulary wrote them; give the config of that "
                    "vocabulary, or records written with this model's)"
                )
