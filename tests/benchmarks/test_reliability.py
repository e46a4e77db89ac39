"""Reliability tables, Brier score and ECE of predicted probabilities (benchmarks/reliability.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.reliability import brier, counts, ece, merge, table


def test_calibrated_probabilities_on_seeded_synthetic_truth_have_small_ece_and_the_expected_brier() -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(size=200_000)
    y = rng.uniform(size=p.size) < p  # outcomes drawn with exactly the predicted probability
    c = counts(p, y)
    assert ece(c) < 0.01
    # E[(p − y)²] = E[p(1 − p)] = 1/6 for uniform p
    assert brier(c) == pytest.approx(1 / 6, abs=0.003)
    for row in table(c):
        assert abs(row["mean_pred"] - row["frac_true"]) < 0.02


def test_overconfident_probabilities_show_in_the_table_and_the_ece() -> None:
    rng = np.random.default_rng(1)
    truth_p = rng.uniform(size=100_000)
    y = rng.uniform(size=truth_p.size) < truth_p
    # A model that pushes every probability towards 0 or 1.
    said = np.clip(0.5 + 1.8 * (truth_p - 0.5), 0.0, 1.0)
    c = counts(said, y)
    assert ece(c) > 0.1
    top = table(c)[-1]
    assert top["mean_pred"] > top["frac_true"] + 0.1
    assert brier(c) > brier(counts(truth_p, y))


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=60),
    st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=60),
)
def test_counts_of_two_sets_merge_into_the_counts_of_their_union(a, b) -> None:
    pa, ya = map(np.array, zip(*a))
    pb, yb = map(np.array, zip(*b))
    merged = merge([counts(pa, ya), None, counts(pb, yb)])
    whole = counts(np.concatenate([pa, pb]), np.concatenate([ya, yb]))
    assert merged["count"] == whole["count"]
    assert np.allclose(merged["sum_pred"], whole["sum_pred"]) and np.allclose(merged["sum_true"], whole["sum_true"])
    assert brier(merged) == pytest.approx(brier(whole))
    assert 0.0 <= ece(merged) <= 1.0
    assert sum(r["count"] for r in table(merged)) == len(a) + len(b)


def test_nothing_to_score_gives_none_not_zero() -> None:
    assert brier(None) is None and ece(None) is None and merge([None, {}]) is None
    assert brier(counts(np.array([np.nan]), np.array([True]))) is None


def test_mismatched_predictions_and_outcomes_are_refused() -> None:
    with pytest.raises(ValueError, match="one value per candidate"):
        counts(np.zeros(3), np.zeros(2))


def test_free_curves_rows_of_the_reliability_tables_are_labelled_upper_bound() -> None:
    from benchmarks.reliability import markdown

    c = counts(np.array([0.2, 0.8]), np.array([False, True]))
    row = dict(setting="free-curves", policy="cotune", probes=16, candidates=2, brier=brier(c), ece=ece(c),
               brier_reach=brier(c), ece_reach=ece(c), success=table(c), reach=table(c), choices=[])
    lines = markdown([row])
    assert any(line.startswith("| free-curves (upper bound) | cotune |") for line in lines)
    assert any(line.startswith("free-curves (upper bound), cotune family") for line in lines)
