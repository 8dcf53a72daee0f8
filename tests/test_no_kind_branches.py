"""Shared code never branches on a task kind's name: a task family is a plug-in (its
`albert_tf.checkpoints.task_kinds` module, its `albert_tf.serving.tasks/<kind>/` folder and
one registry line each), so outside those files no comparison of a kind or task value with
a registered kind's name (`kind == "squad"`, `task in ("squad", "fill_mask")`) and no table
keyed by kind names (`{"squad": ..., "encoder": ...}.get(kind)`) may decide what to do.

Precise on purpose: a literal counts only when it is a registered kind's name and, for a
comparison, the other side is a kind or task value (a name or attribute ending in `kind`
or `task`, or a `["kind"]` / `.get("task")` lookup), so that a component named "encoder"
(`name == "encoder"`) or an entity's tag kind (`prev_kind != cur_kind`) is not flagged."""

import ast
import pathlib
import re

from albert_tf.checkpoints.task_kinds import KINDS

ROOT = pathlib.Path(__file__).resolve().parents[1]
KIND_VALUE = re.compile(r"(^|_)(kind|task)$")


def _kind_value(node) -> bool:
    """Whether `node` reads a task kind: `kind`, `info.kind`, `self.task`, `meta["task"]`,
    `meta.get("kind")`."""
    if isinstance(node, ast.Name):
        return bool(KIND_VALUE.search(node.id))
    if isinstance(node, ast.Attribute):
        return bool(KIND_VALUE.search(node.attr))
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value in ("kind", "task")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        first = node.args[0] if node.args else None
        keyed = isinstance(first, ast.Constant) and first.value in ("kind", "task")
        return node.func.attr == "get" and keyed
    return False


def _kind_literals(node, kinds) -> list[str]:
    """The registered kind names `node` spells: a string, or a tuple/list/set of them."""
    if isinstance(node, ast.Constant) and node.value in kinds:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in kinds]
    return []


def kind_branches(source: str, kinds) -> list[tuple[int, str]]:
    """(line, what) of every branch on a kind's name in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for a, b in zip(operands, operands[1:]):
                for value, literal in ((a, b), (b, a)):
                    names = _kind_literals(literal, kinds)
                    if names and _kind_value(value):
                        found.append((node.lineno, f"compares {ast.unparse(value)} with {names}"))
        elif isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and k.value in kinds]
            if len(keys) >= 2:
                found.append((node.lineno, f"a table keyed by kinds {keys}"))
        elif isinstance(node, ast.Call):
            keys = [k.arg for k in node.keywords if k.arg in kinds]
            if len(keys) >= 2:
                found.append((node.lineno, f"a table keyed by kinds {keys}"))
        elif isinstance(node, ast.match_case):
            names = [
                p.value.value
                for p in ast.walk(node.pattern)
                if isinstance(p, ast.MatchValue) and isinstance(p.value, ast.Constant)
                if p.value.value in kinds
            ]
            if names:
                found.append((node.pattern.lineno, f"matches kinds {names}"))
    return sorted(found)


# Registries: one line per kind or fine-tuning family, keyed by its name by design.
REGISTRIES = (ROOT / "albert_tf" / "runners" / "families" / "__init__.py",)


def _own_files(kinds) -> set[pathlib.Path]:
    """Each kind's own files (its task_kinds module and its serving folder) and the
    registries."""
    own = set(REGISTRIES)
    for name in kinds:
        own.add(ROOT / "albert_tf" / "checkpoints" / "task_kinds" / f"{name}.py")
        own.update((ROOT / "albert_tf" / "serving" / "tasks" / name).glob("**/*.py"))
    return own


def test_shared_code_never_branches_on_a_kind_name():
    kinds = set(KINDS)
    own = _own_files(kinds)
    files = sorted([*ROOT.glob("albert_tf/**/*.py"), *ROOT.glob("data_pipeline/**/*.py")])
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in files
        if path not in own
        for line, what in kind_branches(path.read_text(encoding="utf-8"), kinds)
    ]
    assert not found, "\n".join(found)
    assert len(files) > 150 and len(own) > len(kinds)  # (the walk saw the project)


def test_the_check_finds_branches_and_leaves_other_strings_alone():
    kinds = {"classifier", "squad", "encoder", "fill_mask"}
    flagged = """
if info.kind == "squad": pass
if task in ("squad", "fill_mask"): pass
if "classifier" != self.task: pass
if meta["task"] == "encoder": pass
if metadata.get("task") == "squad": pass
options = {"squad": 1, "encoder": 2}.get(kind, ())
own.update(classifier=1, squad=2)
match kind:
    case "squad": pass
"""
    lines = [line for line, _ in kind_branches(flagged, kinds)]
    assert lines == [2, 3, 4, 5, 6, 7, 8, 10], lines
    ignored = """
if name == "encoder": pass
if c not in ("encoder", "pooler"): pass
if values.dtype.kind == "f": pass
if prev_kind != cur_kind: pass
if task == "cola": pass
if info.kind != kind: pass
heads = {"encoder": 1, "pooler": 2}
"""
    assert kind_branches(ignored, kinds) == []
