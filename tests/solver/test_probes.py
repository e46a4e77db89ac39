"""The value-of-information probe planner (cotune.solver._probes) on small synthetic estimates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune.solver import Candidates, Estimates, ProbeOption, option_gains, plan_next_probe, standard_options
from cotune.solver._probes import _call, _put

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


@settings(max_examples=25, deadline=None)
@given(c=st.floats(0.5, 2.0), k=st.floats(0.5, 2.0), s=st.floats(0.05, 0.8))
def test_put_and_call_match_a_seeded_monte_carlo(c: float, k: float, s: float) -> None:
    z = np.random.default_rng(0).standard_normal(200_000)
    draw = c * np.exp(s * z - s * s / 2)
    assert _put(np.array([c]), k, np.array([s]))[0] == pytest.approx(np.mean(np.maximum(k - draw, 0)), abs=3e-3 * max(c, k))
    assert _call(c, k, s) == pytest.approx(np.mean(np.maximum(draw - k, 0)), abs=3e-3 * max(c, k))


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
    est = _estimates([1.0, 3.0], sig_step=0.0, sig_e=[0.4, 0.0], time_s=[1000.0, 1000.0])
    opt = [ProbeOption("short_run", (0,), 0.0, share=1.0)]
    loose = option_gains(est, opt, feasible=np.ones(2, bool), deadline_s=10_000.0).gains[0]
    tight = option_gains(est, opt, feasible=np.ones(2, bool), deadline_s=1000.0).gains[0]
    assert tight > loose > 0


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
