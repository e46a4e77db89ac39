"""A spot row's P(success) law is evaluated in fixed-size blocks of rows: the same numbers,
in memory that does not grow with the number of spot rows."""

from __future__ import annotations

import tracemalloc
from types import SimpleNamespace

import numpy as np

from cotune.solver import _estimate


def _law(rows: int) -> tuple[SimpleNamespace, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    law = np.concatenate([rng.uniform(500.0, 1000.0, (rows, 1)), np.sort(rng.exponential(100.0, (rows, 128)), axis=1)], axis=1)
    end_s = rng.uniform(600.0, 1500.0, rows)
    return (SimpleNamespace(revocation_law_s=law), np.ones(rows, dtype=bool), end_s,
            rng.uniform(0.05, 0.2, rows), rng.uniform(0.05, 0.2, rows))


def test_blocks_give_the_numbers_of_one_pass(monkeypatch):
    est, rows, end_s, sig_step, sig_e = _law(1000)
    blocked = _estimate._on_time_with_revocations(est, rows, end_s, sig_step, sig_e)
    monkeypatch.setattr(_estimate, "LAW_ROWS_PER_BLOCK", 10**9)
    whole = _estimate._on_time_with_revocations(est, rows, end_s, sig_step, sig_e)
    np.testing.assert_array_equal(blocked, whole)


def test_the_law_of_many_spot_rows_takes_memory_of_one_block():
    est, rows, end_s, sig_step, sig_e = _law(8192)
    tracemalloc.start()
    try:
        _estimate._on_time_with_revocations(est, rows, end_s, sig_step, sig_e)
        peak_bytes = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # One pass over all rows held ~27 KB a row (8,192 rows: ~220 MB); the law itself is 8.5 MB.
    assert peak_bytes < 40 * 2**20, peak_bytes
