"""benchmarks.voi_calibration: expected vs realised gain per measurement, with intervals."""

from __future__ import annotations

import math

import pytest

from benchmarks.voi_calibration import bought, main, scenario_bootstrap


def _rows(pairs_by_scenario):
    return [dict(scenario=s, expected=e, realised=r) for s, pairs in pairs_by_scenario.items() for e, r in pairs]


def test_gains_that_agree_everywhere_have_a_gap_of_zero_with_a_zero_width_interval() -> None:
    s = scenario_bootstrap(_rows({"a": [(0.1, 0.1), (0.0, 0.0)], "b": [(0.3, 0.3)], "c": [(0.05, 0.05)]}), draws=500)
    assert s["gap"] == pytest.approx(0.0) and s["gap_ci"] == pytest.approx([0.0, 0.0])
    assert (s["n"], s["scenarios"]) == (4, 3)


def test_an_over_estimate_by_a_constant_is_the_gap_and_its_interval() -> None:
    s = scenario_bootstrap(_rows({k: [(0.02 * i + 0.1, 0.02 * i)] for i, k in enumerate("abcdefgh")}), draws=500)
    assert s["gap"] == pytest.approx(0.1) and s["gap_ci"] == pytest.approx([0.1, 0.1])
    assert s["realised_ci"][0] < s["realised"] < s["realised_ci"][1]


def test_the_interval_resamples_whole_scenarios_not_measurements() -> None:
    # one scenario holds many identical measurements: resampling them one by one would
    # give a narrow interval; resampling scenarios keeps both values' chance at ½
    rows = _rows({"big": [(1.0, 0.0)] * 50, "small": [(0.0, 0.0)]})
    s = scenario_bootstrap(rows, draws=2000)
    assert s["expected_ci"][0] == pytest.approx(0.0) and s["expected_ci"][1] == pytest.approx(1.0)


def test_no_rows_is_no_measurement() -> None:
    assert scenario_bootstrap([]) == dict(n=0)


@pytest.mark.parametrize("argv", [["--workloads", "nope"], ["--top", "0"]])
def test_an_unknown_workload_or_a_bad_top_is_refused_with_exit_2(argv, capsys) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusal
        code = exc.code
    assert code == 2
    assert "nope" in capsys.readouterr().err or argv[0] == "--top"


@pytest.mark.slow
def test_the_measurements_bought_add_up_to_the_plans_summed_gains() -> None:
    from benchmarks.policies import run_policy
    from benchmarks.scenarios import scenarios, workloads

    rows = bought(("bert-t4",))
    assert rows and all(r["kind"] in ("step", "short_run", "noise") for r in rows)
    for scn in scenarios(workloads(names=("bert-t4",))):
        plan = run_policy("cotune_voi", scn, (16,), setting="one-curve")[0]
        oracle = scn.oracle.solve(scn.target, scn.deadline_s).cost
        mine = [r for r in rows if r["scenario"] == scn.key]
        assert [r["order"] for r in mine] == list(range(len(mine)))
        assert math.fsum(r["expected"] for r in mine) * oracle == pytest.approx(plan.expected_gain, abs=1e-9)
        assert math.fsum(r["realised"] for r in mine) * oracle == pytest.approx(plan.realised_gain, abs=1e-9)


def test_the_reports_value_of_information_table_gives_means_with_intervals_per_setting_and_budget() -> None:
    from benchmarks.report import _voi_table

    rows = [dict(setting="one-curve", policy="cotune_voi", probes=16, median_probes=5, mean_accuracy_runs=0.0,
                 miss_rate=0.25, median_regret=0.1),
            dict(setting="one-curve", policy="cotune_voi_q90", probes=16, median_probes=4, mean_accuracy_runs=0.0,
                 miss_rate=0.5, median_regret=math.inf)]
    outcomes = [dict(setting="one-curve", policy="cotune_voi", budget=16, scenario=k, oracle_cost=2.0,
                     expected_gain=0.4, realised_gain=0.2) for k in "abc"]
    outcomes.append(dict(setting="one-curve", policy="cotune_voi", budget=6, scenario="a", oracle_cost=1.0,
                         expected_gain=9.0, realised_gain=9.0))  # another budget: not in the 16-probe row
    lines = _voi_table(rows, outcomes)
    voi, q90 = (next(ln for ln in lines if f"| {p} | 16 |" in ln) for p in ("cotune_voi", "cotune_voi_q90"))
    assert "| 20.0 % [20.0 %, 20.0 %] | 10.0 % [10.0 %, 10.0 %] | 10.0 % [10.0 %, 10.0 %] |" in voi
    assert "| – | – | – |" in q90  # no outcomes: no interval to state
