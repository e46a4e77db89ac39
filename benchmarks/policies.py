"""Planning policies under a probe budget, all played against the replay launcher.

Each policy is one ``@policy`` entry in :mod:`benchmarks._registry`.

Model-based policies (cotune and its variants, its isotonic-only variant, the paper's
two independent baselines, the Pollux-style goodput policy) share one anytime loop and
differ only in their models and in the part of the space they may tune:

1. seed: a space-filling design, ``SEED_PER_GPU`` probes per GPU type, cheapest
   configurations first (farthest-point sampling in doublings of workers and batch,
   restricted to at most two hosts so that seeding stays cheap);
2. then, until the budget is spent: fit the models on everything probed, solve
   exhaustively on the mean prediction, and probe the best predicted candidate not yet
   probed among the top ``CONFIRM_TOP`` (confirming the plan where it matters); when
   nothing is feasible, the unprobed candidate most likely to succeed (the ranking
   ``cotune.solver.next_measurement`` uses then); when the top ones are all probed,
   the next design point.

After ``k`` probes the policy's plan is the solver's choice on the models fitted to
those ``k`` probes. The cotune family (``cotune``, ``cotune_q50``, ``cotune_q90``)
shares one probe sequence and one set of models fitted the way ``cotune.fit_models``
fits a profile (library defaults, bootstrap intervals included); the variants differ
only in the confidence at which the deadline is planned, so their calibration is
compared on the same evidence. Black-box policies (Optuna TPE, GP/BO) treat each probe
as one evaluation of the predicted cost ``price × n × step_time × E(B) × N / B`` (``E``
read from the setting's learning curves, no model of time), and return the cheapest
probed configuration that meets the deadline by that estimate — CherryPick's recipe.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from benchmarks._registry import POLICIES, PolicySpec, load, policy
from benchmarks.reliability import epochs_coverage_reached, plan_reliability
from benchmarks.peers import IsotonicAccuracy, IsotonicStepTime, PolluxAccuracy, PolluxStepTime
from benchmarks.replay import ReplayLauncher, curve_epochs_to_target, price_matrix, true_epochs
from benchmarks.scenarios import Scenario
from benchmarks.settings import Evidence, recipe_batch
from cotune.models import FittedModels, StepTimeModel, fit_models
from cotune.solver import DEFAULT_CONFIDENCE, Candidates, estimate, feasibility, prefer_safer, ranked, with_success

__all__ = [
    "Plan",
    "run_policy",
    "policy_mask",
    "fitted_estimates",
    "seed_design",
    "farthest_points",
    "available_policies",
    "subset",
    "unprobed_step_predictions",
    "visible_epochs",
    "coverage_counts",
    "choose",
]

SEED_PER_GPU = 3
CONFIRM_TOP = 3


@dataclass(frozen=True)
class Plan:
    """A policy's answer after ``probes`` probes.

    ``p_success`` is the probability the policy's models give the plan of reaching the
    target by the deadline (None where the models give none). ``step_hits/step_n`` and
    ``epochs_hits/epochs_n`` count how often the 90 % intervals of the models behind the
    plan covered the truth (unprobed candidates' step times; held-out batches' epochs
    to target); ``*_n == 0`` means not checked.
    """

    policy: str
    budget: int
    probes: int
    probe_cost: float
    index: int | None  # chosen candidate, None when the policy finds nothing feasible
    predicted_cost: float
    predicted_time_s: float
    probed: tuple[int, ...] = ()
    confidence: float | None = None
    p_success: float | None = None
    step_hits: int = 0
    step_n: int = 0
    epochs_hits: int = 0
    epochs_n: int = 0
    # value-of-information planner (benchmarks/voi.py): summed over the measurements bought
    expected_gain: float = 0.0
    realised_gain: float = 0.0
    # the same, one (kind, expected, realised) per measurement bought, in order (USD)
    measurements: tuple[tuple[str, float, float], ...] = ()
    accuracy_runs: int = 0
    accuracy_cost: float = 0.0
    # reliability counts of P(success) / P(reach) over every estimated candidate (benchmarks/reliability.py)
    reliability: Mapping | None = None
    epochs_reached_hits: int = 0  # epochs coverage among held-out batches whose truth is reached
    epochs_reached_n: int = 0


# -- models ---------------------------------------------------------------------------
def _fit_time(kind: str, probe_arrays: Mapping[str, dict[str, np.ndarray]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for gpu, a in probe_arrays.items():
        args = (a["workers"], a["hosts"], a["local_batch"], a["step_time_s"])
        if kind == "cotune":
            # Inside the probe loop plans use mean times; bootstrap refits only widen intervals.
            out[gpu] = StepTimeModel(n_bootstrap=0).fit(*args)
        elif kind == "isotonic":
            out[gpu] = IsotonicStepTime().fit(*args)
        elif kind == "pollux":
            out[gpu] = PolluxStepTime().fit(*args)
        else:
            raise ValueError(f"unknown time model {kind!r}")
    return out


_ACCURACY_CACHE: dict[tuple[str, str, str], object] = {}


def _accuracy(kind: str, scn: Scenario, evidence: Evidence, launcher: ReplayLauncher) -> object:
    """The accuracy model of ``kind`` on the setting's curves (they do not change with probes)."""
    key = (scn.workload.name, evidence.setting, kind)
    if key not in _ACCURACY_CACHE:
        w = scn.workload
        if kind == "pollux":
            # Pollux's only accuracy input: the reference curve and its gradient noise.
            model: object = PolluxAccuracy(reference=w.curves[recipe_batch(w)], goal=w.goal)
        elif kind == "cotune":
            # Exactly what cotune.fit_models makes of this profile's curves and noise records.
            model = fit_models(launcher.profile(), n_bootstrap=0).accuracy
        elif kind == "isotonic":
            e = launcher.profile().eval_arrays()
            model = IsotonicAccuracy(goal=w.goal).fit(e["global_batch"], e["epoch"], e["metric"], e["seed"])
        else:
            raise ValueError(f"unknown accuracy model {kind!r}")
        _ACCURACY_CACHE[key] = model
    return _ACCURACY_CACHE[key]


def policy_mask(scn: Scenario, subspace: str) -> np.ndarray:
    """Candidates a policy may choose: all, batch fixed (resource-only), or resources fixed (batch-only)."""
    c = scn.candidates
    if subspace == "all":
        return np.ones(len(c), dtype=bool)
    if subspace == "resource_only":
        mask = np.zeros(len(c), dtype=bool)
        for gi in range(len(c.gpus)):
            sel = c.gpu == gi
            batches = np.unique(c.local_batch[sel])
            b0 = batches[np.argmin(np.abs(np.log(batches) - math.log(scn.workload.initial_local_batch)))]
            mask |= sel & (c.local_batch == b0)
        return mask
    if subspace == "batch_only":
        gi = c.gpus.index(scn.batch_only_gpu)
        return (c.gpu == gi) & (c.workers == scn.batch_only_workers)
    raise ValueError(f"unknown subspace {subspace!r}")


def farthest_points(coords: np.ndarray, *, start: int, k: int) -> list[int]:
    """Up to ``k`` row indices of ``coords``: ``start``, then each time the row farthest
    (Euclidean) from every row chosen so far, stopping early when every row is chosen's twin."""
    chosen = [start]
    dist = np.linalg.norm(coords - coords[start], axis=1)
    while len(chosen) < k and dist.max() > 0:
        j = int(np.argmax(dist))
        chosen.append(j)
        dist = np.minimum(dist, np.linalg.norm(coords - coords[j], axis=1))
    return chosen


def seed_design(candidates: Candidates, mask: np.ndarray, *, per_gpu: int, max_hosts: int = 2) -> list[int]:
    """Farthest-point design per GPU type (interleaved), smallest configuration first."""
    coords = np.column_stack(
        [np.log2(candidates.workers), np.minimum(candidates.hosts, 2), np.log2(candidates.local_batch)]
    ).astype(float)
    per: list[list[int]] = []
    for gi in range(len(candidates.gpus)):
        pool = np.flatnonzero(mask & (candidates.gpu == gi) & (candidates.hosts <= max_hosts))
        if pool.size == 0:
            pool = np.flatnonzero(mask & (candidates.gpu == gi))
        if pool.size == 0:
            continue
        # Start at one worker (cheapest) with the median local batch.
        start_key = coords[pool, 0] * 100 + np.abs(coords[pool, 2] - np.median(coords[pool, 2]))
        picked = farthest_points(coords[pool], start=int(np.argmin(start_key)), k=min(per_gpu * 4, pool.size))
        per.append([int(pool[j]) for j in picked])
    order: list[int] = []
    for rank in range(max(len(p) for p in per) if per else 0):
        order.extend(p[rank] for p in per if rank < len(p))
    return order


def _probe_arrays(launcher: ReplayLauncher) -> dict[str, dict[str, np.ndarray]]:
    c = launcher.oracle.candidates
    idx = np.array(launcher.measured, dtype=int)
    out = {}
    for gi, gpu in enumerate(c.gpus):
        sel = idx[c.gpu[idx] == gi]
        if sel.size:
            out[gpu] = {
                "workers": c.workers[sel].astype(float),
                "hosts": c.hosts[sel].astype(float),
                "local_batch": c.local_batch[sel].astype(float),
                "step_time_s": launcher.oracle.step_time_s[sel],
            }
    return out


def subset(c: Candidates, idx: np.ndarray) -> Candidates:
    """The candidates at ``idx`` (same GPU and market tuples)."""
    return Candidates(
        gpus=c.gpus,
        markets=c.markets,
        gpu=c.gpu[idx],
        market=c.market[idx],
        workers=c.workers[idx],
        hosts=c.hosts[idx],
        local_batch=c.local_batch[idx],
    )


def _usable(scn: Scenario, mask: np.ndarray, gpus) -> np.ndarray:
    """Allowed candidates of GPU types that have probes (only those can be predicted)."""
    c = scn.candidates
    return np.flatnonzero(mask & np.isin(c.gpu, [c.gpus.index(g) for g in gpus]))


def _models(scn: Scenario, time_models: Mapping[str, object], accuracy: object) -> FittedModels:
    return FittedModels(
        workload_name=scn.workload.name,
        dataset_size=scn.workload.dataset_size,
        goal=scn.workload.goal,
        metric_name=scn.workload.metric,
        time_models=time_models,  # type: ignore[arg-type]
        accuracy=accuracy,  # type: ignore[arg-type]
    )


def _solve(
    scn: Scenario,
    launcher: ReplayLauncher,
    evidence: Evidence,
    time_kind: str,
    acc_kind: str,
    mask: np.ndarray,
    confidence: float | None = None,
    models: FittedModels | None = None,
):
    """Fit on the probes (unless ``models`` are given), estimate every allowed candidate of a probed GPU type, rank."""
    if models is None:
        models = _models(scn, _fit_time(time_kind, _probe_arrays(launcher)), _accuracy(acc_kind, scn, evidence, launcher))
    usable = _usable(scn, mask, models.time_models)
    sub = subset(scn.candidates, usable)
    est = estimate(sub, models, target=scn.target, price_per_hour=price_matrix(scn.workload), confidence=confidence)
    est, ok, top = choose(est, deadline_s=scn.deadline_s, confidence=confidence, limit=CONFIRM_TOP)
    return est, usable, top


def choose(est, *, deadline_s: float | None, confidence: float | None, limit: int):
    """cotune's own solve on estimates, as ``cotune.recommend`` runs it: ``P(success)`` for the
    deadline, feasibility at the confidence, rank by cost, the safest near-tie first.
    Returns (estimates with ``p_success``, feasible mask, the best ``limit`` indices)."""
    est = with_success(est, deadline_s=deadline_s)
    ok = feasibility(est, deadline_s=deadline_s, budget=None, confidence=confidence).all
    order = ranked(est, ok, "cost")
    if order.size:
        order, _ = prefer_safer(est, order, "cost", feasible=ok)
    return est, ok, order[:limit]


def unprobed_step_predictions(scn: Scenario, models: FittedModels, probed: tuple[int, ...], evidence: Evidence | None = None):
    """``(prediction, true step time)`` per probed GPU type, over its unmeasured candidates
    (neither ``probed`` nor logged by the runs of ``evidence``'s curves)."""
    c = scn.candidates
    if evidence is not None:
        probed = tuple(probed) + scn.launcher(evidence).known
    for gpu in models.time_models:
        gi = c.gpus.index(gpu)
        idx = np.flatnonzero((c.gpu == gi) & ~np.isin(np.arange(len(c)), probed))
        if idx.size:
            yield (models.predict_step(gpu, c.workers[idx].astype(float), c.hosts[idx].astype(float),
                                       c.local_batch[idx].astype(float)), scn.oracle.step_time_s[idx])


def coverage_counts(scn: Scenario, evidence: Evidence, models: FittedModels, probed: tuple[int, ...]) -> tuple[int, int, int, int]:
    """(step hits, step n, epochs hits, epochs n) of the models' central intervals against the truth.

    Step time: every unprobed candidate of a probed GPU type, true step time in
    ``[lower_s, upper_s]``. Epochs: every held-out measured batch, the true epochs to
    the scenario's target from its full curve in ``[lower, upper]`` (an unreached
    target is covered by an unbounded upper end).
    """
    step_hits = step_n = 0
    for pred, true in unprobed_step_predictions(scn, models, probed, evidence):
        step_hits += int(np.sum((pred.lower_s <= true) & (true <= pred.upper_s)))
        step_n += int(true.size)
    w = scn.workload
    held = np.array(evidence.held_out, float)
    e_hits = e_n = 0
    if held.size:
        pred_e = models.predict_epochs(held, scn.target)
        true_e = np.array([curve_epochs_to_target(w.curves[int(b)], scn.target, w.goal) for b in held])
        lo, hi = np.asarray(pred_e.lower, float), np.asarray(pred_e.upper, float)
        e_hits = int(np.sum((lo <= true_e) & (true_e <= hi)))
        e_n = int(held.size)
    return step_hits, step_n, e_hits, e_n


# -- the shared anytime probe loop ----------------------------------------------------------
def most_hopeful(est, usable: np.ndarray, measured, *, confidence: float = DEFAULT_CONFIDENCE) -> list[int]:
    """Unprobed candidates (indices into the scenario's candidates) most likely to succeed
    first, the fastest predicted first among equals — what ``cotune.solver.next_measurement``
    ranks by when nothing is feasible — among those a step-time probe can make feasible:
    a probe pins the time, not the chance of reaching the target, so a candidate whose
    ``p_reach`` is under the ``confidence`` stays infeasible whatever it measures (the zero
    gain ``cotune.solver.option_gains`` gives it). Empty when no candidate can: the loop
    then goes on with its design (in the closed-loop replay, probing yolov3's 64-worker
    configurations at a target no batch reaches with p 0.5 cost ten times the design's
    probes and made three more runs miss)."""
    p = np.nan_to_num(np.asarray(getattr(est, "p_success", None) if getattr(est, "p_success", None) is not None
                                 else est.p_reach, float), nan=0.0)
    can = np.nan_to_num(np.asarray(est.p_reach, float), nan=0.0) >= confidence
    time_s = np.nan_to_num(np.asarray(est.time_s, float), nan=np.inf, posinf=np.inf)
    order = np.lexsort((time_s, -p))
    seen = set(int(i) for i in measured)
    return [int(usable[j]) for j in order if can[j] and int(usable[j]) not in seen]


_LOOP_CACHE: dict[tuple, list[tuple[int, tuple[int, ...], float]]] = {}


def _probe_loop(
    scn: Scenario, evidence: Evidence, time_kind: str, acc_kind: str, subspace: str, budgets: tuple[int, ...]
) -> list[tuple[int, tuple[int, ...], float]]:
    """(budget, probed indices, probe cost) after each budget; cached per scenario and setting."""
    key = (scn.key, evidence.setting, time_kind, acc_kind, subspace, budgets)
    if key in _LOOP_CACHE:
        return _LOOP_CACHE[key]
    mask = policy_mask(scn, subspace)
    launcher = scn.launcher(evidence)
    design = seed_design(scn.candidates, mask, per_gpu=SEED_PER_GPU)
    n_seed = min(SEED_PER_GPU * len({int(scn.candidates.gpu[i]) for i in design}), len(design))
    out = []
    for k in range(1, max(budgets) + 1):
        if len(launcher.probed) < n_seed:
            pick = next(i for i in design if i not in launcher.measured)
        else:
            est, usable, top = _solve(scn, launcher, evidence, time_kind, acc_kind, mask)
            fresh = [int(usable[i]) for i in top if int(usable[i]) not in launcher.measured]
            rest = [i for i in design if i not in launcher.measured]
            hopeful = [] if top.size else most_hopeful(est, usable, launcher.measured)
            if fresh:
                pick = fresh[0]
            elif hopeful:
                pick = hopeful[0]
            elif rest:
                pick = rest[0]
            else:
                # Design exhausted: the smallest unprobed configuration; None when the
                # whole (sub)space has been probed.
                unprobed = np.flatnonzero(mask & ~np.isin(np.arange(len(scn.candidates)), launcher.measured))
                pick = int(unprobed[0]) if unprobed.size else None
        if pick is not None:
            launcher.probe(pick)
        if k in budgets:
            out.append((k, tuple(launcher.probed), launcher.probe_cost))
    if len(_LOOP_CACHE) > 64:
        _LOOP_CACHE.clear()
    _LOOP_CACHE[key] = out
    return out


_FIT_CACHE: dict[tuple, FittedModels] = {}


def library_models(scn: Scenario, evidence: Evidence, probed: tuple[int, ...]) -> FittedModels:
    """``cotune.fit_models`` on the profile the planner has after ``probed`` (library defaults)."""
    key = (scn.workload.name, evidence.setting, probed)
    if key not in _FIT_CACHE:
        launcher = scn.launcher(evidence)
        for i in probed:
            launcher.probe(i)
        if len(_FIT_CACHE) > 64:
            _FIT_CACHE.clear()
        _FIT_CACHE[key] = fit_models(launcher.profile())
    return _FIT_CACHE[key]


def _p_success(est, j: int) -> float | None:
    p = getattr(est, "p_success", None)
    if p is None:
        return None
    v = float(np.asarray(p)[j])
    return v if math.isfinite(v) else None


def _model_policy(spec: PolicySpec, scn: Scenario, evidence: Evidence, budgets: tuple[int, ...]) -> list[Plan]:
    time_kind, acc_kind, subspace = spec.extra["time"], spec.extra["accuracy"], spec.extra["subspace"]
    library = bool(spec.extra.get("library_fit"))
    mask = policy_mask(scn, subspace)
    plans = []
    for k, probed, probe_cost in _probe_loop(scn, evidence, time_kind, acc_kind, subspace, budgets):
        launcher = scn.launcher(evidence)
        for i in probed:
            launcher.probe(i)
        models = library_models(scn, evidence, probed) if library else None
        est, usable, top = _solve(scn, launcher, evidence, time_kind, acc_kind, mask, spec.confidence, models)
        j = int(top[0]) if top.size else None
        checked = spec.intervals and models is not None
        counts = coverage_counts(scn, evidence, models, probed) if checked else (0, 0, 0, 0)
        reached_counts = epochs_coverage_reached(scn, evidence, models) if checked else (0, 0)
        plans.append(
            Plan(
                policy=spec.name,
                budget=k,
                probes=len(probed),
                probe_cost=probe_cost,
                index=None if j is None else int(usable[j]),
                predicted_cost=float(est.cost[j]) if j is not None else math.inf,
                predicted_time_s=float(est.time_s[j]) if j is not None else math.inf,
                probed=probed,
                confidence=spec.confidence,
                p_success=None if j is None else _p_success(est, j),
                step_hits=counts[0],
                step_n=counts[1],
                epochs_hits=counts[2],
                epochs_n=counts[3],
                reliability=plan_reliability(scn, est, usable) if checked else None,
                epochs_reached_hits=reached_counts[0],
                epochs_reached_n=reached_counts[1],
            )
        )
    return plans


def _model_entry(name: str, *, time: str, accuracy: str, subspace: str, **kw) -> None:
    """Register a model-based policy: one line per policy."""

    def run(scn: Scenario, evidence: Evidence, budgets: tuple[int, ...]) -> list[Plan]:
        return _model_policy(POLICIES[name], scn, evidence, budgets)

    policy(name, time=time, accuracy=accuracy, subspace=subspace, **kw)(run)


_model_entry(
    "cotune", time="cotune", accuracy="cotune", subspace="all", family="cotune", intervals=True, library_fit=True,
    description="cotune's models (cotune.fit_models defaults), exhaustive solver, deadline on the mean prediction",
)
_model_entry(
    "cotune_q50", time="cotune", accuracy="cotune", subspace="all", family="cotune", confidence=0.5, intervals=True,
    library_fit=True, description="cotune, deadline at 50 % confidence (confidence=0.5)",
)
_model_entry(
    "cotune_q90", time="cotune", accuracy="cotune", subspace="all", family="cotune", confidence=0.9, intervals=True,
    library_fit=True, description="cotune, deadline at 90 % confidence (confidence=0.9)",
)
_model_entry(
    "cotune_isotonic", time="isotonic", accuracy="isotonic", subspace="all", settings=("free-curves",),
    description="the paper's isotonic fits alone (cannot extrapolate from one curve: free-curves only)",
)
_model_entry(
    "resource_only", time="cotune", accuracy="cotune", subspace="resource_only", settings=("one-curve",),
    plot_style=dict(marker="^", s=50, color="tab:orange", edgecolor="k"),
    description="the paper's resource-only baseline: local batch fixed at the recipe's (one-curve only)",
)
_model_entry(
    "batch_only", time="cotune", accuracy="cotune", subspace="batch_only", settings=("one-curve",),
    plot_style=dict(marker="v", s=50, color="tab:green", edgecolor="k"),
    description="the paper's batch-only baseline: 4 workers of the first GPU type (one-curve only)",
)
_model_entry(
    "pollux", time="pollux", accuracy="pollux", subspace="all", probabilities=False,
    plot_style=dict(marker="s", s=45, color="tab:purple", edgecolor="k"),
    description="Pollux's throughput model and statistical efficiency from the reference curve's gradient noise",
)


# -- black-box search ----------------------------------------------------------------------
def visible_epochs(scn: Scenario, global_batch: np.ndarray, evidence: Evidence | None = None) -> np.ndarray:
    """Epochs to target read off the setting's curves (between them by the replay's own rule,
    :func:`benchmarks.replay.epochs_at`, on those curves alone; no model)."""
    w = scn.workload
    curves = (evidence or scn.evidence()).curves
    seen = dataclasses.replace(w, curves={int(b): w.curves[int(b)] for b in curves})
    out = true_epochs(seen, np.asarray(global_batch, float), scn.target)
    return np.where(np.isnan(out), np.inf, out)


def _black_box_policy(name: str, scn: Scenario, evidence: Evidence, budgets: tuple[int, ...], *, seed: int = 0) -> list[Plan]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    c = scn.candidates
    launcher = scn.launcher(evidence)
    lookup = {(int(c.gpu[i]), int(c.workers[i]), int(c.local_batch[i])): i for i in range(len(c))}
    workers = sorted({int(v) for v in c.workers})
    batches = sorted({int(v) for v in c.local_batch})
    epochs = visible_epochs(scn, c.global_batch, evidence)
    price = price_matrix(scn.workload)[c.gpu, 0]
    est_time = np.full(len(c), np.inf)
    est_cost = np.full(len(c), np.inf)

    def objective(trial: "optuna.Trial") -> float:
        g = trial.suggest_categorical("gpu", list(c.gpus)) if len(c.gpus) > 1 else c.gpus[0]
        n = workers[trial.suggest_int("workers_i", 0, len(workers) - 1)]
        b = batches[trial.suggest_int("local_batch_i", 0, len(batches) - 1)]
        i = lookup.get((c.gpus.index(g), n, b))
        if i is None:
            return 50.0  # not runnable here (not measured / out of memory / batch out of range): no charge
        step = launcher.probe(i)
        est_time[i] = epochs[i] * scn.workload.dataset_size / c.global_batch[i] * step
        est_cost[i] = n * price[i] * est_time[i] / 3600.0
        if not np.isfinite(est_cost[i]):
            return 40.0
        penalty = 0.0 if scn.deadline_s is None else 5.0 * max(0.0, math.log(est_time[i] / scn.deadline_s))
        return math.log(est_cost[i]) + penalty

    sampler = (
        optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(5, max(budgets)))
        if name == "optuna_tpe"
        else optuna.samplers.GPSampler(seed=seed, n_startup_trials=min(5, max(budgets)))
    )
    study = optuna.create_study(sampler=sampler)
    plans: list[Plan] = []
    trials = 0
    # Unrunnable or repeated suggestions spend no probe; cap them so a small space ends.
    max_trials = 3 * max(budgets) + 10
    for k in sorted(budgets):
        while len(launcher.probed) < min(k, len(c)) and trials < max_trials:
            study.optimize(objective, n_trials=1)
            trials += 1
        probed = np.array(launcher.measured, dtype=int)
        ok = probed[np.isfinite(est_cost[probed]) & ((est_time[probed] <= scn.deadline_s) if scn.deadline_s else True)]
        i = int(ok[np.argmin(est_cost[ok])]) if ok.size else None
        plans.append(
            Plan(
                policy=name,
                budget=k,
                probes=len(launcher.probed),
                probe_cost=launcher.probe_cost,
                index=i,
                predicted_cost=float(est_cost[i]) if i is not None else math.inf,
                predicted_time_s=float(est_time[i]) if i is not None else math.inf,
                probed=tuple(launcher.probed),
            )
        )
    return plans


@policy("optuna_tpe", description="Optuna TPE: every trial a paid probe, cost read off the setting's curves",
        plot_style=dict(marker="D", s=40, color="tab:brown", edgecolor="k"))
def _optuna_tpe(scn: Scenario, evidence: Evidence, budgets: tuple[int, ...]) -> list[Plan]:
    return _black_box_policy("optuna_tpe", scn, evidence, budgets)


@policy(
    "optuna_gp",
    requires=("torch",),
    settings=("free-curves",),
    optional=True,
    description="Optuna GPSampler (CherryPick-style BO); free-curves only; optional (15–30 s a scenario on 2 cores)",
)
def _optuna_gp(scn: Scenario, evidence: Evidence, budgets: tuple[int, ...]) -> list[Plan]:
    return _black_box_policy("optuna_gp", scn, evidence, budgets)


def fitted_estimates(scn: Scenario, probed: tuple[int, ...], *, policy: str = "cotune", setting: str = "free-curves"):
    """A model-based policy's estimates after the given probes: (candidate indices, Estimates)."""
    spec = POLICIES[policy]
    evidence = scn.evidence(setting)
    launcher = scn.launcher(evidence)
    for i in probed:
        launcher.probe(i)
    models = library_models(scn, evidence, tuple(probed)) if spec.extra.get("library_fit") else None
    est, usable, _ = _solve(
        scn, launcher, evidence, spec.extra["time"], spec.extra["accuracy"], policy_mask(scn, spec.extra["subspace"]),
        spec.confidence, models,
    )
    return usable, est


def available_policies(setting: str | None = None, *, include_optional: bool = False) -> tuple[str, ...]:
    """Open-loop policies this environment runs by default (in ``setting``, or in any open-loop setting)."""
    from benchmarks._registry import SETTINGS

    load()
    names = [s.name for s in SETTINGS.values() if not s.closed_loop and (setting is None or s.name == setting)]
    return tuple(
        p.name
        for p in POLICIES.values()
        if p.available() and (include_optional or not p.optional) and any(p.runs_in(n) for n in names)
    )


def run_policy(name: str, scn: Scenario, budgets: tuple[int, ...], *, setting: str = "free-curves") -> list[Plan]:
    """Plans of policy ``name`` on scenario ``scn`` in ``setting`` after each budget (number of probes)."""
    load()
    if name not in POLICIES or POLICIES[name].closed_loop:
        raise ValueError(f"unknown policy {name!r}: use one of {', '.join(available_policies())}")
    return POLICIES[name].run(scn, scn.evidence(setting), tuple(sorted(budgets)))
