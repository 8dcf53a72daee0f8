"""The local writer: a pretraining-data job on this machine's worker processes
(`create_pretraining_data(config, num_workers, num_tasks, task_index)`; the command line is
`create_pretraining_data.py`, the Beam pipeline `beam_writer.py`).

- One job per output directory: the run holds `data_pipeline.io.locks.output_lock` on it
  from before it looks at existing shards to the end. The `--num_tasks` tasks of one job
  share the directory (a shared lock) and each task index is exclusive.
- Task t writes the shards s ≡ t (mod num_tasks); a worker process writes whole shards
  (`shards.py`), each to `NAME.tmp`, renamed when complete, then its statistics file. A
  re-run skips complete shards of this job (`fingerprint.py`). When every shard is
  complete, meta_data.json sums the statistics (`meta_data.job_meta_data`).
- Workers are a `concurrent.futures.ProcessPoolExecutor` (forked on Linux). Any error in a
  worker — at its start-up or in a shard — or a worker that dies (killed, out of memory)
  ends the job at once: the other workers are stopped, their unfinished temporary files
  removed, and the error comes back as one exception (`WorkerFailed` for anything that is
  not an OSError or ValueError). Workers ignore SIGINT: Ctrl-C reaches the tool, which
  stops them the same way and re-raises KeyboardInterrupt; complete shards are kept and a
  re-run resumes. Worker processes also die with the tool (Linux, PR_SET_PDEATHSIG), so a
  `kill -9` leaves no orphan still writing.

Memory is bounded by one block part × dupe_factor per worker, whatever the corpus size.
Nothing here imports TensorFlow.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
import queue as queue_lib
import signal
import sys
import time

from data_pipeline import documents as documents_lib
from data_pipeline.io import filesystem
from data_pipeline.io.atomic import naming, write_json
from data_pipeline.io.locks import output_lock
from data_pipeline.pretraining import shards, staging
from data_pipeline.pretraining.data_config import META_FILE, DataConfig
from data_pipeline.pretraining.fingerprint import check_existing, job_fingerprint
from data_pipeline.pretraining.instances import InstanceMaker, InstanceStats
from data_pipeline.pretraining.meta_data import job_meta_data
from data_pipeline.records import AtomicRecordWriter


class WorkerFailed(RuntimeError):
    """A worker process failed with an error other than OSError / ValueError (a bug), or
    died; the message is one line naming the shard."""


# --- in a worker process ---------------------------------------------------------------------

_WORKER = {}


def _die_with_parent(parent_pid: int) -> None:
    """Linux: this worker process gets SIGKILL when the tool's process dies, so a killed tool
    leaves no orphan writing into the output directory (and holding its lock, inherited
    with fork). Elsewhere a no-op. (PR_SET_PDEATHSIG fires when the forking thread ends:
    the executor forks every worker from the tool's main thread, at the first submit.)"""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent died before the prctl: no signal will come
        os._exit(1)


def _init_worker(config: DataConfig, queue, parent_pid: int | None = None) -> None:
    """Per worker process: the tokenizer, masker and instance maker. `parent_pid`: this is
    a pool worker of that process (it dies with it and leaves Ctrl-C to it). An error here
    is kept and raised by the worker's first shard, so it reaches the tool as that shard's
    error (an initializer that raises would only break the pool, with a traceback)."""
    _WORKER.clear()
    try:
        if parent_pid is not None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            _die_with_parent(parent_pid)
        _WORKER.update(config=config, queue=queue, maker=shards.make_instance_maker(config))
    except Exception as e:
        _WORKER["error"] = e


def _write_shard(job) -> dict:
    """Writes one shard (all its blocks) and its stats file; returns the stats."""
    if "error" in _WORKER:
        raise _WORKER["error"]
    shard, blocks, fingerprint = job
    config: DataConfig = _WORKER["config"]
    maker: InstanceMaker = _WORKER["maker"]
    queue = _WORKER["queue"]
    path = os.path.join(config.output_dir, config.shard_name(shard))
    read_stats = documents_lib.ReadStats()
    stats = InstanceStats()
    writer = AtomicRecordWriter(path)
    shards.start_shard(maker)
    try:
        for block in blocks:
            for docs, examples in shards.block_examples(config, maker, block, read_stats, stats):
                writer.write_all(examples)
                if queue is not None:
                    queue.put((0, docs, len(examples)))
            if queue is not None:
                done = (
                    block.end - block.start if not block.compressed else os.path.getsize(block.path)
                )
                queue.put((done, 0, 0))
    except BaseException:
        writer.abort()
        raise
    result = shards.shard_stats(config, shard, fingerprint, writer.count, read_stats, stats)
    stats_path = shards.stats_path(config, shard)
    tmp = stats_path + ".tmp"
    try:
        with naming(stats_path), filesystem.open_new(tmp, "w") as f:
            f.write(shards.stats_text(result))
        writer.commit()
    except BaseException:
        writer.abort()
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    os.replace(tmp, stats_path)
    return result


# --- the job ---------------------------------------------------------------------------------


def create_pretraining_data(
    config: DataConfig,
    num_workers: int = 1,
    num_tasks: int = 1,
    task_index: int = 0,
    progress_every: float = 10.0,
    staging_dir: str | None = None,
) -> dict:
    """Writes this task's shards (skipping complete ones) and, once every shard of every
    task is complete, meta_data.json. Returns the meta data, or this task's summary.
    Paths may be URLs: the workers then use a local staging directory (`staging.py`;
    `staging_dir`, default a temporary one)."""
    if not 0 <= task_index < num_tasks:
        raise ValueError(f"task_index={task_index} is not in [0, num_tasks={num_tasks})")
    files = documents_lib.expand_input_files(config.input_file)
    tokenizer = config.tokenizer.build()
    shards.check_output_dir(config.output_dir)
    with contextlib.ExitStack() as locks:  # held to the end: one job per output directory
        if num_tasks == 1:
            locks.enter_context(output_lock(config.output_dir, "create_pretraining_data"))
        else:  # the job's tasks share the directory; each task index runs once
            what = f"create_pretraining_data task {task_index} of {num_tasks}"
            locks.enter_context(output_lock(config.output_dir, what, shared=True))
            name = f".lock-task-{task_index}"
            locks.enter_context(output_lock(config.output_dir, what, name=name))
        stage = None
        if staging.needed(config, files):
            stage = locks.enter_context(staging.staged(config, files, staging_dir))
        return _create_locked(
            config, files, tokenizer, num_workers, num_tasks, task_index, progress_every, stage
        )


class _Progress:
    """The counts workers report (input bytes, documents, instances) and the progress line."""

    def __init__(self, total_bytes: int, every: float):
        self.start = self.last = time.time()
        self.total_bytes, self.every = total_bytes, every
        self.done = [0, 0, 0]

    def drain(self, queue, block: bool = False) -> None:
        while True:
            try:
                item = queue.get(timeout=0.2) if block else queue.get_nowait()
            except queue_lib.Empty:
                return
            for i in range(3):
                self.done[i] += item[i]
            block = False

    def report(self, shards_done: int, shards_total: int, force: bool = False) -> None:
        if not force and time.time() - self.last < self.every:
            return
        self.last = time.time()
        done_bytes, docs, instances = self.done
        elapsed = time.time() - self.start
        rate = instances / max(elapsed, 1e-9)
        eta = (elapsed * (self.total_bytes - done_bytes) / done_bytes) if done_bytes else None
        eta_text = "?" if eta is None else time.strftime("%H:%M:%S", time.gmtime(eta))
        print(
            f"[create_pretraining_data] {done_bytes / max(self.total_bytes, 1):6.1%} of input, "
            f"{docs:,} documents, {instances:,} instances ({rate:,.0f}/s), "
            f"shards {shards_done}/{shards_total}, ETA {eta_text}",
            flush=True,
        )


def _create_locked(
    config: DataConfig,
    files,
    tokenizer,
    num_workers,
    num_tasks,
    task_index,
    progress_every,
    stage: staging.Staging | None = None,
) -> dict:
    """create_pretraining_data's work, under the output directory's lock. With `stage`,
    workers read and write its local paths and each finished shard is published."""
    local_files = stage.files if stage else files
    fingerprint = job_fingerprint(config, files, tokenizer.checksum, local_files)
    check_existing(config, fingerprint)
    worker_config = stage.config if stage else config
    publish = stage.publish if stage else lambda name: None
    blocks = documents_lib.plan_blocks(local_files, config.block_size, config.input_format)
    n = config.num_output_shards
    mine = [s for s in range(n) if s % num_tasks == task_index]
    jobs = [
        (s, blocks[s::n], fingerprint)
        for s in mine
        if shards.load_stats(config, s, fingerprint) is None
    ]
    total_bytes = sum(
        os.path.getsize(b.path) if b.compressed else b.end - b.start
        for s, bl, _ in jobs
        for b in bl
    )
    print(
        f"[create_pretraining_data] {len(files)} files, {len(blocks)} blocks, "
        f"{n} shards: {len(mine) - len(jobs)} of this task's {len(mine)} already complete, "
        f"{len(jobs)} to write with {num_workers} worker(s)",
        flush=True,
    )
    progress = _Progress(total_bytes, progress_every)
    results = []
    if jobs and num_workers <= 1:
        queue = queue_lib.SimpleQueue()
        _init_worker(worker_config, queue)
        for job in jobs:
            results.append(_write_shard(job))
            publish(results[-1]["shard"])
            progress.drain(queue)
            progress.report(len(results), len(jobs))
    elif jobs:
        results = _run_pool(worker_config, jobs, num_workers, publish, progress)
    if jobs:
        progress.report(len(jobs), len(jobs), force=True)
    all_stats = [shards.load_stats(config, s, fingerprint) for s in range(n)]
    if any(s is None for s in all_stats):
        missing = sum(s is None for s in all_stats)
        print(
            f"[create_pretraining_data] task {task_index}/{num_tasks} done; {missing} "
            f"shard(s) of other tasks still missing, so no {META_FILE} yet",
            flush=True,
        )
        return {
            "complete": False,
            "shards_missing": missing,
            "instances_written": sum(r["instances"] for r in results),
        }
    meta = job_meta_data(config, files, all_stats, tokenizer.checksum, tokenizer.vocab_size)
    write_json(os.path.join(config.output_dir, META_FILE), meta)
    print(
        f"[create_pretraining_data] {meta['instances']:,} instances in {n} shards → "
        f"{config.output_dir} ({time.time() - progress.start:.1f}s this run)",
        flush=True,
    )
    return meta


def _run_pool(config: DataConfig, jobs, num_workers: int, publish, progress: _Progress) -> list:
    """The jobs on `num_workers` worker processes; each finished shard is published as it
    completes. The first failure (or Ctrl-C) stops every worker (`_stop`) and is raised."""
    ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    queue = ctx.Queue()
    executor = concurrent.futures.ProcessPoolExecutor(
        min(num_workers, len(jobs)),
        mp_context=ctx,
        initializer=_init_worker,
        initargs=(config, queue, os.getpid()),
    )
    futures = {}
    results = []
    written = set()
    try:
        futures = {executor.submit(_write_shard, job): job for job in jobs}
        pending = set(futures)
        while pending:
            progress.drain(queue, block=True)
            for future in [f for f in pending if f.done()]:
                pending.discard(future)
                results.append(_result(future, config, futures[future][0]))
                written.add(futures[future][0])
                publish(results[-1]["shard"])
            progress.report(len(results), len(jobs))
        progress.drain(queue)
    except BaseException:
        _stop(executor, ctx, config, [s for s, _, _ in jobs if s not in written])
        raise
    executor.shutdown()
    return results


def _result(future, config: DataConfig, shard: int) -> dict:
    """The shard's stats, or its worker's error as one exception of one line."""
    try:
        return future.result()
    except concurrent.futures.process.BrokenProcessPool:
        raise WorkerFailed(
            f"a worker process died (killed, or out of memory?) before "
            f"{config.shard_name(shard)} was complete"
        ) from None
    except (OSError, ValueError, ImportError):
        raise
    except Exception as e:
        first = (str(e).splitlines() or [""])[0]
        raise WorkerFailed(
            f"writing {config.shard_name(shard)} failed: {type(e).__name__}: {first}"
        ) from None


def _stop(executor, ctx, config: DataConfig, unfinished) -> None:
    """Ends every worker now (SIGTERM, then SIGKILL), then removes the temporary files of
    the shards they did not finish: nothing half-written stays, complete shards stay."""
    # The pool's manager thread, joined below once the workers are gone: the first
    # shutdown forgets it, and left running it closes its wake-up pipe while the
    # interpreter's exit hook writes to that pipe ("Bad file descriptor" after the error).
    manager = getattr(executor, "_executor_manager_thread", None)
    executor.shutdown(wait=False, cancel_futures=True)
    workers = ctx.active_children()
    for p in workers:
        p.terminate()
    for p in workers:
        p.join(5)
        if p.is_alive():
            p.kill()
            p.join()
    executor.shutdown(wait=True)
    if manager is not None:
        manager.join(10)  # (its workers are dead: it ends at once)
    for shard in unfinished:
        for tmp in (
            os.path.join(config.output_dir, config.shard_name(shard)) + ".tmp",
            shards.stats_path(config, shard) + ".tmp",
        ):
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
