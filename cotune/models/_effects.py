"""Level effects: what the probes say that the monotone step-time law cannot.

Real step times are not smooth in every variable. A local batch that is not a multiple
of eight misses the tensor-core kernels and runs slower than the next larger one; a
worker count split unevenly over hosts (2 + 1) waits on its slowest link and runs
slower than the same count spread evenly (1 + 1 + 1). On the Pollux T4 traces a
monotone fit is 20–30 % off at such *measured* configurations, and the error is not
noise: repeats of one configuration agree within 0.3–0.7 %.

The monotone model's log residuals ``r_p`` at the probed configurations are decomposed
into additive effects of the levels the probes visited::

    r(w, h, b) ≈ α[b] + β[h] + γ[w, h] + δ[h, b]

— one value per measured local batch, host count, (workers, hosts) placement and
(hosts, local batch) pair. The effects are fitted by backfitting (Gauss–Seidel over
the four factors), each a shrunken mean of the partial residuals of its level::

    α[b] = Σ_{p: b_p = b} (r_p − β − γ − δ) / (n_b + λ)

with ``λ = SHRINKAGE`` pseudo-observations at zero, so a level seen once moves half as
far as its residual says and a level seen many times follows it. A level never probed
has effect 0: away from the probes the monotone law stands. Whether the effects are
used at all is the step-time model's decision, by cross-validation on the profile's
own probes (:class:`cotune.models.StepTimeModel`, ``level_effects``).

The pure functions here do the arithmetic; ``StepTimeModel`` wraps them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "FACTORS",
    "SHRINKAGE",
    "LevelEffects",
    "describe_level_effect",
    "fit_level_effects",
    "largest_level_effects",
    "predict_level_effects",
]

# Columns of (workers, hosts, local_batch) each factor groups by.
FACTORS: tuple[tuple[int, ...], ...] = ((2,), (1,), (0, 1), (1, 2))
# Pseudo-observations at zero per level. The benchmark's five-fold step-time MAPE inside
# the probed range (median of 18 Pollux T4 and Gavel/Shockwave cells; python -m
# benchmarks, model errors) at λ = 0.3 / 1 / 3 / 10: 4.65 / 4.61 / 5.13 / 5.97 % (8.1 %
# without effects). One pseudo-observation: a level seen once moves half way.
SHRINKAGE = 1.0
_SWEEPS = 30


@dataclass(frozen=True)
class LevelEffects:
    """Fitted effects: for each factor, its levels (rows of the grouped columns, sorted) and values."""

    factors: tuple[tuple[int, ...], ...]
    levels: tuple[np.ndarray, ...]  # per factor: (n_levels, len(factor)) level coordinates
    values: tuple[np.ndarray, ...]  # per factor: (n_levels,) effect in log step time


def _level_index(levels: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Index of each row of ``columns`` among ``levels`` (both (n, d)), or -1 where absent."""
    axes = [np.unique(levels[:, j]) for j in range(levels.shape[1])]

    def code(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # Mixed-radix code of the per-column positions: exact, and O(n log k) with searchsorted.
        out, found = np.zeros(rows.shape[0], np.int64), np.ones(rows.shape[0], bool)
        for axis, col in zip(axes, rows.T):
            pos = np.clip(np.searchsorted(axis, col), 0, axis.size - 1)
            found &= axis[pos] == col
            out = out * axis.size + pos
        return out, found

    level_codes, _ = code(levels)
    query_codes, found = code(columns)
    order = np.argsort(level_codes)
    pos = np.clip(np.searchsorted(level_codes[order], query_codes), 0, level_codes.size - 1)
    found &= level_codes[order][pos] == query_codes
    return np.where(found, order[pos], -1)


def fit_level_effects(
    points: np.ndarray, residual: np.ndarray, *, shrinkage: float = SHRINKAGE, factors: tuple[tuple[int, ...], ...] = FACTORS
) -> LevelEffects:
    """Additive level effects of ``residual`` at ``points`` ((k, 3) workers, hosts, local batch), one weight per point."""
    points = np.asarray(points, float)
    residual = np.asarray(residual, float)
    if shrinkage < 0:
        raise ValueError(f"shrinkage must be >= 0, got {shrinkage}")
    levels, inverse = [], []
    for cols in factors:
        lv, inv = np.unique(points[:, list(cols)], axis=0, return_inverse=True)
        levels.append(lv)
        inverse.append(inv.ravel())
    counts = [np.bincount(inv, minlength=lv.shape[0]).astype(float) for lv, inv in zip(levels, inverse)]
    values = [np.zeros(lv.shape[0]) for lv in levels]
    contrib = np.zeros((len(factors), residual.size))
    for _ in range(_SWEEPS if residual.size else 0):
        for f in range(len(factors)):
            partial = residual - (contrib.sum(axis=0) - contrib[f])
            values[f] = np.bincount(inverse[f], weights=partial, minlength=levels[f].shape[0]) / (counts[f] + shrinkage)
            contrib[f] = values[f][inverse[f]]
    return LevelEffects(factors=tuple(factors), levels=tuple(levels), values=tuple(values))


def predict_level_effects(effects: LevelEffects, workers: np.ndarray, hosts: np.ndarray, local_batch: np.ndarray) -> np.ndarray:
    """Sum of the effects of each query's levels (0 for a level no probe visited)."""
    q = np.column_stack([np.asarray(workers, float).ravel(), np.asarray(hosts, float).ravel(), np.asarray(local_batch, float).ravel()])
    out = np.zeros(q.shape[0])
    for cols, lv, val in zip(effects.factors, effects.levels, effects.values):
        if not val.size:
            continue
        i = _level_index(lv, q[:, list(cols)])
        out += np.where(i >= 0, val[np.maximum(i, 0)], 0.0)
    return out


def largest_level_effects(
    effects: LevelEffects, points: np.ndarray, *, limit: int = 4, min_share: float = 0.05
) -> tuple[tuple[str, tuple[float, ...], float], ...]:
    """What a user can act on: the local batches and placements whose probed configurations
    run furthest from the monotone law, as ``(kind, level, ratio)`` with ``kind`` "local
    batch" (level ``(b,)``) or "placement" (level ``(workers, hosts)``) and ``ratio`` the
    geometric mean over its probed configurations of measured / law (1.25: 25 % slower).

    The factors overlap (a batch's offset is shared between α[b] and δ[h, b]), so groups are
    read off the *total* effect at their configurations, greedily: the group furthest from
    the law is named, its mean is taken out of its configurations, and the next is chosen
    from what is left — a slow placement is not named again as a slow batch of its probes.
    Stops at ``limit`` or when no group is ``min_share`` from 1.
    """
    points = np.asarray(points, float)
    if not points.size:
        return ()
    left = predict_level_effects(effects, points[:, 0], points[:, 1], points[:, 2])
    groups = []
    for kind, cols in (("local batch", [2]), ("placement", [0, 1])):
        levels, inverse = np.unique(points[:, cols], axis=0, return_inverse=True)
        groups.append((kind, levels, inverse.ravel(), np.bincount(inverse.ravel(), minlength=len(levels)).astype(float)))
    out: list[tuple[str, tuple[float, ...], float]] = []
    named: set[tuple[str, int]] = set()
    while len(out) < limit:
        best = None
        for kind, levels, inverse, counts in groups:
            mean = np.bincount(inverse, weights=left, minlength=len(levels)) / counts
            mean[[i for k, i in named if k == kind]] = 0.0  # each group is named once
            i = int(np.argmax(np.abs(mean)))
            if best is None or abs(mean[i]) > abs(best[3]):
                best = (kind, levels, inverse, float(mean[i]), i)
        kind, levels, inverse, m, i = best  # type: ignore[misc]
        if abs(np.exp(m) - 1.0) < min_share:
            break
        out.append((kind, tuple(float(v) for v in levels[i]), float(np.exp(m))))
        named.add((kind, i))
        left = np.where(inverse == i, left - m, left)
    return tuple(out)


def describe_level_effect(effect: tuple[str, tuple[float, ...], float]) -> str:
    """One of :func:`largest_level_effects`' entries in words: "local batch 6 23% slower",
    "8 workers on 2 hosts 46% slower" (the one phrasing every report uses)."""
    kind, level, ratio = effect
    if kind == "local batch":
        where = f"local batch {level[0]:g}"
    else:
        where = (f"{level[0]:g} worker{'s' * (level[0] != 1)} on "
                 f"{level[1]:g} host{'s' * (level[1] != 1)}")
    return f"{where} {abs(ratio - 1):.0%} {'slower' if ratio > 1 else 'faster'}"
