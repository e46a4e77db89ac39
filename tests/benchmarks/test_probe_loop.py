"""benchmarks.policies' anytime probe loop: where it probes when nothing is feasible."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from benchmarks.policies import SEED_PER_GPU, _probe_loop, _solve, most_hopeful, policy_mask, seed_design
from benchmarks.scenarios import scenarios, workloads


def test_most_hopeful_ranks_by_chance_then_by_predicted_time() -> None:
    est = SimpleNamespace(p_success=np.array([0.2, 0.4, 0.4, np.nan, 0.1]), p_reach=np.full(5, 0.9),
                          time_s=np.array([10.0, 30.0, 20.0, 5.0, np.inf]))
    usable = np.array([7, 8, 9, 10, 11])
    assert most_hopeful(est, usable, measured=()) == [9, 8, 7, 11, 10]


def test_most_hopeful_leaves_out_what_is_measured() -> None:
    est = SimpleNamespace(p_success=np.array([0.9, 0.5]), p_reach=np.array([0.95, 0.95]), time_s=np.array([1.0, 1.0]))
    assert most_hopeful(est, np.array([3, 4]), measured=(3,)) == [4]


def test_most_hopeful_leaves_out_what_no_step_probe_can_make_feasible() -> None:
    # A probe pins the step time, not the chance of reaching the target.
    est = SimpleNamespace(p_success=np.array([0.45, 0.3]), p_reach=np.array([0.45, 0.8]), time_s=np.array([1.0, 2.0]))
    assert most_hopeful(est, np.array([3, 4]), measured=(), confidence=0.5) == [4]
    assert most_hopeful(est, np.array([3, 4]), measured=(), confidence=0.9) == []


def test_with_no_feasible_candidate_the_next_probe_is_the_likeliest_to_succeed() -> None:
    # yolov3 on T4 at 1.5× the fastest time: after the seed design (at most two hosts)
    # the step-time model is unsure far out in workers, and no candidate is feasible.
    scn = next(s for s in scenarios(workloads(names=("yolov3-t4",))) if s.key == "yolov3-t4/loose/1.5x_fastest")
    ev = scn.evidence("one-curve")
    mask = policy_mask(scn, "all")
    design = seed_design(scn.candidates, mask, per_gpu=SEED_PER_GPU)
    n_seed = min(SEED_PER_GPU * len({int(scn.candidates.gpu[i]) for i in design}), len(design))
    (_, seeded, _), (_, after, _) = _probe_loop(scn, ev, "cotune", "cotune", "all", (n_seed, n_seed + 1))
    launcher = scn.launcher(ev)
    for i in seeded:
        launcher.probe(i)
    est, usable, top = _solve(scn, launcher, ev, "cotune", "cotune", mask)
    assert top.size == 0, "the scenario no longer shows the case: nothing feasible after the seed"
    pick = after[-1]
    assert pick not in design
    p = np.nan_to_num(np.asarray(est.p_success, float))
    unprobed = ~np.isin(usable, launcher.measured)
    assert p[np.flatnonzero(usable == pick)[0]] == p[unprobed].max()
