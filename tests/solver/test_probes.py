"""The value-of-information probe planner (cotune.solver._probes) on small synthetic estimates."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune.solver import (
    STEP_CORRELATION_DOUBLINGS,
    Candidates,
    Estimates,
    ProbeOption,
    next_measurement,
    option_gains,
    plan_next_probe,
    probed_mask,
    probed_step_floor,
    standard_options,
    step_correlation,
)

Z90 = 1.6448536269514722


def _estimates(cost, *, sig_step, sig_e, time_s=None, global_batch=None) -> Estimates:
    cost = np.asarray(cost, float)
    n = cost.size
    sig_step = np.broadcast_to(np.asarray(sig_step, float), (n,))
    sig_e = np.broadcast_to(np.asarray(sig_e, float), (n,))
    gb = np.asarray(global_batch if global_batch is not None else np.arange(1, n + 1) * 32)
    cands = Candidates(
        gpus=("t4",), markets=("on_demand",), gpu=np.zeros(n, np.int32), market=np.zeros(n, np.int32),
        workers=np.ones(n, np.int64), hosts=np.ones(n, np.int64), local_batch=gb.astype(np.int64),
    )
    epochs = np.full(n, 10.0)
    t = np.asarray(time_s if time_s is not None else cost * 3600.0, float)
    sig_t = np.sqrt(sig_step**2 + sig_e**2)
    return Estimates(
        candidates=cands, step_time_s=np.ones(n), epoch_time_s=t / epochs, epochs=epochs,
        epochs_lower=epochs * np.exp(-Z90 * sig_e), epochs_upper=epochs * np.exp(Z90 * sig_e),
        time_s=t, time_lower_s=t * np.exp(-Z90 * sig_t), time_upper_s=t * np.exp(Z90 * sig_t), time_at_confidence_s=t,
        cost=cost, cost_lower=cost * np.exp(-Z90 * sig_t), cost_upper=cost * np.exp(Z90 * sig_t),
        price_per_hour=np.ones(n), time_extrapolated=np.zeros(n, bool), epochs_extrapolated=np.zeros(n, bool),
        p_reach=np.ones(n), log_sigma_time=sig_t, epochs_distance=np.zeros(n), step_log_sigma=sig_step.copy(),
    )


def test_a_candidate_whose_step_time_is_known_is_worth_no_step_probe() -> None:
    est = _estimates([1.0, 1.1], sig_step=[0.0, 0.0], sig_e=0.1)
    g = option_gains(est, [ProbeOption("step", (1,), 0.0)], feasible=np.ones(2, bool))
    assert g.gains[0] == pytest.approx(0.0, abs=1e-12)


def test_more_uncertainty_about_a_close_challenger_is_worth_more() -> None:
    gains = []
    for s in (0.05, 0.2, 0.5):
        est = _estimates([1.0, 1.1], sig_step=[0.0, s], sig_e=0.0)
        gains.append(option_gains(est, [ProbeOption("step", (1,), 0.0)], feasible=np.ones(2, bool)).gains[0])
    assert gains[0] < gains[1] < gains[2]


def test_a_short_run_touching_the_choice_also_removes_deadline_risk() -> None:
    # The choice meets the deadline with probability ½; the runner-up, 30 % dearer, surely does.
    est = _estimates([1.0, 1.3], sig_step=0.0, sig_e=[0.4, 0.0], time_s=[1000.0, 1000.0])
    opt = [ProbeOption("short_run", (0,), 0.0, share=1.0)]
    loose = option_gains(est, opt, feasible=np.ones(2, bool), deadline_s=10_000.0).gains[0]
    tight = option_gains(est, opt, feasible=np.ones(2, bool), deadline_s=1000.0).gains[0]
    assert tight > loose > 0


def test_a_sure_miss_avoided_is_not_worth_more_than_the_dearer_plan_costs_extra() -> None:
    # Leaving a ½-chance plan costing 1 for a sure one costing 3 loses money when a miss
    # wastes one planned run (expected loss 1 + ½·1 < 3): knowing which half it is buys nothing.
    est = _estimates([1.0, 3.0], sig_step=0.0, sig_e=[0.4, 0.0], time_s=[1000.0, 1000.0])
    opt = [ProbeOption("short_run", (0,), 0.0, share=1.0)]
    assert option_gains(est, opt, feasible=np.ones(2, bool), deadline_s=1000.0).gains[0] == pytest.approx(0.0, abs=1e-3)


def _same_gpu_estimates(cost, sig_step, workers) -> Estimates:
    """Two or more candidates on one GPU type differing only in workers (for the correlation)."""
    est = _estimates(cost, sig_step=sig_step, sig_e=0.0, global_batch=[64] * len(cost))
    c = est.candidates
    cands = Candidates(gpus=c.gpus, markets=c.markets, gpu=c.gpu, market=c.market,
                       workers=np.asarray(workers, np.int64), hosts=c.hosts, local_batch=c.local_batch)
    return dataclasses.replace(est, candidates=cands)


@settings(max_examples=12, deadline=None)
@given(ratio=st.floats(1.0, 1.5), s=st.floats(0.05, 0.5), doublings=st.integers(0, 4))
def test_a_step_probes_gain_matches_a_seeded_simulation_of_correlated_errors(ratio: float, s: float, doublings: int) -> None:
    # Choice 0 and challenger 1 have equal step-time spreads and errors correlated by
    # ρ = exp(−d/ℓ). Probing the challenger reveals its error e₁ = s·Z; the choice's median
    # then moves by E[e₀ | e₁] = ρ·s·Z, the rest of its variance s²(1 − ρ²). Simulated: draw
    # Z, move both, take the lower mean; the gain is the lower mean before less its average.
    est = _same_gpu_estimates([1.0, ratio], [s, s], [1, 2**doublings])
    got = option_gains(est, [ProbeOption("step", (1,), 0.0)], feasible=np.ones(2, bool)).gains[0]
    rho = math.exp(-doublings / STEP_CORRELATION_DOUBLINGS)
    z = np.random.default_rng(3).standard_normal(400_000)
    mean0 = np.exp(rho * s * z + s * s * (1 - rho**2) / 2)
    mean1 = ratio * np.exp(s * z)
    before = min(math.exp(s * s / 2), ratio * math.exp(s * s / 2))
    want = max(before - float(np.mean(np.minimum(mean0, mean1))), 0.0)
    assert got == pytest.approx(want, abs=2e-3)


def test_probing_a_close_neighbour_of_the_choice_is_worth_less_than_probing_a_far_one() -> None:
    # The model errs alike at neighbouring configurations: a probe next to the choice moves
    # both together and rarely changes the decision; one four doublings away moves alone.
    near = _same_gpu_estimates([1.0, 1.05], [0.2, 0.2], [8, 16])
    far = _same_gpu_estimates([1.0, 1.05], [0.2, 0.2], [8, 128])
    opt = [ProbeOption("step", (1,), 0.0)]
    g_near = option_gains(near, opt, feasible=np.ones(2, bool)).gains[0]
    g_far = option_gains(far, opt, feasible=np.ones(2, bool)).gains[0]
    assert 0 < g_near < 0.6 * g_far


def test_step_errors_correlate_by_configuration_distance_on_one_gpu_only() -> None:
    cands = Candidates(gpus=("t4", "v100"), markets=("on_demand",), gpu=np.array([0, 0, 0, 1], np.int32),
                       market=np.zeros(4, np.int32), workers=np.array([4, 8, 64, 4], np.int64),
                       hosts=np.array([1, 1, 4, 1], np.int64), local_batch=np.full(4, 32, np.int64))
    rho = step_correlation(cands, 0)
    assert rho[0] == 1.0 and rho[3] == 0.0
    assert rho[1] == pytest.approx(math.exp(-1 / STEP_CORRELATION_DOUBLINGS))
    assert rho[2] == pytest.approx(math.exp(-(4 + 2) / STEP_CORRELATION_DOUBLINGS))  # 4 doublings of workers, 2 of hosts


def test_planning_stops_when_no_gain_covers_its_price() -> None:
    est = _estimates([1.0, 1.05, 5.0], sig_step=0.3, sig_e=0.0)
    options = standard_options(est, unprobed=np.array([False, True, True]), step_price=np.array([0.0, 0.01, 0.01]))
    go = plan_next_probe(est, options, feasible=np.ones(3, bool))
    assert go.option is not None and go.option.touches == (1,)  # the close challenger, not the far one
    assert go.expected_gain > go.price
    dear = standard_options(est, unprobed=np.array([False, True, True]), step_price=np.array([0.0, 10.0, 10.0]))
    stop = plan_next_probe(est, dear, feasible=np.ones(3, bool))
    assert stop.option is None and "below its price" in stop.reason
    assert plan_next_probe(est, [], feasible=np.ones(3, bool)).option is None


def test_short_runs_touch_every_candidate_of_their_batch() -> None:
    est = _estimates([1.0, 1.2, 1.4], sig_step=0.1, sig_e=0.3, global_batch=[64, 128, 128])
    opts = standard_options(est, unprobed=np.zeros(3, bool), step_price=np.zeros(3), short_runs=[(128, 0.5, 0.5), (999, 1.0, 1.0)])
    assert [(o.kind, o.touches) for o in opts] == [("short_run", (1, 2))]
    g = option_gains(est, opts, feasible=np.ones(3, bool)).gains[0]
    assert math.isfinite(g) and g > 0


# -- nothing feasible: evidence is worth the chance it makes a plan ------------------------------
def _infeasible(cost, *, sig_step, sig_e, time_s, p_reach):
    est = _estimates(cost, sig_step=sig_step, sig_e=sig_e, time_s=time_s)
    from dataclasses import replace

    return replace(est, p_reach=np.asarray(p_reach, float), time_if_reached_s=np.asarray(time_s, float))


@settings(max_examples=20, deadline=None)
@given(log_ratio=st.floats(-0.6, 0.6), s=st.floats(0.05, 0.6), rest=st.one_of(st.just(0.0), st.floats(0.01, 0.5)),
       p=st.floats(0.55, 1.0))
def test_the_chance_of_becoming_feasible_matches_a_seeded_preposterior_simulation(log_ratio, s, rest, p) -> None:
    from cotune.models._normal import norm_cdf
    from cotune.solver._probes import _feasible_after

    q, deadline = 0.5, 1000.0
    log_t = math.log(deadline) + log_ratio
    z = np.random.default_rng(1).standard_normal(100_000)
    revealed = log_t + s * z  # the median after the measurement: symmetric in log space
    after = p * (norm_cdf((math.log(deadline) - revealed) / rest) if rest > 0 else (revealed <= math.log(deadline)))
    want = float(np.mean(after >= q))
    got = float(_feasible_after(np.array([p]), log_t=np.array([log_t]), s=np.array([s]), rest=np.array([rest]), q=q,
                                deadline_s=deadline)[0])
    assert got == pytest.approx(want, abs=0.01)


@settings(max_examples=20, deadline=None)
@given(log_ratio=st.floats(-0.6, 0.6), budget_ratio=st.floats(-0.6, 0.6), s=st.floats(0.05, 0.6),
       with_deadline=st.booleans())
def test_the_chance_of_becoming_feasible_within_a_budget_matches_a_seeded_simulation(log_ratio, budget_ratio, s,
                                                                                    with_deadline) -> None:
    # Time and cost move together (cost = rate · time): after the measurement the plan is
    # feasible when its revealed time meets the deadline and its cost the budget.
    from cotune.solver._probes import _feasible_after

    deadline = 1000.0
    log_t = math.log(deadline) + log_ratio
    log_cap = math.log(deadline) + budget_ratio  # the log time at which the cost reaches the budget
    revealed = log_t + s * np.random.default_rng(2).standard_normal(100_000)
    ok = revealed <= log_cap
    if with_deadline:
        ok &= revealed <= math.log(deadline)
    got = float(_feasible_after(np.array([1.0]), log_t=np.array([log_t]), s=np.array([s]), rest=np.array([0.0]), q=0.5,
                                deadline_s=deadline if with_deadline else None, log_cap=np.array([log_cap]))[0])
    assert got == pytest.approx(float(np.mean(ok)), abs=0.01)


def test_with_a_budget_below_every_plausible_cost_no_measurement_is_worth_anything() -> None:
    # `recommend --budget 0.01` where the cheapest plan costs 0.4 named a probe that cost
    # more than the whole budget as "worth measuring": the budget did not enter the gain.
    est = _infeasible([0.4, 0.5], sig_step=0.1, sig_e=0.1, time_s=[0.4 * 3600, 0.5 * 3600], p_reach=[1.0, 1.0])
    opts = [ProbeOption("step", (0,), 0.0), ProbeOption("step", (1,), 0.0)]
    free = option_gains(est, opts, feasible=np.zeros(2, bool)).gains
    tight = option_gains(est, opts, feasible=np.zeros(2, bool), budget=0.01).gains
    near = option_gains(est, opts, feasible=np.zeros(2, bool), budget=0.38).gains
    assert np.all(free > 0) and np.all(tight < 1e-9)
    assert 0.0 < near[0] < free[0] and near[1] < near[0]  # just under the cheaper one's cost: a chance, smaller


def test_with_nothing_feasible_a_measurement_is_worth_at_most_the_cheapest_plan() -> None:
    # Two candidates just over the deadline; the second costs 100 times the first.
    est = _infeasible([1.0, 100.0], sig_step=0.3, sig_e=0.3, time_s=[1200.0, 1200.0], p_reach=[0.9, 0.9])
    opts = [ProbeOption("step", (0,), 0.0), ProbeOption("step", (1,), 0.0)]
    g = option_gains(est, opts, feasible=np.zeros(2, bool), deadline_s=1000.0).gains
    assert 0.0 < g[0] <= 1.0 and 0.0 < g[1] <= 1.0
    assert g[0] == pytest.approx(g[1])  # the same chance of a plan is worth the same, whatever the candidate costs


def test_a_step_probe_cannot_make_a_candidate_that_rarely_reaches_the_target_feasible() -> None:
    est = _infeasible([1.0], sig_step=0.3, sig_e=0.3, time_s=[500.0], p_reach=[0.4])
    step = option_gains(est, [ProbeOption("step", (0,), 0.0)], feasible=np.zeros(1, bool), deadline_s=1000.0).gains[0]
    run = option_gains(est, [ProbeOption("short_run", (0,), 0.0, share=1.0)], feasible=np.zeros(1, bool),
                       deadline_s=1000.0).gains[0]
    assert step == 0.0
    assert 0.0 < run <= 0.4  # it confirms the target with probability 0.4, and then the deadline is easy


def test_the_nothing_feasible_gain_uses_the_confidence_asked_for() -> None:
    # Some epochs spread stays after the probe, so the confidence asked for still matters.
    est = _infeasible([1.0], sig_step=0.3, sig_e=0.1, time_s=[1100.0], p_reach=[1.0])
    opt = [ProbeOption("step", (0,), 0.0)]
    at_half = option_gains(est, opt, feasible=np.zeros(1, bool), deadline_s=1000.0).gains[0]
    at_90 = option_gains(est, opt, feasible=np.zeros(1, bool), deadline_s=1000.0, confidence=0.9).gains[0]
    assert at_half > at_90 > 0.0


@settings(max_examples=15, deadline=None)
@given(ratio=st.floats(1.0, 1.6), s=st.floats(0.05, 0.6))  # candidate 0 stays the choice
def test_a_probed_challengers_median_moves_symmetrically_in_log_space(ratio: float, s: float) -> None:
    # The estimates' cost is a median: after the probe the challenger's cost is C·exp(sZ) and
    # known, so against a choice whose cost is known the gain is E[max(0, C_choice − C·exp(sZ))].
    est = _estimates([1.0, ratio], sig_step=[0.0, s], sig_e=0.0)
    got = option_gains(est, [ProbeOption("step", (1,), 0.0)], feasible=np.ones(2, bool)).gains[0]
    z = np.random.default_rng(2).standard_normal(200_000)
    want = float(np.mean(np.maximum(1.0 - ratio * np.exp(s * z), 0.0)))
    assert got == pytest.approx(want, abs=3e-3)


def test_next_measurement_buys_a_probe_of_a_cheap_uncertain_near_tie() -> None:
    # Candidate 0 (the choice) is probed; candidate 1, 3 % dearer, is four doublings away
    # (its error is its own) and uncertain: knowing it may halve the bill, and a probe is cheap.
    est = _same_gpu_estimates([1.0, 1.03], [0.0, 0.4], [1, 16])
    got = next_measurement(est, feasible=np.ones(2, bool), probed=np.array([True, False]), setup_s=1.0, steps=1)
    assert got is not None and got.kind == "step" and got.workers == 16 and got.buy
    assert got.expected_gain > got.price > 0
    assert "worth measuring" in got.reason


def test_next_measurement_prices_a_probe_as_setup_plus_steps_on_its_workers() -> None:
    est = _same_gpu_estimates([1.0, 1.03], [0.0, 0.4], [1, 16])
    got = next_measurement(est, feasible=np.ones(2, bool), probed=np.array([True, False]), setup_s=60.0, steps=50)
    # _estimates: price 1 per worker-hour and a step time of 1 s on 16 workers.
    assert got is not None and got.price == pytest.approx(16 * (60.0 + 50 * 1.0) / 3600.0)
    assert got.buy == (got.expected_gain > got.price)


def test_nothing_is_worth_measuring_when_every_configuration_and_batch_is_known() -> None:
    est = _same_gpu_estimates([1.0, 1.03], [0.0, 0.4], [1, 16])
    got = next_measurement(est, feasible=np.ones(2, bool), probed=np.ones(2, bool), measured_batches=[64.0, 1024.0])
    assert got is None


def test_a_dear_probe_is_not_bought_and_the_answer_says_so() -> None:
    est = _same_gpu_estimates([1.0, 1.03], [0.0, 0.4], [1, 16])
    got = next_measurement(est, feasible=np.ones(2, bool), probed=np.array([True, False]), measured_batches=[64.0],
                           setup_s=1e6, unit="worker-hours")
    assert got is not None and not got.buy and got.reason.startswith("no measurement is worth its price")
    assert "worker-hours" in got.reason


@pytest.mark.parametrize("unit", ["USD", "worker-hours"])
def test_the_next_measurement_states_its_money_as_the_report_does_not_in_scientific_notation(unit) -> None:
    # ",.3g" wrote "$4.44e+03" for a price of $4,444.67.
    import re

    from cotune.units import format_money

    est = _same_gpu_estimates([1.0, 1.03], [0.0, 0.4], [1, 16])
    got = next_measurement(est, feasible=np.ones(2, bool), probed=np.array([True, False]), measured_batches=[64.0],
                           setup_s=1e6, unit=unit)
    assert got is not None and not re.search(r"\de[+-]\d", got.reason), got.reason
    assert format_money(got.price, priced=True).lstrip("$") in got.reason


def test_the_floor_is_the_spread_the_model_states_at_its_probed_configurations() -> None:
    est = _estimates([1.0, 1.1, 1.2, 1.3], sig_step=[0.05, 0.07, 0.3, 0.4], sig_e=0.0)
    c = est.candidates
    two_gpus = Candidates(gpus=("t4", "v100"), markets=c.markets, gpu=np.array([0, 0, 0, 1], np.int32), market=c.market,
                          workers=c.workers, hosts=c.hosts, local_batch=c.local_batch)
    est = dataclasses.replace(est, candidates=two_gpus)
    floor = probed_step_floor(est, np.array([True, True, False, False]))
    assert floor[:3] == pytest.approx([0.06] * 3) and floor[3] == 0.0  # no v100 probe: nothing is known to stay


def test_a_floor_makes_a_probe_worth_less_when_the_deadline_is_what_it_could_clear() -> None:
    # The challenger is a little cheaper but meets the deadline only half the time; a probe
    # that could show it fast enough is worth less when the model will still state 0.3 there.
    est = _estimates([1.0, 0.95], sig_step=[0.0, 0.4], sig_e=0.05, time_s=[900.0, 1000.0])
    opt = [ProbeOption("step", (1,), 0.0)]
    bare = option_gains(est, opt, feasible=np.ones(2, bool), deadline_s=1000.0).gains[0]
    floored = option_gains(est, opt, feasible=np.ones(2, bool), deadline_s=1000.0, step_floor=0.3).gains[0]
    assert floored < bare


def test_a_measurement_is_not_credited_with_a_switch_the_planner_could_make_without_it() -> None:
    # Candidate 0 is the cheapest median but meets the deadline half the time; candidate 1,
    # 4 % dearer, surely does — the least loss today. A probe of candidate 2 (far away, so
    # it moves alone) is worth what it could save against candidate 1, with 0 there or not.
    est = _estimates([1.0, 1.04, 1.3], sig_step=[0.0, 0.0, 0.3], sig_e=[0.3, 0.01, 0.0], time_s=[1000.0, 900.0, 1000.0])
    c = est.candidates
    est = dataclasses.replace(est, candidates=Candidates(gpus=c.gpus, markets=c.markets, gpu=c.gpu, market=c.market,
                                                         workers=np.array([1, 1, 256], np.int64), hosts=c.hosts,
                                                         local_batch=c.local_batch))
    opt = [ProbeOption("step", (2,), 0.0)]
    with_half_chance = option_gains(est, opt, feasible=np.ones(3, bool), deadline_s=1020.0).gains[0]
    without_it = option_gains(est, opt, feasible=np.array([False, True, True]), deadline_s=1020.0).gains[0]
    assert with_half_chance == pytest.approx(without_it, rel=0.05)


def test_a_probed_configuration_is_probed_on_every_market_and_other_gpus_are_ignored() -> None:
    cands = Candidates(gpus=("t4",), markets=("on_demand", "spot"), gpu=np.zeros(4, np.int32),
                       market=np.array([0, 1, 0, 1], np.int32), workers=np.array([2, 2, 4, 4], np.int64),
                       hosts=np.ones(4, np.int64), local_batch=np.full(4, 64, np.int64))
    got = probed_mask(cands, [("t4", 2, 1, 64), ("v100", 4, 1, 64), ("t4", 4, 1, 32)])
    assert got.tolist() == [True, True, False, False]
    assert not probed_mask(cands, []).any()


def test_recommend_passes_its_budget_to_the_next_measurement() -> None:
    import cotune

    ask = dict(target=0.94, prices={"t4": 0.526}, objective="time")
    tight = cotune.recommend("cifar10-resnet18", budget=0.01, **ask)  # the cheapest plan costs about $0.40
    assert tight.chosen is None and tight.next_measurement is not None
    assert not tight.next_measurement.buy and tight.next_measurement.expected_gain < 1e-6


def test_a_run_priced_to_the_target_is_not_called_short():
    # Priced at the upper end of its epochs to the target, it read "a short run at global batch
    # 514 (81.7 epochs ...)" beside a 75.6-epoch job.
    import cotune

    rec = cotune.recommend("cifar10-resnet18", target=0.94, deadline_s=1800)
    m = rec.next_measurement
    assert m is not None and m.kind == "short_run"
    assert f"a trial run to the target at global batch {m.global_batch} (up to " in m.reason
    assert "short run" not in m.reason and m.epochs >= rec.chosen.epochs_interval[0]


def test_no_trial_run_to_the_target_is_offered_where_the_median_run_never_reaches_it() -> None:
    # Global batch 64 reaches the target only at its optimistic end (median epochs infinite):
    # "a trial run to the target (up to 175 epochs)" there was priced on epochs_upper alone.
    est = _same_gpu_estimates([1.0, 1.03], [0.0, 0.4], [1, 16])
    never = dataclasses.replace(est, epochs=np.full(2, np.inf), p_reach=np.full(2, 0.19))
    got = next_measurement(never, feasible=np.zeros(2, bool), probed=np.ones(2, bool), measured_batches=[1024.0])
    assert got is None
    reached = next_measurement(est, feasible=np.zeros(2, bool), probed=np.ones(2, bool), measured_batches=[1024.0])
    assert reached is not None and reached.kind == "short_run"  # the same question where it is reached
