"""Cost tiers, given to every test by what it uses (conftest's collection hook), never by a
marker someone must remember:

    process      starts a process (harness.run_cli / Cli, subprocess): signals, locks
                 across processes, the quiet start, Beam, the Model Garden environment
    parity       a reference implementation: PyTorch / transformers, keras-hub, the
                 Model Garden reference
    export       a SavedModel or LiteRT conversion (albert_tf.serving, tf.saved_model, tflite)
    integration  a runner in-process (tests.support.in_process, albert_tf.runners), or real
                 data (the `shared_data` fixture) — or marked `slow`
    unit         everything else: in-process, tiny configs, no conversion, no real-data training

The first that applies wins, in that order. What a test uses is read from the source of the
test function, of every fixture it requests and of the tests' own helpers those call
(followed through names, not guessed from file names). `make test-fast` runs the unit tier;
`UnitDurations` keeps it honest: a unit test whose setup or call spends more than
UNIT_CPU_SECONDS of the worker's CPU time fails the session (make it cheaper, or mark it
`integration`). CPU time, not wall time: on a 2-core machine the other worker's heavy test
stretched a 2 s test to 5-7 s of wall time, so a wall-time budget failed whichever unit test
happened to run beside it; the process's CPU time (every thread's, TensorFlow's pools
included) is what the test itself costs. The per-file garbage collection (conftest's
`_collect_per_file`) is the harness's, not the test's, and is not counted.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
import time

import pytest

TIERS = ("process", "parity", "export", "integration", "unit")
# CPU seconds of the whole process (TensorFlow's threads included) per setup or call phase:
# a test that keeps both cores busy for 4 s of wall time spends 8.
UNIT_CPU_SECONDS = 8.0

# tier -> (names of the tests' helpers and modules, source patterns) that put a test there
_PROCESS_NAMES = {"run_cli", "Cli", "subprocess", "two_cpu_driver"}
_PARITY_MODULES = ("torch", "transformers", "keras_hub", "tests.support.references")
_PARITY_SOURCE = re.compile(
    r"\bimport torch\b|\btransformers\b|\bkeras_hub\b|model_garden_reference|hf_model\b"
    r"|hf_pretraining_model\b"
)
_EXPORT_SOURCE = re.compile(
    r"saved_model|tflite|LiteModel|litert|albert_tf\.serving\.export\b|--export_dir"
    r"|export_formats|run_export|export_encoder|\bexport\("
)
_INTEGRATION_NAMES = {"run_command", "shared_data", "SHARED_DATA", "wordpiece_vocab"}
_INTEGRATION_SOURCE = re.compile(r"albert_tf\.runners|\bdriver\.run\(")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _code(source: str) -> str:
    """`source` without its docstrings: what the code uses, not what its prose mentions."""
    tree = ast.parse(textwrap.dedent(source))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def _used(item) -> tuple[str, set[str]]:
    """(the source text, the names it reaches) of the test, its fixtures and the tests'
    helpers they call, followed transitively."""
    functions = [item.function]
    info = getattr(item, "_fixtureinfo", None)
    names = set(getattr(item, "fixturenames", ()))
    if info is not None:
        for defs in info.name2fixturedefs.values():
            functions.extend(d.func for d in defs)
    seen, texts = set(), []
    while functions:
        fn = inspect.unwrap(functions.pop())
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        try:
            text = _code(inspect.getsource(fn))
        except (OSError, TypeError, SyntaxError):
            continue
        texts.append(text)
        scope = getattr(fn, "__globals__", None) or vars(inspect.getmodule(fn) or object())
        for name in set(_IDENTIFIER.findall(text)):
            names.add(name)
            found = scope.get(name)
            if inspect.ismodule(found):
                names.add(found.__name__)
            elif inspect.isfunction(found) or inspect.isclass(found):
                module = getattr(found, "__module__", "") or ""
                names.add(f"{module}.{name}")
                if module.startswith("tests") and not module.startswith("tests.support"):
                    functions.append(found)  # (the support helpers are leaves: named above)
    return "\n".join(texts), names


def tier_of(item) -> str:
    """The cheapest-last tier `item` belongs to (see the module docstring)."""
    given = [t for t in TIERS if item.get_closest_marker(t) is not None]
    if given:
        return given[0]
    text, names = _used(item)
    if names & _PROCESS_NAMES:
        return "process"
    if any(n == m or n.startswith(m + ".") for n in names for m in _PARITY_MODULES):
        return "parity"
    if _PARITY_SOURCE.search(text):
        return "parity"
    if _EXPORT_SOURCE.search(text):
        return "export"
    if names & _INTEGRATION_NAMES or _INTEGRATION_SOURCE.search(text):
        return "integration"
    if item.get_closest_marker("slow") is not None:
        return "integration"
    return "unit"


# A test's typical cost by tier, in units of a unit test: what orders the files (below).
TIER_COST = {"process": 60, "export": 40, "integration": 30, "parity": 15, "unit": 1}


def mark_tiers(items) -> dict[str, int]:
    """Adds each item's tier marker, then orders the files by their estimated cost (the sum
    of their tests' TIER_COST), costliest first; a file's tests keep their order. Under
    `--dist loadfile --no-loadscope-reorder` (the Makefile's) the long files start first and
    the short ones fill the workers' ends — xdist's own reorder, by number of tests, would
    start the many-case unit files first and leave a long workflow file for the end, one
    worker running it while the other waits. The count per tier."""
    counts = dict.fromkeys(TIERS, 0)
    cost: dict[str, int] = {}
    for item in items:
        tier = tier_of(item)
        item.add_marker(getattr(pytest.mark, tier))
        counts[tier] += 1
        path = str(item.path)
        cost[path] = cost.get(path, 0) + TIER_COST[tier]
    items.sort(key=lambda item: -cost[str(item.path)])  # (stable: the order within a file)
    return counts


CPU_PROPERTY = "cpu_seconds"
_harness_cpu = [0.0]  # CPU seconds the harness's own fixtures spent in the current phase


def charge_to_harness(seconds: float) -> None:
    """Called by a harness fixture (the per-file collection): its CPU time is not the test's."""
    _harness_cpu[0] += seconds


def _timed_phase(item, when: str):
    """Wraps one phase (setup or call) of `item`: its CPU seconds, less what the harness
    charged, go into the phase's report as a user property (which pytest-xdist sends to the
    controller)."""
    _harness_cpu[0] = 0.0
    start = time.process_time()
    yield
    spent = time.process_time() - start - _harness_cpu[0]
    item.user_properties.append((f"{CPU_PROPERTY}:{when}", spent))


class PhaseCpuTime:
    """Worker side: records each test's setup and call CPU time (see `_timed_phase`)."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        yield from _timed_phase(item, "setup")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from _timed_phase(item, "call")


class UnitDurations:
    """Controller side: collects unit tests whose setup or call phase spent more than
    UNIT_CPU_SECONDS of CPU time (reports reach the controller under pytest-xdist with their
    keywords and user properties)."""

    def __init__(self):
        self.slow: list[tuple[str, str, float, float]] = []

    def pytest_runtest_logreport(self, report):
        if report.when not in ("setup", "call") or "unit" not in report.keywords:
            return
        cpu = dict(report.user_properties).get(f"{CPU_PROPERTY}:{report.when}")
        if cpu is not None and cpu > UNIT_CPU_SECONDS:
            self.slow.append((report.nodeid, report.when, cpu, report.duration))

    def verdict(self) -> list[str]:
        """One line per unit test over budget (empty: the tier is honest)."""
        return [
            f"{nodeid} ({when}: {cpu:.1f} CPU s > {UNIT_CPU_SECONDS:.0f}; {wall:.1f} s wall): "
            "make it cheaper or mark it integration"
            for nodeid, when, cpu, wall in sorted(self.slow, key=lambda s: -s[2])
        ]
