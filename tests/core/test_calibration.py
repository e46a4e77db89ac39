"""Calibration of the reach and success probabilities on seeded synthetic truth."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune._checks import BadValue
from cotune.models._accuracy import PLATEAU_WALK_NODES, PLATEAU_WALK_OPTIMA, reach_probability, walk_prior_nodes
from cotune.models._normal import norm_cdf
from cotune.models._shape import EPOCHS_ERROR_SHAPE
from cotune.solver import Candidates, Estimates, success_probability


def _ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    k = np.minimum((p * bins).astype(int), bins - 1)
    return float(sum(abs(p[k == i].mean() - y[k == i].mean()) * np.sum(k == i) for i in range(bins) if np.any(k == i)) / p.size)


def test_the_reach_mixture_is_calibrated_where_the_plateau_drift_differs_between_workloads() -> None:
    # Seeded truth: every workload has its own drift rate τ_w (one of the nodes, as the
    # mixture assumes); a batch d doublings away reaches the target when its plateau,
    # the measured margin plus a N(0, (τ_w·d·range)²) drift plus evaluation noise, is above it.
    rng = np.random.default_rng(0)
    n, sigma, rise = 60_000, 0.002, 0.3
    tau = rng.choice(np.array(PLATEAU_WALK_NODES), size=n)
    d = rng.uniform(0.5, 5.0, size=n)
    margin = rng.normal(0.0, 0.03, size=n)
    reached = margin + rng.normal(0.0, 1.0, size=n) * np.sqrt(sigma**2 + (tau * d * rise) ** 2) > 0
    mixture = reach_probability(margin, np.full(n, sigma), d * rise, np.array(PLATEAU_WALK_NODES))
    single = reach_probability(margin, np.full(n, sigma), d * rise, np.array([np.median(PLATEAU_WALK_NODES)]))
    assert _ece(mixture, reached) < 0.015
    assert _ece(single, reached) > 2 * _ece(mixture, reached)
    # The one-value model is overconfident at the top: its ≥ 0.9 bin reaches less often than it says.
    top = single >= 0.9
    assert reached[top].mean() < single[top].mean() - 0.03


@settings(max_examples=60, deadline=None)
@given(
    margin=st.floats(-0.2, 0.2),
    sigma=st.floats(1e-3, 0.05),
    scale=st.floats(0.0, 3.0),
    nodes=st.lists(st.floats(1e-4, 0.2), min_size=1, max_size=6),
)
def test_reach_probability_is_the_mean_of_its_nodes_and_one_node_is_a_plain_normal(margin, sigma, scale, nodes) -> None:
    p = float(reach_probability(np.array([margin]), np.array([sigma]), np.array([scale]), np.array(nodes))[0])
    each = [float(norm_cdf(margin / np.sqrt(sigma**2 + (t * scale) ** 2))) for t in nodes]
    assert p == pytest.approx(np.mean(each), abs=1e-12)
    assert min(each) - 1e-12 <= p <= max(each) + 1e-12
    # a wider spread pulls the probability towards ½, never across it
    assert (p - 0.5) * (each[0] - 0.5) >= -1e-12


def test_a_new_workload_drifts_beyond_the_top_walk_node_as_often_as_the_predictive_says() -> None:
    # Seeded truth: workloads' drift rates are log-normal around an unknown centre. Six are
    # measured, the prior's nodes fitted on them, and a seventh drawn. The nodes are
    # quantiles of the plug-in predictive N(mean, s²(1 + 1/n)) of log τ, so the new draw
    # lies above the top one (nominal 1/(2k)) as often as a Student t with n − 1 degrees of
    # freedom lies above that quantile's z — scipy's t, not the code under test. The six
    # optima themselves as nodes leave 1/7 of new workloads beyond everything measured.
    from scipy import stats

    rng = np.random.default_rng(3)
    reps, n, k = 20_000, 6, 9
    centre = rng.normal(-4.5, 1.0, size=reps)
    measured = np.exp(centre[:, None] + 1.3 * rng.normal(size=(reps, n)))
    new = np.exp(centre + 1.3 * rng.normal(size=reps))
    top = np.array([walk_prior_nodes(m, size=k)[-1] for m in measured])
    expected = stats.t.sf(stats.norm.ppf(1 - 0.5 / k), df=n - 1)
    assert np.mean(new > top) == pytest.approx(expected, abs=0.01)
    assert np.mean(new > measured.max(axis=1)) == pytest.approx(1 / (n + 1), abs=0.01)
    assert expected < 1 / (n + 1) - 0.04


def test_walk_prior_nodes_are_log_normal_quantiles_centred_on_the_optima_geometric_mean() -> None:
    nodes = np.array(walk_prior_nodes(PLATEAU_WALK_OPTIMA))
    logs = np.log(PLATEAU_WALK_OPTIMA)
    assert nodes.size == 9 and np.all(np.diff(nodes) > 0)
    assert np.exp(np.log(nodes).mean()) == pytest.approx(np.exp(logs.mean()), rel=1e-9)
    assert nodes[4] == pytest.approx(np.exp(logs.mean()), rel=1e-9)
    # the widest node is further out than the furthest measured workload: mass beyond BERT's
    assert nodes[-1] > max(PLATEAU_WALK_OPTIMA) and nodes[0] < min(PLATEAU_WALK_OPTIMA)
    assert tuple(nodes) == PLATEAU_WALK_NODES


def test_walk_prior_of_one_workload_is_that_workload_alone() -> None:
    assert walk_prior_nodes([0.02]) == (pytest.approx(0.02),)


@pytest.mark.parametrize("bad", [[], [0.0, 0.01], [-0.01, 0.02], [float("nan"), 0.01]])
def test_walk_prior_refuses_optima_that_are_not_positive_numbers(bad) -> None:
    with pytest.raises(BadValue, match="must be one or more numbers > 0"):
        walk_prior_nodes(bad)


def _estimates(p_reach: np.ndarray, time_if_reached_s: np.ndarray, sigma: float) -> Estimates:
    n = p_reach.size
    cands = Candidates(gpus=("t4",), markets=("on_demand",), gpu=np.zeros(n, np.int32), market=np.zeros(n, np.int32),
                       workers=np.ones(n, np.int64), hosts=np.ones(n, np.int64), local_batch=np.full(n, 32, np.int64))
    epochs = np.where(p_reach >= 0.5, 10.0, np.inf)  # the point prediction: ∞ below ½
    t = np.where(np.isfinite(epochs), time_if_reached_s, np.inf)
    one = np.ones(n)
    return Estimates(
        candidates=cands, step_time_s=one, epoch_time_s=time_if_reached_s / 10.0, epochs=epochs, epochs_lower=epochs,
        epochs_upper=epochs, time_s=t, time_lower_s=t, time_upper_s=t, time_at_confidence_s=t, cost=t, cost_lower=t,
        cost_upper=t, price_per_hour=one, time_extrapolated=np.zeros(n, bool), epochs_extrapolated=np.zeros(n, bool),
        p_reach=p_reach, log_sigma_time=np.full(n, sigma), epochs_distance=np.zeros(n), step_log_sigma=np.zeros(n),
        time_if_reached_s=time_if_reached_s,
    )


def test_success_probability_is_continuous_across_reach_one_half() -> None:
    # Seeded truth: reach with probability p, then a time around 1000 s whose log error is
    # 0.2 × the epochs error shape (all the spread is epochs': step_log_sigma is 0), drawn
    # component by component.
    p = np.array([0.30, 0.45, 0.49, 0.51, 0.55, 0.9])
    est = _estimates(p, np.full(p.size, 1000.0), 0.2)
    got = success_probability(est, deadline_s=1100.0)
    rng = np.random.default_rng(1)
    runs = 200_000
    shape = EPOCHS_ERROR_SHAPE
    for i, pi in enumerate(p):
        scale = np.array(shape.scales)[rng.choice(len(shape.weights), size=runs, p=shape.weights)]
        t = 1000.0 * np.exp(0.2 * scale * rng.standard_normal(runs))
        truth = np.mean((rng.uniform(size=runs) < pi) & (t <= 1100.0))
        assert got[i] == pytest.approx(truth, abs=0.005)
    # no cliff at ½: 0.49 and 0.51 differ by about the reach difference, not by everything
    assert got[3] - got[2] < 0.02 and got[2] > 0.3
    assert np.all(np.diff(got) > 0)


def test_a_start_up_that_dwarfs_the_training_leaves_p_success_at_p_reach() -> None:
    # 5e14 s of start-up and a millisecond of training: (start-up + training) − start-up is
    # 0 in doubles. The +∞ log slack became the largest double, Φ of it NaN (for spreads
    # of 1 to 11 in log time), and the near-tie rule raised "cannot convert float NaN to
    # integer" inside cotune.recommend (found by fuzzing valid profiles).
    startup = 5e14
    p = np.array([1.0, 0.8, 0.6])
    est = _estimates(p, np.full(p.size, startup + 1e-3), 2.0)
    got = success_probability(est, deadline_s=1e15, startup_s=startup)
    assert np.array_equal(got, p)


def _priced_estimates(p_reach: np.ndarray, time_if_reached_s: np.ndarray, workers: np.ndarray, sigma: float) -> Estimates:
    n = p_reach.size
    cands = Candidates(gpus=("t4",), markets=("on_demand",), gpu=np.zeros(n, np.int32), market=np.zeros(n, np.int32),
                       workers=workers.astype(np.int64), hosts=np.ones(n, np.int64), local_batch=np.full(n, 32, np.int64))
    price = np.full(n, 3.6)  # USD per worker-hour: a worker-second costs $0.001
    rate = workers * price / 3600.0
    epochs = np.where(p_reach >= 0.5, 10.0, np.inf)
    t = np.where(np.isfinite(epochs), time_if_reached_s, np.inf)
    return Estimates(
        candidates=cands, step_time_s=np.ones(n), epoch_time_s=time_if_reached_s / 10.0, epochs=epochs, epochs_lower=epochs,
        epochs_upper=epochs, time_s=t, time_lower_s=t, time_upper_s=t, time_at_confidence_s=t, cost=rate * t,
        cost_lower=rate * t, cost_upper=rate * t, price_per_hour=price, time_extrapolated=np.zeros(n, bool),
        epochs_extrapolated=np.zeros(n, bool), p_reach=p_reach, log_sigma_time=np.full(n, sigma),
        epochs_distance=np.zeros(n), step_log_sigma=np.zeros(n), time_if_reached_s=time_if_reached_s,
    )


def test_success_within_a_budget_matches_seeded_draws_of_time_and_cost() -> None:
    # Seeded truth: reach with probability p, then a time around 1000 s (the epochs error
    # shape, σ = 0.2); the job costs workers × $0.001 a second. Success: reached, ended by
    # the deadline, and spent at most the budget. Workers 1 / 2 / 4 put the budget's own
    # end (B / r = 2000 / 1000 / 500 s) after, near and before the deadline (1100 s).
    p = np.array([0.95, 0.95, 0.95, 0.45])
    workers = np.array([1, 2, 4, 2])
    est = _priced_estimates(p, np.full(p.size, 1000.0), workers, 0.2)
    got = success_probability(est, deadline_s=1100.0, budget=2.0)
    rng = np.random.default_rng(2)
    runs = 200_000
    shape = EPOCHS_ERROR_SHAPE
    for i in range(p.size):
        scale = np.array(shape.scales)[rng.choice(len(shape.weights), size=runs, p=shape.weights)]
        t = 1000.0 * np.exp(0.2 * scale * rng.standard_normal(runs))
        truth = np.mean((rng.uniform(size=runs) < p[i]) & (t <= 1100.0) & (workers[i] * 0.001 * t <= 2.0))
        assert got[i] == pytest.approx(truth, abs=0.005)
    # The budget binds only where it ends before the deadline.
    alone = success_probability(est, deadline_s=1100.0)
    assert got[0] == alone[0] and got[1] < alone[1] and got[2] < 0.01 < alone[2]


def test_a_budget_alone_is_the_deadline_at_which_the_job_spends_it() -> None:
    p = np.array([0.99, 0.7])
    est = _priced_estimates(p, np.array([800.0, 1200.0]), np.array([3, 1]), 0.3)
    by_budget = success_probability(est, deadline_s=None, budget=1.5)
    for i, r in enumerate(np.array([3, 1]) * 0.001):
        alone = success_probability(est.take(np.array([i])), deadline_s=1.5 / r)
        assert by_budget[i] == pytest.approx(float(alone[0]), rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    budget=st.floats(0.05, 2.0),
    deadline_s=st.one_of(st.none(), st.floats(300.0, 20_000.0)),
    q=st.floats(0.5, 0.99),
)
def test_feasible_at_q_with_a_budget_is_p_success_at_least_q(cifar_models, budget, deadline_s, q) -> None:
    # `--confidence q` means P(success) ≥ q with a budget as with a deadline: the solver's
    # feasibility (cost at confidence ≤ budget, time at confidence ≤ deadline) and the
    # probability it reports agree on every candidate the models think reach the target.
    from cotune.solver import SearchSpace, enumerate_candidates, estimate, feasibility, with_success

    space = SearchSpace(gpus=("t4",), max_workers={"t4": 16}, local_batches={"t4": (64, 128, 256)}, gpus_per_host=4)
    est = estimate(enumerate_candidates(space), cifar_models, target=0.93, price_per_hour=np.full((1, 1), 0.526),
                   confidence=q)
    est = with_success(est, deadline_s=deadline_s, budget=budget)
    feas = feasibility(est, deadline_s=deadline_s, budget=budget, confidence=q).all
    judged = est.p_reach >= q
    clear = np.abs(est.p_success - q) > 1e-6  # the boundary itself is float noise
    assert np.array_equal(feas[judged & clear], (est.p_success >= q)[judged & clear])
    assert not feas[~judged].any()


@settings(max_examples=40, deadline=None)
@given(
    b1=st.floats(0.01, 5.0),
    b2=st.floats(0.01, 5.0),
    deadline_s=st.one_of(st.none(), st.floats(100.0, 5000.0)),
    startup_s=st.floats(0.0, 300.0),
)
def test_a_larger_budget_never_lowers_the_chance_and_none_is_the_largest(b1, b2, deadline_s, startup_s) -> None:
    p = np.array([0.95, 0.6, 0.4])
    est = _priced_estimates(p, np.array([900.0, 1500.0, 700.0]), np.array([1, 2, 4]), 0.25)
    lo, hi = sorted((b1, b2))
    small = success_probability(est, deadline_s=deadline_s, startup_s=startup_s, budget=lo)
    large = success_probability(est, deadline_s=deadline_s, startup_s=startup_s, budget=hi)
    free = success_probability(est, deadline_s=deadline_s, startup_s=startup_s)
    assert np.all(small <= large + 1e-12) and np.all(large <= free + 1e-12)
    assert np.all((0.0 <= small) & (free <= p + 1e-12))
