"""Small robust statistics of step times (pure Python, no torch): median, spread, precision."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

__all__ = ["TimingSummary", "summarize", "median_rel_halfwidth"]


def _quantile(sorted_xs: Sequence[float], q: float) -> float:
    # Linear interpolation between order statistics (numpy's default "linear" rule).
    pos = q * (len(sorted_xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def median_rel_halfwidth(times_s: Sequence[float], *, z: float = 1.96) -> float:
    """Half-width of a distribution-free ~95 % interval of the median, relative to it.

    Uses the binomial order-statistic interval: ranks ``n/2 ± z·√n/2``. It needs no
    normality, which matters because step times have a long right tail (GC, the OS).
    """
    n = len(times_s)
    if n < 3:
        return math.inf
    xs = sorted(times_s)
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    med = _quantile(xs, 0.5)
    if med <= 0:
        return math.inf
    return (xs[hi] - xs[lo]) / 2 / med


@dataclass(frozen=True)
class TimingSummary:
    """Median and interquartile spread of a list of step times, in seconds."""

    median_s: float
    spread_s: float
    n: int
    rel_halfwidth: float


def summarize(times_s: Sequence[float]) -> TimingSummary:
    """Median, interquartile range and the relative precision of the median."""
    if not times_s:
        raise ValueError("no step times to summarize: the probe ran no timed steps")
    xs = sorted(float(t) for t in times_s)
    return TimingSummary(
        median_s=_quantile(xs, 0.5),
        spread_s=_quantile(xs, 0.75) - _quantile(xs, 0.25),
        n=len(xs),
        rel_halfwidth=median_rel_halfwidth(xs),
    )
