"""The in-sample check of the accuracy priors (benchmarks/priors_loo.py)."""

from __future__ import annotations

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
