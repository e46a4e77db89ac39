"""The accuracy model's per-batch evidence, read in one pass over every run, is the batch-by-batch
answer: on profiles of many batches, exactly (tests/_evidence_oracle.py is that loop)."""

import pickle

import numpy as np
import pytest
from _evidence_oracle import batch_evidence_loop
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune.models import AccuracyModel
from cotune.models._accuracy import _OUTLIER_MAD, _eval_noise, _nearest_distance, _off_neighbours, batch_evidence, runs_from_evals

FIELDS = ("epochs", "log_sigma", "p_reach", "plateau_sigma", "n_runs", "n_reached", "horizon", "margin", "censored",
          "margin_beyond")


def _messy(seed: int, n_batches: int):
    """Eval columns of ``n_batches`` batches with 1–5 runs each of 1–30 evaluations: runs cut
    short, runs stopped at a level, repeated epochs, diverged evaluations, off-recipe batches."""
    rng = np.random.default_rng(seed)
    gb, ep, me, sd = [], [], [], []
    for b in np.unique(np.round(np.geomspace(32, 32 * 2**8, n_batches))):
        off = rng.random() < 0.1
        for s in range(int(rng.integers(1, 6))):
            k = int(rng.choice([1, 2, 4, 10, 30]))
            e = np.arange(1, k + 1) * 1.5 if rng.random() < 0.7 else np.sort(rng.uniform(0.5, 40, k))
            if k > 2 and rng.random() < 0.1:
                e[1] = e[0]
            top = 0.9 - (0.3 if off else 0.0) - 0.04 * np.log2(b / 32) / 8
            m = top * (1 - np.exp(-e / (6 * (1 + b / 2000)))) + rng.normal(0, 0.008, k)
            if rng.random() < 0.05:
                m[rng.integers(k)] = np.nan
            if rng.random() < 0.2 and (m >= 0.7).any():
                stop = int(np.flatnonzero(m >= 0.7)[0]) + 1
                e, m = e[:stop], m[:stop]
            gb += [b] * e.size
            ep += e.tolist()
            me += m.tolist()
            sd += [s] * e.size
    return np.array(gb, float), np.array(ep, float), np.array(me, float), np.array(sd)


def _equal(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b)) if a.dtype.kind == "f" else a == b))


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 10**6))
def test_batch_evidence_of_a_many_batch_profile_is_the_batch_by_batch_loops(seed):
    gb, ep, me, sd = _messy(seed, 30)
    runs = runs_from_evals(gb, ep, me, sd)
    for threshold in (0.2, 0.6, 0.8, 0.95):
        for noise, floor in ((0.006, 0.006), (0.0, 0.002), (0.02, 0.0)):
            got = batch_evidence(runs, threshold, eval_noise=noise, plateau_floor=floor)
            want = batch_evidence_loop(runs, threshold, eval_noise=noise, plateau_floor=floor)
            for f in FIELDS:
                assert _equal(getattr(got, f), want[f]), (threshold, noise, floor, f)


def test_a_batchs_evidence_does_not_depend_on_the_other_batches():
    gb, ep, me, sd = _messy(3, 200)
    runs = runs_from_evals(gb, ep, me, sd)
    together = batch_evidence(runs, 0.7, eval_noise=0.006, plateau_floor=0.006)
    for i, b in enumerate(together.batches):
        alone = batch_evidence([r for r in runs if r.global_batch == b], 0.7, eval_noise=0.006, plateau_floor=0.006)
        for f in FIELDS:
            if f != "censored":  # censored compares a batch's horizon with the longest of all
                assert _equal(getattr(alone, f)[0], getattr(together, f)[i]), (b, f)


def test_a_fitted_models_measured_epochs_are_the_batch_by_batch_loops():
    m = AccuracyModel().fit(*_messy(5, 60))
    for target in (0.5, 0.75, 0.85):
        want = batch_evidence_loop(m.runs_, target, eval_noise=m.eval_noise_, plateau_floor=m.residual_sigma_)
        got = m.measured_epochs(target)
        assert _equal(got["p_reach"], want["p_reach"])
        assert _equal(got["epochs"], np.where(np.isfinite(want["epochs"]) & (want["p_reach"] >= 0.5), want["epochs"], np.inf))


def test_a_model_pickled_without_its_run_table_rebuilds_the_same_one():
    m = AccuracyModel().fit(*_messy(7, 30))
    state = m.__getstate__()
    state.pop("_table")
    old = AccuracyModel.__new__(AccuracyModel)
    old.__setstate__(pickle.loads(pickle.dumps(state)))
    q = np.geomspace(16, 2**14, 25)
    for target in (0.6, 0.8):
        a, b = m.epochs_to_target(q, target), old.epochs_to_target(q, target)
        assert _equal(a.epochs_if_reached, b.epochs_if_reached) and _equal(a.p_reach, b.p_reach)


def test_metric_at_many_queries_at_once_is_each_query_alone():
    m = AccuracyModel().fit(*_messy(11, 25))
    gb = np.geomspace(8, 2**15, 17)[:, None]
    ep = np.geomspace(0.1, 80, 9)[None, :]
    together = m.metric_at(gb, ep)
    alone = np.array([[m.metric_at(np.array([g]), np.array([e]))[0] for e in ep[0]] for g in gb[:, 0]])
    assert _equal(together, alone)


@pytest.mark.parametrize("seed", range(20))
def test_off_neighbours_flags_by_the_median_of_the_other_steps(seed):
    rng = np.random.default_rng(seed)
    plateaus = np.round(rng.normal(0.9, 0.02, int(rng.integers(0, 30))), int(rng.integers(1, 4)))
    noise = float(rng.uniform(0, 0.02))
    steps = np.abs(np.diff(plateaus))
    want = np.zeros(plateaus.size, bool)
    for j in range(1, plateaus.size - 1):
        others = np.delete(steps, [j - 1, j])
        if others.size:
            depth = abs(plateaus[j] - np.median(plateaus[j - 1 : j + 2]))
            want[j] = depth > _OUTLIER_MAD * max(1.4826 * np.median(others), noise)
    assert np.array_equal(_off_neighbours(plateaus, noise=noise), want)


def test_nearest_distance_is_the_least_distance_to_any_batch():
    rng = np.random.default_rng(0)
    xs = rng.uniform(1, 5000, 300)
    q = rng.uniform(0.5, 9000, 1000)
    q[:50] = xs[:50]
    want = np.min(np.abs(np.log2(q)[:, None] - np.log2(xs)[None, :]), axis=1)
    assert np.array_equal(_nearest_distance(q, xs), want)


def test_eval_noise_is_the_median_over_runs_of_their_late_difference_spread():
    gb, ep, me, sd = _messy(13, 60)
    per_run = []
    for b, s in sorted(set(zip(gb.tolist(), sd.tolist()))):
        sel = (gb == b) & (sd == s) & (ep > 0)
        fin = me[sel][np.argsort(ep[sel], kind="stable")]
        fin = fin[np.isfinite(fin)]
        if fin.size >= 6:
            tail = np.diff(fin[fin.size // 2 :])
            per_run.append(1.4826 * np.median(np.abs(tail - np.median(tail))) / np.sqrt(2.0))
    assert per_run and _eval_noise(gb, ep, me, sd) == np.median(per_run)
