"""Proper scores of the step-time intervals (benchmarks/step_interval_score.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.step_interval_score import interval_score, log_score, main


def test_the_interval_score_is_the_width_when_the_truth_is_inside():
    assert interval_score(np.array([0.5]), np.array([0.0]), np.array([2.0]))[0] == pytest.approx(2.0)


def test_a_miss_costs_twenty_times_its_distance_at_ninety_percent():
    # (2 / α) = 20 per unit beyond either end.
    s = interval_score(np.array([-0.1, 2.3]), np.array([0.0, 0.0]), np.array([2.0, 2.0]))
    assert s == pytest.approx([2.0 + 2.0, 2.0 + 6.0])


def test_the_interval_score_is_proper_a_narrower_interval_that_misses_scores_worse_than_one_that_covers():
    # Truths from N(0, 1): the central 90 % interval of that normal beats one half as wide.
    y = np.random.default_rng(0).normal(0.0, 1.0, 200_000)
    z = 1.6448536269514722
    right = interval_score(y, np.full(y.shape, -z), np.full(y.shape, z)).mean()
    narrow = interval_score(y, np.full(y.shape, -z / 2), np.full(y.shape, z / 2)).mean()
    wide = interval_score(y, np.full(y.shape, -2 * z), np.full(y.shape, 2 * z)).mean()
    assert right < narrow and right < wide


def test_the_log_score_is_least_at_the_true_spread():
    y = np.random.default_rng(1).normal(0.0, 0.3, 100_000)
    scores = {s: log_score(y, np.zeros(y.shape), np.full(y.shape, s)).mean() for s in (0.15, 0.3, 0.6)}
    assert min(scores, key=scores.get) == 0.3
    assert scores[0.3] == pytest.approx(0.5 + math.log(0.3), abs=0.01)


def test_an_unknown_workload_is_refused_with_exit_2(capsys):
    assert main(["--workloads", "no-such-trace"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown workload")


@pytest.mark.slow
def test_one_workload_is_scored_at_every_unprobed_candidate(capsys):
    assert main(["--workloads", "bert-t4"]) == 0
    out = capsys.readouterr().out
    assert "bert-t4" in out and "all (each weighs one)" in out
