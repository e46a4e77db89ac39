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
    from cotune.models import clean_arrays
    from cotune.profile import read_profile

    for example in list_examples():
        notes = clean_arrays(read_profile(example.path)).notes
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
    assert len(notes) == 1 and "t4 step: 1 of 1,513 records left out as an outlier" in notes[0] and "local batch 1e+12" in notes[0]
    assert not [n for n in clean.notes if "outlier" in n]


@pytest.mark.slow
def test_cotune_fit_reports_the_outlier(tmp_path, capsys):
    from cotune.cli import main

    assert main(["fit", str(_with_record(tmp_path, step_time_s=1e5, sync_time_s=None))]) == 0
    out = capsys.readouterr().out
    assert "Left out of the fit:" in out and "× slower than the model of the other records" in out, out


# --- eval records -----------------------------------------------------------------------------


def _curves(seed: int, noise: float = 0.003):
    from _helpers import synthetic_records

    recs = [r for r in synthetic_records(seed=seed, seeds=2, noise=noise) if r["record"] == "eval"]
    return {k: np.array([r[k] for r in recs], dtype=float) for k in ("global_batch", "epoch", "metric", "seed")}


def _find_eval(e, goal="max"):
    from cotune.models._outliers import find_eval_outliers

    return find_eval_outliers(global_batch=e["global_batch"], epoch=e["epoch"], metric=e["metric"], seed=e["seed"], goal=goal)


@settings(max_examples=15, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 2**16))
def test_clean_learning_curves_have_no_outliers(seed):
    assert _find_eval(_curves(seed)).count == 0


def test_an_overfitting_peak_and_a_dip_are_not_outliers():
    e = _curves(3)
    run = np.flatnonzero((e["global_batch"] == 64) & (e["seed"] == 0))
    e["metric"] = e["metric"].copy()
    e["metric"][run[-10:]] -= np.linspace(0.01, 0.1, 10)  # validation accuracy declines after its peak
    e["metric"][run[5]] -= 0.2  # one bad evaluation: pessimistic, harmless
    assert _find_eval(e).count == 0


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"metric": 1e6}, "far outside every other"),
        ({"metric": -1e6}, "far outside every other"),
        ({"epoch": 1e9}, "away from every other epoch"),
        ({"epoch": 0.01, "metric": 0.999}, "above its neighbours"),
    ],
)
def test_one_absurd_eval_record_is_the_one_flagged(change, reason):
    e = {k: v.copy() for k, v in _curves(5).items()}
    i = int(np.flatnonzero((e["global_batch"] == 256) & (e["seed"] == 1))[3])
    for k, v in change.items():
        e[k][i] = v
    found = _find_eval(e)
    assert found.count == 1 and found.mask[i] and reason in found.reasons[0]


def test_for_a_loss_a_spike_downwards_is_the_optimistic_one():
    e = {k: v.copy() for k, v in _curves(6).items()}
    e["metric"] = 1.0 - e["metric"]  # a loss-like curve falling to ~0.05
    i = int(np.flatnonzero((e["global_batch"] == 64) & (e["seed"] == 0))[2])
    e["metric"][i] = 0.0
    found = _find_eval(e, goal="min")
    assert found.count == 1 and found.mask[i] and "below its neighbours" in found.reasons[0]


@pytest.mark.slow
def test_one_absurd_eval_record_leaves_the_plan_unchanged_and_is_reported(tmp_path):
    import cotune
    from cotune.examples import example_path

    lines = example_path("cifar10-resnet18").read_text().splitlines()
    ev = json.loads(next(line for line in lines if '"eval"' in line and '"global_batch": 256' in line))
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(lines + [json.dumps(dict(ev, epoch=0.01, metric=0.999))]) + "\n")
    kwargs = dict(target=0.94, deadline_s=1800, max_workers=16, gpus_per_host=4, prices={"t4": 0.526})
    clean = cotune.recommend("cifar10-resnet18", **kwargs)
    dirty = cotune.recommend(path, **kwargs)
    assert (dirty.chosen.workers, dirty.chosen.local_batch) == (clean.chosen.workers, clean.chosen.local_batch)
    assert dirty.chosen.time_s == pytest.approx(clean.chosen.time_s, rel=1e-6)
    assert any(n.startswith("eval: 1 of 601 records left out as an outlier") for n in dirty.notes), dirty.notes


@pytest.mark.parametrize(
    ("goal", "curve"),
    [
        ("min", lambda e: 1.0 + 6.0 * np.exp(-e / 4.0)),  # a loss from 7 to a long plateau near 1
        ("max", lambda e: 0.95 * (1.0 - np.exp(-e / 3.0))),  # an accuracy saturating early
    ],
)
def test_the_start_of_a_curve_with_a_long_plateau_is_not_an_outlier(goal, curve):
    # Evaluated every epoch for 100 epochs: the metric's IQR is the plateau's, and the
    # curve's own first values lie far outside any fence built on it.
    e = np.arange(1.0, 101.0)
    found = _find_eval({"global_batch": np.full(e.size, 256.0), "epoch": e, "metric": curve(e),
                        "seed": np.zeros(e.size)}, goal=goal)
    assert found.count == 0, found.reasons


def test_an_absurd_pessimistic_value_beyond_a_long_plateau_is_still_flagged():
    e = np.arange(1.0, 101.0)
    m = 1.0 + 6.0 * np.exp(-e / 4.0)
    m[40] = 1e6  # a loss written in the wrong unit
    found = _find_eval({"global_batch": np.full(e.size, 256.0), "epoch": e, "metric": m, "seed": np.zeros(e.size)}, goal="min")
    assert found.count == 1 and found.mask[40] and "far outside every other" in found.reasons[0]


def test_a_curve_that_peaks_at_its_first_evaluation_keeps_it():
    # A fine-tuning run best after its first epoch, then declining: its first evaluation is
    # the measurement that the target was reached, not a spike.
    e = np.arange(1.0, 21.0)
    m = 0.98 - 0.02 * (e - 1.0)
    found = _find_eval({"global_batch": np.full(e.size, 256.0), "epoch": e, "metric": m, "seed": np.zeros(e.size)})
    assert found.count == 0, found.reasons


def test_a_gpu_types_notes_reach_only_the_questions_that_search_it(tmp_path):
    # A profile with T4 and V100 probes, one absurd V100 record among them: a question about
    # T4s alone printed the V100 note too (Gavel's K80 departures under `--gpu t4`).
    import cotune
    from cotune.examples import example_path
    from cotune.models import fit_models
    from cotune.profile import read_profile

    lines = example_path("cifar10-resnet18").read_text().splitlines()
    steps = [json.loads(line) for line in lines if '"step"' in line]
    v100 = [dict(s, gpu="v100", step_time_s=s["step_time_s"] / 2, sync_time_s=None) for s in steps[:400]]
    v100.append(dict(v100[0], local_batch=10**12))
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(lines + [json.dumps(s) for s in v100]) + "\n")
    models = fit_models(read_profile(path), n_bootstrap=2)

    def about_v100(notes):
        return [n for n in notes if "v100 step: 1 of 401 records left out as an outlier" in n]

    assert about_v100(models.notes_for(["v100"])) and about_v100(models.notes_for())
    assert not about_v100(models.notes_for(["t4"])) and not about_v100(models.notes)
    kwargs = dict(target=0.94, deadline_s=1800, max_workers=16, gpus_per_host=4, prices={"t4": 0.526, "v100": 2.48})
    assert not about_v100(cotune.recommend(path, models=models, gpus=["t4"], **kwargs).notes)
    assert about_v100(cotune.recommend(path, models=models, **kwargs).notes)
