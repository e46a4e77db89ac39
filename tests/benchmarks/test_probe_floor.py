"""The probe-cost floor under closed-loop regret (benchmarks/probe_floor.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.probe_floor import floor_rows, main, summary


def test_the_cheapest_share_is_the_least_the_launcher_bills_for_one_probe() -> None:
    # Independent of the module's arithmetic: bill every candidate through the replay launcher.
    from benchmarks._registry import load
    from benchmarks.scenarios import scenarios, workloads

    load()
    rows = {r["scenario"]: r for r in floor_rows("bert-t4")}
    scn = next(iter(scenarios(workloads(names=("bert-t4",)))))
    bills = []
    for i in range(len(scn.candidates)):
        launcher = scn.launcher(scn.evidence("one-curve"))
        launcher.probe(i)
        bills.append(launcher.probe_cost)
    sol = scn.oracle.solve(scn.target, scn.deadline_s)
    # The reference run's own configuration is known for free; the cheapest probe is a paid one.
    assert sum(b == 0 for b in bills) == 1
    assert rows[scn.key]["cheapest_share"] == pytest.approx(min(b for b in bills if b > 0) / sol.cost)
    assert rows[scn.key]["at_optimum_share"] == pytest.approx(bills[sol.index] / sol.cost)


def test_confirming_the_optimum_never_costs_less_than_the_cheapest_probe() -> None:
    rows = floor_rows("ncf-t4")
    assert rows
    # ncf's optimum (1 × 32768) is not the reference run's configuration (4 × 64): a paid probe.
    assert all(r["at_optimum_share"] >= r["cheapest_share"] > 0 for r in rows)


def test_summary_counts_scenarios_over_the_aim() -> None:
    rows = [dict(cheapest_share=s, at_optimum_share=2 * s) for s in (0.01, 0.02, 0.2)]
    s = summary(rows, aim=0.05)
    assert s["n"] == 3 and s["median_cheapest"] == pytest.approx(0.02) and s["median_at_optimum"] == pytest.approx(0.04)
    assert s["over_aim"] == pytest.approx(1 / 3)
    assert math.isnan(summary([])["median_cheapest"])


def test_an_unknown_workload_is_refused_with_exit_2(capsys) -> None:
    assert main(["--workloads", "no-such-trace"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown workload")


def test_the_report_names_every_workload_asked_for(capsys) -> None:
    assert main(["--workloads", "bert-t4,ncf-t4"]) == 0
    out = capsys.readouterr().out
    assert "bert-t4" in out and "ncf-t4" in out and "all" in out
    # ncf trains in seconds: its cheapest probe alone exceeds the aim in every scenario.
    assert np.all([r["cheapest_share"] > 0.05 for r in floor_rows("ncf-t4")])
