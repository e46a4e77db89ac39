"""The epochs-interval coverage breakdown (benchmarks/epochs_coverage.py)."""

from __future__ import annotations

import pytest

from benchmarks.epochs_coverage import group, main


def _row(workload: str, hit: bool, err: float, d: float) -> dict:
    return dict(workload=workload, setting="one-curve", target="tight", hit=hit, log_error=err, sigma=0.2, doublings=d)


def test_coverage_groups_by_workload_and_by_whole_doublings() -> None:
    rows = [_row("a", True, 0.1, 0.9), _row("a", False, -0.5, 1.2), _row("b", True, 0.05, 2.6)]
    by_w = group(rows, "workload")
    assert by_w["a"]["n"] == 2 and by_w["a"]["coverage"] == 0.5 and by_w["a"]["median_abs_log_error"] == pytest.approx(0.3)
    by_d = group(rows, "doublings")
    assert list(by_d) == [1, 3] and by_d[1]["n"] == 2 and by_d[3]["coverage"] == 1.0


@pytest.mark.parametrize("argv", [["--settings", "closed-loop"], ["--workloads", "no-such-trace"]])
def test_an_unknown_setting_or_workload_is_refused_with_exit_2(argv, capsys) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("error: unknown")


def test_the_breakdown_of_one_workload_counts_each_target_once() -> None:
    from benchmarks.epochs_coverage import coverage_rows

    rows = coverage_rows("bert-t4", ["one-curve"])
    assert rows and {r["setting"] for r in rows} == {"one-curve"}
    keys = [(r["target"], r["global_batch"]) for r in rows]
    assert len(keys) == len(set(keys))  # each (target, held-out batch) once, not once per deadline
