"""docs/architecture.md is the map of the code: every module is on it (one line each), every
path it lists exists, it stays a map (at most 250 lines, ~200 of them module lines), and no
document links a file outside the repository (a user's clone has nothing beside it)."""

import ast
import re

from tests.support.harness import ROOT

MAP = ROOT / "docs" / "architecture.md"
MAX_LINES = 250
# A module line of the map: a path, then two spaces or more, then what it holds.
MODULE_LINE = re.compile(r"^(\S+(?:\.py|/))\s{2,}\S")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
OUTSIDE = ("../shared", "DESIGN.md", "ALGORITHMS.md")


def map_paths(text: str) -> list[str]:
    """The paths of the module lines inside the map's code blocks."""
    paths, inside = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = not inside
        elif inside and (match := MODULE_LINE.match(line)):
            paths.append(match.group(1))
    return paths


def has_code(path) -> bool:
    """False for a package `__init__.py` holding only a docstring (or nothing)."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return any(not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)) for n in body)


def project_modules() -> list[str]:
    files = [
        *ROOT.glob("albert_tf/**/*.py"),
        *ROOT.glob("data_pipeline/**/*.py"),
        *ROOT.glob("run_*.py"),
    ]
    return sorted(
        str(f.relative_to(ROOT))
        for f in files
        if "__pycache__" not in f.parts and (f.name != "__init__.py" or has_code(f))
    )


def test_every_module_is_on_the_map():
    listed = set(map_paths(MAP.read_text(encoding="utf-8")))
    missing = [m for m in project_modules() if m not in listed]
    assert not missing, "modules missing from docs/architecture.md:\n" + "\n".join(missing)


def test_every_path_on_the_map_exists():
    paths = map_paths(MAP.read_text(encoding="utf-8"))
    assert len(paths) > 80  # the parser found the module lines
    absent = [p for p in paths if not (ROOT / p).exists()]
    assert not absent, "paths on the map that do not exist:\n" + "\n".join(absent)


def test_the_map_is_a_map():
    assert len(MAP.read_text(encoding="utf-8").splitlines()) <= MAX_LINES


def outside_links(path, text=None) -> list[str]:
    """The links and names of `path` (a Markdown file; its `text` if given) that point
    outside the repository, or to a file that does not exist."""
    text = path.read_text(encoding="utf-8") if text is None else text
    found = [name for name in OUTSIDE if name in text]
    for target in MARKDOWN_LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL or an anchor of the same page
        resolved = (path.parent / target.split("#")[0]).resolve()
        if ROOT.resolve() not in resolved.parents and resolved != ROOT.resolve():
            found.append(target)
        elif not resolved.exists():
            found.append(f"{target} (absent)")
    return found


def test_no_document_links_outside_the_repository():
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    bad = {str(d.relative_to(ROOT)): links for d in documents if (links := outside_links(d))}
    assert not bad, bad


def test_the_link_check_catches_outside_and_absent_links():
    text = (
        "[a](../../shared/x.md) [b](design/none.md) [c](#tiers) [d](https://example.org) "
        "[e](performance.md#on-device-litert) see ../shared/DESIGN.md"
    )
    found = outside_links(MAP, text)
    assert "../../shared/x.md" in found and "design/none.md (absent)" in found
    assert "../shared" in found and "DESIGN.md" in found and len(found) == 4
