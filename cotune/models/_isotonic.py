"""Monotone (isotonic) least squares on a grid of several variables.

The pure function :func:`isotonic_grid` does the maths; the estimators in
``_step_time`` and ``_accuracy`` wrap it.

Problem. Points ``i`` sit at integer grid coordinates ``c_i ∈ ℤ^d`` with values
``y_i`` and weights ``w_i > 0``. Find ``f`` minimising ``Σ w_i (f_i − y_i)²`` subject to
``f_i ≤ f_j`` (or ``≥`` for a decreasing axis) whenever ``i`` and ``j`` lie on the same
line along an axis (every other coordinate equal) and ``c_i[a] < c_j[a]``.

Method. The feasible set is the intersection of one convex set per axis, and the
weighted projection onto each is a batch of independent one-dimensional isotonic
regressions (pool-adjacent-violators, PAVA) along that axis's lines, solved by SciPy's
compiled PAVA in one call per axis (see :func:`_pava_batch`). Dykstra's
alternating projections converge to the projection onto the intersection — the exact
multi-variable isotonic fit — unlike plain alternating projections, which only find
*a* feasible point. On a complete grid the line constraints imply the full product
order by transitivity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cotune._checks import BadValue, excerpt

__all__ = ["SMALL_PAVA", "pava", "isotonic_grid"]


def pava(y: np.ndarray, w: np.ndarray | None = None, *, increasing: bool = True) -> np.ndarray:
    """Weighted one-dimensional isotonic regression (pool adjacent violators).

    Returns the non-decreasing (``increasing=True``) or non-increasing sequence that is
    closest to ``y`` in weighted least squares. SciPy's compiled PAVA does the work;
    sequences of at most ``SMALL_PAVA`` values (the accuracy model's anchors, at
    prediction time) use a short stack-based PAVA here instead, because importing
    ``scipy.optimize`` (≈ 0.35 s) would be most of a warm ``cotune recommend``.
    """
    y = np.asarray(y, dtype=float)
    if y.size <= 1:
        return y.copy()
    w = np.ones(y.size) if w is None else np.asarray(w, dtype=float)
    if y.size <= SMALL_PAVA:
        sign = 1.0 if increasing else -1.0
        return sign * _pava_small(sign * y, w)
    return _pava_batch(y, w, None, increasing)


SMALL_PAVA = 64


def _pava_small(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Non-decreasing weighted PAVA: merge adjacent blocks while their means decrease."""
    means: list[float] = []
    weights: list[float] = []
    sizes: list[int] = []
    for v, wt in zip(y.tolist(), w.tolist()):
        means.append(v)
        weights.append(wt)
        sizes.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            m2, w2, n2 = means.pop(), weights.pop(), sizes.pop()
            total = weights[-1] + w2
            means[-1] = (means[-1] * weights[-1] + m2 * w2) / total
            weights[-1] = total
            sizes[-1] += n2
    return np.repeat(means, sizes)


def _pava_batch(y: np.ndarray, w: np.ndarray, segment: np.ndarray | None, increasing: bool) -> np.ndarray:
    """Independent isotonic regressions of consecutive segments in one compiled call.

    ``segment`` numbers the segments (non-decreasing along ``y``). Lifting segment k by
    k·(span + 1), where span is the range of all values, puts every value of a segment
    above every value of the segments before it, so the concatenated per-segment
    solutions are already monotone across boundaries and hence the joint solution:
    PAVA never pools across a boundary. One call replaces one Python-level call per
    line, which was most of the fit time (issue 12).
    """
    from scipy.optimize import isotonic_regression

    sign = 1.0 if increasing else -1.0
    z = sign * y
    if segment is None:
        return sign * isotonic_regression(z, weights=w).x
    span = float(np.max(z) - np.min(z)) + 1.0
    lift = segment * span
    return sign * (isotonic_regression(z + lift, weights=w).x - lift)


def _lines(coords: np.ndarray, axis: int) -> list[np.ndarray]:
    """Index arrays of the points on each line along ``axis``, sorted along it."""
    others = np.delete(coords, axis, axis=1)
    if others.shape[1] == 0:
        return [np.argsort(coords[:, axis], kind="stable")]
    # np.lexsort sorts by its last key first: group by the other axes, then order along `axis`.
    keys = [coords[:, axis]] + [others[:, k] for k in reversed(range(others.shape[1]))]
    order = np.lexsort(keys)
    sorted_others = others[order]
    breaks = np.flatnonzero(np.any(np.diff(sorted_others, axis=0) != 0, axis=1)) + 1
    return [seg for seg in np.split(order, breaks) if seg.size > 1]


def _floats(value: Any, name: str) -> np.ndarray:
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):  # "x", ragged lists, objects
        raise BadValue(f"must be an array of numbers, got {excerpt(value)}", where=name) from None


def isotonic_grid(
    coords: np.ndarray,
    y: np.ndarray,
    w: np.ndarray | None = None,
    *,
    increasing: bool | tuple[bool, ...] | list[bool],
    max_iter: int = 500,
    tol: float = 1e-9,
) -> np.ndarray:
    """Least-squares fit of ``y`` that is monotone along every grid axis.

    Parameters
    ----------
    coords : (m, d) array of grid coordinates (any ordered numbers; equal values mean
        the same grid line). Points must be unique — aggregate repeats first and pass
        their count as weight.
    y : (m,) values. w : (m,) positive weights (default 1).
    increasing : one flag per axis (or one for all); ``False`` makes that axis non-increasing.

    Returns the fitted values, in the order of ``y``.
    """
    # Bad input is a BadValue (an InputError, and a ValueError as before) naming the argument:
    # a public function, whose callers catch cotune's errors.
    coords = _floats(coords, "coords")
    if coords.ndim == 1:
        coords = coords[:, None]
    if coords.ndim != 2:
        raise BadValue(f"must be an (m, d) array of grid coordinates, got {coords.ndim} dimensions", where="coords")
    y = _floats(y, "y")
    m, d = coords.shape
    if y.shape != (m,):
        raise BadValue(f"must have shape ({m},) to match coords, got {y.shape}", where="y")
    if isinstance(increasing, np.ndarray) and increasing.ndim == 0:
        # A 0-d array has __len__ but no length: its one value (np.array(True) is one flag for all).
        increasing = increasing[()]
    if isinstance(increasing, (bool, np.bool_)):
        increasing = (bool(increasing),) * d  # one flag for every axis
    if isinstance(increasing, str) or not hasattr(increasing, "__len__") or len(increasing) != d:
        raise BadValue(f"needs one flag per axis ({d}) or one for all, got {excerpt(increasing)}", where="increasing")
    if not np.all(np.isfinite(coords)):
        raise BadValue("must be finite: a NaN coordinate lies on no grid line", where="coords")
    if m and np.unique(coords, axis=0).shape[0] != m:
        raise BadValue("must be unique: aggregate repeated points first and pass their count as weight", where="coords")
    w = np.ones(m) if w is None else _floats(w, "w")
    if w.shape != (m,):
        raise BadValue(f"must have shape ({m},) to match coords, got {w.shape}", where="w")
    if np.any(w <= 0) or not np.all(np.isfinite(w)):
        raise BadValue("weights must be positive and finite", where="w")
    if not np.all(np.isfinite(y)):
        raise BadValue("must be finite", where="y")
    if m == 0:
        return y.copy()
    # One concatenated order per axis: the points of every line, line after line.
    batches = []
    for a in range(d):
        segs = _lines(coords, a)
        if not segs:
            batches.append(None)
            continue
        order = np.concatenate(segs)
        segment = np.repeat(np.arange(len(segs), dtype=float), [seg.size for seg in segs])
        batches.append((order, segment, w[order]))

    def project(z: np.ndarray, a: int) -> np.ndarray:
        out = z.copy()
        if batches[a] is not None:
            order, segment, wa = batches[a]
            out[order] = _pava_batch(z[order], wa, segment, increasing[a])
        return out

    x = y.copy()
    if d == 1:
        return project(x, 0)
    increments = [np.zeros(m) for _ in range(d)]
    scale = max(float(np.max(np.abs(y))), 1e-12)
    for _ in range(max_iter):
        change = 0.0
        for a in range(d):
            z = x + increments[a]
            proj = project(z, a)
            increments[a] = z - proj
            change = max(change, float(np.max(np.abs(proj - x))))
            x = proj
        if change <= tol * scale:
            break
    return x
