"""benchmarks.accuracy_priors: the κ_beyond shape by target level, on seeded synthetic errors."""

import numpy as np
import pytest

from benchmarks.accuracy_priors import SHAPE_LEVELS, beyond_shape


def _samples(kappa_of_level, seed: int, n: int = 3000) -> list:
    rng = np.random.default_rng(seed)
    level = rng.uniform(0.3, 1.05, n)
    d = rng.integers(1, 6, n).astype(float)
    e = np.abs(rng.normal(0.0, kappa_of_level(level) * d))
    return [(float(a), 0.0, float(b), float(f)) for a, b, f in zip(e, d, level)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shape_recovers_a_spread_that_halves_from_early_to_late_targets(seed):
    truth = lambda f: np.interp(f, [0.5, 1.0], [0.2, 0.1])  # noqa: E731
    shape = beyond_shape(_samples(truth, seed))
    levels, factors = (np.array(v) for v in zip(*shape))
    assert tuple(levels) == SHAPE_LEVELS
    assert np.all(np.diff(factors) <= 0)
    # the ratio of the ends is the truth's (0.1 / 0.2), within sampling error
    assert factors[-1] / factors[0] == pytest.approx(0.5, rel=0.15)


def test_shape_is_flat_when_the_spread_does_not_depend_on_the_level():
    shape = beyond_shape(_samples(lambda f: np.full_like(f, 0.15), seed=4))
    factors = np.array([k for _, k in shape])
    np.testing.assert_allclose(factors, 1.0, atol=0.1)
