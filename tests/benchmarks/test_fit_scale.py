"""benchmarks/fit_scale.py: the profile it times is read back whole, in a fresh process."""

import json

import pytest

from benchmarks import fit_scale


def test_profile_lines_hold_every_batch_run_and_evaluation():
    lines = [json.loads(line) for line in fit_scale.profile_lines(7, seeds=2, evals=4)]
    evals = [r for r in lines if r["record"] == "eval"]
    assert len(evals) == 7 * 2 * 4
    assert len({r["global_batch"] for r in evals}) == 7
    assert {(r["global_batch"], r["seed"]) for r in evals} == {(b, s) for b in range(64, 64 + 3 * 7, 3) for s in (0, 1)}


@pytest.mark.slow  # a fresh process that imports cotune, fits and cross-validates (about 10 s)
def test_measure_reports_every_batch_and_positive_cpu_time():
    out = fit_scale.measure(30, fit_scale.REPO, seeds=2, evals=5)
    assert out["batches"] == 30 and out["records"] == 30 * 2 * 5 + 12
    assert out["fit_cpu_s"] > 0 and out["report_cpu_s"] > 0
