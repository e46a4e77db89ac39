"""docs/spot.md: the Python example runs, and the TOML block is the shipped example file."""

from __future__ import annotations

import os
import re

import pytest


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


@pytest.mark.slow
def test_python_example_runs(repo_root, capsys):
    text = (repo_root / "docs" / "spot.md").read_text(encoding="utf-8")
    blocks = _blocks(text, "python")
    assert blocks
    cwd = os.getcwd()
    os.chdir(repo_root)
    try:
        for code in blocks:
            exec(compile(code, "docs/spot.md", "exec"), {})
    finally:
        os.chdir(cwd)
    assert capsys.readouterr().out.count("\n") >= 3


def test_toml_block_matches_the_example_file(repo_root):
    import tomllib

    text = (repo_root / "docs" / "spot.md").read_text(encoding="utf-8")
    doc = tomllib.loads(_blocks(text, "toml")[0])
    shipped = tomllib.loads((repo_root / "examples" / "cluster.toml").read_text(encoding="utf-8"))
    assert doc == shipped
