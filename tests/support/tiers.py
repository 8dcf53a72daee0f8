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
`check_unit_durations` keeps it honest: a unit test whose setup or call takes longer than
UNIT_SECONDS fails the session (make it cheaper, or mark it `integration`).
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

TIERS = ("process", "parity", "export", "integration", "unit")
UNIT_SECONDS = 5.0

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
    import pytest

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


class UnitDurations:
    """Collects unit tests whose setup or call phase exceeded UNIT_SECONDS (reports reach
    the controller under pytest-xdist with their keywords, markers included)."""

    def __init__(self):
        self.slow: list[tuple[str, str, float]] = []

    def pytest_runtest_logreport(self, report):
        if report.when in ("setup", "call") and "unit" in report.keywords:
            if report.duration > UNIT_SECONDS:
                self.slow.append((report.nodeid, report.when, report.duration))

    def verdict(self) -> list[str]:
        """One line per unit test over budget (empty: the tier is honest)."""
        return [
            f"{nodeid} ({when} {seconds:.1f}s > {UNIT_SECONDS:.0f}s): make it cheaper or "
            "mark it integration"
            for nodeid, when, seconds in sorted(self.slow, key=lambda s: -s[2])
        ]
