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
    done = max(e.epoch for e in read_profile(path).evals)  # the same job, resumed where it stopped
    with Tracker(path, gpu="cpu", workers=4, local_batch=32, window=4, warmup_steps=0, epochs_done=done) as tr:
        for workers in (2, 4, 2):  # 2 -> 4 -> 2 -> 4 -> 2 in all: three returns
            tr.reconfigure(workers=workers)
            for _ in range(8):
                tr.step(step_time_s=0.03)
        tr.eval(metric=0.9)
    assert job_progress(read_profile(path)).returns == 3


def test_a_return_after_a_revocation_is_recovery_and_not_counted(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    with Tracker(path, gpu="cpu", workers=8, local_batch=32, window=4, warmup_steps=0, market="spot", workload=WL) as tr:
        for workers, cause in ((8, None), (6, "revocation"), (8, "replan"), (6, "replan"), (8, "replan")):
            if cause is not None:
                tr.reconfigure(workers=workers, cause=cause)
            for _ in range(8):
                tr.step(step_time_s=0.03)
        tr.eval(metric=0.9)
    profile = read_profile(path)
    # the cause is written once, on the first window at the new configuration
    assert [(s.workers, s.cause) for s in profile.steps] == [
        (8, None), (8, None), (6, "revocation"), (6, None), (8, "replan"), (8, None), (6, "replan"), (6, None),
        (8, "replan"), (8, None)]
    # 8 -> 6 (revoked) -> 8 is recovery; back to 6 and to 8 by choice afterwards are two returns
    assert job_progress(profile).returns == 2


def test_two_moves_without_a_record_between_keep_the_revocation(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    with Tracker(path, gpu="cpu", workers=8, local_batch=32, window=4, warmup_steps=0, workload=WL) as tr:
        for _ in range(4):
            tr.step(step_time_s=0.03)
        tr.reconfigure(workers=6, cause="revocation")  # revoked, and no step ran before ...
        tr.reconfigure(workers=7)  # ... the planner moved on to 7
        for _ in range(4):
            tr.step(step_time_s=0.03)
    assert [(s.workers, s.cause) for s in read_profile(path).steps] == [(8, None), (7, "revocation")]


def test_a_resumed_tracker_writes_the_cause_it_was_given(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    with Tracker(path, gpu="cpu", workers=8, local_batch=32, window=4, warmup_steps=0, workload=WL) as tr:
        for _ in range(4):
            tr.step(step_time_s=0.03)
    with Tracker(path, gpu="cpu", workers=6, local_batch=32, window=4, warmup_steps=0, cause="revocation") as tr:
        for _ in range(8):
            tr.step(step_time_s=0.03)
    assert [(s.workers, s.cause) for s in read_profile(path).steps] == [(8, None), (6, "revocation"), (6, None)]


@pytest.mark.parametrize("cause", ["revoked", "", None, 3])
def test_a_move_cause_outside_the_known_ones_is_refused(tmp_path: Path, cause) -> None:
    with Tracker(tmp_path / "p.jsonl", gpu="cpu", workers=8, local_batch=32, workload=WL) as tr:
        with pytest.raises(InputError, match="cause must be one of 'replan', 'revocation'"):
            tr.reconfigure(workers=6, cause=cause)


def _job_evals(tmp_path: Path, points: list[tuple[float, float, float]], *, goal: str = "max"):
    """A profile holding one tracked job's evaluations ``(epoch, metric, elapsed_s)``, in order."""
    from cotune.profile import append_records

    path = tmp_path / "job.jsonl"
    append_records(path, [WorkloadRecord(name="job-a", dataset_size=640, goal=goal),
                          StepRecord(gpu="cpu", workers=2, local_batch=32, step_time_s=0.5, job="j")]
                   + [EvalRecord(global_batch=64, epoch=e, metric=m, job="j", elapsed_s=t) for e, m, t in points])
    return read_profile(path)


def test_a_restarted_tracker_does_not_take_the_jobs_elapsed_time_back(tmp_path: Path) -> None:
    # A second process under the same job, not told how far it had come, writes small
    # elapsed_s: the last written (117 s) was read as the job's time after 15 epochs.
    p = job_progress(_job_evals(tmp_path, [(14.0, 0.80, 840.0), (15.0, 0.82, 900.0), (1.0, 0.40, 60.0), (2.0, 0.5, 117.0)]))
    assert p.elapsed_s == 900.0 and p.epochs_done == 15.0


def test_a_minimised_metric_that_collapsed_counts_progress_to_its_best_evaluation(tmp_path: Path) -> None:
    # A loss back above its start read as more progress (61 % -> 83 %): the epochs after its
    # best evaluation are the collapse, not work done.
    p = job_progress(_job_evals(tmp_path, [(1.0, 22.0, 60.0), (2.0, 17.0, 120.0), (3.0, 15.0, 180.0),
                                           (4.0, 46.0, 240.0), (5.0, 122.0, 300.0)], goal="min"))
    assert p.epochs_done == 3.0
    assert p.setback is not None and (p.setback.kind, p.setback.resume_epoch, p.setback.best_metric) == ("collapsed", 3.0, 15.0)


def test_evaluation_noise_of_a_few_percent_of_the_rise_is_no_collapse(tmp_path: Path) -> None:
    p = job_progress(_job_evals(tmp_path, [(1.0, 0.40, 60.0), (2.0, 0.70, 120.0), (3.0, 0.80, 180.0), (4.0, 0.78, 240.0)]))
    assert p.setback is None and p.epochs_done == 4.0


def test_an_early_plateau_wobbling_far_from_the_target_is_no_collapse(tmp_path: Path) -> None:
    # A loss of 2.30, 2.25, 2.31, 2.32 has "lost" more than all of a 0.05 rise: noise before
    # the job starts to learn, 3 % of the way to a 0.5 target, not a collapse to restart from.
    profile = _job_evals(tmp_path, [(1.0, 2.30, 60.0), (2.0, 2.25, 120.0), (3.0, 2.31, 180.0), (4.0, 2.32, 240.0)],
                         goal="min")
    p = job_progress(profile, target=0.5)
    assert p.setback is None and p.epochs_done == 4.0
    # Far enough along (the same shape, most of the way to a 2.2 target), it is one.
    assert job_progress(profile, target=2.2).setback is not None


@pytest.mark.parametrize("metrics", [
    (41.98, 51.78, 59.68, 64.11, 48.61),  # DAWNBench kakaobrain ResNet-9 (it went on to 94 %)
    (0.060, 0.219, 0.353, 0.146),  # MLPerf ResNet-50 v3.0 NVIDIA dgxh100_n96 run 0 (it went on to 0.761)
])
def test_a_single_evaluation_dip_of_a_healthy_run_is_no_collapse(tmp_path: Path, metrics) -> None:
    # Each lost more than half of its curve's rise at one evaluation and recovered at the next:
    # read as a collapse, staying was written off and the job told to restart from its best.
    profile = _job_evals(tmp_path, [(float(i + 1), m, 60.0 * (i + 1)) for i, m in enumerate(metrics)])
    p = job_progress(profile, target=metrics[0] + 1.3 * (max(metrics) - metrics[0]))
    assert p.setback is None and p.epochs_done == float(len(metrics))


def test_the_default_job_is_the_job_of_the_last_record_in_the_file(tmp_path: Path) -> None:
    # A finished job 'run1' with an evaluation, then a new job 'run2' with steps only: the
    # default read 'run1' (the last job with an evaluation), so replan decided for it.
    path = tmp_path / "p.jsonl"
    with Tracker(path, gpu="cpu", workers=2, local_batch=32, workload=WL, job="run1", window=4, warmup_steps=0) as tr:
        for _ in range(10):
            tr.step(step_time_s=0.02)
        tr.eval(metric=0.5)
    with Tracker(path, gpu="cpu", workers=4, local_batch=16, job="run2", window=4, warmup_steps=0) as tr:
        for _ in range(8):
            tr.step(step_time_s=0.03)
    p = job_progress(read_profile(path))
    assert (p.job, p.workers, p.local_batch) == ("run2", 4, 16)


def test_records_whose_latest_eval_ran_at_a_batch_no_step_ran_at_are_refused_for_the_configuration(
        tmp_path: Path) -> None:
    # An earlier tracker wrote a checkpoint's evaluation at a new configuration before any
    # step there: the last step named the old one as current, and replan invented a move.
    from cotune._checks import BadValue
    from cotune.profile import append_records
    from cotune.track import progress_from_records

    path = tmp_path / "p.jsonl"
    append_records(path, [WL, StepRecord(gpu="cpu", workers=4, local_batch=32, step_time_s=0.5, job="run1"),
                          EvalRecord(global_batch=128, epoch=1.0, metric=0.5, job="run1", elapsed_s=60.0),
                          EvalRecord(global_batch=64, epoch=1.0, metric=0.5, job="run1", elapsed_s=70.0)])
    profile = read_profile(path)
    with pytest.raises(BadValue, match="latest evaluation of job 'run1' ran at global batch 64.*--current") as err:
        job_progress(profile)
    assert err.value.where == "/progress/workers"
    with pytest.raises(BadValue, match="global batch 64"):
        progress_from_records(profile)
    given = progress_from_records(profile, gpu="cpu", market="on_demand", workers=2, local_batch=32)
    assert (given.workers, given.epochs_done) == (2, 1.0)  # told where it runs, the records are no obstacle


def test_records_whose_latest_eval_ran_at_an_unrecorded_batch_stand_when_only_the_market_is_left_out(
        tmp_path: Path) -> None:
    # --current GPU:WORKERS:LOCAL_BATCH (and HTTP or Python progress without market) was
    # refused with "give --current": the market left out counted as the configuration
    # read from the records, before the default market was even applied.
    from cotune.profile import append_records
    from cotune.track import progress_from_records

    path = tmp_path / "p.jsonl"
    append_records(path, [WL, StepRecord(gpu="cpu", workers=4, local_batch=32, step_time_s=0.5, job="run1"),
                          EvalRecord(global_batch=128, epoch=1.0, metric=0.5, job="run1", elapsed_s=60.0),
                          EvalRecord(global_batch=64, epoch=1.0, metric=0.5, job="run1", elapsed_s=70.0)])
    given = progress_from_records(read_profile(path), default_market="on_demand", gpu="cpu", workers=2, local_batch=32)
    assert (given.market, given.workers, given.local_batch, given.epochs_done) == ("on_demand", 2, 32, 1.0)
