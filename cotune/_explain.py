"""Why the answer is what it is: the paper's one-knob baselines, and — when nothing is
feasible — the nearest candidates and which constraint to relax. Pure functions of the
estimates; nothing here prints."""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from cotune.models import AccuracyModel, FittedModels
from cotune.solver import (
    DEFAULT_CONFIDENCE,
    MIN_CHANCE,
    Choice,
    Estimates,
    Feasibility,
    SearchSpace,
    best_index,
    choice_at,
    cost_at_confidence,
    ranked,
)
from cotune.units import count_of, format_duration, format_duration_at_least, format_money_at_least

__all__ = ["baselines", "relax"]


def _nearest_batch(candidates: Sequence[int], wanted: float) -> int:
    arr = np.asarray(candidates, float)
    return int(arr[np.argmin(np.abs(np.log(arr) - math.log(wanted)))])


def baselines(
    est: Estimates,
    ok: np.ndarray,
    models: FittedModels,
    space: SearchSpace,
    *,
    objective: str,
    target: float,
    chosen: Choice | None,
    local_batch: int | None,
    workers: int | None,
) -> tuple[dict[str, Choice | None], dict[str, dict[str, object]]]:
    """The paper's independent baselines, solved under the same constraints.

    * resource-only: the local batch stays at the user's (by default the probed batch
      nearest the smallest measured global batch, the job's reference); GPU type and
      workers are tuned;
    * batch-only: GPU type (the chosen one) and workers (one full host) stay; the local
      batch is tuned.
    """
    cands = est.candidates
    g0 = chosen.gpu if chosen is not None else space.gpus[0]
    gi0 = space.gpus.index(g0)
    b0 = local_batch or _nearest_batch(space.local_batches[g0], float(models.accuracy.batches_[0]))
    n0 = workers or min(space.host_size(g0), space.max_workers[g0])
    b_mask = np.zeros(len(cands), dtype=bool)
    used: dict[str, int] = {}
    for gi, g in enumerate(space.gpus):
        used[g] = b0 if b0 in space.local_batches[g] else _nearest_batch(space.local_batches[g], b0)
        b_mask |= (cands.gpu == gi) & (cands.local_batch == used[g])
    w_mask = (cands.gpu == gi0) & (cands.workers == n0) & (cands.hosts == -(-n0 // space.host_size(g0)))
    baselines: dict[str, Choice | None] = {}
    for name, mask in (("resource_only", b_mask), ("batch_only", w_mask)):
        i = best_index(est, mask & ok, objective)
        baselines[name] = None if i is None else choice_at(est, i, target)
    # The batch the baseline ran at (a requested batch no candidate has is moved to the
    # nearest one there is, per GPU type): the report names that one and the request.
    ran = baselines["resource_only"].local_batch if baselines["resource_only"] is not None else used[g0]
    settings: dict[str, dict[str, object]] = {
        "resource_only": {"local_batch": int(ran), "tunes": "gpu, workers"},
        "batch_only": {"gpu": g0, "workers": int(n0), "tunes": "local_batch"},
    }
    if local_batch is not None and any(b != local_batch for b in used.values()):
        settings["resource_only"]["requested_local_batch"] = int(local_batch)
    if n0 > space.max_workers[g0]:
        # Not "no feasible configuration" as if the baseline had been tried: it is not in the space.
        settings["batch_only"]["outside_space"] = (f"{n0} workers is more than the {space.max_workers[g0]} the search "
                                                   f"space allows for {g0} (--max-workers / max_workers)")
    return baselines, settings


def _best_chances(est: Estimates, mask: np.ndarray, fallback: np.ndarray, limit: int = 3) -> np.ndarray:
    """The nearest candidates when the deadline is missed: the best chances of success
    first (highest ``P(success)`` to the point, the cheaper of equal chances) — what a job
    that will be watched and re-planned should start on — then the fastest. Chances under
    :data:`cotune.solver.MIN_CHANCE` count as none: among them "the cheaper of equal chances"
    would put the slowest first (one worker, hours over a minutes deadline)."""
    if est.p_success is None:
        return fallback
    p = np.where(mask & np.isfinite(est.cost), np.asarray(est.p_success, float), 0.0)
    if not np.any(p >= MIN_CHANCE):
        return fallback
    order = np.lexsort((est.cost, -np.round(p, 2)))
    best = [int(i) for i in order[:limit] if p[i] >= MIN_CHANCE]
    rest = [int(i) for i in fallback if int(i) not in best]
    return np.array((best + rest)[:limit], dtype=int)


def _round_easier(value: float, *, maximise: bool, digits: int = 4) -> float:
    """``value`` to ``digits`` significant digits, rounded toward the easier target (down
    when the metric is maximised): a hint printed rounded the other way asks for more."""
    if value == 0 or not math.isfinite(value):
        return value
    exponent = digits - 1 - math.floor(math.log10(abs(value)))
    if exponent > 300:  # a subnormal target (5e-324): 10**327 is no float, and nothing to round
        return value
    scale = 10.0 ** exponent
    return (math.floor if maximise else math.ceil)(value * scale) / scale


# Re-estimates a target hint may take (its first guess and, when that is met, the bracket end
# toward the target asked for — else the easy end; then bisection): enough to bisect
# a span of the whole metric range down to the 4 significant digits a hint is printed with
# (about 40 ms each on 256 rows) — with 8 the "hardest" was up to 0.7 points too easy.
_TARGET_CHECKS = 22
_TARGET_CHECK_ROWS = 256  # the fastest candidates a target hint is checked on


def _easier_target(check: Callable[[float, float | None], bool], reachable: np.ndarray, *, target: float,
                   confidence: float | None, maximise: bool, span: float | None = None) -> float | None:
    """The hardest target easier than ``target`` that some candidate meets by the deadline
    (checked by re-estimating the fastest candidates at it: ``check`` from :func:`_checker`), or None.

    ``reachable`` holds each candidate's metric at the epochs it trains by the deadline: the
    best of them is the first guess. It reads the best-so-far surface at epochs scaled by the
    time ratio estimated at the asked target, so it is often easier than need be (0.9187 where
    0.942 is met): when the check finds a candidate meeting it, bisection between it and the
    target asked for (not met: nothing is feasible) finds the hardest met; when not (its chance
    of reaching a target near a plateau, rounding), bisection between it and the easiest of
    them. Bounded: at most ``_TARGET_CHECKS`` estimates of ``_TARGET_CHECK_ROWS`` candidates.
    ``span``: the metric's observed range (:func:`_metric_span`), as :func:`_hardest_met` takes it.
    """
    ok = np.isfinite(reachable) & ((reachable < target) if maximise else (reachable > target))
    if not ok.any():
        return None  # nothing the curves reach by the deadline is easier than the target asked for
    hard = float(reachable[ok].max() if maximise else reachable[ok].min())
    easy = float(reachable[ok].min() if maximise else reachable[ok].max())
    return _hardest_met(lambda t: check(t, confidence), hard=hard, easy=easy, maximise=maximise, not_met=target,
                        span=span)


def _metric_span(acc: AccuracyModel) -> float:
    """The metric's observed range over the profile's curves (first evaluation to best, in
    metric units), never below the fit's own floor for it (``metric_range_``, > 0)."""
    lo = min(float(r.best[0]) for r in acc.runs_)
    hi = max(float(r.best[-1]) for r in acc.runs_)
    return max(hi - lo, float(acc.metric_range_))


def _hardest_met(meets: Callable[[float], bool], *, hard: float, easy: float, maximise: bool,
                 not_met: float | None = None, span: float | None = None) -> float | None:
    """The hardest target between ``easy`` and ``hard`` (both included) that ``meets``,
    rounded toward the easier side; None when even ``easy`` is not met. ``meets`` must only
    get easier toward ``easy``: bisection, at most ``_TARGET_CHECKS`` calls, until no printed
    (4-digit) value lies between the hardest met and the easiest not met — so the answer is the
    hardest at the precision it is shown with.

    ``not_met``: a target harder than ``hard`` known not to be met (the one asked for). When
    ``hard`` is only a guess and is met, the search goes on between it and ``not_met``, so the
    answer is never easier than need be; it stays strictly easier than ``not_met``.

    ``span``: how far past ``hard`` a met target may plausibly lie (the metric's observed
    range). A ``not_met`` farther than that is first brought to ``hard`` ± ``span`` (itself
    checked: one call), so the bisection starts from a bracket its calls can resolve to the
    printed digits whatever the request — a target of 0 or -1e12 for a loss halved a span
    of 1e12 twenty times, never reached 4 digits, and returned the guess as "the hardest"."""
    rounded = lambda v: _round_easier(v, maximise=maximise)  # noqa: E731
    if meets(rounded(hard)):
        if not_met is None or (hard >= not_met if maximise else hard <= not_met):
            return rounded(hard)
        good, bad = hard, not_met  # the guess is met: bisect toward the target asked for
        near = None if span is None else (hard + span if maximise else hard - span)
        if near is not None and ((near < not_met) if maximise else (near > not_met)):
            if meets(rounded(near)):
                good = near  # met even there: on toward the request, as far as the calls go
            else:
                bad = near
    elif not meets(rounded(easy)):
        return None
    else:
        good, bad = easy, hard  # met / not met: bisect toward the hardest met
    for _ in range(_TARGET_CHECKS - 2):
        shown_met, shown_not_met = rounded(good), rounded(bad)
        if abs(shown_not_met - shown_met) <= _digit_unit(shown_met) * (1.0 + 1e-9):
            break  # adjacent printed values: nothing harder to show is left untried
        mid = (good + bad) / 2.0
        if meets(rounded(mid)):
            good = mid
        else:
            bad = mid
    return rounded(good)


# Steps an easier-target search may take past the easiest value the curves give, each twice
# the last (from 0.1 % of it): a one-evaluation profile (0.5) asked for 0.9 has no measured
# value easier than its best, yet 0.45 is met in a minute.
_BEYOND_STEPS = 10


def _hardest_met_beyond(meets: Callable[[float], bool], *, easy: float, maximise: bool) -> float | None:
    """The hardest target easier than ``easy`` (the easiest the curves give, itself not met)
    that ``meets``: widening steps past it until one is met, then bisection between that step
    and the last not met (:func:`_hardest_met`); None when even the widest is not met.
    Bounded: ``_BEYOND_STEPS`` calls, then :func:`_hardest_met`'s."""
    step = max(abs(easy) * 1e-3, 1e-9)
    sign = -1.0 if maximise else 1.0
    not_met = easy
    for _ in range(_BEYOND_STEPS):
        candidate = easy + sign * step
        if meets(_round_easier(candidate, maximise=maximise)):
            return _hardest_met(meets, hard=not_met, easy=candidate, maximise=maximise)
        not_met, step = candidate, step * 2.0
    return None


def _digit_unit(value: float, *, digits: int = 4) -> float:
    """One unit in the last of ``digits`` significant digits of ``value`` (as :func:`_round_easier` rounds)."""
    if value == 0 or not math.isfinite(value):
        return 0.0
    return 10.0 ** (math.floor(math.log10(abs(value))) - (digits - 1))


def _chance_hints(est: Estimates, models: FittedModels, *, target: float, deadline_s: float | None,
                  confidence: float | None, startup_s: float) -> list[str]:
    """Hints when the curves reach the target but no candidate does so with a probability
    above ``confidence`` (``DEFAULT_CONFIDENCE``, the median, when None; P(reach) ≤ q
    everywhere): a lower confidence, or an easier target, each checked by re-estimating the
    fastest candidates (with the deadline, if any)."""
    maximise = models.goal == "max"
    c = est.candidates
    q = DEFAULT_CONFIDENCE if confidence is None else confidence
    p = np.where(np.isfinite(est.epochs), est.p_reach, 0.0)
    i = int(np.argmax(p))
    asked = f"{q:g}" if confidence is not None else f"{q:g} (the median: --confidence unset)"
    # At exactly q (a target equal to the best measured value: P = ½) the chance is not short,
    # but no time is late enough to have it: say so, or "best 0.50" against 0.5 reads as a plan.
    why = ("no more than that: at exactly that chance no finite time reaches it (the target is the best the curves give)"
           if float(p[i]) >= q else "the curves end close to the target")
    out = [f"no candidate reaches {models.metric_name} {target:g} with probability {asked}: the best chance of "
           f"reaching it is {float(p[i]):.2f} (global batch {int(c.global_batch[i])}): {why}"]
    check = _checker(est, models, deadline_s=deadline_s, startup_s=startup_s)
    lower = _lower_confidence(check, target=target, confidence=q)
    what = "meets the deadline" if deadline_s is not None else "reaches the target"
    if lower is not None:
        out.append(f"lower the confidence (--confidence / confidence, now {q:g}) to {lower:g}, the highest any "
                   f"candidate {what} at" + ("; a plan more likely to miss than to meet" if lower < 0.5 else ""))
    # The easy end: the best first evaluation of any batch, which its curve reads at once.
    acc = models.accuracy
    easy = float(acc._score(np.max(acc.curve_start_)))
    easier = None
    if easy < target if maximise else easy > target:
        easier = _hardest_met(lambda t: check(t, confidence), hard=target, easy=easy, maximise=maximise)
    if easier is None:
        # Nothing the curves give is easy enough (a target at the first evaluation itself):
        # past it, as far as the widening steps go.
        start = min(easy, target) if maximise else max(easy, target)
        easier = _hardest_met_beyond(lambda t: check(t, confidence), easy=start, maximise=maximise)
    if easier is not None and easier != target:
        out.append(f"{'or ' if lower is not None else ''}{'lower' if maximise else 'raise'} the target (--target / target) "
                   f"to {easier:.4g}, the hardest some candidate {what} with probability {q:g}")
    return out


_CONFIDENCE_STEP = 0.01  # a confidence hint is a multiple of this, rounded down (the safe side)


def _checker(est: Estimates, models: FittedModels, *, deadline_s: float | None, startup_s: float):
    """``check(target, q)``: whether some of the ``_TARGET_CHECK_ROWS`` fastest candidates,
    estimated again at that target and confidence, meet the deadline (reach the target,
    without one) — how every hint that names a value is checked before it is given.

    Unit prices: the deadline decides here, not the money (a zero price makes 0 × ∞ costs,
    NaN and a RuntimeWarning, for the candidates that never reach the target)."""
    from cotune.solver import Candidates, estimate, feasibility

    c = est.candidates
    rows = np.argsort(np.where(np.isfinite(est.time_s), est.time_s, np.inf), kind="stable")[:_TARGET_CHECK_ROWS]
    sub = Candidates(gpus=c.gpus, markets=c.markets, gpu=c.gpu[rows], market=c.market[rows], workers=c.workers[rows],
                     hosts=c.hosts[rows], local_batch=c.local_batch[rows])
    unit_prices = np.ones((len(c.gpus), len(c.markets)))

    def check(target: float, confidence: float | None) -> bool:
        e = estimate(sub, models, target=target, price_per_hour=unit_prices, startup_s=startup_s, confidence=confidence)
        return bool(feasibility(e, deadline_s=deadline_s, budget=None, confidence=confidence).meets_deadline.any())

    return check


def _lower_confidence(check, *, target: float, confidence: float) -> float | None:
    """The highest confidence below ``confidence`` (a multiple of ``_CONFIDENCE_STEP``) at which
    some candidate meets the deadline, checked by re-estimating the fastest candidates at it;
    None when none does even at the lowest step.

    Feasibility only gets easier as the confidence falls (``P(reach) > q`` and the time's
    ``q``-quantile both loosen), so a bisection over the steps finds it: at most
    ``log2(100) + 1`` estimates of ``_TARGET_CHECK_ROWS`` candidates (``check``: :func:`_checker`).
    """

    def meets(q: float) -> bool:
        return check(target, q)

    good, bad = 0, math.ceil(round(confidence / _CONFIDENCE_STEP, 9))  # steps: met at good (0: not known), not at bad
    if bad <= 1 or not meets(_CONFIDENCE_STEP):
        return None
    good = 1
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if meets(mid * _CONFIDENCE_STEP) else (good, mid)
    return round(good * _CONFIDENCE_STEP, 2)


def _percent_hint(target: float, best_metric: float, goal: str) -> str:
    """A clause when the target reads as a percentage against curves logged as fractions
    (94 against a top-1 of 0.9466): the answer is then right but the question is not."""
    if goal == "max" and 0.0 < best_metric <= 1.0 < target <= 100.0:
        return f" (the curves are fractions of 1: for {target:g} % write {target / 100:g})"
    return ""


def relax(
    est: Estimates,
    feas: Feasibility,
    models: FittedModels,
    space: SearchSpace,
    *,
    target: float,
    deadline_s: float | None,
    budget: float | None,
    confidence: float | None,
    objective: str,
    priced: bool,
    startup_s: float,
    global_batch_range: tuple[float, float] | None = None,
) -> tuple[list[str], np.ndarray]:
    """What to change when nothing is feasible, and the nearest candidates (when the
    deadline is what fails: the best chances of success first, then the fastest).

    Each hint names the command-line option and the API field (``--deadline / deadline_s``):
    the same text reaches CLI users, Python callers and HTTP clients.
    """
    acc = models.accuracy
    if global_batch_range is not None:
        gb = est.candidates.global_batch
        lo_b, hi_b = global_batch_range
        allowed = (gb >= lo_b) & (gb <= hi_b)
        span = f"--global-batch / global_batch_range, now {lo_b:g}..{hi_b:g}"
        if not allowed.any():
            return ([f"no candidate's global batch lies in the range asked for ({span}): the candidates span "
                     f"{int(gb.min())}..{int(gb.max())}; widen the range or the search space"], np.empty(0, dtype=int))
        reached = np.isfinite(est.epochs)
        if not (reached & allowed).any() and reached.any():
            inside = gb[reached]
            return ([f"no candidate in the global batch range asked for ({span}) reaches {models.metric_name} {target:g}; "
                     f"candidates at global batches {int(inside.min())}..{int(inside.max())} do: widen the range"],
                    np.empty(0, dtype=int))
        # Below, every hint speaks of the candidates the range allows.
        est = est.take(np.flatnonzero(allowed))
        feas = Feasibility(reaches=feas.reaches[allowed], meets_deadline=feas.meets_deadline[allowed],
                           within_budget=feas.within_budget[allowed])
        hints, idx = relax(est, feas, models, space, target=target, deadline_s=deadline_s, budget=budget,
                           confidence=confidence, objective=objective, priced=priced, startup_s=startup_s)
        return hints, np.flatnonzero(allowed)[idx] if idx.size else idx
    if not feas.reaches.any() and np.isfinite(est.epochs).any():
        # The curves reach the target (finite epochs at the median) but not with the chance
        # asked for: a matter of confidence, not of longer curves. Without --confidence too:
        # a target equal to the best measured value is reached with P = ½ exactly, and no
        # deadline helps there (time at ½ is ∞), so the deadline branch had nothing to say.
        return (_chance_hints(est, models, target=target, deadline_s=deadline_s, confidence=confidence,
                              startup_s=startup_s), _best_chances(est, np.isfinite(est.epochs), np.empty(0, dtype=int)))
    if not feas.reaches.any():
        finals = np.array([row[np.isfinite(row)][-1] for row in acc.surface_])
        best = int(np.argmax(finals))
        best_metric = float(acc._score(finals[best]))
        maximise = models.goal == "max"
        # The target to name is one a candidate meets as asked — by the deadline, at the
        # confidence — checked as every named value is: the best fitted metric alone (0.9466)
        # was a second "nothing feasible" at a deadline of 30 minutes and confidence 0.9.
        # The easy end: the best first evaluation of any batch (never harder than the best fitted).
        first = float(acc._score(np.max(acc.curve_start_)))
        easy = min(first, best_metric) if maximise else max(first, best_metric)
        check = _checker(est, models, deadline_s=deadline_s, startup_s=startup_s)
        # A target past the best fitted value may still be met: below q = ½ its chance of being
        # reached is above q ("the hardest" named 0.9465 where 0.9485 is met at q = 0.3), and even
        # at ½ a batch whose own plateau lies past the pooled surface's best reaches it with more
        # (yolov3-voc: 11.80 is met, the best fitted is 11.8017). So the search goes on up to the
        # target asked for, which is not met (no curve reaches it).
        met = _hardest_met(lambda t: check(t, confidence), hard=best_metric, easy=easy, maximise=maximise,
                           not_met=target, span=_metric_span(acc))
        if met is None:
            met = _hardest_met_beyond(lambda t: check(t, confidence), easy=easy, maximise=maximise)
        head = (f"no measured learning curve reaches {models.metric_name} {target:g}: the best fitted is "
                f"{_round_easier(best_metric, maximise=maximise):.4g} "
                f"(global batch {int(acc.batches_[best])}); ")
        tail = _percent_hint(target, best_metric, models.goal)
        # Only a checked value strictly easier than the request: the best fitted metric printed
        # to 4 digits (0.758 for a target of 0.758) sent the user round in a loop.
        if met is not None and ((met < target) if maximise else (met > target)):
            what = "meets the deadline" if deadline_s is not None else "reaches"
            chance = f" with probability {confidence:g}" if confidence is not None else ""
            return ([f"{head}{'lower' if maximise else 'raise'} the target (--target / target) to {met:.4g}, the hardest "
                     f"some candidate {what}{chance}, or record longer curves{tail}"], np.empty(0, dtype=int))
        why = ""
        at_easy = _round_easier(easy, maximise=maximise)
        if deadline_s is not None and _checker(est, models, deadline_s=None, startup_s=startup_s)(at_easy, confidence):
            # Reached without the deadline: an easier target alone would be a second "nothing feasible".
            why = (f"; no candidate meets the deadline even at {models.metric_name} {at_easy:.4g}, the easiest the curves "
                   "give: the deadline (--deadline / deadline_s) must rise too")
        return ([f"{head}record longer curves{why}{tail}"], np.empty(0, dtype=int))
    out: list[str] = []
    if deadline_s is not None and not feas.meets_deadline.any():
        # With a budget, the deadline that would do is the one the fastest candidate *within
        # the budget* needs: the fastest overall may cost far more than the budget allows.
        affordable = budget is not None and bool(feas.within_budget.any())
        fastest = ranked(est, feas.within_budget if affordable else feas.reaches, "time", limit=3)
        i = int(fastest[0])
        c = est.candidates
        needed = float(est.time_at_confidence_s[i])
        cfg = f"{c.gpus[c.gpu[i]]} x{c.workers[i]}, local batch {c.local_batch[i]}"
        who = "the fastest candidate within the budget" if affordable else "the fastest candidate"
        also = ""
        if budget is not None and not affordable and math.isfinite(needed):
            # Raising the deadline alone would leave the question infeasible: no candidate fits the budget.
            cost_q = float(cost_at_confidence(est)[i])
            also = f", and the budget (--budget / budget) to at least {format_money_at_least(cost_q, priced=priced)}, its cost"
        if startup_s >= deadline_s:
            # No configuration can help: the start-up alone takes the whole deadline.
            at_least = (f" to at least {format_duration_at_least(needed)} ({who}, {cfg}, needs it){also}"
                        if math.isfinite(needed) else "")
            return ([f"the start-up alone (--startup / startup_s, {format_duration(startup_s)}) takes the whole deadline "
                     f"({format_duration(deadline_s)}): raise the deadline (--deadline / deadline_s){at_least}, or shorten "
                     "the start-up"], _best_chances(est, np.isfinite(est.epochs), fastest))
        if not math.isfinite(needed):
            # No deadline is late enough for even the fastest (its time at the confidence is
            # ∞): a matter of chance, so the chance hints — never an empty list.
            return (_chance_hints(est, models, target=target, deadline_s=deadline_s, confidence=confidence,
                                  startup_s=startup_s), _best_chances(est, np.isfinite(est.epochs), fastest))
        out.append(f"raise the deadline (--deadline / deadline_s) to at least {format_duration_at_least(needed)} ({who}, "
                   f"{cfg}, needs it){also}")
        if c.workers[i] >= space.max_workers[c.gpus[c.gpu[i]]]:
            out.append(f"or allow more than {count_of(c.workers[i], 'worker')} (--max-workers / max_workers): {who} uses them all")
        # The epochs each candidate trains by the deadline at the confidence the plan is judged
        # at (its median training time over its time at that confidence), and the metric the
        # curves give there: a target no harder than that has the chance it needs.
        with np.errstate(divide="ignore", invalid="ignore"):
            at_conf = (est.time_s - startup_s) / (est.time_at_confidence_s - startup_s)
            afford = np.maximum(deadline_s - startup_s, 0.0) / est.epoch_time_s * np.where(np.isfinite(at_conf), at_conf, 0.0)
        reachable = acc.metric_at(est.candidates.global_batch.astype(float), afford)
        maximise = models.goal == "max"
        # One checker for both hints: its candidate subset (the fastest rows) is built once.
        check = _checker(est, models, deadline_s=deadline_s, startup_s=startup_s)
        easier = _easier_target(check, reachable, target=target, confidence=confidence, maximise=maximise,
                                span=_metric_span(acc))
        if easier is not None:
            # A target the check found a plan for — not "the best" one: the accuracy model is
            # not monotone in the target (docs/models.md § 2), and a harder one may be plannable.
            out.append(f"or {'lower' if maximise else 'raise'} the target (--target / target) to {easier:.4g}, which a "
                       "candidate is predicted to reach by the deadline")
        if confidence is not None:
            lower = _lower_confidence(check, target=target, confidence=confidence)
            if lower is None:
                out.append(f"lowering the confidence (--confidence / confidence, now {confidence:g}) does not help: no "
                           f"candidate meets the deadline even at {_CONFIDENCE_STEP:g}")
            else:
                odds = "; a plan more likely to miss than to meet" if lower < 0.5 else ""
                out.append(f"or lower the confidence (--confidence / confidence, now {confidence:g}) to {lower:g}, the "
                           f"highest any candidate meets the deadline at{odds}")
        return out, _best_chances(est, np.isfinite(est.epochs), fastest)
    if budget is not None:
        ok = feas.meets_deadline
        cheapest = ranked(est, ok, "cost", limit=3)
        if cheapest.size:
            # The budget is met at the confidence, as the deadline is: the cost at it.
            need = float(np.min(cost_at_confidence(est)[ok]))
            which = "the cheapest candidate" if confidence is None else f"the lowest cost at confidence {confidence:g} of any candidate"
            which += "" if deadline_s is None else (" meeting the deadline" if confidence is None else " that meets the deadline")
            out.append(f"raise the budget (--budget / budget) to at least {format_money_at_least(need, priced=priced)} ({which})")
            if deadline_s is not None and feas.within_budget.any():
                # Only where a plan without the deadline fits the budget: at $0.1 against a
                # cheapest plan of $0.398 with no deadline at all, relaxing it could not help.
                out.append("or relax the deadline (--deadline / deadline_s): slower, smaller clusters cost less")
            return out, cheapest
    return ["no candidate is feasible; widen the search space (--max-workers, --local-batch, --gpu / max_workers, local_batches, gpus)"], np.empty(0, dtype=int)


