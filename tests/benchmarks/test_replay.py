"""The replay launcher and oracle against the published traces (fast, no fitting)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.traces import POLLUX_MODELS, Curve, data_root

try:
    ROOT = data_root()
except FileNotFoundError:  # pragma: no cover - CI and dev check shared/ out beside the repo
    pytest.skip("shared/data not found beside the repository", allow_module_level=True)

from benchmarks.replay import Oracle, build_candidates, curve_epochs_to_target, true_epochs, visible_batches
from benchmarks.scenarios import scenarios, targets_for, workloads
from benchmarks.traces import derived_dataset_size, load_hetero, load_pollux


def _curve(metric: list[float]) -> Curve:
    n = len(metric)
    return Curve(global_batch=8, epochs=np.arange(1.0, n + 1), metric=np.array(metric), grad_sqr=np.ones(n), grad_var=np.ones(n))


def test_epochs_to_target_interpolates_the_first_crossing_of_the_best_so_far() -> None:
    c = _curve([0.5, 0.7, 0.6, 0.9])
    assert curve_epochs_to_target(c, 0.8, "max") == pytest.approx(3.5)  # best-so-far 0.7 → 0.9 between epochs 3 and 4
    assert curve_epochs_to_target(c, 0.95, "max") == math.inf
    loss = _curve([5.0, 3.0, 4.0, 1.0])
    assert curve_epochs_to_target(loss, 2.0, "min") == pytest.approx(3 + 1 / 2)


@pytest.mark.parametrize("model", list(POLLUX_MODELS))
def test_dataset_sizes_agree_with_the_traces(model: str) -> None:
    derived = derived_dataset_size(ROOT / "pollux-osdi21" / "traces" / model)
    assert derived == pytest.approx(POLLUX_MODELS[model]["dataset_size"], rel=1e-3)


def test_oracle_is_a_lower_bound_on_every_truly_feasible_candidate() -> None:
    for w in (load_pollux("yolov3"), load_hetero("cifar10")):
        cands = build_candidates(w)
        oracle = Oracle(w, cands)
        for target in targets_for(w).values():
            _, time_s, cost = oracle.evaluate(target)
            deadline = 2 * oracle.fastest_time_s(target)
            sol = oracle.solve(target, deadline)
            ok = np.isfinite(cost) & (time_s <= deadline)
            assert sol.index is not None and ok[sol.index]
            assert np.all(cost[ok] >= sol.cost)
            # Every candidate exists in the measured table and lies within the measured batches.
            assert np.all((cands.global_batch >= w.batches[0]) & (cands.global_batch <= w.batches[-1]))


def test_true_epochs_match_the_measured_curves_at_measured_batches() -> None:
    w = load_pollux("cifar10")
    target = targets_for(w)["loose"]
    got = true_epochs(w, np.array(w.batches, float), target)
    want = [curve_epochs_to_target(w.curves[b], target, w.goal) for b in w.batches]
    np.testing.assert_allclose(got, want)
    assert np.isnan(true_epochs(w, np.array([w.batches[-1] * 2.0]), target)[0])  # outside: no truth


def test_launcher_charges_each_new_probe_once_and_shows_only_what_was_probed() -> None:
    scn = next(scenarios(workloads(names=("cifar10-hetero",)), target_labels=("all",), deadline_factors=(None,)))
    launcher = scn.launcher()
    launcher.probe(0)
    first = launcher.probe_cost
    launcher.probe(0)
    assert launcher.probe_cost == first > 0
    launcher.probe(5)
    prof = launcher.profile()
    assert len(prof.steps) == 2
    assert sorted({e.global_batch for e in prof.evals}) == list(visible_batches(scn.workload))
    assert set(visible_batches(scn.workload)) < set(scn.workload.batches)  # some curves are held out
