"""Solver latency: exhaustive vectorized solve from 10³ to 10⁶ candidates, and Optuna
searching the same predicted objective until it matches the exhaustive optimum.

Models are fitted once on the bundled ``cifar10-resnet18`` profile (every Pollux T4
probe, full cotune models with bootstrap intervals); the timed part is what a
scheduler pays per call: enumerate → estimate → feasibility → rank → Pareto front.
Spaces grow in workers (packed on 4-GPU hosts), local batches and two markets.
"""

from __future__ import annotations

import math
import time

import numpy as np

from cotune.solver import SearchSpace, enumerate_candidates, estimate, feasibility, pareto_indices, ranked

__all__ = ["solver_latency", "optuna_equal_regret", "space_of_size"]

TARGET = 0.94
DEADLINE_S = 3600.0


def _models():
    from cotune import fit_models, load_profile

    return fit_models(load_profile("cifar10-resnet18"))


def space_of_size(n: int) -> SearchSpace:
    """A T4 space with about ``n`` candidates (2 markets × workers × local batches)."""
    per_market = n // 2
    n_batches = int(max(4, min(993, round(math.sqrt(per_market / 2)))))
    n_workers = max(1, per_market // n_batches)
    batches = tuple(int(v) for v in np.unique(np.linspace(32, 1024, n_batches).round()))
    return SearchSpace(
        gpus=("t4",),
        max_workers={"t4": n_workers},
        local_batches={"t4": batches},
        gpus_per_host=4,
        markets=("on_demand", "spot"),
    )


def _solve(space: SearchSpace, models) -> tuple[int, float, int]:
    cands = enumerate_candidates(space)
    prices = np.array([[0.978, 0.294]])
    est = estimate(cands, models, target=TARGET, price_per_hour=prices)
    ok = feasibility(est, deadline_s=DEADLINE_S, budget=None).all
    top = ranked(est, ok, "cost", limit=6)
    pareto_indices(est, est.time_s < np.inf)
    return int(top[0]), float(est.cost[top[0]]), len(cands)


def solver_latency(*, sizes: tuple[int, ...], repeats: int = 3) -> list[dict]:
    models = _models()
    rows = []
    for n in sizes:
        space = space_of_size(n)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            _, _, n_cands = _solve(space, models)
            times.append(time.perf_counter() - t0)
        rows.append({"target_candidates": n, "candidates": n_cands, "median_s": float(np.median(times)), "repeats": repeats})
    return rows


def optuna_equal_regret(*, n: int = 10_000, max_trials: int = 2000, tolerance: float = 0.01, seed: int = 0) -> dict:
    """Trials and seconds Optuna TPE needs to come within ``tolerance`` of the exhaustive
    optimum of the *same* predicted objective (estimates precomputed: Optuna pays only
    for its own sampling, which favours it)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    models = _models()
    space = space_of_size(n)
    t0 = time.perf_counter()
    best_i, best_cost, n_cands = _solve(space, models)
    exhaustive_s = time.perf_counter() - t0

    cands = enumerate_candidates(space)
    est = estimate(cands, models, target=TARGET, price_per_hour=np.array([[0.978, 0.294]]))
    ok = feasibility(est, deadline_s=DEADLINE_S, budget=None).all
    cost = np.where(ok, est.cost, np.inf)
    index = {(int(m), int(w), int(b)): i for i, (m, w, b) in enumerate(zip(cands.market, cands.workers, cands.local_batch))}
    batches = space.local_batches["t4"]
    max_w = space.max_workers["t4"]

    def objective(trial: "optuna.Trial") -> float:
        m = trial.suggest_categorical("market", [0, 1])
        w = trial.suggest_int("workers", 1, max_w, log=True)
        b = batches[trial.suggest_int("local_batch_i", 0, len(batches) - 1)]
        c = cost[index[(m, w, b)]]
        return math.log(c) if math.isfinite(c) else 1e3

    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))
    t0 = time.perf_counter()
    reached = None
    for trial in range(1, max_trials + 1):
        study.optimize(objective, n_trials=1)
        if math.exp(study.best_value) <= best_cost * (1 + tolerance):
            reached = trial
            break
    optuna_s = time.perf_counter() - t0
    return {
        "candidates": n_cands,
        "tolerance": tolerance,
        "exhaustive_s": exhaustive_s,
        "optuna_trials": reached,
        "optuna_max_trials": max_trials,
        "optuna_s": optuna_s,
        "optuna_best_regret": math.exp(study.best_value) / best_cost - 1 if study.best_value < 1e3 else math.inf,
    }
