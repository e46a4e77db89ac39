"""Staying weighed with the move a job can still make after its schedule ends short (cotune.solver.finish_first)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune.solver import MIN_FALLBACK_GAIN, finish_first, remaining_work, schedule_left_s


def _one(**kw):
    base = dict(epochs=np.array([10.0]), log_sigma=np.array([0.3]), p_reach=np.array([0.8]), done_epochs=np.array([6.0]),
                epoch_time_s=np.array([100.0]), restart_s=np.array([0.0]), rate_per_s=np.array([0.01]))
    return remaining_work(**(base | kw))


def _draw_conditioned(rng, *, median: float, sigma: float, p: float, done: float, end: float, n: int) -> np.ndarray:
    """Total epochs of a run that has not reached by ``done``: reached by its schedule's
    ``end`` with probability ``p`` (log-normal, truncated at ``end``), else never (∞) —
    drawn by rejection from the unconditioned truth."""
    out = np.empty(0)
    while out.size < n:
        e = median * np.exp(sigma * rng.standard_normal(8 * n))
        e = e[e <= end][: 4 * n]
        e = np.where(rng.random(e.size) < p, e, np.inf)
        out = np.concatenate([out, e[e > done]])
    return out[:n]


def test_staying_then_moving_matches_a_monte_carlo_of_that_policy():
    # Staying at batch 512 (6 of 8 epochs of its schedule done) and, should the schedule end
    # without the target, a restart at batch 256, drawn independently.
    rng = np.random.default_rng(7)
    remaining, restart, schedule = 2000.0, 120.0, 8.0
    stay = dict(median=7.5, sigma=0.25, p=0.7, done=6.0)
    tau_s, tau_k = 100.0, 150.0
    alt = dict(median=6.0, sigma=0.3, p=0.9, done=3.0)
    n = 400_000
    e_s = _draw_conditioned(rng, n=n, end=schedule, **stay)
    e_k = _draw_conditioned(rng, n=n, end=schedule, **alt)
    fin_s = (schedule - stay["done"]) * tau_s
    stay_ok = (e_s <= schedule) & ((e_s - stay["done"]) * tau_s <= remaining)
    moved_ok = (e_s > schedule) & (e_k <= schedule) & (restart + (e_k - alt["done"]) * tau_k <= remaining - fin_s)
    truth = float(np.mean(stay_ok | moved_ok))

    rw_stay = _one(epochs=np.array([stay["median"]]), log_sigma=np.array([stay["sigma"]]), p_reach=np.array([stay["p"]]),
                   done_epochs=np.array([stay["done"]]), epoch_time_s=np.array([tau_s]), remaining_s=remaining,
                   max_epochs=np.array([schedule]))
    after = _one(epochs=np.array([alt["median"]]), log_sigma=np.array([alt["sigma"]]), p_reach=np.array([alt["p"]]),
                 done_epochs=np.array([alt["done"]]), epoch_time_s=np.array([tau_k]), restart_s=np.array([restart]),
                 remaining_s=remaining - schedule_left_s(schedule_epochs=schedule, done_epochs=stay["done"], epoch_time_s=tau_s),
                 max_epochs=np.array([schedule]))
    ff = finish_first(p_success=float(rw_stay.p_success[0]), p_reach=float(rw_stay.p_reach[0]), cost=float(rw_stay.cost[0]),
                      finish_cost=1.0, global_batch=np.array([256.0]), running_batch=512.0,
                      fallback_p_success=after.p_success, fallback_cost=after.cost)
    assert ff.fallback == 0
    assert ff.p_success == pytest.approx(truth, abs=0.005)
    assert ff.p_success > float(rw_stay.p_success[0]) + 0.1  # the fallback matters here


def test_only_a_smaller_batch_is_a_fallback():
    kw = dict(p_success=0.3, p_reach=0.4, cost=1.0, finish_cost=0.5, running_batch=512.0,
              fallback_p_success=np.array([0.9, 0.6, 0.2]), fallback_cost=np.array([2.0, 3.0, 4.0]))
    ff = finish_first(global_batch=np.array([1024.0, 512.0, 256.0]), **kw)
    assert ff.fallback == 2 and ff.p_success == pytest.approx(0.3 + 0.6 * 0.2)
    assert ff.cost == pytest.approx(0.4 * 1.0 + 0.6 * (0.5 + 4.0))
    none = finish_first(global_batch=np.array([1024.0, 512.0, 2048.0]), **kw)
    assert none.fallback is None and none.p_success == 0.3 and none.cost == 1.0


def test_a_fallback_adding_less_than_the_minimum_gain_leaves_staying_alone():
    ff = finish_first(p_success=0.5, p_reach=0.99, cost=1.0, finish_cost=0.5, global_batch=np.array([128.0]),
                      running_batch=512.0, fallback_p_success=np.array([0.9]), fallback_cost=np.array([1.0]))
    assert 0.01 * 0.9 < MIN_FALLBACK_GAIN and ff.fallback is None and (ff.p_success, ff.cost) == (0.5, 1.0)


def test_a_fallback_with_no_finite_cost_is_not_counted():
    ff = finish_first(p_success=0.2, p_reach=0.3, cost=1.0, finish_cost=0.5, global_batch=np.array([128.0]),
                      running_batch=512.0, fallback_p_success=np.array([0.9]), fallback_cost=np.array([math.inf]))
    assert ff.fallback is None and ff.p_success == 0.2


@settings(max_examples=200, deadline=None)
@given(p=st.floats(0.0, 1.0), pi_extra=st.floats(0.0, 1.0), fb=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6))
def test_the_fallback_never_lowers_staying_s_chance_nor_passes_one(p, pi_extra, fb):
    pi = p + (1.0 - p) * pi_extra  # reached by the schedule's end at least as often as on time
    arr = np.array(fb)
    ff = finish_first(p_success=p, p_reach=pi, cost=1.0, finish_cost=0.1, global_batch=np.arange(1.0, len(fb) + 1),
                      running_batch=len(fb) + 1.0, fallback_p_success=arr, fallback_cost=np.ones(len(fb)))
    assert p <= ff.p_success <= 1.0
    assert ff.p_success <= p + (1.0 - pi) * arr.max() + 1e-12
    better = finish_first(p_success=p, p_reach=pi, cost=1.0, finish_cost=0.1, global_batch=np.arange(1.0, len(fb) + 1),
                          running_batch=len(fb) + 1.0, fallback_p_success=np.minimum(arr + 0.1, 1.0),
                          fallback_cost=np.ones(len(fb)))
    assert better.p_success >= ff.p_success - 1e-12


def test_schedule_left_is_the_epochs_left_times_the_epoch_time():
    assert schedule_left_s(schedule_epochs=10.0, done_epochs=7.5, epoch_time_s=40.0) == pytest.approx(100.0)
    assert schedule_left_s(schedule_epochs=10.0, done_epochs=12.0, epoch_time_s=40.0) == 0.0
    assert schedule_left_s(schedule_epochs=None, done_epochs=1.0, epoch_time_s=40.0) == math.inf
    assert schedule_left_s(schedule_epochs=math.inf, done_epochs=1.0, epoch_time_s=40.0) == math.inf
    assert schedule_left_s(schedule_epochs=10.0, done_epochs=1.0, epoch_time_s=math.nan) == math.inf


def test_options_of_different_lengths_are_refused_naming_the_shapes():
    with pytest.raises(ValueError, match=r"one value per option: shapes \(2,\), \(1,\) and \(1,\)"):
        finish_first(p_success=0.5, p_reach=0.5, cost=1.0, finish_cost=0.1, global_batch=np.array([1.0, 2.0]),
                     running_batch=4.0, fallback_p_success=np.array([0.5]), fallback_cost=np.array([1.0]))


@pytest.mark.parametrize("name", ["p_success", "p_reach", "finish_cost"])
def test_a_nan_chance_or_finishing_cost_is_refused_naming_it(name):
    # A NaN passed every comparison as False and came back as P(success) NaN with a fallback named.
    kw = dict(p_success=0.3, p_reach=0.4, cost=1.0, finish_cost=0.5) | {name: math.nan}
    with pytest.raises(ValueError, match=f"{name} is NaN"):
        finish_first(global_batch=np.array([128.0]), running_batch=512.0, fallback_p_success=np.array([0.9]),
                     fallback_cost=np.array([1.0]), **kw)


def test_staying_with_an_infinite_cost_weighs_to_a_cost_that_is_never_nan():
    kw = dict(p_success=0.3, finish_cost=0.5, global_batch=np.array([128.0]), running_batch=512.0,
              fallback_p_success=np.array([0.9]), fallback_cost=np.array([2.0]))
    reaches = finish_first(p_reach=0.4, cost=math.inf, **kw)
    assert reaches.fallback == 0 and reaches.cost == math.inf
    never = finish_first(p_reach=0.0, cost=math.inf, **kw)  # staying's reached branch is empty: 0 · ∞ is not counted
    assert never.fallback == 0 and never.cost == pytest.approx(0.5 + 2.0)
