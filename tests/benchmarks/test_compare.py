"""python -m benchmarks.compare: two results.json side by side."""

from __future__ import annotations

import math
from pathlib import Path

from benchmarks.compare import main, workload_misses
from benchmarks.report import write_json


def _run(priors: str, misses: list[str | None]) -> dict:
    """A results.json with one cotune row over len(misses) scenarios of two workloads."""
    outcomes = [{"setting": "one-curve", "policy": "cotune", "budget": 16, "workload": ("a", "b")[i % 2], "miss": m}
                for i, m in enumerate(misses)]
    n = len(misses)
    counts = {k: sum(m == k for m in misses) for k in ("no_plan", "target", "deadline", "gave_up")}
    row = {"setting": "one-curve", "policy": "cotune", "probes": 16, "miss_rate": sum(m is not None for m in misses) / n,
           "misses": counts, "median_regret": math.inf if 2 * sum(m is not None for m in misses) > n else 0.05,
           "delivered": 0.9, "promised": 0.8, "delivered_q90": None, "promised_q90": None, "brier": 0.1, "ece": 0.05,
           "coverage_step_90": 0.9, "coverage_epochs_90": 0.95}
    return {"priors": {"set": priors}, "summary": [row], "regret": {"outcomes": outcomes}}


def test_workload_misses_count_each_workloads_misses_and_scenarios() -> None:
    data = _run("held-out", ["target", None, None, "deadline"])
    assert workload_misses(data, setting="one-curve", policy="cotune", probes=16) == {"a": (1, 2), "b": (1, 2)}


def test_compare_prints_both_runs_row_by_row_labelled_by_their_priors(tmp_path: Path, capsys) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    write_json(a, _run("shipped", [None, None, "target", None]))
    write_json(b, _run("held-out", ["no_plan", None, "target", "deadline"]))
    assert main([str(a), str(b), "--workloads"]) == 0
    out = capsys.readouterr().out
    assert "| one-curve | cotune | 16 | shipped | 25.0 % (0/1/0/0) |" in out
    assert "| one-curve | cotune | 16 | held-out | 75.0 % (1/1/1/0) | ∞ |" in out
    assert "one-curve/cotune/16 misses shipped→held-out: a 1→2/2, b 0→1/2" in out


def test_compare_refuses_a_file_that_is_not_a_results_json_with_exit_2(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main([str(bad), str(bad)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
