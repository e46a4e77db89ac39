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
