"""The one run setup every runner does before its task starts, and the one way a runner
fails: a single `error: ...` line on stderr and exit code 1 (143 when preempted).

    def main(argv):
        return run_main(_main, argv)   # stray arguments, ValueError/OSError → "error: ..." rc 1

    run = setup_run("run_classifier", trainer_config, strategy_name=..., tpu=...,
                    num_gpus=..., train_batch_size=..., training=True,
                    run_config={"flags": settings.values(), ...},
                    identity=RunIdentity(...), allow_changed=("learning_rate",))
    run.strategy, run.micro_batch, run.output_dir

A directory holding checkpoints is resumed only by the same run (`check_same_run`: task,
labels, model config, tokenizer, training data, before anything is written) with the same
settings unless a change is allowed (`--allow_changed`), and never asked for fewer steps
than it has trained; run_config.json (`albert_tf.checkpoints.run_record.RunRecord`) keeps
every segment. Ctrl-C ends a run with one line and exit code 130.

Nothing here reads flags: the runners pass values in.
"""

from __future__ import annotations

import dataclasses
import hashlib
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
    from albert_tf.checkpoints.run_record import RunIdentity, RunRecord


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
    resume guards or fixes (controls.resume_rules; default: every runner's)."""
    from albert_tf.checkpoints.run_record import (
        RunIdentity,
        RunRecord,
        Segment,
        check_allowed,
        utc_now,
    )
    from albert_tf.training import make_strategy, task_output_dir

    if rules is None:
        from albert_tf.runners.controls import resume_rules

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


def check_resume(
    output_dir: str,
    identity: RunIdentity,
    training: bool,
    settings: dict | None = None,
    allow_changed: tuple[str, ...] | list[str] = (),
    rules=None,
    log=print,
) -> tuple[RunRecord | None, int | None]:
    """What a run on `output_dir` resumes, checked before anything is written: (its record,
    the step of its newest readable checkpoint), (None, step) for checkpoints without a
    record (nothing to compare: their restore decides), (None, None) when there is no
    checkpoint (a new run).

    ValueError (one line) when the checkpoints are of another run (`RunRecord.
    check_same_run`: task, labels, model config, tokenizer, and when `training` the training
    data), and with `settings` (the run's, when it trains) when `num_train_steps` is below the step
    reached (nothing to do: the run is not shortened, nothing is written) or a guarded
    setting changed without `allow_changed` (`RunRecord.check_settings`)."""
    from albert_tf.checkpoints.run_record import RunRecord
    from albert_tf.training.resume import newest_readable_step

    step = newest_readable_step(os.path.join(output_dir, "checkpoints"))
    if step is None:
        return None, None
    record = RunRecord.read(output_dir)
    if record is not None:
        record.check_same_run(identity, output_dir, training)
    if settings is None or record is None:  # (checkpoints of no record: resume.py decides)
        return record, step
    wanted = settings["num_train_steps"]
    if wanted < step:
        raise ValueError(
            f"{output_dir} holds a run trained to step {step}, more than the {wanted} training "
            f"steps asked for (--num_train_steps/--train_step): nothing to do, nothing was "
            f"changed; ask for {step} or more to go on, or use another --output_dir"
        )
    if rules is None:
        from albert_tf.runners.controls import resume_rules

        rules = resume_rules()
    for line in record.check_settings(settings, tuple(allow_changed), rules):
        log(f"resuming with a changed setting (--allow_changed): {line}")
    return record, step


def check_same_run(output_dir: str, identity: RunIdentity, training: bool) -> None:
    """`check_resume`'s identity check alone, for the runners that write into `output_dir`
    (the feature cache) before their settings are known: ValueError (one line) when
    `output_dir` holds checkpoints of another run."""
    check_resume(output_dir, identity, training)


def check_same_batches(output_dir: str, input_pipeline: dict | None) -> None:
    """ValueError (one line) when `output_dir` holds checkpoints of a run whose batches were
    built otherwise (run_config.json's "input_pipeline", e.g. length buckets against padded
    batches): the checkpoint's data position belongs to that pipeline and cannot be
    restored into this one. Read before anything is written."""
    from albert_tf.checkpoints.run_record import RunRecord

    if input_pipeline is None:
        return
    if not filesystem.glob(os.path.join(output_dir, "checkpoints", "*.index")):
        return
    try:
        record = RunRecord.read(output_dir)
    except (OSError, ValueError):
        return  # an unreadable record decides nothing; resume.py checks the checkpoints
    before = record.details.get("input_pipeline") if record else None
    if before is not None and before != input_pipeline:
        describe = lambda p: ", ".join(f"{k}={v}" for k, v in sorted(p.items()))  # noqa: E731
        raise ValueError(
            f"{output_dir} holds checkpoints of a run with other batches ({describe(before)}; "
            f"now {describe(input_pipeline)}): its data position cannot be restored; resume "
            f"with the same settings or use another --output_dir"
        )


# --- what a runner knows of its data and tokenizer (RunIdentity's fields) -------------------


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
    from albert_tf.checkpoints.run_record import RunIdentity

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


def run_main(body: Callable[[], int | None], argv=()) -> int:
    """Runs `body` unless `argv` (what absl left after the flags) holds stray arguments; a
    ValueError or OSError (stray arguments, bad flags, files, checkpoints, configs: every
    error this project raises for bad input) becomes one `error: ...` line and exit code 1,
    a preemption exit code 143 (the conventional SIGTERM code), Ctrl-C (SIGINT) one line
    and exit code 130 (the trainer's `Interrupted` names the step and the last
    checkpoint; a run resumes from it exactly)."""
    from albert_tf.training import Interrupted, Preempted

    try:
        check_no_positional(argv)
        return body() or 0
    except Preempted as e:
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
