"""Re-planning a running job: the best configuration for the *remaining* work.

Remaining work when the batch changes. The accuracy model gives epochs to the target
``E(B)`` at a *fixed* global batch ``B``. A run that did ``e`` epochs at ``B_old`` has
covered the fraction ``φ = e / E(B_old)`` of its way to the target; we assume that
fraction carries over to any new batch, so the remaining epochs at ``B_new`` are::

    epochs_remaining(B_new) = (1 − φ) · E(B_new)

(a first-order approximation: exact when ``B_new = B_old``, and consistent with the
critical-batch law, where ``E(B) = E_min(1 + B/B_noise)`` scales every stage of
training alike). Every candidate's training time, interval and cost scale by
``1 − φ``.

Hysteresis. The current configuration ("stay": same GPU, market and local batch on
the workers left after losses and additions) pays no restart. Every other candidate
pays ``restart_s`` — checkpoint write, reload and the slowest replacement delay, by
default — in time and money. cotune switches only when

* staying cannot meet the (remaining) deadline at the requested confidence and
  something else can; or
* the best alternative beats staying by more than ``margin`` (a fraction of the
  stay's objective) *after* paying its restart.

Straight-line rule. If the run is behind the straight line from 0 at start to the
target at the deadline (``φ < elapsed / deadline``), pure-spot candidates are left
out: behind schedule the job runs on on-demand (or mixed, which starts on on-demand
while behind) — Can't Be Late's uniform-progress rule at this decision point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Mapping

import numpy as np

from cotune._request import DEFAULT_REPLAN_MAX_WORKERS, Progress, RecommendRequest, ReplanRequest
from cotune.errors import InputError

__all__ = ["Progress", "ReplanResult", "remaining_fraction", "replan"]


@dataclass(frozen=True)
class ReplanResult:
    """The decision and the numbers behind it (``to_dict()`` is the JSON form)."""

    decision: Literal["stay", "switch", "infeasible"]
    reason: str
    stay: Any  # Choice | None
    best: Any  # Choice | None: best alternative (restart paid)
    progress_fraction: float  # φ
    schedule_fraction: float  # elapsed / deadline: where the straight line is
    remaining_deadline_s: float
    restart_s: float
    margin: float
    objective: str
    confidence: float | None
    gain: float | None  # stay − best in the objective's unit (positive: best is better)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ahead(self) -> bool:
        return self.progress_fraction >= self.schedule_fraction

    @property
    def chosen(self):
        return self.best if self.decision == "switch" else self.stay if self.decision == "stay" else None

    def to_dict(self) -> dict[str, Any]:
        num = lambda x: None if x is None or not math.isfinite(x) else float(x)  # noqa: E731
        return {
            "decision": self.decision,
            "reason": self.reason,
            "progress_fraction": num(self.progress_fraction),
            "schedule_fraction": num(self.schedule_fraction),
            "ahead_of_schedule": self.ahead,
            "remaining_deadline_s": num(self.remaining_deadline_s),
            "restart_s": num(self.restart_s),
            "margin": self.margin,
            "objective": self.objective,
            "confidence": self.confidence,
            "gain": num(self.gain),
            "stay": None if self.stay is None else self.stay.to_dict(),
            "best": None if self.best is None else self.best.to_dict(),
            "notes": list(self.notes),
        }


def remaining_fraction(models, *, global_batch: int, epochs_done: float, target: float) -> float:
    """``1 − φ`` with ``φ = epochs_done / E(global_batch)`` clipped to ``[0, 1]``."""
    need = float(models.predict_epochs(np.array([float(global_batch)]), target).epochs[0])
    if not math.isfinite(need):
        raise InputError(
            f"the accuracy model predicts that global batch {global_batch} never reaches the target {target:g}, "
            "so progress toward it is undefined: check --current and --target"
        )
    return float(min(max(1.0 - epochs_done / need, 0.0), 1.0))


def _scale(est, fraction: float, startup_s: float):
    """Training parts of the estimates times ``fraction``; start-up (restart) kept."""
    def sc(a):
        return startup_s + (a - startup_s) * fraction

    rate = est.candidates.workers * est.price_per_hour / 3600.0
    time_s, lower, upper, at_q = sc(est.time_s), sc(est.time_lower_s), sc(est.time_upper_s), sc(est.time_at_confidence_s)
    return replace(
        est, epochs=est.epochs * fraction, epochs_lower=est.epochs_lower * fraction, epochs_upper=est.epochs_upper * fraction,
        time_s=time_s, time_lower_s=lower, time_upper_s=upper, time_at_confidence_s=at_q,
        cost=rate * time_s, cost_lower=rate * lower, cost_upper=rate * upper,
    )


def _stay_candidates(space_gpus: tuple[str, ...], progress: Progress, gpus_per_host: int):
    from cotune.solver import Candidates

    gi = space_gpus.index(progress.gpu)
    n = progress.workers_now
    h = -(-n // gpus_per_host)
    one = lambda v: np.array([v, v], dtype=np.int64)  # noqa: E731
    return Candidates(
        gpus=space_gpus, markets=("on_demand", "spot"), gpu=np.array([gi, gi], dtype=np.int32),
        market=np.array([0, 1], dtype=np.int32), workers=one(n), hosts=one(h), local_batch=one(progress.local_batch),
    )


def _as_replan_request(profile: Any, progress: Any, question: dict[str, Any]) -> ReplanRequest:
    if isinstance(profile, ReplanRequest):
        if progress is not None or question:
            raise InputError("replan(ReplanRequest) takes no other arguments: put them in the request")
        return profile
    rule = {k: question.pop(k) for k in ("margin", "restart_s", "prices") if k in question}
    caps = question.get("max_workers", DEFAULT_REPLAN_MAX_WORKERS)
    if isinstance(caps, Mapping) and "*" not in caps:  # gpu types not named: replan's own default
        caps = {"*": DEFAULT_REPLAN_MAX_WORKERS, **caps}
    question["max_workers"] = caps
    if "target" not in question:
        raise InputError("replan() needs target=: the metric the job trains to")
    if isinstance(profile, RecommendRequest):
        request = profile.replace(**question) if question else profile
    else:
        from cotune._pipeline import as_request

        request = as_request(profile, question)
    if progress is None:
        raise InputError("replan() needs progress=: a cotune.Progress of the running job")
    return ReplanRequest(request=request, progress=progress, **rule)


def replan(
    profile: Any = None,
    /,
    *,
    progress: Progress | None = None,
    models: Any = None,
    **question: Any,
) -> ReplanResult:
    """Best configuration for the remaining work of a running job (see the module doc).

    Call it with a :class:`~cotune.ReplanRequest`, or with a profile and keywords: the
    job's question (``target``, ``deadline_s`` counted from the job's start, ``cluster``,
    ``confidence``, ``objective``, ``max_workers`` — default 64 —, ``gpus_per_host``,
    ``gpus``, ``local_batches``, ``interval``…, as for ``recommend``), ``progress``, and
    the switching rule: ``margin``, ``restart_s`` and ``prices`` (new prices that override
    the cluster file: ``"t4"`` or ``"t4:on_demand"`` for on-demand, ``"t4:spot"``).
    """
    from cotune.models import fit_models
    from cotune.profile import load_profile
    from cotune.solver import build_space, choice_at, enumerate_candidates, estimate, feasibility, ranked
    from cotune.spot._cluster import load_cluster
    from cotune.spot._market import SpotMarket

    rr = _as_replan_request(profile, progress, question)
    req, progress = rr.request, rr.progress
    target, deadline_s, confidence, objective = req.target, req.deadline_s, req.confidence, req.objective
    assert deadline_s is not None
    margin, restart_s = rr.margin, rr.restart_s
    remaining_s = rr.remaining_s
    if models is None:
        models = fit_models(load_profile(req.profile), interval=req.interval)
    cl = load_cluster(req.cluster)
    for key, value in (rr.prices or {}).items():
        gpu, _, market = key.lower().partition(":")
        market = market or "on_demand"
        if market not in ("on_demand", "spot"):
            raise InputError(f"new price key {key!r}: use GPU (on-demand), GPU:on_demand or GPU:spot")
        field_name = "spot_price_per_hour" if market == "spot" else "on_demand_price_per_hour"
        cl = cl.with_offer(gpu, **{field_name: float(value)})
    cl.offer(progress.gpu)

    left = remaining_fraction(models, global_batch=progress.global_batch, epochs_done=progress.epochs_done, target=target)
    done = 1.0 - left
    on_line = min(progress.elapsed_s / deadline_s, 1.0)
    ahead = done >= on_line
    ck = cl.checkpoint
    if restart_s is None:
        restart_s = (ck.write_s + ck.restart_s if ck else 0.0) + max(o.replacement_delay_s for o in cl.gpus.values())

    plan = SpotMarket.from_request(req, models, cluster=cl)
    if progress.gpu not in plan.gpus:
        raise InputError(f"current gpu {progress.gpu!r} has no timing probes in this profile: profiled gpus are {', '.join(models.gpus)}")
    space, notes = build_space(
        models, gpus=plan.gpus, max_workers=plan.max_workers, gpus_per_host=plan.gpus_per_host,
        local_batches=req.local_batches, markets=plan.space_markets, hosts=req.hosts,
    )
    from cotune.solver import check_candidate_limit

    check_candidate_limit(space, limit=req.max_candidates, rows_per_candidate=plan.rows_per_candidate)
    notes = list(notes) + list(plan.notes)
    table = plan.price_table(space.gpus)

    def evaluate(cands, startup: float):
        est = estimate(cands, models, target=target, price_per_hour=table, startup_s=startup, confidence=confidence)
        est = _scale(est, left, startup)
        return plan.adjust(est, startup_s=startup, confidence=confidence, deadline_s=remaining_s)

    new_cands = plan.candidates(enumerate_candidates(space), mixed=True)
    est, _details = evaluate(new_cands, restart_s)
    mask = np.ones(len(est.candidates), dtype=bool)
    if not ahead:
        mask &= ~est.candidates.in_market("spot")
        notes.append(
            f"behind the straight-line schedule ({done:.0%} done, {on_line:.0%} of the time used): spot-only plans "
            "left out (on-demand, or mixed which starts on on-demand)"
        )
    ok = feasibility(est, deadline_s=remaining_s, budget=None).all & mask
    order = ranked(est, ok, objective, limit=1)
    best = choice_at(est, int(order[0]), target) if order.size else None

    stay = None
    stay_ok = False
    if progress.market in ("on_demand", "spot", "mixed"):
        s_est, _ = evaluate(plan.candidates(_stay_candidates(space.gpus, progress, plan.gpus_per_host), mixed=True), 0.0)
        rows = np.flatnonzero(s_est.candidates.in_market(progress.market))
        if rows.size:
            i = int(rows[0])
            stay = choice_at(s_est, i, target)
            stay_ok = bool(feasibility(s_est, deadline_s=remaining_s, budget=None).all[i])
            if not ahead and progress.market == "spot":
                stay_ok = False
        else:
            notes.append(f"the current configuration ({progress.workers_now} x {progress.gpu} {progress.market}) is not "
                         f"available in the cluster file (or, for mixed, no longer needed): staying is not an option")

    key = (lambda c: c.cost) if objective == "cost" else (lambda c: c.time_s)
    gain = None if stay is None or best is None else key(stay) - key(best)
    if best is None and not stay_ok:
        decision, reason = "infeasible", (
            f"no configuration finishes the remaining {left:.0%} of the work within the remaining "
            f"{remaining_s:.0f} s{'' if confidence is None else f' with probability {confidence:g}'}: "
            "relax --deadline or --confidence, or allow more workers"
        )
    elif best is None:
        decision, reason = "stay", "no alternative meets the remaining deadline; the current configuration does"
    elif not stay_ok and not ahead and progress.market == "spot" and stay is not None:
        decision, reason = "switch", (
            "the job is on spot and behind the straight-line schedule: the uniform-progress rule moves it off pure spot"
        )
    elif not stay_ok:
        decision, reason = "switch", (
            "the current configuration cannot meet the remaining deadline"
            + ("" if confidence is None else f" with probability {confidence:g}")
        )
    elif gain is not None and gain > margin * key(stay):
        decision, reason = "switch", (
            f"the best alternative saves {gain / key(stay):.1%} of the {objective} after paying its restart "
            f"({restart_s:.0f} s), more than the {margin:.0%} margin"
        )
    else:
        pct = 0.0 if gain is None or key(stay) == 0 else gain / key(stay)
        what = (
            f"would save only {pct:.1%} of the {objective}" if pct > 0 else f"is {-pct:.1%} worse in {objective}"
        )
        decision, reason = "stay", (
            f"the best alternative {what} after paying its restart ({restart_s:.0f} s); "
            f"switching needs more than the {margin:.0%} margin: no churn"
        )
    return ReplanResult(
        decision=decision, reason=reason, stay=stay, best=best, progress_fraction=done, schedule_fraction=on_line,
        remaining_deadline_s=remaining_s, restart_s=float(restart_s), margin=margin, objective=objective,
        confidence=confidence, gain=gain, notes=tuple(notes),
    )
