"""Which measurement to buy next: value of information against its price.

Before a job runs, the planner can buy three kinds of evidence:

* a **step-time probe** at a candidate ``(gpu, n, h, b)`` — it pins that candidate's
  step time (the step-time part of its uncertainty goes away);
* a **short run** at a global batch ``B`` — a learning curve at ``B``, which removes a
  share ``ρ`` of the epochs-to-target uncertainty of every candidate at that batch
  (``ρ = 1`` for a run long enough to see the target or its plateau);
* a **gradient-noise measurement** — it narrows the critical-batch extrapolation, a
  share ``ρ`` of the epochs uncertainty of every candidate whose batch is extrapolated.

Each candidate's cost is log-normal under the fitted models, with log-spreads read off
the :class:`~cotune.solver.Estimates` intervals::

    σ_E = (ln E_upper − ln E) / z            (epochs; capped where the upper end is ∞)
    σ_step = Estimates.step_log_sigma        (else max(σ_T² − σ_E², 0)^½ from the time interval)

A measurement reveals part of that spread: the candidate's predicted cost after it is
``C · exp(s·Z)`` with ``s²`` the removed variance (``σ_step²`` for a probe, ``ρ·σ_E²``
for the accuracy evidence). ``C`` is a median (``ln C_true ~ N(ln C, σ²)``), so the
preposterior keeps the log-mean: the new median moves symmetrically in log space, and
its mean ``C·e^{s²/2}`` is what keeps the expected true cost ``C·e^{σ²/2}`` (before
2026-12-02 it was ``C · exp(s·Z − s²/2)``, which let a challenger look cheaper after a
probe on average than the model says it is). Its
expected gain for the decision is the knowledge gradient of the best candidate it
touches (a short run shifts all candidates at ``B`` together, so only the best of them
can change the decision):

* for a challenger ``i`` (not the current choice ``j``): ``E[max(0, C_j − C_i')]`` —
  the saving if it turns out cheaper than the choice (a put on ``C_i'`` struck at ``C_j``);
* for the choice itself: ``E[max(0, C_j' − C_k)]`` with ``k`` the runner-up — the
  saving from leaving it if it turns out dearer;

plus the deadline risk it removes from the choice: ``C_j · P(miss_j) · s²/σ_j²`` (a miss
wastes the run; knowing more lets the planner move before it starts). The next
measurement is the one with the largest ``gain − price``; planning stops when even that
gain is below its price. Only feasible candidates (at the deadline confidence) compete.

When **no candidate is feasible** the decision is "no plan", and evidence is worth the
chance that it makes one: a plan is worth at least ``V``, the cheapest cost any
candidate could have if it reaches the target (the job, run once), so the gain of a
measurement is ``V · max_i P_i`` over the candidates ``i`` it touches, with ``P_i`` the
preposterior probability that ``i`` clears the confidence ``q`` once the measurement has
revealed ``s_i`` of its log-spread. ``i`` is feasible when
``p · Φ((ln D − ln T_i')/σ_i') ≥ q`` with ``ln T_i' ~ N(ln T_i, s_i²)`` and
``σ_i'² = σ_i² − s_i²``, so::

    P_i(p) = Φ((ln D − σ_i' Φ⁻¹(q/p) − ln T_i) / s_i)     (0 when q ≥ p)

(without a deadline: 1 when ``p ≥ q``, else 0). A step probe leaves ``p`` alone:
``P_i = P_i(p_reach)``. A short run of share ``ρ`` confirms the target is reached with
probability ``ρ·p_reach`` and says nothing about it with probability ``1 − ρ``:
``P_i = ρ·p_reach·P_i(1) + (1 − ρ)·P_i(p_reach)``. (Before 2026-12-02 this branch took
half the *dearest* touched candidate's cost times the share of its variance removed: on
the replay its expected gains summed to 203 % of the optimum's cost per plan against
−1.5 % realised, and to 65,000 % against −10 % at q = 0.9.)

Everything is a pure function of arrays: no fitting, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal, Sequence

import numpy as np

from cotune.solver._estimate import DEFAULT_CONFIDENCE, Estimates

__all__ = ["ProbeOption", "ProbeDecision", "ProbeGains", "log_spreads", "option_gains", "plan_next_probe", "standard_options"]

_N = NormalDist()
# Where the epochs interval is unbounded above the spread is taken as this (a factor e):
# large enough that evidence there is worth a lot, finite so the arithmetic stays finite.
UNBOUNDED_LOG_SIGMA = 1.0


@dataclass(frozen=True)
class ProbeOption:
    """One measurement the planner could buy.

    ``touches`` are the candidate indices whose uncertainty it reduces; ``share`` the
    share of their epochs variance it removes (accuracy evidence) — a step-time probe
    removes the step-time variance of its one candidate instead. ``price`` in the cost
    unit (USD, or worker-hours without prices).
    """

    kind: Literal["step", "short_run", "noise"]
    touches: tuple[int, ...]
    price: float
    share: float = 1.0
    label: str = ""


@dataclass(frozen=True)
class ProbeGains:
    """Expected gain of every option (same order as the options)."""

    options: tuple[ProbeOption, ...]
    gains: np.ndarray
    choice: int | None  # the current decision's candidate (None: nothing feasible)


@dataclass(frozen=True)
class ProbeDecision:
    """The measurement to buy next, or ``option is None`` when none is worth its price."""

    option: ProbeOption | None
    expected_gain: float
    price: float
    reason: str


def _put(c: np.ndarray, k: float, s: np.ndarray) -> np.ndarray:
    """E[max(0, k − C')] for C' = c·exp(sZ − s²/2)."""
    out = np.maximum(k - c, 0.0)
    ok = s > 1e-12
    if np.any(ok):
        cc, ss = c[ok], s[ok]
        d1 = (np.log(cc / k) + ss**2 / 2) / ss
        d2 = d1 - ss
        out[ok] = k * _cdf(-d2) - cc * _cdf(-d1)
    return out


def _call(c: float, k: float, s: float) -> float:
    """E[max(0, C' − k)] for C' = c·exp(sZ − s²/2)."""
    if s <= 1e-12:
        return max(c - k, 0.0)
    d1 = (math.log(c / k) + s * s / 2) / s
    return c * _N.cdf(d1) - k * _N.cdf(d1 - s)


def _cdf(x: np.ndarray) -> np.ndarray:
    from cotune.models._normal import norm_cdf

    return norm_cdf(x)


def log_spreads(est: Estimates, *, interval: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """(σ_step, σ_E): log-spreads of step time and epochs of every candidate, from the intervals."""
    z = _N.inv_cdf(0.5 + interval / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        sig_e = (np.log(est.epochs_upper) - np.log(est.epochs)) / z
        sig_t = (np.log(est.time_upper_s) - np.log(est.time_s)) / z
    sig_e = np.where(np.isfinite(sig_e), np.maximum(sig_e, 0.0), UNBOUNDED_LOG_SIGMA)
    sig_t = np.where(np.isfinite(sig_t), np.maximum(sig_t, 0.0), np.sqrt(sig_e**2))
    # The estimates carry the step-time spread itself; the interval difference is the fallback.
    step = getattr(est, "step_log_sigma", None)
    if step is not None:
        sig_step = np.where(np.isfinite(step), np.maximum(np.asarray(step, float), 0.0), 0.0)
    else:
        sig_step = np.sqrt(np.maximum(sig_t**2 - sig_e**2, 0.0))
    return sig_step, sig_e


def option_gains(
    est: Estimates,
    options: Sequence[ProbeOption],
    *,
    feasible: np.ndarray,
    deadline_s: float | None = None,
    interval: float = 0.9,
    confidence: float | None = None,
) -> ProbeGains:
    """Expected reduction of the decision's cost and risk from each option (see the module docstring).

    ``confidence`` is the one ``feasible`` was computed at (None: the solver's default, the
    median); it matters only when nothing is feasible.
    """
    cost = np.asarray(est.cost, float)
    ok = np.asarray(feasible, bool) & np.isfinite(cost) & (cost > 0)
    sig_step, sig_e = log_spreads(est, interval=interval)
    sig_tot = np.sqrt(sig_step**2 + sig_e**2)
    gains = np.zeros(len(options))
    if not np.any(ok):
        # Nothing feasible yet: evidence is worth the chance it makes a plan (module doc).
        q = DEFAULT_CONFIDENCE if confidence is None else float(confidence)
        t_reach = np.asarray(est.time_s if est.time_if_reached_s is None else est.time_if_reached_s, float)
        rate = np.asarray(est.price_per_hour, float) * est.candidates.workers / 3600.0  # as in estimate()
        worth = rate * t_reach
        worth = worth[np.isfinite(worth) & (worth > 0)]
        if worth.size == 0:
            return ProbeGains(options=tuple(options), gains=gains, choice=None)
        value = float(np.min(worth))
        p_reach = np.clip(np.nan_to_num(np.asarray(est.p_reach, float), nan=0.0), 0.0, 1.0)
        for n, opt in enumerate(options):
            t = np.array([i for i in opt.touches if np.isfinite(t_reach[i]) and t_reach[i] > 0], dtype=int)
            if t.size == 0:
                continue
            s = _removed(opt, sig_step[t], sig_e[t])
            rest = np.sqrt(np.maximum(sig_tot[t] ** 2 - s**2, 0.0))
            args = dict(log_t=np.log(t_reach[t]), s=s, rest=rest, q=q, deadline_s=deadline_s)
            p = p_reach[t]
            if opt.kind == "step":
                chance = _feasible_after(p, **args)
            else:
                rho = float(np.clip(opt.share, 0.0, 1.0))
                chance = rho * p * _feasible_after(np.ones_like(p), **args) + (1.0 - rho) * _feasible_after(p, **args)
            gains[n] = value * float(np.max(chance))
        return ProbeGains(options=tuple(options), gains=gains, choice=None)
    idx = np.flatnonzero(ok)
    order = idx[np.argsort(cost[idx], kind="stable")]
    j = int(order[0])
    runner = float(cost[order[1]]) if order.size > 1 else math.inf
    p_miss = 0.0
    if deadline_s is not None and math.isfinite(est.time_s[j]) and sig_tot[j] > 0:
        p_miss = 1.0 - _N.cdf((math.log(deadline_s) - math.log(est.time_s[j])) / sig_tot[j])
    for n, opt in enumerate(options):
        t = np.array([i for i in opt.touches if np.isfinite(cost[i]) and cost[i] > 0], dtype=int)
        if t.size == 0:
            continue
        s = _removed(opt, sig_step[t], sig_e[t])
        best = 0.0
        chall = t != j
        if np.any(chall & ok[t]):
            cc = t[chall & ok[t]]
            # The cheapest challenger it touches: a common shift moves the group together.
            m = int(np.argmin(cost[cc]))
            sm = s[chall & ok[t]][m : m + 1]
            # _put/_call take the post-measurement mean; the median C moves to C·exp(sZ), mean C·e^{s²/2}.
            best = float(_put(cost[cc][m : m + 1] * np.exp(sm**2 / 2), float(cost[j]), sm)[0])
        if np.any(t == j):
            sj = float(s[t == j][0])
            keep = _call(float(cost[j]) * math.exp(sj * sj / 2), runner, sj) if math.isfinite(runner) else 0.0
            risk = float(cost[j]) * p_miss * (sj**2 / sig_tot[j] ** 2 if sig_tot[j] > 0 else 0.0)
            best = max(best, keep + risk)
        gains[n] = best
    return ProbeGains(options=tuple(options), gains=gains, choice=j)


def _feasible_after(
    p: np.ndarray, *, log_t: np.ndarray, s: np.ndarray, rest: np.ndarray, q: float, deadline_s: float | None
) -> np.ndarray:
    """P(a candidate clears confidence ``q`` once ``s`` of its log-spread is revealed), at reach probability ``p``."""
    p = np.asarray(p, float)
    can = p > q
    if deadline_s is None:
        return can.astype(float)
    from cotune.models._normal import norm_ppf

    with np.errstate(divide="ignore", invalid="ignore"):
        need = norm_ppf(np.clip(np.where(can, q / np.maximum(p, 1e-300), 0.5), 1e-12, 1 - 1e-12))
        bound = math.log(max(deadline_s, 1e-300)) - rest * need
        moved = (bound - log_t) / np.maximum(s, 1e-12)
    revealed = np.where(s > 1e-12, _cdf(moved), (bound >= log_t).astype(float))
    return np.where(can, revealed, 0.0)


def _removed(opt: ProbeOption, sig_step: np.ndarray, sig_e: np.ndarray) -> np.ndarray:
    if opt.kind == "step":
        return sig_step
    return np.sqrt(np.clip(opt.share, 0.0, 1.0)) * sig_e


def plan_next_probe(
    est: Estimates,
    options: Sequence[ProbeOption],
    *,
    feasible: np.ndarray,
    deadline_s: float | None = None,
    interval: float = 0.9,
    confidence: float | None = None,
) -> ProbeDecision:
    """The option with the largest expected gain net of its price, or none when no gain covers its price."""
    if not options:
        return ProbeDecision(option=None, expected_gain=0.0, price=0.0, reason="no measurement left to buy")
    g = option_gains(est, options, feasible=feasible, deadline_s=deadline_s, interval=interval, confidence=confidence)
    price = np.array([o.price for o in options], float)
    net = g.gains - price
    k = int(np.argmax(net))
    if net[k] <= 0:
        return ProbeDecision(
            option=None,
            expected_gain=float(g.gains[k]),
            price=float(price[k]),
            reason=f"best expected gain {g.gains[k]:.4g} is below its price {price[k]:.4g}: stop measuring",
        )
    o = options[k]
    return ProbeDecision(
        option=o, expected_gain=float(g.gains[k]), price=float(price[k]),
        reason=f"{o.kind} {o.label}: expected gain {g.gains[k]:.4g} over price {price[k]:.4g}",
    )


def standard_options(
    est: Estimates,
    *,
    unprobed: np.ndarray,
    step_price: np.ndarray,
    short_runs: Sequence[tuple[int, float, float]] = (),
    noise_price: float | None = None,
    noise_share: float = 0.5,
) -> list[ProbeOption]:
    """Step probes at ``unprobed`` candidates (price per candidate in ``step_price``), short
    runs ``(global_batch, price, share)``, and one noise measurement (if priced) touching
    the candidates whose epochs are extrapolated."""
    c = est.candidates
    opts = [
        ProbeOption(kind="step", touches=(int(i),), price=float(step_price[i]), label=f"candidate {int(i)}")
        for i in np.flatnonzero(unprobed)
    ]
    gb = c.global_batch
    for batch, price, share in short_runs:
        touch = tuple(int(i) for i in np.flatnonzero(gb == batch))
        if touch:
            opts.append(ProbeOption(kind="short_run", touches=touch, price=float(price), share=float(share), label=f"global batch {batch}"))
    if noise_price is not None:
        touch = tuple(int(i) for i in np.flatnonzero(est.epochs_extrapolated))
        if touch:
            opts.append(ProbeOption(kind="noise", touches=touch, price=float(noise_price), share=noise_share, label="gradient noise"))
    return opts
