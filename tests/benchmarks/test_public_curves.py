"""The out-of-sample check of the curve forecaster on the DAWNBench curves (benchmarks/public_curves.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.public_curves import RULES, collect, load_dawnbench, score
from benchmarks.traces import data_root


def test_every_dawnbench_training_curve_loads():
    curves, skipped = load_dawnbench()
    by = {d: [c for c in curves if c.dataset == d] for d in ("CIFAR10", "ImageNet")}
    # SOURCE.md: 31 CIFAR-10 and 27 ImageNet training submissions, each with a TSV curve.
    assert len(by["CIFAR10"]) == 31 and len(by["ImageNet"]) == 27 and skipped == []
    for c in curves:
        assert np.all(np.diff(c.epochs) >= 0) and np.all(np.isfinite(c.metric))
        assert c.metric.max() >= c.target  # every submission reached the competition target


def test_a_file_without_the_metric_column_is_skipped_with_its_reason(tmp_path):
    train = tmp_path / "dawnbench" / "CIFAR10" / "train"
    train.mkdir(parents=True)
    (train / "good.tsv").write_text("epoch\thours\ttop1Accuracy\n1\t0.1\t50\n2\t0.2\t80\n3\t0.3\t94.5\n")
    (train / "bad.tsv").write_text("epoch\thours\twrong\n1\t0.1\t50\n2\t0.2\t80\n3\t0.3\t94.5\n")
    (tmp_path / "dawnbench" / "ImageNet" / "train").mkdir(parents=True)
    curves, skipped = load_dawnbench(tmp_path)
    assert [c.name for c in curves] == ["good"]
    assert len(skipped) == 1 and "bad.tsv" in skipped[0] and "top1Accuracy" in skipped[0]


def test_targets_already_reached_at_the_truncation_are_not_forecast():
    curves, _ = load_dawnbench()
    for it, _, end in collect(curves[:3], truncations=(0.3,)):
        assert it.best[-1] < it.target  # something left to forecast
        assert end >= it.seen


def test_the_schedule_end_rule_scores_better_than_counting_the_end_twice():
    # The public-data finding behind cotune.solver.remaining_work's truncated rule, early in the
    # runs where the two differ most (the full table: python -m benchmarks.public_curves).
    curves, _ = load_dawnbench(data_root())
    r = score(collect(curves, truncations=(0.3,)))
    assert set(r["brier"]) == set(RULES)
    assert r["brier"]["by_end"] < r["brier"]["by_end_multiplied"]
    assert 0.8 <= r["coverage_90"] <= 0.99 and math.isfinite(r["median_abs_log_error"])


@pytest.mark.parametrize("rule", sorted(RULES))
def test_every_rule_gives_a_probability(rule):
    curves, _ = load_dawnbench()
    for it, _, end in collect(curves[:2], truncations=(0.5,)):
        f = it.forecast(0.835, (2.0, 10.0), False)
        if math.isfinite(f.epochs_if_reached):
            assert 0.0 <= RULES[rule](f, it.seen, end) <= 1.0


@pytest.mark.slow
def test_on_the_pollux_curves_with_the_one_curve_prior_the_schedule_rule_scores_better_too():
    from benchmarks.public_curves import collect_pollux

    pairs = collect_pollux(truncations=(0.3,))
    assert pairs and all(it.prior_ref is not None and end >= it.seen for it, _, end in pairs)
    r = score(pairs, prior="ref")
    assert r["brier"]["by_end"] < r["brier"]["by_end_multiplied"] and r["brier"]["by_end"] < r["brier_base_rate"]
