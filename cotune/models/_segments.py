"""Statistics of many small groups at once, on flat arrays.

The accuracy model reads the same few statistics — a median, a survival curve's median,
a value interpolated along a curve — for every run or every measured batch of a profile,
and again at every target level it is asked about. Computed group by group, each is a few
numpy calls on one to five values, and their fixed cost (microseconds each) times the
groups times the levels made `cotune fit` take minutes on a pooled profile of thousands of
batches. Here each statistic is one pass over all the groups.

Each function returns, value for value, what the per-group call it replaces returns: the
same floating-point operations on the same operands, in the same order (a median of an even
count is ``(a + b) / 2`` as ``statistics.median`` and ``np.median`` both compute it; a
product runs left to right as ``np.prod`` and a Python loop do). So vectorizing changes no
prediction, to the last bit; ``tests/core/test_segments.py`` checks each against the
per-group call.

A group is named by a non-negative integer label per value (``group``); ``n_groups`` is the
number of labels, so a label with no value reads NaN (or the documented empty value).
"""

from __future__ import annotations

import numpy as np

__all__ = ["group_starts", "segment_median", "segment_km_median", "segment_std_of_two", "interp_segments"]


def group_starts(counts: np.ndarray) -> np.ndarray:
    """Offsets of consecutive groups of the given sizes: ``[0, c0, c0 + c1, …]`` (length + 1)."""
    out = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _sorted_within(values: np.ndarray, group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``values`` sorted by group, then by value (stable), with each group's size and start."""
    order = np.lexsort((values, group))
    counts = np.bincount(group, minlength=n_groups)
    return values[order], counts, group_starts(counts)[:-1]


def segment_median(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """Median of each group's values (NaN for a group with none).

    The middle value of an odd count, ``(a + b) / 2`` of the two middle ones of an even
    count — exactly ``statistics.median`` and ``np.median`` of the group. ``values``
    must not hold NaN (neither median has a meaning for it).
    """
    values = np.asarray(values, float)
    group = np.asarray(group, np.int64)
    v, counts, start = _sorted_within(values, group, n_groups)
    out = np.full(n_groups, np.nan)
    has = counts > 0
    half = counts[has] // 2
    upper = v[start[has] + half]
    lower = v[start[has] + np.maximum(half - 1, 0)]
    out[has] = np.where(counts[has] % 2 == 0, (lower + upper) / 2, upper)
    return out


def segment_std_of_two(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """``np.std`` (population) of each group that has exactly two values; NaN elsewhere.

    The same operations as ``np.std`` on two values: the mean ``(a + b) / 2``, the squared
    deviations summed and divided by two, the square root.
    """
    values = np.asarray(values, float)
    group = np.asarray(group, np.int64)
    order = np.argsort(group, kind="stable")
    v, g = values[order], group[order]
    counts = np.bincount(g, minlength=n_groups)
    start = group_starts(counts)[:-1]
    out = np.full(n_groups, np.nan)
    two = np.flatnonzero(counts == 2)
    a, b = v[start[two]], v[start[two] + 1]
    mean = (a + b) / 2.0
    da, db = a - mean, b - mean
    out[two] = np.sqrt((da * da + db * db) / 2.0)
    return out


def segment_km_median(times: np.ndarray, event: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """Kaplan–Meier median of each group's event times with right-censoring (∞ where the
    survival never falls to ½, and for a group with no value).

    Per group, the times sorted with events before censorings at a tie; the survival
    multiplies by ``1 − 1/at_risk`` at each event, left to right, and the median is the
    first event time where it is at most ``½ + 1e-12``. Groups of the same size share one
    2-D running product (``np.multiply.accumulate`` along the group, which is the loop's
    own order), so the Python loop runs once per distinct group size.
    """
    times = np.asarray(times, float)
    event = np.asarray(event, bool)
    group = np.asarray(group, np.int64)
    order = np.lexsort((~event, times, group))
    t, ev, g = times[order], event[order], group[order]
    counts = np.bincount(g, minlength=n_groups)
    start = group_starts(counts)[:-1]
    at_risk = counts[g] - (np.arange(g.size) - start[g])
    factor = np.where(ev, 1.0 - 1.0 / np.maximum(at_risk, 1), 1.0)
    surv = np.empty(g.size)
    for size in np.unique(counts[counts > 0]):
        rows = start[counts == size][:, None] + np.arange(size)[None, :]
        surv[rows] = np.multiply.accumulate(factor[rows], axis=1)
    out = np.full(n_groups, np.inf)
    hit = np.flatnonzero(ev & (surv <= 0.5 + 1e-12))
    first_group, first = np.unique(g[hit], return_index=True)
    out[first_group] = t[hit[first]]
    return out


def interp_segments(x: np.ndarray, segment: np.ndarray, starts: np.ndarray, xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """``np.interp(x[i], xp[s:e], fp[s:e])`` for every ``i``, where ``s, e = starts[segment[i]],
    starts[segment[i] + 1]``: each query along its own curve, all curves concatenated.

    Each curve's ``xp`` must be non-decreasing (repeats allowed). Like ``np.interp``: the
    bracketing point is the last one at or below ``x``, found here by bisection in every
    curve at once; below the first point the first value, at or past the last the last
    value, an exact hit its value, else ``slope · (x − xp[j]) + fp[j]`` with
    ``slope = (fp[j+1] − fp[j]) / (xp[j+1] − xp[j])`` (from the right end if that is NaN).
    """
    x = np.asarray(x, float)
    segment = np.asarray(segment, np.int64)
    first, end = starts[segment], starts[segment + 1]
    lo, hi = first.copy(), end.copy()
    top = xp.size - 1
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) // 2
        right = x >= xp[np.minimum(mid, top)]
        lo = np.where(active & right, mid + 1, lo)
        hi = np.where(active & ~right, mid, hi)
    j = lo - 1  # the last point at or below x (first − 1: x is below the curve)
    out = np.empty(x.shape)
    below = j < first
    out[below] = fp[first[below]]
    last = ~below & (j == end - 1)
    out[last] = fp[j[last]]
    inner = ~below & ~last
    ji, xi = j[inner], x[inner]
    exact = xp[ji] == xi
    with np.errstate(all="ignore"):
        slope = (fp[ji + 1] - fp[ji]) / (xp[ji + 1] - xp[ji])
        val = slope * (xi - xp[ji]) + fp[ji]
        redo = np.isnan(val)
        val = np.where(redo, slope * (xi - xp[ji + 1]) + fp[ji + 1], val)
        val = np.where(redo & np.isnan(val) & (fp[ji] == fp[ji + 1]), fp[ji], val)
    out[inner] = np.where(exact, fp[ji], val)
    return out
