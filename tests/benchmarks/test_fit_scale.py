"""benchmarks/fit_scale.py: the profile it times is read back whole, in a fresh process."""

import pytest

from benchmarks import fit_scale


@pytest.mark.slow  # a fresh process that imports cotune and cross-validates (about 5 s)
def test_measure_reports_every_batch_and_positive_cpu_time():
    out = fit_scale.measure(30, fit_scale.REPO)
    assert out["batches"] == 30 and out["cpu_s"] > 0
