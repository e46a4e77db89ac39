"""P(success) on spot counts the revocation-count variance, checked against the seeded simulator."""

from __future__ import annotations

import numpy as np
import pytest

from cotune.models._normal import norm_cdf
from cotune.spot import revocation_estimate, simulate
from cotune.spot._market import success_log_sigma


def _simulated_success(work_s: float, model_sigma: float, rate_h: float, deadlines: np.ndarray, runs: int = 20_000):
    """Fraction of seeded runs done by each deadline: the work itself log-normal with the model's σ
    (what the model does not know), then Poisson revocations on top (what the spot model adds)."""
    rng = np.random.default_rng(7)
    work = work_s * np.exp(model_sigma * rng.standard_normal(runs))
    est = revocation_estimate(work_s=work_s, rate_per_s=rate_h / 3600, checkpoint_write_s=30.0, restart_s=300.0)
    sim = simulate(work_s=work, rate_per_s=rate_h / 3600, checkpoint_interval_s=float(est.checkpoint_interval_s),
                   checkpoint_write_s=30.0, restart_s=300.0, runs=1, seed=3)
    t = sim.time_s.ravel()
    return np.array([np.mean(t <= d) for d in deadlines]), est


@pytest.mark.parametrize("model_sigma, revocations_matter", [(0.0, True), (0.05, True), (0.15, False)])
def test_spot_success_probability_matches_the_simulated_share_of_runs_done_by_the_deadline(
    model_sigma: float, revocations_matter: bool
) -> None:
    work_s, rate_h = 6 * 3600.0, 2.0  # six hours of work, two revocations an hour: many, and variable
    est = revocation_estimate(work_s=work_s, rate_per_s=rate_h / 3600, checkpoint_write_s=30.0, restart_s=300.0)
    mean_t = float(est.expected_time_s)
    deadlines = mean_t * np.array([0.85, 0.93, 1.0, 1.07, 1.15])
    truth, _ = _simulated_success(work_s, model_sigma, rate_h, deadlines)
    sigma = float(success_log_sigma(np.array([model_sigma]), est)[0])
    promised = norm_cdf((np.log(deadlines) - np.log(mean_t)) / sigma)
    assert np.max(np.abs(promised - truth)) < 0.06, (promised, truth)
    # The model's σ alone (the revocations' spread left out) is far off where the revocations
    # dominate the spread.
    alone = norm_cdf((np.log(deadlines) - np.log(mean_t)) / max(model_sigma, 1e-9))
    assert (np.max(np.abs(alone - truth)) > 0.1) == revocations_matter


def test_without_revocations_the_spot_sigma_is_the_models() -> None:
    est = revocation_estimate(work_s=np.array([3600.0, 7200.0]), rate_per_s=0.0, checkpoint_write_s=30.0, restart_s=300.0)
    np.testing.assert_allclose(success_log_sigma(np.array([0.1, 0.2]), est), [0.1, 0.2])
