"""The tests' shared helpers: the tiny models (tests/support/tiny.py, re-exported here) and
random batches, the ../shared/data location, and the one harness for command-line tests
(`Cli`, `run_cli`, the two-CPU driver; tests/support/in_process.py runs a command in-process)."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from tests.support.tiny import WORKFLOW, tiny_config  # noqa: F401 (re-exported)

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The real data: ../shared/data beside the clone, or wherever ALBERT_TF_DATA points.
SHARED_DATA = pathlib.Path(os.environ.get("ALBERT_TF_DATA", ROOT.parent / "shared" / "data"))

# What every command-line test runs under: the project importable from anywhere, output
# unbuffered (a running process can be watched), TensorFlow's C++ logs quiet, and no GPU:
# these are CPU tests, and their comparisons need one device kind.
CLI_ENV = dict(
    os.environ,
    PYTHONPATH=str(ROOT),
    PYTHONUNBUFFERED="1",
    TF_CPP_MIN_LOG_LEVEL="2",
    CUDA_VISIBLE_DEVICES="-1",
)


class Cli:
    """A command line (a runner script, a driver file, or `-m module`) run by this Python
    in a subprocess from the project root (or `cwd`), as a user runs it. stdout and stderr go to
    files (`log_prefix`.out/.err, else temporary ones read back and removed at the end), so
    several can run at once without pipe deadlocks, and a running one can be watched
    (`stdout`) and signalled (`proc`). `timeout` (seconds from the start) bounds `wait`.

        run = Cli("run_classifier.py", "--task_name=rte", ...).wait()
        assert run.returncode == 0, run.report()
    """

    def __init__(self, *command, log_prefix=None, env=None, timeout=300, cwd=ROOT):
        self.args = [str(a) for a in command]
        self.timeout = timeout
        self._tmp = None if log_prefix else tempfile.mkdtemp(prefix="cli-")
        prefix = str(log_prefix) if log_prefix else os.path.join(self._tmp, "run")
        self.out_path, self.err_path = f"{prefix}.out", f"{prefix}.err"
        self._out, self._err = open(self.out_path, "w"), open(self.err_path, "w")
        self._logs = None
        self.start = time.time()
        self.proc = subprocess.Popen(
            [sys.executable, *self.args],
            cwd=cwd,
            env=CLI_ENV if env is None else env,
            stdout=self._out,
            stderr=self._err,
        )

    def wait(self, timeout=None):
        """Waits for the end (killing the process after the timeout); returns self."""
        timeout = self.timeout if timeout is None else timeout
        try:
            self.proc.wait(timeout=max(1, timeout - (time.time() - self.start)))
        finally:
            self.kill()
        return self

    def kill(self):
        """Ends the process if it still runs and closes (temporary: reads back) the logs."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
        self._err.close()
        if self._tmp and self._logs is None:
            self._logs = (self._read(self.out_path), self._read(self.err_path))
            shutil.rmtree(self._tmp, ignore_errors=True)

    @staticmethod
    def _read(path):
        with open(path) as f:
            return f.read()

    @property
    def returncode(self):
        return self.proc.returncode

    rc = returncode

    @property
    def stdout(self):
        return self._logs[0] if self._logs else self._read(self.out_path)

    @property
    def stderr(self):
        return self._logs[1] if self._logs else self._read(self.err_path)

    def report(self):
        return (
            f"exit {self.returncode}\n--- stdout ---\n{self.stdout[-3000:]}\n"
            f"--- stderr ---\n{self.stderr[-5000:]}"
        )


def run_cli(*command, **options) -> Cli:
    """`Cli(*command, **options)`, waited for."""
    return Cli(*command, **options).wait()


# A runner script's console command (albert_tf.runners.commands).
COMMANDS = {
    "run_pretraining": "pretrain",
    "run_classifier": "classify",
    "run_squad": "squad",
    "run_ner": "ner",
    "run_embedding": "embedding",
}


def run_on_two_cpus(*commands, timeout=900) -> list:
    """Runs each command line (as `in_process.run_command` takes it) one after the other in
    ONE new process with two logical CPU devices (what `--strategy mirrored` needs on a CPU
    machine); their `in_process.Ran` results, in order."""
    from tests.support.in_process import Ran

    tmp = tempfile.mkdtemp(prefix="two-cpus-")
    try:
        spec, out = os.path.join(tmp, "commands.json"), os.path.join(tmp, "results.json")
        with open(spec, "w") as f:
            json.dump([[str(a) for a in c] for c in commands], f)
        script = os.path.join(tmp, "driver.py")
        with open(script, "w") as f:
            f.write(
                "import json, sys\nimport tensorflow as tf\n"
                "cpus = tf.config.list_physical_devices('CPU')\n"
                "tf.config.set_logical_device_configuration(\n"
                "    cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)\n"
                "from tests.support.in_process import run_command\n"
                "runs = [run_command(*c) for c in json.load(open(sys.argv[1]))]\n"
                "json.dump([[r.returncode, r.stdout, r.stderr] for r in runs],"
                " open(sys.argv[2], 'w'))\n"
            )
        run = run_cli(script, spec, out, timeout=timeout)
        assert run.returncode == 0, run.report()
        with open(out) as f:
            return [Ran(c, *r) for c, r in zip(commands, json.load(f))]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def two_cpu_driver(runner: str) -> str:
    """A script running `runner` (run_pretraining, run_classifier, ...) with two logical
    CPU devices, so that `--strategy mirrored` has two replicas on a CPU machine (logical
    devices must exist before TensorFlow initializes its runtime)."""
    return (
        "import sys\nimport tensorflow as tf\n"
        "cpus = tf.config.list_physical_devices('CPU')\n"
        "tf.config.set_logical_device_configuration(\n"
        "    cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)\n"
        f"from albert_tf.runners import commands\ncommands.{COMMANDS[runner]}(sys.argv)\n"
    )


# The tiny models (tests/support/tiny.py): `tiny_config` the unit tests', WORKFLOW_CONFIG the
# albert_config.json of the runner workflows (tests/workflows/).
WORKFLOW_CONFIG = WORKFLOW


def random_batch(vocab_size=99, batch=3, seq=11, positions=3, seed=0):
    """Inputs with padding in the batch (rows 1 and 2 padded) and two segments."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab_size, (batch, seq)).astype(np.int32)
    mask = np.ones_like(ids)
    if batch > 1:
        mask[1, seq - 4 :] = 0
    if batch > 2:
        mask[2, 3:] = 0
    ids[mask == 0] = 0
    segments = np.zeros_like(ids)
    segments[:, seq // 2 :] = 1
    segments[mask == 0] = 0
    lm_positions = np.sort(rng.integers(0, 3, (batch, positions)), axis=1).astype(np.int32)
    return {
        "input_ids": ids,
        "input_mask": mask,
        "segment_ids": segments,
        "masked_lm_positions": lm_positions,
    }


def litert_ops(data: bytes) -> dict:
    """{subgraph name: Counter of its builtin ops' names} of a LiteRT flatbuffer."""
    import collections

    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(data))
    out = {}
    for i, graph in enumerate(model.subgraphs):
        names = [flatbuffer_utils.opcode_to_name(model, op.opcodeIndex) for op in graph.operators]
        out[graph.name.decode() if graph.name else str(i)] = collections.Counter(names)
    return out
