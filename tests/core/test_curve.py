"""Learning-curve extrapolation (cotune.models._curve): fits, forecasts, prior pooling."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cotune.errors import InputError
from cotune.models._curve import (
    CURVE_PARAM_VAR_CAP,
    CurveFit,
    EpochsPrior,
    best_so_far,
    combine_with_prior,
    extrapolate_curve,
    fit_curve_families,
    forecast_epochs,
    prior_from_model,
)


def _saturating(epochs: np.ndarray) -> np.ndarray:
    return 0.9 - 0.5 * np.exp(-epochs / 5.0)


def test_best_so_far_ignores_a_diverged_evaluation_and_negates_min_goals() -> None:
    e, s = best_so_far([1, 2, 3, 4], [0.3, float("nan"), 0.2, 0.5])
    assert list(e) == [1, 2, 3, 4] and list(s) == [0.3, 0.3, 0.3, 0.5]
    _, loss = best_so_far([2, 1], [1.5, 2.0], goal="min")
    assert list(loss) == [-2.0, -1.5]


def test_a_saturating_curve_is_forecast_inside_its_interval() -> None:
    e = np.arange(1.0, 9.0)  # 8 epochs seen
    truth = 5.0 * math.log(0.5 / 0.05)  # 0.85 first reached at 11.5 epochs
    f = extrapolate_curve(e, _saturating(e), target=0.85)
    assert f.source == "curve" and f.lower <= truth <= f.upper
    assert f.epochs_if_reached == pytest.approx(truth, rel=0.15)
    assert f.p_reach > 0.5 and f.asymptote == pytest.approx(0.9, abs=0.02)


def test_a_higher_target_takes_longer_and_is_less_likely() -> None:
    e = np.arange(1.0, 9.0)
    low, high = (extrapolate_curve(e, _saturating(e), target=t) for t in (0.86, 0.89))
    assert high.epochs_if_reached > low.epochs_if_reached
    assert high.p_reach < low.p_reach
    assert high.upper / high.epochs_if_reached > low.upper / low.epochs_if_reached  # farther out, wider


def test_a_target_already_reached_is_read_off_the_curve() -> None:
    f = extrapolate_curve([1, 2, 3], [0.2, 0.6, 0.8], target=0.7)
    assert f.reached and f.epochs == pytest.approx(2.5) and f.p_reach == 1.0


def test_min_goal_curves_forecast_a_loss_target() -> None:
    e = np.arange(1.0, 9.0)
    loss = 1.0 - _saturating(e)  # 0.1 + 0.5 exp(-e/5)
    f = extrapolate_curve(e, loss, target=0.15, goal="min")
    assert f.lower <= 5.0 * math.log(0.5 / 0.05) <= f.upper
    assert f.asymptote == pytest.approx(0.1, abs=0.02)


def test_a_curve_too_short_to_fit_says_so_and_leaves_the_prior_in_charge() -> None:
    alone = extrapolate_curve([1, 2], [0.3, 0.5], target=0.9)
    assert alone.source == "none" and not math.isfinite(alone.epochs) and "too little to fit" in alone.notes[0]
    with_prior = extrapolate_curve([1, 2], [0.3, 0.5], target=0.9, prior=EpochsPrior(median_epochs=20.0, log_sigma=0.3, p_reach=0.8))
    assert with_prior.source == "prior" and with_prior.epochs_if_reached == pytest.approx(20.0)
    assert with_prior.p_reach == 0.8


def test_a_flat_head_does_not_count_as_rising_points() -> None:
    # A WER stuck at 100 for eight evaluations, then two small improvements: no curve to fit.
    e = np.arange(1.0, 11.0)
    wer = [100.0] * 8 + [99.8, 98.8]
    f = extrapolate_curve(e, wer, target=25.0, goal="min", prior=EpochsPrior(median_epochs=30.0, log_sigma=0.8, p_reach=0.7))
    assert f.source == "prior" and f.epochs_if_reached == pytest.approx(30.0) and "last 3 evaluations" in f.notes[0]


def test_a_curve_that_rises_after_a_flat_head_is_fitted_from_the_rise() -> None:
    e = np.arange(1.0, 15.0)
    late = np.where(e <= 6, 0.4, _saturating(e - 5.0))  # flat until epoch 6, then a saturating rise
    f = extrapolate_curve(e, late, target=0.85)
    assert f.source == "curve" and f.asymptote == pytest.approx(0.9, abs=0.03)
    assert f.lower <= 5.0 + 5.0 * math.log(0.5 / 0.05) <= f.upper


def test_precision_weighting_of_agreeing_estimates_is_their_weighted_log_mean() -> None:
    e = np.arange(1.0, 9.0)
    curve = extrapolate_curve(e, _saturating(e), target=0.85)
    prior = EpochsPrior(median_epochs=curve.epochs_if_reached * 1.1, log_sigma=curve.log_sigma, p_reach=1.0)
    both = combine_with_prior(curve, prior, epochs_seen=8.0, n_points=8)
    assert both.source == "curve+prior"
    assert both.epochs_if_reached == pytest.approx(curve.epochs_if_reached * math.sqrt(1.1))
    assert both.log_sigma == pytest.approx(curve.log_sigma / math.sqrt(2))


def test_a_vague_prior_leaves_the_curve_almost_unchanged() -> None:
    e = np.arange(1.0, 9.0)
    curve = extrapolate_curve(e, _saturating(e), target=0.85)
    both = combine_with_prior(curve, EpochsPrior(median_epochs=100.0, log_sigma=50.0), epochs_seen=8.0, n_points=8)
    assert both.epochs_if_reached == pytest.approx(curve.epochs_if_reached, rel=0.01)


def test_disagreeing_estimates_widen_the_pooled_interval() -> None:
    e = np.arange(1.0, 9.0)
    curve = extrapolate_curve(e, _saturating(e), target=0.85)
    near = combine_with_prior(curve, EpochsPrior(median_epochs=curve.epochs_if_reached, log_sigma=0.1), epochs_seen=8, n_points=8)
    far = combine_with_prior(curve, EpochsPrior(median_epochs=curve.epochs_if_reached * 8, log_sigma=0.1), epochs_seen=8, n_points=8)
    assert far.log_sigma > 2 * near.log_sigma


def test_the_prior_median_is_never_before_the_epochs_already_trained() -> None:
    f = combine_with_prior(None, EpochsPrior(median_epochs=5.0, log_sigma=0.2), epochs_seen=12.0, n_points=1)
    assert f.epochs_if_reached == pytest.approx(12.0)


def test_prior_from_the_fitted_accuracy_model_is_finite_at_a_measured_batch(cifar_models) -> None:
    prior = prior_from_model(cifar_models.accuracy, global_batch=512, target=0.9)
    assert prior is not None and prior.median_epochs > 1 and 0 < prior.log_sigma < 3 and 0 <= prior.p_reach <= 1


def test_fit_weights_are_a_distribution_over_the_saturating_families() -> None:
    e = np.arange(1.0, 11.0)
    fits, lo, rise, seen = fit_curve_families(*best_so_far(e, _saturating(e)))
    sat = [f for f in fits if f.family != "loglin"]
    assert {f.family for f in sat} == {"pow3", "exp3", "mmf"} and sum(f.weight for f in sat) == pytest.approx(1.0)
    assert seen == 10.0 and rise > 0


@pytest.mark.parametrize("kwargs, match", [
    ({"goal": "up"}, "goal must be"), ({"interval": 1.5}, "interval must be"), ({"target": float("nan")}, "target must be"),
])
def test_bad_arguments_are_one_input_error(kwargs: dict, match: str) -> None:
    args = {"target": 0.9} | kwargs
    with pytest.raises(InputError, match=match):
        extrapolate_curve([1, 2, 3], [0.1, 0.2, 0.3], **args)


def test_prior_from_a_deterministic_prediction_reads_the_spread_off_its_interval() -> None:
    from types import SimpleNamespace

    class Model:
        def epochs_to_target(self, b, t):
            return SimpleNamespace(epochs=np.array([10.0]), lower=np.array([5.0]), upper=np.array([20.0]),
                                   epochs_if_reached=None, log_sigma=None, p_reach=None)

    prior = prior_from_model(Model(), global_batch=64, target=0.9, interval=0.9)
    assert prior.median_epochs == 10.0 and prior.p_reach == 1.0
    assert prior.log_sigma == pytest.approx(math.log(4.0) / (2 * 1.6448536), rel=1e-4)


def test_a_stalled_curve_reads_the_same_at_every_further_flat_evaluation() -> None:
    # One step up, then the same best value at every evaluation (a job stalled below its
    # target, as a replayed BERT job was): each further flat point adds no evidence of a
    # trend, so the forecast must not flip between "never" and "some day" with the
    # least-squares slope's rounding noise.
    prior = EpochsPrior(median_epochs=1.686, log_sigma=0.31, p_reach=0.998)
    reads = []
    for n in range(6, 24):
        epochs = 1.071 + 0.0407 * np.arange(n)
        metric = np.r_[86.7094, np.full(n - 1, 86.9089)]
        f = extrapolate_curve(epochs, metric, target=87.5, prior=prior)
        reads.append((f.source, round(f.p_reach, 2)))
    sources = {s for s, _ in reads}
    ps = [p for _, p in reads]
    assert sources == {"prior"}, reads  # the curve cannot say when; its reach pools with the prior's
    assert max(ps) - min(ps) <= 0.02, reads
    assert max(ps) < 0.9, reads  # the stalled curve's doubt is heard


def _noisy_exp3(seed: int, *, noise: float, points: int = 10) -> tuple[np.ndarray, np.ndarray, float, float]:
    """A seeded exp3 curve seen up to 1.2 time constants with Gaussian evaluation noise:
    (epochs, metric, target, the clean curve's epochs to it — 2.5 time constants)."""
    rng = np.random.default_rng(seed)
    a, b, tau = rng.uniform(0.8, 0.95), rng.uniform(0.4, 0.7), rng.uniform(3.0, 12.0)
    e = np.linspace(tau / 4.0, 1.2 * tau, points)
    y = a - b * np.exp(-e / tau) + rng.normal(0.0, noise, e.size)
    return e, y, a - b * math.exp(-2.5), 2.5 * tau


@pytest.mark.slow  # 120 fits: about 15 s on 2 cores
def test_the_parameter_uncertainty_alone_covers_a_seeded_synthetic_truth() -> None:
    # With κ = 0 the interval is the fit's own: which family, and how loosely the noisy
    # points pin it. The truth is one of the families, so that is the whole error and the
    # 90 % interval must cover about 90 % (without the parameter term: 51 %).
    hits = []
    for seed in range(120):
        e, y, target, truth = _noisy_exp3(seed, noise=0.005)
        f = extrapolate_curve(e, y, target=target, kappa=0.0)
        if math.isfinite(f.epochs_if_reached):
            hits.append(f.lower <= truth <= f.upper)
    assert len(hits) >= 100
    assert 0.85 <= float(np.mean(hits)) <= 0.99


def test_a_curve_that_cannot_pin_its_asymptote_keeps_a_finite_interval() -> None:
    # Four rising points, a target just under where they point: the crossing is very
    # uncertain, capped (CURVE_PARAM_VAR_CAP) so the interval is wide but finite.
    e = np.arange(1.0, 7.0)
    y = 0.9 - 0.5 * np.exp(-e / 6.0) + np.array([0.0, 0.01, -0.01, 0.01, -0.01, 0.0])
    f = extrapolate_curve(e, y, target=0.85, kappa=0.0)
    assert f.source == "curve" and math.isfinite(f.upper)
    assert f.log_sigma <= math.sqrt(0.05**2 + CURVE_PARAM_VAR_CAP + 1.0)  # floor, cap, disagreement (< 1)


@settings(max_examples=25, deadline=None)
# A median one ulp below the epochs seen (6.999999999999999) under a lower end floored at them (7.0).
@example(rises=[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0], noise=[0.0] * 14, start=0.0, reach=0.03125, goal="max")
@given(
    rises=st.lists(st.floats(min_value=0.0, max_value=1e3, allow_nan=False), min_size=1, max_size=14),
    noise=st.lists(st.floats(min_value=-50.0, max_value=50.0, allow_nan=False), min_size=14, max_size=14),
    start=st.floats(min_value=-1e4, max_value=1e4, allow_nan=False),
    reach=st.floats(min_value=-2.0, max_value=3.0, allow_nan=False),
    goal=st.sampled_from(["max", "min"]),
)
def test_any_curve_gives_an_ordered_forecast_or_none(rises, noise, start, reach, goal) -> None:
    # Whatever the curve (flat, noisy, huge, a single step), the forecast is a distribution:
    # finite or infinite, never NaN, its interval around its median, a probability in [0, 1].
    e = np.arange(1.0, len(rises) + 1.0)
    metric = start + np.cumsum(rises) + np.array(noise[: len(rises)])
    span = float(np.ptp(metric)) or 1.0
    score_target = float(metric.max()) + reach * span  # in score units: above the best seen when reach > 0
    sign = 1.0 if goal == "max" else -1.0  # a "min" metric is the negated score (a loss)
    f = extrapolate_curve(e, sign * metric, target=sign * score_target, goal=goal)
    assert 0.0 <= f.p_reach <= 1.0
    assert not any(math.isnan(v) for v in (f.epochs, f.epochs_if_reached, f.lower, f.upper, f.log_sigma))
    if math.isfinite(f.epochs_if_reached):
        assert f.lower <= f.epochs_if_reached <= f.upper and f.log_sigma >= 0.0


def test_a_fit_whose_covariance_is_not_finite_pins_nothing() -> None:
    # A degenerate fit (a Jacobian that is not finite) must widen the forecast by the cap,
    # not read as a perfectly pinned curve; a fit made by hand (no covariance) adds nothing.
    fit = CurveFit(family="exp3", params=(1.2, 1.5, 2.0), asymptote=1.2, aicc=0.0, weight=1.0)
    inf = ((math.inf,) * 3,) * 3
    plain, loose = (forecast_epochs([f], threshold=1.1, epoch_seen=10.0, n_points=8, kappa=0.0)
                    for f in (fit, replace(fit, cov=inf)))
    assert loose[2] ** 2 == pytest.approx(plain[2] ** 2 + CURVE_PARAM_VAR_CAP)
    assert loose[1] == plain[1]  # the median does not move
