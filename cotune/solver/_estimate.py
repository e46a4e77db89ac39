"""Estimate every candidate at once: step time, epochs, time, cost — with intervals.

For candidate ``c = (gpu, market, n, h, b)`` with global batch ``B = n·b``::

    epoch_time_s(c) = dataset_size / B × step_time_s(gpu, n, h, b)
    time_s(c)       = startup_s + epochs_to_target(B) × epoch_time_s(c)
    cost(c)         = n × price_per_hour(gpu, market) × time_s(c) / 3600

With no prices, ``price_per_hour = 1`` and cost is worker-hours (the paper's resource
cost). Uncertainty combines in log space, treating step-time and epoch errors as
independent: given the target is reached, ``ln T_train = ln T + σ_step·u_step + σ_E·u_E``
with each standardised error ``u`` a scale mixture of normals measured on public data
(:mod:`cotune.models._shape`; ``±1.645 σ`` still covers 90 %, the mixture says how the
rest spreads), and ``G`` the law of that sum. The target is reached at all with
probability ``p_reach``, so the probability of success — reaching the target by the
deadline ``D`` — is::

    P(success) = p_reach · G(ln(D − startup_s) − ln T)

(with a budget ``B``, ``D`` is per candidate the earlier of the deadline and ``B / r``, ``r``
the cost of one second: cost is ``r × time_s``, so a budget is a deadline of its own)

and the time at confidence ``q`` (the ``q``-quantile of the time to success, infinite
when ``q ≥ p_reach``) is ``startup_s + exp(ln T + G⁻¹(q / p_reach))``, so that
``time_q ≤ D ⇔ P(success) ≥ q`` for on-demand rows; the interval is ``exp(ln T + G⁻¹((1 ± level)/2))``.
A spot or mixed row's ``time_q`` is the later of the revocation model's quantile and the
time its ``P(success)`` law meets with probability ``q`` (docs/spot.md), so there only
``time_q ≤ D ⇒ P(success) ≥ q``: a plan may have the chance and still be refused.
``log_sigma_time`` stays ``√(σ_step² + σ_E²)``. Without a confidence the solver plans
at ``DEFAULT_CONFIDENCE = 0.5``: the median.

Models are evaluated once per distinct (gpu, n, h, b) and once per distinct ``B``
and broadcast back, so markets and repeated batches cost nothing extra.
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from cotune._checks import BadValue, excerpt, number
from cotune._checks import interval as check_interval
from cotune.models import FittedModels
from cotune.models._shape import split_log_sigma, time_error_cdf, time_error_ppf
from cotune.solver._space import Candidates

__all__ = [
    "DEFAULT_CONFIDENCE", "MIN_CHANCE", "Estimates", "budget_deadline_s", "cost_at_confidence", "cost_rate_per_s", "estimate",
    "spend_time_s", "success_probability", "success_time_quantile_s",
]

# The confidence a plan is made at when none is asked for: P(success) ≥ ½, the median.
DEFAULT_CONFIDENCE = 0.5
# Below this P(success) a "best chance" is no chance (every door: the nearest candidates of
# `recommend` and of `replan` are then the ones that miss by the least, not the cheapest).
MIN_CHANCE = 0.01
# Rows of a revocation law evaluated at once (_on_time_with_revocations): its temporaries
# hold about 27 KB a row, so a block is ~7 MB whatever the number of spot rows (and stays in
# the CPU caches: 256-row blocks ran 3x faster than one pass over 4,576 rows, 1,024-row ones slower).
LAW_ROWS_PER_BLOCK = 256


@dataclass(frozen=True)
class Estimates:
    """Predictions for every candidate (struct of arrays aligned with ``candidates``)."""

    candidates: Candidates
    step_time_s: np.ndarray
    epoch_time_s: np.ndarray
    epochs: np.ndarray
    epochs_lower: np.ndarray
    epochs_upper: np.ndarray
    time_s: np.ndarray
    time_lower_s: np.ndarray
    time_upper_s: np.ndarray
    time_at_confidence_s: np.ndarray
    cost: np.ndarray
    cost_lower: np.ndarray
    cost_upper: np.ndarray
    price_per_hour: np.ndarray
    time_extrapolated: np.ndarray
    epochs_extrapolated: np.ndarray
    p_reach: np.ndarray  # probability that the target is reached at all
    log_sigma_time: np.ndarray  # σ of log training time, given the target is reached
    epochs_distance: np.ndarray  # doublings of global batch from the nearest measured batch
    step_log_sigma: np.ndarray
    p_success: np.ndarray | None = None  # filled in for a deadline by solver.with_success
    # Time to success *given the target is reached* (finite also where p_reach < ½, when
    # ``time_s`` is ∞), and the σ of its log when it differs from ``log_sigma_time`` (spot:
    # revocation-count variance added). None: ``time_s`` and ``log_sigma_time``.
    time_if_reached_s: np.ndarray | None = None
    log_sigma_success: np.ndarray | None = None
    # Spot rows (a spot stage's): the law of the time to success as the work's own error plus
    # the revocations' delay, shape (n, 1 + nodes): [:, 0] the checkpointed work ``W_c`` at
    # the median (training seconds), [:, 1:] equally likely delays the revocations add
    # (cotune.spot.revocation_delay_nodes_s); NaN rows and None: no revocations, the law is
    # ``log_sigma_success``'s.
    revocation_law_s: np.ndarray | None = None

    def take(self, keep: np.ndarray) -> "Estimates":
        """The rows ``keep`` (indices or a mask), candidates included."""
        c = self.candidates
        cands = Candidates(
            gpus=c.gpus, markets=c.markets, gpu=c.gpu[keep], market=c.market[keep],
            workers=c.workers[keep], hosts=c.hosts[keep], local_batch=c.local_batch[keep],
        )
        fields = {
            k: (None if getattr(self, k) is None else getattr(self, k)[keep])
            for k in Estimates.__dataclass_fields__
            if k != "candidates"
        }
        return Estimates(candidates=cands, **fields)


def _unique_inverse(*cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of first occurrences of distinct rows, and the inverse map (1-D keys: fast)."""
    key = np.zeros(cols[0].shape, dtype=np.int64)
    for col in cols:
        col = col.astype(np.int64)
        key = key * (int(col.max()) + 1 if col.size else 1) + col
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def estimate(
    candidates: Candidates,
    models: FittedModels,
    *,
    target: float,
    price_per_hour: np.ndarray,
    startup_s: float = 0.0,
    confidence: float | None = None,
) -> Estimates:
    """Predict time and cost of every candidate.

    ``price_per_hour`` has shape ``(len(gpus), len(markets))``: the price of one worker.
    """
    n = len(candidates)
    w = candidates.workers.astype(float)
    b = candidates.local_batch.astype(float)
    gb = candidates.global_batch.astype(float)

    step = np.empty(n)
    step_sigma = np.empty(n)
    t_extrap = np.zeros(n, dtype=bool)
    # Each distinct (gpu, n, h, b) — hence global batch — once: `rows` of them, `row` maps back.
    row = np.zeros(n, dtype=np.int64)
    rows: list[np.ndarray] = []
    for gi, gpu in enumerate(candidates.gpus):
        sel = np.flatnonzero(candidates.gpu == gi)
        if sel.size == 0:
            continue
        first, inv = _unique_inverse(candidates.workers[sel], candidates.hosts[sel], candidates.local_batch[sel])
        pick = sel[first]
        pred = models.predict_step(gpu, w[pick], candidates.hosts[pick].astype(float), b[pick])
        step[sel] = pred.step_time_s[inv]
        step_sigma[sel] = pred.log_sigma[inv]
        t_extrap[sel] = pred.extrapolated[inv]
        row[sel] = inv + sum(r.size for r in rows)
        rows.append(pick)

    ub, binv = np.unique(gb, return_inverse=True)
    ep = models.predict_epochs(ub, target)
    epochs, e_lo, e_hi = ep.epochs[binv], ep.lower[binv], ep.upper[binv]
    e_extrap = ep.extrapolated[binv]
    p_reach = ep.p_reach[binv]
    sig_e = ep.log_sigma[binv]

    epoch_time = models.dataset_size / gb * step
    q = DEFAULT_CONFIDENCE if confidence is None else float(confidence)
    if q < 0.5:
        # Below one half a plan may be more likely to miss than to meet: where the target is
        # reached with probability p_reach in [q, ½) its median time is unbounded, so its
        # epochs, time and cost are those it takes *if* it reaches the target — what a plan at
        # q is judged by (its q-quantile and P(success) follow from them, as above ½).
        take = (p_reach >= q) & ~np.isfinite(epochs)
        epochs = np.where(take, ep.epochs_if_reached[binv], epochs)
    train = epochs * epoch_time
    train_if_reached = ep.epochs_if_reached[binv] * epoch_time
    sig_t = np.sqrt(step_sigma**2 + sig_e**2)
    level = float(models.accuracy.interval_)
    first = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # Quantiles of the log-time error (a scale mixture, cotune.models._shape) per distinct
        # row; the interval's ends are one probability for every row (the cheap case).
        spreads = dict(sigma_step=step_sigma[first], sigma_epochs=sig_e[first])
        quant = np.stack([time_error_ppf((1.0 - level) / 2.0, **spreads), time_error_ppf((1.0 + level) / 2.0, **spreads),
                          time_error_ppf(np.minimum(q / p_reach[first], 1.0), **spreads)])[:, row]
        log_train = np.log(train)
        lower = startup_s + np.exp(log_train + quant[0])
        upper = startup_s + np.exp(log_train + quant[1])
        at_conf = startup_s + np.exp(log_train + quant[2])
        at_conf = np.where(q < p_reach, at_conf, np.inf)
    reached = np.isfinite(epochs)
    time_s = np.where(reached, startup_s + train, np.inf)
    lower = np.where(reached, lower, np.inf)
    upper = np.where(reached, upper, np.inf)
    at_conf = np.where(reached, at_conf, np.inf)

    price = np.asarray(price_per_hour, float)[candidates.gpu, candidates.market]
    rate = w * price / 3600.0
    return Estimates(
        candidates=candidates,
        step_time_s=step,
        epoch_time_s=epoch_time,
        epochs=epochs,
        epochs_lower=e_lo,
        epochs_upper=e_hi,
        time_s=time_s,
        time_lower_s=lower,
        time_upper_s=upper,
        time_at_confidence_s=at_conf,
        cost=rate * time_s,
        cost_lower=rate * lower,
        cost_upper=rate * upper,
        price_per_hour=price,
        time_extrapolated=t_extrap,
        epochs_extrapolated=e_extrap,
        p_reach=p_reach,
        log_sigma_time=sig_t,
        epochs_distance=ep.distance_doublings[binv],
        step_log_sigma=step_sigma,
        time_if_reached_s=startup_s + train_if_reached,
    )


def cost_rate_per_s(est: Estimates) -> np.ndarray:
    """What a second of each candidate's job costs: ``cost / time_s`` (after a spot stage, the
    ratio of its revocation-aware expectations), else ``workers × price_per_hour / 3600``
    where the time is not finite. A job's cost is this rate times its time, start-up
    included, so its cost and its time share one error."""
    listed = est.candidates.workers * np.asarray(est.price_per_hour, float) / 3600.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = est.cost / est.time_s
    return np.where(np.isfinite(ratio) & (est.time_s > 0), ratio, listed)


def spend_time_s(budget: float | None, rate_per_s: np.ndarray) -> np.ndarray | None:
    """The time at which a job costing ``rate_per_s`` a second spends ``budget`` (None: no
    budget; ∞ where a second costs nothing; 0 once nothing is left). The one rule behind
    :func:`budget_deadline_s` and ``cotune replan``'s budget left."""
    if budget is None:
        return None
    rate = np.asarray(rate_per_s, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rate > 0, max(float(budget), 0.0) / rate, np.inf)


def budget_deadline_s(est: Estimates, budget: float | None) -> np.ndarray | None:
    """The time at which each candidate's job spends ``budget`` (None: no budget; ∞ where a
    second costs nothing). Because cost is the rate times the time, "within the budget" is
    "by this time", and a budget is a deadline of its own for every candidate."""
    return spend_time_s(budget, cost_rate_per_s(est))


def check_question_args(
    *,
    deadline_s: float | None = None,
    startup_s: float = 0.0,
    budget: float | None = None,
    confidence: float | None = None,
    interval: float | None = None,
) -> None:
    """The question's numbers a public solver function takes, by the request's rules: a NaN
    deadline read every candidate as late (P = 0) and a NaN interval failed deep in
    ``statistics``, where ``recommend`` names the field."""
    if deadline_s is not None:
        number(deadline_s, where="deadline_s", gt=0.0)
    number(startup_s, where="startup_s", ge=0.0)
    if budget is not None:
        number(budget, where="budget", gt=0.0)
    if confidence is not None:
        number(confidence, where="confidence", gt=0.0, lt=1.0, what="a probability")
    if interval is not None:
        check_interval(interval, where="interval")


def candidate_array(value: object, est: Estimates, *, where: str, dtype: type = float) -> np.ndarray:
    """``value`` as one entry per candidate of ``est`` (a mask or a price), or :class:`BadValue`:
    a shorter array failed in numpy's broadcasting or indexing, without naming the argument."""
    n = len(est.candidates)
    try:
        a = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise BadValue(f"must be an array of {n} {'booleans' if dtype is bool else 'numbers'} (one per candidate), "
                       f"got {excerpt(value)}", where=where) from None
    if a.shape != (n,):
        raise BadValue(f"must hold one value per candidate ({n}), got shape {a.shape}: take it from the same estimates",
                       where=where)
    return a


def cost_at_confidence(est: Estimates) -> np.ndarray:
    """The cost at the confidence the estimates were made at: the time at confidence times
    the rate (``cost_q ≤ budget ⇔ time_q ≤`` :func:`budget_deadline_s`)."""
    with np.errstate(invalid="ignore"):
        out = cost_rate_per_s(est) * est.time_at_confidence_s
    return np.where(np.isnan(out), np.inf, out)


def success_probability(
    est: Estimates, *, deadline_s: float | None, startup_s: float = 0.0, budget: float | None = None
) -> np.ndarray:
    """``P(success)`` of every candidate: the target reached, by the deadline if one is set,
    within the budget if one is set.

    ``P(success) = p_reach · G(log(D − startup_s) − log T_reached)`` (module doc) with
    ``T_reached`` the median time to success given the target is reached
    (``time_if_reached_s``; it stays finite where ``p_reach < ½``, so a candidate that
    reaches the target with probability 0.45 has a probability of success, not 0) and
    ``G`` the law of its log error (:func:`_time_spreads`: the step-time and epochs parts,
    plus the normal revocation-count variance where a stage added it in
    ``log_sigma_success``). A spot row with a ``revocation_law_s`` is a mixture instead:
    ``p_reach · mean_i G(ln(D − startup_s − d_i) − ln W_c)`` over the revocations' equally
    likely delays ``d_i`` (:func:`_on_time_with_revocations`), never above its
    revocation-free chance. With a budget ``B``, ``D`` is per candidate the earlier of the
    deadline and ``B / r`` (:func:`budget_deadline_s`, ``r`` the cost of a second): the job's
    cost is ``r·T``, so it stays within the budget exactly when it ends by then. Uses the
    estimates as they stand: after a spot stage the times are the revocation-aware
    expectations.
    """
    check_question_args(deadline_s=deadline_s, startup_s=startup_s, budget=budget)
    t = _time_if_reached(est)
    by_budget = budget_deadline_s(est, budget)
    if deadline_s is None and by_budget is None:
        return np.where(np.isfinite(t), est.p_reach, 0.0)
    # The binding end, per candidate: the deadline or the time its job spends the budget.
    end = np.full(t.shape, np.inf if deadline_s is None else float(deadline_s))
    if by_budget is not None:
        end = np.minimum(end, by_budget)
    sig_step, sig_e, extra = _time_spreads(est)
    with np.errstate(divide="ignore", invalid="ignore"):
        slack = np.log(np.maximum(end - startup_s, 0.0)) - np.log(t - startup_s)
        # NaN slack (no time at all) is late; +∞ (a training time that vanishes beside the
        # start-up) is on time: nan_to_num would make that +∞ the largest double instead.
        on_time = time_error_cdf(np.where(np.isnan(slack), -np.inf, slack), sigma_step=sig_step, sigma_epochs=sig_e,
                                 extra_var=extra)
    law = _revocation_rows(est)
    if law.any():
        on_time[law] = _on_time_with_revocations(est, law, end[law] - startup_s, sig_step[law], sig_e[law])
    return np.where(np.isfinite(t), est.p_reach * on_time, 0.0)


def _revocation_rows(est: Estimates) -> np.ndarray:
    """The rows whose time to success carries a revocation law (``revocation_law_s``)."""
    if est.revocation_law_s is None:
        return np.zeros(len(est.time_s), dtype=bool)
    law = np.asarray(est.revocation_law_s, float)
    return np.isfinite(law[:, 0]) & (law[:, 0] > 0) & np.isfinite(law[:, 1:]).all(axis=1)


def _on_time_with_revocations(est: Estimates, rows: np.ndarray, train_end_s: np.ndarray, sig_step: np.ndarray,
                              sig_e: np.ndarray) -> np.ndarray:
    """``P(W_c·e^ε + delay ≤ end)`` of the ``rows`` (training seconds): the work's own error
    law ``G`` at each of the revocation delay's equally likely values, averaged — a mixture
    over the revocation count, never above the revocation-free ``G(ln end − ln W_c)``.

    A log-normal spread widened around ``E[T]`` (``log_sigma_success`` alone, until 2026-12-06)
    treated the one-sided delay as symmetric: below the median more spread raised P, and a
    spot row's P(success) exceeded its on-demand twin's (84 of 176 rows at 900 s) and the
    simulated share (0.208 stated, 0.040 simulated)."""
    law = np.asarray(est.revocation_law_s, float)[rows]
    end = np.broadcast_to(np.asarray(train_end_s, float), (law.shape[0],))
    sig_step = np.broadcast_to(np.asarray(sig_step, float), end.shape)
    sig_e = np.broadcast_to(np.asarray(sig_e, float), end.shape)
    out = np.empty(end.shape)
    # In blocks of rows: the error law's temporaries hold components × nodes numbers per row
    # (~27 KB), so all rows at once took 34,000 spot rows to +1 GB; a block keeps it flat.
    for i in range(0, out.size, LAW_ROWS_PER_BLOCK):
        at = slice(i, i + LAW_ROWS_PER_BLOCK)
        work, delay = law[at, 0], law[at, 1:]
        with np.errstate(divide="ignore", invalid="ignore"):
            slack = np.log(np.maximum(end[at, None] - delay, 0.0)) - np.log(work)[:, None]
        slack = np.where(np.isnan(slack), -np.inf, slack)
        # (nodes, rows): the error law broadcasts its spreads over the last axis.
        out[at] = time_error_cdf(slack.T, sigma_step=sig_step[at], sigma_epochs=sig_e[at]).mean(axis=0)
    return out


def success_time_quantile_s(est: Estimates, q: float, *, startup_s: float = 0.0) -> np.ndarray:
    """The deadline each candidate meets with probability ``q`` by :func:`success_probability`'s
    own law: the least ``D`` with ``P(success by D) ≥ q``,
    ``D_q = startup_s + (T_reached − startup_s) · exp(G⁻¹(q / p_reach))``; ∞ where
    ``p_reach ≤ q`` (no deadline is late enough) or no time is known.

    A later stage (spot) that adds its own spread to ``log_sigma_success`` or a
    ``revocation_law_s`` (then by bisection on that mixture) states its time at a
    confidence here too, so that "done by ``time_at_confidence_s``" and
    "``P(success) ≥ q``" are one promise, never two that disagree."""
    t = _time_if_reached(est)
    sig_step, sig_e, extra = _time_spreads(est)
    p_reach = np.asarray(est.p_reach, float)
    ok = np.isfinite(t) & (p_reach > q)
    out = np.full(t.shape, np.inf)
    if ok.any():
        z = time_error_ppf(q / p_reach[ok], sigma_step=sig_step[ok], sigma_epochs=sig_e[ok], extra_var=extra[ok])
        with np.errstate(over="ignore", invalid="ignore"):
            out[ok] = startup_s + (t[ok] - startup_s) * np.exp(z)
    law = _revocation_rows(est) & ok
    if law.any():
        out[law] = startup_s + _revocation_quantile_s(est, law, q / p_reach[law], sig_step[law], sig_e[law])
    return np.where(np.isnan(out), np.inf, out)


def _revocation_quantile_s(est: Estimates, rows: np.ndarray, p: np.ndarray, sig_step: np.ndarray,
                           sig_e: np.ndarray) -> np.ndarray:
    """The least training time ``y`` with :func:`_on_time_with_revocations` ``≥ p``, by
    bisection between ``W_c·e^{G⁻¹(p)}`` (no delay) and that plus the largest delay."""
    law = np.asarray(est.revocation_law_s, float)[rows]
    with np.errstate(over="ignore", invalid="ignore"):
        lo = law[:, 0] * np.exp(time_error_ppf(p, sigma_step=sig_step, sigma_epochs=sig_e))
        hi = lo + law[:, 1:].max(axis=1)
    todo = np.isfinite(hi) & (hi > lo)
    for _ in range(100):
        if not todo.any():
            break
        r = np.flatnonzero(todo)
        mid = 0.5 * (lo[r] + hi[r])
        sub = np.flatnonzero(rows)[r]
        pick = np.zeros(rows.shape, dtype=bool)
        pick[sub] = True
        # the rows in `rows`' order are the rows of `pick` in index order: r is increasing
        below = _on_time_with_revocations(est, pick, mid, sig_step[r], sig_e[r]) < p[r]
        lo[r] = np.where(below, mid, lo[r])
        hi[r] = np.where(below, hi[r], mid)
        todo[r] = (hi[r] - lo[r]) > 1e-9 * hi[r]
    return np.where(np.isnan(hi), np.inf, hi)


def _time_if_reached(est: Estimates) -> np.ndarray:
    """Each candidate's median time to success given the target is reached: its time, or
    where that is ∞ (``p_reach < ½``) the time it takes if it is reached."""
    if est.time_if_reached_s is None:
        return est.time_s
    return np.where(np.isfinite(est.time_s), est.time_s, est.time_if_reached_s)


def _time_spreads(est: Estimates) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(σ_step, σ_E, σ_x²)`` of every candidate's log time: the step-time and epochs parts
    of ``log_sigma_time`` and the variance a later stage added in ``log_sigma_success``
    (spot: the revocation count), which is normal."""
    sig_t = np.nan_to_num(np.asarray(est.log_sigma_time, float), nan=0.0)
    sig_step, sig_e = split_log_sigma(sig_t, est.step_log_sigma)
    if est.log_sigma_success is None:
        return sig_step, sig_e, np.zeros_like(sig_t)
    extra = np.maximum(np.nan_to_num(np.asarray(est.log_sigma_success, float), nan=0.0) ** 2 - sig_t**2, 0.0)
    return sig_step, sig_e, extra
