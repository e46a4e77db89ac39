"""Reading a job's progress back from its tagged records."""

from __future__ import annotations

from pathlib import Path

import pytest

from cotune.errors import InputError
from cotune.profile import EvalRecord, StepRecord, WorkloadRecord, read_profile
from cotune.track import Tracker, job_progress, offline_profile

WL = WorkloadRecord(name="job-a", dataset_size=640)


def _profile(tmp_path: Path):
    path = tmp_path / "p.jsonl"
    from cotune.profile import append_records

    append_records(path, [WL, StepRecord(gpu="cpu", workers=1, local_batch=32, step_time_s=0.5),
                          EvalRecord(global_batch=64, epoch=1.0, metric=0.1)])
    with Tracker(path, gpu="cpu", workers=2, local_batch=32, window=4, warmup_steps=0) as tr:
        for epoch in range(3):
            for _ in range(10):
                tr.step(step_time_s=0.02 + 0.01 * epoch)
            tr.eval(metric=0.5 + 0.1 * epoch)
        tr.reconfigure(workers=4)
        for _ in range(8):
            tr.step(step_time_s=0.03)
        tr.eval(metric=0.85)
    return read_profile(path)


def test_progress_reads_the_latest_configuration_and_the_curve_at_its_batch(tmp_path: Path) -> None:
    p = job_progress(_profile(tmp_path))
    assert (p.job, p.gpu, p.workers, p.local_batch, p.global_batch) == ("job-a", "cpu", 4, 32, 128)
    assert p.curve_metric == (0.85,) and p.epochs_done == pytest.approx(3.0 + 8 * 128 / 640)
    assert p.step_time_s == pytest.approx(0.03) and p.step_windows == 2 and p.elapsed_s is not None


def test_offline_profile_drops_the_job_records_only(tmp_path: Path) -> None:
    off = offline_profile(_profile(tmp_path))
    assert len(off.steps) == 1 and len(off.evals) == 1 and off.evals[0].job is None


def test_a_profile_without_job_records_has_no_progress(tmp_path: Path) -> None:
    assert job_progress(offline_profile(_profile(tmp_path))) is None


def test_an_unknown_job_name_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="has 'job-a': pick one"):
        job_progress(_profile(tmp_path), job="job-b")


def test_progress_keeps_the_configuration_the_job_started_at(tmp_path: Path) -> None:
    p = job_progress(_profile(tmp_path))
    assert p.first_step is not None and p.first_step.job == "job-a"
    assert (p.first_step.workers, p.first_step.local_batch) == (2, 32)  # before the reconfigure to 4 workers


def test_progress_counts_the_moves_back_to_a_configuration_the_job_had_left(tmp_path: Path) -> None:
    assert job_progress(_profile(tmp_path)).returns == 0  # 2 -> 4 workers: no return
    path = tmp_path / "p.jsonl"
    with Tracker(path, gpu="cpu", workers=4, local_batch=32, window=4, warmup_steps=0) as tr:
        for workers in (2, 4, 2):  # 2 -> 4 -> 2 -> 4 -> 2 in all: three returns
            tr.reconfigure(workers=workers)
            for _ in range(8):
                tr.step(step_time_s=0.03)
        tr.eval(metric=0.9)
    assert job_progress(read_profile(path)).returns == 3
