"""The critical-batch law's fit written out plainly, kept only as a test oracle.

:func:`cotune.models._accuracy.fit_noise_scale` profiles only the grid rows that can hold
the loss's minimum, lets a row leave the reweighting loop once its value repeats, and
profiles a few golden-section steps ahead at once. This is the version it replaced: every
grid row, all 30 passes, one step at a time. The two must agree to the last bit (the same
operations on the same operands), which ``tests/core/test_noise_scale_fast.py`` checks.
"""

from __future__ import annotations

import math

import numpy as np


def soft_l1_location(x: np.ndarray, *, f: float = 0.1, passes: int = 30) -> np.ndarray:
    """Every row: ``passes`` reweighted means from its median, all rows every pass."""
    a = np.median(x, axis=1)
    for _ in range(passes):
        w = 1.0 / np.sqrt(1.0 + ((x - a[:, None]) / f) ** 2)
        a = np.sum(w * x, axis=1) / np.sum(w, axis=1)
    return a


def fit_noise_scale(batches: np.ndarray, epochs: np.ndarray, *, robust: bool = True) -> tuple[float, float] | None:
    batches, epochs = np.asarray(batches, float), np.asarray(epochs, float)
    if batches.size < 2:
        return None
    logb, loge = np.log(batches), np.log(epochs)
    f = 0.1

    def profile(log_bn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = loge[None, :] - np.log1p(batches[None, :] / np.exp(log_bn)[:, None])
        if not robust:
            a = x.mean(axis=1)
            return a, np.sum((x - a[:, None]) ** 2, axis=1)
        a = soft_l1_location(x, f=f)
        r = (x - a[:, None]) / f
        return a, np.sum(2 * f * f * (np.sqrt(1.0 + r * r) - 1.0), axis=1)

    grid = np.linspace(float(logb.min()) - 10.0, float(logb.max()) + 10.0, 241)
    _, loss = profile(grid)
    if not np.all(np.isfinite(loss)):
        return None
    k = int(np.argmin(loss))
    left, right = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
    g = (math.sqrt(5) - 1) / 2
    for _ in range(40):
        m1, m2 = right - g * (right - left), left + g * (right - left)
        l1, l2 = profile(np.array([m1, m2]))[1]
        left, right = (left, m2) if l1 <= l2 else (m1, right)
    best = np.array([0.5 * (left + right)])
    a, _ = profile(best)
    return float(a[0]), float(math.exp(best[0]))
