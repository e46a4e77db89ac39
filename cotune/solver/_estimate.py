"""Estimate every candidate at once: step time, epochs, time, cost — with intervals.

For candidate ``c = (gpu, market, n, h, b)`` with global batch ``B = n·b``::

    epoch_time_s(c) = dataset_size / B × step_time_s(gpu, n, h, b)
    time_s(c)       = startup_s + epochs_to_target(B) × epoch_time_s(c)
    cost(c)         = n × price_per_hour(gpu, market) × time_s(c) / 3600

With no prices, ``price_per_hour = 1`` and cost is worker-hours (the paper's resource
cost). Uncertainty combines in log space, treating step-time and epoch errors as
independent: ``σ_T² = σ_step² + σ_E²``; the time at confidence ``q`` is
``startup_s + exp(log T + z_q σ_T)``, and infinite when even the interval's end of
the epochs is (the target may not be reached at all).

Models are evaluated once per distinct (gpu, n, h, b) and once per distinct ``B``
and broadcast back, so markets and repeated batches cost nothing extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from cotune.models import FittedModels, z_for
from cotune.solver._space import Candidates

__all__ = ["Estimates", "estimate"]


@dataclass(frozen=True)
class Estimates:
    """Predictions for every candidate (struct of arrays aligned with ``candidates``)."""

    candidates: Candidates
    step_time_s: np.ndarray
    epoch_time_s: np.ndarray
    epochs: np.ndarray
    epochs_lower: np.ndarray
    epochs_upper: np.ndarray
    time_s: np.ndarray
    time_lower_s: np.ndarray
    time_upper_s: np.ndarray
    time_at_confidence_s: np.ndarray
    cost: np.ndarray
    cost_lower: np.ndarray
    cost_upper: np.ndarray
    price_per_hour: np.ndarray
    time_extrapolated: np.ndarray
    epochs_extrapolated: np.ndarray


def _unique_inverse(*cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of first occurrences of distinct rows, and the inverse map (1-D keys: fast)."""
    key = np.zeros(cols[0].shape, dtype=np.int64)
    for col in cols:
        col = col.astype(np.int64)
        key = key * (int(col.max()) + 1 if col.size else 1) + col
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def estimate(
    candidates: Candidates,
    models: FittedModels,
    *,
    target: float,
    price_per_hour: np.ndarray,
    startup_s: float = 0.0,
    confidence: float | None = None,
) -> Estimates:
    """Predict time and cost of every candidate.

    ``price_per_hour`` has shape ``(len(gpus), len(markets))``: the price of one worker.
    """
    n = len(candidates)
    w = candidates.workers.astype(float)
    b = candidates.local_batch.astype(float)
    gb = candidates.global_batch.astype(float)

    step = np.empty(n)
    step_sigma = np.empty(n)
    t_extrap = np.zeros(n, dtype=bool)
    for gi, gpu in enumerate(candidates.gpus):
        sel = np.flatnonzero(candidates.gpu == gi)
        if sel.size == 0:
            continue
        first, inv = _unique_inverse(candidates.workers[sel], candidates.hosts[sel], candidates.local_batch[sel])
        pick = sel[first]
        pred = models.predict_step(gpu, w[pick], candidates.hosts[pick].astype(float), b[pick])
        step[sel] = pred.step_time_s[inv]
        step_sigma[sel] = pred.log_sigma[inv]
        t_extrap[sel] = pred.extrapolated[inv]

    ub, binv = np.unique(gb, return_inverse=True)
    ep = models.predict_epochs(ub, target)
    epochs, e_lo, e_hi = ep.epochs[binv], ep.lower[binv], ep.upper[binv]
    e_extrap = ep.extrapolated[binv]

    epoch_time = models.dataset_size / gb * step
    train = epochs * epoch_time
    z = z_for(models.accuracy.interval)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # σ of log epochs from the interval; when the upper end is unreached use the
        # lower side alone.
        sig_up = (np.log(e_hi) - np.log(epochs)) / z
        sig_dn = (np.log(epochs) - np.log(e_lo)) / z
        sig_e = np.where(np.isfinite(sig_up), np.maximum(sig_up, sig_dn), sig_dn)
        sig_e = np.where(np.isfinite(sig_e), sig_e, 0.0)
        sig_t = np.sqrt(step_sigma**2 + sig_e**2)
        log_train = np.log(train)
        lower = startup_s + np.exp(log_train - z * sig_t)
        upper = np.where(np.isfinite(e_hi), startup_s + np.exp(log_train + z * sig_t), np.inf)
        if confidence is None:
            at_conf = startup_s + train
        else:
            zq = NormalDist().inv_cdf(confidence)
            at_conf = startup_s + np.exp(log_train + zq * sig_t)
            # Past the interval's own level an unreached upper epoch bound means the
            # target itself is uncertain: no finite time can be promised.
            if confidence >= 0.5 + models.accuracy.interval / 2:
                at_conf = np.where(np.isfinite(e_hi), at_conf, np.inf)
    time_s = startup_s + train
    time_s = np.where(np.isfinite(epochs), time_s, np.inf)
    lower = np.where(np.isfinite(epochs), lower, np.inf)
    at_conf = np.where(np.isfinite(epochs), at_conf, np.inf)

    price = np.asarray(price_per_hour, float)[candidates.gpu, candidates.market]
    rate = w * price / 3600.0
    return Estimates(
        candidates=candidates,
        step_time_s=step,
        epoch_time_s=epoch_time,
        epochs=epochs,
        epochs_lower=e_lo,
        epochs_upper=e_hi,
        time_s=time_s,
        time_lower_s=lower,
        time_upper_s=upper,
        time_at_confidence_s=at_conf,
        cost=rate * time_s,
        cost_lower=rate * lower,
        cost_upper=rate * upper,
        price_per_hour=price,
        time_extrapolated=t_extrap,
        epochs_extrapolated=e_extrap,
    )
