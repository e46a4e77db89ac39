"""The benchmark's registry, its settings (one-curve, free-curves, closed-loop) and the summary schema."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.traces import data_root

try:
    data_root()
except FileNotFoundError:  # pragma: no cover - CI and dev check shared/ out beside the repo
    pytest.skip("shared/data not found beside the repository", allow_module_level=True)

from benchmarks import _registry as reg
from benchmarks.closed_loop import CONTINUE, Action, TrueRun, simulate
from benchmarks.policies import Plan, available_policies
from benchmarks.regret import run_scenario, summarize
from benchmarks.replay import curve_epochs_to_target
from benchmarks.scenarios import scenarios, workloads
from benchmarks.settings import curve_cost, free_curves, one_curve, recipe_batch

reg.load()

SUMMARY_KEYS = {
    "setting", "policy", "probes", "scenarios", "miss_rate", "median_regret", "delivered_q90",
    "coverage_step_90", "coverage_epochs_90", "probe_share",
}
FRACTIONS = ("miss_rate", "delivered_q90", "coverage_step_90", "coverage_epochs_90")


def _scenario(name: str = "yolov3-t4", target: str = "all", deadline: float | None = 1.5):
    return next(scenarios(workloads(names=(name,)), target_labels=(target,), deadline_factors=(deadline,)))


def test_every_setting_trace_and_policy_is_registered_once() -> None:
    assert {"one-curve", "free-curves", "closed-loop"} <= set(reg.SETTINGS)
    assert len(reg.TRACES) == 8 and all(spec.family in ("pollux-t4", "gavel-hetero") for spec in reg.TRACES.values())
    assert {"cotune", "cotune_q50", "cotune_q90", "pollux"} <= set(reg.policies_for("one-curve"))
    assert {"cotune_open", "cotune_closed", "pollux_adaptive", "oracle"} <= set(reg.policies_for("closed-loop"))
    # free-curves-only and optional policies stay where they belong
    assert "cotune_isotonic" not in reg.policies_for("one-curve")
    assert "optuna_gp" not in reg.policies_for("free-curves")
    assert not set(reg.policies_for("closed-loop")) & set(available_policies())
    with pytest.raises(ValueError, match="registered twice"):
        reg.policy("cotune")(lambda scn, ev, budgets: [])


def test_a_new_policy_is_one_registry_entry() -> None:
    scn = _scenario(deadline=None)

    @reg.policy("smallest_probe", settings=("one-curve",), description="probe nothing, pick candidate 0")
    def smallest(scn, evidence, budgets):  # type: ignore[no-untyped-def]
        return [Plan(policy="smallest_probe", budget=b, probes=0, probe_cost=0.0, index=0, predicted_cost=1.0,
                     predicted_time_s=1.0) for b in budgets]

    try:
        result = run_scenario(scn, budgets=(6,), settings=("one-curve",), policies=("smallest_probe",))
    finally:
        del reg.POLICIES["smallest_probe"]
    (o,) = result.outcomes
    assert o.policy == "smallest_probe" and o.setting == "one-curve" and o.local_batch == int(scn.candidates.local_batch[0])


@pytest.mark.parametrize("name", ["cifar10-t4", "imagenet-t4", "deepspeech2-t4", "yolov3-t4", "bert-t4", "ncf-t4"])
def test_one_curve_sees_only_the_recipe_batch_with_its_gradient_noise(name: str) -> None:
    (w,) = workloads(names=(name,))
    ev = one_curve(w)
    assert ev.curves == (recipe_batch(w),) == (w.batches[0],)  # the recipe's batch is the smallest measured one
    assert {e.global_batch for e in ev.evals} == {w.batches[0]}
    assert set(ev.held_out) == set(w.batches[1:])
    c = w.curves[w.batches[0]]
    usable = (c.grad_sqr > 0) & (c.grad_var > 0)
    assert len(ev.noise) == int(usable.sum()) > 0
    np.testing.assert_allclose([n.b_noise for n in ev.noise], c.grad_var[usable] / c.grad_sqr[usable] * w.batches[0])
    assert ev.curve_cost == pytest.approx(curve_cost(w, w.batches[0])) and ev.curve_cost > 0
    assert free_curves(w).curve_cost > ev.curve_cost  # more curves cost more


def test_true_run_agrees_with_the_oracle_at_every_candidate_batch() -> None:
    scn = _scenario(target="tight")
    truth = TrueRun(scn)
    epochs, _, _ = scn.oracle.evaluate(scn.target)
    for i in range(0, len(scn.candidates), 7):
        got = truth.epochs_to(int(scn.candidates.global_batch[i]), truth.sign * scn.target)
        assert got == pytest.approx(epochs[i]) or (math.isinf(got) and math.isinf(epochs[i]))
    b = scn.workload.batches[0]
    grid = np.linspace(0, float(scn.workload.curves[b].epochs[-1]), 25)
    scores = [truth.score_at(b, e) for e in grid]
    assert np.all(np.diff(scores) >= 0)  # best-so-far never falls


def test_an_untouched_run_costs_what_the_oracle_says_and_a_switch_pays_a_restart() -> None:
    scn = _scenario(deadline=None)
    _, time_s, cost = scn.oracle.evaluate(scn.target)
    i = int(scn.oracle.solve(scn.target, None).index)
    run = simulate(scn, index=i, planned_time_s=float(time_s[i]), controller=lambda p: CONTINUE)
    assert run["reached"] and run["restarts"] == 0
    assert run["train_cost"] == pytest.approx(cost[i]) and run["time_s"] == pytest.approx(time_s[i])
    other = int(np.argmax(scn.candidates.workers))
    switched = simulate(
        scn, index=i, planned_time_s=float(time_s[i]),
        controller=lambda p: Action("switch", other) if p.checkpoint == 1 else CONTINUE,
    )
    assert switched["restarts"] == 1 and switched["restart_cost"] > 0 and switched["final_index"] == other
    gave_up = simulate(scn, index=i, planned_time_s=float(time_s[i]), controller=lambda p: Action("give_up"))
    assert gave_up["gave_up"] and not gave_up["reached"] and gave_up["train_cost"] < cost[i]


def test_a_run_whose_schedule_ends_short_of_the_target_is_asked_once_more_and_may_move() -> None:
    # YOLOv3's tight target: global batch 8 ends its schedule without it, batch 32 reaches it.
    scn = _scenario(target="tight", deadline=None)
    truth, c = TrueRun(scn), scn.candidates
    short = int(np.flatnonzero(c.global_batch == 8)[0])
    reaching = int(np.flatnonzero(c.global_batch == 32)[0])
    assert math.isinf(truth.epochs_to(8, truth.sign * scn.target))
    assert truth.epochs_to(32, truth.sign * scn.target) <= truth.curve(32)[1]
    # planned as long as the schedule at batch 8 takes: checkpoints every tenth of it
    planned_s = truth.curve(8)[1] * scn.workload.dataset_size / 8 * float(scn.oracle.step_time_s[short])
    seen = []

    def at_end(move: bool):
        def controller(p):
            seen.append(p.epochs_done)
            done = p.epochs_done >= p.schedule_epochs - 1e-9
            return Action("switch", reaching) if (move and done and p.global_batch == 8) else CONTINUE
        return controller

    stayed = simulate(scn, index=short, planned_time_s=planned_s, controller=at_end(False))
    assert not stayed["reached"] and seen[-1] == pytest.approx(truth.curve(8)[1])  # asked at the end, then missed
    seen.clear()
    moved = simulate(scn, index=short, planned_time_s=planned_s, controller=at_end(True))
    assert moved["reached"] and moved["restarts"] == 1 and moved["final_index"] == reaching
    assert moved["time_s"] > stayed["time_s"] + 120.0  # the whole schedule at batch 8, a restart, then batch 32


def test_the_controller_is_told_how_many_times_the_run_moved_back() -> None:
    scn = _scenario(deadline=None)
    _, time_s, _ = scn.oracle.evaluate(scn.target)
    i = int(scn.oracle.solve(scn.target, None).index)
    other = int(np.argmax(scn.candidates.workers))
    plan = {1: other, 2: i, 3: other}  # i -> other -> i -> other: two returns
    seen: dict[int, int] = {}

    def controller(p):
        seen[p.checkpoint] = p.returns
        return Action("switch", plan[p.checkpoint]) if p.checkpoint in plan else CONTINUE

    simulate(scn, index=i, planned_time_s=float(time_s[i]), controller=controller)
    assert [seen[k] for k in (1, 2, 3, 4)] == [0, 0, 1, 2]


@pytest.mark.slow
def test_summary_has_one_row_per_setting_policy_and_budget_with_fractions_in_range() -> None:
    scn = _scenario()
    result = run_scenario(
        scn, budgets=(6,), settings=("one-curve", "free-curves", "closed-loop"),
        policies=("cotune", "cotune_q90", "pollux", "cotune_open", "cotune_closed", "oracle"), closed_loop_budgets=(6,),
    )
    rows = summarize([result])
    keys = {(r["setting"], r["policy"], r["probes"]) for r in rows}
    # one-curve and free-curves: cotune, cotune_q90, pollux; closed-loop: cotune_open, cotune_closed, oracle
    assert len(keys) == len(rows) == 3 + 3 + 3
    for r in rows:
        assert SUMMARY_KEYS <= set(r)
        assert r["scenarios"] == 1 and r["probes"] == 6
        for k in FRACTIONS:
            assert r[k] is None or 0.0 <= r[k] <= 1.0, (k, r[k])
        assert r["probe_share"] is None or r["probe_share"] >= 0
        assert r["median_regret"] == math.inf or r["median_regret"] >= -1.0
    cot = next(r for r in rows if r["setting"] == "one-curve" and r["policy"] == "cotune")
    assert cot["coverage_step_90"] is not None and cot["coverage_epochs_90"] is not None
    assert cot["delivered_q90"] == next(r for r in rows if r["setting"] == "one-curve" and r["policy"] == "cotune_q90")["delivered"]
    oracle = next(r for r in rows if r["policy"] == "oracle")
    assert oracle["miss_rate"] == 0.0 and abs(oracle["median_regret"]) < 1e-9


def test_epochs_coverage_is_checked_against_the_full_held_out_curves() -> None:
    scn = _scenario(name="cifar10-t4", deadline=None)
    (result,) = [run_scenario(scn, budgets=(6,), settings=("one-curve",), policies=("cotune",))]
    (o,) = result.outcomes
    w = scn.workload
    assert o.epochs_n == len(w.batches) - 1  # every batch but the reference one is held out
    truth = [curve_epochs_to_target(w.curves[b], scn.target, w.goal) for b in w.batches[1:]]
    assert 0 <= o.epochs_hits <= o.epochs_n and all(t > 0 for t in truth)


@pytest.mark.slow
def test_the_value_of_information_planner_pays_for_what_it_buys_and_stays_in_budget() -> None:
    scn = _scenario(name="yolov3-t4", target="all", deadline=1.5)
    result = run_scenario(scn, budgets=(6, 10), settings=("one-curve",), policies=("cotune_voi", "cotune_voi_q90"))
    assert {o.policy for o in result.outcomes} == {"cotune_voi", "cotune_voi_q90"}
    for o in result.outcomes:
        assert 3 <= o.probes <= o.budget  # the seed design, then only what it chose to buy
        assert o.expected_gain >= 0 and 0 <= o.accuracy_cost <= o.probe_cost
        assert (o.accuracy_runs == 0) == (o.accuracy_cost == 0)


def test_closed_loop_controllers_answer_with_valid_actions_and_count_every_restart() -> None:
    from benchmarks.closed_loop import _success_controller
    from benchmarks.policies import run_policy

    import dataclasses

    scn = _scenario(name="yolov3-t4", target="loose", deadline=3.0)
    ev = scn.evidence("closed-loop")
    probed = run_policy("cotune", scn, (6,), setting="one-curve")[0]
    # Run the true optimum (a plan exists whatever the models say); the controller sees cotune's probes.
    sol = scn.oracle.solve(scn.target, scn.deadline_s)
    plan = dataclasses.replace(probed, index=sol.index, predicted_time_s=sol.time_s, predicted_cost=sol.cost)
    seen: list[Action] = []
    controller = _success_controller(scn, ev, plan, 0.9)

    def watch(p):  # type: ignore[no-untyped-def]
        act = controller(p)
        seen.append(act)
        return act

    run = simulate(scn, index=plan.index, planned_time_s=plan.predicted_time_s, controller=watch)
    assert seen and {a.kind for a in seen} <= {"continue", "switch", "give_up"}
    switches = [a for a in seen if a.kind == "switch" and a.index is not None]
    assert all(0 <= a.index < len(scn.candidates) for a in switches)
    assert run["restarts"] == len(run["actions"]) - int(run["gave_up"])
    assert (run["restart_cost"] > 0) == (run["restarts"] > 0)


def test_a_watched_job_starts_at_its_best_chance_when_no_plan_reaches_the_confidence() -> None:
    from benchmarks._registry import POLICIES
    from benchmarks.closed_loop import _start_anyway, _success_controller
    from benchmarks.policies import run_policy

    # Tight target at 1.5x the fastest time: the open-loop planner finds nothing at q = 0.9.
    scn = _scenario(name="cifar10-t4", target="tight", deadline=1.5)
    ev = scn.evidence("closed-loop")
    plan = run_policy("cotune_q90", scn, (6,), setting="one-curve")[0]
    assert plan.index is None
    controller = _success_controller(scn, ev, plan, 0.9)
    start = _start_anyway(scn, plan, controller)
    assert start.index is not None and start.p_success > 0.0
    usable, _, p_succ, _, _ = controller.assess(None, target=scn.target, deadline_s=scn.deadline_s)
    assert start.p_success >= p_succ.max() - 0.02  # within the tolerance of the best chance
    run = POLICIES["cotune_closed_q90"].run(scn, ev, 6)
    assert run.initial_index == start.index


def test_a_setting_with_more_than_a_user_has_is_labelled_wherever_the_report_names_it():
    from benchmarks._registry import SETTINGS, load
    from benchmarks.report import _labelled

    load()
    assert any(spec.upper_bound for spec in SETTINGS.values())
    for name, spec in SETTINGS.items():
        assert _labelled(name).endswith("(upper bound)") == bool(spec.upper_bound), name


def test_the_hand_over_share_is_the_fraction_of_the_recipe_trained_clipped_to_the_unit_interval() -> None:
    from benchmarks.closed_loop import handover_share

    assert handover_share(13.4, 55.0) == pytest.approx(13.4 / 55.0)
    assert handover_share(70.0, 55.0) == 1.0 and handover_share(-1.0, 55.0) == 0.0
    assert handover_share(3.0, math.inf) == 1.0  # no recipe end: the level rule alone


def test_a_batch_change_does_not_skip_the_new_recipe_for_free() -> None:
    # One switch from ImageNet's batch 200 to 6400 at about epoch 13: batch 6400 reaches the
    # level only at epoch 53.9 of its 55, and the level rule alone resumed it there, so the
    # run beat the static optimum by half (regret -0.53). On demand nothing beats it by that.
    scn = _scenario(name="imagenet-t4", target="loose", deadline=None)
    c, o, w = scn.candidates, scn.oracle, scn.workload
    per_epoch_cost = c.workers * o.price_per_hour / 3600 * w.dataset_size / c.global_batch * o.step_time_s

    def cheapest(gb: int) -> int:
        k = np.flatnonzero(c.global_batch == gb)
        return int(k[np.argmin(per_epoch_cost[k])])

    a, b = cheapest(200), cheapest(6400)
    epoch_s = w.dataset_size / c.global_batch[a] * o.step_time_s[a]
    run = simulate(scn, index=a, planned_time_s=float(10 * 13.4 * epoch_s),
                   controller=lambda p: Action("switch", b) if p.checkpoint == 1 else CONTINUE, truth=TrueRun(scn))
    assert run["restarts"] == 1
    assert run["train_cost"] + run["restart_cost"] >= o.solve(scn.target, None).cost


def test_a_goodput_controller_starts_at_its_fastest_estimate_when_its_planner_finds_no_plan() -> None:
    from benchmarks.closed_loop import _initial, _pollux_controller, _start_anyway

    # Neither planner finds a plan here; cotune_closed starts at its best chance, and so must Pollux.
    scn = _scenario(name="bert-t4", target="all", deadline=1.5)
    ev = scn.evidence("closed-loop")
    plan = _initial(scn, ev, "pollux", 16)
    assert plan.index is None
    controller = _pollux_controller(scn, ev, plan)
    start = _start_anyway(scn, plan, controller)
    fastest = controller.fastest(scn.target)
    assert fastest is not None and start.index == fastest[0]
    assert math.isfinite(start.predicted_time_s) and start.predicted_time_s == fastest[1]
