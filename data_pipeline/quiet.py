"""A quiet TensorFlow start: the one owner of the log settings every entry point shares.

Importing TensorFlow 2.21 on a machine without a GPU writes start-up lines such as

    WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
    I0000 00:00:... port.cc:153] oneDNN custom operations are on. ...
    I0000 00:00:... cudart_stub.cc:31] Could not find cuda drivers on your machine, ...

twice (once per TensorFlow shared library). They come from Abseil's C++ logging before
`absl::InitializeLog()`, which writes every message to stderr and ignores
TF_CPP_MIN_LOG_LEVEL; no environment variable reaches them. What TensorFlow's own logging
writes later (cpu_feature_guard, ...) follows TF_CPP_MIN_LOG_LEVEL, except the
`E... cuda_platform.cc] failed call to cuInit` that device set-up logs at ERROR level on a
machine without a CUDA driver (only level 3, which hides every error, hides it).

So `install()` (called by `data_pipeline/__init__.py`, which `albert_tf/__init__.py`
imports, so it runs before any project module can import TensorFlow):
  - sets TF_CPP_MIN_LOG_LEVEL to 2 (warnings and information hidden) unless the user set it;
  - wraps the first `import tensorflow` so that stderr (file descriptor 2) goes to a
    temporary file while the import runs; afterwards every line is written back except
    Abseil's pre-initialization lines below TF_CPP_MIN_LOG_LEVEL and the banner that
    announces them. TF_CPP_MIN_LOG_LEVEL=0 shows them all, as TensorFlow would;
  - when that import said "Could not find cuda drivers ..., GPU will not be used", drops
    the cuInit failure of the device set-up the same way (`_quiet_device_setup`): it says
    again what TensorFlow already found. Every other line of the device set-up stays.

oneDNN itself stays on (TF_ENABLE_ONEDNN_OPTS is not touched): only its line goes.
TensorFlow is not imported here: tools that do not need it (the data writer, the
on-device runner) still start without it.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import re
import sys
import tempfile

LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
DEFAULT_LEVEL = "2"
# Abseil's line prefix: severity letter, MMDD, time, thread id, file:line].
_ABSL_LINE = re.compile(r"^([IWEF])\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [^\s\]]+:\d+\] ")
_ABSL_BANNER = "WARNING: All log messages before absl::InitializeLog() is called"
_SEVERITY = {"I": 0, "W": 1, "E": 2, "F": 3}
_NO_CUDA_DRIVER = "Could not find cuda drivers on your machine"
_CUINIT = "failed call to cuInit"
# The attribute each wrapped method sets once its set-up is done.
_DONE = {
    "ensure_initialized": "_context_handle",
    "_initialize_physical_devices": "_physical_devices",
}
_seen: list[str] = []  # what each captured call wrote, before filtering


def min_log_level() -> int:
    """The TF_CPP_MIN_LOG_LEVEL in force (0 when unset or not a number)."""
    try:
        return int(os.environ.get(LEVEL_VARIABLE, "0"))
    except ValueError:
        return 0


def filter_startup_lines(text: str, level: int) -> str:
    """`text` without Abseil's lines below `level` and, when none of its lines is left,
    without the banner that says messages before InitializeLog go to stderr."""
    lines = text.splitlines(keepends=True)
    kept = [line for line in lines if not _below(line, level)]
    if len(kept) < len(lines) and not any(_ABSL_LINE.match(line) for line in kept):
        kept = [line for line in kept if not line.startswith(_ABSL_BANNER)]
    return "".join(kept)


def _below(line: str, level: int) -> bool:
    match = _ABSL_LINE.match(line)
    return bool(match) and _SEVERITY[match.group(1)] < level


def _captured(call, drop_cuinit=False):
    """Runs `call()` with file descriptor 2 in a temporary file, then writes back what
    `filter_startup_lines` keeps, without the cuInit failure when `drop_cuinit` or when
    the captured text itself says no CUDA driver was found."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            return call()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            text = captured.read().decode("utf-8", "replace")
            if drop_cuinit or _NO_CUDA_DRIVER in text:  # (a device set-up during the import)
                text_kept = "".join(
                    line for line in text.splitlines(keepends=True) if _CUINIT not in line
                )
            else:
                text_kept = text
            kept = filter_startup_lines(text_kept, min_log_level())
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()
            _seen.append(text)


def _quiet_device_setup(context_class) -> None:
    """On a machine where TensorFlow found no CUDA driver, its runtime still calls cuInit
    when it first lists or creates devices and logs the failure at ERROR level. The two
    methods that do so run under `_captured`, which drops that one line. Each wrapper puts
    the original method back once its set-up is done (the context handle, the physical
    devices): later calls, e.g. `ensure_initialized` on every eager op, run unwrapped."""
    for name in ("ensure_initialized", "_initialize_physical_devices"):
        method = getattr(context_class, name, None)
        if method is None:
            continue

        def quiet(self, *args, _method=method, _name=name, **kwargs):
            result = _captured(lambda: _method(self, *args, **kwargs), drop_cuinit=True)
            if getattr(self, _DONE[_name], None) is not None:  # set up: unwrapped from now on
                setattr(context_class, _name, _method)
            return result

        setattr(context_class, name, quiet)


class _QuietLoader(importlib.abc.Loader):
    """Runs the wrapped loader under `_captured`; when TensorFlow said it found no CUDA
    driver, makes its device set-up quiet too."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        _captured(lambda: self._loader.exec_module(module))
        if _NO_CUDA_DRIVER in _seen[-1]:
            from tensorflow.python.eager import context

            _quiet_device_setup(context.Context)


class _QuietTensorFlowFinder(importlib.abc.MetaPathFinder):
    """Finds `tensorflow` through the other finders and wraps its loader, once."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


def install() -> None:
    """Sets the default log level and, if TensorFlow is not imported yet, wraps its import
    (idempotent)."""
    os.environ.setdefault(LEVEL_VARIABLE, DEFAULT_LEVEL)
    if "tensorflow" in sys.modules or min_log_level() == 0:
        return
    if not any(isinstance(f, _QuietTensorFlowFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _QuietTensorFlowFinder())
