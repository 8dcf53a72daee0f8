"""Every console script of pyproject.toml answers --help as a user runs it, in a process of
its own: exit 0, the command's own flags (each a field of its settings, under its group's
title) on stdout, nothing on stderr, and without TensorFlow — a `tensorflow` package that
records its import and raises ImportError comes first on PYTHONPATH, so help that needed
TensorFlow (or swallowed the ImportError) fails here."""

import importlib
import os
import re
import subprocess
import sys
import tomllib

import pytest

from tests.support.harness import CLI_ENV, ROOT

# Lines a process may print on stderr that are not the command's (as test_quiet_start).
NOISE = ("cuda", "cuinit", "onednn", "absl::initializelog")


def _module_command(module: str):
    return lambda: importlib.import_module(module).COMMAND


def _family(name: str):
    def make():
        from albert_tf.runners.driver import command
        from albert_tf.runners.families import FAMILIES

        return command(FAMILIES[name])

    return make


def _tflite():
    from albert_tf.serving.tflite_command import command

    return command("")


# script → its Command (built in this process, to compare the help with).
COMMANDS = {
    "albert-pretrain": _module_command("albert_tf.runners.pretraining"),
    "albert-classify": _family("classifier"),
    "albert-squad": _family("squad"),
    "albert-ner": _family("ner"),
    "albert-embedding": _family("embedding"),
    "albert-train-tokenizer": _module_command("data_pipeline.tokenization.train_tokenizer"),
    "albert-pretraining-data": _module_command("data_pipeline.pretraining.create_pretraining_data"),
    "albert-convert": _module_command("albert_tf.checkpoints.convert"),
    "albert-export-encoder": _module_command("albert_tf.checkpoints.export_encoder"),
    "albert-extend-vocab": _module_command("albert_tf.checkpoints.extend_vocab"),
    "albert-export": _module_command("albert_tf.serving.export_command"),
    "albert-tflite-predict": _tflite,
    "albert-analysis": _module_command("albert_tf.tools.analysis"),
}
# The official SQuAD / CMRC 2018 scripts' own interface (argparse, positional files).
ARGPARSE = {
    "albert-squad-eval": ("data_file", "pred_file", "--na_prob_file", "--na_prob_thresh"),
    "albert-cmrc-eval": ("data_file", "pred_file"),
}
NOT_YET: dict[str, str] = {}


def scripts() -> dict[str, str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)["project"]["scripts"]


@pytest.fixture(scope="module")
def no_tensorflow(tmp_path_factory):
    """A directory whose `tensorflow` package writes a marker file and raises ImportError."""
    root = tmp_path_factory.mktemp("no_tensorflow")
    (root / "tensorflow").mkdir()
    (root / "tensorflow" / "__init__.py").write_text(
        "import os\n"
        "open(os.environ['TENSORFLOW_IMPORTED'], 'a').close()\n"
        "raise ImportError('TensorFlow is blocked: --help must not need it')\n"
    )
    return root


def test_every_console_script_is_covered():
    assert set(scripts()) == set(COMMANDS) | set(ARGPARSE)


def _cases():
    for name in sorted(scripts()):
        reason = NOT_YET.get(name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("script", _cases())
def test_help_prints_the_commands_flags_without_tensorflow(script, no_tensorflow, tmp_path):
    module, function = scripts()[script].split(":")
    marker = tmp_path / "tensorflow_imported"
    code = (
        f"import sys; sys.argv[0] = {script!r}; from {module} import {function}; "
        f"sys.exit({function}())"
    )
    env = dict(
        CLI_ENV,
        PYTHONPATH=os.pathsep.join([str(no_tensorflow), str(ROOT)]),
        TENSORFLOW_IMPORTED=str(marker),
    )
    run = subprocess.run(
        [sys.executable, "-c", code, "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = f"exit {run.returncode}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
    assert run.returncode == 0, report
    assert not marker.exists(), report  # (an ImportError caught on the way still counts)
    stray = [line for line in run.stderr.splitlines() if not any(w in line.lower() for w in NOISE)]
    assert not stray, report
    if script in ARGPARSE:
        assert run.stdout.startswith("usage:"), report
        for name in ARGPARSE[script]:
            assert name in run.stdout, (name, report)
        return
    command = COMMANDS[script]()
    shown = re.findall(r"^    --(\w+): ", run.stdout, flags=re.MULTILINE)
    assert shown == [field.name for _, field, _ in command.fields()], report
    for group in command.groups:
        title = group.__doc__.strip().splitlines()[0]
        assert f"\n  {title}\n" in run.stdout, (group.__name__, report)
