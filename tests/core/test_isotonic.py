import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.isotonic import isotonic_regression

from _isotonic_oracle import pure_isotonic_grid, pure_pava
from cotune.models import isotonic_grid, pava


@settings(max_examples=80, deadline=None)
@given(
    # both paths: the small in-Python PAVA (<= SMALL_PAVA values) and SciPy's compiled one
    arrays(float, st.integers(1, 150), elements=st.floats(-100, 100)),
    st.booleans(),
    st.integers(0, 10**6),
)
def test_pava_matches_sklearn_oracle(y, increasing, seed):
    w = np.random.default_rng(seed).uniform(0.1, 3.0, y.size)
    expected = isotonic_regression(y, sample_weight=w, increasing=increasing)
    np.testing.assert_allclose(pava(y, w, increasing=increasing), expected, atol=1e-8)


@settings(max_examples=60, deadline=None)
@given(
    arrays(float, st.integers(1, 40), elements=st.floats(-100, 100)),
    st.booleans(),
    st.integers(0, 10**6),
)
def test_pure_oracle_agrees_with_sklearn(y, increasing, seed):
    # The oracle below is itself checked against an independent implementation.
    w = np.random.default_rng(seed).uniform(0.1, 3.0, y.size)
    expected = isotonic_regression(y, sample_weight=w, increasing=increasing)
    np.testing.assert_allclose(pure_pava(y, w, increasing=increasing), expected, atol=1e-8)


def _grid(shape):
    return np.array(np.meshgrid(*[np.arange(s) for s in shape], indexing="ij")).reshape(len(shape), -1).T


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(2, 6), st.integers(0, 10**6), st.booleans(), st.booleans())
def test_grid_fit_is_monotone_along_every_axis(nx, ny, seed, inc_x, inc_y):
    rng = np.random.default_rng(seed)
    coords = _grid((nx, ny))
    y = rng.normal(size=len(coords)) * 3
    f = isotonic_grid(coords, y, rng.uniform(0.5, 2, len(coords)), increasing=(inc_x, inc_y)).reshape(nx, ny)
    dx, dy = np.diff(f, axis=0), np.diff(f, axis=1)
    assert np.all(dx >= -1e-6) if inc_x else np.all(dx <= 1e-6)
    assert np.all(dy >= -1e-6) if inc_y else np.all(dy <= 1e-6)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 5), st.integers(2, 5), st.integers(2, 4), st.integers(0, 10**6))
def test_monotone_input_is_a_fixed_point(nx, ny, nz, seed):
    rng = np.random.default_rng(seed)
    coords = _grid((nx, ny, nz))
    y = coords @ rng.uniform(0.1, 2, 3) + 0.0
    np.testing.assert_allclose(isotonic_grid(coords, y, increasing=(True, True, True)), y, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.floats(-50, 50), st.floats(0.1, 10))
def test_fit_commutes_with_shift_and_positive_scale(seed, shift, scale):
    rng = np.random.default_rng(seed)
    coords = _grid((4, 5))
    y = rng.normal(size=20)
    base = isotonic_grid(coords, y, increasing=(True, False))
    moved = isotonic_grid(coords, scale * y + shift, increasing=(True, False))
    np.testing.assert_allclose(moved, scale * base + shift, atol=1e-6 * max(1, abs(shift)) * scale)


def test_grid_fit_equals_quadratic_programme_oracle():
    from scipy.optimize import LinearConstraint, minimize

    rng = np.random.default_rng(3)
    nx, ny = 5, 6
    coords = _grid((nx, ny))
    y = coords.sum(axis=1) + rng.normal(size=len(coords)) * 2.5
    w = rng.uniform(0.5, 2.0, len(coords))
    rows = []
    for i in range(nx):
        for j in range(ny):
            k = i * ny + j
            for nb in ((k + ny) if i + 1 < nx else None, (k + 1) if j + 1 < ny else None):
                if nb is not None:
                    r = np.zeros(len(coords))
                    r[nb], r[k] = 1, -1
                    rows.append(r)
    qp = minimize(
        lambda x: np.sum(w * (x - y) ** 2),
        y,
        jac=lambda x: 2 * w * (x - y),
        constraints=[LinearConstraint(np.array(rows), 0, np.inf)],
        method="trust-constr",
        options={"gtol": 1e-10, "maxiter": 5000},
    )
    fit = isotonic_grid(coords, y, w, increasing=(True, True))
    assert np.sum(w * (fit - y) ** 2) <= np.sum(w * (qp.x - y) ** 2) + 1e-6
    np.testing.assert_allclose(fit, qp.x, atol=1e-3)


def test_missing_cells_are_allowed():
    coords = np.array([[0, 0], [0, 1], [1, 0], [2, 2]])
    f = isotonic_grid(coords, np.array([3.0, 1.0, 0.0, 5.0]), increasing=(True, True))
    assert f[0] <= f[1] + 1e-9 and f[0] <= f[2] + 1e-9


def test_a_zero_dimensional_bool_array_is_one_flag_for_every_axis():
    coords, y = [[1, 1], [1, 2], [2, 1], [2, 2]], [1.0, 0.5, 2.0, 1.5]
    np.testing.assert_array_equal(isotonic_grid(coords, y, increasing=np.array(True)),
                                  isotonic_grid(coords, y, increasing=True))


def test_a_zero_dimensional_non_bool_array_is_a_bad_value_naming_increasing():
    from cotune.errors import InputError

    with pytest.raises(InputError, match="^increasing: needs one flag per axis"):
        isotonic_grid([[1, 1], [1, 2]], [1.0, 0.5], increasing=np.array(1))


@pytest.mark.parametrize("bad", [np.array([1.0, np.nan]), np.array([1.0, np.inf])])
def test_non_finite_values_are_rejected(bad):
    with pytest.raises(ValueError, match="finite"):
        isotonic_grid(np.array([[0], [1]]), bad, increasing=(True,))


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 7), st.integers(2, 7), st.integers(1, 4), st.integers(0, 10**6), st.booleans(), st.floats(1e-3, 1e3))
def test_batched_grid_fit_matches_pure_per_line_oracle(nx, ny, nz, seed, inc_y, magnitude):
    # Many lines per axis and values of any magnitude: the per-segment lift that lets
    # one compiled call fit every line must never pool across lines.
    rng = np.random.default_rng(seed)
    coords = _grid((nx, ny, nz))
    keep = rng.uniform(size=len(coords)) < 0.8  # missing cells too
    coords = coords[keep] if keep.sum() >= 2 else coords
    y = rng.normal(size=len(coords)) * magnitude
    w = rng.uniform(0.5, 2.0, len(coords))
    flags = (True, inc_y, False)
    fit = isotonic_grid(coords, y, w, increasing=flags, max_iter=2000, tol=1e-12)
    oracle = pure_isotonic_grid(coords, y, w, increasing=flags)
    np.testing.assert_allclose(fit, oracle, atol=1e-6 * magnitude)
