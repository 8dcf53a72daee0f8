"""The README's Python example runs as written and prints what it says."""

import contextlib
import io
import os
import re

from tests.support.harness import ROOT


def test_readme_python_example_runs(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no python example"
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "README.md", "exec"), {})
    printed = out.getvalue()
    assert "11813810" in printed.replace(",", "")
    assert "restored encoder from out/my_model/ckpt-1 (albert_tf)" in printed
    assert os.path.isfile(tmp_path / "out" / "my_model" / "albert_config.json")
