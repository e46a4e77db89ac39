"""benchmarks.no_plan: why a policy at a confidence makes no plan."""

from __future__ import annotations

import pytest

from benchmarks.no_plan import main, no_plan_rows, summary


def test_summary_counts_each_factor_under_the_confidence() -> None:
    rows = [dict(scenario="a", p_success=0.5, p_reach=0.6, p_time_given_reach=0.5 / 0.6),
            dict(scenario="b", p_success=0.85, p_reach=0.95, p_time_given_reach=0.85 / 0.95),
            dict(scenario="c", p_success=0.88, p_reach=0.89, p_time_given_reach=0.88 / 0.89)]
    s = summary(rows, 0.9)
    assert (s["n"], s["by_reach"], s["by_time"]) == (3, 2, 2)
    assert s["median_p_reach"] == pytest.approx(0.89)


@pytest.mark.parametrize("argv", [["--policy", "cotune"], ["--setting", "closed-loop"], ["--workloads", "nope"]])
def test_a_policy_without_confidence_or_an_unknown_name_is_refused_with_exit_2(argv, capsys) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("error: unknown")


@pytest.mark.slow
def test_every_no_plan_scenario_has_its_best_chance_under_the_confidence() -> None:
    rows = no_plan_rows("cotune_q90", "one-curve", 6, ("bert-t4",))
    assert rows
    for r in rows:
        assert r["p_success"] < 0.9  # else the policy should have made a plan
        assert r["p_success"] <= r["p_reach"] + 1e-12
        assert 0.0 <= r["p_time_given_reach"] <= 1.0 + 1e-9
