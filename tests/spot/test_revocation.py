"""The analytic revocation model: limits, Young/Daly choice, agreement with the simulator."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune.spot import (
    expected_time_for_segments,
    revocation_estimate,
    simulate,
    time_at_confidence_s,
    young_daly_interval_s,
)
from cotune.spot._revocation import MAX_SEGMENTS, MIN_CHECKPOINT_INTERVAL_S

works = st.floats(min_value=60.0, max_value=3600.0 * 48)
rates = st.floats(min_value=0.0, max_value=20.0 / 3600.0)
deltas = st.floats(min_value=1.0, max_value=600.0)
restarts = st.floats(min_value=0.0, max_value=1800.0)


def test_zero_revocations_equal_the_on_demand_model():
    w = np.array([10.0, 3600.0, 86400.0])
    est = revocation_estimate(work_s=w, rate_per_s=0.0, checkpoint_write_s=30.0, restart_s=120.0)
    np.testing.assert_array_equal(est.expected_time_s, w)
    np.testing.assert_array_equal(est.segments, 1.0)
    np.testing.assert_array_equal(est.expected_revocations, 0.0)
    for q in (0.5, 0.9, 0.999):
        np.testing.assert_array_equal(time_at_confidence_s(est, q), w)


def test_young_daly_formula():
    assert young_daly_interval_s(checkpoint_write_s=20.0, rate_per_s=0.1 / 3600) == pytest.approx(np.sqrt(2 * 20 * 36000))
    assert np.isinf(young_daly_interval_s(checkpoint_write_s=20.0, rate_per_s=0.0))


@pytest.mark.parametrize("work", [1800.0, 4 * 3600.0, 30 * 3600.0])
@pytest.mark.parametrize("rate_h", [0.05, 0.5, 4.0])
@pytest.mark.parametrize("delta", [5.0, 60.0])
def test_chosen_segments_are_the_exact_optimum(work, rate_h, delta):
    lam, restart = rate_h / 3600.0, 180.0
    est = revocation_estimate(work_s=work, rate_per_s=lam, checkpoint_write_s=delta, restart_s=restart)
    ks = np.arange(1, 3001, dtype=float)
    brute = expected_time_for_segments(np.full(ks.shape, work), ks, lam, delta, restart)
    assert float(est.expected_time_s) == pytest.approx(brute.min(), rel=1e-12)
    assert float(est.segments) == ks[np.argmin(brute)]


@settings(max_examples=150, deadline=None)
@given(work=works, r1=rates, r2=rates, delta=deltas, restart=restarts)
def test_expected_time_never_decreases_with_the_revocation_rate(work, r1, r2, delta, restart):
    lo, hi = sorted((r1, r2))
    a = revocation_estimate(work_s=work, rate_per_s=lo, checkpoint_write_s=delta, restart_s=restart)
    b = revocation_estimate(work_s=work, rate_per_s=hi, checkpoint_write_s=delta, restart_s=restart)
    # at equal prices cost is proportional to time, so this is the cost property too
    assert float(b.expected_time_s) >= float(a.expected_time_s) * (1 - 1e-12)
    assert float(a.expected_time_s) >= work * (1 - 1e-12)


@settings(max_examples=150, deadline=None)
@given(work=works, rate=rates, delta=deltas, restart=restarts, q1=st.floats(0.01, 0.99), q2=st.floats(0.01, 0.99))
def test_higher_confidence_never_promises_a_shorter_time(work, rate, delta, restart, q1, q2):
    est = revocation_estimate(work_s=work, rate_per_s=rate, checkpoint_write_s=delta, restart_s=restart)
    lo, hi = sorted((q1, q2))
    assert float(time_at_confidence_s(est, hi)) >= float(time_at_confidence_s(est, lo)) - 1e-9
    assert float(time_at_confidence_s(est, 0.99)) >= float(time_at_confidence_s(est, 0.5)) - 1e-9


# Analytic vs Monte-Carlo over rates × job sizes (servers) × checkpoint intervals.
GRID = [
    (work_h, rate_h, servers, stretch)
    for work_h in (2.0, 12.0)
    for rate_h in (0.05, 0.3, 1.0)
    for servers in (1, 8)
    for stretch in (1.0, 1 / 3, 3.0)  # checkpoint interval × stretch; 1: the chosen one
]


@pytest.mark.parametrize("work_h,rate_h,servers,stretch", GRID)
def test_analytic_matches_simulation(work_h, rate_h, servers, stretch):
    work, lam, delta, restart = work_h * 3600, servers * rate_h / 3600, 45.0, 240.0
    best = revocation_estimate(work_s=work, rate_per_s=lam, checkpoint_write_s=delta, restart_s=restart)
    k = max(1.0, round(float(best.segments) / stretch))
    est = revocation_estimate(work_s=work, rate_per_s=lam, checkpoint_write_s=delta, restart_s=restart, segments=k)
    sim = simulate(work_s=work, rate_per_s=lam, checkpoint_interval_s=est.checkpoint_interval_s,
                   checkpoint_write_s=delta, restart_s=restart, runs=2000, seed=7)
    t = sim.time_s
    # expected time (and, at equal price, cost) within 3 %
    assert float(t.mean()) == pytest.approx(float(est.expected_time_s), rel=0.03)
    # the mean revocation count within 5 % (or 0.1 when it is tiny)
    assert float(sim.revocations.mean()) == pytest.approx(float(est.expected_revocations), rel=0.05, abs=0.1)
    # promises hold: the simulated share finishing by T_q is at least q (minus MC noise)
    for q in (0.5, 0.9, 0.95):
        tq = float(time_at_confidence_s(est, q))
        assert (t <= tq * (1 + 1e-12)).mean() >= q - 0.02, (q, tq)


def test_simulator_is_seeded_and_exact_without_revocations():
    kw = dict(work_s=7200.0, rate_per_s=1 / 3600, checkpoint_interval_s=600.0, checkpoint_write_s=10.0, restart_s=60.0, runs=50)
    a, b = simulate(seed=3, **kw), simulate(seed=3, **kw)
    np.testing.assert_array_equal(a.time_s, b.time_s)
    assert not np.array_equal(a.time_s, simulate(seed=4, **kw).time_s)
    z = simulate(**{**kw, "rate_per_s": 0.0})
    np.testing.assert_allclose(z.time_s, 7200.0 + 11 * 10.0)  # 12 segments, 11 checkpoints
    np.testing.assert_array_equal(z.revocations, 0)


def test_a_configuration_with_its_own_stream_gets_the_same_runs_whatever_is_simulated_beside_it():
    # One shared stream handed a configuration the draws the rows before it left: the spot
    # stage priced one mixed row 3 % apart in two searches.
    kw = dict(rate_per_s=2 / 3600, checkpoint_interval_s=300.0, checkpoint_write_s=10.0, restart_s=60.0, runs=50,
              seed=7, policy="mixed", switch_s=60.0)
    alone = simulate(work_s=3600.0, schedule_s=4000.0, streams=[(2, 257)], **kw)
    beside = simulate(work_s=np.array([9000.0, 3600.0]), schedule_s=np.array([9500.0, 4000.0]),
                      streams=[(4, 129), (2, 257)], **kw)
    np.testing.assert_array_equal(beside.time_s[1], alone.time_s)
    np.testing.assert_array_equal(beside.on_demand_time_s[1], alone.on_demand_time_s)


def test_mixed_policy_meets_its_schedule_and_costs_between_markets():
    # spot alone is too slow for this schedule; the rule falls back to on-demand when behind
    work, lam, tau, delta, restart = 4 * 3600.0, 4 / 3600.0, 900.0, 30.0, 300.0
    margin = tau + delta + restart
    deadline = 5.5 * 3600.0
    sim = simulate(work_s=work, rate_per_s=lam, checkpoint_interval_s=tau, checkpoint_write_s=delta, restart_s=restart,
                   runs=1000, seed=1, policy="mixed", schedule_s=deadline - margin, switch_s=restart)
    assert (sim.time_s <= deadline).mean() == 1.0
    spot = simulate(work_s=work, rate_per_s=lam, checkpoint_interval_s=tau, checkpoint_write_s=delta, restart_s=restart, runs=1000, seed=1)
    assert (spot.time_s <= deadline).mean() < 0.5
    share = sim.on_demand_time_s.sum() / sim.time_s.sum()
    assert 0.05 < share < 0.95
    cost = sim.cost(workers=1, spot_price_per_hour=0.3, on_demand_price_per_hour=1.0).mean()
    assert 0.3 * work / 3600 < cost < 1.0 * deadline / 3600


@pytest.mark.parametrize("work_s", [1e12, 1e15])
def test_hopeless_work_takes_forever_and_is_never_nan(work_s):
    # Revocations so frequent against so much work that no checkpointing finishes it:
    # the expected time and its quantile are ∞ (an option to rule out), not NaN.
    r = revocation_estimate(work_s=work_s, rate_per_s=0.4 / 3600, checkpoint_write_s=20.0, restart_s=150.0)
    assert np.isinf(r.expected_time_s) and np.isinf(r.expected_revocations)
    assert np.isfinite(r.penalty_s) and np.isinf(time_at_confidence_s(r, 0.9))


def test_the_revocation_count_quantile_is_normal_for_huge_counts_and_stays_exact_below():
    # Far quantiles of a wide spread give training times whose expected revocation count
    # is astronomically large; SciPy's discrete search never returns near 1e60.
    from scipy import stats

    from cotune.spot._revocation import revocation_quantile

    mean = np.array([3.0, 5e5, 2e6, 1e60, 1e200])
    var = 2.0 * mean
    got = revocation_quantile(mean, var, 0.9)
    p = mean[:3] / var[:3]
    exact = stats.nbinom.ppf(0.9, mean[:3] * p / (1 - p), p)
    assert got[:2] == pytest.approx(exact[:2], abs=0)  # below the switch: the negative binomial itself
    assert got[2] == pytest.approx(exact[2], rel=1e-6)  # above it: the normal, within a count or two
    assert np.all(np.isfinite(got)) and got[3] == pytest.approx(1e60, rel=1e-9)


def test_a_hopeless_segment_count_is_infinite_time_without_an_overflow_warning():
    import warnings

    from cotune.spot._revocation import expected_time_for_segments

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = expected_time_for_segments(np.array([1e8]), np.array([1e5]), np.array([0.7]), np.array([0.0]), np.array([1.0]))
    assert np.isinf(got).all()


def test_a_huge_revocation_count_of_unbounded_variance_has_a_median_not_nan():
    from cotune.spot import revocation_quantile

    mean, var = np.array([1e7, 1e7]), np.array([np.inf, 2e7])
    assert revocation_quantile(mean, var, 0.5).tolist() == [1e7, 1e7]
    assert revocation_quantile(mean, var, 0.9)[0] == np.inf and revocation_quantile(mean, var, 0.1)[0] == 0.0


def _sim_quantile_check(work, rate_h, delta, restart, q, runs, segments=None):
    """(share of simulated runs done by T_q, share done strictly before it, the tolerance):
    T_q is a q-quantile of the simulation when the first is ≥ q and the second ≤ q, each
    within four standard errors of a share of ``runs`` (an atom — no revocation at all — makes
    the first exceed q by its mass)."""
    est = revocation_estimate(work_s=work, rate_per_s=rate_h / 3600, checkpoint_write_s=delta, restart_s=restart,
                              segments=segments)
    t_q = float(time_at_confidence_s(est, q))
    tau = float(est.checkpoint_interval_s)
    sim = simulate(work_s=work, rate_per_s=rate_h / 3600, checkpoint_interval_s=tau if np.isfinite(tau) else work,
                   checkpoint_write_s=delta, restart_s=restart, runs=runs, seed=11).time_s.ravel()
    tol = 4.0 * np.sqrt(q * (1 - q) / runs)
    return np.mean(sim <= t_q * (1 + 1e-9)), np.mean(sim < t_q * (1 - 1e-4)), tol


@pytest.mark.parametrize("work, rate_h, delta, restart", [
    (918.86, 0.5, 20.0, 150.0), (918.86, 1.0, 20.0, 150.0),  # 4 x t4 at 1400 s: one revocation at most, mostly
    (3600.0, 2.0, 20.0, 150.0), (20000.0, 0.5, 5.0, 600.0),  # a few, and many with a long restart
])
@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
def test_time_at_confidence_is_the_simulated_quantile(work, rate_h, delta, restart, q):
    # The count quantile plus a tail said 1498 s where 1181 s was the simulated 0.9-quantile.
    at_or_before, before, tol = _sim_quantile_check(work, rate_h, delta, restart, q, runs=20_000)
    assert at_or_before >= q - tol and before <= q + tol, (at_or_before, before, tol)


@pytest.mark.parametrize("work, segments", [(1200.0, 1), (918.86, 3), (20000.0, 40)])
@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
def test_time_at_confidence_never_falls_as_the_revocation_rate_rises(work, segments, q):
    # With one segment, T_0.9 was 2377 s at 0.5/h and 2359 s at 1.0/h: n_q stayed 1 while the
    # work lost per revocation shrank, so a riskier market gave a cheaper promise.
    rates = np.linspace(0.0, 12.0, 97) / 3600
    est = revocation_estimate(work_s=work, rate_per_s=rates, checkpoint_write_s=20.0, restart_s=150.0, segments=segments)
    t = time_at_confidence_s(est, q)
    assert np.all(np.diff(t) >= -1e-6 * t[1:]), t


def test_a_free_checkpoint_is_written_as_often_as_the_segment_cap_allows():
    # write_s = 0 gave τ_YD = 0, a fallback to k0 = 1 and 4 segments: E[T] 4826 s where
    # 1 ms per checkpoint gave 3724 s.
    free = revocation_estimate(work_s=3600.0, rate_per_s=2 / 3600, checkpoint_write_s=0.0, restart_s=60.0)
    nearly = revocation_estimate(work_s=3600.0, rate_per_s=2 / 3600, checkpoint_write_s=0.001, restart_s=60.0)
    # As often as a plan may checkpoint: every MIN_CHECKPOINT_INTERVAL_S of training (100,000
    # segments read "every 0.0 s" and left mixed plans out).
    assert float(free.segments) == 3600.0 / MIN_CHECKPOINT_INTERVAL_S
    assert float(free.expected_time_s) == pytest.approx(float(nearly.expected_time_s), rel=0.01)
