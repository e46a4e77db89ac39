"""Per-batch evidence written out batch by batch, kept only as a test oracle.

cotune's own :func:`cotune.models._accuracy.batch_evidence` reads every run of every batch
in one numpy pass (:mod:`cotune.models._segments`). This is the straightforward version it
replaced: one Python loop over the batches, a few numpy or ``statistics`` calls on each
batch's one to five runs. Slow on thousands of batches, but each rule reads as stated in
``BatchEvidence``'s docstring. The two must agree to the last bit (the same operations on
the same operands), which ``tests/core/test_evidence_scale.py`` checks.
"""

from __future__ import annotations

import math
import statistics

import numpy as np

from cotune.models._accuracy import (
    _CENSOR_FRACTION,
    _SIGMA_CAP,
    _SIGMA_FLOOR,
    _slope_log_epochs,
    crossing_epoch,
    runs_by_batch,
    still_rising,
)
from cotune.models._normal import norm_cdf, norm_ppf


def km_median(times: np.ndarray, reached: np.ndarray) -> float:
    """Kaplan–Meier median of event times with right-censoring (∞ if S never ≤ ½)."""
    order = np.lexsort((~reached, times))
    t, ev = times[order], reached[order]
    at_risk, surv = len(t), 1.0
    for ti, ei in zip(t, ev):
        if ei:
            surv *= 1.0 - 1.0 / at_risk
            if surv <= 0.5 + 1e-12:
                return float(ti)
        at_risk -= 1
    return math.inf


def batch_evidence_loop(runs, threshold: float, *, eval_noise: float, plateau_floor: float) -> dict[str, np.ndarray]:
    """The fields of ``BatchEvidence``, batch by batch."""
    batches, grouped = runs_by_batch(runs)
    n = len(batches)
    out = {name: np.full(n, np.nan) for name in ("epochs", "log_sigma", "p_reach")}
    out.update({name: np.zeros(n) for name in ("plateau_sigma", "horizon", "margin", "margin_beyond")})
    out.update(n_runs=np.zeros(n, int), n_reached=np.zeros(n, int), batches=batches)
    rising = np.zeros(n, bool)
    noise = max(eval_noise, plateau_floor)
    for i, rs in enumerate(grouped):
        cross = [crossing_epoch(r.epochs, r.best, threshold) for r in rs]
        reached = [math.isfinite(c) for c in cross]
        last = [float(r.epochs[-1]) for r in rs]
        out["n_runs"][i], out["n_reached"][i] = len(rs), sum(reached)
        horizon = out["horizon"][i] = max(last)
        up = [still_rising(r, noise=noise) for r in rs]
        rising[i] = any(u for u, e in zip(up, last) if e == horizon)
        cut = [u and e < horizon for u, e in zip(up, last)]
        plateaus = [float(r.best[-1]) for r, c in zip(rs, cut) if not c]
        spread = eval_noise
        if len(plateaus) >= 2:
            mid = statistics.median(plateaus)
            spread = max(spread, 1.4826 * statistics.median([abs(x - mid) for x in plateaus]))
        p_sigma = out["plateau_sigma"][i] = max(spread, plateau_floor)
        location = statistics.median(plateaus) - threshold
        decided = [(h, float(r.best[-1])) for r, h, c in zip(rs, reached, cut) if h or not c]
        k = sum(1 for h, _ in decided if h)
        if k in (0, len(decided)):
            zs = np.array([(best - threshold) / noise for _, best in decided])
            p = 1.0 - float(np.prod(norm_cdf(-zs))) if k else float(np.prod(norm_cdf(zs)))
            margin = location
        else:
            p = (k + 0.5) / (len(decided) + 1.0)
            implied = float(norm_ppf(p)) * p_sigma
            margin = (min(implied, location) if implied > 0 and location > 0
                      else max(implied, location) if implied < 0 and location < 0 else 0.0)
        beyond = margin
        if k and 2 * sum(1 for u, h, c in zip(up, reached, cut) if u and (h or not c)) >= len(decided):
            implied = float(norm_ppf(min(p, 1.0 - 1e-6))) * p_sigma
            if implied > 0:
                margin = max(location, implied)
            counted = float(norm_ppf(min(p, (k + 0.5) / (len(decided) + 1.0)))) * p_sigma
            if counted > 0:
                beyond = max(beyond, counted)
        out["p_reach"][i], out["margin"][i], out["margin_beyond"][i] = p, margin, beyond
        if not k:
            continue
        hit = [c for c in cross if math.isfinite(c)]
        med = km_median(np.where(reached, cross, last), np.array(reached)) if len(rs) >= 3 else statistics.median(hit)
        out["epochs"][i] = med if math.isfinite(med) else statistics.median(hit)
        slopes = [_slope_log_epochs(r, c) for r, c in zip(rs, cross) if math.isfinite(c)]
        slope = statistics.median(slopes)
        s = eval_noise / slope if slope > 0 else _SIGMA_CAP
        if k >= 2:
            lc = np.log(hit)
            s = max(s, 1.4826 * float(np.median(np.abs(lc - np.median(lc)))) if k >= 3 else float(np.std(lc)))
        out["log_sigma"][i] = min(max(s, _SIGMA_FLOOR), _SIGMA_CAP)
    out["p_reach"] = np.clip(out["p_reach"], 1e-6, 1 - 1e-6)
    out["censored"] = rising & (out["horizon"] < _CENSOR_FRACTION * float(out["horizon"].max()))
    return out
