"""cotune/models/_segments.py: each grouped statistic equals the per-group call it replaces, bit for bit."""

import statistics

import numpy as np
import pytest
from _evidence_oracle import km_median

from cotune.models._segments import (
    group_starts,
    interp_segments,
    segment_km_median,
    segment_median,
    segment_std_of_two,
)


def _groups(rng, n_groups: int, *, max_size: int = 7, ties: bool = False):
    sizes = rng.integers(0, max_size + 1, n_groups)
    group = np.repeat(np.arange(n_groups), sizes)
    rng.shuffle(group)  # a group's values need not be contiguous
    values = rng.normal(size=group.size) * 10.0 ** rng.uniform(-3, 3)
    if ties:
        values = np.round(values, 1)
    return values, group


def test_group_starts_are_the_offsets_of_consecutive_groups():
    assert group_starts(np.array([2, 0, 3])).tolist() == [0, 2, 2, 5]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("ties", [False, True])
def test_segment_median_is_each_groups_statistics_median(seed, ties):
    rng = np.random.default_rng(seed)
    values, group = _groups(rng, 40, ties=ties)
    got = segment_median(values, group, 40)
    for g in range(40):
        mine = values[group == g]
        if mine.size == 0:
            assert np.isnan(got[g])
        else:
            assert got[g] == statistics.median(mine.tolist()) == np.median(mine)


@pytest.mark.parametrize("seed", range(5))
def test_segment_std_of_two_is_numpys_std_where_a_group_has_two_values(seed):
    rng = np.random.default_rng(seed)
    values, group = _groups(rng, 40, max_size=4)
    got = segment_std_of_two(values, group, 40)
    for g in range(40):
        mine = values[group == g]
        assert (got[g] == np.std(mine)) if mine.size == 2 else np.isnan(got[g])


@pytest.mark.parametrize("seed", range(5))
def test_segment_km_median_is_each_groups_kaplan_meier_median(seed):
    rng = np.random.default_rng(seed)
    _, group = _groups(rng, 60, max_size=9)
    times = np.round(rng.uniform(1, 10, group.size), 0)  # ties between events and censorings
    event = rng.random(group.size) < 0.6
    got = segment_km_median(times, event, group, 60)
    for g in range(60):
        sel = group == g
        assert got[g] == (km_median(times[sel], event[sel]) if sel.any() else np.inf)


@pytest.mark.parametrize("seed", range(5))
def test_interp_segments_is_numpys_interp_along_each_curve(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, 30)
    starts = group_starts(sizes)
    xp = np.concatenate([np.sort(np.round(rng.uniform(0, 10, k), 0 if rng.random() < 0.5 else 3)) for k in sizes])
    fp = rng.normal(size=xp.size)
    segment = rng.integers(0, 30, 500)
    x = np.where(rng.random(500) < 0.3, xp[starts[segment]], rng.uniform(-1, 11, 500))  # exact hits, both ends
    got = interp_segments(x, segment, starts, xp, fp)
    want = [np.interp(xi, xp[starts[s]:starts[s + 1]], fp[starts[s]:starts[s + 1]]) for xi, s in zip(x, segment)]
    assert np.array_equal(got, np.array(want))
