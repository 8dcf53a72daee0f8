"""The one run setup every runner does before its task starts, and the one way a runner
fails: a single `error: ...` line on stderr and exit code 1 (143 when preempted).

    def main(argv):
        return run_main(_main, argv)   # stray arguments, ValueError/OSError → "error: ..." rc 1

    run = setup_run("run_classifier", trainer_config, strategy_name=..., tpu=...,
                    num_gpus=..., train_batch_size=..., training=True,
                    run_config={"flags": FLAGS.flag_values_dict(), ...})
    run.strategy, run.micro_batch, run.output_dir

Nothing here reads flags: the runners pass values in.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable

from data_pipeline.cli import check_no_positional
from data_pipeline.io import filesystem
from data_pipeline.io.atomic import OutputLock, hold_output_lock, write_json

RUN_CONFIG = "run_config.json"


@dataclasses.dataclass(frozen=True)
class RunSetup:
    """strategy: the `tf.distribute.Strategy`; replicas: its replica count; micro_batch: the
    global batch of one micro-step (train batch / grad_accum_steps, checked to split over
    the replicas; one example per replica when the run does not train); output_dir: where
    this worker writes (the chief: the run's output_dir); lock: the exclusive lock on
    output_dir this process holds until it exits (`data_pipeline.io.atomic.hold_output_lock`;
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
) -> RunSetup:
    """Builds the strategy, checks the batch split (ValueError, one line, before anything is
    written), creates the worker's output directory, locks it for the rest of the process
    (`OutputLocked`, an OSError, when another writer holds it: `run_main` prints its one
    line and exits 1 before anything is written) and writes `run_config.json` there:
    {"runner", "trainer_config", "replicas", **run_config}.

    The lock is re-entrant per process: several runs of one process (run_classifier
    --num_runs: OUTPUT_DIR/run_i) each lock their directory, and locking one directory
    twice does not fail against itself."""
    from albert_tf.training import make_strategy, task_output_dir

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
    write_json(
        os.path.join(output_dir, RUN_CONFIG),
        {
            "runner": runner,
            "trainer_config": dataclasses.asdict(trainer_config),
            "replicas": replicas,
            **run_config,
        },
    )
    return RunSetup(strategy, replicas, micro, output_dir, lock)


def check_same_batches(output_dir: str, input_pipeline: dict | None) -> None:
    """ValueError (one line) when `output_dir` holds checkpoints of a run whose batches were
    built otherwise (run_config.json's "input_pipeline", e.g. length buckets against padded
    batches): the checkpoint's data position belongs to that pipeline and cannot be
    restored into this one. Read before anything is written."""
    import json

    path = os.path.join(output_dir, RUN_CONFIG)
    if input_pipeline is None or not filesystem.exists(path):
        return
    if not filesystem.glob(os.path.join(output_dir, "checkpoints", "*.index")):
        return
    try:
        with filesystem.open(path) as f:
            before = json.load(f).get("input_pipeline")
    except (OSError, ValueError):
        return  # an unreadable record decides nothing; resume.py checks the checkpoints
    if before is not None and before != input_pipeline:
        describe = lambda p: ", ".join(f"{k}={v}" for k, v in sorted(p.items()))  # noqa: E731
        raise ValueError(
            f"{output_dir} holds checkpoints of a run with other batches ({describe(before)}; "
            f"now {describe(input_pipeline)}): its data position cannot be restored; resume "
            f"with the same settings or use another --output_dir"
        )


def run_main(body: Callable[[], int | None], argv=()) -> int:
    """Runs `body` unless `argv` (what absl left after the flags) holds stray arguments; a
    ValueError or OSError (stray arguments, bad flags, files, checkpoints, configs: every
    error this project raises for bad input) becomes one `error: ...` line and exit code 1,
    a preemption exit code 143 (the conventional SIGTERM code)."""
    from albert_tf.training import Preempted

    try:
        check_no_positional(argv)
        return body() or 0
    except Preempted as e:
        print(str(e), file=sys.stderr)
        return 143
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
