"""A small slice of ``python -m benchmarks`` end to end: real traces, every policy."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks.traces import data_root

# Runs a slice of the benchmark campaign (~25 s): not in the fast tier.
pytestmark = pytest.mark.slow

try:
    data_root()
except FileNotFoundError:  # pragma: no cover
    pytest.skip("shared/data not found beside the repository", allow_module_level=True)

from benchmarks.__main__ import Config, run
from benchmarks.policies import available_policies

SLICE = Config(
    mode="test",
    workloads=("cifar10-hetero", "yolov3-t4"),
    target_labels=("all",),
    deadline_factors=(None, 1.5),
    budgets=(6,),
    headline_budget=6,
    time_workloads=("cifar10-hetero",),
    latency_sizes=(1_000,),
    latency_repeats=1,
    optuna_sizes=(1_000,),
    optuna_max_trials=100,
    settings=("one-curve", "free-curves"),  # the open-loop slice (None would run every registered setting)
)


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("bench")
    return run(SLICE, out, jobs=1, command="test"), out


def test_files_are_written(result: tuple[dict, Path]) -> None:
    data, out = result
    for name in ("results.json", "report.md", "regret_distribution.png", "pareto_fronts.png", "predicted_vs_measured.png"):
        assert (out / name).stat().st_size > 0, name
    parsed = json.loads((out / "results.json").read_text())
    assert parsed["regret"]["n_scenarios"] == 4
    report = (out / "report.md").read_text()
    assert "| cotune | 6 |" in report and "## Aims" in report


def test_every_policy_ran_on_every_scenario(result: tuple[dict, Path]) -> None:
    data, _ = result
    outcomes = data["regret"]["outcomes"]
    for scn in data["regret"]["scenarios"]:
        ran = {o["policy"] for o in outcomes if o["scenario"] == scn["scenario"]}
        assert ran == set(available_policies())


def test_regret_is_non_negative_and_the_oracle_is_never_beaten(result: tuple[dict, Path]) -> None:
    data, _ = result
    oracle = {s["scenario"]: s for s in data["regret"]["scenarios"]}
    for o in data["regret"]["outcomes"]:
        best = oracle[o["scenario"]]["oracle_cost"]
        assert math.isfinite(best) and best > 0
        if o["miss"] is None:
            assert o["regret"] >= 0
            assert o["true_cost"] >= best * (1 - 1e-12)
            deadline = oracle[o["scenario"]]["deadline_s"]
            assert deadline is None or o["true_time_s"] <= deadline
            assert o["probes"] <= 6 and o["probe_cost"] > 0
        else:
            assert o["regret"] == math.inf


def test_model_errors_and_latency_are_measured(result: tuple[dict, Path]) -> None:
    data, _ = result
    ranges = {(r["model"], r["range"]) for r in data["model_error"]["time"]}
    assert {("cotune", "inside"), ("cotune", "2x"), ("cotune", "4x"), ("pollux", "4x"), ("isotonic", "inside")} <= ranges
    assert all(r["mape"] >= 0 for r in data["model_error"]["time"])
    assert {r["model"] for r in data["model_error"]["accuracy"]} == {"cotune", "isotonic", "pollux"}
    assert data["latency"]["solver"][0]["candidates"] > 900


def test_reliability_scores_every_candidate_of_the_cotune_family_and_only_it(result: tuple[dict, Path]) -> None:
    data, out = result
    rows = data["reliability"]
    assert rows and {r["policy"] for r in rows} <= {"cotune", "cotune_q50", "cotune_q90"}
    n_scn = data["regret"]["n_scenarios"]
    per_scenario = {s["scenario"]: s["n_candidates"] for s in data["regret"]["scenarios"]}
    for r in rows:
        assert r["plans"] == n_scn
        # every candidate of a probed GPU type is scored, at most all of them
        assert 0 < r["candidates"] <= sum(per_scenario.values())
        assert sum(b["count"] for b in r["success"]) == sum(b["count"] for b in r["reach"]) == r["candidates"]
        for b in r["success"] + r["reach"]:
            assert b["lo"] - 1e-12 <= b["mean_pred"] <= b["hi"] + 1e-12 and 0.0 <= b["frac_true"] <= 1.0
        assert 0.0 <= r["brier"] <= 1.0 and 0.0 <= r["ece"] <= 1.0
    for s in data["summary"]:
        scored = s["family"] == "cotune" and s["setting"] in ("one-curve", "free-curves")
        assert (s["brier"] is not None) == scored, s["policy"]
    assert "### Reliability of P(success) and P(reach)" in (out / "report.md").read_text()


def test_the_solvers_choices_clear_their_confidence_and_fewer_clear_a_higher_one(result: tuple[dict, Path]) -> None:
    data, _ = result
    for r in data["reliability"]:
        made = [c for c in r["choices"] if c["plans"]]
        assert made, r["policy"]
        for c in made:
            assert c["promised"] >= c["q"] - 1e-9  # the chosen candidate's P(success) clears q
            assert 0.0 <= c["delivered"] <= 1.0
        plans = [c["plans"] for c in r["choices"]]
        assert plans == sorted(plans, reverse=True)  # a higher q never admits more plans


def test_every_summary_row_says_which_priors_it_was_planned_with(result: tuple[dict, Path]) -> None:
    data, _ = result
    assert data["summary"] and {r["priors"] for r in data["summary"]} == {"shipped"}
    assert data["priors"]["set"] == "shipped"
    assert set(data["priors"]["values"]) == {"cifar10-hetero", "yolov3-t4"}
