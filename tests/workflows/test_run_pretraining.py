"""run_pretraining.py end to end, as a user runs it: subprocesses on small real TFRecords
(WikiText-2 through create_pretraining_data and the ALBERT-recipe SentencePiece model) and a
tiny model. Logs, TensorBoard events, metrics.jsonl, checkpoints and best/; resume after
SIGKILL and SIGTERM ends with the weights of an uninterrupted run; mirrored (two logical
CPUs) gives the default strategy's losses and weights; multi-worker mirrored on two local
processes; bfloat16, gradient accumulation, --init_checkpoint; one-line errors naming the
file for bad input.

Every process pays TensorFlow's start-up, so runs are shared: one uninterrupted reference
run (module fixture) is the basic-run check, the baseline of the resume tests, of the
mirrored and the gradient-accumulation comparisons, and the checkpoint the bad-input and
--init_checkpoint runs load; the bad-input runs start together; the mirrored runs share one
two-CPU process (the `mirrored` fixture). Ctrl-C is every runner's one code path
(test_resume_guards runs it end to end). Subprocesses see no GPU
(CUDA_VISIBLE_DEVICES=-1): these are CPU tests whose comparisons need one device kind.
"""

import glob
import json
import os
import re
import signal
import socket
import time

import numpy as np
import pytest

from tests.support.harness import (
    CLI_ENV,
    SHARED_DATA,
    WORKFLOW_CONFIG,
    Cli,
    run_on_two_cpus,
    two_cpu_driver,
)
from tests.support.in_process import run_command
from tests.support.tpu_recorder import record_tpu

SEQ, PRED = 64, 10
STEPS = 60  # reference run: optimizer steps
BATCH = 8  # global batch
CKPT_EVERY = 10
LOOP = 5
TIMEOUT = 240  # seconds for one subprocess, whatever happens

TINY = WORKFLOW_CONFIG


# --- helpers ----------------------------------------------------------------------------------


def _need_data():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent")
    return SHARED_DATA


def start(args, log_prefix, script="run_pretraining.py", env=None) -> Cli:
    """A run_pretraining.py (or `script`) subprocess, logs at `log_prefix`.out/.err."""
    return Cli(script, *args, log_prefix=log_prefix, env=env, timeout=TIMEOUT)


def run(args, log_prefix=None, script="run_pretraining.py"):
    """The runner `script` (run_pretraining.py, run_classifier.py, ...) with `args`, in this
    process (tests.support.in_process; `log_prefix` is a process' and unused here)."""
    return run_command(script, *args)


def ok(r: Cli) -> Cli:
    assert r.rc == 0, r.report()
    return r


def metrics(output_dir, split="train"):
    with open(os.path.join(output_dir, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    return [r for r in rows if r["split"] == split]


def last_rows_by_step(rows):
    """A resumed run re-writes the rows of the steps after its checkpoint: keep the last."""
    return {r["step"]: r for r in rows}


def checkpoint_steps(output_dir):
    return sorted(
        int(re.search(r"ckpt-(\d+)\.index$", p).group(1))
        for p in glob.glob(os.path.join(output_dir, "checkpoints", "ckpt-*.index"))
    )


def latest_checkpoint(output_dir):
    import tensorflow as tf

    return tf.train.latest_checkpoint(os.path.join(output_dir, "checkpoints"))


def checkpoint_values(prefix):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(prefix)
    # (the iterator state is a variant tensor, which has no numpy form)
    return {
        k: reader.get_tensor(k)
        for k, dtype in reader.get_variable_to_dtype_map().items()
        if k not in ("_CHECKPOINTABLE_OBJECT_GRAPH", "save_counter/.ATTRIBUTES/VARIABLE_VALUE")
        and dtype != tf.variant
    }


# Another split of the same batch (replicas, micro-batches) sums the gradients in another
# order. The official LAMB divides raw moments, m/(√v+ε) with √v ≈ 0.03·|g| early on, so a
# gradient near ε/0.03 ≈ 3e-5 turns its last-bit differences into ~1e-5 weight differences
# (seen: one element of 4,096 at 1.2e-5).
SPLIT_ATOL = 3e-5


def assert_same_weights(prefix_a, prefix_b, rtol=1e-5, atol=1e-6):
    """Every variable of two checkpoints (model, optimizer slots, step) within float
    tolerance."""
    a, b = checkpoint_values(prefix_a), checkpoint_values(prefix_b)
    assert sorted(a) == sorted(b)
    floats = 0
    for key in sorted(a):
        if a[key].dtype.kind == "f":
            floats += 1
            np.testing.assert_allclose(b[key], a[key], rtol=rtol, atol=atol, err_msg=key)
        else:
            assert np.array_equal(a[key], b[key]), key
    assert floats > 90  # model variables and two Adam-style slots each: not a vacuous check


def wait_for(predicate, proc: Cli, what, timeout=TIMEOUT):
    deadline = time.time() + timeout
    while not predicate():
        assert proc.proc.poll() is None, f"the run ended before {what}\n{proc.report()}"
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def sigkill_after_first_checkpoint(args, out, log_prefix, script="run_pretraining.py") -> int:
    """Starts `args` (writing to `out`), SIGKILLs it as soon as its first checkpoint is
    complete (its state file written); returns the step of its last checkpoint."""
    killed = start(args, log_prefix, script=script)
    try:
        wait_for((out / "checkpoints" / "checkpoint").exists, killed, "the first checkpoint")
        killed.proc.send_signal(signal.SIGKILL)
        killed.wait()
    finally:
        killed.kill()
    assert killed.rc == -signal.SIGKILL, killed.report()
    return checkpoint_steps(out)[-1]


def error_line(r: Cli) -> str:
    """The one `error:` line on stderr of a failed run (exit 1)."""
    assert r.rc == 1, r.report()
    lines = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, r.report()
    assert "Traceback" not in r.stderr, r.report()
    return lines[0]


def free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def start_workers(args, log_prefix, ports=None) -> list[Cli]:
    """The same command on a chief and a worker of a local two-worker cluster (TF_CONFIG on
    `ports`, free ones by default); logs at `log_prefix`_chief/_worker."""
    ports = ports or [free_port(), free_port()]
    cluster = {"chief": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}"]}
    runs = []
    for kind in ("chief", "worker"):
        task = {"cluster": cluster, "task": {"type": kind, "index": 0}}
        env = dict(CLI_ENV, TF_CONFIG=json.dumps(task))
        runs.append(start(args, f"{log_prefix}_{kind}", env=env))
    return runs


# --- shared data and the reference run -----------------------------------------------------------


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """Train shards (4), an eval shard from other documents, records of another
    max_seq_length, the tiny config, a config of another size and the run's flagfile."""
    from data_pipeline.pretraining.data_config import DataConfig
    from data_pipeline.pretraining.local_writer import create_pretraining_data

    data = _need_data()
    root = tmp_path_factory.mktemp("run_pretraining")
    with open(data / "corpus" / "wikitext-2" / "valid.txt", encoding="utf-8") as f:
        lines = f.readlines()
    (root / "train.txt").write_text("".join(lines[:800]), encoding="utf-8")
    (root / "eval.txt").write_text("".join(lines[800:1000]), encoding="utf-8")

    def make(text, out, seq=SEQ, shards=4):
        return create_pretraining_data(
            DataConfig.from_flags(
                input_file=str(root / text),
                output_dir=str(root / out),
                spm_model_file=str(data / "spm" / "de-30k-clean.model"),
                max_seq_length=seq,
                max_predictions_per_seq=PRED,
                dupe_factor=1,
                split_sentences=True,
                num_output_shards=shards,
                block_size=1 << 15,
            ),
            progress_every=1e9,
        )

    meta = make("train.txt", "train")
    assert meta["instances"] > 20 * BATCH
    make("eval.txt", "eval", shards=1)
    make("train.txt", "seq128", seq=128, shards=1)
    (root / "albert_config.json").write_text(json.dumps(TINY))
    (root / "other_config.json").write_text(json.dumps(dict(TINY, hidden_size=48)))
    flags = {
        "input_file": f"{root}/train/*.tfrecord",
        "eval_input_file": f"{root}/eval/*.tfrecord",
        "albert_config_file": root / "albert_config.json",
        "max_seq_length": SEQ,
        "max_predictions_per_seq": PRED,
        "train_batch_size": BATCH,
        "eval_batch_size": BATCH,
        "max_eval_steps": 4,
        "num_train_steps": STEPS,
        "num_warmup_steps": 5,
        "learning_rate": 3e-2,
        "steps_per_loop": LOOP,
        "save_checkpoints_steps": CKPT_EVERY,
        "seed": 7,
    }
    (root / "run.flags").write_text("".join(f"--{k}={v}\n" for k, v in flags.items()))
    return root


def base_args(workdir, output_dir, *extra):
    return ["--flagfile", workdir / "run.flags", "--output_dir", output_dir, *extra]


@pytest.fixture(scope="module")
def reference(workdir):
    """The uninterrupted run (default strategy, float32) every other run is compared with."""
    out = workdir / "reference"
    r = ok(run(base_args(workdir, out), workdir / "reference"))
    return out, r


# --- 1. a basic run -------------------------------------------------------------------------------


def test_basic_run_writes_config_logs_events_checkpoints_and_best(workdir, reference):
    out, r = reference
    # run_config.json: the flags (from --flagfile and the command line) and both configs
    with open(out / "run_config.json") as f:
        config = json.load(f)
    assert config["flags"]["output_dir"] == str(out)
    assert config["flags"]["input_file"] == f"{workdir}/train/*.tfrecord"  # from the flagfile
    assert config["flags"]["num_train_steps"] == STEPS
    assert config["albert_config"]["hidden_size"] == 64
    assert config["albert_config"]["vocab_size"] == 30000
    assert config["trainer_config"]["num_train_steps"] == STEPS
    assert config["trainer_config"]["learning_rate"] == 3e-2
    assert config["trainer_config"]["seed"] == 7
    assert config["replicas"] == 1
    assert len(config["input_files"]) == 4

    # progress lines: step, loss, both accuracies, ETA, one per loop
    progress = re.findall(
        r"^step (\d+)/(\d+) \| mlm_loss ([\d.]+), sop_loss ([\d.]+), "
        r"mlm_accuracy ([\d.]+), sop_accuracy ([\d.]+), loss ([\d.]+) \|.*"
        r"ex/s \| ETA (<= )?\d+:\d\d:\d\d( \(start-up included\))?$",
        r.stdout,
        re.M,
    )
    assert [int(p[0]) for p in progress] == list(range(LOOP, STEPS + 1, LOOP)), r.stdout
    assert all(int(p[1]) == STEPS for p in progress)
    assert re.search(r"^eval step 60: .*mlm_accuracy", r.stdout, re.M)

    # metrics.jsonl: one train row per loop, the loss the sum of its terms; one eval row
    train = metrics(out)
    assert [row["step"] for row in train] == list(range(LOOP, STEPS + 1, LOOP))
    for row in train:
        assert row["loss"] == pytest.approx(row["mlm_loss"] + row["sop_loss"])
        assert 0 <= row["mlm_accuracy"] <= 1 and 0 <= row["sop_accuracy"] <= 1
        assert np.isfinite(row["grad_norm"]) and row["examples_per_second"] > 0
    assert train[0]["mlm_loss"] == pytest.approx(np.log(30000), rel=0.05)  # untrained
    assert train[-1]["mlm_loss"] < train[0]["mlm_loss"] - 2.0  # it learns
    assert train[-1]["learning_rate"] == 0.0  # decayed to 0
    (ev,) = metrics(out, "eval")
    assert ev["step"] == STEPS and np.isfinite(ev["loss"])
    with open(out / "final_metrics.json") as f:
        final = json.load(f)
    assert final["step"] == STEPS and final["eval"]["loss"] == pytest.approx(ev["loss"])

    # TensorBoard scalars in train/ and eval/
    tags = {}
    for split in ("train", "eval"):
        events = glob.glob(str(out / split / "events.out.tfevents.*"))
        assert events, split
        tags[split] = _scalar_tags(events)
    assert {
        "loss",
        "mlm_loss",
        "sop_loss",
        "mlm_accuracy",
        "sop_accuracy",
        "learning_rate",
        "examples_per_second",
        "grad_norm",
    } <= set(tags["train"])
    assert sorted(tags["train"]["loss"]) == list(range(LOOP, STEPS + 1, LOOP))
    assert {"loss", "mlm_accuracy", "sop_accuracy"} <= set(tags["eval"])
    assert tags["eval"]["loss"] == [STEPS]

    # checkpoints every CKPT_EVERY steps (the last 5 kept), and the best one
    assert checkpoint_steps(out) == [20, 30, 40, 50, 60]
    assert latest_checkpoint(out).endswith("ckpt-60")
    with open(out / "best" / "best.json") as f:
        best = json.load(f)
    assert best["metric"] == "mlm_accuracy" and best["step"] == STEPS
    assert best["value"] == pytest.approx(ev["mlm_accuracy"])
    assert os.path.exists(best["checkpoint"] + ".index")


def _scalar_tags(paths):
    """{tag: [steps]} of the scalar summaries in TensorBoard event files."""
    import tensorflow as tf

    tags = {}
    for path in paths:
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                tags.setdefault(value.tag, []).append(event.step)
    return tags


# --- 2 and 3. SIGKILL and SIGTERM: resume ends where the uninterrupted run ends -----------------


DROPOUT_STEPS = 20


def _dropout_args(workdir, strategy):
    """The run's flags with config dropout 0.1 (hidden and attention), DROPOUT_STEPS, no
    evaluation, under `strategy`."""
    config = workdir / "dropout_config.json"
    config.write_text(
        json.dumps(dict(TINY, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1))
    )
    return [
        "--flagfile",
        workdir / "run.flags",
        "--albert_config_file",
        config,
        "--num_train_steps",
        DROPOUT_STEPS,
        "--eval_input_file",
        "",
        "--strategy",
        strategy,
    ]


def _assert_dropout_on(reference, whole):
    """Dropout is on in the run at `whole`: its first logged loss differs from the dropout-0
    reference's at the same step."""
    ref_first, first = metrics(reference[0])[0], metrics(whole)[0]
    assert ref_first["step"] == first["step"] and ref_first["loss"] != first["loss"]


def _assert_bit_identical(whole, resumed):
    """Every variable (model, optimizer slots, step) of the two runs' last checkpoints equal
    bit for bit, and every logged loss."""
    a = checkpoint_values(latest_checkpoint(whole))
    b = checkpoint_values(latest_checkpoint(resumed))
    assert sorted(a) == sorted(b) and len(a) > 90
    for key in a:
        assert np.array_equal(a[key], b[key]), key
    want, got = last_rows_by_step(metrics(whole)), last_rows_by_step(metrics(resumed))
    assert sorted(got) == sorted(want)
    for step, row in got.items():
        assert row["loss"] == want[step]["loss"], step


@pytest.mark.slow
def test_sigkill_then_sigterm_with_dropout_resumes_bit_identical(workdir, reference):
    """One run with dropout, interrupted twice, always restarted with the same command:
    SIGKILL after its first checkpoint; SIGTERM during the first loop after the restart
    (exit 143, a checkpoint at the step reached, off the checkpoint schedule); then to the
    end: every variable and every logged loss equal, bit for bit, the same run's
    uninterrupted (the dropout masks are a function of (seed, step); the data position
    comes back with the checkpointed tf.data iterator)."""
    args = _dropout_args(workdir, "default")
    whole = workdir / "dropout_whole"
    ok(run([*args, "--output_dir", whole]))
    _assert_dropout_on(reference, whole)
    out = workdir / "interrupted"
    args = [*args, "--output_dir", out]

    # 1) SIGKILL as soon as the first checkpoint is complete (its state file written)
    at = sigkill_after_first_checkpoint(args, out, workdir / "killed")
    assert at < DROPOUT_STEPS - LOOP, f"the run got too far before it was killed: {at}"

    # 2) restart; SIGTERM as soon as it says it resumed (its handler is installed by then),
    #    i.e. during its first loop, which ends off the checkpoint schedule
    termed = start(args, workdir / "termed")
    try:
        wait_for(lambda: "resumed from" in termed.stdout, termed, "the resumed training")
        termed.proc.send_signal(signal.SIGTERM)
        termed.wait()
    finally:
        termed.kill()
    restored = os.path.join(out, "checkpoints", f"ckpt-{at}")
    assert f"resumed from {restored} at step {at}" in termed.stdout, termed.report()
    assert termed.rc == 143, termed.report()
    reached = at + LOOP  # the loop running when SIGTERM came is finished
    assert metrics(out)[-1]["step"] == reached, termed.report()
    assert re.search(rf"preempted at step {reached}\b", termed.stderr), termed.report()
    assert "SIGTERM" in termed.stdout
    assert reached % CKPT_EVERY  # so this checkpoint is SIGTERM's own
    assert latest_checkpoint(out).endswith(f"ckpt-{reached}")  # at the step reached

    # 3) restart to the end
    final = ok(run(args, workdir / "resumed"))
    resumed_from = os.path.join(out, "checkpoints", f"ckpt-{reached}")
    assert f"resumed from {resumed_from} at step {reached}" in final.stdout, final.report()
    assert checkpoint_steps(out)[-1] == DROPOUT_STEPS
    _assert_bit_identical(whole, out)


@pytest.fixture(scope="module")
def mirrored(workdir):
    """Two-replica runs (`--strategy mirrored`, two logical CPUs): the dropout command
    SIGKILLed after its first checkpoint (a process of its own), then in ONE two-CPU
    process (each process pays TensorFlow's start-up and the strategy's set-up) the
    reference run's command, the dropout command uninterrupted, and the killed run restarted
    with its command. {name: (output dir, its in_process.Ran or None)}, and the killed
    run's last checkpoint step under "killed_at"."""
    reference_args = ["--flagfile", workdir / "run.flags", "--strategy", "mirrored"]
    dropout = _dropout_args(workdir, "mirrored")
    driver = workdir / "mirrored_driver.py"
    driver.write_text(two_cpu_driver("run_pretraining"))
    resumed = workdir / "dropout_mirrored_resumed"
    at = sigkill_after_first_checkpoint(
        [*dropout, "--output_dir", resumed], resumed, workdir / "dropout_mirrored_killed", driver
    )
    assert at < DROPOUT_STEPS, f"the run ended before it could be killed: {at}"
    dirs = {
        "reference": workdir / "mirrored",
        "dropout_whole": workdir / "dropout_mirrored_whole",
        "dropout_resumed": resumed,
    }
    commands = [
        ["run_pretraining.py", *reference_args, "--output_dir", dirs["reference"]],
        ["run_pretraining.py", *dropout, "--output_dir", dirs["dropout_whole"]],
        ["run_pretraining.py", *dropout, "--output_dir", resumed],
    ]
    runs = run_on_two_cpus(*commands, timeout=3 * TIMEOUT)
    for r in runs:
        ok(r)
    out = {name: (d, r) for (name, d), r in zip(dirs.items(), runs)}
    out["killed_at"] = at
    return out


def test_sigkill_resume_on_two_mirrored_replicas_with_dropout_is_bit_identical(mirrored, reference):
    """Dropout on two mirrored replicas (each replica draws its own masks from (seed,
    step, replica)): a run SIGKILLed after its first checkpoint and restarted ends with
    exactly the weights, optimizer slots, step and logged losses of the same run
    uninterrupted. (TensorFlow cannot checkpoint a multi-device iterator, so the trainer
    skips the consumed batches.)"""
    whole, _ = mirrored["dropout_whole"]
    resumed, restarted = mirrored["dropout_resumed"]
    _assert_dropout_on(reference, whole)
    assert f"at step {mirrored['killed_at']}" in restarted.stdout, restarted.report()
    _assert_bit_identical(whole, resumed)


def test_nonfinite_loss_stops_the_run_naming_the_step_and_writes_nothing_from_it(workdir):
    """--learning_rate 1e6 (LAMB: every update multiplies the weights' scale by ~1e6) makes
    the loss non-finite within a few steps: exit 1, one line naming the step; every
    checkpoint written before is finite; no final_metrics.json."""
    out = workdir / "nan"
    r = run(base_args(workdir, out, "--learning_rate", 1e6, "--eval_input_file", ""), out)
    line = error_line(r)
    step = int(re.search(r"NaN/inf at step (\d+): stopped", line).group(1))
    assert "--on_nonfinite skip_step" in line
    assert all(s < step for s in checkpoint_steps(out))
    for s in checkpoint_steps(out):
        for key, value in checkpoint_values(str(out / "checkpoints" / f"ckpt-{s}")).items():
            assert value.dtype.kind != "f" or np.isfinite(value).all(), key
    assert not (out / "final_metrics.json").exists() and not (out / "best").exists()
    logged = metrics(out) if (out / "metrics.jsonl").exists() else []
    assert all(row["step"] < step for row in logged)  # no NaN row logged


# --- 4. strategies -----------------------------------------------------------------------------


@pytest.mark.slow
def test_mirrored_on_two_cpus_matches_the_default_strategy(mirrored, reference):
    """Two replicas of batch 4 give the reference run (one device, batch 8): same losses and
    weights. (A mirrored run SIGKILLed and restarted ends bit for bit as uninterrupted:
    test_sigkill_resume_on_two_mirrored_replicas_with_dropout_is_bit_identical.)"""
    ref_out, _ = reference
    out, _ = mirrored["reference"]
    with open(out / "run_config.json") as f:
        assert json.load(f)["replicas"] == 2
    ref_rows, rows = metrics(ref_out), last_rows_by_step(metrics(out))
    assert sorted(rows) == [row["step"] for row in ref_rows]
    for ref in ref_rows:
        row = rows[ref["step"]]
        for name in ("loss", "mlm_loss", "sop_loss", "mlm_accuracy", "sop_accuracy"):
            assert row[name] == pytest.approx(ref[name], rel=1e-4, abs=1e-6), (ref["step"], name)
    (ref_ev,), (ev,) = metrics(ref_out, "eval"), metrics(out, "eval")
    assert ev["loss"] == pytest.approx(ref_ev["loss"], rel=1e-4)
    assert_same_weights(
        latest_checkpoint(ref_out), latest_checkpoint(out), rtol=1e-4, atol=SPLIT_ATOL
    )


def test_tpu_strategy_path_runs_up_to_the_tpu_with_static_shapes(workdir, reference, monkeypatch):
    """--strategy tpu --tpu local with TensorFlow's TPU entry points recorded instead of
    called (tests/support/tpu_recorder.py) and one CPU in the TPU's place: the resolver
    gets the --tpu name, the system is connected and initialized before the strategy is
    built, every distributed dataset has static shapes, and the run is the reference run
    (one device, the same batches)."""
    ref_out, _ = reference
    seen = record_tpu(monkeypatch)
    out = workdir / "tpu"
    ok(run(base_args(workdir, out, "--strategy", "tpu", "--tpu", "local")))
    assert seen["resolver"] == ["local"] and seen["connect"] == seen["initialize"] == 1
    assert len(seen["datasets"]) == 2, seen  # train and eval
    for shapes in seen["datasets"]:
        assert all(None not in shape for shape in shapes), shapes
        assert [BATCH, SEQ] in shapes, shapes
    assert_same_weights(latest_checkpoint(ref_out), latest_checkpoint(out), rtol=1e-5)


MULTI_WORKER = ["--strategy", "multi_worker_mirrored"]


def _wait_all(runs, timeout=TIMEOUT):
    try:
        for r in runs:
            r.wait(timeout=timeout)
    finally:
        for r in runs:
            r.kill()
    return runs


@pytest.fixture(scope="module")
def multi_worker(workdir):
    """The reference run's command on a chief and a worker (TF_CONFIG on localhost),
    uninterrupted: its output_dir."""
    out = workdir / "mwms"
    for r in _wait_all(start_workers(base_args(workdir, out, *MULTI_WORKER), out)):
        ok(r)
    return out


@pytest.mark.slow
def test_multi_worker_mirrored_two_local_workers(multi_worker):
    """The same command on a chief and a worker (TF_CONFIG on localhost): the chief writes
    the run's files into output_dir, the worker into output_dir/workers/worker_0."""
    out = multi_worker
    worker_dir = out / "workers" / "worker_0"
    for d in (out, worker_dir):
        with open(d / "run_config.json") as f:
            assert json.load(f)["replicas"] == 2
        assert checkpoint_steps(d) == [20, 30, 40, 50, 60]
        assert [row["step"] for row in metrics(d)] == list(range(LOOP, STEPS + 1, LOOP))
        assert [row["step"] for row in metrics(d, "eval")] == [STEPS]
    assert all(np.isfinite(row["loss"]) for row in metrics(out))
    # both workers hold the same (all-reduced) model
    assert_same_weights(latest_checkpoint(out), latest_checkpoint(worker_dir), rtol=0, atol=0)


@pytest.mark.slow
def test_multi_worker_sigterm_to_one_worker_checkpoints_all_at_one_step_and_resumes(
    workdir, multi_worker
):
    """Two local workers; SIGTERM to the (non-chief) worker once it trains: through
    TensorFlow's PreemptionCheckpointHandler both write a checkpoint at the same step (the
    chief without a signal of its own) and exit with 143. Restarted, both resume from the
    chief's checkpoint and end with the weights (bit for bit, optimizer slots and step too)
    and the logged losses and evaluation of the same run uninterrupted."""
    out = workdir / "mwms_preempted"
    chief, worker = preempted = start_workers(base_args(workdir, out, *MULTI_WORKER), out)
    try:
        wait_for(lambda: f"step {LOOP}/{STEPS}" in worker.stdout, worker, "the first loop")
        worker.proc.send_signal(signal.SIGTERM)
    finally:
        _wait_all(preempted)
    for r in preempted:
        assert r.rc == 143, r.report()
    at = int(re.search(r"preempted at step (\d+);", chief.stderr).group(1))
    assert LOOP < at < STEPS, chief.report()
    worker_dir = out / "workers" / "worker_0"
    for r, d in ((chief, out), (worker, worker_dir)):
        assert f"preempted at step {at}; checkpoint written" in r.stderr, r.report()
        assert f"preemption: every worker writes checkpoint {at}" in r.stdout, r.report()
        assert checkpoint_steps(d)[-1] == at and metrics(d)[-1]["step"] == at, r.report()
    assert "SIGTERM" in worker.stdout and "SIGTERM" not in chief.stdout
    assert_same_weights(latest_checkpoint(out), latest_checkpoint(worker_dir), rtol=0, atol=0)

    args = base_args(workdir, out, *MULTI_WORKER)
    for r in _wait_all(start_workers(args, workdir / "mwms_resumed")):
        ok(r)
        assert f"resumed from {out}/checkpoints/ckpt-{at} at step {at}" in r.stdout, r.report()
    for d in (out, worker_dir):
        assert checkpoint_steps(d)[-1] == STEPS
        assert_same_weights(latest_checkpoint(multi_worker), latest_checkpoint(d), rtol=0, atol=0)
    for split in ("train", "eval"):
        rows, whole = last_rows_by_step(metrics(out, split)), metrics(multi_worker, split)
        assert sorted(rows) == [row["step"] for row in whole]
        for row in whole:
            for name in ("loss", "mlm_loss", "sop_loss", "mlm_accuracy", "sop_accuracy"):
                assert rows[row["step"]][name] == row[name], (split, row["step"], name)


# --- 5. bad input: one line naming the file, exit 1 -----------------------------------------------

BAD_INPUTS = (
    "no_match",
    "other_seq_length",
    "init_other_config",
    "resume_other_config",
    "corrupt_record",
    "batch_not_divisible",
)


@pytest.fixture(scope="module")
def bad_runs(workdir, reference):
    """All bad-input runs, in this process (each stops before training)."""
    import shutil

    ref_out, _ = reference
    root = workdir / "bad"
    root.mkdir()
    short = ["--num_train_steps", 4, "--steps_per_loop", 2, "--save_checkpoints_steps", 2]
    # a copy of the shards with 16 bytes flipped in the middle of one
    corrupt_dir = root / "corrupt_data"
    shutil.copytree(workdir / "train", corrupt_dir)
    victim = corrupt_dir / "pretrain-00001-of-00004.tfrecord"
    data = bytearray(victim.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 16] = bytes(b ^ 0xFF for b in data[middle : middle + 16])
    victim.write_bytes(bytes(data))
    # an output_dir holding the reference run's checkpoints (hidden_size 64)
    shutil.copytree(ref_out / "checkpoints", root / "resume_other_config" / "checkpoints")
    other = ["--albert_config_file", workdir / "other_config.json"]
    cases = {
        "no_match": ["--input_file", f"{workdir}/trian/*.tfrecord"],
        "other_seq_length": ["--input_file", f"{workdir}/seq128/*.tfrecord"],
        "init_other_config": other + ["--init_checkpoint", ref_out / "checkpoints"],
        "resume_other_config": other,
        "corrupt_record": ["--input_file", f"{corrupt_dir}/*.tfrecord", "--eval_input_file", ""],
        "batch_not_divisible": ["--train_batch_size", 7, "--grad_accum_steps", 2],
    }
    started = {
        name: run(base_args(workdir, root / name, *short, *extra)) for name, extra in cases.items()
    }
    return started, {"victim": victim, "ref_ckpt": latest_checkpoint(ref_out), "root": root}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_one_line_error_naming_the_file(workdir, bad_runs, case):
    runs, info = bad_runs
    line = error_line(runs[case])
    if case == "no_match":
        assert f"'{workdir}/trian/*.tfrecord' matches no file" in line
    elif case == "other_seq_length":
        assert f"{workdir}/seq128/pretrain-00000-of-00001.tfrecord" in line
        assert "input_ids has length 128, but --max_seq_length=64" in line
    elif case == "init_other_config":
        assert info["ref_ckpt"] in line
        assert "hidden" in line or "shape" in line
    elif case == "resume_other_config":
        assert os.path.join(info["root"], "resume_other_config", "checkpoints", "ckpt-60") in line
        assert "another config" in line and "(64,)" in line and "(48,)" in line
    elif case == "corrupt_record":
        assert f"{info['victim']}: record" in line and "corrupt" in line
    elif case == "batch_not_divisible":
        assert "--train_batch_size=7 must be divisible by --grad_accum_steps=2" in line


# --- 6. gradient accumulation, bfloat16; 7. --init_checkpoint ---------------------------------


@pytest.mark.slow
def test_grad_accum_two_half_batches_give_the_reference_run(workdir, reference):
    """--grad_accum_steps 2: two micro-batches of 4 make each update of the global batch 8
    (the same records, as tf.data batches them in order), so losses and weights are the
    reference run's."""
    ref_out, _ = reference
    out = workdir / "accum"
    ok(
        run(
            base_args(workdir, out, "--grad_accum_steps", 2, "--eval_input_file", ""),
            workdir / "accum",
        )
    )
    ref_rows, rows = metrics(ref_out), metrics(out)
    assert [row["step"] for row in rows] == [row["step"] for row in ref_rows]
    for ref, row in zip(ref_rows, rows):
        assert row["loss"] == pytest.approx(ref["loss"], rel=1e-4), row["step"]
        assert row["mlm_accuracy"] == pytest.approx(ref["mlm_accuracy"], abs=1e-6)
    assert_same_weights(
        latest_checkpoint(ref_out), latest_checkpoint(out), rtol=1e-4, atol=SPLIT_ATOL
    )


@pytest.mark.slow
def test_bfloat16_tracks_the_float32_run(workdir, reference):
    """--dtype bfloat16 (mixed precision: bfloat16 matmuls, float32 variables, LayerNorm and
    losses) trains like the reference float32 run: every logged loss within 1%, and not
    identical (the policy is in effect)."""
    ref_out, _ = reference
    out = workdir / "bf16"
    ok(
        run(
            base_args(workdir, out, "--dtype", "bfloat16", "--eval_input_file", ""),
            workdir / "bf16",
        )
    )
    with open(out / "run_config.json") as f:
        assert json.load(f)["trainer_config"]["dtype"] == "bfloat16"
    ref_rows, rows = metrics(ref_out), metrics(out)
    assert [row["step"] for row in rows] == [row["step"] for row in ref_rows]
    for ref, row in zip(ref_rows, rows):
        assert row["loss"] == pytest.approx(ref["loss"], rel=1e-2), row["step"]
    assert any(row["loss"] != ref["loss"] for ref, row in zip(ref_rows, rows))
    assert rows[-1]["mlm_loss"] < rows[0]["mlm_loss"] - 2.0


def test_init_checkpoint_loads_a_previous_run(workdir, reference):
    """--init_checkpoint DIR (the reference run's checkpoints: model, optimizer and iterator
    together) restores every part of the pretrainer, says so in one line, and with learning
    rate 0 the run keeps exactly those weights and evaluates to the reference's figures."""
    ref_out, _ = reference
    out = workdir / "init"
    spm = SHARED_DATA / "spm" / "de-30k-clean.model"
    # The run's output directory itself (its checkpoints/ latest) is accepted.
    r = ok(
        run(
            base_args(
                workdir,
                out,
                "--init_checkpoint",
                ref_out,
                "--learning_rate",
                0,
                "--num_train_steps",
                4,
                "--steps_per_loop",
                2,
                "--save_checkpoints_steps",
                4,
                "--export_dir",
                out / "serving",
                "--spm_model_file",
                spm,
            ),
            workdir / "init",
        )
    )
    ref_ckpt = latest_checkpoint(ref_out)
    assert re.search(
        rf"^init_checkpoint: restored encoder, mlm_head, sop_head from "
        rf"{re.escape(ref_ckpt)} ",
        r.stdout,
        re.M,
    ), r.report()
    ref_values, values = checkpoint_values(ref_ckpt), checkpoint_values(latest_checkpoint(out))
    weights = [k for k in ref_values if k.startswith(("model/", "optimizer/_trainable"))]
    assert len(weights) > 30
    for key in weights:
        np.testing.assert_array_equal(values[key], ref_values[key], err_msg=key)
    assert values["optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE"] == 4  # a new run
    (ref_ev,), (ev,) = metrics(ref_out, "eval"), metrics(out, "eval")
    for name in ("loss", "mlm_accuracy", "sop_accuracy"):
        assert ev[name] == pytest.approx(ref_ev[name], rel=1e-5), name
    # --export_dir: the encoder as a SavedModel that embeds raw text, equal to the weights.
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (the SentencePiece op a served model uses)

    from albert_tf import AlbertConfig, AlbertEncoder, load_checkpoint

    assert f"SavedModel: {out / 'serving' / '1'}" in r.stdout
    served = tf.saved_model.load(str(out / "serving" / "1"))
    text = tf.constant(["Ein kurzer Satz.", "Noch einer, etwas länger."])
    got = served.signatures["embed"](text=text)
    ids = served.signatures["tokenize"](text_a=text, text_b=tf.constant(["", ""]))
    encoder = AlbertEncoder(
        AlbertConfig.from_dict(json.loads((out / "run_config.json").read_text())["albert_config"])
    )
    load_checkpoint(encoder, str(ref_out / "checkpoints"))
    want = encoder({k: ids[k] for k in ("input_ids", "input_mask", "segment_ids")})
    np.testing.assert_allclose(got["pooled_output"], want["pooled_output"], atol=1e-5)
