"""An unquoted `--input_file data/*.tfrecord` reaches a command as one
flag value and the other files as positional arguments. The runners and the module
tools refuse them, as users run them: one `error: ...` line naming the stray arguments with
a hint about quoting, a nonzero exit code, and nothing written."""

import os

import pytest

from tests.support.in_process import run_command


@pytest.fixture()
def shards(tmp_path):
    """Three files a shell glob `data/*.tfrecord` expands to (never read: the command must
    stop before)."""
    data = tmp_path / "data"
    data.mkdir()
    paths = [data / f"part-{i}.tfrecord" for i in range(3)]
    for path in paths:
        path.write_bytes(b"")
    return [str(p) for p in paths]


def _commands(shards, out):
    expanded = ["--input_file", *shards]  # what the shell makes of --input_file data/*
    return {
        "run_pretraining": [
            "run_pretraining.py",
            *expanded,
            f"--output_dir={out}",
            "--preset=base",
        ],
        "run_classifier": [
            "run_classifier.py",
            "--task_name=csv",
            f"--output_dir={out}",
            "--preset=base",
            "--do_train",
            "--spm_model_file",
            *shards,
        ],
        "run_squad": [
            "run_squad.py",
            f"--output_dir={out}",
            "--preset=base",
            "--do_train",
            "--train_file",
            *shards,
        ],
        "run_ner": [
            "run_ner.py",
            f"--output_dir={out}",
            "--preset=base",
            "--do_train",
            "--train_file",
            *shards,
        ],
        "run_embedding": [
            "run_embedding.py",
            f"--output_dir={out}",
            "--preset=base",
            "--do_train",
            "--train_file",
            *shards,
        ],
        "train_tokenizer": [
            "-m",
            "data_pipeline.tokenization.train_tokenizer",
            *expanded,
            f"--model_prefix={out}/spm",
        ],
    }


def test_stray_arguments_are_refused(shards, tmp_path):
    out = tmp_path / "out"
    runs = {name: run_command(*command) for name, command in _commands(shards, out).items()}
    stray = repr(shards[1:])
    for name, run in runs.items():
        assert run.returncode != 0, (name, run.report())
        assert "Traceback" not in run.stderr, run.report()
        errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
        expected = (
            f"error: unexpected arguments {stray}: every input is a --flag=value; quote globs "
            "(--input_file='data/*.tfrecord') so that the shell does not expand them into "
            "arguments"
        )
        assert errors == [expected], (name, run.report())
        assert run.stderr.rstrip("\n").splitlines()[-1] == errors[0], run.report()
    assert runs["train_tokenizer"].returncode == 2  # the module tools' bad command line
    codes = {
        runs[n].returncode
        for n in ("run_pretraining", "run_classifier", "run_squad", "run_ner", "run_embedding")
    }
    assert codes == {1}
    assert not out.exists()  # nothing written
    assert sorted(os.listdir(tmp_path)) == ["data"]
