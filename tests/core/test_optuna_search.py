"""Spaces over the candidate limit are searched with Optuna's TPE sampler (cotune/solver/_optuna.py)."""

from __future__ import annotations

import numpy as np
import pytest

import cotune
from cotune.solver import SearchSpace
from cotune.solver._optuna import sample_candidates

# 16,912 candidates: every (workers ≤ 64, hosts) of the 11 probed local batches, less those
# whose step holds more than cifar10's 50,000 samples (local batch 1024 above 48 workers).
QUESTION = dict(target=0.94, deadline_s=1800, max_workers=64, hosts="any")
N_CANDIDATES = 16_912


@pytest.fixture(scope="module")
def answers(cifar_models):
    exhaustive = cotune.recommend("cifar10-resnet18", models=cifar_models, **QUESTION)
    sampled = cotune.recommend("cifar10-resnet18", models=cifar_models, max_candidates=1000, **QUESTION)
    return exhaustive, sampled


@pytest.mark.slow
def test_over_the_limit_is_searched_not_refused_and_says_so(answers):
    exhaustive, sampled = answers
    assert exhaustive.search == "exhaustive" and exhaustive.n_candidates == N_CANDIDATES
    assert sampled.search == "optuna-tpe" and sampled.n_candidates < N_CANDIDATES
    (note,) = [n for n in sampled.notes if "TPE" in n]
    assert f"{N_CANDIDATES:,} candidates, over the limit of 1,000" in note and "not a proven optimum" in note
    assert (sampled.candidates_frame()["global_batch"] <= 50_000).all()


@pytest.mark.slow
def test_sampled_plan_is_feasible_and_near_the_exhaustive_optimum(answers):
    exhaustive, sampled = answers
    chosen = sampled.chosen
    assert chosen is not None and chosen.time_at_confidence_s <= 1800
    assert chosen.cost <= 1.03 * exhaustive.chosen.cost


@pytest.mark.slow
def test_sampled_search_is_deterministic(cifar_models):
    a = cotune.recommend("cifar10-resnet18", models=cifar_models, max_candidates=1000, **QUESTION)
    b = cotune.recommend("cifar10-resnet18", models=cifar_models, max_candidates=1000, **QUESTION)
    assert a.chosen == b.chosen and a.n_candidates == b.n_candidates


@pytest.mark.slow
@pytest.mark.parametrize("sizes", [8, {"a": 8, "b": 2}])
def test_sampler_stays_inside_the_space_and_finds_a_planted_optimum(sizes):
    space = SearchSpace(gpus=("a", "b"), max_workers={"a": 5000, "b": 300}, local_batches={"a": (16, 32, 64, 128, 256), "b": (8, 512)},
                        gpus_per_host=sizes, hosts="any")

    def evaluate(c):
        # Cheapest at 37 workers, local batch 64 on gpu 'a'; more than 60 workers is infeasible.
        objective = 1 + np.abs(np.log(c.workers / 37)) + np.abs(np.log(c.local_batch / 64)) + (c.gpu == 1) + 0.01 * c.hosts
        return objective, (c.workers > 60).astype(float)

    cands, proposals = sample_candidates(space, evaluate, n_trials=300, seed=1)
    assert proposals == 300 and len(cands) <= 300
    caps = np.where(cands.gpu == 0, 5000, 300)
    per_host = np.where(cands.gpu == 0, 8, 8 if sizes == 8 else 2)  # each type's own servers
    packed = -(-cands.workers // per_host)
    assert np.all((cands.workers >= 1) & (cands.workers <= caps))
    assert np.all((cands.hosts >= packed) & (cands.hosts <= cands.workers))
    for g, allowed in ((0, {16, 32, 64, 128, 256}), (1, {8, 512})):
        assert set(cands.local_batch[cands.gpu == g].tolist()) <= allowed
    objective, violation = evaluate(cands)
    best = int(np.argmin(np.where(violation <= 0, objective, np.inf)))
    assert cands.gpu[best] == 0 and cands.local_batch[best] == 64 and 30 <= cands.workers[best] <= 45
