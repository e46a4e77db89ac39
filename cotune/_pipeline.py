"""``cotune.recommend``: a question (:class:`~cotune.RecommendRequest`) in, a
:class:`~cotune.solver.Recommendation` out.

A straight line of pure steps: fit the models (unless given) → choose the market stage
(on-demand, or spot/mixed from a cluster file) → build the search space and check its
size → enumerate → stage → estimate → stage → feasibility → rank → report (chosen
candidate, runner-ups, Pareto frontier, the paper's two baselines, and, if nothing is
feasible, what to relax). Nothing here prints; the CLI renders the result.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Mapping, TypeVar

import numpy as np

from cotune._explain import baselines as _baselines
from cotune._explain import relax as _relax
from cotune._request import DEFAULT_MAX_WORKERS, ProfileRef, RecommendRequest, request_from_call
from cotune.models import FittedModels, fit_models
from cotune.models._fitted import check_fitted, check_workload
from cotune.models._backbone import GROWTH_PROBES
from cotune.profile import Profile
from cotune.solver import (
    Choice,
    Estimates,
    Feasibility,
    MarketStage,
    OnDemandMarket,
    Plan,
    Recommendation,
    SearchSpaceTooLarge,
    check_candidate_limit,
    choice_at,
    cost_at_confidence,
    enumerate_candidates,
    estimate,
    feasibility,
    next_measurement,
    pareto_indices,
    probed_mask,
    plan_for,
    prefer_safer,
    ranked,
    thin_frontier,
    with_success,
)
from cotune.units import count_of

_Row = TypeVar("_Row", Choice, Plan, None)  # a row of the answer that names a local batch

__all__ = ["recommend", "market_for"]


def market_for(request: RecommendRequest, models: FittedModels) -> MarketStage:
    """The market stage of a request: spot/mixed from its cluster file, else on-demand."""
    if request.cluster is None:
        return OnDemandMarket(prices=request.prices)
    from cotune.spot import SpotMarket

    return SpotMarket.from_request(request, models)


def _in_batch_range(est: Estimates, request: RecommendRequest) -> np.ndarray | None:
    """The candidates whose global batch the request's ``global_batch_range`` allows (None: no range)."""
    if request.global_batch_range is None:
        return None
    lo_b, hi_b = request.global_batch_range
    gb = est.candidates.global_batch
    return (gb >= lo_b) & (gb <= hi_b)


def _feasibility(est: Estimates, request: RecommendRequest) -> Feasibility:
    feas = feasibility(est, deadline_s=request.deadline_s, budget=request.budget, confidence=request.confidence)
    allowed = _in_batch_range(est, request)
    if allowed is None:
        return feas
    return Feasibility(
        reaches=feas.reaches & allowed, meets_deadline=feas.meets_deadline & allowed, within_budget=feas.within_budget & allowed
    )


def _cap_notes(request: RecommendRequest, gpus: tuple[str, ...]) -> list[str]:
    if not isinstance(request.max_workers, Mapping) or "*" in request.max_workers:
        return []
    unnamed = [g for g in gpus if g not in request.max_workers]
    if not unnamed:
        return []
    return [
        f"max_workers names no cap for {', '.join(unnamed)}: {DEFAULT_MAX_WORKERS} (the default) used; "
        "give GPU=N for it, or N for every type not named"
    ]


def recommend(
    profile: "RecommendRequest | Profile | str | os.PathLike[str] | ProfileRef | None" = None,
    /,
    *,
    models: FittedModels | None = None,
    **question: Any,
) -> Recommendation:
    """Cheapest (or fastest) configuration that reaches ``target`` by ``deadline_s``.

    Call it with a :class:`~cotune.RecommendRequest`, or with a profile (a
    :class:`Profile`, a profile file, a bundled example name) and the request's fields
    as keywords — ``target``, ``deadline_s``, ``max_workers``, ``gpus_per_host``,
    ``prices`` or ``cluster``, ``objective``, ``budget``, ``confidence``, ``gpus``,
    ``local_batches``, ``workers``, ``hosts``, ``startup_s``, ``global_batch_range``,
    ``baseline_local_batch``, ``baseline_workers``, ``interval``, ``top``,
    ``pareto_limit``, ``max_candidates`` (see :class:`~cotune.RecommendRequest` and
    ``docs/request.md``). ``models``: already fitted models (skips fitting; of a
    profile named by file or example only the first record, its workload, is then read:
    models of another workload are refused).

    Bad input raises :class:`~cotune.InputError`; a search space over
    ``max_candidates`` raises :class:`~cotune.solver.SearchSpaceTooLarge` before any
    candidate is made.
    """
    request = request_from_call(profile, question)
    models = check_fitted(models, interval=request.interval)
    # With models given, a Profile still contributes its warnings and probe costs to the notes.
    prof: Profile | None = None
    if models is None or isinstance(request.profile, Profile):
        prof = request.load_profile()
    if models is not None:
        # A profile by name or path is not read with models given: its first record is, for
        # its workload (another workload's models answered under its label).
        check_workload(models, prof if prof is not None else request.profile)
    if models is None:
        assert prof is not None
        models = fit_models(prof, interval=request.interval)

    unsearched = request.check_cap_names(models.gpus)
    t0 = time.perf_counter()
    market = market_for(request, models)
    space, notes = market.space(request, models)
    notes = _cap_notes(request, space.gpus) + unsearched + notes
    table, priced = market.price_per_hour(space.gpus)
    search = "exhaustive"
    try:
        check_candidate_limit(space, limit=request.max_candidates, rows_per_candidate=market.rows_per_candidate)
        base = enumerate_candidates(space, limit=request.max_candidates)
    except SearchSpaceTooLarge as exc:
        # Too many to enumerate: a seeded TPE search proposes candidates instead (cotune/solver/_optuna.py).
        # Spot/mixed markets add rows per candidate that the sampler cannot score one by one: still refused there.
        if market.rows_per_candidate != 1.0:
            raise
        base, proposals = _sampled(space, market, models, request, table)
        search = "optuna-tpe"
        notes.append(
            f"the search space has {exc.count:,} candidates, over the limit of {exc.limit:,} (--max-candidates): "
            f"searched it with Optuna's TPE sampler (seed 0, {proposals} proposals, {len(base):,} distinct candidates "
            "evaluated); the plan is the best found, not a proven optimum — narrow the space to enumerate it"
        )
    notes.extend(models.notes_for(space.gpus))  # records the fit left out (outliers), of the types searched
    if prof is not None:
        notes.extend(prof.warnings)
    cands = market.candidates(base, request)
    notes.extend(market.notes)
    est = estimate(
        cands, models, target=request.target, price_per_hour=table, startup_s=request.startup_s, confidence=request.confidence
    )
    est, details = market.adjust_for(est, request)
    notes.extend(market.adjust_notes(details))
    est = with_success(est, deadline_s=request.deadline_s, startup_s=request.startup_s, budget=request.budget)
    feas = _feasibility(est, request)
    order = ranked(est, feas.all, request.objective, limit=request.top + 1)
    order, tie_note = prefer_safer(est, order, request.objective, feasible=feas.all)
    order = order[: request.top + 1]
    if tie_note:
        notes.append(tie_note)
    nxt = _next_measurement(est, feas, order, request, models, prof, priced=priced)
    rec = _report(request, models, prof, market, space, est, details, feas, order, priced=priced, notes=notes, t0=t0,
                  next_measurement=nxt)
    return rec if search == "exhaustive" else dataclasses.replace(rec, search=search)


def _next_measurement(est: Estimates, feas: Feasibility, order: np.ndarray, request: RecommendRequest,
                      models: FittedModels, prof: Profile | None, *, priced: bool):
    """The measurement worth most before the run (cotune.solver.next_measurement); None
    without the profile (its probes are unknown) or with nothing left to measure."""
    if prof is None:
        return None
    probed = probed_mask(est.candidates, ((s.gpu, s.workers, s.hosts, s.local_batch) for s in prof.steps))
    feasible, ranking = feas.all, (order if order.size else None)
    allowed = _in_batch_range(est, request)
    if allowed is not None:
        # Only candidates the question allows: a probe of a global batch outside its range was
        # named "worth measuring" when no candidate lay in the range at all.
        keep = np.flatnonzero(allowed)
        if keep.size == 0:
            return None
        at = np.full(allowed.size, -1)
        at[keep] = np.arange(keep.size)
        est, feasible, probed = est.take(keep), feasible[keep], probed[keep]
        if ranking is not None:
            ranking = at[ranking]
            ranking = ranking[ranking >= 0]
            ranking = ranking if ranking.size else None
    return next_measurement(
        est, feasible=feasible, probed=probed, measured_batches=tuple(float(b) for b in models.accuracy.batches_),
        deadline_s=request.deadline_s, confidence=request.confidence, interval=request.interval,
        ranking=ranking, unit="USD" if priced else "worker-hours", budget=request.budget, startup_s=request.startup_s,
    )


def _sampled(space, market, models, request, table) -> tuple[Any, int]:
    """Candidates of an over-limit space that the TPE search evaluated, scored like the rest."""
    from cotune.solver._optuna import sample_candidates

    def evaluate(base):
        est = estimate(market.candidates(base, request), models, target=request.target, price_per_hour=table,
                       startup_s=request.startup_s, confidence=request.confidence)
        est, _ = market.adjust_for(est, request)
        est = with_success(est, deadline_s=request.deadline_s, startup_s=request.startup_s, budget=request.budget)
        feas = _feasibility(est, request)
        objective = est.cost if request.objective == "cost" else est.time_s
        # Violation > 0 when infeasible, larger the further off: unreached target, deadline, budget.
        violation = (~feas.reaches).astype(float)
        if request.deadline_s is not None:
            violation += np.clip(np.nan_to_num(est.time_at_confidence_s / request.deadline_s - 1, nan=1.0, posinf=1.0), 0, None)
        if request.budget is not None:
            violation += np.clip(np.nan_to_num(cost_at_confidence(est) / request.budget - 1, nan=1.0, posinf=1.0), 0, None)
        violation += (~feas.all & (violation <= 0)).astype(float)  # any other rule (global batch range)
        return objective, violation

    return sample_candidates(space, evaluate, seed=0)


def _report(request, models, prof, market, space, est, details, feas, order, *, priced, notes, t0,
            next_measurement=None) -> Recommendation:
    target = request.target
    ok = feas.all
    cands = est.candidates
    chosen = choice_at(est, int(order[0]), target) if order.size else None
    market_summary = None
    if order.size:
        more, market_summary = market.report(est, details, int(order[0]))
        notes.extend(more)
    runner_ups = tuple(choice_at(est, int(i), target) for i in order[1:])
    # Where to place the chosen job and how far a scheduler may resize it (cotune.solver._plan).
    plan = plan_for(est, ok, int(order[0]), gpus_per_host=space.gpus_per_host) if order.size else None

    front = thin_frontier(pareto_indices(est, feas.reaches), limit=request.pareto_limit,
                          keep=int(order[0]) if order.size else None)
    pareto = tuple(choice_at(est, int(i), target) for i in front)

    baselines, settings = _baselines(
        est, ok, models, space, objective=request.objective, target=target, chosen=chosen,
        local_batch=request.baseline_local_batch, workers=request.baseline_workers,
    )
    wanted = settings["resource_only"].get("requested_local_batch")
    if wanted is not None:
        notes.append(f"baseline local batch {wanted} is not a candidate: the resource-only baseline keeps the nearest "
                     f"probed one ({settings['resource_only']['local_batch']}); pass one of the profile's local batches")

    relax: list[str] = []
    nearest: tuple[Choice, ...] = ()
    if chosen is None:
        relax, near_idx = _relax(
            est, feas, models, space, target=target, deadline_s=request.deadline_s, budget=request.budget,
            confidence=request.confidence, objective=request.objective, priced=priced, startup_s=request.startup_s,
            global_batch_range=request.global_batch_range,
        )
        nearest = tuple(choice_at(est, int(i), target) for i in near_idx)
    notes.extend(_trivial_target(models, target))
    top_batch = float(models.accuracy.batches_[-1])
    no_scale = models.accuracy.b_noise is None
    if no_scale and np.any((cands.global_batch > top_batch) & ~np.isfinite(est.epochs)):
        notes.append(
            f"global batches above {int(top_batch)} were left out: no learning curve reaches that far and the profile "
            "has no gradient-noise scale to extrapolate with; record a curve at a larger batch (cotune profile --curves) "
            "or a noise record"
        )
    elif no_scale and models.accuracy.noise_levels_.size == 0 and np.any(
        (cands.global_batch > top_batch) & np.isfinite(est.epochs)
    ):
        # Without B_noise (and too few batches to fit the law) the epochs beyond the largest
        # curve rest on a prior over the noise scale (wide), or on the law's no-benefit bound
        # (a model fitted before that prior; it makes larger batches look dear): say which.
        how = (
            "are extrapolated with a prior over the gradient noise scale measured on published workloads, so their "
            "intervals are wide"
            if models.accuracy.noise_ratio_prior_ is not None
            else "are taken to grow in proportion to the batch, the critical-batch law's no-benefit bound: larger "
            "batches may need fewer epochs than shown"
        )
        notes.append(
            f"above global batch {int(top_batch)} (the largest with a learning curve) epochs {how}, as the profile has "
            "no gradient-noise scale; add gradient statistics (grad_sqr, grad_var) to the eval records, a noise "
            "record, or a curve at a larger batch"
        )
    if prof is not None and prof.n_probes and chosen is not None:
        train_wh = chosen.workers * chosen.time_s / 3600
        share = prof.probe_worker_hours / train_wh
        # "4511.5% of the plan" reads worse than "45× the plan": past twice, a multiple.
        against = f"{share:.3g}× the chosen plan's" if share >= 2.0 else f"{share:.1%} of the chosen plan's"
        notes.append(
            f"profiling cost {prof.probe_worker_hours:.3g} worker-hours in {prof.n_probes} probe{'s' if prof.n_probes != 1 else ''}, "
            f"{against} {train_wh:.3g} worker-hours"
            + ("; for a job this short, measuring more costs more than any plan can save" if share >= 2.0 else "")
        )
    if chosen is not None and chosen.p_reach is not None and chosen.p_reach < 0.5:
        # Only at a confidence below ½: say what its numbers mean (cotune.solver.estimate).
        notes.append(f"the chosen plan is more likely to miss the target than to reach it (reached at all: "
                     f"{chosen.p_reach:.0%}): its epochs, time and cost are those it takes if it reaches the target")
    if chosen is not None and chosen.extrapolated:
        # What to measure, if anything, is the next measurement's to say (value against price).
        advice = ("probe it (cotune profile) to confirm before a long run" if next_measurement is None
                  else "the next measurement says whether probing before the run is worth its price")
        notes.append(f"the chosen candidate is extrapolated in {' and '.join(chosen.extrapolated)}: {advice}")
        tm = models.time_models.get(chosen.gpu)
        if tm is not None and not getattr(tm, "growth_identified_", True) and chosen.workers > tm.workers_range_[1]:
            # Say which part of the time is a prior: the interval carries its spread (σ_growth).
            notes.append(
                f"how synchronisation grows past {count_of(int(tm.workers_range_[1]), 'worker')} on {chosen.gpu} is not measured: the "
                "time takes the prior growth and its interval the spread of that prior over public clusters; a probe at "
                f"{GROWTH_PROBES}, measures it"
            )
    # Each row runs as its probes did: a local batch measured only with gradient
    # accumulation says so, or a launch at the whole local batch runs out of memory.
    accumulating = models.with_accumulation
    chosen, plan = accumulating(chosen), accumulating(plan)
    runner_ups, pareto, nearest = (tuple(map(accumulating, rows)) for rows in (runner_ups, pareto, nearest))
    baselines = {name: accumulating(ch) for name, ch in baselines.items()}
    return Recommendation(
        workload=models.workload_name,
        metric_name=models.metric_name,
        goal=models.goal,
        objective=request.objective,
        target=float(target),
        deadline_s=request.deadline_s,
        budget=request.budget,
        confidence=request.confidence,
        priced=priced,
        chosen=chosen,
        runner_ups=runner_ups,
        pareto=pareto,
        baselines=baselines,
        baseline_settings=settings,
        n_candidates=len(cands),
        n_feasible=int(np.count_nonzero(ok)),
        gpus=tuple(space.gpus),
        relax=tuple(relax),
        nearest=nearest,
        notes=tuple(notes),
        interval=request.interval,
        solve_time_s=time.perf_counter() - t0,
        plan=plan,
        spot=market_summary,
        cluster=market.document,
        estimates=est,
        feasibility=feas,
        next_measurement=next_measurement,
    )


def _trivial_target(models: FittedModels, target: float) -> list[str]:
    """A note when every measured curve already meets the target at its first evaluation:
    the plan is then 'train one evaluation's worth', which is right for an easy target
    and wrong for one in another unit (0.94 against a metric logged in percent)."""
    acc = models.accuracy
    sign = 1.0 if acc.goal_ == "max" else -1.0  # score = sign × metric (models.md § 2)
    start = np.asarray(getattr(acc, "curve_start_", ()), float)
    if start.size == 0 or not np.all(np.isfinite(start)) or sign * target > float(np.min(start)):
        return []
    lo, hi = sorted(sign * float(x) for x in (np.min(start), np.max(start)))
    side = "below" if acc.goal_ == "max" else "above"
    return [f"target {target:g} is {side} the first evaluation of every measured curve ({lo:g} to {hi:g}): any run "
            "reaches it at once; check its unit (a fraction against a metric logged in percent?)"]
