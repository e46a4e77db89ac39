"""The remaining work of a running job as a distribution: P(success) of every option.

A job has run ``d`` epochs-equivalent of its work and has not reached its target yet.
For each option ``k`` (stay, or switch to another configuration and resume there at the
hand-over epoch ``d_k``) the total epochs to the target are log-normal with median
``Ê_k`` and log-spread ``σ_k`` given the target is reached, and the target is reached
with probability ``p_k`` *by the end ``H_k`` of the runs it was estimated from*
(``horizon_epochs``; by default the job's own schedule end ``M_k``, ``max_epochs``):
given it is reached, the epochs are that log-normal truncated at ``H_k`` (no end:
``H_k = ∞``, ``F(H_k) = 1``). A target not reached by the job's schedule end ``M_k``
is missed. Not having reached the target by ``d_k`` is evidence, so every belief is
conditioned on ``E_k > d_k``::

    F(x)   = Φ((ln x − ln Ê_k) / σ_k)                 CDF of the untruncated epochs
    G_k    = F(H_k) − F(d_k)                          mass between hand-over and horizon
    s_k    = G_k / F(H_k)                             P(not reached by d_k | reached)
    p_k'   = p_k · s_k / (p_k · s_k + 1 − p_k)        reached by H_k, given not yet (Bayes)
    C_k    = min(M_k, H_k)                            the last epoch at which it can be reached
    π_k    = p_k' · (F(C_k) − F(d_k)) / G_k           reached by C_k, given not yet (p_reach)
    b_k    = min(d_k + (R_k − ρ_k)/τ_k, C_k)          epochs the deadline, budget and schedule allow
    P_k    = p_k' · (F(b_k) − F(d_k)) / G_k           (P(success))
    x(f)   : F(x) − F(d_k) = f · (F(C_k) − F(d_k))    the f-quantile given reached by C_k
    t_k    = (x(½) − d_k) · τ_k + ρ_k
    cost_k = rate_k · t_k

with ``R_k`` the remaining deadline, or the time at which option ``k`` spends the budget
left if that comes first (``budget_end_s``; a job's cost is its rate times its time, so a
budget is a deadline of its own; ∞: neither, ``P_k = π_k``), ``ρ_k`` the
restart (0 for staying), ``τ_k`` the epoch time and ``t_k`` the conditional median
remaining time. ``σ_k`` carries both the epochs and the step-time spread
(``σ_k² = σ_E,k² + σ_step,k²``). With ``shapes`` (beliefs from the models alone, before the
job has a curve) ``F`` is the law of ``σ_step·u_step + σ_E·u_E`` with each ``u`` of its
measured error shape (:mod:`cotune.models._shape`) instead of the normal.

Why truncate rather than multiply by ``F(M_k)``: the reach probabilities of the curve
forecaster and of the accuracy model are both "reached within the run" (their runs end
where their schedules end), so where the job's schedule is the one they learnt from
(``H_k = M_k``), ``p_k · P(E ≤ M_k)`` counts the schedule's end twice. A schedule
shorter than those runs (``M_k < H_k``) still cuts the chance, by ``F(M_k)/F(H_k)``.
Scored against published curves with the run's end as the schedule
(``python -m benchmarks.public_curves --pollux``, truncated at 10–90 % of each run), the
chance of reaching the target by the end given not yet has a Brier score of 0.117 this
way against 0.152 multiplied on the Pollux curves with the one-curve prior, and 0.263
against 0.404 on the DAWNBench curves from the curve alone (whose base rate scores
0.208: on schedule-driven runs a curve alone says little about reach; the prior does).

A pure function of arrays: no fitting, no I/O; the closed-loop replay
(``benchmarks/closed_loop.py``) and ``cotune replan`` feed it the models and the job's
own curve, and :func:`cotune.solver.decide_replan` (``confidence=``) decides on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cotune.models._shape import ErrorShape

__all__ = ["MIN_FALLBACK_GAIN", "FinishFirst", "RemainingWork", "finish_first", "remaining_work", "schedule_left_s"]

# Below this upper-tail mass at the hand-over (z ≈ 7) the quantiles use the exponential
# tail approximation, which agrees with the exact one there to about 1 % of the excess
# and, unlike it, survives 1 − F(d) underflowing far behind the model.
_FAR_TAIL = 1e-12


def _epochs_or_inf(v: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    """Epochs per option (None or NaN: no end, ∞)."""
    return np.full(shape, np.inf) if v is None else np.broadcast_to(np.nan_to_num(np.asarray(v, float), nan=np.inf, posinf=np.inf), shape)


@dataclass(frozen=True)
class RemainingWork:
    """Per option: ``p_success``, ``p_reach`` (given not reached yet), ``time_s`` (conditional
    median, restart included) and ``cost`` (``rate × time``)."""

    p_success: np.ndarray
    p_reach: np.ndarray
    time_s: np.ndarray
    cost: np.ndarray
    # Conditional median epochs left (given reached) and, with ``confidence=q``, the time by
    # which the option succeeds with probability q (∞ where its P(success) never gets there).
    epochs: np.ndarray | None = None
    time_at_confidence_s: np.ndarray | None = None
    # With ``interval=``: the central interval of the remaining time given the target is
    # reached (by the schedule's end), restart included.
    time_interval_s: tuple[np.ndarray, np.ndarray] | None = None


def remaining_work(
    *,
    epochs: np.ndarray,
    log_sigma: np.ndarray,
    p_reach: np.ndarray,
    done_epochs: np.ndarray,
    epoch_time_s: np.ndarray,
    restart_s: np.ndarray,
    rate_per_s: np.ndarray,
    remaining_s: float | None,
    max_epochs: np.ndarray | None = None,
    confidence: float | None = None,
    horizon_epochs: np.ndarray | None = None,
    step_log_sigma: np.ndarray | None = None,
    shapes: tuple[ErrorShape, ErrorShape] | None = None,
    budget_end_s: np.ndarray | None = None,
    interval: float | None = None,
) -> RemainingWork:
    """P(success), time and cost of the remaining work of every option (module doc).

    ``epochs`` is the median total epochs given the target is reached (∞ or NaN: no
    estimate, chance 0); ``done_epochs`` the hand-over epoch at each option;
    ``remaining_s`` the time left to the deadline (None: no deadline); ``budget_end_s`` per
    option the time (restart included) at which it spends the budget left, ``budget_left /
    rate`` (None: no budget); ``max_epochs``
    where an option's schedule ends (its learning-rate schedule: a target not reached
    by then is missed; None or ∞: no end); ``horizon_epochs`` where the runs behind
    ``p_reach`` ended (``p_reach`` is the chance of reaching the target by then, and the
    epochs given reached are truncated there; None: ``max_epochs``, the job's own
    schedule); ``confidence`` q: also the time by which each
    option has succeeded with probability q, ``ρ + τ·(x_q − d)`` where
    ``F(x_q) − F(d) = (q/p')·G`` (∞ when ``q ≥ π``, the chance within the schedule; the
    deadline does not cap it: it is the time the option *needs*); ``interval``: also the
    central interval of the remaining time given the target is reached (``time_interval_s``,
    ``x((1 ∓ interval)/2)``). Past ``C`` (the job has run beyond its schedule or the horizon
    without reaching) every chance is 0 and the times are the untruncated tail's.
    """
    from cotune.models._normal import norm_cdf, norm_ppf
    from cotune.models._shape import split_log_sigma, time_error_cdf, time_error_ppf

    e = np.asarray(epochs, float)
    sigma = np.maximum(np.asarray(log_sigma, float), 1e-6)
    if shapes is None:
        def upper(x: np.ndarray) -> np.ndarray:  # P(ln E − ln Ê > x): the upper tail, summed directly
            return norm_cdf(-x / sigma)

        def upper_quantile(u: np.ndarray) -> np.ndarray:  # x with P(ln E − ln Ê > x) = u
            return sigma * -norm_ppf(u)

        sigma_tail = sigma
    else:
        step_shape, epochs_shape = shapes
        sig_step, sig_e = split_log_sigma(sigma, step_log_sigma)
        kw = dict(sigma_step=sig_step, sigma_epochs=sig_e, step=step_shape, epochs=epochs_shape)

        def upper(x: np.ndarray) -> np.ndarray:
            return time_error_cdf(-x, **kw)

        def upper_quantile(u: np.ndarray) -> np.ndarray:
            return -time_error_ppf(u, **kw)

        # The widest component rules the far tail (the exponential approximation below).
        sigma_tail = np.sqrt((max(step_shape.scales) * sig_step) ** 2 + (max(epochs_shape.scales) * sig_e) ** 2)
    p = np.clip(np.nan_to_num(np.asarray(p_reach, float), nan=0.0), 0.0, 1.0)
    done = np.maximum(np.nan_to_num(np.asarray(done_epochs, float), nan=0.0, posinf=0.0), 0.0)
    tau = np.asarray(epoch_time_s, float)
    restart = np.asarray(restart_s, float)
    schedule = _epochs_or_inf(max_epochs, e.shape)
    end = schedule if horizon_epochs is None else _epochs_or_inf(horizon_epochs, e.shape)  # the truncation point H
    ok = np.isfinite(e) & (e > 0) & np.isfinite(tau) & (tau > 0)
    e_safe = np.where(ok, e, 1.0)
    tau_safe = np.where(ok, tau, 1.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_e = np.log(e_safe)
        x_done = np.where(done > 0, np.log(np.maximum(done, 1e-300)) - log_e, -np.inf)
        z_done = x_done / sigma_tail
        # Upper tails directly: 1 − F loses every digit far behind the model.
        surv = np.maximum(upper(x_done), 1e-300)
        x_end = np.where(np.isfinite(end), np.log(np.maximum(end, 1e-300)) - log_e, np.inf)
        surv_end = upper(x_end)
        # The mass between the hand-over and the horizon H; none left (the job is past the
        # end of the runs behind p): the untruncated tail keeps the time finite and every
        # chance is 0 below.
        gap = surv - surv_end
        past_end = gap <= 1e-300
        gap = np.where(past_end, surv, gap)
        f_end = np.where(past_end, 1.0, 1.0 - surv_end)
        s_k = gap / np.maximum(f_end, 1e-300)
        p_cond = np.where(p >= 1.0, 1.0, p * s_k / np.maximum(p * s_k + (1.0 - p), 1e-300))
        # The job's own schedule may end first (C = min(M, H)): reaching is possible only
        # before C, so the chance is cut to the mass before it and "given reached" means
        # reached by C (past C: missed, chance 0, the untruncated tail for the time).
        cut = np.minimum(end, schedule)
        surv_cut = np.where(np.isfinite(cut), upper(np.log(np.maximum(cut, 1e-300)) - log_e), 0.0)
        gap_cut = np.minimum(surv - surv_cut, gap)
        past_cut = past_end | (gap_cut <= 1e-300)
        gap_cut = np.where(past_cut, gap, gap_cut)
        p_sched = np.where(past_cut, 0.0, p_cond * gap_cut / gap)
        upper_mid = np.where(past_cut, surv / 2.0, surv - gap_cut / 2.0)
        log_median = log_e + upper_quantile(upper_mid)
        # Far in the tail the excess of ln E over ln d is about exponential with mean σ/z
        # (Mills ratio): its median, σ·ln 2 / z, keeps the remaining work positive where
        # 1 − F(d) underflows. Nearer, the exact quantile is the right one (the approximation
        # overstates it for z ≲ 2 and knows nothing of the schedule's end).
        far = (done > 0) & (surv < _FAR_TAIL)
        tail = np.log(np.maximum(done, 1e-300)) + sigma_tail * math.log(2.0) / np.maximum(z_done, 1.0)
        median = np.exp(np.where(far, np.maximum(log_median, tail), log_median))
        median = np.where(past_cut, median, np.minimum(median, cut))
        time_s = np.maximum(median - done, 0.0) * tau_safe + restart
        # R_k: the deadline or, where it comes first, the time the option spends the budget.
        limit_s = np.full(e.shape, np.inf if remaining_s is None else float(remaining_s))
        if budget_end_s is not None:
            limit_s = np.minimum(limit_s, np.nan_to_num(np.asarray(budget_end_s, float), nan=0.0))
        allowed = np.where(np.isfinite(limit_s), done + np.maximum(limit_s - restart, 0.0) / tau_safe, np.inf)
        allowed = np.minimum(allowed, cut)
        surv_allowed = np.where(np.isfinite(allowed), upper(np.log(np.maximum(allowed, 1e-300)) - log_e), 0.0)
        on_time = np.where(past_cut, 0.0, np.clip((surv - surv_allowed) / gap_cut, 0.0, 1.0))

        def reached_by(frac: np.ndarray) -> np.ndarray:
            """The epoch by which ``frac`` of the mass reached before C is reached."""
            log_x = log_e + upper_quantile(np.maximum(surv - frac * gap_cut, 1e-300))
            # The same exponential tail as the median (frac = ½ gives it back without an end).
            tail_x = np.log(np.maximum(done, 1e-300)) + sigma_tail * -np.log1p(-np.minimum(frac, 1 - 1e-12)) / np.maximum(z_done, 1.0)
            return np.minimum(np.exp(np.where(far, np.maximum(log_x, tail_x), log_x)), cut)

        at_q = None
        if confidence is not None:
            # P(reached by x | not by d) = p'·(F(x) − F(d))/G_k up to C: q is met where that
            # is q, and never when q ≥ p'·(F(C) − F(d))/G_k, the chance within the schedule.
            r = np.clip(float(confidence) / np.maximum(p_sched, 1e-300), 0.0, 1.0)
            at_q = np.where((r < 1.0) & ~past_cut, np.maximum(reached_by(r) - done, 0.0) * tau_safe + restart, np.inf)
        bounds = None
        if interval is not None:
            # Given reached (by C): the central ``interval`` of the remaining time.
            bounds = tuple(
                np.where(past_cut, np.inf, np.maximum(reached_by(np.full(e.shape, f)) - done, 0.0) * tau_safe + restart)
                for f in ((1.0 - interval) / 2.0, (1.0 + interval) / 2.0)
            )
    ok &= np.isfinite(time_s)
    return RemainingWork(
        p_success=np.where(ok, p_sched * on_time, 0.0),
        p_reach=np.where(ok, p_sched, 0.0),
        time_s=np.where(ok, time_s, np.inf),
        cost=np.where(ok, np.asarray(rate_per_s, float) * time_s, np.inf),
        epochs=np.where(ok, np.maximum(median - done, 0.0), np.inf),
        time_at_confidence_s=None if at_q is None else np.where(ok, at_q, np.inf),
        time_interval_s=None if bounds is None else (np.where(ok, bounds[0], np.inf), np.where(ok, bounds[1], np.inf)),
    )


def schedule_left_s(*, schedule_epochs: float | None, done_epochs: float, epoch_time_s: float) -> float:
    """The time the running configuration needs to run out its learning-rate schedule,
    ``(M − d)·τ`` (∞ without a known end ``M`` or without an epoch time; 0 past it)."""
    if schedule_epochs is None or not math.isfinite(schedule_epochs):
        return math.inf
    if not (math.isfinite(epoch_time_s) and epoch_time_s > 0 and math.isfinite(done_epochs)):
        return math.inf
    return max(float(schedule_epochs) - max(float(done_epochs), 0.0), 0.0) * float(epoch_time_s)


# A fallback that adds less chance than this is not counted (staying is weighed alone): a
# point of probability is below what the replay can tell apart, and below it the answer
# would carry a note ("<0.01 -> <0.01") that says nothing.
MIN_FALLBACK_GAIN = 0.01


@dataclass(frozen=True)
class FinishFirst:
    """Staying weighed with the move it can still make after its schedule (:func:`finish_first`):
    ``p_success`` and expected ``cost`` of "stay; if the schedule ends short, move", and
    ``fallback`` — the option it would move to (an index of the options given; None when
    no option adds a chance, and then ``p_success`` and ``cost`` are staying's own)."""

    p_success: float
    cost: float
    fallback: int | None


def finish_first(
    *,
    p_success: float,
    p_reach: float,
    cost: float,
    finish_cost: float,
    global_batch: np.ndarray,
    running_batch: float,
    fallback_p_success: np.ndarray,
    fallback_cost: np.ndarray,
) -> FinishFirst:
    """Staying, weighed with the move the job can still make once its schedule has ended short.

    A job that runs out its learning-rate schedule at its batch ``B`` learns whether it
    reached the target there; if not — probability ``1 − π``, ``π`` staying's chance of
    reaching it by the schedule's end given not yet (:class:`RemainingWork` ``p_reach``) —
    it can still move. An option ``k`` started then, with the deadline shortened by the
    time ``t_M`` the schedule took (``fallback_p_success``: each option's ``P(success)`` by
    ``R − t_M``, :func:`remaining_work` with ``remaining_s`` so shortened, restart
    included; :func:`schedule_left_s` gives ``t_M``), succeeds with ``P_k(R − t_M)``. With
    ``k*`` the fallback of the highest such chance::

        P' = P_stay + (1 − π) · P_k*(R − t_M)
        C' = π · C_stay + (1 − π) · (C_M + C_k*)

    ``C_stay`` staying's cost given reached, ``C_M`` (``finish_cost``) the cost of running
    out the schedule, ``C_k*`` (``fallback_cost``) the fallback's remaining cost.

    Only smaller batches count as fallbacks: a batch that ends its schedule short of the
    target tells the models that every larger batch, which plateaus no higher, falls
    short too (the reach cap of the closed loop). The smaller batches keep the chance the
    models give them now; the failure itself is not read as news about them, so the
    fallback is the optimistic end of what the job can still do. Where ``t_M`` is long,
    ``P_k(R − t_M)`` is about 0 and nothing changes: it matters near the schedule's end.

    Why: a job minutes from the end of its recipe, whose best-so-far curve had paused
    (read as a plateau below the target), restarted elsewhere for 120 s and missed where
    finishing would have reached the target (a BERT job at epoch 2.02 of 2.07 whose curve
    reaches the target at 2.068; benchmarks/README.md § Closed loop). Finishing first
    spends ``t_M`` of the deadline and settles the question; restarting at once throws
    the answer away.
    """
    gb = np.asarray(global_batch, float)
    fb = np.clip(np.nan_to_num(np.asarray(fallback_p_success, float), nan=0.0), 0.0, 1.0)
    fc = np.asarray(fallback_cost, float)
    if not (gb.shape == fb.shape == fc.shape):
        raise ValueError("global_batch, fallback_p_success and fallback_cost must hold one value per option: shapes "
                         f"{gb.shape}, {fb.shape} and {fc.shape}")
    # A NaN chance or finishing cost would pass every comparison below as False and come back
    # as a NaN P(success) with a fallback named (decide_replan then refuses the NaN as bad input).
    for name, value in (("p_success", p_success), ("p_reach", p_reach), ("finish_cost", finish_cost)):
        if math.isnan(float(value)):
            raise ValueError(f"finish_first: {name} is NaN; give staying's {name} as a number (a chance in [0, 1], "
                             "a cost >= 0)")
    p = min(max(float(p_success), 0.0), 1.0)
    usable = (gb < float(running_batch)) & (fb > 0.0) & np.isfinite(fc)
    if not usable.any():
        return FinishFirst(p_success=p, cost=float(cost), fallback=None)
    k = int(np.flatnonzero(usable)[np.argmax(fb[usable])])
    pi = min(max(float(p_reach), 0.0), 1.0)
    p_new = min(p + (1.0 - pi) * float(fb[k]), 1.0)
    if p_new < p + MIN_FALLBACK_GAIN:
        return FinishFirst(p_success=p, cost=float(cost), fallback=None)
    reached = pi * float(cost) if pi > 0.0 else 0.0  # never reached by staying: that branch is empty
    return FinishFirst(p_success=p_new, cost=reached + (1.0 - pi) * (float(finish_cost) + float(fc[k])), fallback=k)
