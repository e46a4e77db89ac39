"""`python -m benchmarks` refuses bad input before running, and never leaves a half-written
results file behind."""

from __future__ import annotations

import pytest

from benchmarks import __main__ as bench_main
from benchmarks import report


@pytest.fixture
def no_run(monkeypatch):
    """The run itself: refused input must never reach it."""

    def run(*_a, **_kw):
        raise AssertionError("the benchmarks ran")

    monkeypatch.setattr(bench_main, "run", run)


def _refusal(capsys, argv: list[str]) -> str:
    assert bench_main.main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    return err


def test_an_out_that_is_an_existing_file_is_refused_with_one_line_and_exit_2(tmp_path, capsys, no_run) -> None:
    f = tmp_path / "results.json"
    f.write_text("keep me", encoding="utf-8")
    err = _refusal(capsys, ["--quick", "--out", str(f)])
    assert "--out" in err and f.read_text(encoding="utf-8") == "keep me"


def test_a_policy_that_none_of_the_chosen_settings_runs_is_refused_with_exit_2(tmp_path, capsys, no_run) -> None:
    err = _refusal(capsys, ["--quick", "--policies", "cotune", "--settings", "closed-loop", "--out", str(tmp_path)])
    assert "cotune" in err and "one-curve" in err  # names the policy and where it does run


def _report_data(command: str) -> dict:
    return {"mode": "test", "command": command, "date": "d", "wall_s": 1.0, "cpu_count": 1, "settings": [], "summary": [],
            "model_error": {"time": [], "accuracy": []}, "latency": {"solver": [], "optuna": []},
            "regret": {"n_scenarios": 0, "headline_budget": 16, "summary": [], "scenarios": [], "outcomes": []}}


def test_a_report_that_fails_to_write_leaves_the_previous_report_whole(tmp_path) -> None:
    (tmp_path / "report.md").write_text("the previous report\n", encoding="utf-8")
    # a lone surrogate survives JSON but cannot be encoded as UTF-8: the write fails midway
    report.write_json(tmp_path / "results.json", _report_data("python -m benchmarks \ud800"))
    with pytest.raises(UnicodeEncodeError):
        report.rewrite(tmp_path)
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "the previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md", "results.json"]  # no temporary file left

