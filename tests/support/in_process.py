"""A console command run inside the test's own process: the same entry point a user's
`python run_classifier.py ...` or `python -m albert_tf.serving.export ...` reaches, given the
same argv, with stdout and stderr captured and the exit code returned — without paying a
Python + TensorFlow start per call. `run_command` answers as `harness.run_cli` does
(`returncode`, `stdout`, `stderr`, `report()`), so a test moves between the two by name.

What stays a process (harness.Cli): what the process itself is — signals (Ctrl-C 130,
SIGTERM 143, kill -9 and resume), locks held by another process, the quiet start, the
environment a command starts under, Beam, the Model Garden environment, `--help` with
TensorFlow unimportable, and one command-line contract per console script.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import inspect
import io
import os
import sys
import traceback

from tests.support.harness import ROOT

# A runner script's console command (albert_tf.runners.commands).
RUNNERS = {
    "run_pretraining.py": "pretrain",
    "run_classifier.py": "classify",
    "run_squad.py": "squad",
    "run_ner.py": "ner",
    "run_embedding.py": "embedding",
}
# The module commands whose main(argv) takes argv without the program (argparse's way).
ARGPARSE_MODULES = {"data_pipeline.squad.evaluation", "data_pipeline.squad.cmrc_evaluation"}


class Ran:
    """A finished in-process command: its exit code and what it printed."""

    def __init__(self, args, returncode: int, stdout: str, stderr: str):
        self.args, self.returncode, self.stdout, self.stderr = args, returncode, stdout, stderr

    @property
    def rc(self) -> int:
        return self.returncode

    def report(self) -> str:
        return (
            f"exit {self.returncode}\n--- stdout ---\n{self.stdout[-3000:]}\n"
            f"--- stderr ---\n{self.stderr[-5000:]}"
        )


def _entry(args: list[str]):
    """(main, argv) for a command line as run_cli takes it: a runner script or `-m module`."""
    head = os.path.basename(args[0])
    if head in RUNNERS:
        from albert_tf.runners import commands

        return getattr(commands, RUNNERS[head]), [head, *args[1:]]
    if args[0] == "-m":
        main = importlib.import_module(args[1]).main
        rest = args[2:]
        return main, rest if args[1] in ARGPARSE_MODULES else [args[1], *rest]
    raise ValueError(f"not a console command to run in-process: {args[0]}")


def run_command(*command, cwd=ROOT, stdin: bytes = b"", **_process_options) -> Ran:
    """Runs `command` (as `harness.run_cli` takes it: "run_classifier.py", "--flag=value", ...
    or "-m", "module", ...) in this process from `cwd`; a SystemExit becomes the exit code,
    an uncaught exception exit code 1 with its traceback on stderr (as Python prints it);
    `stdin` is what the command reads from standard input (bytes, as a pipe gives them).
    Keras' global state (layer names, the default graph) is cleared afterwards, so the next
    command starts as a process would. `timeout`/`env`/`log_prefix` (process options) are
    accepted and ignored."""
    import keras

    args = [str(a) for a in command]
    main, argv = _entry(args)
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    saved_argv, saved_stdin = sys.argv, sys.stdin
    sys.argv = argv
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:  # (a main() without parameters reads sys.argv, as saved_model_cli's)
                code = main(argv) if inspect.signature(main).parameters else main()
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if not isinstance(e.code, (int, type(None))):
                    print(e.code, file=sys.stderr)
            except Exception:  # what the process would print before exiting 1
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(here)
        sys.argv, sys.stdin = saved_argv, saved_stdin
        keras.backend.clear_session(free_memory=False)
        keras.config.set_dtype_policy("float32")
        # The command's models are cycles: collected now, their traced functions leave
        # TensorFlow's function library (left to pile up, they slow every later trace).
        # Cheap: tests/conftest.py has frozen what lived before the test file began.
        gc.collect()
    return Ran(args, 0 if code is None else int(code), out.getvalue(), err.getvalue())
