"""The in-sample check of the accuracy priors (benchmarks/priors_loo.py)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.priors_loo import loo_rows, scores


def test_scores_are_brier_and_log_loss() -> None:
    brier, log_loss = scores(p=[0.5, 0.5], y=[1.0, 0.0])
    assert brier == pytest.approx(0.25) and log_loss == pytest.approx(0.6931, abs=1e-4)


def test_leaving_bert_own_plateau_node_out_makes_its_p_reach_worse() -> None:
    # bert's node is the largest: its replay's P(reach) owes most to being scored in-sample.
    bert, pooled = loo_rows(models=("bert",))
    assert bert["workload"] == "bert-t4" and pooled["n"] == bert["n"] > 0
    assert bert["brier_own_left_out"] > bert["brier_shipped"] and bert["log_loss_own_left_out"] > bert["log_loss_shipped"]


def test_bert_left_out_is_scored_better_by_the_log_normal_prior_than_by_the_other_workloads_as_atoms() -> None:
    # BERT's plateau drifts faster than any other Pollux workload's: the other five's optima
    # as the only nodes promised its far batches near-certain reach (log-loss 0.70); the
    # log-normal they imply keeps mass beyond the fastest of them.
    from benchmarks.priors_loo import ORDER, _p_reach_and_truth
    from benchmarks.scenarios import workloads
    from cotune.models._accuracy import PLATEAU_WALK_OPTIMA, walk_prior_nodes

    (bert,) = workloads(names=("bert-t4",))
    rest = [t for m, t in zip(ORDER, PLATEAU_WALK_OPTIMA) if m != "bert"]
    p_prior, y = _p_reach_and_truth(bert, walk_prior_nodes(rest))
    p_atoms, y_atoms = _p_reach_and_truth(bert, tuple(rest))
    assert np.array_equal(y, y_atoms)
    _, ll_prior = scores(p=p_prior, y=y)
    _, ll_atoms = scores(p=p_atoms, y=y)
    assert ll_prior < ll_atoms - 0.1
