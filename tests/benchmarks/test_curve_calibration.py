"""benchmarks.curve_calibration --late: the forecast's coverage where a closed-loop job sits near its end."""

from __future__ import annotations

import pytest

from benchmarks import curve_calibration as cc


@pytest.mark.slow
def test_late_truncations_report_every_group_with_coverage_as_a_share(capsys) -> None:
    assert cc._late(((0.8,), (0.9,))) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines if line.startswith(("80%", "90%"))]
    assert [r[0] for r in rows] == ["80%", "90%"]
    for r in rows:
        assert int(r[1]) > 0
        shares = [float(x.rstrip("%")) for x in r[2::2]]
        assert all(0.0 <= x <= 100.0 for x in shares) and len(shares) == 3


@pytest.mark.slow
def test_late_items_are_only_targets_not_yet_reached_at_the_truncation() -> None:
    items = cc.collect(with_prior=False, truncations=(0.9,))
    assert items and all(it.truncation == 0.9 for it in items)
    # Scores: the metric, negated for goal "min"; at the truncation the target is still ahead.
    assert all(it.best[-1] < (it.target if it.goal == "max" else -it.target) for it in items)
