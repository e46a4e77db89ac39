"""Outlier step records: found, left out of the fit, reported; clean profiles untouched."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune.models import predict_log_step
from cotune.models._outliers import MAX_FRACTION, find_step_outliers

_PARAMS = np.array([0.02, 0.0004, 0.01, 0.002, 0.02, 0.004, 1.5])


def _grid(noise: float, seed: int, repeats: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    w, b = np.meshgrid([1, 2, 4, 8, 16, 32], [32, 64, 128, 256, 512])
    w = np.repeat(w.ravel(), repeats).astype(float)
    b = np.repeat(b.ravel(), repeats).astype(float)
    h = np.ceil(w / 4)
    step = np.exp(predict_log_step(_PARAMS, w, h, b) + rng.normal(0, noise, w.size))
    return {"workers": w, "hosts": h, "local_batch": b, "step_time_s": step}


def _find(a: dict[str, np.ndarray]):
    return find_step_outliers(workers=a["workers"], hosts=a["hosts"], local_batch=a["local_batch"], step_time_s=a["step_time_s"])


@settings(max_examples=15, deadline=None, derandomize=True, database=None)
@given(noise=st.floats(0.0, 0.25), seed=st.integers(0, 2**16))
def test_clean_probes_with_realistic_noise_have_no_outliers(noise, seed):
    assert _find(_grid(noise, seed)).count == 0


@pytest.mark.parametrize(
    ("column", "factor", "reason"),
    [
        ("local_batch", 1e9, "local batch"),
        ("workers", 1e5, "workers"),
        ("step_time_s", 1e5, "slower than the model"),
        ("step_time_s", 1e-3, "faster than the model"),
        ("step_time_s", 10.0, "slower than the model"),
    ],
)
def test_one_corrupted_record_among_many_is_the_one_flagged(column, factor, reason):
    a = _grid(0.05, 1)
    a[column] = a[column].copy()
    a[column][17] *= factor
    found = _find(a)
    assert found.count == 1 and found.mask[17] and reason in found.reasons[0]


def test_never_more_than_a_small_share_is_left_out():
    a = _grid(0.05, 2)
    a["step_time_s"] = a["step_time_s"].copy()
    a["step_time_s"][::3] *= 50.0  # a third of the records disagree: the data, not a few records
    found = _find(a)
    assert found.count <= max(1, int(MAX_FRACTION * a["step_time_s"].size))


def test_too_few_records_are_never_judged():
    a = {k: v[:8] for k, v in _grid(0.05, 3).items()}
    a["step_time_s"][0] *= 1000
    assert _find(a).count == 0


def test_bundled_profiles_have_no_outliers():
    from cotune.examples import list_examples
    from cotune.models import clean_step_arrays
    from cotune.profile import read_profile

    for example in list_examples():
        _, notes = clean_step_arrays(read_profile(example.path))
        assert notes == (), (example.name, notes)


def _with_record(tmp_path, **change):
    from cotune.examples import example_path

    lines = example_path("cifar10-resnet18").read_text().splitlines()
    step = json.loads(next(line for line in lines if '"step"' in line))
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(lines + [json.dumps(dict(step, **change))]) + "\n")
    return path


@pytest.mark.slow
def test_one_absurd_record_leaves_the_plan_unchanged_and_is_reported(tmp_path):
    import cotune

    kwargs = dict(target=0.94, deadline_s=1800, max_workers=16, gpus_per_host=4, prices={"t4": 0.526})
    clean = cotune.recommend("cifar10-resnet18", **kwargs)
    dirty = cotune.recommend(_with_record(tmp_path, local_batch=10**12), **kwargs)
    assert (dirty.chosen.workers, dirty.chosen.local_batch, dirty.chosen.gpu) == (clean.chosen.workers, clean.chosen.local_batch, clean.chosen.gpu)
    assert dirty.chosen.time_s == pytest.approx(clean.chosen.time_s, rel=1e-6)
    notes = [n for n in dirty.notes if "outlier" in n]
    assert len(notes) == 1 and "1 of 1,513 step record" in notes[0] and "local batch 1e+12" in notes[0]
    assert not [n for n in clean.notes if "outlier" in n]


@pytest.mark.slow
def test_cotune_fit_reports_the_outlier(tmp_path, capsys):
    from cotune.cli import main

    assert main(["fit", str(_with_record(tmp_path, step_time_s=1e5, sync_time_s=None))]) == 0
    out = capsys.readouterr().out
    assert "Left out of the fit:" in out and "× slower than the model of the other records" in out, out
