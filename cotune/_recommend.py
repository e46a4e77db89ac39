"""``cotune.recommend``: profile in, :class:`~cotune.solver.Recommendation` out.

The steps, each a pure function of the one before: fit the models (unless given),
build the search space, enumerate every candidate, estimate all of them at once,
solve, and assemble the report — chosen candidate, runner-ups, Pareto frontier, the
paper's two independent baselines, and, if nothing is feasible, what to relax. Nothing
here prints; the CLI renders the result.
"""

from __future__ import annotations

import math
import os
import time
from typing import TYPE_CHECKING, Literal, Mapping, Sequence

import numpy as np

from cotune._explain import baselines as _baselines
from cotune._explain import relax as _relax
from cotune.errors import InputError
from cotune.models import FittedModels, fit_models
from cotune.profile import Profile
from cotune.solver import (
    Choice,
    Feasibility,
    Recommendation,
    SearchSpace,
    choice_at,
    enumerate_candidates,
    estimate,
    feasibility,
    pareto_indices,
    plan_for,
    prefer_safer,
    ranked,
    with_success,
)

if TYPE_CHECKING:  # pragma: no cover
    from cotune.spot import Cluster

__all__ = ["recommend", "load_profile", "build_space", "price_table"]


def load_profile(source: Profile | str | os.PathLike[str]) -> Profile:
    """A :class:`Profile` from itself, a file path, or a bundled example's name."""
    if isinstance(source, Profile):
        return source
    from cotune.examples import resolve_profile_path
    from cotune.profile import read_profile

    return read_profile(resolve_profile_path(str(source)))


def _per_gpu(value: int | Mapping[str, int], gpus: Sequence[str], name: str) -> dict[str, int]:
    if isinstance(value, Mapping):
        missing = [g for g in gpus if g not in value]
        if missing:
            raise InputError(f"{name} has no entry for gpu {', '.join(missing)}: give one per gpu type")
        out = {g: int(value[g]) for g in gpus}
    else:
        out = {g: int(value) for g in gpus}
    for g, v in out.items():
        if v < 1:
            raise InputError(f"{name} for {g!r} must be >= 1, got {v}")
    return out


def price_table(
    prices: Mapping[str, float] | None, gpus: Sequence[str], markets: Sequence[str]
) -> tuple[np.ndarray, bool]:
    """Price per worker-hour as an array (gpu × market); ones (worker-hours) when unpriced.

    Keys are ``"gpu"`` (on-demand) or ``"gpu:market"``.
    """
    table = np.ones((len(gpus), len(markets)))
    if not prices:
        return table, False
    for key, value in prices.items():
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise InputError(f"price for {key!r} must be a non-negative number, got {value!r}")
    off_market = sorted(k for k in prices if ":" in k and k.split(":", 1)[1] not in markets)
    if off_market:
        raise InputError(
            f"price for {', '.join(off_market)} names a market that is not searched ({', '.join(markets)}): "
            "spot prices need revocation rates, so give them in a cluster file (--cluster FILE, docs/spot.md)"
        )
    unknown = sorted({k.split(":")[0] for k in prices} - set(gpus))
    if unknown:
        raise InputError(
            f"price given for gpu {', '.join(unknown)} that is not in the search space ({', '.join(gpus)}): "
            "check the name, or profile that gpu"
        )
    for gi, gpu in enumerate(gpus):
        for mi, market in enumerate(markets):
            key = f"{gpu}:{market}"
            if key in prices:
                table[gi, mi] = prices[key]
            elif market == "on_demand" and gpu in prices:
                table[gi, mi] = prices[gpu]
            else:
                raise InputError(
                    f"no price for {gpu} on the {market} market: add --price {gpu}{'' if market == 'on_demand' else ':' + market}=USD_PER_HOUR, "
                    "or give no prices at all to compare worker-hours"
                )
    return table, True


def build_space(
    models: FittedModels,
    *,
    gpus: Sequence[str] | None,
    max_workers: int | Mapping[str, int],
    gpus_per_host: int,
    local_batches: Sequence[int] | None,
    markets: Sequence[str] = ("on_demand",),
    hosts: Literal["packed", "any"] = "packed",
    workers: Sequence[int] | None = None,
) -> tuple[SearchSpace, list[str]]:
    """The search space for a fitted profile, and notes about what was capped."""
    notes: list[str] = []
    chosen = tuple(g.lower() for g in (gpus or models.gpus))
    unknown = [g for g in chosen if g not in models.time_models]
    if unknown:
        raise InputError(
            f"gpu {', '.join(unknown)} has no timing probes in this profile: profiled gpus are {', '.join(models.gpus)}"
        )
    caps = _per_gpu(max_workers, chosen, "max_workers")
    batches: dict[str, tuple[int, ...]] = {}
    for g in chosen:
        probed = sorted({int(v) for v in models.time_models[g].points_[:, 2]})
        wanted = sorted({int(v) for v in local_batches}) if local_batches else probed
        if any(v < 1 for v in wanted):
            raise InputError(f"local batches must be >= 1, got {wanted}")
        limit = models.max_local_batch.get(g)
        if limit is not None:
            dropped = [v for v in wanted if v > limit]
            wanted = [v for v in wanted if v <= limit]
            if dropped:
                notes.append(f"{g}: local batch {', '.join(map(str, dropped))} dropped (out of memory above {limit})")
        batches[g] = tuple(wanted)
    space = SearchSpace(
        gpus=chosen,
        max_workers=caps,
        local_batches=batches,
        gpus_per_host=gpus_per_host,
        markets=tuple(markets),
        hosts=hosts,
        workers=None if workers is None else tuple(int(w) for w in workers),
    )
    return space, notes




def recommend(
    profile: Profile | str | os.PathLike[str],
    *,
    target: float,
    deadline_s: float | None = None,
    max_workers: int | Mapping[str, int] = 16,
    gpus_per_host: int = 4,
    prices: Mapping[str, float] | None = None,
    objective: Literal["cost", "time"] = "cost",
    budget: float | None = None,
    confidence: float | None = None,
    gpus: Sequence[str] | None = None,
    local_batches: Sequence[int] | None = None,
    workers: Sequence[int] | None = None,
    startup_s: float = 0.0,
    hosts: Literal["packed", "any"] = "packed",
    global_batch_range: tuple[int, int] | None = None,
    baseline_local_batch: int | None = None,
    baseline_workers: int | None = None,
    interval: float = 0.9,
    top: int = 5,
    pareto_limit: int = 12,
    models: FittedModels | None = None,
    cluster: "Cluster | str | os.PathLike[str] | None" = None,
) -> Recommendation:
    """Cheapest (or fastest) configuration that reaches ``target`` by ``deadline_s``.

    Parameters
    ----------
    profile : a :class:`Profile`, a path to a profile file, or a bundled example name.
    target : metric to reach (accuracy for ``goal: max``, loss for ``goal: min``).
    deadline_s : wall-clock limit in seconds (None: no limit).
    max_workers : workers available, for all GPU types or per type.
    gpus_per_host : accelerators per machine (sets hosts = ⌈workers / gpus_per_host⌉).
    prices : USD per worker-hour by GPU type (``"t4"``) or ``"t4:spot"``; None → worker-hours.
    objective : ``"cost"`` (default) or ``"time"``.
    budget : upper bound on cost, in the cost unit.
    confidence : the deadline must hold with this probability (None: on average).
    gpus, local_batches, workers : restrict the space (defaults: every profiled GPU,
        every probed local batch below the memory limit, 1..max_workers).
    startup_s : fixed overhead added to every run (start-up, data loading).
    hosts : ``"packed"`` or ``"any"`` host counts per worker count.
    global_batch_range : (min, max) global batch allowed (e.g. what the optimizer's
        learning-rate rule supports); None allows every workers × local batch.
    baseline_local_batch : the batch the resource-only baseline keeps (default: the
        probed local batch nearest the smallest measured global batch).
    baseline_workers : the workers the batch-only baseline keeps (default: one full host).
    interval : central probability of reported intervals.
    top, pareto_limit : how many runner-ups and frontier points to report.
    models : already fitted models (skips fitting).
    cluster : a cluster file (or :class:`cotune.spot.Cluster`): GPU availability, prices
        and spot risk; candidates then span on-demand, spot and mixed markets with
        revocation-aware time and cost (``docs/spot.md``). Replaces ``prices``.
    """
    if not (isinstance(target, (int, float)) and math.isfinite(target)):
        raise InputError(f"target must be a finite number, got {target!r}")
    if deadline_s is not None and not (math.isfinite(deadline_s) and deadline_s > 0):
        raise InputError(f"deadline must be positive, got {deadline_s!r}")
    if budget is not None and not (math.isfinite(budget) and budget > 0):
        raise InputError(f"budget must be positive, got {budget!r}")
    if confidence is not None and not 0.0 < confidence < 1.0:
        raise InputError(f"confidence must be in (0, 1), e.g. 0.95; got {confidence!r}")
    if objective not in ("cost", "time"):
        raise InputError(f"objective must be 'cost' or 'time', got {objective!r}")
    if startup_s < 0 or not math.isfinite(startup_s):
        raise InputError(f"startup time must be >= 0 seconds, got {startup_s!r}")
    # With models given, a Profile still contributes its warnings and probe costs to the notes.
    prof = load_profile(profile) if models is None or isinstance(profile, Profile) else None
    if models is None:
        assert prof is not None
        models = fit_models(prof, interval=interval)

    t0 = time.perf_counter()
    # --- spot (cotune.spot): the cluster file sets gpus, availability, prices, markets ---
    spot = None
    if cluster is not None:
        from cotune.spot import ClusterPlan

        spot = ClusterPlan.create(cluster, profiled_gpus=models.gpus, gpus=gpus, max_workers=max_workers,
                                  gpus_per_host=gpus_per_host, prices=prices)
        gpus, max_workers, gpus_per_host = spot.gpus, spot.max_workers, spot.gpus_per_host
    space, notes = build_space(
        models,
        gpus=gpus,
        max_workers=max_workers,
        gpus_per_host=gpus_per_host,
        local_batches=local_batches,
        hosts=hosts,
        workers=workers,
        **({} if spot is None else {"markets": spot.space_markets}),
    )
    notes.extend(models.notes)  # records the fit left out (outliers)
    if prof is not None:
        notes.extend(prof.warnings)
    cands = enumerate_candidates(space)
    if spot is None:
        table, priced = price_table(prices, space.gpus, space.markets)
    else:
        table, priced = spot.price_table(space.gpus), True
        cands = spot.candidates(cands, mixed=deadline_s is not None)
        notes.extend(spot.notes)
    est = estimate(cands, models, target=target, price_per_hour=table, startup_s=startup_s, confidence=confidence)
    if spot is not None:
        est, spot_details = spot.adjust(est, startup_s=startup_s, confidence=confidence, deadline_s=deadline_s)
        cands = est.candidates
    est = with_success(est, deadline_s=deadline_s, startup_s=startup_s)
    feas = feasibility(est, deadline_s=deadline_s, budget=budget, confidence=confidence)
    if global_batch_range is not None:
        lo_b, hi_b = global_batch_range
        if not 1 <= lo_b <= hi_b:
            raise InputError(f"global batch range must satisfy 1 <= min <= max, got {lo_b}..{hi_b}")
        allowed = (cands.global_batch >= lo_b) & (cands.global_batch <= hi_b)
        feas = Feasibility(
            reaches=feas.reaches & allowed, meets_deadline=feas.meets_deadline & allowed, within_budget=feas.within_budget & allowed
        )
    ok = feas.all
    order = ranked(est, ok, objective, limit=max(top + 1, 32))
    order, tie_note = prefer_safer(est, order, objective)
    order = order[: top + 1]
    if tie_note:
        notes.append(tie_note)
    chosen = choice_at(est, int(order[0]), target) if order.size else None
    spot_summary = None
    if spot is not None and order.size:
        notes.extend(spot.describe(est, spot_details, int(order[0])))
        spot_summary = spot.summary(est, spot_details, int(order[0]))
    runner_ups = tuple(choice_at(est, int(i), target) for i in order[1:])
    # Where to place the chosen job and how far a scheduler may resize it (cotune.solver._plan).
    plan = plan_for(est, ok, int(order[0]), gpus_per_host=space.gpus_per_host) if order.size else None

    front = pareto_indices(est, feas.reaches)
    if front.size > pareto_limit:
        keep = np.unique(np.round(np.linspace(0, front.size - 1, pareto_limit)).astype(int))
        front = front[keep]
    pareto = tuple(choice_at(est, int(i), target) for i in front)

    baselines, settings = _baselines(
        est, ok, models, space, objective=objective, target=target, chosen=chosen,
        local_batch=baseline_local_batch, workers=baseline_workers,
    )

    relax: list[str] = []
    nearest: tuple[Choice, ...] = ()
    if chosen is None:
        relax, near_idx = _relax(
            est,
            feas,
            models,
            space,
            target=target,
            deadline_s=deadline_s,
            budget=budget,
            confidence=confidence,
            objective=objective,
            priced=priced,
            startup_s=startup_s,
        )
        nearest = tuple(choice_at(est, int(i), target) for i in near_idx)
    top_batch = float(models.accuracy.batches_[-1])
    if models.accuracy.b_noise is None and np.any((cands.global_batch > top_batch) & ~np.isfinite(est.epochs)):
        notes.append(
            f"global batches above {int(top_batch)} were left out: no learning curve reaches that far and the profile "
            "has no gradient-noise scale to extrapolate with; record a curve at a larger batch (cotune profile --curves) "
            "or a noise record"
        )
    if prof is not None and prof.n_probes and chosen is not None:
        train_wh = chosen.workers * chosen.time_s / 3600
        notes.append(
            f"profiling cost {prof.probe_worker_hours:.3g} worker-hours in {prof.n_probes} probes, "
            f"{prof.probe_worker_hours / train_wh:.1%} of the chosen plan's {train_wh:.3g} worker-hours"
        )
    if chosen is not None and chosen.extrapolated:
        notes.append(
            f"the chosen candidate is extrapolated in {' and '.join(chosen.extrapolated)}: "
            "probe it (cotune profile) to confirm before a long run"
        )
    return Recommendation(
        workload=models.workload_name,
        metric_name=models.metric_name,
        goal=models.goal,
        objective=objective,
        target=float(target),
        deadline_s=deadline_s,
        budget=budget,
        confidence=confidence,
        priced=priced,
        chosen=chosen,
        runner_ups=runner_ups,
        pareto=pareto,
        baselines=baselines,
        baseline_settings=settings,
        n_candidates=len(cands),
        n_feasible=int(np.count_nonzero(ok)),
        relax=tuple(relax),
        nearest=nearest,
        notes=tuple(notes),
        interval=interval,
        solve_time_s=time.perf_counter() - t0,
        plan=plan,
        spot=spot_summary,
        estimates=est,
        feasibility=feas,
    )
