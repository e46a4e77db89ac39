"""Peer models, written here from their papers, behind cotune's model interface.

Each class answers what :func:`cotune.solver.estimate` asks of a model —
``predict(workers, hosts, local_batch) → StepTimePrediction`` for time and
``epochs_to_target(global_batch, target) → EpochsPrediction`` for accuracy — so every
peer is solved by the same exhaustive solver, and differences come from the models.

* :class:`IsotonicStepTime` — the seed paper's tool alone (Liang et al. 2022): a
  three-variable isotonic fit of log step time on the probed points. Between probes
  a query takes the geometric mean of the tightest monotone bounds (the largest fit
  value among probes it dominates, the smallest among probes dominating it); outside
  them it repeats the nearest bound (isotonic regression cannot extrapolate).
* :class:`IsotonicAccuracy` — the isotonic accuracy surface alone: between measured
  batches it interpolates like cotune's; outside them it has no critical-batch law
  (larger batches: unreached; smaller: no worse than the smallest measured).
* :class:`PolluxStepTime` — Pollux's throughput model (Qiao et al. OSDI'21, §4.1)::

      T_grad(m)      = α_g + β_g · m
      T_sync(n, h)   = 0 (n = 1);  α_r + β_r·(n − 2) (h = 1);  α_n + β_n·(n − 2) (h > 1)
      T_iter         = (T_grad^γ + T_sync^γ)^(1/γ)

  fitted by least squares on log step time; inter-host terms default to 1.1× the
  intra-host ones when no probe crosses hosts, as Pollux does.
* :class:`PolluxAccuracy` — Pollux's statistical efficiency from the gradient noise
  scale, applied to the reference learning curve (its only accuracy input)::

      φ_k       = grad_var_k / grad_sqr_k × M0        (noise scale in samples, row k)
      EFF_k(M)  = (φ_k + M0) / (φ_k + M)
      E(M)      = Σ_k ΔE_ref,k / EFF_k(M)              (rows until the reference curve
                                                        reaches the target)

  One epoch at batch ``M`` makes ``EFF(M)`` epochs of reference-batch progress.
"""

from __future__ import annotations

import numpy as np

from benchmarks.replay import curve_epochs_to_target
from benchmarks.traces import Curve
from cotune.models import AccuracyModel, EpochsPrediction, StepTimePrediction, isotonic_grid

__all__ = ["IsotonicStepTime", "IsotonicAccuracy", "PolluxStepTime", "PolluxAccuracy", "pollux_log_step"]


def _points(workers: np.ndarray, hosts: np.ndarray, local_batch: np.ndarray, step_time_s: np.ndarray):
    keys = np.column_stack([workers, hosts, local_batch]).astype(float)
    points, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    mean_log = np.bincount(inverse.ravel(), weights=np.log(step_time_s)) / counts
    return points, mean_log, counts


def _prediction(log_mean: np.ndarray, extrapolated: np.ndarray, shape: tuple[int, ...]) -> StepTimePrediction:
    mean = np.exp(log_mean).reshape(shape)
    return StepTimePrediction(
        step_time_s=mean,
        lower_s=mean,
        upper_s=mean,
        log_sigma=np.zeros(shape),
        extrapolated=extrapolated.reshape(shape),
    )


class IsotonicStepTime:
    """Isotonic-only step-time model (no parametric backbone)."""

    def fit(self, workers, hosts, local_batch, step_time_s) -> "IsotonicStepTime":
        points, mean_log, counts = _points(*(np.asarray(v, float) for v in (workers, hosts, local_batch, step_time_s)))
        self.points_ = points
        self.iso_log_step_ = isotonic_grid(points, mean_log, counts.astype(float), increasing=(True, True, True))
        return self

    def predict(self, workers, hosts, local_batch) -> StepTimePrediction:
        w, h, b = (np.asarray(v, float) for v in np.broadcast_arrays(workers, hosts, local_batch))
        shape = w.shape
        q = np.column_stack([w.ravel(), h.ravel(), b.ravel()])
        p, f = self.points_, self.iso_log_step_
        below = np.all(p[None, :, :] <= q[:, None, :], axis=2)  # probes the query dominates
        above = np.all(p[None, :, :] >= q[:, None, :], axis=2)
        lo = np.where(below, f[None, :], -np.inf).max(axis=1)
        hi = np.where(above, f[None, :], np.inf).min(axis=1)
        # Neither bound: fall back to the nearest probe in doublings.
        scaled_p = np.column_stack([np.log2(p[:, 0]), np.minimum(p[:, 1], 2), np.log2(p[:, 2])])
        scaled_q = np.column_stack([np.log2(q[:, 0]), np.minimum(q[:, 1], 2), np.log2(q[:, 2])])
        nearest = f[np.argmin(((scaled_q[:, None, :] - scaled_p[None, :, :]) ** 2).sum(axis=2), axis=1)]
        both = np.isfinite(lo) & np.isfinite(hi)
        mid = np.where(both, (np.where(both, lo, 0.0) + np.where(both, hi, 0.0)) / 2, 0.0)
        log_mean = np.where(both, mid, np.where(np.isfinite(lo), lo, np.where(np.isfinite(hi), hi, nearest)))
        extrap = ~(np.isfinite(lo) & np.isfinite(hi))
        return _prediction(log_mean, extrap, shape)


def pollux_log_step(params: np.ndarray, workers: np.ndarray, hosts: np.ndarray, local_batch: np.ndarray) -> np.ndarray:
    """log T_iter of Pollux's throughput model (see the module docstring)."""
    a_g, b_g, a_r, b_r, a_n, b_n, gamma = params
    grad = np.maximum(a_g + b_g * local_batch, 1e-9)
    extra = np.maximum(workers - 2.0, 0.0)
    sync = np.where(hosts > 1, a_n + b_n * extra, a_r + b_r * extra)
    sync = np.where(workers > 1, np.maximum(sync, 1e-9), 1e-9)
    lg, ls = np.log(grad), np.log(sync)
    top = np.maximum(lg, ls)
    return top + np.log(np.exp(gamma * (lg - top)) + np.exp(gamma * (ls - top))) / gamma


class PolluxStepTime:
    """Pollux's throughput model, fitted to probes."""

    def fit(self, workers, hosts, local_batch, step_time_s) -> "PolluxStepTime":
        from scipy.optimize import least_squares

        points, mean_log, counts = _points(*(np.asarray(v, float) for v in (workers, hosts, local_batch, step_time_s)))
        w, h, b = points.T
        base = float(np.exp(mean_log[w == w.min()].mean()))
        free = np.ones(7, dtype=bool)
        x = np.array([base / 2, base / 2 / max(float(np.median(b)), 1.0), base * 0.1, base * 0.01, base * 0.2, base * 0.02, 1.0])
        if not np.any((w > 1) & (h == 1)):
            free[2:4] = False
            x[2:4] = [1e-9, 0.0]
        if not np.any(h > 1):
            free[4:6] = False
        if not np.any(w > 2):
            free[3] = free[5] = False
            x[3] = x[5] = 0.0
        if not np.any(w > 1):
            free[6] = False
        if np.unique(b).size < 2:
            free[0:2] = False
            x[0], x[1] = base / 2, base / 2 / float(b[0])

        def expand(v: np.ndarray) -> np.ndarray:
            full = x.copy()
            full[free] = v
            if not free[4]:
                full[4], full[5] = 1.1 * full[2], 1.1 * full[3]
            return full

        def resid(v: np.ndarray) -> np.ndarray:
            return (pollux_log_step(expand(v), w, h, b) - mean_log) * np.sqrt(counts)

        lower = np.array([0.0] * 6 + [1.0])[free]
        upper = np.array([np.inf] * 6 + [10.0])[free]
        x0 = np.clip(x[free], lower + 1e-12, np.where(np.isfinite(upper), upper - 1e-9, np.inf))
        if x0.size:
            x0 = least_squares(resid, x0, bounds=(lower, upper), x_scale="jac", max_nfev=400).x
        self.params_ = expand(x0)
        self.points_ = points
        self._max = points.max(axis=0)
        return self

    def predict(self, workers, hosts, local_batch) -> StepTimePrediction:
        w, h, b = (np.asarray(v, float) for v in np.broadcast_arrays(workers, hosts, local_batch))
        log_mean = pollux_log_step(self.params_, w.ravel(), h.ravel(), b.ravel())
        extrap = (w.ravel() > self._max[0]) | (h.ravel() > self._max[1]) | (b.ravel() > self._max[2])
        return _prediction(log_mean, extrap, w.shape)


class PolluxAccuracy:
    """Epochs to target from the reference curve and the gradient noise scale."""

    interval = 0.9
    # The solver reads a model's fitted copies (cotune's estimators keep them from ``fit``, so
    # a later set_params cannot move their answers); this one is fitted as it is built.
    interval_ = interval

    def __init__(self, *, reference: Curve, goal: str) -> None:
        self.reference = reference
        self.goal = self.goal_ = goal
        self.m0 = float(reference.global_batch)
        ok = (reference.grad_sqr > 0) & np.isfinite(reference.grad_var) & (reference.grad_var >= 0)
        phi = np.where(ok, reference.grad_var / np.where(ok, reference.grad_sqr, 1.0) * self.m0, np.nan)
        # A row without statistics borrows its neighbour's (rare in the traces).
        self.phi_ = np.asarray(np.where(np.isfinite(phi), phi, np.nanmedian(phi)), float)

    def epochs_to_target(self, global_batch, target: float) -> EpochsPrediction:
        gb = np.asarray(global_batch, float)
        e_ref = curve_epochs_to_target(self.reference, target, self.goal)
        out = np.full(gb.shape, np.inf)
        if np.isfinite(e_ref):
            edges = np.concatenate([[0.0], self.reference.epochs])
            width = np.clip(np.minimum(edges[1:], e_ref) - edges[:-1], 0.0, None)  # reference epochs spent in each row
            eff = (self.phi_[None, :] + self.m0) / (self.phi_[None, :] + gb.ravel()[:, None])
            out = (width[None, :] / eff).sum(axis=1).reshape(gb.shape)
        return EpochsPrediction(epochs=out, lower=out, upper=out, extrapolated=gb != self.m0)


class IsotonicAccuracy(AccuracyModel):
    """cotune's accuracy surface without the critical-batch extrapolation."""

    def noise_scale(self, target: float) -> float | None:
        return None
