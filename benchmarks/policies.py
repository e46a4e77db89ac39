"""Planning policies under a probe budget, all played against the replay launcher.

Model-based policies (cotune, its isotonic-only variant, the paper's two independent
baselines, the Pollux-style goodput policy) share one anytime loop and differ only in
their models and in the part of the space they may tune:

1. seed: a space-filling design, ``SEED_PER_GPU`` probes per GPU type, cheapest
   configurations first (farthest-point sampling in doublings of workers and batch,
   restricted to at most two hosts so that seeding stays cheap);
2. then, until the budget is spent: fit the models on everything probed, solve
   exhaustively, and probe the best predicted candidate not yet probed among the top
   ``CONFIRM_TOP`` (confirming the plan where it matters); when those are all probed,
   probe the next design point.

After ``k`` probes the policy's plan is the solver's choice on the models fitted to
those ``k`` probes. Black-box policies (Optuna TPE, GP/BO) treat each probe as one
evaluation of the predicted cost ``price × n × step_time × E(B) × N / B`` (``E`` read
from the visible learning curves, no model of time), and return the cheapest probed
configuration that meets the deadline by that estimate — CherryPick's recipe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from benchmarks.peers import IsotonicAccuracy, IsotonicStepTime, PolluxAccuracy, PolluxStepTime
from benchmarks.replay import ReplayLauncher, _interp_log, curve_epochs_to_target, price_matrix
from benchmarks.scenarios import Scenario
from cotune.models import AccuracyModel, FittedModels, StepTimeModel
from cotune.solver import Candidates, estimate, feasibility, ranked

__all__ = ["Plan", "POLICIES", "MODEL_POLICIES", "BLACK_BOX_POLICIES", "run_policy", "policy_mask", "fitted_estimates", "seed_design", "available_policies"]

SEED_PER_GPU = 3
CONFIRM_TOP = 3


@dataclass(frozen=True)
class Plan:
    """A policy's answer after ``probes`` probes."""

    policy: str
    budget: int
    probes: int
    probe_cost: float
    index: int | None  # chosen candidate, None when the policy finds nothing feasible
    predicted_cost: float
    predicted_time_s: float
    probed: tuple[int, ...] = ()


# -- model factories -------------------------------------------------------------------
def _fit_time(kind: str, probe_arrays: Mapping[str, dict[str, np.ndarray]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for gpu, a in probe_arrays.items():
        args = (a["workers"], a["hosts"], a["local_batch"], a["step_time_s"])
        if kind == "cotune":
            # Bootstrap refits only widen intervals; plans here use mean times.
            out[gpu] = StepTimeModel(n_bootstrap=0).fit(*args)
        elif kind == "isotonic":
            out[gpu] = IsotonicStepTime().fit(*args)
        elif kind == "pollux":
            out[gpu] = PolluxStepTime().fit(*args)
        else:
            raise ValueError(f"unknown time model {kind!r}")
    return out


_ACCURACY_CACHE: dict[tuple[str, str], object] = {}


def _accuracy(kind: str, scn: Scenario) -> object:
    key = (scn.workload.name, kind)
    if key not in _ACCURACY_CACHE:
        w = scn.workload
        if kind == "pollux":
            model: object = PolluxAccuracy(reference=w.curves[w.reference_batch], goal=w.goal)
        else:
            prof = scn.launcher().profile()
            e = prof.eval_arrays()
            cls = AccuracyModel if kind == "cotune" else IsotonicAccuracy
            b_noise = prof.noise_scale() if kind == "cotune" else None
            model = cls(goal=w.goal, b_noise=b_noise).fit(e["global_batch"], e["epoch"], e["metric"], e["seed"])
        _ACCURACY_CACHE[key] = model
    return _ACCURACY_CACHE[key]


# name → (time model, accuracy model, subspace)
MODEL_POLICIES: Mapping[str, tuple[str, str, str]] = {
    "cotune": ("cotune", "cotune", "all"),
    "cotune_isotonic": ("isotonic", "isotonic", "all"),
    "resource_only": ("cotune", "cotune", "resource_only"),
    "batch_only": ("cotune", "cotune", "batch_only"),
    "pollux": ("pollux", "pollux", "all"),
    # cotune planning for the deadline at 90 % confidence instead of the mean prediction.
    "cotune_q90": ("cotune", "cotune", "all"),
}
# Policies that plan with a deadline confidence (the rest plan on the mean prediction).
POLICY_CONFIDENCE: Mapping[str, float] = {"cotune_q90": 0.9}
BLACK_BOX_POLICIES = ("optuna_tpe", "optuna_gp")
POLICIES = tuple(MODEL_POLICIES) + BLACK_BOX_POLICIES


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
        chosen = [int(pool[np.argmin(start_key)])]
        dist = np.linalg.norm(coords[pool] - coords[chosen[0]], axis=1)
        while len(chosen) < min(per_gpu * 4, pool.size):
            j = int(pool[np.argmax(dist)])
            if dist.max() <= 0:
                break
            chosen.append(j)
            dist = np.minimum(dist, np.linalg.norm(coords[pool] - coords[j], axis=1))
        per.append(chosen)
    order: list[int] = []
    for rank in range(max(len(p) for p in per) if per else 0):
        order.extend(p[rank] for p in per if rank < len(p))
    return order


def _probe_arrays(launcher: ReplayLauncher) -> dict[str, dict[str, np.ndarray]]:
    c = launcher.oracle.candidates
    idx = np.array(launcher.probed, dtype=int)
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


def _solve(
    scn: Scenario, launcher: ReplayLauncher, time_kind: str, acc_kind: str, mask: np.ndarray, confidence: float | None = None
):
    """Fit on the probes, estimate every allowed candidate of a probed GPU type, rank."""
    arrays = _probe_arrays(launcher)
    time_models = _fit_time(time_kind, arrays)
    c = scn.candidates
    # Only GPU types with probes can be predicted; estimate the allowed candidates of those.
    usable = np.flatnonzero(mask & np.isin(c.gpu, [c.gpus.index(g) for g in time_models]))
    sub = subset(c, usable)
    models = FittedModels(
        workload_name=scn.workload.name,
        dataset_size=scn.workload.dataset_size,
        goal=scn.workload.goal,
        metric_name=scn.workload.metric,
        time_models=time_models,  # type: ignore[arg-type]
        accuracy=_accuracy(acc_kind, scn),  # type: ignore[arg-type]
    )
    est = estimate(sub, models, target=scn.target, price_per_hour=price_matrix(scn.workload), confidence=confidence)
    ok = feasibility(est, deadline_s=scn.deadline_s, budget=None).all
    top = ranked(est, ok, "cost", limit=CONFIRM_TOP)
    return est, usable, top


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


def _model_policy(name: str, scn: Scenario, budgets: tuple[int, ...]) -> list[Plan]:
    time_kind, acc_kind, subspace = MODEL_POLICIES[name]
    mask = policy_mask(scn, subspace)
    launcher = scn.launcher()
    design = seed_design(scn.candidates, mask, per_gpu=SEED_PER_GPU)
    n_seed = min(SEED_PER_GPU * len({int(scn.candidates.gpu[i]) for i in design}), len(design))
    plans: list[Plan] = []
    for k in range(1, max(budgets) + 1):
        if len(launcher.probed) < n_seed:
            pick = next(i for i in design if i not in launcher.probed)
        else:
            _, usable, top = _solve(scn, launcher, time_kind, acc_kind, mask, POLICY_CONFIDENCE.get(name))
            fresh = [int(usable[i]) for i in top if int(usable[i]) not in launcher.probed]
            rest = [i for i in design if i not in launcher.probed]
            if fresh:
                pick = fresh[0]
            elif rest:
                pick = rest[0]
            else:
                # Design exhausted: the smallest unprobed configuration; None when the
                # whole (sub)space has been probed.
                unprobed = np.flatnonzero(mask & ~np.isin(np.arange(len(scn.candidates)), launcher.probed))
                pick = int(unprobed[0]) if unprobed.size else None
        if pick is not None:
            launcher.probe(pick)
        if k in budgets:
            est, usable, top = _solve(scn, launcher, time_kind, acc_kind, mask, POLICY_CONFIDENCE.get(name))
            j = int(top[0]) if top.size else None
            plans.append(
                Plan(
                    policy=name,
                    budget=k,
                    probes=len(launcher.probed),
                    probe_cost=launcher.probe_cost,
                    index=None if j is None else int(usable[j]),
                    predicted_cost=float(est.cost[j]) if j is not None else math.inf,
                    predicted_time_s=float(est.time_s[j]) if j is not None else math.inf,
                    probed=tuple(launcher.probed),
                )
            )
    return plans


# -- black-box search ----------------------------------------------------------------------
def visible_epochs(scn: Scenario, global_batch: np.ndarray) -> np.ndarray:
    """Epochs to target read off the visible curves (log-log between them; no model)."""
    w = scn.workload
    vb = np.array(scn.visible, float)
    measured = np.array([curve_epochs_to_target(w.curves[int(b)], scn.target, w.goal) for b in scn.visible])
    out = _interp_log(np.asarray(global_batch, float), vb, measured)
    return np.where(np.isnan(out), np.inf, out)


def _black_box_policy(name: str, scn: Scenario, budgets: tuple[int, ...], *, seed: int = 0) -> list[Plan]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    c = scn.candidates
    launcher = scn.launcher()
    lookup = {(int(c.gpu[i]), int(c.workers[i]), int(c.local_batch[i])): i for i in range(len(c))}
    workers = sorted({int(v) for v in c.workers})
    batches = sorted({int(v) for v in c.local_batch})
    epochs = visible_epochs(scn, c.global_batch)
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
        probed = np.array(launcher.probed, dtype=int)
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


def fitted_estimates(scn: Scenario, probed: tuple[int, ...], *, policy: str = "cotune"):
    """A model-based policy's estimates after the given probes: (candidate indices, Estimates)."""
    time_kind, acc_kind, subspace = MODEL_POLICIES[policy]
    launcher = scn.launcher()
    for i in probed:
        launcher.probe(i)
    est, usable, _ = _solve(scn, launcher, time_kind, acc_kind, policy_mask(scn, subspace), POLICY_CONFIDENCE.get(policy))
    return usable, est


def available_policies() -> tuple[str, ...]:
    """Every policy this environment can run: Optuna's GPSampler needs torch."""
    import importlib.util

    have_torch = importlib.util.find_spec("torch") is not None
    return tuple(p for p in POLICIES if p != "optuna_gp" or have_torch)


def run_policy(name: str, scn: Scenario, budgets: tuple[int, ...]) -> list[Plan]:
    """Plans of policy ``name`` on scenario ``scn`` after each budget (number of probes)."""
    if name in MODEL_POLICIES:
        return _model_policy(name, scn, tuple(sorted(budgets)))
    if name in BLACK_BOX_POLICIES:
        return _black_box_policy(name, scn, tuple(sorted(budgets)))
    raise ValueError(f"unknown policy {name!r}: use one of {', '.join(POLICIES)}")

