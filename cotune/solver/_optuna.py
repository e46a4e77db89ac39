"""Search a space too large to enumerate with Optuna's TPE sampler.

The exhaustive solver makes every candidate; past the candidate limit (any host
placement at large worker counts, huge worker caps) that is refused for memory and
time. :func:`sample_candidates` instead lets a seeded TPE sampler propose candidates
in batches, scores each batch with the same vectorised estimator, and returns every
candidate it evaluated: the caller then ranks those exactly as it ranks an enumerated
space. The answer is the best *found*, not a proven optimum, and says so.

Parameters the sampler sees, per GPU type: workers (log scale, rounded down to an
allowed count), local batch (log scale, snapped to the nearest allowed batch),
a host fraction between packed and one worker per host when hosts are ``"any"``, and
GPU type and market as categories. Infeasible proposals are told to the sampler
through its constraint interface (violation > 0), so it learns the feasible region.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Callable, Iterator

import numpy as np

from cotune.solver._space import Candidates, SearchSpace

__all__ = ["sample_candidates", "DEFAULT_TRIALS"]

DEFAULT_TRIALS = 500
_BATCH = 40  # proposals scored per vectorised estimate call
_INFEASIBLE = 1e3  # log-objective told for a proposal whose objective is not finite

Evaluate = Callable[[Candidates], "tuple[np.ndarray, np.ndarray]"]


@contextmanager
def _optuna_quiet() -> Iterator[object]:
    """Optuna without its per-trial INFO lines (restored afterwards: its logging is global)."""
    try:
        import optuna
    except ImportError:
        from cotune.errors import InputError

        raise InputError("searching a space over the candidate limit needs optuna: pip install optuna, "
                         "or lower --max-workers / list --workers so the space can be enumerated") from None
    old = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield optuna
    finally:
        optuna.logging.set_verbosity(old)


def _allowed_workers(space: SearchSpace, gpu: str) -> tuple[int, int, np.ndarray | None]:
    """(lowest, highest, explicit list or None) without materialising 1..cap; the highest
    is the most any local batch allows (its smallest: the training set bounds the global batch)."""
    cap = space.worker_cap(gpu, min(space.local_batches[gpu]))
    if space.workers is not None:
        ws = np.array(sorted({w for w in space.workers if space.min_workers <= w <= cap}), dtype=np.int64)
        return int(ws[0]), int(ws[-1]), ws
    return int(space.min_workers), cap, None


def _snap(values: np.ndarray, raw: float) -> int:
    """The allowed value nearest ``raw`` on a log scale."""
    return int(values[np.argmin(np.abs(np.log(values) - math.log(raw)))])


def _propose(trial, space: SearchSpace) -> tuple[int, int, int, int, int]:
    gi = space.gpus.index(trial.suggest_categorical("gpu", list(space.gpus))) if len(space.gpus) > 1 else 0
    gpu = space.gpus[gi]
    mi = space.markets.index(trial.suggest_categorical("market", list(space.markets))) if len(space.markets) > 1 else 0
    lo, hi, listed = _allowed_workers(space, gpu)
    # Continuous log-scale parameters, rounded here: TPE's integer distributions price every
    # integer's probability mass in pure Python, 50x slower at thousands of workers.
    raw = trial.suggest_float(f"workers_{gpu}", lo, hi + 0.999, log=True) if hi > lo else float(lo)
    workers = min(hi, int(raw)) if listed is None else _snap(listed, raw)
    batches = np.array(sorted(space.local_batches[gpu]), dtype=np.int64)
    if space.max_global_batch is not None:
        # The smallest batch always fits: `workers` is at most what it allows.
        batches = batches[workers * batches <= space.max_global_batch]
    braw = trial.suggest_float(f"local_batch_{gpu}", float(batches[0]), float(batches[-1]), log=True) if batches.size > 1 else float(batches[0])
    local = _snap(batches, braw)
    packed = -(-workers // space.host_size(gpu))
    hosts = packed
    if space.hosts == "any" and workers > packed:
        hosts = packed + int(round(trial.suggest_float("hosts_spread", 0.0, 1.0) * (workers - packed)))
    return gi, mi, workers, hosts, local


def _as_candidates(space: SearchSpace, rows: list[tuple[int, int, int, int, int]]) -> Candidates:
    a = np.array(rows, dtype=np.int64).reshape(-1, 5)
    return Candidates(
        gpus=space.gpus, markets=space.markets, gpu=a[:, 0].astype(np.int32), market=a[:, 1].astype(np.int32),
        workers=a[:, 2], hosts=a[:, 3], local_batch=a[:, 4],
    )


def sample_candidates(
    space: SearchSpace,
    evaluate: Evaluate,
    *,
    n_trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Candidates, int]:
    """Candidates a seeded TPE search evaluated, and how many proposals it made.

    ``evaluate(candidates)`` returns two arrays aligned with them: the objective to
    minimise (cost or time; ``inf`` when unreachable) and the constraint violation
    (``<= 0`` feasible). Each distinct candidate is evaluated once; a repeated proposal
    is told its earlier result. Deterministic for a given ``seed``.
    """
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials}")
    with _optuna_quiet() as optuna:
        # Optuna 5 takes constraints from Trial.set_constraint; older ones from constraints_func.
        new_api = hasattr(optuna.trial.Trial, "set_constraint")
        legacy = {} if new_api else {"constraints_func": lambda t: t.user_attrs["violation"]}
        sampler = optuna.samplers.TPESampler(
            seed=seed, multivariate=True, n_startup_trials=min(100, max(10, n_trials // 8)), **legacy
        )
        study = optuna.create_study(direction="minimize", sampler=sampler)
        seen: dict[tuple[int, int, int, int, int], tuple[float, float]] = {}
        asked = 0
        while asked < n_trials:
            trials = [study.ask() for _ in range(min(_BATCH, n_trials - asked))]
            asked += len(trials)
            rows = [_propose(t, space) for t in trials]
            fresh = list(dict.fromkeys(r for r in rows if r not in seen))
            if fresh:
                objective, violation = evaluate(_as_candidates(space, fresh))
                for row, obj, vio in zip(fresh, np.asarray(objective, float), np.asarray(violation, float)):
                    value = math.log(obj) if math.isfinite(obj) and obj > 0 else _INFEASIBLE
                    seen[row] = (value, float(vio) if math.isfinite(vio) else _INFEASIBLE)
            for trial, row in zip(trials, rows):
                value, vio = seen[row]
                if new_api:
                    trial.set_constraint("violation", vio)
                else:
                    trial.set_user_attr("violation", (vio,))
                study.tell(trial, value)
            if progress is not None:
                progress(asked, n_trials)
    return _as_candidates(space, list(seen)), asked
