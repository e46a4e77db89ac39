"""Solve: pick the best feasible candidate from estimates (pure functions, no I/O).

Formulation (objective ``cost``; ``time`` swaps the roles of cost and time)::

    minimise    cost(c)                      over candidates c
    subject to  epochs_to_target(B_c) < ∞    (the target metric is reached)
                time_q(c) ≤ deadline_s       (time at confidence q; the mean if q is unset)
                cost(c)   ≤ budget           (optional)
                workers ≤ available(gpu), local_batch ≤ max_local_batch(gpu)   (the space)

Ties break on the other quantity, then on fewer workers. The Pareto frontier is taken
over candidates that reach the target, ignoring deadline and budget, so the user sees
what relaxing either would buy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cotune.solver._estimate import Estimates

__all__ = ["Feasibility", "feasibility", "best_index", "ranked", "pareto_indices"]


@dataclass(frozen=True)
class Feasibility:
    reaches: np.ndarray
    meets_deadline: np.ndarray
    within_budget: np.ndarray

    @property
    def all(self) -> np.ndarray:
        return self.reaches & self.meets_deadline & self.within_budget


def feasibility(est: Estimates, *, deadline_s: float | None, budget: float | None) -> Feasibility:
    reaches = np.isfinite(est.epochs)
    meets = np.ones_like(reaches) if deadline_s is None else est.time_at_confidence_s <= deadline_s
    within = np.ones_like(reaches) if budget is None else est.cost <= budget
    return Feasibility(reaches=reaches, meets_deadline=meets & reaches, within_budget=within & reaches)


def _keys(est: Estimates, objective: str) -> tuple[np.ndarray, ...]:
    primary, secondary = (est.cost, est.time_s) if objective == "cost" else (est.time_s, est.cost)
    return primary, secondary, est.candidates.workers


def ranked(est: Estimates, mask: np.ndarray, objective: str, *, limit: int | None = None) -> np.ndarray:
    """Indices of ``mask`` candidates, best first."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return idx
    primary, secondary, workers = (k[idx] for k in _keys(est, objective))
    if limit is not None and idx.size > 4 * limit:
        # Partial selection first: sorting a million keys is the slow part.
        part = np.argpartition(primary, 4 * limit)[: 4 * limit]
        idx, primary, secondary, workers = idx[part], primary[part], secondary[part], workers[part]
    order = np.lexsort((workers, secondary, primary))
    out = idx[order]
    return out if limit is None else out[:limit]


def best_index(est: Estimates, mask: np.ndarray, objective: str) -> int | None:
    """Index of the best candidate within ``mask`` (None if the mask is empty)."""
    top = ranked(est, mask, objective, limit=1)
    return int(top[0]) if top.size else None


def pareto_indices(est: Estimates, mask: np.ndarray) -> np.ndarray:
    """Candidates in ``mask`` not dominated in (time, cost), fastest first."""
    idx = np.flatnonzero(mask & np.isfinite(est.time_s) & np.isfinite(est.cost))
    if idx.size == 0:
        return idx
    t, c = est.time_s[idx], est.cost[idx]
    # Everything costlier than the fastest candidate, or slower than the cheapest, is
    # dominated by it: cut those before sorting (most of a large space).
    fastest, cheapest = np.argmin(t), np.argmin(c)
    keep_box = (c <= c[fastest]) & (t <= t[cheapest])
    idx, t, c = idx[keep_box], t[keep_box], c[keep_box]
    # Sort by time (ties by cost) and keep each strict new cost minimum.
    order = idx[np.lexsort((c, t))]
    costs = est.cost[order]
    running = np.minimum.accumulate(costs)
    keep = np.ones(order.size, dtype=bool)
    keep[1:] = costs[1:] < running[:-1]
    return order[keep]
