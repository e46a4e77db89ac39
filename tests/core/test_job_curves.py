"""A tracked job's evaluations in a profile: a run of their own, its first batch only."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cotune.examples import example_path
from cotune.models import curve_columns, fit_models
from cotune.profile import EvalRecord, read_profile


@pytest.fixture(scope="module")
def probes():
    return read_profile(example_path("cifar10-resnet18"))


def _job(batch: int, epochs, metric, *, job: str = "run1") -> list[EvalRecord]:
    return [EvalRecord(global_batch=batch, epoch=float(e), metric=float(m), job=job) for e, m in zip(epochs, metric)]


def test_a_job_curve_at_a_probed_batch_and_seed_is_a_run_of_its_own(probes):
    batch = sorted({e.global_batch for e in probes.evals})[1]
    job = _job(batch, [1, 2, 3], [0.1, 0.2, 0.3])
    cols, notes = curve_columns(dataclasses.replace(probes, evals=probes.evals + tuple(job)))
    at = cols["global_batch"] == batch
    probe_seeds = {int(e.seed) for e in probes.evals if e.global_batch == batch}
    job_seeds = set(cols["seed"][at].tolist()) - probe_seeds
    assert len(job_seeds) == 1 and not notes
    assert np.count_nonzero(at & np.isin(cols["seed"], list(job_seeds))) == 3


def test_a_fast_job_curve_is_pooled_as_a_second_run_not_merged_into_the_probe_curve(probes):
    # Interleaved with the probe curve as one run (same batch, same seed), the best-so-far
    # of the merge would cross the target when the faster of the two does; as runs of
    # their own the batch's epochs lie between the two crossings.
    batch = sorted({e.global_batch for e in probes.evals})[1]
    alone = fit_models(probes, n_bootstrap=0).accuracy
    top = max(e.metric for e in probes.evals if e.global_batch == batch)
    target = 0.95 * top
    i = int(np.flatnonzero(alone.measured_epochs(target)["batches"] == batch)[0])
    probe_epochs = float(alone.measured_epochs(target)["epochs"][i])
    fast = probe_epochs / 2
    job = _job(batch, [fast / 2, fast, 2 * fast], [0.5 * target, target, top])
    both = fit_models(dataclasses.replace(probes, evals=probes.evals + tuple(job)), n_bootstrap=0).accuracy
    pooled = float(both.measured_epochs(target)["epochs"][i])
    assert fast * 1.05 < pooled <= probe_epochs * 1.001


def test_evaluations_after_a_batch_change_are_left_out_with_a_note(probes):
    batches = sorted({e.global_batch for e in probes.evals})
    job = _job(batches[0], [1, 2, 3], [0.2, 0.3, 0.4]) + _job(batches[1], [4, 5], [0.5, 0.6])
    cols, notes = curve_columns(dataclasses.replace(probes, evals=probes.evals + tuple(job)))
    assert len(cols["epoch"]) == len(probes.evals) + 3
    assert len(notes) == 1 and "run1" in notes[0] and f"{batches[0]} -> {batches[1]}" in notes[0]
    models = fit_models(dataclasses.replace(probes, evals=probes.evals + tuple(job)), n_bootstrap=0)
    assert any("after its change of global batch" in n for n in models.notes)


def test_a_profile_read_twice_keeps_its_chance_of_reaching_the_target(probes):
    # The format lets the workload record repeat, so a profile concatenated with itself is
    # valid: every eval record then appears twice. Read as one measurement each, the chance
    # at every measured batch is the one of the profile read once (before, the zero
    # differences between the copies inflated the evaluation noise and lowered it).
    once = fit_models(probes, n_bootstrap=0).accuracy
    twice = fit_models(dataclasses.replace(probes, evals=probes.evals + probes.evals), n_bootstrap=0).accuracy
    top = max(e.metric for e in probes.evals)
    for target in (0.9 * top, 0.97 * top):
        assert np.allclose(twice.measured_epochs(target)["p_reach"], once.measured_epochs(target)["p_reach"])



def test_exact_repeats_of_eval_records_are_counted_once_and_other_metrics_at_one_epoch_kept(probes):
    # Five exact repeats are one measurement each; a record at the same epoch with another
    # metric is another measurement and stays.
    e = probes.evals[0]
    other = dataclasses.replace(e, metric=e.metric + 0.01)
    cols, notes = curve_columns(dataclasses.replace(probes, evals=probes.evals + probes.evals[:5] + (other,)))
    assert len(cols["epoch"]) == len(probes.evals) + 1
    assert len(notes) == 1 and "5 of" in notes[0] and "counted once" in notes[0]
