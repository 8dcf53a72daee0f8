"""What a run does with an output directory that already holds a run, as real
run_classifier.py processes on GLUE files (tiny model): another task, changed settings,
fewer steps and another tokenizer are each one `error:` line and leave every file of the
directory as it was; an allowed change resumes and keeps both segments in run_config.json;
Ctrl-C (SIGINT) is one line and exit code 130, and the same command then ends with the
weights of an uninterrupted run. Every runner's Ctrl-C is this code (run_setup.run_command
and the trainer's `Interrupted`); run_pretraining's resume after an interruption is
test_run_pretraining.py's SIGKILL / SIGTERM tests."""

import hashlib
import json
import os
import re
import shutil
import signal

import pytest

from tests.support.harness import SHARED_DATA, Cli
from tests.support.in_process import run_command
from tests.support.tiny import WORKFLOW, write_tiny_config
from tests.workflows.test_run_pretraining import (
    checkpoint_steps,
    checkpoint_values,
    latest_checkpoint,
    wait_for,
)

TINY = WORKFLOW


def _args(root, shared_data, task, folder, out, *extra):
    return [
        f"--task_name={task}",
        f"--data_dir={shared_data / 'glue' / folder}",
        f"--output_dir={out}",
        f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}",
        f"--albert_config_file={root / 'albert_config.json'}",
        "--max_seq_length=64",
        "--train_batch_size=16",
        "--train_step=20",
        "--steps_per_loop=10",
        "--save_checkpoints_steps=10",
        "--eval_batch_size=128",
        "--learning_rate=1e-3",
        "--classifier_dropout=0",
        "--do_train",
        *extra,
    ]


def assert_same_weights(prefix_a, prefix_b):
    """Every variable of two checkpoints (model, optimizer slots, step) within float
    tolerance (test_run_pretraining's check, for the smaller fine-tuning models)."""
    import numpy as np

    a, b = checkpoint_values(prefix_a), checkpoint_values(prefix_b)
    assert sorted(a) == sorted(b) and len(a) > 60  # weights and two slots each
    for key in sorted(a):
        np.testing.assert_allclose(b[key], a[key], rtol=1e-5, atol=1e-6, err_msg=key)


def _snapshot(root):
    """Every file under `root`: (sha256, mtime_ns)."""
    found = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = (
                    hashlib.sha256(f.read()).hexdigest(),
                    os.stat(path).st_mtime_ns,
                )
    return found


def _error_line(run) -> str:
    assert run.returncode == 1, run.report()
    assert "Traceback" not in run.stderr, run.report()
    lines = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, run.report()
    return lines[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished MRPC run (20 steps, checkpoints at 10 and 20, evaluated)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent")
    shared_data = SHARED_DATA
    root = tmp_path_factory.mktemp("resume_guards")
    (root / "albert_config.json").write_text(json.dumps(TINY))
    out = root / "mrpc"
    run = run_command(
        "run_classifier.py", *_args(root, shared_data, "mrpc", "MRPC", out, "--do_eval")
    )
    assert run.returncode == 0, run.report()
    assert checkpoint_steps(out) == [10, 20]
    return root, out


def test_another_task_on_a_finished_run_is_refused_and_changes_nothing(finished, shared_data):
    root, out = finished
    before = _snapshot(out)
    run = run_command(
        "run_classifier.py", *_args(root, shared_data, "rte", "RTE", out, "--do_eval")
    )
    line = _error_line(run)
    assert line.startswith(f"error: {out} holds checkpoints of another run (")
    assert 'task: "mrpc" → "rte"' in line
    assert 'labels: ["0", "1"] → ["entailment", "not_entailment"]' in line
    assert "data train_sha256: " in line  # another training file
    assert _snapshot(out) == before  # eval_results.json, checkpoints, cache, run_config.json


def test_changed_settings_are_refused_unless_allowed_and_kept_as_segments(finished, shared_data):
    root, out = finished
    before = _snapshot(out)
    changed = ["--learning_rate=5e-4", "--train_step=30", "--do_eval"]
    run = run_command("run_classifier.py", *_args(root, shared_data, "mrpc", "MRPC", out, *changed))
    line = _error_line(run)
    assert "learning_rate: 0.001 → 0.0005" in line and "num_train_steps: 20 → 30" in line
    # (the warmup is 10% of the steps: it changes with them, and is named too)
    assert "num_warmup_steps: 2 → 3" in line
    assert "--allow_changed=learning_rate,num_train_steps,num_warmup_steps" in line
    assert _snapshot(out) == before
    # allowed: resumed from step 20 to 30, the first segment kept
    copy = root / "mrpc_allowed"
    shutil.copytree(out, copy)
    allow = "--allow_changed=learning_rate,num_train_steps,num_warmup_steps"
    run = run_command(
        "run_classifier.py", *_args(root, shared_data, "mrpc", "MRPC", copy, *changed, allow)
    )
    assert run.returncode == 0, run.report()
    assert re.search(r"resumed from .*ckpt-20 at step 20", run.stdout), run.report()
    assert "resuming with a changed setting (--allow_changed): learning_rate" in run.stdout
    assert checkpoint_steps(copy)[-1] == 30
    record = json.loads((copy / "run_config.json").read_text())
    segments = record["segments"]
    assert [s["start_step"] for s in segments] == [0, 20]
    assert [s["settings"]["learning_rate"] for s in segments] == [1e-3, 5e-4]
    assert [s["settings"]["num_train_steps"] for s in segments] == [20, 30]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", s["started"]) for s in segments)
    assert record["flags"]["learning_rate"] == 5e-4  # the top level: the newest segment
    assert record["identity"]["task"] == "mrpc"


def test_fewer_steps_on_a_finished_run_is_one_line_and_changes_nothing(finished, shared_data):
    root, out = finished
    before = _snapshot(out)
    run = run_command(
        "run_classifier.py",
        *_args(root, shared_data, "mrpc", "MRPC", out, "--do_eval", "--train_step=10"),
    )
    line = _error_line(run)
    assert f"{out} holds a run trained to step 20, more than the 10 training steps" in line
    assert "nothing was changed" in line
    assert _snapshot(out) == before  # final figures and eval_results.json kept


def test_fine_tuning_with_another_tokenizer_than_the_checkpoints_is_refused(finished, shared_data):
    from data_pipeline.tokenization.train_tokenizer import train_sentencepiece

    root, out = finished
    # another ALBERT SentencePiece model (ALBERT's recipe on other text), small enough for
    # the config's embeddings: only the recorded sha256 can tell it from the model's own
    lines = (shared_data / "corpus" / "wikitext-2" / "valid.txt").read_text().splitlines()
    (root / "other.txt").write_text("\n".join(lines[:3000]) + "\n")
    train_sentencepiece(str(root / "other.txt"), str(root / "other"), 2000)
    other = root / "other.model"
    new = root / "other_tokenizer"
    args = _args(root, shared_data, "mrpc", "MRPC", new, f"--init_checkpoint={out}")
    args = [a for a in args if not a.startswith("--spm_model_file")]
    run = run_command("run_classifier.py", *args, f"--spm_model_file={other}")
    line = _error_line(run)
    spm = shared_data / "spm" / "de-30k-clean.model"
    sha = hashlib.sha256(spm.read_bytes()).hexdigest()[:16]
    other_sha = hashlib.sha256(other.read_bytes()).hexdigest()[:16]
    assert f"--init_checkpoint={out} was trained with a SentencePiece model" in line
    assert f"sha256 {sha}... ({out / 'run_config.json'})" in line
    assert f"but --spm_model_file={other} has sha256 {other_sha}..." in line
    assert not new.exists() or not os.listdir(new)


def _ctrl_c_then_resume(script, args_of, tmp_path, steps):
    """`script` with `args_of(output_dir)` run whole, and run again into another directory
    as a process that gets SIGINT (Ctrl-C) after its first checkpoint: exit 130 with one
    line naming the step and the checkpoint kept; the same command then resumes from it.
    Returns (the checkpoint step kept, the whole run's directory, the resumed one's)."""
    whole, out = tmp_path / "whole", tmp_path / "interrupted"
    run = run_command(script, *args_of(whole), timeout=900)
    assert run.returncode == 0, run.report()
    interrupted = Cli(script, *args_of(out), log_prefix=tmp_path / "sigint", timeout=900)
    try:
        wait_for((out / "checkpoints" / "checkpoint").exists, interrupted, "the first checkpoint")
        interrupted.proc.send_signal(signal.SIGINT)
        interrupted.wait()
    finally:
        interrupted.kill()
    assert interrupted.rc == 130, interrupted.report()
    lines = interrupted.stderr.strip().splitlines()
    assert "Traceback" not in interrupted.stderr, interrupted.report()
    found = re.fullmatch(
        r"interrupted at step (\d+); the last checkpoint is ckpt-(\d+) \(the same command "
        r"resumes from it\)",
        lines[-1],
    )
    assert found, interrupted.report()
    step, kept = int(found.group(1)), int(found.group(2))
    assert kept == checkpoint_steps(out)[-1] and kept <= step < steps
    resumed = run_command(script, *args_of(out), timeout=900)
    assert resumed.returncode == 0, resumed.report()
    assert f"at step {kept}" in resumed.stdout, resumed.report()
    return kept, whole, out


def test_ctrl_c_is_one_line_exit_130_and_the_same_command_resumes_exactly(tmp_path, shared_data):
    (tmp_path / "albert_config.json").write_text(json.dumps(TINY))
    long = ["--train_step=120", "--steps_per_loop=5", "--train_batch_size=8"]

    def args(out):
        return [*_args(tmp_path, shared_data, "mrpc", "MRPC", out), *long]

    kept, whole, out = _ctrl_c_then_resume("run_classifier.py", args, tmp_path, steps=120)
    assert 0 <= kept < 120
    assert_same_weights(latest_checkpoint(whole), latest_checkpoint(out))


def test_run_squad_ctrl_c_is_one_line_exit_130_and_resumes_exactly(tmp_path, shared_data):
    """The same for run_squad.py (a v1.1 slice, the bert head, dropout 0)."""
    from tests.workflows.test_run_squad import _slices

    train = _slices(shared_data, tmp_path, "v1.1", train=(0, 2))["train"]
    write_tiny_config(tmp_path / "albert_config.json", WORKFLOW, max_position_embeddings=128)

    def args(out):
        return [
            f"--output_dir={out}",
            f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}",
            f"--albert_config_file={tmp_path / 'albert_config.json'}",
            f"--train_file={train}",
            "--do_train",
            "--max_seq_length=128",
            "--doc_stride=64",
            "--max_query_length=32",
            "--train_batch_size=8",
            "--learning_rate=1e-3",
            "--steps_per_loop=5",
            "--save_checkpoints_steps=10",
            "--train_step=60",
        ]

    kept, whole, out = _ctrl_c_then_resume("run_squad.py", args, tmp_path, steps=60)
    assert 0 <= kept < 60
    assert_same_weights(latest_checkpoint(whole), latest_checkpoint(out))
