"""Step records that cannot be right: found robustly, left out of the fit, and reported.

One absurd record moves a least-squares fit anywhere: a step at local batch 10¹² among
1,512 real probes moves the chosen plan of the CIFAR-10 example from 1,037 s to 381 s
without a word (docs/models.md). Two robust tests, both in log space, where step times of real probes
differ by small factors:

1. **Leverage** — an input value (workers, local batch) isolated from every other
   probed value by more than :data:`ISOLATION_FACTOR` (1000×) and held by a small
   minority of the records. Probes form grids (batch 32, 64, 128 …); a value a
   thousand times beyond its nearest neighbour is a typo or a unit error, and on its
   own it decides the extrapolation of the whole model.
2. **Residual** — log step time far from the backbone fitted to the rest:
   ``|r − median(r)| > max(z · 1.4826 · MAD(r), log MIN_FACTOR)``, i.e. beyond ``z``
   robust standard deviations *and* more than :data:`MIN_FACTOR` (4×) off. The fit is
   repeated without the flagged records so one wild point cannot hide another.

At most :data:`MAX_FRACTION` of the records are ever left out (the most extreme
first): beyond that the data, not a few records, disagree with the model. Pure
functions, no printing; :func:`cotune.models.fit_models` is the one caller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cotune.units import count_of

__all__ = ["StepOutliers", "EvalOutliers", "find_step_outliers", "find_eval_outliers", "ISOLATION_FACTOR", "MIN_FACTOR", "MAX_FRACTION"]

ISOLATION_FACTOR = 1000.0
MIN_FACTOR = 4.0
ROBUST_Z = 8.0
MAX_FRACTION = 0.05
_MIN_RECORDS = 12  # fewer cannot show which record is the odd one out
_SIGMA_FLOOR = 0.05  # log units: exact synthetic data has MAD 0


@dataclass(frozen=True)
class StepOutliers:
    """Which step records of one GPU type are left out, and why (one reason each)."""

    mask: np.ndarray  # bool, True = outlier
    reasons: tuple[str, ...]  # in record order, for the flagged records

    @property
    def count(self) -> int:
        return int(np.count_nonzero(self.mask))


def _isolated(values: np.ndarray, *, max_share: float) -> np.ndarray:
    """Records whose value is > ISOLATION_FACTOR from every other distinct value, in a small minority."""
    logs = np.log(values)
    uniq, counts = np.unique(logs, return_counts=True)
    flagged = np.zeros(values.shape, dtype=bool)
    if uniq.size < 2:
        return flagged
    gap_left = np.diff(uniq, prepend=-np.inf)
    gap_right = np.diff(uniq, append=np.inf)
    gap = np.minimum(gap_left, gap_right)
    share = counts / values.size
    for u, g, s in zip(uniq, gap, share):
        if g > math.log(ISOLATION_FACTOR) and s <= max_share:
            flagged |= logs == u
    return flagged


def _residuals(workers: np.ndarray, hosts: np.ndarray, batch: np.ndarray, log_step: np.ndarray, fit_on: np.ndarray) -> np.ndarray | None:
    from cotune.models._backbone import fit_backbone, predict_log_step

    if np.count_nonzero(fit_on) < _MIN_RECORDS:
        return None
    # Fit on the median of each probed configuration, weighted by its records: as robust to
    # a wild repeat as the records themselves, and a few hundred points instead of 10⁵.
    keys = np.column_stack([workers[fit_on], hosts[fit_on], batch[fit_on]])
    cfgs, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    groups = np.split(log_step[fit_on][order], np.cumsum(counts)[:-1])
    medians = np.array([float(np.median(g)) for g in groups])
    try:
        params = fit_backbone(cfgs[:, 0], cfgs[:, 1], cfgs[:, 2], medians, weights=counts.astype(float))
    except (ValueError, ArithmeticError, np.linalg.LinAlgError):  # degenerate data: no residual test
        return None
    r = log_step - predict_log_step(params, workers, hosts, batch)
    return r if np.all(np.isfinite(r)) else None


def find_step_outliers(
    *,
    workers: np.ndarray,
    hosts: np.ndarray,
    local_batch: np.ndarray,
    step_time_s: np.ndarray,
    z: float = ROBUST_Z,
    min_factor: float = MIN_FACTOR,
    max_fraction: float = MAX_FRACTION,
) -> StepOutliers:
    """The step records of one GPU type to leave out of the fit (see the module doc)."""
    workers = np.asarray(workers, float)
    hosts = np.asarray(hosts, float)
    batch = np.asarray(local_batch, float)
    step = np.asarray(step_time_s, float)
    n = step.size
    none = StepOutliers(mask=np.zeros(n, dtype=bool), reasons=())
    if n < _MIN_RECORDS:
        return none
    cap = max(1, int(max_fraction * n))
    log_step = np.log(step)

    # Leverage first: an isolated input bends the fit the residual test relies on.
    score = np.zeros(n)
    why: dict[int, str] = {}
    for name, values in (("local batch", batch), ("workers", workers)):
        iso = _isolated(values, max_share=max_fraction)
        for i in np.flatnonzero(iso):
            others = values[~iso]
            nearest = others[np.argmin(np.abs(np.log(others) - np.log(values[i])))]
            factor = max(values[i] / nearest, nearest / values[i])
            score[i] = max(score[i], math.log(factor))
            why.setdefault(int(i), f"{name} {values[i]:.4g} is {factor:.3g}× away from every other probed {name}")
    flagged = score > 0

    # Then residuals against the backbone fitted to the rest, twice: the second fit no
    # longer feels the records the first one flagged (and may clear some of them).
    threshold = math.log(min_factor)
    for _ in range(2):
        r = _residuals(workers, hosts, batch, log_step, ~flagged)
        if r is None:
            break
        kept = r[~flagged]
        centre = float(np.median(kept))
        sigma = max(1.4826 * float(np.median(np.abs(kept - centre))), _SIGMA_FLOOR)
        dev = np.abs(r - centre)
        wild = dev > max(z * sigma, threshold)
        new = wild | (score > 0)
        for i in np.flatnonzero(wild & ~(score > 0)):
            factor = math.exp(dev[i])
            side = "slower" if r[i] > centre else "faster"
            why[int(i)] = (
                f"step time {step[i]:.4g} s at {count_of(int(workers[i]), 'worker')}, local batch {int(batch[i])} is "
                f"{factor:.3g}× {side} than the model of the other records"
            )
        residual_score = np.where(wild, dev - threshold, 0.0)
        score = np.maximum(score, residual_score)
        if np.array_equal(new, flagged):
            break
        flagged = new

    if not flagged.any():
        return none
    if np.count_nonzero(flagged) > cap:  # keep only the most extreme few
        order = np.argsort(-np.where(flagged, score, -np.inf), kind="stable")
        flagged = np.zeros(n, dtype=bool)
        flagged[order[:cap]] = True
    reasons = tuple(why[int(i)] for i in np.flatnonzero(flagged))
    return StepOutliers(mask=flagged, reasons=reasons)


# --- eval records ---------------------------------------------------------------------------

SPIKE_Z = 10.0
_METRIC_IQR_FENCE = 20.0
# A pessimistic value beyond the fence is an outlier only when a gap this many times the
# distance from its neighbour to the median separates it from the rest: a learning curve's
# own start (a loss falling from 7 to a long plateau near 1) is a chain of steps each
# smaller than the way still to go; a unit error (-1e6 for an accuracy) is one leap.
_PESSIMISTIC_GAP = 100.0


@dataclass(frozen=True)
class EvalOutliers:
    """Which eval records are left out, and why (one reason each)."""

    mask: np.ndarray
    reasons: tuple[str, ...]

    @property
    def count(self) -> int:
        return int(np.count_nonzero(self.mask))


def _pessimistic_leap(m: np.ndarray, finite: np.ndarray, direction: float, fence: float, iqr: float) -> np.ndarray:
    """Values beyond ``fence`` on the pessimistic side (``direction`` −1: low, +1: high) cut off
    from the rest by a leap: sorted from the median outwards, the first step larger than
    ``_PESSIMISTIC_GAP`` × the distance already covered (at least the IQR) and everything past it."""
    out = np.zeros(m.shape, dtype=bool)
    vals = direction * m[finite]  # larger = more pessimistic
    med = float(np.median(vals))
    tail = np.sort(vals[vals > med])
    if tail.size == 0 or direction * fence >= tail[-1]:
        return out
    inner = np.concatenate([[med], tail[:-1]])
    leap = (tail - inner) > _PESSIMISTIC_GAP * np.maximum(inner - med, iqr)
    leap &= tail > direction * fence
    if not leap.any():
        return out
    cut = tail[int(np.argmax(leap))]  # the first leap: it and every value beyond it
    out[finite] = vals >= cut
    return out


def find_eval_outliers(
    *,
    global_batch: np.ndarray,
    epoch: np.ndarray,
    metric: np.ndarray,
    seed: np.ndarray,
    goal: str,
    z: float = SPIKE_Z,
    max_fraction: float = MAX_FRACTION,
) -> EvalOutliers:
    """Eval records that cannot be right: a metric far outside every other, an epoch 1000×
    from every other, or a spike in the optimistic direction (higher for ``goal="max"``,
    lower for ``"min"``) beyond both neighbours on each side by ``z`` robust noise scales.

    Only the optimistic direction is judged: a too-good point is what makes a batch look
    able to reach the target early (one such point moves a plan from 1,037 s to 0.1 s);
    dips are ordinary noise or learning-rate drops. The last point of a curve is never a
    spike (a curve may still be rising), nor is a diverged (NaN) one.
    """
    gb = np.asarray(global_batch, float)
    ep = np.asarray(epoch, float)
    m = np.asarray(metric, float)
    sd = np.asarray(seed, float)
    n = m.size
    none = EvalOutliers(mask=np.zeros(n, dtype=bool), reasons=())
    if n < _MIN_RECORDS:
        return none
    cap = max(1, int(max_fraction * n))
    finite = np.isfinite(m)
    sign = 1.0 if goal == "max" else -1.0
    score = np.zeros(n)
    why: dict[int, str] = {}

    # 1. A metric value far outside the others (e.g. 1e6 for an accuracy).
    vals = m[finite]
    if vals.size >= _MIN_RECORDS:
        q1, q3 = np.percentile(vals, [25, 75])
        iqr = max(q3 - q1, 1e-12 * max(1.0, abs(q3)))
        lo, hi = q1 - _METRIC_IQR_FENCE * iqr, q3 + _METRIC_IQR_FENCE * iqr
        # The optimistic side (what could make a batch look able to reach the target) by the
        # fence alone; the pessimistic side only across a leap (see _PESSIMISTIC_GAP).
        optimistic = (m > hi) if sign > 0 else (m < lo)
        outside = finite & (optimistic | _pessimistic_leap(m, finite, -sign, lo if sign > 0 else hi, iqr))
        inside = m[finite & ~outside]
        for i in np.flatnonzero(outside):
            score[i] = max(score[i], abs(m[i] - np.clip(m[i], lo, hi)) / iqr)
            why[int(i)] = (
                f"metric {m[i]:.4g} at global batch {int(gb[i])} is far outside every other "
                f"({inside.min():.4g} to {inside.max():.4g})"
            )

    # 2. An epoch isolated from every other (a unit error: samples written as epochs).
    positive = ep > 0
    if np.count_nonzero(positive) >= _MIN_RECORDS:
        iso = np.zeros(n, dtype=bool)
        iso[positive] = _isolated(ep[positive], max_share=max_fraction)
        others = ep[positive & ~iso]
        for i in np.flatnonzero(iso):
            nearest = others[np.argmin(np.abs(np.log(others) - np.log(ep[i])))]
            factor = max(ep[i] / nearest, nearest / ep[i])
            score[i] = max(score[i], math.log(factor))
            why.setdefault(int(i), f"epoch {ep[i]:.4g} at global batch {int(gb[i])} is {factor:.3g}× away from every other epoch")

    # 3. Optimistic spikes within a run (same global batch and seed), against the noise
    # of the curves: the robust scale of successive differences, pooled over runs.
    # Group by run in O(n log n): sort by (run, epoch) once (an attacker may send a run per record).
    usable = np.flatnonzero(finite & (score == 0))
    _, run_of = np.unique(np.column_stack([gb[usable], sd[usable]]), axis=0, return_inverse=True)
    run_of = run_of.ravel()
    order = np.lexsort((ep[usable], run_of))
    starts = np.flatnonzero(np.diff(run_of[order], prepend=-1))
    runs = [usable[order[a:b]] for a, b in zip(starts, np.append(starts[1:], order.size))]
    diffs = np.concatenate([np.diff(m[idx]) for idx in runs if idx.size > 1] or [np.zeros(0)])
    if diffs.size >= _MIN_RECORDS:
        sigma = max(1.4826 * float(np.median(np.abs(diffs - np.median(diffs)))) / math.sqrt(2.0), 1e-9)
        for idx in runs:
            b = gb[idx[0]]
            vals = sign * m[idx]
            eps = ep[idx]
            for k in range(idx.size - 1):  # never the last point
                after = vals[k + 1 : k + 3]
                before = vals[max(0, k - 2) : k]
                ref = max(after.max(), before.max() if before.size else -np.inf)
                if k == 0 and idx.size >= 3 and eps[2] > eps[1]:
                    # The first point has no neighbour before it: judge it against the trend of
                    # the next two carried back to its epoch, so a curve that peaks at its first
                    # evaluation (a fine-tuning run that then overfits) keeps that evaluation.
                    ref = max(ref, vals[1] + (vals[1] - vals[2]) * (eps[1] - eps[0]) / (eps[2] - eps[1]))
                excess = vals[k] - ref
                if excess > z * sigma:
                    i = int(idx[k])
                    score[i] = max(score[i], excess / sigma)
                    why[i] = (
                        f"metric {m[i]:.4g} at epoch {ep[i]:.3g} of the curve at global batch {int(b)} is "
                        f"{excess:.3g} {'above' if sign > 0 else 'below'} its neighbours ({excess / sigma:.0f} noise scales)"
                    )

    flagged = score > 0
    if not flagged.any():
        return none
    if np.count_nonzero(flagged) > cap:
        order = np.argsort(-np.where(flagged, score, -np.inf), kind="stable")
        flagged = np.zeros(n, dtype=bool)
        flagged[order[:cap]] = True
    return EvalOutliers(mask=flagged, reasons=tuple(why[int(i)] for i in np.flatnonzero(flagged)))
