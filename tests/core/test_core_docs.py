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


def test_the_json_example_in_cli_md_is_the_quick_starts_real_answer(capsys):
    import json

    import pytest

    block = (DOCS / "cli.md").read_text().split("### JSON (`--json`)", 1)[1]
    shown = json.loads(re.search(r"```json\n(.*?)```", block, flags=re.S).group(1))
    assert main(["recommend", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--max-workers", "16",
                 "--gpus-per-host", "4", "--price", "t4=0.526", "--json"]) == 0
    real = json.loads(capsys.readouterr().out)

    def same(doc, truth, where=""):  # every value shown, as rounded in the page; cut lists/objects skipped
        if isinstance(doc, dict):
            for key, value in doc.items():
                if key != "...":
                    assert key in truth, f"{where}/{key} is not in the real answer"
                    same(value, truth[key], f"{where}/{key}")
        elif isinstance(doc, list):
            if doc:
                assert len(doc) == len(truth), where
                for i, (a, b) in enumerate(zip(doc, truth)):
                    same(a, b, f"{where}/{i}")
        elif isinstance(doc, float):
            assert truth == pytest.approx(doc, abs=0.5 * 10 ** -len(repr(doc).split(".")[1])), where
        else:
            assert doc == truth, where

    same(shown, real)


def test_every_exported_name_is_in_the_api_page():
    import cotune

    table = (DOCS / "api.md").read_text().split("## Every name `import cotune` exports", 1)[1]
    missing = [name for name in cotune.__all__ if f"`{name}`" not in table]
    assert not missing, f"exported but not in docs/api.md's table: {missing}"
    for name in cotune.__all__:  # and each one is there to import
        assert getattr(cotune, name) is not None


def test_profile_format_example_is_valid_input():
    from cotune import parse_profile

    (block,) = [b for b in _blocks("profile-format.md", "json") if '"record": "workload"' in b][:1]
    profile = parse_profile(block.splitlines(keepends=True))
    assert len(profile.steps) == 1 and len(profile.evals) == 1


def test_models_md_quotes_the_quantile_tables_size_the_code_builds():
    # It said 65 angles after the table grew to 129.
    from cotune.models._shape import _TABLE_ANGLE, _TABLE_Z

    text = (DOCS / "models.md").read_text()
    assert f"{_TABLE_ANGLE.size} angles × {_TABLE_Z.size} normal quantiles" in text


def test_models_md_quotes_the_one_batch_share_range_the_code_uses():
    # It quoted (0.002, 0.999), rounded, for (0.0022, 0.9988).
    from cotune.models._step_time import ONE_BATCH_SHARE_RANGE

    lo, hi = ONE_BATCH_SHARE_RANGE
    assert f"`ONE_BATCH_SHARE_RANGE = ({lo:g}, {hi:g})`" in (DOCS / "models.md").read_text()
