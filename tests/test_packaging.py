"""pyproject.toml declares what the package needs at run time, in ranges that the tested lock
(requirements.txt) satisfies, and its console scripts name functions that exist."""

import ast
import tomllib

from packaging.requirements import Requirement

from tests.support.harness import ROOT


def project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def pins(path):
    """{name: version} of the `name==version` lines of a requirements file."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line:
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", line
            found[req.name.lower()] = spec.version
    return found


def test_every_pinned_runtime_requirement_is_declared_and_within_its_range():
    declared = {r.name.lower(): r for r in map(Requirement, project()["dependencies"])}
    pinned = pins(ROOT / "requirements.txt")
    assert pinned and set(declared) == set(pinned)
    for name, version in pinned.items():
        assert declared[name].specifier, f"{name}: no range declared"
        assert declared[name].specifier.contains(version), f"{name}=={version} not in range"


def test_the_range_check_can_fail():
    assert not Requirement("tensorflow>=2.21,<2.22").specifier.contains("2.22.0")


def test_console_scripts_name_existing_functions():
    scripts = project()["scripts"]
    assert {"albert-pretrain", "albert-classify", "albert-squad", "albert-export"} <= set(scripts)
    for name, target in scripts.items():
        module, function = target.split(":")
        path = ROOT / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert function in defined, f"{name}: {target} is not defined"


def test_the_onnx_extra_is_what_the_suite_tests():
    """`pip install .[onnx]` gets the versions requirements-dev.txt pins (and tests)."""
    extra = {
        r.name.lower(): r for r in map(Requirement, project()["optional-dependencies"]["onnx"])
    }
    dev = {}  # (its pins; the `-r requirements.txt` line aside)
    for line in (ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            name, version = line.split("==")
            dev[name.lower()] = version
    assert set(extra) == {"tf2onnx", "onnx", "onnxruntime"}
    for name, req in extra.items():
        assert req.specifier.contains(dev[name]) and str(req.specifier) == f"=={dev[name]}", name
