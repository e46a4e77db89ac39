"""The remaining work of a running job: P(success) conditioned on the target not reached yet."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune.solver import remaining_work


def _one(**kw):
    args = dict(epochs=[20.0], log_sigma=[0.3], p_reach=[0.8], done_epochs=[0.0], epoch_time_s=[10.0],
                restart_s=[0.0], rate_per_s=[0.01], remaining_s=None)
    args.update(kw)
    return remaining_work(**{k: (np.asarray(v, float) if isinstance(v, list) else v) for k, v in args.items()})


def test_without_deadline_or_progress_the_chance_is_the_reach_probability():
    r = _one()
    assert r.p_success[0] == pytest.approx(0.8)
    assert r.time_s[0] == pytest.approx(200.0)  # the median, 20 epochs × 10 s
    assert r.cost[0] == pytest.approx(2.0)


def _conditioned_truth(seed: int, *, p: float, med: float, sig: float, done: float, n: int = 400_000):
    """Seeded synthetic truth: reach ~ Bernoulli(p), epochs ~ log-normal(med, sig); ``alive``
    marks the runs not reached by the hand-over epoch ``done``."""
    rng = np.random.default_rng(seed)
    reached = rng.random(n) < p
    e = med * np.exp(sig * rng.standard_normal(n))
    return reached, e, ~(reached & (e <= done))


def test_probability_matches_a_monte_carlo_of_the_conditioned_truth():
    # Of the runs not reached by the hand-over epoch, those that reach within the remaining time.
    p, med, sig, done, tau, left_s = 0.7, 30.0, 0.4, 25.0, 5.0, 60.0
    reached, e, alive = _conditioned_truth(7, p=p, med=med, sig=sig, done=done)
    truth = np.mean((reached & (e <= done + left_s / tau))[alive])
    r = _one(epochs=[med], log_sigma=[sig], p_reach=[p], done_epochs=[done], epoch_time_s=[tau], remaining_s=left_s)
    assert r.p_success[0] == pytest.approx(truth, abs=0.01)
    # the conditional median of the remaining time as well
    rem = (e[alive & reached] - done) * tau
    assert r.time_s[0] == pytest.approx(float(np.median(rem)), rel=0.03)


def test_a_restart_lowers_the_chance_and_adds_its_time():
    stay = _one(done_epochs=[10.0], remaining_s=150.0)
    move = _one(done_epochs=[10.0], remaining_s=150.0, restart_s=[30.0])
    assert move.p_success[0] < stay.p_success[0]
    assert move.time_s[0] == pytest.approx(stay.time_s[0] + 30.0)


def test_a_budget_is_the_deadline_at_which_the_option_spends_it():
    # cost = rate × (restart + remaining training): a budget B is met exactly by the time B / rate.
    kw = dict(done_epochs=[10.0], restart_s=[30.0], rate_per_s=[0.01])
    by_budget = _one(remaining_s=None, budget_end_s=np.array([1.5 / 0.01]), **kw)
    by_deadline = _one(remaining_s=1.5 / 0.01, **kw)
    assert by_budget.p_success[0] == pytest.approx(by_deadline.p_success[0], rel=1e-12)
    # Both given: the earlier binds; a budget beyond the deadline changes nothing.
    both = _one(remaining_s=400.0, budget_end_s=np.array([150.0]), **kw)
    assert both.p_success[0] == pytest.approx(by_deadline.p_success[0], rel=1e-12)
    assert _one(remaining_s=150.0, budget_end_s=np.array([1e9]), **kw).p_success[0] == by_deadline.p_success[0]
    # A spent budget (0 s) leaves no chance; the median time and cost are the work's, not the budget's.
    spent = _one(remaining_s=400.0, budget_end_s=np.array([0.0]), **kw)
    assert spent.p_success[0] == 0.0 and spent.cost[0] == by_deadline.cost[0]


def test_a_budget_matches_a_monte_carlo_of_the_conditioned_truth():
    p, med, sig, done, tau, rate, budget = 0.9, 30.0, 0.3, 12.0, 5.0, 0.02, 1.6
    reached, e, alive = _conditioned_truth(11, p=p, med=med, sig=sig, done=done)
    cost = rate * (e - done) * tau
    truth = np.mean((reached & (cost <= budget) & ((e - done) * tau <= 500.0))[alive])
    r = _one(epochs=[med], log_sigma=[sig], p_reach=[p], done_epochs=[done], epoch_time_s=[tau], rate_per_s=[rate],
             remaining_s=500.0, budget_end_s=np.array([budget / rate]))
    assert r.p_success[0] == pytest.approx(truth, abs=0.01)
    assert r.p_success[0] < _one(epochs=[med], log_sigma=[sig], p_reach=[p], done_epochs=[done], epoch_time_s=[tau],
                                 rate_per_s=[rate], remaining_s=500.0).p_success[0] - 0.1


def test_no_estimate_means_no_chance_and_no_cost():
    r = _one(epochs=[math.inf])
    assert r.p_success[0] == 0.0 and math.isinf(r.cost[0]) and math.isinf(r.time_s[0])


def test_a_job_far_behind_its_model_keeps_a_finite_remaining_time():
    r = _one(done_epochs=[200.0], p_reach=[1.0], remaining_s=1e6)
    assert math.isfinite(r.time_s[0]) and r.time_s[0] > 0


@settings(max_examples=60, deadline=None)
@given(
    med=st.floats(1.0, 100.0), sig=st.floats(0.05, 1.0), p=st.floats(0.01, 1.0), done=st.floats(0.0, 80.0),
    left=st.floats(1.0, 1e4), extra=st.floats(1.0, 1e4),
)
def test_more_time_left_never_lowers_the_chance(med, sig, p, done, left, extra):
    a = _one(epochs=[med], log_sigma=[sig], p_reach=[p], done_epochs=[done], remaining_s=left)
    b = _one(epochs=[med], log_sigma=[sig], p_reach=[p], done_epochs=[done], remaining_s=left + extra)
    assert b.p_success[0] >= a.p_success[0] - 1e-12
    assert 0.0 <= a.p_success[0] <= a.p_reach[0] <= 1.0


@settings(max_examples=60, deadline=None)
@given(med=st.floats(1.0, 100.0), sig=st.floats(0.05, 1.0), p=st.floats(0.01, 0.99), d1=st.floats(0.0, 50.0),
       d2=st.floats(0.0, 50.0))
def test_not_reaching_for_longer_lowers_the_reach_probability(med, sig, p, d1, d2):
    lo, hi = sorted((d1, d2))
    a = _one(epochs=[med], log_sigma=[sig], p_reach=[p], done_epochs=[lo])
    b = _one(epochs=[med], log_sigma=[sig], p_reach=[p], done_epochs=[hi])
    assert b.p_reach[0] <= a.p_reach[0] + 1e-12


def _truncated_truth(seed: int, *, p: float, med: float, sig: float, done: float, end: float, n: int = 400_000):
    """Seeded synthetic truth with a schedule: reach by ``end`` ~ Bernoulli(p); given reached,
    epochs ~ log-normal(med, sig) truncated at ``end`` (drawn by rejection); ``alive``: not
    reached by the hand-over epoch ``done``."""
    rng = np.random.default_rng(seed)
    reached = rng.random(n) < p
    e = med * np.exp(sig * rng.standard_normal(4 * n))
    e = e[e <= end][:n]
    assert e.size == n
    return reached, e, ~(reached & (e <= done))


def test_a_schedule_end_truncates_the_epochs_given_reached():
    # p is the chance of reaching by the schedule's end, the horizon of the runs it came from.
    p, med, sig, done, end, tau, left_s = 0.7, 30.0, 0.5, 20.0, 35.0, 5.0, 40.0
    reached, e, alive = _truncated_truth(5, p=p, med=med, sig=sig, done=done, end=end)
    r = _one(epochs=[med], log_sigma=[sig], p_reach=[p], done_epochs=[done], epoch_time_s=[tau],
             remaining_s=left_s, max_epochs=np.array([end]))
    assert r.p_reach[0] == pytest.approx(np.mean(reached[alive]), abs=0.01)
    assert r.p_success[0] == pytest.approx(np.mean((reached & (e <= done + left_s / tau))[alive]), abs=0.01)
    assert r.time_s[0] == pytest.approx(float(np.median((e[alive & reached] - done) * tau)), rel=0.03)


def test_time_at_confidence_respects_the_schedule_end():
    p, med, sig, done, end, tau = 0.9, 30.0, 0.5, 20.0, 35.0, 5.0
    reached, e, alive = _truncated_truth(9, p=p, med=med, sig=sig, done=done, end=end)
    need = np.where(reached, np.maximum(e - done, 0.0) * tau, np.inf)[alive]
    r = _one(epochs=[med], log_sigma=[sig], p_reach=[p], done_epochs=[done], epoch_time_s=[tau],
             max_epochs=np.array([end]), confidence=0.6)
    assert r.time_at_confidence_s[0] == pytest.approx(np.quantile(need, 0.6), rel=0.02)
    assert r.time_at_confidence_s[0] <= (end - done) * tau + 1e-9


def test_a_schedule_shorter_than_the_runs_behind_the_chance_cuts_it():
    # p is the chance of reaching by H, the end of the runs it came from; this job's schedule
    # ends sooner, at M: reaching between M and H is a miss too.
    p, med, sig, done, horizon, end, tau = 0.8, 30.0, 0.5, 20.0, 60.0, 32.0, 5.0
    reached, e, alive = _truncated_truth(13, p=p, med=med, sig=sig, done=done, end=horizon)
    r = _one(epochs=[med], log_sigma=[sig], p_reach=[p], done_epochs=[done], epoch_time_s=[tau],
             max_epochs=np.array([end]), horizon_epochs=np.array([horizon]))
    in_time = reached & (e <= end)
    # The chance of reaching is the chance within the schedule; "given reached" is given by M.
    assert r.p_reach[0] == pytest.approx(np.mean(in_time[alive]), abs=0.01)
    assert r.p_success[0] == pytest.approx(np.mean(in_time[alive]), abs=0.01)
    assert r.time_s[0] == pytest.approx(float(np.median((e[alive & in_time] - done) * tau)), rel=0.03)
    assert r.epochs[0] <= end - done


def test_time_at_confidence_is_infinite_when_the_schedule_ends_first():
    # Reached by H with 0.8, but the schedule ends at M with little of that mass left: no
    # time is enough for q above the chance within the schedule.
    p, med, sig, done, horizon, end, tau = 0.8, 30.0, 0.5, 20.0, 60.0, 32.0, 5.0
    reached, e, alive = _truncated_truth(17, p=p, med=med, sig=sig, done=done, end=horizon)
    chance = float(np.mean((reached & (e <= end))[alive]))
    common = dict(epochs=[med], log_sigma=[sig], p_reach=[p], done_epochs=[done], epoch_time_s=[tau],
                  max_epochs=np.array([end]), horizon_epochs=np.array([horizon]))
    assert _one(confidence=chance + 0.05, **common).time_at_confidence_s[0] == math.inf
    below = _one(confidence=chance - 0.05, **common).time_at_confidence_s[0]
    need = np.where(reached & (e <= end), np.maximum(e - done, 0.0) * tau, np.inf)[alive]
    assert below == pytest.approx(np.quantile(need, chance - 0.05), rel=0.03)
    assert below <= (end - done) * tau + 1e-9


def test_the_interval_given_reached_lies_within_the_schedule():
    p, med, sig, done, horizon, end, tau = 0.8, 30.0, 0.5, 20.0, 60.0, 32.0, 5.0
    reached, e, alive = _truncated_truth(19, p=p, med=med, sig=sig, done=done, end=horizon)
    r = _one(epochs=[med], log_sigma=[sig], p_reach=[p], done_epochs=[done], epoch_time_s=[tau],
             max_epochs=np.array([end]), horizon_epochs=np.array([horizon]), interval=0.8)
    need = ((e - done) * tau)[alive & reached & (e <= end)]
    lo, hi = r.time_interval_s
    assert lo[0] == pytest.approx(np.quantile(need, 0.1), rel=0.05)
    assert hi[0] == pytest.approx(np.quantile(need, 0.9), rel=0.03)
    assert hi[0] <= (end - done) * tau + 1e-9


def test_a_job_past_its_schedule_end_has_no_chance():
    r = _one(done_epochs=[40.0], p_reach=[0.9], max_epochs=np.array([35.0]), remaining_s=1e6, confidence=0.5)
    assert r.p_success[0] == 0.0 and r.p_reach[0] == 0.0 and math.isfinite(r.time_s[0])
    assert r.time_at_confidence_s[0] == math.inf


def test_a_schedule_end_far_beyond_the_epochs_changes_nothing():
    open_end = _one(done_epochs=[10.0], remaining_s=150.0, confidence=0.5)
    far = _one(done_epochs=[10.0], remaining_s=150.0, confidence=0.5, max_epochs=np.array([1e6]))
    for a, b in ((open_end.p_success, far.p_success), (open_end.time_s, far.time_s),
                 (open_end.time_at_confidence_s, far.time_at_confidence_s)):
        assert b[0] == pytest.approx(a[0], rel=1e-9)


def test_time_at_confidence_is_the_quantile_of_a_monte_carlo_of_the_conditioned_truth():
    p, med, sig, done, tau, restart = 0.9, 30.0, 0.4, 25.0, 5.0, 40.0
    reached, e, alive = _conditioned_truth(11, p=p, med=med, sig=sig, done=done)
    # Time each surviving run needs (∞ when it never reaches); its q-quantile over all survivors.
    need = np.where(reached, np.maximum(e - done, 0.0) * tau + restart, np.inf)[alive]
    r = _one(epochs=[med], log_sigma=[sig], p_reach=[p], done_epochs=[done], epoch_time_s=[tau],
             restart_s=[restart], confidence=0.6)
    assert r.p_reach[0] > 0.6
    assert r.time_at_confidence_s[0] == pytest.approx(np.quantile(need, 0.6), rel=0.02)


def test_time_at_confidence_is_infinite_when_the_chance_never_gets_there():
    r = _one(p_reach=[0.5], confidence=0.6)
    assert math.isinf(r.time_at_confidence_s[0]) and math.isfinite(r.time_s[0])


def test_remaining_epochs_are_the_conditional_median_left():
    r = _one(done_epochs=[0.0])
    assert r.epochs[0] == pytest.approx(20.0) and r.time_s[0] == pytest.approx(r.epochs[0] * 10.0)


def test_with_the_models_error_shapes_the_chance_is_that_of_their_law():
    # Seeded truth before the job runs: ln E = ln med + σ_step·u_step + σ_E·u_E, each part drawn
    # from its own shape; the normal of the same total σ says something else.
    from cotune.models._shape import EPOCHS_ERROR_SHAPE, STEP_ERROR_SHAPE

    rng = np.random.default_rng(13)
    n, med, s_step, s_e, tau, left_s = 400_000, 30.0, 0.5, 0.2, 5.0, 170.0

    def draw(shape):
        return np.array(shape.scales)[rng.choice(len(shape.weights), size=n, p=shape.weights)] * rng.standard_normal(n)

    e = med * np.exp(s_step * draw(STEP_ERROR_SHAPE) + s_e * draw(EPOCHS_ERROR_SHAPE))
    truth = np.mean(e <= left_s / tau)
    sig = math.hypot(s_step, s_e)
    shaped = _one(epochs=[med], log_sigma=[sig], p_reach=[1.0], epoch_time_s=[tau], remaining_s=left_s,
                  step_log_sigma=[s_step], shapes=(STEP_ERROR_SHAPE, EPOCHS_ERROR_SHAPE))
    normal = _one(epochs=[med], log_sigma=[sig], p_reach=[1.0], epoch_time_s=[tau], remaining_s=left_s)
    assert shaped.p_success[0] == pytest.approx(truth, abs=0.005)
    assert abs(normal.p_success[0] - truth) > 0.02
    # the conditional median left, too: half of the runs not done by 20 epochs need more than it
    done = 20.0
    r = _one(epochs=[med], log_sigma=[sig], p_reach=[1.0], done_epochs=[done], epoch_time_s=[tau],
             step_log_sigma=[s_step], shapes=(STEP_ERROR_SHAPE, EPOCHS_ERROR_SHAPE))
    alive = e > done
    assert np.mean(e[alive] - done <= r.epochs[0]) == pytest.approx(0.5, abs=0.005)
