"""cotune_voi plans with its own estimates and is judged by the truth (benchmarks/voi.py)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from benchmarks import voi
from benchmarks._registry import POLICIES, load
from benchmarks.policies import SEED_PER_GPU, policy_mask, seed_design
from benchmarks.replay import recipe_end_at
from benchmarks.scenarios import scenarios, workloads
from cotune.solver import ProbeDecision


def _scenario(target: str):
    return next(scenarios(workloads(names=("cifar10-t4",)), target_labels=(target,), deadline_factors=(None,)))


def _run_voi(scn, monkeypatch, *, buy_first_short_run: bool) -> tuple[dict[int, float], list[int], object]:
    """Run cotune_voi to its first decision after the seed: record the short runs it was
    offered (batch -> price); buy the first of them (or nothing), then stop."""
    load()
    offered: dict[int, float] = {}
    bought: list[int] = []

    def decide(est, options, **_kw):
        if not offered:
            for o in options:
                if o.kind == "short_run":
                    offered[int(est.candidates.global_batch[o.touches[0]])] = o.price
            if buy_first_short_run:
                o = next(o for o in options if o.kind == "short_run")
                bought.append(int(est.candidates.global_batch[o.touches[0]]))
                return ProbeDecision(option=o, expected_gain=0.0, price=o.price, reason="test: buy")
        return ProbeDecision(option=None, expected_gain=0.0, price=0.0, reason="test: stop")

    monkeypatch.setattr(voi, "plan_next_probe", decide)
    c = scn.candidates
    n_seed = voi.seed_count(c, seed_design(c, policy_mask(scn, "all"), per_gpu=SEED_PER_GPU))
    (plan,) = voi._voi_policy(POLICIES["cotune_voi"], scn, scn.evidence("one-curve"), (n_seed + 2,))
    return offered, bought, plan


def test_the_short_run_prices_the_planner_weighs_do_not_move_with_unprobed_true_step_times(monkeypatch) -> None:
    scn = _scenario("tight")
    before, _, _ = _run_voi(scn, monkeypatch, buy_first_short_run=False)
    c = scn.candidates
    design = set(seed_design(c, policy_mask(scn, "all"), per_gpu=SEED_PER_GPU)) | set(scn.launcher(scn.evidence("one-curve")).measured)
    unseen = np.array([i for i in range(len(c)) if i not in design and int(c.global_batch[i]) in before])
    truth = scn.oracle.step_time_s.copy()
    truth[unseen] *= 10.0  # only configurations the planner never measured
    monkeypatch.setattr(scn.oracle, "step_time_s", truth)
    after, _, _ = _run_voi(scn, monkeypatch, buy_first_short_run=False)
    assert before and after == pytest.approx(before)


def test_a_short_run_lasts_to_the_upper_epochs_end_on_the_configuration_estimated_cheapest() -> None:
    est = SimpleNamespace(candidates=SimpleNamespace(global_batch=np.array([256, 512, 512]), workers=np.array([1, 2, 1])),
                          price_per_hour=np.array([1.0, 1.0, 1.0]), epoch_time_s=np.array([36.0, 36.0, 360.0]),
                          epochs_upper=np.array([5.0, 40.0, 30.0]))
    row, epochs, price = voi._short_run_plan(est, batch=512, seen_epochs=100.0)
    assert (row, epochs) == (1, 30.0) and price == pytest.approx(2 * 36.0 / 3600 * 30.0)


def test_a_short_run_with_an_unbounded_interval_lasts_as_long_as_the_longest_run_seen() -> None:
    est = SimpleNamespace(candidates=SimpleNamespace(global_batch=np.array([512]), workers=np.array([1])),
                          price_per_hour=np.array([3.6]), epoch_time_s=np.array([10.0]), epochs_upper=np.array([math.inf]))
    assert voi._short_run_plan(est, batch=512, seen_epochs=80.0) == (0, 80.0, pytest.approx(0.01 * 80.0))


def test_a_plan_that_never_reaches_the_target_loses_its_true_run_to_the_recipes_end_and_the_oracles_cost() -> None:
    scn = _scenario("tight")
    _, _, cost = scn.oracle.evaluate(scn.target)
    i = int(np.flatnonzero(~np.isfinite(cost))[0])
    c, w = scn.candidates, scn.workload
    gb = float(c.global_batch[i])
    run = recipe_end_at(w, gb) * w.dataset_size / gb * scn.oracle.step_time_s[i] * c.workers[i] * scn.oracle.price_per_hour[i] / 3600
    assert voi.true_loss(scn, i) == pytest.approx(run + scn.oracle.solve(scn.target, None).cost)


def test_a_batch_it_ran_a_short_run_at_is_not_held_out_in_its_epochs_coverage(monkeypatch) -> None:
    scn = _scenario("all")  # every held-out batch reaches this target: each is checked
    _, _, plain = _run_voi(scn, monkeypatch, buy_first_short_run=False)
    _, bought, plan = _run_voi(scn, monkeypatch, buy_first_short_run=True)
    assert len(bought) == 1 and plan.accuracy_runs == 1
    assert plan.epochs_reached_n == plain.epochs_reached_n - 1
