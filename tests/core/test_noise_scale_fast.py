"""fit_noise_scale's shortcuts (grid rows skipped by a floor, rows leaving the reweighting
loop once settled, golden-section steps profiled ahead, answers kept) change no bit of
its answer: checked against the plain loop of tests/_noise_scale_oracle.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from _noise_scale_oracle import fit_noise_scale as plain_fit_noise_scale
from _noise_scale_oracle import soft_l1_location as plain_soft_l1_location
from cotune.models._accuracy import _soft_l1_floor, _soft_l1_location, _soft_l1_loss, fit_noise_scale


def _law_points(rng: np.random.Generator, n: int, *, scatter: float) -> tuple[np.ndarray, np.ndarray]:
    batches = np.sort(rng.choice(np.arange(8, 40_000), n, replace=False)).astype(float)
    b_noise = 10 ** rng.uniform(1, 5)
    epochs = rng.uniform(1, 60) * (1 + batches / b_noise) * np.exp(rng.normal(0, scatter, n))
    return batches, epochs


def _same(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool:
    if a is None or b is None:
        return a is b
    return all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))


@pytest.mark.parametrize("seed", range(6))
def test_fit_noise_scale_is_the_plain_loop_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(8):
        n = int(rng.choice([3, 5, 12, 40, 150]))
        batches, epochs = _law_points(rng, n, scatter=float(rng.choice([0.0, 0.01, 0.1, 0.4, 1.5])))
        if rng.random() < 0.3:  # one off-recipe batch
            epochs[rng.integers(n)] *= float(rng.choice([4.0, 0.25]))
        if rng.random() < 0.15:  # no batch costs more epochs than another: B_noise runs off the grid
            epochs[:] = epochs[0]
        robust = bool(rng.random() < 0.8)
        assert _same(fit_noise_scale(batches, epochs, robust=robust),
                     plain_fit_noise_scale(batches, epochs, robust=robust))


@pytest.mark.parametrize("bad", [math.inf, 0.0, math.nan, -1.0])
def test_fit_noise_scale_refuses_an_unusable_epoch_as_the_plain_loop_does(bad: float) -> None:
    batches, epochs = _law_points(np.random.default_rng(1), 10, scatter=0.1)
    epochs[4] = bad
    with np.errstate(all="ignore"):
        assert fit_noise_scale(batches, epochs) is None
        assert plain_fit_noise_scale(batches, epochs) is None


def test_fit_noise_scale_answers_a_repeated_question_the_same() -> None:
    batches, epochs = _law_points(np.random.default_rng(2), 30, scatter=0.2)
    first = fit_noise_scale(batches, epochs)
    assert fit_noise_scale(batches.copy(), epochs.copy()) == first
    assert _same(first, plain_fit_noise_scale(batches, epochs))


def test_soft_l1_location_is_thirty_passes_per_row_whenever_rows_settle() -> None:
    rng = np.random.default_rng(3)
    # rows that settle early (tight), late or never (wide, with outliers), side by side
    x = np.concatenate([rng.normal(0, s, (8, 60)) for s in (1e-4, 0.05, 0.3, 3.0)])
    x[::3, 0] += 5.0
    np.testing.assert_array_equal(_soft_l1_location(x), plain_soft_l1_location(x))


def test_a_row_is_reweighted_the_same_alone_or_beside_others() -> None:
    # The shortcuts profile subsets of rows: each row's answer must not depend on its neighbours.
    x = np.random.default_rng(4).normal(0, 0.2, (9, 333))
    together = plain_soft_l1_location(x)
    alone = np.concatenate([plain_soft_l1_location(x[i : i + 1]) for i in range(x.shape[0])])
    np.testing.assert_array_equal(alone, together)


def test_soft_l1_floor_is_never_above_the_loss_at_any_location() -> None:
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(0, s, (5, 41)) for s in (0.01, 0.1, 1.0)])
    floor = _soft_l1_floor(x)
    best = _soft_l1_location(x)
    for shift in (0.0, 1e-6, -0.01, 0.3, -2.0):
        assert np.all(floor <= _soft_l1_loss(x, best + shift))
    # and not a vacuous bound: within a factor of two of the minimum on these rows
    assert np.all(floor >= 0.5 * _soft_l1_loss(x, best))
