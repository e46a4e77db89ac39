"""The re-planning decision of a running job, as a pure function with hysteresis.

Inputs are options already estimated for the *remaining* work: the current configuration
("stay", no restart) and alternatives whose time and cost already include the restart
they need. Any object with the attributes of :class:`ReplanOption` works (a
:class:`~cotune.solver.Choice` does), so the closed-loop benchmark can feed it replay
truth and ``cotune replan`` its models.

Rule (``key`` is cost or time, per ``objective``; ``time`` is the time at the requested
confidence when there is one):

* an option is *feasible* when its remaining time fits the remaining deadline and its
  remaining cost fits the budget left (``budget − spent``);
* the current configuration feasible: **stay** unless the best feasible alternative beats
  it by more than ``margin × key(stay)`` — the restart is already in the alternative's
  numbers, so a change must pay for itself and then some (no churn on noise);
* the current configuration infeasible: **switch** to the best feasible alternative;
* nothing feasible: **infeasible** — the target is not reachable by the deadline (within
  the budget) at any configuration; ``nearest`` is the option that misses by the least
  (smallest ``max(time / remaining deadline, cost / budget left)``).

With ``confidence=q`` the rule reads probabilities instead of times: an option is
feasible when its ``p_success`` — the probability that the *remaining* work reaches the
target within the remaining deadline, restart included — is at least ``q`` (and its cost
fits the budget left). Options are compared by their *risk-adjusted* cost,
``cost + (1 − p_success) · miss_cost``: a miss wastes what was spent and must be redone,
so trading a sure finish for a cheaper gamble pays only when the saving beats the
risk it adds (``miss_cost = 0``: plain cost), and the margin is a share of the whole
job's cost (``spent`` plus the current configuration's risk-adjusted remaining cost,
``key(stay)``: the saving is risk-adjusted too), so a job nearly done does not restart to
save a few percent of its last few minutes. An option is *kept* while its chance holds
``q`` but *entered* only at :func:`entry_threshold`, ``min(q + p_margin, (1 + q)/2)``: a
cheaper alternative must hold that to replace a feasible configuration, and when the
current one falls below ``q`` the cheapest that holds it is preferred (the cheapest at
``q`` when none does, and only if its chance beats staying by more than ``p_margin``:
otherwise the job stays — a job at 0.498 moved to one at 0.51 and back at every
checkpoint, 61 restarts in one replayed run that asked the controller after the first 50
steps of every start; 2 with this margin). Measured in the closed-loop replay (budgets 12, 14 and 16, with
the reach carry of :func:`cotune.solver.carry_reach`), switches that landed just above
``q`` fell below it at the next checkpoint and paid a second restart. When none is
feasible, ``nearest`` is the option with the best chance, and the decision moves there
only when that chance beats staying by more than ``p_margin`` (a switch costs a
restart; a chance that is only a little better is noise).

**Back-off.** A job that moved back to a configuration it had left has learnt that a
promise of the models did not hold for it (the option looked better until it ran
there): every margin above doubles with each such return (:func:`backoff_margin`, at
most :data:`MAX_BACKOFF_MARGIN`), so a job whose options all over-promise settles
instead of touring them. Measured in the closed-loop replay: a YOLOv3 job with no
deadline restarted 14 times, each untried batch judged at the models' chance until the
job ran there; 3 with the back-off (benchmarks/README.md § Closed loop).

A switch is described by what changes (:data:`CHANGES`): workers added or removed, the
batch (global batch), the GPU type, the market.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Hashable, Literal, Protocol, Sequence

from cotune.errors import InputError

__all__ = [
    "CHANGES", "MAX_BACKOFF_MARGIN", "P_MARGIN", "ReplanDecision", "ReplanOption", "backoff_margin", "changes_between", "count_returns",
    "decide_replan", "entry_threshold", "lr_scale", "miss_cost",
]

CHANGES = ("add_workers", "remove_workers", "change_batch", "change_gpu", "change_market")
P_MARGIN = 0.05  # how much better a chance must be to be worth a restart (the probability rule)


class _Option(Protocol):
    gpu: str
    market: str
    workers: int
    local_batch: int
    time_s: float
    time_at_confidence_s: float
    cost: float


@dataclass(frozen=True)
class ReplanOption:
    """A configuration with its estimated *remaining* time and cost (restart included)."""

    gpu: str
    market: str
    workers: int
    local_batch: int
    time_s: float
    cost: float
    time_at_confidence_s: float = math.nan  # defaults to time_s
    hosts: int = 1
    p_success: float = math.nan  # P(the remaining work reaches the target by the remaining deadline)

    def __post_init__(self) -> None:
        if math.isnan(self.time_at_confidence_s):
            object.__setattr__(self, "time_at_confidence_s", self.time_s)

    @property
    def global_batch(self) -> int:
        return self.workers * self.local_batch


@dataclass(frozen=True)
class ReplanDecision:
    """``decision`` is ``"stay"``, ``"switch"`` or ``"infeasible"``; ``chosen`` the option to
    run (None when infeasible), ``nearest`` the least-missing option when infeasible,
    ``changes`` what a switch changes, ``gain`` stay − chosen in the objective's unit;
    ``compared`` the alternative a "stay" weighed staying against (the one its reason's
    numbers are of), None where it weighed none."""

    # Compared by value (==), never hashed: it holds mappings and tables, which have no hash.
    __hash__ = None  # type: ignore[assignment]

    decision: Literal["stay", "switch", "infeasible"]
    reason: str
    chosen: Any
    nearest: Any
    changes: tuple[str, ...]
    gain: float | None
    stay_feasible: bool
    compared: Any = None


def changes_between(old: Any, new: Any) -> tuple[str, ...]:
    """What differs between two configurations, in :data:`CHANGES` order."""
    out = []
    if new.workers > old.workers:
        out.append("add_workers")
    elif new.workers < old.workers:
        out.append("remove_workers")
    if new.workers * new.local_batch != old.workers * old.local_batch:
        out.append("change_batch")
    if new.gpu != old.gpu:
        out.append("change_gpu")
    if new.market != old.market:
        out.append("change_market")
    return tuple(out)


def lr_scale(*, old_global_batch: int, new_global_batch: int, rule: Literal["linear", "sqrt", "none"] = "sqrt") -> float:
    """Learning-rate factor for a batch change: ``(B_new/B_old)`` (linear, Goyal et al.),
    its square root (sqrt, Krizhevsky; AdaScale-like) or 1 (none)."""
    if rule not in ("linear", "sqrt", "none"):
        raise InputError(f"learning-rate rule must be 'linear', 'sqrt' or 'none', got {rule!r}")
    ratio = new_global_batch / old_global_batch
    return ratio if rule == "linear" else math.sqrt(ratio) if rule == "sqrt" else 1.0


def decide_replan(
    *,
    stay: _Option | None,
    alternatives: Sequence[_Option],
    remaining_s: float,
    budget_left: float | None = None,
    objective: Literal["cost", "time"] = "cost",
    margin: float = 0.05,
    use_confidence: bool = False,
    confidence: float | None = None,
    p_margin: float = P_MARGIN,
    miss_cost: float = 0.0,
    spent: float = 0.0,
) -> ReplanDecision:
    """Stay, switch or give up, with hysteresis (see the module doc).

    ``stay`` is the current configuration's remaining work (no restart), or None when it
    cannot continue (all its workers lost, or not available any more).
    ``use_confidence`` compares ``time_at_confidence_s`` with the deadline instead of
    the median ``time_s``. ``confidence`` switches to the probability rule (module doc):
    every option then needs a ``p_success``.
    """
    if objective not in ("cost", "time"):
        raise InputError(f"objective must be 'cost' or 'time', got {objective!r}")
    if not (0.0 <= margin < 1.0):
        raise InputError(f"margin must be a fraction in [0, 1), e.g. 0.05; got {margin!r}")
    if not (remaining_s > 0):
        raise InputError(f"the remaining deadline must be > 0 seconds, got {remaining_s!r}: give a later deadline")
    if budget_left is not None and not math.isfinite(budget_left):
        raise InputError(f"budget left must be finite, got {budget_left!r}")
    if confidence is not None:
        return _decide_by_success(
            stay=stay, alternatives=alternatives, budget_left=budget_left, objective=objective, margin=margin,
            confidence=confidence, p_margin=p_margin, miss_cost=miss_cost, spent=spent,
        )

    def t(o) -> float:
        return float(o.time_at_confidence_s if use_confidence else o.time_s)

    def key(o) -> float:
        return float(o.cost if objective == "cost" else t(o))

    def feasible(o) -> bool:
        ok = math.isfinite(t(o)) and t(o) <= remaining_s
        return ok and (budget_left is None or o.cost <= budget_left)

    def shortfall(o) -> float:
        over_t = t(o) / remaining_s if math.isfinite(t(o)) else math.inf
        over_c = o.cost / budget_left if budget_left is not None else 0.0  # budget_left > 0: a spent one is handled apart
        return max(over_t, over_c)

    ok = [o for o in alternatives if feasible(o)]
    best = min(ok, key=key) if ok else None
    stay_ok = stay is not None and feasible(stay)
    where = "the remaining deadline" + ("" if budget_left is None else " and the budget left")
    if stay_ok:
        gain = None if best is None else key(stay) - key(best)
        if best is not None and gain > margin * key(stay):
            return ReplanDecision(
                "switch", f"the best alternative saves {gain / key(stay):.1%} of the {objective} after paying its "
                f"restart, more than the {margin:.0%} margin", best, None, changes_between(stay, best), gain, True,
            )
        pct = 0.0 if gain is None or key(stay) == 0 else gain / key(stay)
        why = ("no alternative meets " + where) if best is None else (
            f"the best alternative would save only {pct:.1%} of the {objective} after its restart"
            if pct > 0 else f"the best alternative is {-pct:.1%} worse in {objective} after its restart"
        )
        return ReplanDecision("stay", f"{why}; switching needs more than the {margin:.0%} margin", stay, None, (), gain, True,
                              compared=best)
    if best is not None:
        gain = None if stay is None else key(stay) - key(best)
        why = "the current configuration cannot continue" if stay is None else f"the current configuration misses {where}"
        return ReplanDecision("switch", why, best, None, changes_between(stay, best) if stay is not None else (), gain, False)
    pool = [o for o in (*alternatives, *([stay] if stay is not None else []))]
    if budget_left is not None and budget_left <= 0:
        # The budget is spent: every option's cost over it is infinite and none came out
        # nearest. The nearest is then the cheapest that meets the deadline (its cost is what
        # going on needs), else the one nearest in time.
        in_time = [o for o in pool if math.isfinite(t(o)) and t(o) <= remaining_s and math.isfinite(o.cost)]
        timed = [o for o in pool if math.isfinite(t(o))]
        nearest = (min(in_time, key=lambda o: float(o.cost)) if in_time
                   else min(timed, key=t) if timed else None)
        miss = ("" if nearest is None else
                f"; the budget is spent, and the nearest needs {float(nearest.cost):.4g} more" if in_time else
                f"; the budget is spent, and the nearest misses the deadline by {t(nearest) / remaining_s - 1:.0%}")
        return ReplanDecision(
            "infeasible", f"the target is not reachable within {where} at any configuration considered{miss}",
            None, nearest, (), None, False,
        )
    nearest = min(pool, key=shortfall) if pool else None
    if nearest is not None and not math.isfinite(shortfall(nearest)):
        nearest = None  # no option reaches the target at all: none is "near"
    miss = "" if nearest is None else f"; the nearest misses by {shortfall(nearest) - 1:.0%}"
    return ReplanDecision(
        "infeasible", f"the target is not reachable within {where} at any configuration considered{miss}",
        None, nearest, (), None, False,
    )


def miss_cost(*, spent: float, job_cost: float) -> float:
    """What a miss wastes, the ``L`` of the risk-adjusted cost ``cost + (1 − P)·L``: the
    money already spent plus the whole job redone — ``job_cost``, the models' predicted
    cost of the job from its start at the configuration it runs (not its remaining
    cost: a miss late in a job wastes more than one early, and the redo starts from
    nothing). The one definition ``cotune replan`` and the closed-loop replay use.
    A ``job_cost`` that is not finite (no prediction there) counts as 0.
    """
    if not (math.isfinite(spent) and spent >= 0.0):
        raise InputError(f"spent must be finite and >= 0 (money spent so far); got {spent!r}")
    if math.isnan(job_cost) or job_cost < 0.0:
        raise InputError(f"job_cost must be >= 0 (the whole job's predicted cost); got {job_cost!r}")
    return spent + (job_cost if math.isfinite(job_cost) else 0.0)


MAX_BACKOFF_MARGIN = 0.5  # a backed-off margin never asks more than half of the cost (or of the chance)


def count_returns(configurations: Sequence[Hashable], *, forced: Sequence[bool] | None = None) -> int:
    """How many times a job moved back to a configuration it had left by choice:
    ``configurations`` in the order the job ran them (repeats of the running one are
    collapsed). ``forced[k]`` says the job arrived at ``configurations[k]`` by force (a
    revocation took its workers): a later return to the configuration it left then is
    recovery, not a reversal of the planner's, and does not count."""
    if forced is not None and len(forced) != len(configurations):
        raise InputError(f"forced must give one flag per configuration ({len(configurations)}); got {len(forced)}")
    seen: set[Hashable] = set()
    left_by_force: dict[Hashable, bool] = {}
    previous: Hashable = _NOTHING
    n = 0
    for k, c in enumerate(configurations):
        if c == previous:
            continue
        if previous is not _NOTHING:
            left_by_force[previous] = bool(forced[k]) if forced is not None else False
        n += c in seen and not left_by_force.get(c, False)
        seen.add(c)
        previous = c
    return n


_NOTHING: Hashable = object()


def backoff_margin(margin: float, *, returns: int) -> float:
    """The switching margin of a job that has moved back ``returns`` times:
    ``margin · 2^returns``, at most :data:`MAX_BACKOFF_MARGIN` (never below ``margin``)."""
    if not (0.0 <= margin < 1.0):
        raise InputError(f"margin must be a fraction in [0, 1), e.g. 0.05; got {margin!r}")
    if isinstance(returns, bool) or not isinstance(returns, int) or returns < 0:
        raise InputError(f"returns must be a whole number >= 0 (moves back to a configuration left); got {returns!r}")
    return max(margin, min(margin * 2.0 ** min(returns, 60), MAX_BACKOFF_MARGIN))


def entry_threshold(confidence: float, p_margin: float) -> float:
    """The chance an option needs to be *switched to* under the probability rule:
    ``min(q + p_margin, (1 + q)/2)`` — above the ``q`` it needs to be *kept*, and below 1
    whatever the margin."""
    if not (0.0 < confidence < 1.0):
        raise InputError(f"confidence must be in (0, 1), e.g. 0.9; got {confidence!r}")
    if not (0.0 <= p_margin < 1.0):
        raise InputError(f"p_margin must be in [0, 1), e.g. 0.05; got {p_margin!r}")
    return min(confidence + p_margin, (1.0 + confidence) / 2.0)


def _p(o: Any) -> float:
    v = float(getattr(o, "p_success", math.nan))
    if math.isnan(v):
        raise InputError("with confidence= every option needs p_success (a probability in [0, 1]); got NaN")
    return v


def _decide_by_success(
    *, stay: _Option | None, alternatives: Sequence[_Option], budget_left: float | None, objective: str,
    margin: float, confidence: float, p_margin: float, miss_cost: float, spent: float,
) -> ReplanDecision:
    """The probability form of :func:`decide_replan` (see the module doc)."""
    if not (0.0 < confidence < 1.0):
        raise InputError(f"confidence must be in (0, 1), e.g. 0.9; got {confidence!r}")
    if not (0.0 <= p_margin < 1.0):
        raise InputError(f"p_margin must be in [0, 1), e.g. 0.05; got {p_margin!r}")
    if not (miss_cost >= 0.0 and math.isfinite(miss_cost)):
        raise InputError(f"miss_cost must be finite and >= 0 (what a miss wastes, e.g. spent + planned cost); got {miss_cost!r}")

    def key(o) -> float:
        if objective == "cost":
            return float(o.cost) + (1.0 - _p(o)) * miss_cost
        return float(o.time_s)

    def affordable(o) -> bool:
        return budget_left is None or o.cost <= budget_left

    def feasible(o) -> bool:
        return _p(o) >= confidence and math.isfinite(key(o)) and affordable(o)

    ok = [o for o in alternatives if feasible(o)]
    # Hysteresis on the probability itself (a Schmitt trigger): a configuration is kept
    # while it holds q, but one is entered only with a margin above it, so a switch does
    # not land on a chance that the next checkpoint's noise takes below q again.
    enter = entry_threshold(confidence, p_margin)
    firm = [o for o in ok if _p(o) >= enter]
    stay_ok = stay is not None and feasible(stay)
    p_stay = _p(stay) if stay is not None else 0.0
    if stay_ok or firm:
        ok = firm
    elif stay is not None and affordable(stay):
        # Leaving a job just below q for an option just above it is a restart bought with
        # noise: the next checkpoint's estimates put the two the other way round and the
        # job ping-pongs (measured: 61 restarts in one replayed run, 2 with this). Below the entry
        # threshold an option must beat staying by the margin, as the best chance must.
        clear = [o for o in ok if _p(o) > p_stay + p_margin]
        if ok and not clear:
            top = max(ok, key=_p)
            return ReplanDecision(
                "stay", f"the current configuration's chance {_p(stay):.3f} is below P(success) {confidence:g}, but "
                f"the best alternative's {_p(top):.3f} beats it by less than the {p_margin:g} margin: a restart does "
                "not pay for so little", stay, None, (), None, False,
            )
        ok = clear
    best = min(ok, key=key) if ok else None
    q = f"P(success) {confidence:g}"
    q_in = f"P(success) ≥ {enter:g}"
    def risk(o) -> str:
        # The key is the expected cost, a miss counted: say so, with what each option costs
        # and its chance — a switch to a dearer option that "saves" read as a contradiction.
        return (f"{o.cost:.4g} at P(success) {_p(o):.2f}" if objective == "cost" else f"{o.time_s:.4g} s")

    counted = (f" (expected cost, a miss counted as {miss_cost:.4g} wasted: staying {risk(stay)}, switching "
               f"{risk(best)})") if objective == "cost" and stay is not None and best is not None else ""
    if stay_ok:
        gain = None if best is None else key(stay) - key(best)
        whole = key(stay) + (max(spent, 0.0) if objective == "cost" else 0.0)
        if best is not None and gain > margin * whole:
            return ReplanDecision(
                "switch", f"an alternative with {q_in} (the entry threshold) saves {gain / whole:.1%} of the job's "
                f"{objective} after its restart, more than the {margin:.0%} margin{counted}", best, None,
                changes_between(stay, best), gain, True,
            )
        pct = 0.0 if gain is None or whole <= 0 else gain / whole
        why = f"no alternative has {q_in} (the entry threshold)" if best is None else (
            f"the best alternative with {q_in} would change the job's {objective} by less than 0.1%, risk counted"
            if abs(pct) < 0.0005 else
            f"the best alternative with {q_in} would save only {pct:.1%} of the job's {objective}{counted}" if pct > 0
            else f"the best alternative with {q_in} would add {-pct:.1%} to the job's {objective}{counted or ', risk counted'}"
        )
        return ReplanDecision("stay", f"{why}; switching needs more than the {margin:.0%} margin", stay, None, (), gain, True,
                              compared=best)
    if best is not None:
        gain = None if stay is None else key(stay) - key(best)
        why = "the current configuration cannot continue" if stay is None else (
            f"the current configuration's chance {_p(stay):.2f} is below {q}"
        )
        return ReplanDecision("switch", why, best, None, changes_between(stay, best) if stay is not None else (), gain, False)
    pool = [o for o in alternatives if affordable(o) and _p(o) > 0.0]
    top = max(pool, key=lambda o: (_p(o), -key(o))) if pool else None
    if top is not None and stay is not None and _p(top) <= p_stay + p_margin:
        top = stay  # a chance barely better than staying does not pay for a restart
    if top is None and stay is not None and p_stay > 0.0:
        top = stay
    if top is None:
        return ReplanDecision(
            "infeasible", "the target is not reachable at any configuration considered (every chance is 0)",
            None, None, (), None, False,
        )
    where = "staying" if top is stay else "the best chance"
    return ReplanDecision(
        "infeasible", f"no configuration keeps {q}; {where} has P(success) {_p(top):.2f}", None, top, (), None, False,
    )
