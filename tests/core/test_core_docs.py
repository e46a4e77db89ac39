"""The examples in the core docs run as written."""

import re
import shlex
from pathlib import Path

import pytest

from cotune.cli import main

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = ["concepts.md", "profile-format.md", "models.md", "api.md", "cli.md", "benchmarks.md"]


def _blocks(page: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_python_examples_run(page):
    for code in _blocks(page, "python"):
        exec(compile(code, f"{page}", "exec"), {})


@pytest.mark.slow
def test_cli_examples_run(capsys, tmp_path, monkeypatch):
    # In a scratch directory (commands write --out and --plot files there), with the
    # repository's examples/ beside it for the commands that read example logs.
    (tmp_path / "examples").symlink_to(DOCS.parent / "examples")
    monkeypatch.chdir(tmp_path)
    commands = [line[2:] for line in (DOCS / "cli.md").read_text().splitlines() if line.startswith("$ cotune ")]
    assert len(commands) >= 3
    for command in commands:
        assert main(shlex.split(command)[1:]) == 0, command
    capsys.readouterr()


def test_profile_format_example_is_valid_input():
    from cotune import parse_profile

    (block,) = [b for b in _blocks("profile-format.md", "json") if '"record": "workload"' in b][:1]
    profile = parse_profile(block.splitlines(keepends=True))
    assert len(profile.steps) == 1 and len(profile.evals) == 1
