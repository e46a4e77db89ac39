"""Solve: pick the best feasible candidate from estimates (pure functions, no I/O).

Formulation (objective ``cost``; ``time`` swaps the roles of cost and time, and minimises
the time at the confidence ``time_q``, the time the plan is promised by)::

    minimise    cost(c)                      over candidates c
    subject to  P(reach)(c) ≥ q              (the target metric is reached at all)
                time_q(c) ≤ deadline_s       (⇔ P(success) ≥ q on demand; q = 0.5, the median, if unset)
                cost_q(c) ≤ budget           (optional; ⇔ P(success) ≥ q with the budget, on demand)
                workers ≤ available(gpu), local_batch ≤ max_local_batch(gpu)   (the space)

On spot and mixed rows ``time_q`` is the later of two times (the revocation model's
quantile and ``P(success)``'s, docs/spot.md): there feasibility implies ``P(success) ≥ q``
but not the converse.

Ties break on the other quantity, then on fewer hosts, then fewer workers. Near-ties —
costs within the prediction's own uncertainty, among every feasible candidate — go to the
safer candidate (:func:`prefer_safer`): higher ``P(success)``, then less extrapolation; a
best cost of 0 has no margin, and its exact ties keep that order. The Pareto frontier is taken
over candidates that reach the target, ignoring deadline and budget, so the user sees
what relaxing either would buy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cotune.solver._estimate import DEFAULT_CONFIDENCE, Estimates, cost_at_confidence, success_probability
from cotune.units import format_chance

__all__ = ["Feasibility", "feasibility", "best_index", "ranked", "pareto_indices", "thin_frontier", "prefer_safer", "with_success"]

# Near-tie: within half the chosen candidate's own log-σ of time, and never more than 5 %.
NEAR_TIE_SIGMAS = 0.5
NEAR_TIE_MAX = 0.05


@dataclass(frozen=True)
class Feasibility:
    reaches: np.ndarray
    meets_deadline: np.ndarray
    within_budget: np.ndarray

    @property
    def all(self) -> np.ndarray:
        return self.reaches & self.meets_deadline & self.within_budget


def with_success(
    est: Estimates, *, deadline_s: float | None, startup_s: float = 0.0, budget: float | None = None
) -> Estimates:
    """The estimates with ``p_success`` filled in for this deadline (and budget)."""
    from dataclasses import replace

    return replace(est, p_success=success_probability(est, deadline_s=deadline_s, startup_s=startup_s, budget=budget))


def feasibility(
    est: Estimates, *, deadline_s: float | None, budget: float | None, confidence: float | None = None
) -> Feasibility:
    q = DEFAULT_CONFIDENCE if confidence is None else confidence
    # At P(reach) = q exactly (a target equal to the best measured value reads ½) a plan
    # without a deadline has P(success) = P(reach) = q: it is one. With a deadline its time
    # at q is ∞ (models.md § 3), so the deadline refuses it, and relax names the chance.
    reaches = np.isfinite(est.epochs) & (est.p_reach >= q)
    meets = np.ones_like(reaches) if deadline_s is None else est.time_at_confidence_s <= deadline_s
    # The cost at the confidence, as the deadline is met at it: a plan promised at q = 0.9
    # stays within the budget nine times in ten, not only in the median.
    within = np.ones_like(reaches) if budget is None else cost_at_confidence(est) <= budget
    return Feasibility(reaches=reaches, meets_deadline=meets & reaches, within_budget=within & reaches)


def _time_key(est: Estimates) -> np.ndarray:
    """What ``objective="time"`` minimises: the time the plan finishes by at its confidence
    (the ``q``-quantile of the time to success), not the median — asked for speed at
    q = 0.9, a plan whose median is 10 min and whose 90 % time is 20 min loses to one at 11
    and 12. At the default q = ½ with the target sure to be reached it is the median."""
    return est.time_at_confidence_s


def _keys(est: Estimates, objective: str) -> tuple[np.ndarray, ...]:
    primary, secondary = (est.cost, est.time_s) if objective == "cost" else (_time_key(est), est.cost)
    return primary, secondary, est.candidates.hosts, est.candidates.workers


def _top_lexicographic(keys: tuple[np.ndarray, ...], *, k: int) -> np.ndarray:
    """Positions holding the ``k`` smallest rows in the lexicographic order of ``keys``
    (most significant first), and perhaps a few more, without sorting them all.

    A cut on the first key alone drops arbitrary members of a tie: at zero prices every cost
    is 0, and a cut of the costs kept any ``4 k`` of a million, not the fastest. So each key
    keeps what is strictly below its ``k``-th value and passes the rows equal to it on to the
    next key; rows equal in every key are interchangeable (the earliest are kept, as a
    stable sort would). Linear in the rows for each key, so a huge tie set stays cheap.
    """
    n = keys[0].size
    rows = np.arange(n)
    kept: list[np.ndarray] = []
    need = k
    for key in keys:
        if rows.size <= 4 * need:
            break
        v = key[rows]
        thr = np.partition(v, need - 1)[need - 1]
        if np.isnan(thr):
            break  # NaN sorts last and equals nothing: keep the rest whole
        below = v < thr
        kept.append(rows[below])
        need -= int(below.sum())
        rows = rows[v == thr]
    else:
        rows = rows[: max(need, 0)]
    return np.concatenate(kept + [rows])


def ranked(est: Estimates, mask: np.ndarray, objective: str, *, limit: int | None = None) -> np.ndarray:
    """Indices of ``mask`` candidates, best first."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return idx
    primary, secondary, hosts, workers = (k[idx] for k in _keys(est, objective))
    if limit is not None and idx.size > 4 * limit:
        # Partial selection first: sorting a million keys is the slow part.
        part = _top_lexicographic((primary, secondary, hosts, workers), k=limit)
        idx, primary, secondary, hosts, workers = idx[part], primary[part], secondary[part], hosts[part], workers[part]
    order = np.lexsort((workers, hosts, secondary, primary))
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


def thin_frontier(front: np.ndarray, *, limit: int, keep: int | None = None) -> np.ndarray:
    """At most ``limit`` points of ``front`` (candidate indices, fastest first), evenly
    spread along it, always with both ends — and with ``keep`` (the chosen candidate)
    when it lies on the frontier, so the point a report marks as chosen is shown.

    ``limit`` must be >= 1; with ``limit`` 1 and ``keep`` on the frontier, ``keep`` alone.
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1 (frontier points to show); got {limit!r}")
    front = np.asarray(front)
    if front.size <= limit:
        return front
    pos = np.unique(np.round(np.linspace(0, front.size - 1, limit)).astype(int))
    at = np.flatnonzero(front == keep) if keep is not None else np.array([], dtype=int)
    if at.size and at[0] not in pos:
        # Replace the spread point nearest the chosen one (never an end unless limit < 3).
        inner = pos[1:-1] if pos.size > 2 else pos
        pos = np.sort(np.append(np.setdiff1d(pos, inner[np.argmin(np.abs(inner - at[0]))]), at[0]))
    return front[pos]


#: How much higher a near-tie's P(success) must be than the best's to count as safer on it.
P_SAFER_STEP = 0.02


def _risk_keys(est: Estimates, best: int) -> tuple[np.ndarray, ...]:
    """The near-tie order's keys, one array each, smaller safer: P(success) in steps of
    :data:`P_SAFER_STEP` from the best candidate's (``best``) — within one step either way
    is the best's own — then how far the prediction reaches beyond the data, then the
    hosts. Steps counted from the best's chance, not from 0: with fixed 2-point bins a
    0.07-point gap across a bin's edge (0.9903 vs 0.9896) chose the plan, and the note gave
    a reason the numbers did not bear out."""
    p = np.ones(est.candidates.hosts.size) if est.p_success is None else np.asarray(est.p_success, dtype=float)
    gain = p - p[best]
    steps = np.sign(gain) * np.floor(np.abs(gain) / P_SAFER_STEP + 1e-9)
    return (
        -np.nan_to_num(steps, nan=-np.inf),
        np.asarray(est.time_extrapolated, dtype=float),
        np.round(np.asarray(est.epochs_distance, dtype=float), 1),
        est.candidates.hosts.astype(float),
    )


def _risk_key(est: Estimates, i: int, best: int) -> tuple[float, ...]:
    return tuple(float(k[i]) for k in _risk_keys(est, best))


def _reasons(est: Estimates, i: int, j: int) -> list[str]:
    """Why candidate ``i`` is safer than the best, ``j`` (in words): each risk key
    (:func:`_risk_keys`) on which ``i`` comes first, said with the numbers that put it
    there — the first of them is the one that decided."""
    keys = _risk_keys(est, j)
    better = [bool(k[i] < k[j]) for k in keys]
    out = []
    if better[0]:
        assert est.p_success is not None  # without chances every row's first key is 0
        chance = lambda k: format_chance(float(est.p_success[k]), digits=0, percent=True)  # noqa: E731
        out.append(f"P(success) {chance(i)} vs {chance(j)}")
    if better[1]:
        out.append("step time within the probed configurations")
    if better[2]:
        di, dj = est.epochs_distance[i], est.epochs_distance[j]
        out.append("a measured global batch" if di < 0.05 else f"global batch {di:.1f} vs {dj:.1f} doublings from a measured one")
    if better[3]:
        out.append(f"{_hosts(int(est.candidates.hosts[i]))} instead of {int(est.candidates.hosts[j])}")
    if est.p_success is not None and keys[0][i] == keys[0][j] and est.p_success[i] < est.p_success[j]:
        # Within a step of the best's chance counts as the best's own: said where the chosen
        # one's is lower, so the note never calls a less likely plan safer without saying so.
        chance = lambda k: format_chance(float(est.p_success[k]), digits=1, percent=True)  # noqa: E731
        out.append(f"at P(success) {chance(i)} vs {chance(j)} (less than {P_SAFER_STEP * 100:.0f} points apart: "
                   "equal for this choice)")
    return out


def _hosts(n: int) -> str:
    return f"{n} host" if n == 1 else f"{n} hosts"


def prefer_safer(
    est: Estimates, order: np.ndarray, objective: str, *, feasible: np.ndarray
) -> tuple[np.ndarray, str | None]:
    """Move the safest near-tie of the best candidate to the front, and say why.

    ``order``: the ranking (best first), perhaps cut to what is shown; ``feasible``: the mask
    of every feasible candidate, the near-ties' pool — drawn from the shown rows alone, the
    choice depended on how many were shown (``top``).

    A near-tie costs (or, for ``objective="time"``, takes) at most
    ``min(NEAR_TIE_SIGMAS · σ_T, NEAR_TIE_MAX)`` more, relatively, than the best, where
    ``σ_T`` is the best candidate's own log-σ of time: a difference the prediction cannot
    resolve. Among near-ties the key is higher ``P(success)`` (by 2 points or more than the best's), then step
    time inside the probed box, then fewer doublings from a measured batch, then fewer hosts,
    then the ranking's own order. A best of key 0 (free plans) has no relative margin: only
    exact ties, and the ranking's tie order (time, hosts, workers) decides those.
    """
    if order.size == 0:
        return order, None
    key = est.cost if objective == "cost" else _time_key(est)
    best = int(order[0])
    if not np.isfinite(key[best]) or key[best] <= 0.0:
        # Not finite: the best finishes by no time at its confidence (a chance of exactly
        # q), nothing to be within a relative margin of. Zero: every free plan "tied" at
        # +0.0 % and the safest of them won over the fastest (483 s over 412 s at $0).
        return order, None
    tol = min(NEAR_TIE_SIGMAS * float(est.log_sigma_time[best]), NEAR_TIE_MAX)
    pool = np.asarray(feasible, dtype=bool).copy()
    pool[best] = True
    ties = np.flatnonzero(pool & (key <= key[best] * (1.0 + tol)))
    safest = _safest(est, ties, objective, best=best)
    if safest == best or _risk_key(est, safest, best) == _risk_key(est, best, best):
        return order, None
    why = _reasons(est, safest, best)
    c = est.candidates
    extra = key[safest] / key[best] - 1.0
    label = lambda i: f"{int(c.workers[i])}×{c.gpus[int(c.gpu[i])]} on {_hosts(int(c.hosts[i]))}, local batch {int(c.local_batch[i])}"  # noqa: E731
    note = (
        f"near-tie: chose {label(safest)} over {label(best)} ({extra:+.1%} {objective}, within the prediction's "
        f"±{tol:.0%}): " + "; ".join(why)
    )
    rest = [int(i) for i in order if int(i) != safest]
    return np.array([safest] + rest), note


def _safest(est: Estimates, ties: np.ndarray, objective: str, *, best: int) -> int:
    """The row of ``ties`` (indices, not empty) first in :func:`_risk_keys`' order (from the
    best candidate ``best``), then the ranking's (:func:`_keys`), then the lowest index —
    vectorised, linear in the ties: each key keeps the rows at its minimum (a near-tie set
    may hold much of a large space)."""
    keys = (*_risk_keys(est, best), *(np.asarray(k, dtype=float) for k in _keys(est, objective)))
    rows = ties
    for k in keys:
        v = k[rows]
        if np.all(np.isnan(v)):
            continue  # NaN equals nothing: a key no row has decides nothing
        rows = rows[v == np.nanmin(v)]
        if rows.size == 1:
            break
    return int(rows.min())
