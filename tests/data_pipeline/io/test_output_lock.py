"""One writer per output directory: `data_pipeline.io.locks.output_lock`, held by
create_pretraining_data and the runners. Real processes: a second writer fails at once with
one line naming the first, a holder killed with SIGKILL frees the directory, a killed data
tool leaves no worker behind, and the first writer's output stays complete.

The data tool and run_pretraining runs use ../shared/data (skipped without it); the lock's
own tests need nothing.
"""

import glob
import json
import os
import signal
import socket
import textwrap
import time

import pytest

from data_pipeline.io.locks import OutputLocked, output_lock, read_lock_holder
from data_pipeline.records import read_records
from tests.support.harness import SHARED_DATA, Cli, run_cli
from tests.support.in_process import run_command
from tests.support.tiny import write_tiny_config

HOST = socket.gethostname()
TAIL = "); wait for it to finish or use another directory"

# Takes the lock on argv[1] (shared if argv[2] == "shared"), says so, and sleeps.
HOLDER = textwrap.dedent(
    """
    import sys, time
    from data_pipeline.io.locks import output_lock
    lock = output_lock(sys.argv[1], "holder-test", shared=sys.argv[2:] == ["shared"])
    print("locked", flush=True)
    time.sleep(600)
    """
)

# Tries the lock on argv[1]: exit 0 if it got it, else the message and exit 1.
PROBE = textwrap.dedent(
    """
    import sys
    from data_pipeline.io.locks import OutputLocked, output_lock
    try:
        output_lock(sys.argv[1], "probe", shared=sys.argv[2:] == ["shared"]).release()
    except OutputLocked as e:
        print(e)
        sys.exit(1)
    """
)


def _need_data():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent")
    return SHARED_DATA


def _wait(predicate, cli: Cli, what, timeout=60):
    deadline = time.time() + timeout
    while not predicate():
        assert cli.proc.poll() is None, f"ended before {what}\n{cli.report()}"
        assert time.time() < deadline, f"timed out waiting for {what}\n{cli.report()}"
        time.sleep(0.01)


def _hold(directory, shared=False) -> Cli:
    """A process holding the lock on `directory` (kill it when done)."""
    cli = Cli("-c", HOLDER, directory, *(["shared"] if shared else []), timeout=120)
    _wait(lambda: "locked" in cli.stdout, cli, "the holder took the lock")
    return cli


def _probe(directory, shared=False) -> Cli:
    return run_cli("-c", PROBE, directory, *(["shared"] if shared else []), timeout=60)


def _assert_locked_message(message, directory, pid, what):
    assert "\n" not in message.strip(), message
    head = f"{directory} is in use by another writer (pid {pid} on {HOST}, {what}, since "
    assert message.startswith(head), message
    assert message.rstrip("\n").endswith(TAIL), message


# --- the lock ---------------------------------------------------------------------------------


def test_second_writer_fails_at_once_and_a_killed_holder_frees_the_lock(tmp_path):
    out = tmp_path / "out"
    holder = _hold(out)
    try:
        start = time.time()
        with pytest.raises(OutputLocked) as caught:
            output_lock(out, "second")
        assert time.time() - start < 2  # no waiting
        assert isinstance(caught.value, OSError)  # the runners' one-line handler catches it
        _assert_locked_message(str(caught.value), out, holder.proc.pid, "holder-test")
        assert caught.value.holder["pid"] == holder.proc.pid
        os.kill(holder.proc.pid, signal.SIGKILL)
        holder.proc.wait()
    finally:
        holder.kill()
    # The killed holder's lock file stays behind, with its record: a stale lock.
    assert read_lock_holder(out)["pid"] == holder.proc.pid
    with output_lock(out, "after the kill"):
        assert read_lock_holder(out)["pid"] == os.getpid()
        assert read_lock_holder(out)["what"] == "after the kill"
        probe = _probe(out)  # and now this process excludes others
        assert probe.returncode == 1, probe.report()
        _assert_locked_message(probe.stdout, out, os.getpid(), "after the kill")
    assert not (out / ".lock").exists()  # a clean release removes the file
    assert out.is_dir()  # not created by this lock: kept


def test_reentrant_in_one_process_and_nothing_left_behind(tmp_path):
    out = tmp_path / "a" / "b"
    outer = output_lock(out, "outer")
    inner = output_lock(f"{out}/", "inner")  # another spelling of the same directory
    child = output_lock(out / "run_0", "a subdirectory")  # its own lock file
    assert (out / ".lock").exists() and (out / "run_0" / ".lock").exists()
    assert read_lock_holder(out)["what"] == "outer"
    child.release()
    assert not (out / "run_0").exists()  # created by its lock, still empty: removed
    inner.release()
    assert _probe(out).returncode == 1  # the outer acquisition still holds it
    outer.release()
    outer.release()  # releasing twice is harmless
    assert not (tmp_path / "a").exists()  # every directory the lock created, empty: removed
    assert _probe(out).returncode == 0
    with output_lock(out, "as a context manager") as lock:
        assert lock.held
        (out / "data").write_text("x")
    assert not lock.held and sorted(os.listdir(out)) == ["data"]  # kept: not empty


@pytest.mark.parametrize("depth", ["itself", "a parent"])
def test_a_dangling_link_as_the_output_directory_is_named(tmp_path, depth):
    """R-C11: a dangling symbolic link as the output directory (or above it) was
    "cannot be created: File exists", naming neither the link nor where it points."""
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    out = link if depth == "itself" else link / "run"
    with pytest.raises(OSError) as excinfo:
        with output_lock(str(out), "test"):
            pass
    message = str(excinfo.value)
    assert "\n" not in message and message.startswith(f"{out} cannot be created: ")
    assert f"{link} is a dangling symbolic link (to {tmp_path / 'nowhere'})" in message
    assert not (tmp_path / "nowhere").exists()


def test_shared_holders_coexist_and_exclude_an_exclusive_one(tmp_path):
    holder = _hold(tmp_path / "out", shared=True)
    try:
        with output_lock(tmp_path / "out", "second task", shared=True):
            pass
        probe = _probe(tmp_path / "out")
        assert probe.returncode == 1, probe.report()
        assert _probe(tmp_path / "out", shared=True).returncode == 0
    finally:
        holder.kill()


def test_remote_paths_are_not_locked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with output_lock("gs://bucket/run", "remote") as lock:
        assert lock.remote and not lock.held
        with output_lock("gs://bucket/run", "a second writer"):  # not detected (no lock)
            pass
    assert os.listdir(tmp_path) == []  # nothing written locally


# --- create_pretraining_data ------------------------------------------------------------------

TOOL = ("-m", "data_pipeline.pretraining.create_pretraining_data")


def _data_args(output_dir, dupe_factor, seed=12345, workers=1, shards=4):
    data = _need_data()
    return [
        f"--input_file={data}/corpus/wikitext-2/valid.txt",
        f"--output_dir={output_dir}",
        f"--spm_model_file={data}/spm/de-30k-clean.model",
        "--max_seq_length=128",
        "--max_predictions_per_seq=20",
        f"--dupe_factor={dupe_factor}",
        f"--random_seed={seed}",
        "--split_sentences",
        "--block_size=131072",
        f"--num_output_shards={shards}",
        f"--num_workers={workers}",
    ]


def _assert_complete(out, shards=4):
    """meta_data.json, and every shard whole (CRCs) with the count it and its stats say."""
    with open(os.path.join(out, "meta_data.json")) as f:
        meta = json.load(f)
    assert len(meta["shards"]) == shards
    fingerprints = set()
    for entry in meta["shards"]:
        path = os.path.join(out, entry["file"])
        count = sum(1 for _ in read_records(path))
        with open(os.path.join(out, "stats", entry["file"] + ".json")) as f:
            stats = json.load(f)
        assert count == entry["instances"] == stats["instances"] > 0
        fingerprints.add(stats["fingerprint"])
    assert len(fingerprints) == 1  # one job's shards only
    assert meta["instances"] == sum(e["instances"] for e in meta["shards"])
    assert sorted(glob.glob(f"{out}/*.tfrecord")) == sorted(
        os.path.join(out, e["file"]) for e in meta["shards"]
    )
    assert not glob.glob(f"{out}/*.tmp") and not os.path.exists(os.path.join(out, ".lock"))
    return meta


def test_create_pretraining_data_second_run_fails_and_first_completes(tmp_path):
    out = tmp_path / "out"
    first = Cli(*TOOL, *_data_args(out, dupe_factor=2), timeout=120)
    try:
        _wait(
            lambda: (read_lock_holder(out) or {}).get("pid") == first.proc.pid,
            first,
            "the first run took the lock",
        )
        # Paused, the first run keeps its lock however fast it would otherwise finish.
        os.kill(first.proc.pid, signal.SIGSTOP)
        # Another seed: mixed into the first's shards, it would be silently wrong data.
        second = run_command(*TOOL, *_data_args(out, dupe_factor=2, seed=7))
        assert first.proc.poll() is None, "the first run ended too soon for this test"
        os.kill(first.proc.pid, signal.SIGCONT)
        assert second.returncode == 1, second.report()
        assert second.stderr.startswith("error: "), second.report()
        _assert_locked_message(
            second.stderr[len("error: ") :], out, first.proc.pid, "create_pretraining_data"
        )
        first.wait()
    finally:
        first.kill()
    assert first.returncode == 0, first.report()
    assert "→" in first.stdout
    _assert_complete(out)


def _children(pid):
    """{child pid: start time} of the processes whose parent is `pid` (from /proc)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat and int(stat[1]) == pid:
                found[int(entry)] = stat[19]
    return found


def _stat(pid):
    """/proc/PID/stat fields after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _alive(pid, start_time):
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X") and stat[19] == start_time


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_kill_9_of_the_data_tool_leaves_no_worker_and_a_rerun_completes(tmp_path):
    # Two shards of several seconds each: killed a moment after they start, the workers
    # would go on writing (and holding the lock) for seconds if they outlived the tool.
    out = tmp_path / "out"
    args = _data_args(out, dupe_factor=12, workers=2, shards=2)
    tool = Cli(*TOOL, *args, timeout=120)
    try:
        _wait(lambda: len(_children(tool.proc.pid)) == 2, tool, "two workers")
        _wait(lambda: len(glob.glob(f"{out}/*.tfrecord.tmp")) == 2, tool, "the workers writing")
        workers = _children(tool.proc.pid)
        os.kill(tool.proc.pid, signal.SIGKILL)
        tool.proc.wait()
    finally:
        tool.kill()
    deadline = time.time() + 1.5
    while any(_alive(p, t) for p, t in workers.items()) and time.time() < deadline:
        time.sleep(0.01)
    assert not [p for p, t in workers.items() if _alive(p, t)], "workers outlived the tool"
    assert not glob.glob(f"{out}/*.tfrecord") and not os.path.exists(out / "meta_data.json")

    # At once: no orphan holds the lock (in this process, one worker: nothing to fork).
    rerun = run_command(*TOOL, *_data_args(out, dupe_factor=12, workers=1, shards=2))
    assert rerun.returncode == 0, rerun.report()
    _assert_complete(out, shards=2)


# --- a runner ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pretraining_flags(tmp_path_factory):
    """A flagfile for run_pretraining.py: one small shard and a tiny model."""
    from data_pipeline.pretraining.data_config import DataConfig
    from data_pipeline.pretraining.local_writer import create_pretraining_data

    data = _need_data()
    root = tmp_path_factory.mktemp("output_lock")
    with open(data / "corpus" / "wikitext-2" / "valid.txt", encoding="utf-8") as f:
        (root / "train.txt").write_text("".join(f.readlines()[:300]), encoding="utf-8")
    create_pretraining_data(
        DataConfig.from_flags(
            input_file=str(root / "train.txt"),
            output_dir=str(root / "records"),
            spm_model_file=str(data / "spm" / "de-30k-clean.model"),
            max_seq_length=64,
            max_predictions_per_seq=10,
            dupe_factor=1,
            split_sentences=True,
            num_output_shards=1,
        ),
        progress_every=1e9,
    )
    write_tiny_config(
        root / "albert_config.json",
        vocab_size=30000,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    flags = {
        "input_file": f"{root}/records/*.tfrecord",
        "albert_config_file": root / "albert_config.json",
        "train_batch_size": 4,
        "num_train_steps": 1000000,  # runs until killed
        "num_warmup_steps": 0,
        "steps_per_loop": 1000,
        "save_checkpoints_steps": 1000000,
    }
    (root / "run.flags").write_text("".join(f"--{k}={v}\n" for k, v in flags.items()))
    return root / "run.flags"


def test_run_pretraining_second_run_on_one_output_dir_fails_and_writes_nothing(
    tmp_path, pretraining_flags
):
    out = tmp_path / "run"
    args = ["--flagfile", pretraining_flags, "--output_dir", out]
    first = Cli("run_pretraining.py", *args, "--seed=7", timeout=180)
    try:
        _wait(lambda: (out / "run_config.json").exists(), first, "run_config.json", timeout=120)
        assert read_lock_holder(out)["pid"] == first.proc.pid
        config = (out / "run_config.json").read_bytes()
        # Paused, the first run keeps its lock without taking the CPU from the second.
        os.kill(first.proc.pid, signal.SIGSTOP)
        second = run_command("run_pretraining.py", *args, "--seed=8")
        assert first.proc.poll() is None, f"the first run ended\n{first.report()}"
    finally:
        first.kill()
    assert second.returncode == 1, second.report()
    errors = [line for line in second.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in second.stderr, second.report()
    _assert_locked_message(errors[0][len("error: ") :], out, first.proc.pid, "run_pretraining")
    assert (out / "run_config.json").read_bytes() == config  # the first's (seed 7)
    assert json.loads(config)["flags"]["seed"] == 7
    assert not [n for n in os.listdir(out) if str(os.getpid()) in n]  # no temp file (ran here)


def test_setup_run_locks_each_run_directory_reentrantly(tmp_path):
    """In one process (run_classifier --num_runs: OUTPUT_DIR/run_i), locking the run's
    directory and its subdirectories, or one directory twice, never fails against itself;
    the locks last until the process exits, which releases them."""
    script = textwrap.dedent(
        """
        import os, sys, time
        from albert_tf.training.run_setup import setup_run
        from albert_tf.training import TrainerConfig
        out = sys.argv[1]
        for d in (out, out + "/run_0", out + "/run_1", out):
            config = TrainerConfig(output_dir=d, num_train_steps=1, learning_rate=1e-3)
            setup_run("run_classifier", config, strategy_name="default", tpu=None,
                      num_gpus=0, train_batch_size=8, training=False, run_config={})
        print("locked", flush=True)
        while not os.path.exists(out + "/../go"):
            time.sleep(0.01)
        """
    )
    out = tmp_path / "out"
    cli = Cli("-c", script, out, timeout=120)
    try:
        _wait(lambda: "locked" in cli.stdout, cli, "setup_run")
        for d in (out, out / "run_0", out / "run_1"):
            probe = _probe(d)
            assert probe.returncode == 1, probe.report()
            _assert_locked_message(probe.stdout, d, cli.proc.pid, "run_classifier")
        (tmp_path / "go").touch()
        cli.wait()
    finally:
        cli.kill()
    assert cli.returncode == 0, cli.report()
    for d in (out, out / "run_0", out / "run_1"):
        assert (d / "run_config.json").exists() and not (d / ".lock").exists()


# --- a planted lock link (real processes) -------------------------------------------------------


def _plant_lock_link(tmp_path, out):
    """`out`/.lock as a symbolic link to a victim file outside `out`; returns the victim."""
    victim = tmp_path / "victim" / "authorized_keys"
    victim.parent.mkdir()
    victim.write_bytes(b"ssh-ed25519 AAAA... someone@somewhere\n")
    out.mkdir(parents=True, exist_ok=True)
    (out / ".lock").symlink_to(victim)
    return victim


def _assert_refused_link(run, out, victim, before):
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert run.returncode == 1 and len(errors) == 1, run.report()
    assert "Traceback" not in run.stderr, run.report()
    assert f"{out}/.lock is a symbolic link: refusing to lock through it" in errors[0]
    assert victim.read_bytes() == before  # byte for byte
    assert os.listdir(victim.parent) == [victim.name]
    assert os.path.islink(out / ".lock")


def test_create_pretraining_data_refuses_a_planted_lock_link(tmp_path):
    out = tmp_path / "out"
    victim = _plant_lock_link(tmp_path, out)
    before = victim.read_bytes()
    run = run_command(*TOOL, *_data_args(out, dupe_factor=1, workers=2))
    _assert_refused_link(run, out, victim, before)
    assert not glob.glob(f"{out}/*.tfrecord*") and not os.path.exists(out / "meta_data.json")


def test_run_pretraining_refuses_a_planted_lock_link(tmp_path, pretraining_flags):
    out = tmp_path / "run"
    victim = _plant_lock_link(tmp_path, out)
    before = victim.read_bytes()
    run = run_command("run_pretraining.py", "--flagfile", pretraining_flags, "--output_dir", out)
    _assert_refused_link(run, out, victim, before)
    assert sorted(os.listdir(out)) == [".lock"]  # nothing written
