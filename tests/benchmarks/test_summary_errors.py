"""A policy that raises on a scenario is a miss there, not a scenario fewer."""

from __future__ import annotations

from benchmarks.regret import Outcome, ScenarioResult, summarize


def _outcome(scenario: str) -> Outcome:
    return Outcome(scenario=scenario, workload="w", family="cifar10", target_label="loose", deadline_label="none",
                   policy="cotune", budget=16, probes=16, probe_cost=1.0, gpu="t4", workers=2, local_batch=64,
                   predicted_cost=10.0, predicted_time_s=100.0, true_cost=10.0, true_time_s=100.0, oracle_cost=10.0,
                   regret=0.0, miss=None, probe_share=0.1, setting="one-curve")


def _result(scenario: str, outcomes=(), errors=()) -> ScenarioResult:
    return ScenarioResult(scenario=scenario, workload="w", family="cifar10", target=0.9, target_label="loose",
                          deadline_s=None, deadline_label="none", n_candidates=10, oracle_cost=10.0, oracle_time_s=100.0,
                          oracle_config=("t4", 2, 64), resource_only_optimum=10.0, batch_only_optimum=10.0,
                          outcomes=tuple(outcomes), errors=tuple(errors))


def test_a_policy_that_raised_counts_the_scenario_as_a_miss():
    results = [_result(f"s{i}", [_outcome(f"s{i}")]) for i in range(3)]
    results.append(_result("s3", errors=("one-curve/cotune: RuntimeError: boom",)))
    (row,) = [r for r in summarize(results) if r["policy"] == "cotune"]
    assert row["scenarios"] == 4 and row["errors"] == 1 and row["miss_rate"] == 0.25  # was 3 scenarios, 0 %


def test_a_raise_is_an_infinitely_dear_miss_in_the_regret_percentiles_too():
    results = [_result(f"s{i}", [_outcome(f"s{i}")]) for i in range(2)]
    results += [_result(f"e{i}", errors=("one-curve/cotune: RuntimeError: boom",)) for i in range(2)]
    (row,) = [r for r in summarize(results) if r["policy"] == "cotune"]
    assert row["miss_rate"] == 0.5 and row["p90_regret"] == float("inf") and row["worst_regret"] == float("inf")
