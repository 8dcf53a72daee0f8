"""The local writer's failures end the job, at once and in one line, as real processes:
settings out of range are refused before any worker starts (they used to crash every
worker at start-up, and the pool restarted them forever); an error in a worker (a bad
input line, a failing start-up, a worker killed) stops the other workers and leaves no
temporary file; a full disk names the file; Ctrl-C stops everything with exit 130 and keeps
only complete shards. Runs on ../shared/data (skipped without it)."""

import glob
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from data_pipeline.records import read_records
from tests.data_pipeline.pretraining.test_create_pretraining_data import (
    TOOL,
    _need_data,
    _one_line_error,
    cli_args,
    config,
    digests,
    run_tool,
)
from tests.support.harness import CLI_ENV, ROOT, Cli

TIMEOUT = 60  # every failure below ends well within this; a hang would not


def _heavy(tmp_path, name="out", **kw):
    """A job of several seconds per shard on 2 workers (WikiText-2 valid, dupe_factor 8)."""
    d = _need_data() / "corpus"
    settings = dict(split_sentences=True, dupe_factor=8, block_size=131072, num_output_shards=4)
    return config(f"{d}/wikitext-2/valid.txt", tmp_path / name, **{**settings, **kw})


def _children(pid):
    """Pids of the processes whose parent is `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    text = f.read()
            except OSError:
                continue
            if int(text[text.rindex(")") + 2 :].split()[1]) == pid:
                found.append(int(entry))
    return found


def _gone(pids, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        alive = [p for p in pids if os.path.exists(f"/proc/{p}")]
        try:
            alive = [p for p in alive if open(f"/proc/{p}/stat").read().split()[2] not in "ZX"]
        except OSError:
            pass
        if not alive:
            return True
        time.sleep(0.05)
    return False


def _nothing_half_written(out):
    assert not glob.glob(f"{out}/*.tmp") and not glob.glob(f"{out}/stats/*.tmp")
    assert not os.path.exists(os.path.join(out, "meta_data.json"))
    for path in glob.glob(f"{out}/*.tfrecord"):  # whatever is visible is complete
        count = sum(1 for _ in read_records(path))
        with open(os.path.join(out, "stats", os.path.basename(path) + ".json")) as f:
            assert json.load(f)["instances"] == count > 0


@pytest.mark.parametrize(
    "flag, value, says",
    [
        ("masked_lm_prob", "2", "masked_lm_prob=2.0 must be in (0, 1)"),
        ("masked_lm_prob", "0", "masked_lm_prob=0.0 must be in (0, 1)"),
        ("ngram", "0", "ngram=0 must be at least 1"),
        ("max_predictions_per_seq", "0", "max_predictions_per_seq=0 must be >= 1"),
        ("max_predictions_per_seq", "-3", "max_predictions_per_seq=-3 must be >= 1"),
        ("block_size", "0", "block_size=0 must be >= 1"),
        ("random_seed", "-1", "random_seed=-1 must be >= 0"),
    ],
)
def test_a_setting_out_of_range_is_one_line_before_any_worker(tmp_path, flag, value, says):
    cfg = config(f"{_need_data()}/corpus/wikitext-2/valid.txt", tmp_path / "out")
    args = [a for a in cli_args(cfg, num_workers=2) if not a.startswith(f"--{flag}=")]
    start = time.time()
    out = run_tool([*args, f"--{flag}={value}"], timeout=TIMEOUT)
    _one_line_error(out, says)
    assert time.time() - start < TIMEOUT
    assert not os.path.exists(tmp_path / "out")  # refused before the output directory


def test_a_bad_input_line_found_by_a_worker_ends_the_job_at_once(tmp_path):
    """A malformed JSONL line is found only when a worker reads its block: the job ends
    with that one line while the other worker is still busy, which is stopped, and no
    temporary file stays."""
    bad = tmp_path / "a-first.jsonl"
    bad.write_text('{"text": "A fine first line. And more."}\n{"text": broken\n')
    d = _need_data() / "corpus"
    cfg = config(
        f"{bad},{d}/wikitext-2/valid.txt",
        tmp_path / "out",
        split_sentences=True,
        dupe_factor=8,
        block_size=131072,
        num_output_shards=4,
    )
    start = time.time()
    out = run_tool(cli_args(cfg, num_workers=2), timeout=TIMEOUT)
    _one_line_error(out, f"{bad}:2: invalid JSON")
    assert time.time() - start < TIMEOUT
    _nothing_half_written(cfg.output_dir)
    assert len(glob.glob(f"{cfg.output_dir}/*.tfrecord")) < 4  # it did not run to the end


def _patched_tool(patch, args):
    """The tool run with `args` in a process that first runs `patch` (Python that replaces a
    function of ours): the workers it forks inherit the replacement."""
    script = textwrap.dedent(patch) + textwrap.dedent(
        """
        import runpy, sys
        sys.argv[0] = "create_pretraining_data"
        runpy.run_module("data_pipeline.pretraining.create_pretraining_data", run_name="__main__")
        """
    )
    return Cli("-c", script, *args, timeout=TIMEOUT).wait()


# The instance maker of every worker failing at start-up (a stand-in for whatever can fail
# there: a tokenizer file unreadable on the worker, jieba, memory).
BROKEN_WORKERS = """
    from data_pipeline.pretraining import shards
    def broken(config):
        raise RuntimeError("instance maker exploded\\nsecond line of the error")
    shards.make_instance_maker = broken
    """


def test_a_worker_failing_at_start_up_ends_the_job_instead_of_a_restart_loop(tmp_path):
    cfg = _heavy(tmp_path)
    start = time.time()
    out = _patched_tool(BROKEN_WORKERS, cli_args(cfg, num_workers=2))
    assert time.time() - start < TIMEOUT, "the job hung"
    err = _one_line_error(out, "failed: RuntimeError: instance maker exploded", "pretrain-0000")
    assert "second line" not in err
    _nothing_half_written(cfg.output_dir)
    assert not glob.glob(f"{cfg.output_dir}/*.tfrecord")


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_a_killed_worker_ends_the_job_with_one_line(tmp_path):
    cfg = _heavy(tmp_path)
    tool = Cli(*TOOL, *cli_args(cfg, num_workers=2), timeout=TIMEOUT)
    try:
        deadline = time.time() + TIMEOUT
        while len(glob.glob(f"{cfg.output_dir}/*.tfrecord.tmp")) < 2:
            assert tool.proc.poll() is None and time.time() < deadline, tool.report()
            time.sleep(0.02)
        workers = _children(tool.proc.pid)
        assert len(workers) == 2
        os.kill(workers[0], signal.SIGKILL)  # as the kernel's OOM killer would
        tool.wait()
    finally:
        tool.kill()
    _one_line_error(tool, "a worker process died (killed, or out of memory?) before pretrain-")
    assert _gone(workers), "a worker outlived the job"
    _nothing_half_written(cfg.output_dir)


# Every shard's temporary file on /dev/full (ENOSPC at the first write).
FULL_DISK = """
    from data_pipeline.io import filesystem
    real = filesystem.open_new
    def full(path, mode="wb", encoding="utf-8"):
        if path.endswith(".tfrecord.tmp"):
            return open("/dev/full", "wb")
        return real(path, mode, encoding)
    filesystem.open_new = full
    """


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("workers", [1, 2])
def test_a_full_disk_names_the_file(tmp_path, workers):
    cfg = _heavy(tmp_path, dupe_factor=1)
    out = _patched_tool(FULL_DISK, cli_args(cfg, num_workers=workers))
    err = _one_line_error(out, "No space left on device", f"{cfg.output_dir}/pretrain-0000")
    assert ".tfrecord" in err
    _nothing_half_written(cfg.output_dir)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_ctrl_c_stops_the_workers_keeps_complete_shards_and_exits_130(tmp_path):
    """SIGINT to the whole process group, as a terminal's Ctrl-C: one line, exit 130, the
    workers end, no temporary file, every visible shard complete; a re-run resumes and
    writes the bytes of an uninterrupted run."""
    cfg = _heavy(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, *TOOL, *cli_args(cfg, num_workers=2)],
        cwd=ROOT,
        env=CLI_ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell gives a job
    )
    try:
        deadline = time.time() + TIMEOUT
        while len(glob.glob(f"{cfg.output_dir}/*.tfrecord.tmp")) < 2:
            assert proc.poll() is None and time.time() < deadline, proc.communicate()
            time.sleep(0.02)
        workers = _children(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, (proc.returncode, stderr)
    assert stderr.strip().count("\n") == 0 and "Traceback" not in stderr + stdout, stderr
    assert stderr.startswith("error: interrupted"), stderr
    assert len(workers) == 2 and _gone(workers), "a worker outlived the job"
    _nothing_half_written(cfg.output_dir)
    assert not os.path.exists(os.path.join(cfg.output_dir, ".lock"))

    rerun = run_tool(cli_args(cfg, num_workers=2), timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    fresh = config(cfg.input_file, tmp_path / "fresh", **_heavy_settings(cfg))
    again = run_tool(cli_args(fresh, num_workers=2), timeout=300)
    assert again.returncode == 0, again.stderr
    assert digests(cfg.output_dir) == digests(fresh.output_dir)


def _heavy_settings(cfg):
    keys = ("split_sentences", "dupe_factor", "block_size", "num_output_shards")
    return {k: getattr(cfg, k) for k in keys}
