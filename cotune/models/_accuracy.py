"""Accuracy model: the best metric reached so far as a monotone surface over
(global batch, epochs), and epochs-to-target across batch sizes.

Fitting (the paper's isotonic model, made robust):

1. each run (global batch ``B``, seed) becomes its best-so-far curve — a NaN or
   diverged evaluation adds no progress instead of poisoning the curve;
2. curves are read on a common geometric epoch grid (linear between evaluations,
   missing outside a run's own epoch range);
3. seeds at one ``(B, epoch)`` are combined by their median (a collapsed seed among
   three does not move it), weighted by how many seeds are present;
4. a two-variable isotonic fit makes the surface non-decreasing in epochs and, by
   default, non-increasing in ``B`` at a fixed number of epochs.

Epochs to target at a measured ``B`` is where its fitted row first reaches the target
(linear between grid points). Between measured batches, ``log E`` is interpolated
linearly in ``log B``. Outside them the critical-batch relation of McCandlish et al.
(2018) extrapolates::

    E(B) ≈ E_min · (1 + B / B_noise)

anchored at the nearest measured batch; ``B_noise`` is fitted to the measured
``(B, E)`` pairs when two or more reach the target, else taken from the profile's
gradient-noise measurements. Goals of ``min`` (loss, WER) are handled by negating
the metric internally. Intervals come from a calibrated residual scale ``σ`` of the
surface: the earliest crossing of ``target − zσ`` and the latest of ``target + zσ``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cotune.errors import ModelError
from cotune.models._isotonic import isotonic_grid
from cotune.models._step_time import z_for

__all__ = ["AccuracyModel", "EpochsPrediction"]


@dataclass(frozen=True)
class EpochsPrediction:
    """Epochs (passes over the data) until the metric first reaches the target."""

    epochs: np.ndarray  # inf where the target is not reached
    lower: np.ndarray
    upper: np.ndarray
    extrapolated: np.ndarray  # bool: global batch outside the measured batches


def _crossing(grid: np.ndarray, row: np.ndarray, threshold: float) -> float:
    """First epoch at which a non-decreasing row reaches ``threshold`` (inf if never)."""
    valid = np.isfinite(row)
    if not np.any(valid):
        return np.inf
    g, r = grid[valid], row[valid]
    hit = np.flatnonzero(r >= threshold)
    if hit.size == 0:
        return np.inf
    i = int(hit[0])
    if i == 0:
        return float(g[0])
    r0, r1 = r[i - 1], r[i]
    frac = 0.0 if r1 == r0 else (threshold - r0) / (r1 - r0)
    return float(g[i - 1] + frac * (g[i] - g[i - 1]))


class AccuracyModel:
    """Monotone accuracy surface and epochs-to-target.

    Parameters
    ----------
    goal : ``"max"`` (accuracy-like) or ``"min"`` (loss-like).
    interval : central probability of reported intervals.
    grid_size : number of points of the geometric epoch grid.
    batch_monotone : also force the surface to be non-increasing in global batch.
    b_noise : gradient noise scale in samples, used when fewer than two measured
        batches reach a target.

    Attributes (after ``fit``)
    --------------------------
    batches_ : measured global batches, ascending
    epoch_grid_ : the common epoch grid
    surface_ : (len(batches_), len(epoch_grid_)) fitted score (metric, negated for
        ``goal="min"``); NaN beyond a batch's measured epochs
    max_epochs_ : last measured epoch of each batch
    residual_sigma_ : scale of the surface's uncertainty in metric units: the larger of
        the calibrated residual of runs (seeds) about the surface and the evaluation
        noise seen along each curve (1 % of the metric's range when every curve is too
        short, under six evaluations, to show its noise)
    eval_noise_ : evaluation-to-evaluation noise, in metric units
    n_runs_, n_diverged_ : runs seen and runs with a non-finite evaluation
    """

    def __init__(
        self,
        *,
        goal: str = "max",
        interval: float = 0.9,
        grid_size: int = 160,
        batch_monotone: bool = True,
        b_noise: float | None = None,
    ) -> None:
        if goal not in ("max", "min"):
            raise ValueError(f"goal must be 'max' or 'min', got {goal!r}")
        self.goal = goal
        self.interval = interval
        self.grid_size = grid_size
        self.batch_monotone = batch_monotone
        self.b_noise = b_noise

    def _score(self, metric: np.ndarray | float) -> np.ndarray:
        m = np.asarray(metric, float)
        return m if self.goal == "max" else -m

    def fit(
        self,
        global_batch: np.ndarray,
        epoch: np.ndarray,
        metric: np.ndarray,
        seed: np.ndarray | None = None,
    ) -> "AccuracyModel":
        global_batch = np.asarray(global_batch, float)
        epoch = np.asarray(epoch, float)
        score = self._score(metric)
        seed = np.zeros(global_batch.shape, int) if seed is None else np.asarray(seed, int)
        if global_batch.size == 0:
            raise ModelError(
                "the profile has no eval records, so accuracy cannot be predicted: "
                "record learning curves (cotune profile --curves ...) or add eval records"
            )
        keep = epoch > 0
        if not np.any(keep & np.isfinite(score)):
            raise ModelError("every eval record has epoch 0 or a non-finite metric: nothing to fit")
        lo = float(epoch[keep].min())
        hi = float(epoch[keep].max())
        grid = np.geomspace(lo, hi, self.grid_size) if hi > lo else np.array([lo])

        batches = np.unique(global_batch[keep])
        raw_rows: list[list[np.ndarray]] = [[] for _ in batches]
        n_diverged = 0
        eval_noise: list[float] = []
        for run_b, run_s in sorted(set(zip(global_batch[keep].tolist(), seed[keep].tolist()))):
            sel = keep & (global_batch == run_b) & (seed == run_s)
            order = np.argsort(epoch[sel], kind="stable")
            e, s = epoch[sel][order], score[sel][order]
            if not np.all(np.isfinite(s)):
                n_diverged += 1
            fin = s[np.isfinite(s)]
            if fin.size >= 6:
                # Evaluation noise: spread of successive differences late in the run,
                # where the trend is flat. One seed alone shows no seed-to-seed spread.
                tail = np.diff(fin[fin.size // 2 :])
                eval_noise.append(1.4826 * float(np.median(np.abs(tail - np.median(tail)))) / np.sqrt(2.0))
            s = np.where(np.isfinite(s), s, -np.inf)
            best = np.maximum.accumulate(s)
            ok = np.isfinite(best)
            if not np.any(ok):
                continue
            e, best = e[ok], best[ok]
            row = np.full(grid.shape, np.nan)
            inside = (grid >= e[0] - 1e-9) & (grid <= e[-1] + 1e-9)
            row[inside] = np.interp(grid[inside], e, best)
            raw_rows[int(np.searchsorted(batches, run_b))].append(row)

        present = [i for i, rows in enumerate(raw_rows) if rows]
        if not present:
            raise ModelError("no run has a finite metric: every learning curve diverged")
        batches = batches[present]
        raw_rows = [raw_rows[i] for i in present]

        med = np.full((len(batches), grid.size), np.nan)
        cnt = np.zeros((len(batches), grid.size))
        for i, rows in enumerate(raw_rows):
            stack = np.vstack(rows)
            cnt[i] = np.sum(np.isfinite(stack), axis=0)
            with np.errstate(all="ignore"), _quiet_nanmedian():
                med[i] = np.nanmedian(stack, axis=0)

        bi, gi = np.nonzero(cnt > 0)
        coords = np.column_stack([bi, gi]).astype(float)
        surface = np.full(med.shape, np.nan)
        surface[bi, gi] = self._fit_surface(coords, med[bi, gi], cnt[bi, gi], len(batches))

        resid = np.concatenate([(np.vstack(rows) - surface[i])[np.isfinite(np.vstack(rows))] for i, rows in enumerate(raw_rows)])
        resid = resid[np.isfinite(resid)]
        z = z_for(self.interval)
        sigma = float(np.quantile(np.abs(resid), self.interval)) / z if resid.size else 0.0

        self.batches_ = batches
        self.epoch_grid_ = grid
        self.surface_ = surface
        self.max_epochs_ = np.array([grid[np.isfinite(surface[i])].max() for i in range(len(batches))])
        self.eval_noise_ = float(np.median(eval_noise)) if eval_noise else 0.0
        floor = 1e-6
        if not eval_noise:
            # Curves too short to see their own noise: assume 1 % of the observed metric
            # range rather than a zero-width interval.
            finite = score[np.isfinite(score)]
            floor = max(floor, 0.01 * float(finite.max() - finite.min()))
        self.residual_sigma_ = max(sigma, self.eval_noise_, floor)
        self.n_runs_ = int(sum(len(r) for r in raw_rows))
        self.n_diverged_ = n_diverged
        self.b_noise_ = self.b_noise
        return self

    def _fit_surface(self, coords: np.ndarray, values: np.ndarray, weights: np.ndarray, n_batches: int) -> np.ndarray:
        if self.batch_monotone and n_batches > 1:
            return isotonic_grid(coords, values, weights, increasing=(False, True))
        # Without the batch constraint each batch's row is an independent 1-D fit;
        # np.nonzero ordered the points row by row, so concatenation keeps the order.
        parts = []
        for i in range(n_batches):
            sel = coords[:, 0] == i
            parts.append(isotonic_grid(coords[sel][:, 1:], values[sel], weights[sel], increasing=(True,)))
        return np.concatenate(parts)

    # -- epochs to target --------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "surface_"):
            raise ModelError("AccuracyModel is not fitted: call fit() first")

    def measured_epochs(self, target: float) -> dict[str, np.ndarray]:
        """Epochs to ``target`` (and interval ends) at each measured batch."""
        self._check_fitted()
        t = float(self._score(target))
        zs = z_for(self.interval) * self.residual_sigma_
        mid, low, up = (
            np.array([_crossing(self.epoch_grid_, row, thr) for row in self.surface_])
            for thr in (t, t - zs, t + zs)
        )
        return {"batches": self.batches_, "epochs": mid, "lower": low, "upper": up}

    def noise_scale(self, target: float) -> float | None:
        """``B_noise`` of the critical-batch relation for this target (None if unknown)."""
        m = self.measured_epochs(target)
        ok = np.isfinite(m["epochs"])
        if np.count_nonzero(ok) >= 2:
            return _fit_noise_scale(m["batches"][ok], m["epochs"][ok]) or self.b_noise
        return self.b_noise

    def epochs_to_target(self, global_batch: np.ndarray, target: float) -> EpochsPrediction:
        """Epochs until the metric first reaches ``target`` at each global batch."""
        self._check_fitted()
        gb = np.asarray(global_batch, float)
        shape = gb.shape
        q = gb.ravel()
        m = self.measured_epochs(target)
        b_noise = self.noise_scale(target)
        out = [self._interp_epochs(q, m["batches"], m[key], b_noise) for key in ("epochs", "lower", "upper")]
        extrap = (q < self.batches_[0]) | (q > self.batches_[-1])
        return EpochsPrediction(*(o.reshape(shape) for o in out), extrapolated=extrap.reshape(shape))

    @staticmethod
    def _interp_epochs(q: np.ndarray, batches: np.ndarray, epochs: np.ndarray, b_noise: float | None) -> np.ndarray:
        logb = np.log(batches)
        with np.errstate(divide="ignore"):
            loge = np.log(epochs)
        if len(batches) == 1:
            res = np.full(q.shape, epochs[0])
        else:
            # Interpolate where both neighbours are finite; an unreached neighbour makes
            # the interpolated batch unreached too (conservative).
            with np.errstate(over="ignore"):
                res = np.exp(np.interp(np.log(q), logb, np.where(np.isfinite(loge), loge, 1e300)))
            res = np.where(res > 1e200, np.inf, res)
            idx = np.clip(np.searchsorted(batches, q), 1, len(batches) - 1)
            both = np.isfinite(epochs[idx - 1]) & np.isfinite(epochs[idx])
            res = np.where(both | (q == batches[idx]) | (q == batches[idx - 1]), res, np.inf)
            exact = np.isin(q, batches)
            res = np.where(exact, epochs[np.clip(np.searchsorted(batches, q), 0, len(batches) - 1)], res)
        below, above = q < batches[0], q > batches[-1]
        if np.any(below | above):
            if b_noise is None:
                # No noise scale: smaller batches assumed no worse than the smallest
                # measured one; larger ones cannot be predicted.
                res = np.where(below, epochs[0], res)
                res = np.where(above, np.inf, res)
            else:
                law = lambda b, anchor_b, anchor_e: anchor_e * (1 + b / b_noise) / (1 + anchor_b / b_noise)  # noqa: E731
                res = np.where(below, law(q, batches[0], epochs[0]), res)
                res = np.where(above, law(q, batches[-1], epochs[-1]), res)
        return res

    # -- metric -------------------------------------------------------------------
    def metric_at(self, global_batch: np.ndarray, epochs: np.ndarray) -> np.ndarray:
        """Best metric reached within ``epochs`` at ``global_batch`` (NaN before the first evaluation).

        Epochs past a batch's last measurement keep its last value (no extrapolation
        in epochs); batches between measured ones interpolate linearly in log batch,
        batches outside them take the nearest measured row.
        """
        self._check_fitted()
        gb, ep = np.broadcast_arrays(np.asarray(global_batch, float), np.asarray(epochs, float))
        rows = np.empty((len(self.batches_),) + gb.shape)
        for i, row in enumerate(self.surface_):
            valid = np.isfinite(row)
            g, r = self.epoch_grid_[valid], row[valid]
            vals = np.interp(np.minimum(ep, g[-1]), g, r)
            rows[i] = np.where(ep < g[0], np.nan, vals)
        if len(self.batches_) == 1:
            score = rows[0]
        else:
            x = np.clip(np.log(gb), np.log(self.batches_[0]), np.log(self.batches_[-1]))
            idx = np.clip(np.searchsorted(np.log(self.batches_), x), 1, len(self.batches_) - 1)
            x0, x1 = np.log(self.batches_[idx - 1]), np.log(self.batches_[idx])
            frac = (x - x0) / (x1 - x0)
            lo = np.take_along_axis(rows, (idx - 1)[None], axis=0)[0]
            hi = np.take_along_axis(rows, idx[None], axis=0)[0]
            score = lo + frac * (hi - lo)
        return self._score(score)


def _fit_noise_scale(batches: np.ndarray, epochs: np.ndarray) -> float | None:
    """Least squares of ``log E = log E_min + log(1 + B/B_noise)``; None if degenerate."""
    from scipy.optimize import least_squares

    logb, loge = np.log(batches), np.log(epochs)

    def resid(x: np.ndarray) -> np.ndarray:
        log_emin, log_bn = x
        return log_emin + np.log1p(batches / np.exp(log_bn)) - loge

    x0 = np.array([loge.min(), np.log(np.median(batches))])
    res = least_squares(resid, x0, bounds=([-50, logb.min() - 10], [50, logb.max() + 10]))
    if not res.success:
        return None
    return float(np.exp(res.x[1]))


class _quiet_nanmedian:
    """Silence numpy's 'All-NaN slice' warning: such cells are masked out anyway."""

    def __enter__(self) -> None:
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc: object) -> None:
        self._ctx.__exit__(*exc)
