"""How the summary rows are computed: percentiles, re-summarising a results.json, and
policies that raised on every scenario."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from benchmarks import report
from benchmarks.regret import Outcome, ScenarioResult, _pct, outcome_dicts, savings, summarize, summarize_outcome_dicts


def _outcome(scenario: str, *, regret: float = 0.0, policy: str = "cotune", budget: int = 16,
             setting: str = "one-curve") -> Outcome:
    miss = "target" if math.isinf(regret) else None
    cost = math.inf if miss else 10.0 * (1.0 + regret)
    return Outcome(scenario=scenario, workload="w", family="cifar10", target_label="loose", deadline_label="none",
                   policy=policy, budget=budget, probes=budget, probe_cost=1.0, gpu="t4", workers=2, local_batch=64,
                   predicted_cost=10.0, predicted_time_s=100.0, true_cost=cost, true_time_s=100.0, oracle_cost=10.0,
                   regret=regret, miss=miss, probe_share=0.1 if not miss else math.inf, setting=setting)


def _result(scenario: str, outcomes=(), errors=(), budgets=()) -> ScenarioResult:
    extra = {"budgets": tuple(budgets)} if budgets else {}  # (setting, budgets run there)
    return ScenarioResult(scenario=scenario, workload="w", family="cifar10", target=0.9, target_label="loose",
                          deadline_s=None, deadline_label="none", n_candidates=10, oracle_cost=10.0, oracle_time_s=100.0,
                          oracle_config=("t4", 2, 64), resource_only_optimum=10.0, batch_only_optimum=10.0,
                          outcomes=tuple(outcomes), errors=tuple(errors), **extra)


def _row(rows: list[dict], policy: str, budget: int = 16) -> dict:
    (row,) = [r for r in rows if r["policy"] == policy and r["probes"] == budget]
    return row


def test_the_median_regret_of_an_even_count_is_the_mean_of_its_two_middle_values() -> None:
    results = [_result(f"s{i}", [_outcome(f"s{i}", regret=x)]) for i, x in enumerate((0.0, 0.1, 0.3, 0.4))]
    assert _row(summarize(results), "cotune")["median_regret"] == pytest.approx(0.2)  # was 0.1, the lower middle


def test_the_median_of_an_even_count_is_infinite_when_its_upper_middle_value_is_a_miss() -> None:
    assert _pct(np.array([0.0, 0.1, math.inf, math.inf]), 50) == math.inf


def test_finite_percentiles_are_numpys_linear_interpolation() -> None:
    v = np.array([0.3, 0.0, 0.1, 0.7, 0.2])
    for q in (10, 25, 50, 75, 90):
        assert _pct(v, q) == pytest.approx(float(np.percentile(v, q)))
    assert _pct(np.array([0.0, 1.0, 2.0, 3.0]), 90) == pytest.approx(2.7)  # nearest rank said 3.0


def test_p90_of_ten_is_infinite_with_one_miss_and_finite_with_none() -> None:
    ten = np.array([0.1 * i for i in range(9)] + [math.inf])
    assert _pct(ten, 90) == math.inf and math.isfinite(_pct(ten[:-1], 90))


def test_results_json_outcomes_resummarise_into_the_rows_summarize_gives(tmp_path) -> None:
    results = [_result(f"s{i}", [_outcome(f"s{i}", regret=x), _outcome(f"s{i}", regret=x, policy="pollux")])
               for i, x in enumerate((0.0, 0.2, math.inf, 0.5))]
    results.append(_result("s4", [_outcome("s4", regret=0.1)], errors=("one-curve/pollux: RuntimeError: boom",)))
    path = tmp_path / "results.json"
    report.write_json(path, {"regret": {"scenarios": [{k: v for k, v in r.__dict__.items() if k != "outcomes"} for r in results],
                                        "outcomes": outcome_dicts(results)}})
    back = report.read_json(path)["regret"]
    again = summarize_outcome_dicts(back["outcomes"], scenarios=back["scenarios"])
    assert report._clean(again) == report._clean(summarize(results))
    assert _row(again, "pollux")["errors"] == 1 and _row(again, "pollux")["scenarios"] == 5


def test_a_policy_that_raised_on_every_scenario_has_an_all_miss_row_at_each_budget_it_ran() -> None:
    # the only policy run: no other row to read the budgets from, only what the scenarios recorded
    results = [_result(f"s{i}", errors=("one-curve/pollux: RuntimeError: boom",), budgets=(("one-curve", (6, 16)),))
               for i in range(3)]
    rows = summarize(results)
    for b in (6, 16):
        row = _row(rows, "pollux", b)
        assert row["scenarios"] == 3 and row["errors"] == 3 and row["miss_rate"] == 1.0 and row["median_regret"] == math.inf


def test_without_recorded_budgets_a_raise_stands_in_at_the_budgets_its_setting_ran() -> None:
    results = [_result("s0", [_outcome("s0", budget=b) for b in (6, 16)]),
               _result("s1", [_outcome("s1", budget=b) for b in (6, 16)], errors=("one-curve/pollux: RuntimeError: boom",))]
    assert [r["probes"] for r in summarize(results) if r["policy"] == "pollux"] == [6, 16]


def test_the_report_shows_a_policy_that_raised_everywhere_and_counts_its_raises_as_misses(tmp_path) -> None:
    results = [_result(f"s{i}", [_outcome(f"s{i}", setting="closed-loop", policy="cotune_closed")],
                       errors=("closed-loop/cotune_closed_spot: RuntimeError: boom",))
               for i in range(2)]
    summary = summarize(results)
    data = {"mode": "test", "command": "x", "date": "d", "wall_s": 1.0, "cpu_count": 1,
            "settings": [{"setting": "closed-loop", "upper_bound": False, "closed_loop": True, "description": "closed"}],
            "summary": summary, "reliability": [],
            "model_error": {"time": [], "accuracy": []}, "latency": {"solver": [], "optuna": []},
            "regret": {"n_scenarios": 2, "headline_budget": 16, "headline_setting": "one-curve", "summary": summary,
                       "scenarios": [{k: v for k, v in r.__dict__.items() if k != "outcomes"} for r in results],
                       "outcomes": outcome_dicts(results)}}
    report.write_json(tmp_path / "results.json", data)
    report.rewrite(tmp_path)  # through results.json: the all-miss row's averages come back as None
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| cotune_closed_spot | 16 | ∞ |" in md
    assert "count" in md.split("policy runs raised**")[1].splitlines()[0] and "left out" not in md


def test_a_policy_whose_models_give_no_probabilities_promises_nothing() -> None:
    # Pollux's peer models have zero-width intervals: a "P(success)" of 1.0 is no promise.
    outs = [dataclasses.replace(_outcome("s0", policy=p), p_success=1.0) for p in ("pollux", "pollux_adaptive", "cotune")]
    rows = summarize([_result("s0", outs)])
    assert [_row(rows, p)["promised"] for p in ("pollux", "pollux_adaptive", "cotune")] == [None, None, 1.0]


def _saving_results(cotune: list[float]) -> list[ScenarioResult]:
    """Scenarios where co-tuning matters (optimum 70 against the baselines' 100); cotune's true
    cost per scenario, inf where it missed."""
    out = []
    for i, c in enumerate(cotune):
        cot = dataclasses.replace(_outcome(f"s{i}", regret=c / 70.0 - 1.0), true_cost=c)
        bases = [dataclasses.replace(_outcome(f"s{i}", policy=p), true_cost=100.0) for p in ("resource_only", "batch_only")]
        out.append(dataclasses.replace(_result(f"s{i}", [cot, *bases]), oracle_cost=70.0,
                                       resource_only_optimum=100.0, batch_only_optimum=100.0))
    return out


def test_the_savings_count_the_scenarios_cotune_met_and_give_the_median_with_a_miss_as_no_saving() -> None:
    s = savings(_saving_results([70.0, math.inf, math.inf, math.inf]), budget=16)
    assert (s["matters"], s["cotune_met_matters"], s["plan_saving_n_matters"]) == (4, 1, 1)
    assert s["plan_saving_median_matters"] == pytest.approx(0.3) and s["plan_saving_median_matters_miss_as_zero"] == 0.0


def test_the_savings_aim_says_over_how_many_scenarios_cotune_met() -> None:
    s = savings(_saving_results([70.0, math.inf, math.inf, math.inf]), budget=16)
    data = {"summary": [], "model_error": {"time": []}, "regret": {"headline_budget": 16, "summary": [], "savings": s}}
    (row,) = [where for aim, where, _ in report.aims(data) if aim.startswith("saving")]
    assert "over the 1 of 4 where cotune met the target and deadline" in row and "0.0 % vs the baselines' plans with a miss" in row


def test_the_closed_loop_aim_says_its_row_is_the_best_of_the_variants_picked_on_these_scenarios() -> None:
    results = [_result(f"s{i}", [_outcome(f"s{i}", setting="closed-loop", policy=p, regret=x)
                                 for p, x in (("cotune_closed", 0.1), ("cotune_closed_q90", math.inf))]) for i in range(2)]
    summary = summarize(results)
    data = {"summary": summary, "model_error": {"time": []}, "regret": {"headline_budget": 16, "summary": summary}}
    (row,) = [where for aim, where, _ in report.aims(data) if aim.startswith("closed-loop")]
    assert row.startswith("best of 2 closed-loop variants, chosen on these scenarios: cotune_closed at 16 probes")


def test_the_figures_aim_line_is_the_median_regret_aim_the_table_checks() -> None:
    results = [_result("s0", [_outcome("s0")])]
    summary = summarize(results)
    data = {"summary": summary, "model_error": {"time": []}, "regret": {"headline_budget": 16, "summary": summary}}
    (aim,) = [aim for aim, _, _ in report.aims(data) if aim.startswith("one-curve, 16 probes")]
    assert f"median regret ≤ {100 * report.AIM_MEDIAN_REGRET:.0f} %" in aim
