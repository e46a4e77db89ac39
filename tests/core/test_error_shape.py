"""The error shape: a scale mixture of normals for the models' standardised log errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune.models._shape import (
    EPOCHS_ERROR_SHAPE,
    NORMAL_SHAPE,
    STEP_ERROR_SHAPE,
    TABLE_FROM_ROWS,
    ErrorShape,
    fit_error_shape,
    time_error_cdf,
    time_error_ppf,
)

_Z90 = 1.6448536269514722


def _draw(shape: ErrorShape, n: int, rng: np.random.Generator) -> np.ndarray:
    k = rng.choice(len(shape.weights), size=n, p=shape.weights)
    return np.array(shape.scales)[k] * rng.standard_normal(n)


@pytest.mark.parametrize("shape", [STEP_ERROR_SHAPE, EPOCHS_ERROR_SHAPE])
def test_a_shipped_shape_keeps_the_calibrated_90_percent_interval(shape: ErrorShape) -> None:
    # The σ of every model is calibrated so that ±1.645 σ covers 90 %; the shape must not move that.
    assert shape.coverage(_Z90) == pytest.approx(0.90, abs=1e-3)
    # ... and is no lighter-tailed than the normal on either side of it: at least its mass near
    # 0, more far out (the step shape by far: 0.63 and 0.94; the epochs shape, near-normal
    # since the law's noise scale is measured before each target, 0.505 and 0.985).
    assert shape.coverage(0.6745) >= 0.5
    assert shape.coverage(2.5758) < 0.99


def test_the_normal_shape_is_the_standard_normal() -> None:
    assert NORMAL_SHAPE.coverage(_Z90) == pytest.approx(0.9, abs=1e-9)
    x = time_error_ppf(0.95, sigma_step=0.3, sigma_epochs=0.4, step=NORMAL_SHAPE, epochs=NORMAL_SHAPE)
    assert float(x) == pytest.approx(_Z90 * 0.5, rel=1e-9)


@pytest.mark.parametrize(
    ("weights", "scales"),
    [((0.5,), (1.0, 2.0)), ((0.7, 0.4), (1.0, 2.0)), ((1.0,), (0.0,)), ((1.0,), (math.nan,)), ((), ())],
)
def test_an_invalid_shape_is_refused_with_the_values(weights, scales) -> None:
    with pytest.raises(ValueError, match="weights|scales"):
        ErrorShape(weights=weights, scales=scales)


def test_the_fit_recovers_a_seeded_mixture_and_keeps_90_percent_at_1_645() -> None:
    rng = np.random.default_rng(3)
    truth = ErrorShape(weights=(0.6, 0.4), scales=(0.3, 1.5))
    u = _draw(truth, 40_000, rng)
    fitted = fit_error_shape(u)
    assert fitted.coverage(_Z90) == pytest.approx(0.9, abs=1e-6)
    # the truth's own 90 % point is not at 1.645, so the fit is the truth times one factor
    c = fitted.scales[0] / truth.scales[0]
    assert fitted.weights == pytest.approx(truth.weights, abs=0.02)
    assert fitted.scales[1] / c == pytest.approx(truth.scales[1], rel=0.05)


def test_the_fit_weighs_each_group_as_told() -> None:
    rng = np.random.default_rng(4)
    small, large = 0.2 * rng.standard_normal(9000), 2.0 * rng.standard_normal(1000)
    u = np.concatenate([small, large])
    equal = fit_error_shape(u, weights=np.concatenate([np.full(9000, 1 / 9000), np.full(1000, 1 / 1000)]))
    by_count = fit_error_shape(u)
    wide = lambda s: s.weights[int(np.argmax(s.scales))]  # noqa: E731
    assert wide(equal) == pytest.approx(0.5, abs=0.05)
    assert wide(by_count) == pytest.approx(0.1, abs=0.03)


def test_the_fit_refuses_too_few_or_non_finite_errors() -> None:
    with pytest.raises(ValueError, match="finite standardised errors"):
        fit_error_shape(np.array([0.1, 0.2, 0.3]))
    with pytest.raises(ValueError, match="finite standardised errors"):
        fit_error_shape(np.array([0.1, np.nan, 0.3, 0.5, 1.0]))


def test_the_time_error_cdf_is_the_law_of_the_sum_of_the_two_errors() -> None:
    # Seeded truth: independent draws from each shape, scaled and added.
    rng = np.random.default_rng(5)
    n = 400_000
    for s_step, s_e in ((0.1, 0.5), (0.3, 0.3), (0.2, 0.0)):
        total = s_step * _draw(STEP_ERROR_SHAPE, n, rng) + s_e * _draw(EPOCHS_ERROR_SHAPE, n, rng)
        xs = np.array([-0.8, -0.3, -0.05, 0.0, 0.1, 0.4, 1.0]) * math.hypot(s_step, s_e)
        got = time_error_cdf(xs, sigma_step=s_step, sigma_epochs=s_e)
        want = np.array([np.mean(total <= x) for x in xs])
        assert got == pytest.approx(want, abs=0.004)


def test_extra_normal_variance_widens_the_law() -> None:
    narrow = float(time_error_cdf(0.2, sigma_step=0.1, sigma_epochs=0.2))
    wider = float(time_error_cdf(0.2, sigma_step=0.1, sigma_epochs=0.2, extra_var=0.3**2))
    assert 0.5 < wider < narrow


@settings(max_examples=200, deadline=None)
@given(
    p=st.floats(1e-250, 1 - 1e-12),
    s_step=st.one_of(st.just(0.0), st.floats(1e-6, 2.0)),
    s_e=st.one_of(st.just(0.0), st.floats(1e-6, 3.0)),
    extra=st.one_of(st.just(0.0), st.floats(1e-12, 1.0)),
)
def test_the_exact_quantile_inverts_the_cdf_down_to_far_tails(p, s_step, s_e, extra) -> None:
    kw = dict(sigma_step=s_step, sigma_epochs=s_e, extra_var=extra)
    x = float(time_error_ppf(p, **kw, exact=True))
    if s_step == 0.0 and s_e == 0.0 and extra == 0.0:
        assert x == 0.0
        return
    if p < 0.5:
        assert float(time_error_cdf(x, **kw)) == pytest.approx(p, rel=1e-6)
    else:
        assert float(time_error_cdf(-x, **kw)) == pytest.approx(1 - p, rel=1e-5, abs=1e-15)


@settings(max_examples=100, deadline=None)
@given(p=st.floats(0.001, 0.999), s_step=st.floats(0.01, 1.0), s_e=st.floats(0.01, 1.0))
def test_the_quantile_lies_between_its_narrowest_and_widest_components(p, s_step, s_e) -> None:
    from statistics import NormalDist

    x = float(time_error_ppf(p, sigma_step=s_step, sigma_epochs=s_e))
    sds = [math.hypot(a * s_step, b * s_e) for a in STEP_ERROR_SHAPE.scales for b in EPOCHS_ERROR_SHAPE.scales]
    z = NormalDist().inv_cdf(p)
    assert min(z * s for s in sds) - 1e-9 <= x <= max(z * s for s in sds) + 1e-9


def test_the_quantile_is_monotone_in_p_and_handles_the_ends() -> None:
    p = np.linspace(0.0, 1.0, 1001)
    x = time_error_ppf(p, sigma_step=0.2, sigma_epochs=0.6)
    assert x[0] == -np.inf and x[-1] == np.inf
    assert np.all(np.diff(x) > 0)
    bad = time_error_ppf(np.array([-0.1, 1.1, np.nan]), sigma_step=0.2, sigma_epochs=0.6)
    assert np.all(np.isnan(bad))
    unbounded = time_error_ppf(np.array([0.2, 0.5, 0.8]), sigma_step=0.2, sigma_epochs=np.inf)
    assert unbounded[0] == -np.inf and unbounded[2] == np.inf


def test_the_quantile_broadcasts_one_probability_over_many_spreads() -> None:
    s = np.array([0.1, 0.2, 0.4])
    x = time_error_ppf(0.9, sigma_step=s, sigma_epochs=2 * s)
    assert x.shape == (3,)
    # the shape is scale-free: doubling both spreads doubles the quantile
    assert x[1] == pytest.approx(2 * x[0], rel=1e-9) and x[2] == pytest.approx(4 * x[0], rel=1e-9)
    both = time_error_ppf(np.array([[0.1], [0.9]]), sigma_step=s, sigma_epochs=s)
    assert both.shape == (2, 3) and np.all(both[0] < 0) and np.all(both[1] > 0)


def test_the_tabulated_quantile_is_the_exact_one_to_a_few_parts_in_a_hundred_thousand_of_sigma() -> None:
    from cotune.models._normal import norm_cdf

    rng = np.random.default_rng(6)
    n = TABLE_FROM_ROWS  # the table serves calls this large
    s, e = rng.uniform(0.0, 1.0, n), rng.uniform(0.0, 2.0, n)
    s[:500], e[500:1000] = 0.0, 0.0  # all epochs, all step time: the table's two ends
    p = norm_cdf(rng.uniform(-8.0, 8.0, n))  # (Φ(8.4) rounds to 1)
    fast = time_error_ppf(p, sigma_step=s, sigma_epochs=e)
    exact = time_error_ppf(p, sigma_step=s, sigma_epochs=e, exact=True)
    err = np.abs(fast - exact) / np.hypot(s, e)
    assert 0.0 < np.max(err) < 5e-5  # not zero: the table was read
    # one probability for every row (an interval's end) reads the same table
    one = time_error_ppf(0.95, sigma_step=s, sigma_epochs=e)
    assert np.max(np.abs(one - time_error_ppf(0.95, sigma_step=s, sigma_epochs=e, exact=True)) / np.hypot(s, e)) < 5e-5


def test_a_small_call_takes_the_exact_quantile() -> None:
    rng = np.random.default_rng(7)
    s, e, p = rng.uniform(0.0, 1.0, 300), rng.uniform(0.0, 2.0, 300), rng.uniform(0.01, 0.99, 300)
    np.testing.assert_array_equal(time_error_ppf(p, sigma_step=s, sigma_epochs=e),
                                  time_error_ppf(p, sigma_step=s, sigma_epochs=e, exact=True))


def test_the_normal_cdf_is_0_or_1_far_out_even_where_a_square_overflows() -> None:
    from cotune.models._normal import norm_cdf

    big = np.finfo(float).max
    x = np.array([big, -big, big / 3, 1e200, -1e200, math.inf, -math.inf, 40.0, -40.0, math.nan])
    assert np.array_equal(norm_cdf(x)[:-1], [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]) and math.isnan(norm_cdf(x)[-1])
    assert float(time_error_cdf(big, sigma_step=2.0, sigma_epochs=1.0)) == 1.0
