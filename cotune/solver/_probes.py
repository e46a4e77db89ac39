"""Which measurement to buy next: value of information against its price.

Three kinds of evidence have a value model here (:func:`next_measurement` offers the
first two; the third only where a caller prices it in :func:`standard_options`, since
no price is set for it and its share ``ρ`` is a hand-set default, not estimated):

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

A measurement reveals part of that spread, and not only at the candidate it measures.
Its standardised outcome ``Z ~ N(0, 1)`` moves every candidate's log-median cost by
``a_x·Z`` (the preposterior keeps the log-mean, so a median moves symmetrically in log
space)::

    step probe at i:   a_x = ρ(i, x) · σ_step,x,   ρ(i, x) = exp(−d(i, x) / ℓ) on i's GPU type, else 0
    short run at B:    a_x = √ρ_B · σ_E,x         for the candidates at B, else 0
    noise measurement: a_x = √ρ · σ_E,x           for the extrapolated candidates, else 0

``d`` is the configuration distance in doublings (:func:`config_doublings`: workers,
hosts and local batch). The step-time model errs alike at neighbouring configurations —
its errors come from shared parameters (synchronisation cost, the compute/overhead
split, the inter-host terms), not from independent noise — and ``ℓ``
(:data:`STEP_CORRELATION_DOUBLINGS`) is the correlation length measured on public traces.
Treating the candidates as independent (before 2026-12-02) valued a probe next to the
choice as if it could reveal the choice to be dear while its neighbour stayed cheap; its
expected gains were about 6.7 × the realised ones in the replay.

After the outcome, candidate ``x`` has median ``m_x·e^{a_x Z}``, remaining log-spread
``σ'_x = (σ_x² − a_x²)^½``, mean ``m_x·e^{a_x Z + σ'_x²/2}`` and, with a deadline ``D``,
``P'_x = p_reach,x · Φ((ln D_x − ln T_x − a_x Z)/σ'_x)`` — ``T_x`` the training time (the
start-up ``s`` is no part of the spread) and ``D_x = min(D, B/r_x) − s`` what the deadline
and the budget leave it, as the solver judges P(success). Each candidate's loss is its mean
cost plus what a miss wastes, ``(1 − P'_x)·V`` with ``V`` the current choice's mean cost
(the planned run, redone). The gain is the expected drop of the least loss among the
candidates feasible now that keep the confidence ``q`` (the least loss of them all, run
anyway, at an outcome where none does)::

    gain = min_x E_Z[loss_x(Z)] − E_Z[min_{x: P'_x ≥ q} loss_x(Z)],   loss_x = m_x'·e^{σ'_x²/2} + (1 − P'_x)·V

computed on 64 quantile-midpoint nodes of ``Z`` (clipped at 0). With one challenger
moving alone this is the knowledge gradient, a log-normal put struck at the choice's
cost; with correlated moves it is the knowledge gradient for correlated beliefs
(Frazier, Powell & Dayanik, 2009). Both sides take the least loss: measured against the
solver's cheapest-median choice instead, a measurement is credited with switches the
planner could make without it (a candidate 4 % dearer at P(success) 0.96 instead of
0.52), and on the replay the expected gains were 3.7 × the realised ones against 2.2 ×
this way. The next measurement is the one with the largest ``gain − price``; planning
stops when even that gain is below its price. Only candidates feasible now compete.

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

:func:`next_measurement` is the question-level door (``cotune recommend`` answers with it):
it builds the options for a candidate table — step probes of the best-ranked unprobed
configurations at :data:`DEFAULT_PROBE_SETUP_S` plus :data:`DEFAULT_PROBE_STEPS` steps on
their workers, short runs at their unmeasured global batches — and names the best.

Everything is a pure function of arrays: no fitting, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Iterable, Literal, Sequence

import numpy as np

from cotune._checks import BadValue, excerpt, integer, number
from cotune.solver._estimate import DEFAULT_CONFIDENCE, Estimates, candidate_array, check_question_args, spend_time_s
from cotune.solver._space import Candidates

__all__ = [
    "DEFAULT_PROBE_SETUP_S",
    "DEFAULT_PROBE_STEPS",
    "MAX_MEASUREMENT_OPTIONS",
    "NextMeasurement",
    "STEP_CORRELATION_DOUBLINGS",
    "next_measurement",
    "ProbeOption",
    "ProbeDecision",
    "ProbeGains",
    "config_doublings",
    "log_spreads",
    "option_gains",
    "plan_next_probe",
    "probed_mask",
    "probed_step_floor",
    "standard_options",
    "step_correlation",
]

_N = NormalDist()
# Correlation length of step-time errors, in doublings of configuration distance
# (config_doublings): two unprobed candidates' log errors correlate as exp(−d/ℓ). Fitted
# to the pairwise correlations of the step-time model's standardised errors (one row per
# configuration) on eleven public clusters and the Pollux T4 traces, each weighing one,
# with the probe sets users pay for (≤ 2 / ≤ 4 workers, one host, 3 and 5 probes):
# python -m benchmarks.public_step_time --calibrate. With each cluster left out it is
# 1.25–1.57. By distance bin (0–0.6, –1.1, –2.1, –3.1, –4.1, –8.1 doublings) the clusters'
# median correlations are 0.40 0.56 0.34 0.19 0.10 0.00 and the kernel at each bin's mean
# distance 0.74 0.50 0.27 0.13 0.06 0.02. (Re-measured with the step-time model's σ_growth and its
# growth_identified rule; 1.41 before.)
STEP_CORRELATION_DOUBLINGS = 1.39
# E over the measurement's standardised outcome Z ~ N(0, 1): the midpoint rule on its
# quantiles, which (unlike Gauss–Hermite) stays accurate where the decision switches
# (a kink in the integrand): within 2e-4 of a 2·10⁶-draw simulation for the put-like gains.
_N_NODES = 64
_NODES = np.array([_N.inv_cdf((k + 0.5) / _N_NODES) for k in range(_N_NODES)])
_NODES /= np.sqrt(np.mean(_NODES**2))  # unit variance: the midpoints alone fall 2 % short of it
_WEIGHTS = np.full(_N_NODES, 1.0 / _N_NODES)
# What a step-time probe costs: set-up (container start, rendezvous, data loader, warm-up)
# and the steps it runs, on the probed configuration's workers at its price. The benchmark
# replays probes at the same price (benchmarks/replay.py).
DEFAULT_PROBE_SETUP_S = 60.0
DEFAULT_PROBE_STEPS = 50  # 10 warm-up + 40 timed
# Measurements weighed per question: step probes at the best-ranked unprobed candidates
# and short runs at their unmeasured batches (bounded time on any search space).
MAX_MEASUREMENT_OPTIONS = 32
# The preposterior sum runs over at most this many of the cheapest candidates feasible now.
_MAX_POOL = 512
# Candidates whose log cost is further than this many σ of the moves from the choice's
# cannot change places with it within the nodes (|Z| < 2.5): left out of the sum.
_REACH_Z = 3.0
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
    step_floor: np.ndarray | float | None = None,
    budget: float | None = None,
    startup_s: float = 0.0,
) -> ProbeGains:
    """Expected reduction of the decision's cost and risk from each option (see the module docstring).

    ``confidence`` is the one ``feasible`` was computed at (None: the solver's default, the
    median); it matters only when nothing is feasible. ``step_floor``: the step-time
    log-spread the model still states at a configuration once probed
    (:func:`probed_step_floor`; None: 0); the solver's P(success) after a measurement is
    judged with at least that much step-time spread. ``budget``: the question's cost
    bound; when nothing is feasible, a measurement is worth only the chance that it makes
    a candidate both on time and within it (without it, a budget below every cost was
    answered with a probe that cost more than the budget). ``startup_s``: the question's
    fixed start-up, in every ``time_s``; P(success) is judged as the solver judges it, on the
    training time against what the deadline and the budget leave after the start-up,
    ``ln(min(D, B/r) − s) − ln(T − s)``.
    """
    check_question_args(deadline_s=deadline_s, startup_s=startup_s, budget=budget, confidence=confidence, interval=interval)
    _check_options(options, est)
    feasible = candidate_array(feasible, est, where="feasible", dtype=bool)
    if step_floor is not None and np.ndim(step_floor) > 0:
        step_floor = candidate_array(step_floor, est, where="step_floor")
    cost = np.asarray(est.cost, float)
    ok = np.asarray(feasible, bool) & np.isfinite(cost) & (cost > 0)
    sig_step, sig_e = log_spreads(est, interval=interval)
    sig_tot = np.sqrt(sig_step**2 + sig_e**2)
    floor = np.zeros(len(cost)) if step_floor is None else np.broadcast_to(np.asarray(step_floor, float), cost.shape)
    gains = np.zeros(len(options))
    if not np.any(ok):
        # Nothing feasible yet: evidence is worth the chance it makes a plan (module doc).
        q = DEFAULT_CONFIDENCE if confidence is None else float(confidence)
        t_full = np.asarray(est.time_s if est.time_if_reached_s is None else est.time_if_reached_s, float)
        rate = np.asarray(est.price_per_hour, float) * est.candidates.workers / 3600.0  # as in estimate()
        worth = rate * t_full
        t_reach = _training_s(t_full, startup_s)
        train_limit = _limit_after_startup(deadline_s, None, rate, startup_s)
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
            rest = _stated_rest(opt, sig_step[t], sig_e[t], s, floor[t])
            args = dict(log_t=np.log(t_reach[t]), s=s, rest=rest, q=q,
                        deadline_s=None if train_limit is None else train_limit[t], log_cap=None)
            if budget is not None:
                with np.errstate(divide="ignore"):
                    cap = _limit_after_startup(None, budget, rate[t], startup_s)
                    args["log_cap"] = np.log(np.maximum(cap, 1e-300))
            p = p_reach[t]
            if opt.kind == "step":
                chance = _feasible_after(p, **args)
            else:
                rho = float(np.clip(opt.share, 0.0, 1.0))
                chance = rho * p * _feasible_after(np.ones_like(p), **args) + (1.0 - rho) * _feasible_after(p, **args)
            gains[n] = value * float(np.max(chance))
        return ProbeGains(options=tuple(options), gains=gains, choice=None)
    j = int(np.flatnonzero(ok)[np.argmin(cost[ok])])
    p_reach = np.clip(np.nan_to_num(np.asarray(est.p_reach, float), nan=0.0), 0.0, 1.0)
    t_reach = _training_s(np.asarray(est.time_s if est.time_if_reached_s is None else est.time_if_reached_s, float),
                          startup_s)
    rate = np.asarray(est.price_per_hour, float) * est.candidates.workers / 3600.0
    limit = _limit_after_startup(deadline_s, budget, rate, startup_s)  # per candidate, as the solver's D
    q = DEFAULT_CONFIDENCE if confidence is None else float(confidence)
    feasible_idx = np.flatnonzero(ok)
    # Today's expected loss of every feasible candidate, in closed form (E_Z of the means and of
    # P' are today's): mean cost plus what a miss wastes, the planned run redone. The least of
    # them is what a measurement has to beat.
    mean_now = cost[feasible_idx] * np.exp(sig_tot[feasible_idx] ** 2 / 2.0)
    p_now = _p_success(p_reach[feasible_idx], t_reach[feasible_idx], sig_tot[feasible_idx],
                       None if limit is None else limit[feasible_idx])
    value = float(cost[j] * math.exp(sig_tot[j] ** 2 / 2.0))
    loss_now = mean_now + (1.0 - p_now) * value
    best = int(feasible_idx[int(np.argmin(loss_now))])
    for n, opt in enumerate(options):
        a = _shifts(opt, est.candidates, sig_step, sig_e)
        if not np.any(a[feasible_idx] > 1e-12):
            continue
        # Only candidates whose mean cost can fall below the least loss at some outcome matter.
        near = np.log(mean_now / float(np.min(loss_now))) <= _REACH_Z * (a[feasible_idx] + a[best])
        pool = np.union1d(feasible_idx[near], [j, best])
        if pool.size > _MAX_POOL:
            pool = np.union1d(pool[np.argsort(cost[pool], kind="stable")[:_MAX_POOL]], [j, best])
        gains[n] = _preposterior_gain(
            cost[pool], sig_tot[pool], a[pool], p_reach[pool], t_reach[pool], before=float(np.min(loss_now)),
            value=value, q=q, deadline_s=None if limit is None else limit[pool],
            stated=_stated_rest(opt, sig_step[pool], sig_e[pool], a[pool], floor[pool]),
        )
    return ProbeGains(options=tuple(options), gains=gains, choice=j)


def _check_options(options: object, est: Estimates) -> None:
    """``options``: a sequence of :class:`ProbeOption` whose candidates are rows of ``est``."""
    if isinstance(options, (str, bytes)) or not isinstance(options, Sequence):
        raise BadValue(f"must be a list of ProbeOption (standard_options builds them), got {excerpt(options)}",
                       where="options")
    n = len(est.candidates)
    for i, o in enumerate(options):
        if not isinstance(o, ProbeOption):
            raise BadValue(f"must be a ProbeOption (standard_options builds them), got {excerpt(o)}",
                           where=f"options[{i}]")
        if any(not 0 <= t < n for t in o.touches):
            raise BadValue(f"touches candidates outside the estimates' {n}: build the options from the same estimates",
                           where=f"options[{i}]")


def _training_s(time_s: np.ndarray, startup_s: float) -> np.ndarray:
    """The part of a job's time its spread scales: all of it but the fixed start-up."""
    return np.maximum(np.asarray(time_s, float) - float(startup_s), 1e-9)


def _limit_after_startup(
    deadline_s: float | None, budget: float | None, rate_per_s: np.ndarray, startup_s: float
) -> np.ndarray | None:
    """Per candidate, the training time the deadline and the budget leave after the start-up,
    ``min(D, B/r) − s`` (the solver's ``D``; None: neither bounds it; ≤ 0: nothing fits)."""
    if deadline_s is None and budget is None:
        return None
    rate = np.asarray(rate_per_s, float)
    out = np.full(rate.shape, np.inf if deadline_s is None else float(deadline_s))
    if budget is not None:
        out = np.minimum(out, spend_time_s(budget, rate))  # the one budget-as-deadline rule
    return out - float(startup_s)


def probed_mask(candidates: Candidates, probes: Iterable[tuple[str, int, int, int]]) -> np.ndarray:
    """Candidates whose ``(gpu, workers, hosts, local_batch)`` is among ``probes`` (any market)."""
    from cotune.solver._estimate import _unique_inverse

    c = candidates
    rows = np.array([(c.gpus.index(g), w, h, b) for g, w, h, b in probes if g in c.gpus], dtype=np.int64).reshape(-1, 4)
    cols = [np.concatenate([np.asarray(col, np.int64), rows[:, k]]) for k, col in enumerate((c.gpu, c.workers, c.hosts, c.local_batch))]
    _, inverse = _unique_inverse(*cols)
    return np.isin(inverse[: len(c)], inverse[len(c):])


def probed_step_floor(est: Estimates, probed: np.ndarray) -> np.ndarray:
    """The step-time log-spread the model states at a probed configuration, per candidate:
    the median ``step_log_sigma`` of the probed candidates of its GPU type (0 where none
    is). Its interval there is its cross-validated error, not zero: a probe moves a
    prediction by its whole error but leaves the stated spread at this floor."""
    c = est.candidates
    sig = np.nan_to_num(np.asarray(est.step_log_sigma, float), nan=0.0, posinf=0.0)
    probed = np.asarray(probed, bool)
    out = np.zeros(len(c))
    for gi in range(len(c.gpus)):
        mine = c.gpu == gi
        if np.any(mine & probed):
            out[mine] = float(np.median(sig[mine & probed]))
    return out


def config_doublings(
    w1: np.ndarray | float, h1: np.ndarray | float, b1: np.ndarray | float,
    w2: np.ndarray | float, h2: np.ndarray | float, b2: np.ndarray | float,
) -> np.ndarray:
    """Distance between configurations in doublings: ``|log₂ n₁/n₂| + |log₂ h₁/h₂| + |log₂ b₁/b₂|``
    (workers, hosts, local batch); broadcasts."""
    lw = np.abs(np.log2(np.asarray(w1, float) / np.asarray(w2, float)))
    lh = np.abs(np.log2(np.asarray(h1, float) / np.asarray(h2, float)))
    lb = np.abs(np.log2(np.asarray(b1, float) / np.asarray(b2, float)))
    return lw + lh + lb


def step_correlation(candidates: Candidates, i: int) -> np.ndarray:
    """Correlation of every candidate's step-time error with candidate ``i``'s:
    ``exp(−d / STEP_CORRELATION_DOUBLINGS)`` on the same GPU type (``d`` from
    :func:`config_doublings`), 0 on another."""
    c = candidates
    d = config_doublings(c.workers, c.hosts, c.local_batch, c.workers[i], c.hosts[i], c.local_batch[i])
    return np.where(c.gpu == c.gpu[i], np.exp(-d / STEP_CORRELATION_DOUBLINGS), 0.0)


def _shifts(opt: ProbeOption, candidates: Candidates, sig_step: np.ndarray, sig_e: np.ndarray) -> np.ndarray:
    """``a_x``: how far each candidate's log-median cost moves per unit of the measurement's
    standardised outcome ``Z`` (module doc)."""
    a = np.zeros(len(sig_step))
    touched = np.array([i for i in opt.touches if 0 <= i < a.size], dtype=int)
    if touched.size == 0:
        return a
    if opt.kind == "step":
        i = int(touched[0])
        return step_correlation(candidates, i) * sig_step
    a[touched] = math.sqrt(float(np.clip(opt.share, 0.0, 1.0))) * sig_e[touched]
    return a


def _preposterior_gain(
    median: np.ndarray, sigma: np.ndarray, a: np.ndarray, p_reach: np.ndarray, t_reach: np.ndarray, *,
    before: float, value: float, q: float, deadline_s: np.ndarray | float | None, stated: np.ndarray | None = None,
) -> float:
    """Expected drop of the least expected loss (``before``, today's) once a measurement moving
    log-medians by ``a·Z`` is seen (module doc); ``value`` is what a miss wastes."""
    z = _NODES[:, None]
    rest = np.sqrt(np.maximum(sigma**2 - a**2, 0.0))
    post_median = median * np.exp(a * z)
    post_mean = post_median * np.exp(rest**2 / 2.0)
    if deadline_s is None:
        p_success = np.broadcast_to(p_reach, post_median.shape)
    else:
        # The solver judges P' with the spread the model will state (its floor included).
        sd = rest if stated is None else np.maximum(stated, rest)
        p_success = _p_success(p_reach, t_reach * np.exp(a * z), sd, deadline_s)
    loss = post_mean + (1.0 - p_success) * value
    keeps = p_success >= q - 1e-12
    best = np.min(np.where(keeps, loss, np.inf), axis=1)
    # No candidate keeps the confidence at this outcome: the best of them runs anyway.
    best = np.where(np.isfinite(best), best, np.min(loss, axis=1))
    return max(before - float(_WEIGHTS @ best), 0.0)


def _feasible_after(
    p: np.ndarray, *, log_t: np.ndarray, s: np.ndarray, rest: np.ndarray, q: float, deadline_s: np.ndarray | float | None,
    log_cap: np.ndarray | None = None,
) -> np.ndarray:
    """P(a candidate clears confidence ``q`` once ``s`` of its log-spread is revealed), at reach probability ``p``.

    ``log_cap``: the largest log time each candidate may take within the budget (its median
    cost ``rate · T`` at most the budget); the revealed shift moves time and cost together,
    so both limits bound the same variable and the tighter one counts.
    """
    p = np.asarray(p, float)
    can = p > q
    if deadline_s is None and log_cap is None:
        return can.astype(float)
    from cotune.models._normal import norm_ppf

    with np.errstate(divide="ignore", invalid="ignore"):
        bound = np.full(np.shape(log_t), np.inf)
        if deadline_s is not None:
            need = norm_ppf(np.clip(np.where(can, q / np.maximum(p, 1e-300), 0.5), 1e-12, 1 - 1e-12))
            bound = np.log(np.maximum(deadline_s, 1e-300)) - rest * need
        if log_cap is not None:
            bound = np.minimum(bound, log_cap)
        moved = (bound - log_t) / np.maximum(s, 1e-12)
    revealed = np.where(s > 1e-12, _cdf(moved), (bound >= log_t).astype(float))
    return np.where(can, revealed, 0.0)


def _p_success(p_reach: np.ndarray, t_reach: np.ndarray, sigma: np.ndarray, deadline_s: np.ndarray | float | None) -> np.ndarray:
    """``p_reach · Φ((ln D − ln T)/σ)`` (no deadline: ``p_reach``; ``D`` per candidate or one)."""
    if deadline_s is None:
        return np.asarray(p_reach, float)
    from cotune.models._normal import norm_cdf

    with np.errstate(divide="ignore", invalid="ignore"):
        slack = np.log(np.maximum(deadline_s, 1e-300)) - np.log(t_reach)
        return p_reach * np.where(sigma > 1e-12, norm_cdf(slack / np.maximum(sigma, 1e-12)), (slack >= 0).astype(float))


def _stated_rest(opt: ProbeOption, sig_step: np.ndarray, sig_e: np.ndarray, moved: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """The log-spread the model will state after the measurement: what it leaves of the
    epochs and step-time parts, the step-time part no less than ``floor``."""
    if opt.kind == "step":
        step_left = np.maximum(sig_step**2 - moved**2, floor**2)
        return np.sqrt(sig_e**2 + step_left)
    return np.sqrt(np.maximum(sig_e**2 - moved**2, 0.0) + np.maximum(sig_step**2, floor**2))


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
    step_floor: np.ndarray | float | None = None,
    budget: float | None = None,
    startup_s: float = 0.0,
) -> ProbeDecision:
    """The option with the largest expected gain net of its price, or none when no gain covers
    its price (``step_floor``: see :func:`option_gains`)."""
    _check_options(options, est)
    if not options:
        return ProbeDecision(option=None, expected_gain=0.0, price=0.0, reason="no measurement left to buy")
    g = option_gains(est, options, feasible=feasible, deadline_s=deadline_s, interval=interval, confidence=confidence,
                     step_floor=step_floor, budget=budget, startup_s=startup_s)
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
    unprobed = candidate_array(unprobed, est, where="unprobed", dtype=bool)
    step_price = candidate_array(step_price, est, where="step_price")
    if noise_price is not None:
        number(noise_price, where="noise_price", ge=0.0)
    number(noise_share, where="noise_share", ge=0.0, le=1.0, what="a share")
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


@dataclass(frozen=True)
class NextMeasurement:
    """What to measure next for a question, what it is expected to save and what it costs.

    ``kind`` is ``step`` (a step-time probe of the configuration) or ``short_run`` (a
    learning curve at ``global_batch`` on the configuration, for ``epochs``); ``buy`` is
    whether the expected gain beats the price. Money in the question's cost unit.
    """

    kind: str
    gpu: str
    market: str
    workers: int
    hosts: int
    local_batch: int
    global_batch: int
    expected_gain: float
    price: float
    buy: bool
    reason: str
    epochs: float | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind, "gpu": self.gpu, "market": self.market, "workers": self.workers, "hosts": self.hosts,
            "local_batch": self.local_batch, "global_batch": self.global_batch, "epochs": self.epochs,
            "expected_gain": self.expected_gain, "price": self.price, "buy": self.buy, "reason": self.reason,
        }


def next_measurement(
    est: Estimates,
    *,
    feasible: np.ndarray,
    probed: np.ndarray,
    measured_batches: Sequence[float] = (),
    deadline_s: float | None = None,
    confidence: float | None = None,
    interval: float = 0.9,
    ranking: np.ndarray | None = None,
    setup_s: float = DEFAULT_PROBE_SETUP_S,
    steps: int = DEFAULT_PROBE_STEPS,
    limit: int = MAX_MEASUREMENT_OPTIONS,
    unit: str = "USD",
    budget: float | None = None,
    startup_s: float = 0.0,
) -> NextMeasurement | None:
    """The measurement worth most for this question (:func:`option_gains`): the largest
    gain net of price, or — when no gain covers its price — the largest gain per price.

    Options: a step probe at each of the ``limit`` best-ranked candidates whose
    configuration is not ``probed`` (``ranking``: candidate indices best first; default
    the feasible ones by cost, else all by P(success)), priced at ``setup_s`` plus
    ``steps`` steps on its workers; and a short run at each of their global batches
    that is not a measured one, on its cheapest configuration for the upper end of its
    epochs interval (none where that end is unbounded). None when there is no option.
    ``unit`` names the cost unit in the reason (``USD`` or ``worker-hours``); ``budget``
    is the question's cost bound and ``startup_s`` its fixed start-up (:func:`option_gains`).
    """
    # Checked here, where recommend's own rules apply: a negative setup made every price
    # negative (always "buy") and a NaN deadline every gain NaN.
    check_question_args(deadline_s=deadline_s, startup_s=startup_s, budget=budget, confidence=confidence, interval=interval)
    number(setup_s, where="setup_s", ge=0.0)
    integer(steps, where="steps", ge=1)
    integer(limit, where="limit", ge=1)
    feasible = candidate_array(feasible, est, where="feasible", dtype=bool)
    probed = candidate_array(probed, est, where="probed", dtype=bool)
    if ranking is not None:
        ranking = np.asarray(ranking)
        n = len(est.candidates)
        if ranking.ndim != 1 or ranking.dtype.kind not in "iu" or (ranking.size and not (0 <= ranking.min() and ranking.max() < n)):
            raise BadValue(f"must be candidate indices (whole numbers from 0 to {n - 1}), best first, got {excerpt(ranking)}",
                           where="ranking")
    cands = est.candidates
    cost = np.asarray(est.cost, float)
    ok = np.asarray(feasible, bool)
    if ranking is None:
        if np.any(ok):
            idx = np.flatnonzero(ok)
            ranking = idx[np.argsort(cost[idx], kind="stable")]
        else:
            p = np.nan_to_num(np.asarray(est.p_success if est.p_success is not None else est.p_reach, float), nan=0.0)
            ranking = np.argsort(-p, kind="stable")
    rate = np.asarray(est.price_per_hour, float) * cands.workers / 3600.0
    step_price = rate * (setup_s + steps * np.asarray(est.step_time_s, float))
    seen: set[tuple[int, int, int, int]] = set()
    chosen_rows: list[int] = []
    for i in np.asarray(ranking, int):
        key = (int(cands.gpu[i]), int(cands.workers[i]), int(cands.hosts[i]), int(cands.local_batch[i]))
        if probed[i] or key in seen or not np.isfinite(step_price[i]):
            continue
        seen.add(key)
        chosen_rows.append(int(i))
        if len(chosen_rows) >= limit:
            break
    unprobed = np.zeros(len(cands), bool)
    unprobed[chosen_rows] = True
    measured = np.asarray(measured_batches, float)
    shorts: list[tuple[int, float, float]] = []
    short_at: dict[int, tuple[int, float]] = {}
    for b in sorted({int(cands.global_batch[i]) for i in np.asarray(ranking, int)[: 4 * limit]}):
        if measured.size and np.any(np.isclose(measured, b)):
            continue
        at = np.flatnonzero(cands.global_batch == b)
        run = np.asarray(est.epochs_upper, float)[at]
        price = rate[at] * np.asarray(est.epoch_time_s, float)[at] * run
        # Only where the median run reaches the target: "a trial run to the target (up to 175
        # epochs)" at a batch that reaches it with p = 0.19 is no run to the target at all.
        good = np.isfinite(price) & (price > 0) & np.isfinite(np.asarray(est.epochs, float)[at])
        if not np.any(good):
            continue
        k = int(at[good][np.argmin(price[good])])
        short_at[b] = (k, float(np.asarray(est.epochs_upper, float)[k]))
        shorts.append((b, float(np.min(price[good])), 1.0))
    options = standard_options(est, unprobed=unprobed, step_price=step_price, short_runs=shorts)
    if not options:
        return None
    g = option_gains(est, options, feasible=ok, deadline_s=deadline_s, interval=interval, confidence=confidence,
                     step_floor=probed_step_floor(est, probed), budget=budget, startup_s=startup_s)
    price = np.array([o.price for o in options], float)
    net = g.gains - price
    # The one to buy has the largest net gain; with none worth buying, the answer names the
    # one closest to it (the largest gain per unit of price).
    k = int(np.argmax(net)) if np.any(net > 0) else int(np.argmax(g.gains / np.maximum(price, 1e-300)))
    opt, gain = options[k], float(g.gains[k])
    row, epochs = (opt.touches[0], None) if opt.kind == "step" else short_at[int(cands.global_batch[opt.touches[0]])]
    buy = gain > price[k]
    what = (
        f"a step-time probe of {int(cands.workers[row])} × {cands.gpus[int(cands.gpu[row])]} on {int(cands.hosts[row])} "
        f"host{'s' if cands.hosts[row] > 1 else ''}, local batch {int(cands.local_batch[row])}"
        if opt.kind == "step"
        # Priced to the upper end of its epochs to the target: a run to the target, which "a
        # short run" (81.7 epochs beside a 75.6-epoch job) misdescribed.
        else f"a trial run to the target at global batch {int(cands.global_batch[row])} (up to {epochs:.3g} epochs on "
        f"{int(cands.workers[row])} × {cands.gpus[int(cands.gpu[row])]})"
    )
    saves = "nothing measurable" if gain < 1e-3 * price[k] else _amount(gain, unit)
    reason = (
        f"{what} is expected to save {saves} for its price of {_amount(price[k], unit)}: worth measuring before the run"
        if buy
        else f"no measurement is worth its price: the closest, {what}, would save {saves} "
        f"for {_amount(price[k], unit)}"
    )
    return NextMeasurement(
        kind=opt.kind, gpu=cands.gpus[int(cands.gpu[row])], market=cands.markets[int(cands.market[row])],
        workers=int(cands.workers[row]), hosts=int(cands.hosts[row]), local_batch=int(cands.local_batch[row]),
        global_batch=int(cands.global_batch[row]), expected_gain=gain, price=float(price[k]), buy=bool(buy),
        reason=reason, epochs=epochs,
    )


def _amount(x: float, unit: str) -> str:
    """``x`` as the report prints money elsewhere (:func:`cotune.units.format_money`): ``,.3g``
    wrote $4.31e+03 and 2.73e-06 worker-hours."""
    from cotune.units import format_money

    text = format_money(x, priced=False).removesuffix(" w·h")
    return f"${text}" if unit == "USD" else f"{text} {unit}"
