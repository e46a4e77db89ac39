"""benchmarks.error_shape: the shipped error shapes are what the public data give."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.error_shape import _group_weights, epochs_errors, left_out, log_likelihood, step_errors
from benchmarks.traces import data_root
from cotune.models._shape import EPOCHS_ERROR_SHAPE, NORMAL_SHAPE, STEP_ERROR_SHAPE, fit_error_shape


def _close(a, b) -> None:
    assert a.weights == pytest.approx(b.weights, abs=1e-3)
    assert a.scales == pytest.approx(b.scales, abs=1e-3)


def test_the_epochs_shape_is_the_fit_to_the_pollux_errors() -> None:
    u, group = epochs_errors()
    assert np.unique(group).size == 6 and u.size > 150
    _close(fit_error_shape(u, weights=_group_weights(group)), EPOCHS_ERROR_SHAPE)


@pytest.mark.slow
def test_the_step_shape_is_the_fit_to_the_public_clusters() -> None:
    u, group = step_errors(data_root())
    assert np.unique(group).size == 11
    _close(fit_error_shape(u, weights=_group_weights(group)), STEP_ERROR_SHAPE)


def test_left_out_scores_are_log_likelihoods_of_the_held_out_group() -> None:
    rng = np.random.default_rng(0)
    # two groups with the same heavy-tailed law: the mixture fitted on one beats N(0, 1) on the other
    u = np.concatenate([rng.standard_normal(3000) * np.where(rng.random(3000) < 0.5, 0.2, 1.6) for _ in range(2)])
    group = np.repeat(["a", "b"], 3000)
    out = left_out(u, group)
    assert set(out) == {"a", "b"}
    for g in ("a", "b"):
        assert out[g]["n"] == 3000
        assert out[g]["normal"] == pytest.approx(log_likelihood(u[group == g], NORMAL_SHAPE))
        assert out[g]["mixture"] > out[g]["normal"] + 0.05
