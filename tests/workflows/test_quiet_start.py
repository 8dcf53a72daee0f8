"""Runners start quietly on a CPU machine (data_pipeline.quiet): no CUDA, cuInit or oneDNN
line on stderr unless the user asks for TensorFlow's logs with TF_CPP_MIN_LOG_LEVEL=0.

The subprocesses run with the user's environment as it comes: no TF_CPP_MIN_LOG_LEVEL, no
CUDA_VISIBLE_DEVICES (the harness sets both for the other command-line tests)."""

import json
import os
import re

from data_pipeline.quiet import filter_startup_lines
from tests.support.harness import CLI_ENV, run_cli
from tests.support.tiny import WORKFLOW as TINY

NOISE = ("cuda", "cuinit", "onednn", "absl::initializelog")


def user_env(**extra):
    env = {
        k: v
        for k, v in CLI_ENV.items()
        if k not in ("TF_CPP_MIN_LOG_LEVEL", "CUDA_VISIBLE_DEVICES")
    }
    return {**env, **extra}


def noise(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if any(w in line.lower() for w in NOISE)]


def test_filter_drops_abseil_lines_below_the_level_and_keeps_the_rest():
    text = (
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
        "I0000 00:00:1795693884.274341   25825 port.cc:153] oneDNN custom operations are on.\n"
        "W0000 00:00:1795693884.274700   25825 cudart_stub.cc:31] Could not find cuda drivers\n"
        "a Python warning\n"
    )
    assert filter_startup_lines(text, 2) == "a Python warning\n"
    kept = filter_startup_lines(text, 1)
    assert "oneDNN" not in kept and "cuda drivers" in kept and "absl::InitializeLog" in kept
    assert filter_startup_lines(text, 0) == text


def test_tensorflow_logs_come_back_when_the_user_asks_for_them():
    """With TF_CPP_MIN_LOG_LEVEL=0 importing the library shows TensorFlow's start-up lines.
    (That it is quiet by default test_a_short_training_run_is_quiet shows: the quiet start
    is the package's, data_pipeline.quiet imported by albert_tf before TensorFlow, whoever
    imports it; `--help` never imports TensorFlow, tests/test_console_help.py.)"""
    importing = ("-c", "import albert_tf.modeling.encoder")
    loud = run_cli(*importing, env=user_env(TF_CPP_MIN_LOG_LEVEL="0"), timeout=120)
    assert loud.returncode == 0, loud.report()
    # TensorFlow's own INFO lines come back (which ones depends on the CPU: oneDNN's on
    # AVX-512 machines, the CPU-feature guard's and the CUDA stub's everywhere).
    info = [line for line in loud.stderr.splitlines() if re.match(r"I\d{4} ", line)]
    assert info and noise(loud.stderr), loud.stderr


def test_a_short_training_run_is_quiet(tmp_path, shared_data):
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(TINY))
    out = tmp_path / "rte"
    run = run_cli(
        "run_classifier.py",
        "--task_name=rte",
        f"--data_dir={shared_data / 'glue' / 'RTE'}",
        f"--output_dir={out}",
        f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}",
        f"--albert_config_file={config}",
        "--max_seq_length=64",
        "--train_batch_size=8",
        "--train_step=2",
        "--steps_per_loop=1",
        "--do_train",
        env=user_env(),
        timeout=300,
    )
    assert run.returncode == 0, run.report()
    assert os.path.isdir(out / "checkpoints")
    assert not noise(run.stderr), run.stderr
