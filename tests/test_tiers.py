"""The tiers of docs/architecture.md, checked from the imports: no module imports a tier
above its own, and below the entry points no two packages of one tier import each other.

    0  data_pipeline (tokenization, documents, records, atomic, cli)
    1  data_pipeline.pretraining / .classification / .squad   (task data)
    2  albert_tf.modeling
    3  albert_tf.checkpoints
    4  albert_tf.training
    5  albert_tf.serving
    6  albert_tf.tools, albert_tf.runners, run_*.py, albert_tf (the package's public façade)
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
TASK_DATA = ("pretraining", "classification", "squad", "tagging")
TIERS = {
    "data_pipeline": 0,
    **{f"data_pipeline.{t}": 1 for t in TASK_DATA},
    "albert_tf.modeling": 2,
    "albert_tf.checkpoints": 3,
    "albert_tf.training": 4,
    "albert_tf.serving": 5,
    "albert_tf.tools": 6,
    "albert_tf.runners": 6,
    "albert_tf": 6,
    "runners": 6,
}


def group(module: str) -> str | None:
    """The tier group of a dotted module name (None: not this project's)."""
    parts = module.split(".")
    if parts[0].startswith("run_"):
        return "runners"
    if parts[0] == "data_pipeline":
        return (
            f"data_pipeline.{parts[1]}"
            if len(parts) > 1 and parts[1] in TASK_DATA
            else "data_pipeline"
        )
    if parts[0] == "albert_tf":
        if len(parts) > 1 and f"albert_tf.{parts[1]}" in TIERS:
            return f"albert_tf.{parts[1]}"
        return "albert_tf"
    return None


def project_modules():
    files = [
        *ROOT.glob("albert_tf/**/*.py"),
        *ROOT.glob("data_pipeline/**/*.py"),
        *ROOT.glob("run_*.py"),
    ]
    for path in files:
        parts = path.relative_to(ROOT).with_suffix("").parts
        yield ".".join(p for p in parts if p != "__init__"), path


def imports(path: pathlib.Path):
    """Every project module `path` imports (module level or inside functions)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)


def violations(module_imports):
    """(module, imported name) pairs → the imports that break the tiers, and how many
    cross-tier imports were looked at."""
    found, checked = [], 0
    for module, name in module_imports:
        own, other = group(module), group(name)
        if other is None or other == own:
            continue
        checked += 1
        # Entry points (tier 6) may use each other; below, a tier uses only lower ones.
        if TIERS[other] > TIERS[own] or TIERS[other] == TIERS[own] < 6:
            found.append(f"{module} (tier {TIERS[own]}) imports {name} (tier {TIERS[other]})")
    return sorted(set(found)), checked


def test_no_module_imports_a_higher_tier_or_a_sibling_package():
    found, checked = violations(
        (module, name) for module, path in project_modules() for name in imports(path)
    )
    assert not found, "\n".join(found)
    assert checked > 50  # the walk saw the project's cross-tier imports


def test_the_check_catches_upward_and_sibling_imports():
    found, _ = violations(
        [
            ("albert_tf.modeling.encoder", "albert_tf.training.trainer"),
            ("data_pipeline.squad.features", "data_pipeline.classification.features"),
            ("albert_tf.checkpoints.own", "albert_tf"),
            ("albert_tf.serving.export", "albert_tf.checkpoints.loading"),
            ("run_squad", "albert_tf.tools.demo"),
        ]
    )
    assert len(found) == 3 and all("serving" not in f and "run_squad" not in f for f in found)


def circles(module_imports) -> list[list[str]]:
    """(module, imported name) pairs → the import circles among the project's modules
    (each as the modules around it, first repeated last). A name counts when it is a
    module: `from a.b import c` imports a.b, and a.b.c when c is a module; imports inside
    functions count too (a lazy import that dodges a circle is still one)."""
    pairs = list(module_imports)
    modules = {module for module, _ in pairs}
    edges = {m: set() for m in modules}
    for module, name in pairs:
        if name in modules and name != module:
            edges[module].add(name)
    state, stack, found = {}, [], []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == "open":
                found.append(stack[stack.index(n) :] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = "done"

    for m in sorted(modules):
        if m not in state:
            visit(m)
    return found


def test_no_import_circles():
    modules = list(project_modules())
    pairs = [(module, name) for module, path in modules for name in imports(path)]
    found = circles(pairs)
    assert not found, "\n".join(" -> ".join(c) for c in found)
    assert len(modules) > 150 and len(pairs) > 1000  # the walk saw the project's imports


def test_the_circle_check_finds_a_circle_through_a_function_level_import():
    source = {
        "albert_tf.serving.export": ["albert_tf.serving.litert"],
        "albert_tf.serving.litert": ["albert_tf.serving.text_ops"],
        "albert_tf.serving.text_ops": ["albert_tf.serving.export"],  # (inside a function)
        "albert_tf.serving.base": ["albert_tf.serving.text_ops"],
    }
    pairs = [(m, n) for m, names in source.items() for n in names]
    (found,) = circles(pairs)
    assert found[0] == found[-1] and len(found) == 4
    assert set(found) == {f"albert_tf.serving.{m}" for m in ("export", "litert", "text_ops")}
    assert circles(pairs[1:]) == []


RUNNERS_BUDGET = 2000  # lines: the runners are the wiring (driver, families' hooks, commands)
FMT_SKIP_BUDGET = 30  # lines formatted by hand in the whole repository


def test_the_runners_stay_within_their_line_budget():
    """albert_tf/runners/ and run_*.py hold only the wiring; a concept that grows belongs to
    the tier that owns it (docs/architecture.md), not to a runner. The budget is met by
    design, so lines packed by hand (the formatter told to skip them) are bounded too."""
    runners = [*ROOT.glob("albert_tf/runners/**/*.py"), *ROOT.glob("run_*.py")]
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in runners)
    assert len(runners) > 10 and lines <= RUNNERS_BUDGET, f"the runners: {lines} lines"
    mark = "# fmt" + ": skip"  # (spelled so that this file does not count itself)
    code = [
        p
        for d in ("albert_tf", "data_pipeline", "tests", "bench", "experiments")
        for p in ROOT.glob(f"{d}/**/*.py")
    ]
    skipped = sum(p.read_text(encoding="utf-8").count(mark) for p in [*code, *ROOT.glob("*.py")])
    assert skipped <= FMT_SKIP_BUDGET, f"{skipped} lines formatted by hand ({mark})"
