"""Pure-Python isotonic regression, kept only as a test oracle.

cotune's own fit (cotune/models/_isotonic.py) batches every line of an axis into one
call of SciPy's compiled PAVA. This is the straightforward version it replaced: one
pool-adjacent-violators pass per line, written out in Python, and Dykstra's
alternating projections over the axes. Slow, but obviously right.
"""

from __future__ import annotations

import numpy as np


def pure_pava(y, w, *, increasing=True):
    y = np.asarray(y, dtype=float)
    w = np.asarray(w, dtype=float)
    if not increasing:
        return -pure_pava(-y, w, increasing=True)
    means, weights, counts = [], [], []
    for yi, wi in zip(y, w):
        means.append(yi)
        weights.append(wi)
        counts.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            wsum = weights[-2] + weights[-1]
            merged = (means[-2] * weights[-2] + means[-1] * weights[-1]) / wsum
            count = counts[-2] + counts[-1]
            del means[-1], weights[-1], counts[-1]
            means[-1], weights[-1], counts[-1] = merged, wsum, count
    return np.repeat(means, counts)


def pure_isotonic_grid(coords, y, w, *, increasing, max_iter=2000, tol=1e-12):
    coords = np.asarray(coords, dtype=float)
    y = np.asarray(y, dtype=float)
    w = np.asarray(w, dtype=float)
    m, d = coords.shape
    lines = []
    for a in range(d):
        groups = {}
        for i in range(m):
            key = tuple(np.delete(coords[i], a))
            groups.setdefault(key, []).append(i)
        lines.append([sorted(idx, key=lambda i: coords[i, a]) for idx in groups.values() if len(idx) > 1])
    x = y.copy()
    increments = [np.zeros(m) for _ in range(d)]
    for _ in range(max_iter):
        change = 0.0
        for a in range(d):
            z = x + increments[a]
            proj = z.copy()
            for idx in lines[a]:
                proj[idx] = pure_pava(z[idx], w[idx], increasing=increasing[a])
            increments[a] = z - proj
            change = max(change, float(np.max(np.abs(proj - x))))
            x = proj
        if change <= tol:
            break
    return x
