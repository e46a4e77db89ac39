"""The tracker: window medians, configuration tags, epochs counted from steps, kill-safety."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from cotune.errors import InputError
from cotune.profile import WorkloadRecord, read_profile
from cotune.track import Tracker, window_summary

WORKLOAD = WorkloadRecord(name="job-a", dataset_size=1000, metric="acc", goal="max")


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_step_record_is_the_median_of_a_window(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="CPU", workers=2, local_batch=16, workload=WORKLOAD, window=5, warmup_steps=0) as tr:
        for t in (0.10, 0.11, 0.50, 0.09, 0.12):  # one stalled step
            tr.step(step_time_s=t)
    steps = read_profile(path).steps
    assert len(steps) == 1
    assert steps[0].step_time_s == pytest.approx(0.11)
    assert steps[0].timed_steps == 5 and steps[0].gpu == "cpu" and steps[0].workers == 2 and steps[0].job == "job-a"


def test_warmup_steps_are_left_out(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, window=3, warmup_steps=2) as tr:
        for t in (9.0, 9.0, 0.2, 0.2, 0.2):
            tr.step(step_time_s=t)
    assert [s.step_time_s for s in read_profile(path).steps] == [0.2]


def test_a_slow_loop_still_writes_after_flush_every_s(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "job.jsonl"
    tr = Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, window=1000, flush_every_s=30,
                 warmup_steps=0, clock=clock)
    for _ in range(3):
        clock.now += 20.0
        tr.step(step_time_s=20.0)
    assert [s.timed_steps for s in read_profile(path).steps] == [2]  # written at 40 s > 30 s
    tr.close()
    assert [s.timed_steps for s in read_profile(path).steps] == [2, 1]


def test_eval_epoch_counts_samples_of_the_steps(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="cpu", workers=2, local_batch=25, workload=WORKLOAD, epochs_done=1.0, clock=clock) as tr:
        for _ in range(30):  # 30 x 50 samples = 1.5 epochs of 1000
            tr.step(step_time_s=0.01)
        clock.now = 12.5
        rec = tr.eval(metric=0.8)
    assert rec.epoch == pytest.approx(2.5) and rec.global_batch == 50 and rec.elapsed_s == 12.5
    (ev,) = read_profile(path).evals
    assert ev == rec


def test_reconfigure_tags_later_records_with_the_new_configuration(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="cpu", workers=4, local_batch=32, workload=WORKLOAD, window=2, warmup_steps=0) as tr:
        tr.step(step_time_s=0.2)
        tr.eval(metric=0.5)
        tr.reconfigure(workers=2, market="spot")
        tr.step(step_time_s=0.3)
        tr.step(step_time_s=0.3)
        tr.eval(metric=0.6)
    p = read_profile(path)
    assert [(s.workers, s.market, s.timed_steps) for s in p.steps] == [(4, "on_demand", 1), (2, "spot", 2)]
    assert [e.global_batch for e in p.evals] == [128, 64]


def test_noise_record_is_tagged_with_the_job_and_batch(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="cpu", workers=1, local_batch=64, workload=WORKLOAD, job="run-7") as tr:
        tr.noise(b_noise=900.0, epoch=3.0)
    (n,) = read_profile(path).noise
    assert (n.b_noise, n.global_batch, n.epoch, n.job) == (900.0, 64, 3.0, "run-7")


def test_ranks_other_than_zero_write_nothing(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="cpu", workers=2, local_batch=8, workload=WORKLOAD, rank=1, window=1, warmup_steps=0) as tr:
        tr.step(step_time_s=0.1)
        assert tr.eval(metric=0.5) is None
    assert not path.exists()


def test_appends_to_an_existing_profile_without_repeating_its_workload(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    path.write_text(json.dumps({"record": "workload", "name": "job-a", "dataset_size": 1000}) + "\n"
                    + json.dumps({"record": "eval", "global_batch": 32, "epoch": 1, "metric": 0.3}) + "\n")
    with Tracker(path, gpu="cpu", workers=1, local_batch=32) as tr:
        tr.eval(metric=0.4, epoch=1.0)
    kinds = [d["record"] for d in _lines(path)]
    assert kinds == ["workload", "eval", "eval"]
    assert [e.job for e in read_profile(path).evals] == [None, "job-a"]


def test_a_new_profile_without_a_workload_is_an_error_that_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="pass workload="):
        Tracker(tmp_path / "new.jsonl", gpu="cpu", workers=1, local_batch=8)


def test_a_directory_as_the_profile_is_named_not_an_os_error(tmp_path: Path) -> None:
    from cotune.errors import CotuneError

    with pytest.raises(CotuneError, match="is a directory, not a profile file"):  # was IsADirectoryError from open()
        Tracker(tmp_path, workload=WORKLOAD, gpu="cpu", workers=1, local_batch=8)


def test_another_workload_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD).close()
    with pytest.raises(InputError, match="holds workload 'job-a'"):
        Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WorkloadRecord(name="other", dataset_size=5))


@pytest.mark.parametrize("kwargs, match", [
    ({"workers": 0}, "workers: must be"), ({"local_batch": 2.5}, "local_batch: must be"),
    ({"hosts": 3, "workers": 2}, "cannot exceed"), ({"market": "mixed"}, "market must be"),
    ({"window": 0}, "window: must be"),
])
def test_bad_configuration_is_one_input_error(tmp_path: Path, kwargs: dict, match: str) -> None:
    args = {"gpu": "cpu", "workers": 1, "local_batch": 8, "workload": WORKLOAD} | kwargs
    with pytest.raises(InputError, match=match):
        Tracker(tmp_path / "x.jsonl", **args)


def test_non_positive_step_time_is_rejected(tmp_path: Path) -> None:
    with Tracker(tmp_path / "x.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0) as tr:
        with pytest.raises(InputError, match="step_time_s: must be"):
            tr.step(step_time_s=0.0)


def test_a_step_time_the_profile_would_refuse_is_refused_when_tracked(tmp_path: Path) -> None:
    # The tracker's floor is the profile reader's: it never writes a record that cannot be read back.
    with Tracker(tmp_path / "x.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0) as tr:
        with pytest.raises(InputError, match=">= 1e-06"):
            tr.step(step_time_s=1e-9)


@given(st.lists(st.floats(min_value=1e-6, max_value=1e3), min_size=1, max_size=60))
def test_window_median_lies_within_the_window_and_spread_is_non_negative(times: list[float]) -> None:
    median, spread = window_summary(times)
    assert min(times) <= median <= max(times)
    assert 0.0 <= spread <= max(times) - min(times) + 1e-9


CHILD = textwrap.dedent("""
    import sys
    from cotune.profile import WorkloadRecord
    from cotune.track import Tracker
    tr = Tracker(sys.argv[1], gpu="cpu", workers=1, local_batch=10,
                 workload=WorkloadRecord(name="killed", dataset_size=100), window=3, warmup_steps=0)
    i = 0
    while True:  # until killed
        i += 1
        tr.step(step_time_s=0.001 * i)
        if i % 4 == 0:
            tr.eval(metric=i / 1e6)
        print(tr.records_written, flush=True)
""")


def test_kill_9_loses_no_record_the_tracker_had_written(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE, text=True, env=env)
    reported = 0
    deadline = time.monotonic() + 120
    try:
        while reported < 40 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            reported = int(line)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    assert reported >= 40, "the child stopped before writing 40 records"
    profile = read_profile(path)  # a torn last line (a kill mid-write) is skipped, never an error
    written = 1 + len(profile.steps) + len(profile.evals)
    assert written >= reported
    # the records are the ones the loop produced, in order: evals at i = 4, 8, 12, ...
    assert [round(e.metric * 1e6) for e in profile.evals] == [4 * k for k in range(1, len(profile.evals) + 1)]
    # and a resumed job appends after them
    with Tracker(path, gpu="cpu", workers=1, local_batch=10, epochs_done=profile.evals[-1].epoch) as tr:
        tr.eval(metric=1.0, epoch=99.0)
    assert read_profile(path).evals[-1].epoch == 99.0 and not read_profile(path).warnings


HOSTILE = [10**400, -(10**400), "x", [1], {"a": 1}, True, float("nan"), float("inf"), 10**30]  # None is a default


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
@pytest.mark.parametrize("call", ["step_time_s", "epoch", "b_noise", "grad_sqr"])
def test_hostile_numbers_at_a_call_are_an_input_error(tmp_path: Path, call: str, value: object) -> None:
    if call == "grad_sqr" and value == 10**30:
        value = 10**101  # gradient statistics may reach 1e100 (sums over every parameter; only their ratio is used)
    t = Tracker(tmp_path / "p.jsonl", gpu="t4", workers=2, local_batch=32, workload=WORKLOAD, warmup_steps=0)
    with pytest.raises(InputError) as err:
        if call == "step_time_s":
            t.step(step_time_s=value)
        elif call == "epoch":
            t.eval(metric=0.5, epoch=value)
        elif call == "b_noise":
            t.noise(b_noise=value)
        else:
            t.eval(metric=0.5, grad_sqr=value)
    assert "\n" not in str(err.value) and len(str(err.value)) < 300
    t.close()


@pytest.mark.parametrize("value", [10**400, 10**30, "0.5", None, [0.5]], ids=repr)
def test_hostile_metrics_are_an_input_error_but_nan_is_a_diverged_run(tmp_path: Path, value: object) -> None:
    t = Tracker(tmp_path / "p.jsonl", gpu="t4", workers=2, local_batch=32, workload=WORKLOAD)
    with pytest.raises(InputError):
        t.eval(metric=value, epoch=1.0)
    assert t.eval(metric=float("nan"), epoch=1.0) is not None
    t.close()


def test_a_metric_held_in_a_0d_array_or_tensor_is_its_number(tmp_path: Path) -> None:
    # A loop's accuracy is a reduction: np.mean(...) or (pred == y).float().mean(), a 0-d
    # tensor. step_time_s took one; eval(metric=...) refused it.
    import numpy as np

    torch = pytest.importorskip("torch")
    path = tmp_path / "p.jsonl"
    with Tracker(path, gpu="t4", workers=2, local_batch=32, workload=WORKLOAD, fsync="none") as t:
        t.eval(metric=np.array(0.25), epoch=1.0)
        t.eval(metric=torch.tensor(0.5), epoch=2.0)
        with pytest.raises(InputError):
            t.eval(metric=np.array([0.75]), epoch=3.0)  # one value, but not a scalar: which one is meant?
    assert [e.metric for e in read_profile(path).evals] == [0.25, 0.5]


@pytest.mark.parametrize("name", ["workers", "local_batch", "window", "flush_every_s", "epochs_done"])
@pytest.mark.parametrize("value", [10**400, 10**30, "2", 2.5, -1, True], ids=repr)
def test_hostile_configuration_is_an_input_error(tmp_path: Path, name: str, value: object) -> None:
    if name in ("flush_every_s", "epochs_done") and value == 2.5:
        return  # a valid value for these
    kw = {"gpu": "t4", "workers": 2, "local_batch": 32, "workload": WORKLOAD, name: value}
    with pytest.raises(InputError):
        Tracker(tmp_path / "p.jsonl", **kw)


def test_the_schedule_end_is_written_with_every_evaluation(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    with Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, schedule_epochs=90) as tr:
        tr.eval(metric=0.5, epoch=1.0)
        tr.schedule_epochs = 120  # a schedule lengthened while the job runs
        tr.eval(metric=0.6, epoch=2.0)
    assert [e.schedule_epochs for e in read_profile(path).evals] == [90, 120]
    with Tracker(path, gpu="cpu", workers=1, local_batch=8, epochs_done=2.0) as tr:
        tr.eval(metric=0.7, epoch=3.0)
    assert read_profile(path).evals[-1].schedule_epochs is None and "schedule_epochs" not in _lines(path)[-1]


@pytest.mark.parametrize("value", [0, -5, float("nan"), float("inf"), "90", True])
def test_a_schedule_end_that_is_not_a_positive_number_is_an_input_error(tmp_path: Path, value: object) -> None:
    with pytest.raises(InputError, match="schedule_epochs: must be"):
        Tracker(tmp_path / "x.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, schedule_epochs=value)


# -- fault injection (2026-12-04): what the tracker writes, every reader must read ----------------
@pytest.mark.parametrize("job", [5, "", "   ", 1.5, ["l"], "x" * 100_000, "run\n2"])
def test_a_job_name_the_reader_would_refuse_is_refused_before_anything_is_written(tmp_path: Path, job: object) -> None:
    path = tmp_path / "job.jsonl"
    with pytest.raises(InputError, match="job must be a non-empty one-line name of at most 200 characters"):
        Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, job=job)
    assert not path.exists()


@pytest.mark.parametrize(("rank", "writes"), [("0", True), (" 0 ", True), ("1", False), (0, True), (3, False)])
def test_a_rank_read_from_the_environment_as_text_counts(tmp_path: Path, rank: object, writes: bool) -> None:
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, rank=rank, warmup_steps=0, window=2) as tr:
        tr.step(step_time_s=0.1)
        tr.step(step_time_s=0.1)
    assert path.exists() == writes


@pytest.mark.parametrize("rank", [None, -1, True, "one", 1.0])
def test_a_rank_that_is_no_rank_is_an_input_error_not_silence(tmp_path: Path, rank: object) -> None:
    with pytest.raises(InputError, match="rank must be a whole number >= 0"):
        Tracker(tmp_path / "job.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, rank=rank)


def test_bad_names_and_workloads_are_input_errors_not_attribute_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="workload must be a cotune.profile.WorkloadRecord"):
        Tracker(tmp_path / "a.jsonl", gpu="cpu", workers=1, local_batch=8, workload="notarecord")  # type: ignore[arg-type]
    with Tracker(tmp_path / "b.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD) as tr:
        with pytest.raises(InputError, match="gpu must be a non-empty one-line name"):
            tr.reconfigure(gpu=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("content", [b'{"record": "workl', b"\n\n", b"   ", b"\x00" * 64])
def test_a_profile_killed_during_its_first_write_is_started_afresh(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "job.jsonl"
    path.write_bytes(content)
    with Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=2) as tr:
        tr.step(step_time_s=0.1)
        tr.step(step_time_s=0.1)
    profile = read_profile(path)
    assert profile.workload == WORKLOAD and len(profile.steps) == 1


def test_a_full_disk_stops_tracking_with_a_warning_and_training_goes_on(tmp_path: Path, monkeypatch) -> None:
    from cotune.errors import StorageError
    from cotune.profile import ProfileWriter

    path = tmp_path / "job.jsonl"
    tr = Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=2, fsync="none")
    tr.step(step_time_s=0.1)
    tr.step(step_time_s=0.1)  # one step record written

    def full(self, record):  # noqa: ANN001
        raise StorageError("cannot write job.jsonl: No space left on device (ENOSPC): free space")

    monkeypatch.setattr(ProfileWriter, "write", full)
    with pytest.warns(RuntimeWarning, match="No space left on device.*tracking stops and training goes on"):
        for _ in range(4):
            tr.step(step_time_s=0.1)
    tr.eval(metric=0.5)  # after the stop: nothing, no error
    assert not tr.enabled and tr._writer is None  # the handles are released
    monkeypatch.undo()
    assert len(read_profile(path).steps) == 1  # what was written is intact


def test_a_background_sync_that_fails_stops_tracking_with_a_warning_not_the_training(tmp_path: Path, monkeypatch) -> None:
    # The fsync thread's EIO was raised out of tr.step(), under the default errors="warn".
    import errno

    from _waiting import wait_for

    path = tmp_path / "job.jsonl"
    tr = Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=1,
                 fsync="background")
    tr.step(step_time_s=0.1)

    def broken(fd):  # noqa: ANN001
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    # The failure surfaces at the next request after the thread's failed sync: a later step's,
    # or this first one's when a loaded machine let the thread run the first step's sync only
    # after the patch (seen in a fast-tier run beside a CI simulation). Both are in the block.
    with pytest.warns(RuntimeWarning, match="Input/output error.*tracking stops and training goes on"):
        tr.step(step_time_s=0.1)  # asks the thread to sync: it fails there
        wait_for(lambda: not tr.enabled or tr._syncer is None or tr._syncer.error is not None, timeout_s=60,
                 what="the failed sync")
        for _ in range(3):
            tr.step(step_time_s=0.1)
    assert not tr.enabled
    monkeypatch.undo()
    assert len(read_profile(path).steps) >= 2  # what was written is intact


def test_errors_raise_hands_a_full_disk_to_the_loop(tmp_path: Path, monkeypatch) -> None:
    from cotune.errors import StorageError
    from cotune.profile import ProfileWriter

    tr = Tracker(tmp_path / "job.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0,
                 window=1, fsync="none", errors="raise")
    monkeypatch.setattr(ProfileWriter, "write", lambda self, record: (_ for _ in ()).throw(StorageError("disk full")))
    with pytest.raises(StorageError, match="disk full"):
        tr.step(step_time_s=0.1)


def test_the_tracker_stops_at_the_readers_cap_of_lines(tmp_path: Path, monkeypatch) -> None:
    import cotune.track._tracker as tracker_module

    monkeypatch.setattr(tracker_module, "MAX_PROFILE_LINES", 5)
    path = tmp_path / "job.jsonl"
    with pytest.warns(RuntimeWarning, match="as many as a profile may"):
        with Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=1) as tr:
            for _ in range(10):
                tr.step(step_time_s=0.1)
    assert len(path.read_text().splitlines()) == 5  # the workload record and four steps: readable


def test_a_step_after_close_is_an_error(tmp_path: Path) -> None:
    tr = Tracker(tmp_path / "job.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD)
    tr.close()
    with pytest.raises(InputError, match="the tracker is closed"):
        tr.step(step_time_s=0.1)


def test_a_second_tracker_in_one_process_is_told_so(tmp_path: Path) -> None:
    # A notebook cell run again without closing the first Tracker was told in one warning,
    # easily missed, and the new tracker recorded nothing at all.
    from cotune.profile import ProfileLockedError

    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD):
        with pytest.raises(ProfileLockedError, match="another writer in this process .*close the first Tracker"):
            Tracker(path, gpu="cpu", workers=1, local_batch=8)


def test_step_timer_closes_a_partial_accumulation_at_the_epochs_last_batch() -> None:
    from cotune.track._adapt import StepTimer

    timer, clock, steps = StepTimer(), 0.0, []
    for epoch in range(2):
        for b in range(8):  # 8 micro-batches, 3 a step: 3 + 3 + 2
            timer.batch_start(clock)
            clock += 1.0
            done = timer.batch_end(clock, accum=3, last_of_epoch=b == 7)
            if done:
                steps.append(done)
            clock += 0.5  # loading: between two steps it is left out, between micro-batches of one it counts
        assert timer.epoch_end() is None  # nothing left open: the last batch closed it
    assert [m for _, m in steps] == [3, 3, 2] * 2
    assert [t for t, _ in steps] == pytest.approx([4.0, 4.0, 2.5] * 2)


def test_step_timer_hands_over_the_open_step_at_the_epochs_end_when_its_length_is_unknown() -> None:
    from cotune.track._adapt import StepTimer

    timer = StepTimer()
    out = []
    for b in range(5):  # an iterable dataset: the last batch is not known as such
        timer.batch_start(float(b))
        out.append(timer.batch_end(b + 0.5, accum=3, last_of_epoch=False))
    assert [o[1] for o in out if o] == [3]
    assert timer.epoch_end() == pytest.approx((1.5, 2))  # batches 3 and 4: from 3.0 to 4.5
    assert timer.epoch_end() is None


def test_a_partial_step_counts_its_own_micro_batches_in_the_epochs(tmp_path) -> None:
    t = Tracker(tmp_path / "j.jsonl", gpu="cpu", workers=2, local_batch=8, accum_steps=3, workload=WORKLOAD,
                warmup_steps=0, fsync="none")
    for _ in range(2):
        t.step(step_time_s=0.1)
    t.step(step_time_s=0.05, micro_batches=2)
    assert t.epoch == pytest.approx((2 * 48 + 32) / WORKLOAD.dataset_size)
    with pytest.raises(InputError, match="micro_batches"):
        t.step(step_time_s=0.1, micro_batches=0)
    t.close()
    assert t.closed


def test_a_step_larger_than_the_training_set_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    # 8 × 64 × 2 = 1,024 samples a step against 1,000: it was tracked, and `cotune replan`
    # then refused the job ("more than the profile's training samples") when it was needed.
    path = tmp_path / "job.jsonl"
    with pytest.raises(InputError, match=r"8 × 64 × 2 accumulation steps = 1,024 samples a step, more than the workload's 1,000"):
        Tracker(path, gpu="cpu", workers=8, local_batch=64, accum_steps=2, workload=WORKLOAD)
    assert not path.exists()


def test_a_reconfiguration_past_the_training_set_is_refused_and_the_old_window_kept(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="cpu", workers=2, local_batch=16, workload=WORKLOAD, window=10, warmup_steps=0, fsync="none") as tr:
        tr.step(step_time_s=0.2)
        with pytest.raises(InputError, match="2 × 600 = 1,200 samples a step"):
            tr.reconfigure(local_batch=600)
        assert tr.config.local_batch == 16
        tr.step(step_time_s=0.2)
    steps = read_profile(path).steps
    assert [(s.workers, s.local_batch, s.timed_steps) for s in steps] == [(2, 16, 2)]


def test_a_gpu_name_with_a_line_break_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    with pytest.raises(InputError, match="gpu must be a non-empty one-line name"):
        Tracker(path, gpu="t4\nforged", workers=1, local_batch=8, workload=WORKLOAD)
    assert not path.exists()


def test_the_same_workload_without_the_profiles_provenance_is_accepted(tmp_path: Path) -> None:
    # The bundled profile's workload record carries a `source`; a tracker given the same
    # name, dataset size, metric and goal was refused as "holds workload 'x', not 'x'".
    import shutil

    from cotune.examples import example_path

    path = tmp_path / "cifar.jsonl"
    shutil.copy(example_path("cifar10-resnet18"), path)
    same = WorkloadRecord(name="cifar10-resnet18", dataset_size=50_000, metric="top1", goal="max")
    Tracker(path, gpu="t4", workers=2, local_batch=64, workload=same).close()
    other_size = WorkloadRecord(name="cifar10-resnet18", dataset_size=60_000, metric="top1", goal="max")
    with pytest.raises(InputError, match="holds workload 'cifar10-resnet18' with dataset_size 50000, not 60000"):
        Tracker(path, gpu="t4", workers=2, local_batch=64, workload=other_size)


@pytest.mark.parametrize("env, explicit, records", [
    ({}, None, True),                                   # a single process: rank 0
    ({"RANK": "0"}, None, True),                        # torchrun's rank 0
    ({"RANK": "3"}, None, False),                       # torchrun's rank 3, rank= left out: records nothing
    ({"RANK": "3"}, 0, True),                           # rank= given wins over the environment
    ({"LOCAL_RANK": "0", "NODE_RANK": "0"}, None, True),   # Lightning's launcher: no RANK
    ({"LOCAL_RANK": "2", "NODE_RANK": "0"}, None, False),
    ({"LOCAL_RANK": "0", "NODE_RANK": "1"}, None, False),  # local rank 0 of the second node
    ({"LOCAL_RANK": "0", "GROUP_RANK": "1"}, None, False),
    ({"HOROVOD_RANK": "0"}, None, True),                # horovodrun
    ({"HOROVOD_RANK": "1"}, None, False),
    ({"OMPI_COMM_WORLD_RANK": "2"}, None, False),       # Open MPI's mpirun
    ({"OMPI_COMM_WORLD_RANK": "0"}, None, True),
    ({"PMIX_RANK": "1"}, None, False),                  # srun --mpi=pmix, Open MPI 5
    ({"PMI_RANK": "1"}, None, False),                   # MPICH / Intel MPI
    ({"SLURM_PROCID": "1"}, None, False),               # srun, one task a process
    ({"SLURM_PROCID": "0"}, None, True),
    # a batch script's step (SLURM_PROCID 0) that spawns its processes: their own variable decides
    ({"SLURM_PROCID": "0", "LOCAL_RANK": "1"}, None, False),
    ({"SLURM_PROCID": "1", "RANK": "0"}, None, True),  # torchrun inside an srun task: its RANK
    # TensorFlow multi-worker (Keras callback): the chief records, or worker 0 without one
    ({"TF_CONFIG": '{"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}}'}, None, True),
    ({"TF_CONFIG": '{"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 1}}'}, None, False),
    ({"TF_CONFIG": '{"cluster": {"chief": ["c:1"], "worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}'}, None, False),
    ({"TF_CONFIG": '{"cluster": {"chief": ["c:1"], "worker": ["a:1"]}, "task": {"type": "chief", "index": 0}}'}, None, True),
])
def test_the_rank_defaults_to_the_launchers_rank_variable(tmp_path, monkeypatch, env, explicit, records):
    # With rank= left out every process of a data-parallel job tracked: all but one died
    # of the profile's lock. torchrun sets RANK for each process, Lightning LOCAL_RANK and NODE_RANK.
    for name in ("RANK", "HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "LOCAL_RANK", "NODE_RANK",
                 "GROUP_RANK", "SLURM_PROCID", "TF_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    path = tmp_path / "job.jsonl"
    kw = {} if explicit is None else {"rank": explicit}
    with Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, fsync="none", **kw) as tr:
        tr.eval(epoch=1.0, metric=0.5)
    assert path.exists() == records and (not records or len(read_profile(path).evals) == 1)


def test_a_rank_variable_that_is_no_rank_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "leader")
    with pytest.raises(InputError, match="the RANK environment variable is 'leader', not a process rank: pass rank="):
        Tracker(tmp_path / "job.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD)
    monkeypatch.delenv("RANK")
    monkeypatch.setenv("TF_CONFIG", "{task: chief}")
    with pytest.raises(InputError, match="the TF_CONFIG environment variable is not the JSON TensorFlow reads"):
        Tracker(tmp_path / "job.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD)


def test_a_profile_another_process_tracks_is_a_warning_not_a_dead_rank(tmp_path, monkeypatch):
    # Two ranks both told rank=0 (or two jobs on one file): the second must not kill its
    # training; it warns and records nothing. errors="raise" keeps the error.
    from cotune.profile import ProfileLockedError

    monkeypatch.delenv("RANK", raising=False)
    path = tmp_path / "job.jsonl"
    Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, fsync="none").close()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from cotune.profile import ProfileWriter; w = ProfileWriter(sys.argv[1]); "
         "w.open(); print('ready', flush=True); sys.stdin.read()", str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"  # blocks until the lock is held (or the child died)
        before = path.read_text()
        with pytest.warns(RuntimeWarning, match=r"is being written by .*this process records nothing .*pass rank="):
            tr = Tracker(path, gpu="cpu", workers=1, local_batch=8, fsync="none")
        tr.step(step_time_s=0.1)
        tr.eval(epoch=1.0, metric=0.5)
        tr.close()
        assert not tr.enabled and path.read_text() == before
        with pytest.raises(ProfileLockedError):
            Tracker(path, gpu="cpu", workers=1, local_batch=8, fsync="none", errors="raise")
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


def test_a_resumed_job_that_does_not_say_how_far_it_came_is_warned(tmp_path, monkeypatch):
    # A second tracker on the same job counted its epochs from 0 again: the job's curve in
    # the profile jumped back from epoch 3 to 0.x, and a re-plan read it as one curve.
    import warnings

    monkeypatch.delenv("RANK", raising=False)
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, fsync="none") as tr:
        tr.eval(epoch=3.0, metric=0.5)
    with pytest.warns(RuntimeWarning, match=r"holds the evaluations of job 'job-a' up to epoch 3, and this tracker "
                                            r"counts from epoch 0: pass epochs_done="):
        Tracker(path, gpu="cpu", workers=1, local_batch=8, fsync="none").close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # resuming where it stopped, or a new job: nothing to say
        Tracker(path, gpu="cpu", workers=1, local_batch=8, fsync="none", epochs_done=3.0).close()
        Tracker(path, gpu="cpu", workers=1, local_batch=8, fsync="none", job="run-2").close()


def test_an_evaluation_that_goes_back_in_epochs_is_warned_once_and_kept(tmp_path, monkeypatch):
    import warnings

    monkeypatch.delenv("RANK", raising=False)
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, fsync="none") as tr:
        tr.eval(epoch=3.0, metric=0.5)
        with pytest.warns(RuntimeWarning, match=r"an evaluation at epoch 1 after one at 3: a job's epochs count from its start"):
            tr.eval(epoch=1.0, metric=0.6)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            tr.eval(epoch=0.5, metric=0.6)  # said once
    assert [e.epoch for e in read_profile(path).evals] == [3.0, 1.0, 0.5]


class OutOfMemoryError(RuntimeError):
    """Named as torch's is: the tracker tells an out-of-memory by its class name, not by torch."""


def test_a_with_block_that_ends_in_an_out_of_memory_records_it_after_the_steps(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    with pytest.raises(OutOfMemoryError):
        with Tracker(path, gpu="t4", workers=1, local_batch=512, workload=WORKLOAD, window=3, warmup_steps=0) as t:
            for _ in range(4):
                t.step(step_time_s=0.5)
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB\n(GPU 0; 15.75 GiB total)")
    p = read_profile(path)
    (failure,) = p.failures
    assert (failure.gpu, failure.workers, failure.hosts, failure.local_batch, failure.failure) == ("t4", 1, 1, 512, "oom")
    assert failure.message == "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.75 GiB total)"
    assert sum(s.timed_steps for s in p.steps) == 4  # the open window was written first
    assert p.max_local_batch("t4") == 511  # its own steps at 512 came before it


def test_a_with_block_that_ends_in_another_error_records_no_failure(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    with pytest.raises(ValueError):
        with Tracker(path, gpu="t4", workers=1, local_batch=64, workload=WORKLOAD) as t:
            t.step(step_time_s=0.5)
            raise ValueError("a bug in the loop")
    assert read_profile(path).failures == ()


def test_out_of_memory_called_by_a_loop_that_catches_it(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="t4", workers=2, local_batch=256, workload=WORKLOAD, warmup_steps=0) as t:
        rec = t.out_of_memory("RuntimeError: out of memory")
        t.reconfigure(local_batch=128)  # the loop halves its batch and goes on
        for _ in range(10):
            t.step(step_time_s=0.3)
    assert rec is not None and rec.local_batch == 256
    p = read_profile(path)
    assert p.max_local_batch("t4") == 255 and {s.local_batch for s in p.steps} == {128}


def test_a_tracker_of_another_rank_records_no_out_of_memory(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="t4", workers=2, local_batch=256, workload=WORKLOAD, rank=1) as t:
        assert t.out_of_memory("out of memory") is None
    assert not path.exists()


@pytest.mark.parametrize("exc", [MemoryError(), OutOfMemoryError("x"), RuntimeError("CUDA error: out of memory"),
                                 RuntimeError("MPS backend out of memory (MPS allocated: 1 GB)"),
                                 RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate"),
                                 type("ResourceExhaustedError", (Exception,), {})("OOM when allocating tensor")])
def test_out_of_memory_errors_are_told_by_class_name_or_text(exc) -> None:
    from cotune.errors import is_out_of_memory

    assert is_out_of_memory(exc)


@pytest.mark.parametrize("exc", [ValueError("shapes do not match"), RuntimeError("NCCL timeout"), KeyError("memory"),
                                 RuntimeError("RESOURCE_EXHAUSTED: Received message larger than max (4194304 vs. 67108864)")])
def test_other_errors_are_not_out_of_memory(exc) -> None:
    from cotune.errors import is_out_of_memory

    assert not is_out_of_memory(exc)


def test_torchs_own_out_of_memory_error_is_one() -> None:
    torch = pytest.importorskip("torch")
    from cotune.errors import is_out_of_memory

    assert is_out_of_memory(torch.cuda.OutOfMemoryError("Tried to allocate 20.00 MiB"))


@settings(max_examples=200, deadline=None)
@given(steps=st.integers(1, 400), batches=st.integers(1, 60), accum=st.integers(1, 9))
def test_epochs_at_a_step_count_are_the_passes_its_micro_batches_make(steps, batches, accum):
    # The oracle: step through the epochs one optimizer step at a time, each taking accum
    # micro-batches or what is left of the epoch (both frameworks step at an epoch's end).
    from cotune.track._adapt import epochs_at_step

    done, left = 0, batches
    for _ in range(steps):
        take = min(accum, left)
        done, left = done + take, left - take
        if left == 0:
            left = batches
    assert epochs_at_step(steps, batches=batches, accum=accum) == pytest.approx(done / batches)


def test_numpy_integers_for_the_configuration_write_plain_records(tmp_path: Path) -> None:
    # np.int64 (a config array's element) and a 0-d array passed the checks but were stored
    # as they were: the first record's JSON failed with a TypeError inside the training loop.
    import numpy as np

    path = tmp_path / "p.jsonl"
    with Tracker(path, gpu="t4", workers=np.int64(2), local_batch=32, accum_steps=np.array(2), workload=WORKLOAD,
                 window=np.int64(2), warmup_steps=np.int64(0), fsync="none") as t:
        t.eval(metric=0.5, epoch=1.0)
        t.reconfigure(workers=np.int64(4), local_batch=np.array(16))
        t.step(step_time_s=0.1)
        t.step(step_time_s=0.1)
    profile = read_profile(path)
    assert profile.evals[0].global_batch == 128 and type(t.config.workers) is int
    assert [(s.workers, s.local_batch, s.accum_steps) for s in profile.steps] == [(4, 16, 2)]


@pytest.mark.parametrize("kw, said", [
    ({"cause": "x" * 5000}, "cause must be one of 'replan', 'revocation'"),
    ({"market": "x" * 5000}, "market must be 'on_demand' or 'spot'"),
    ({"fsync": ["each"]}, "fsync must be 'background', 'each' or 'none'"),
    ({"errors": {"warn": 1}}, "errors must be 'warn' or 'raise'"),
])
def test_a_bad_choice_is_quoted_short(tmp_path: Path, kw: dict, said: str) -> None:
    import numpy as np

    with pytest.raises(InputError) as err:
        Tracker(tmp_path / "p.jsonl", gpu="t4", workers=2, local_batch=32, workload=WORKLOAD, **kw)
    assert said in str(err.value) and len(str(err.value)) < 300, str(err.value)[:400]
    with Tracker(tmp_path / "q.jsonl", gpu="t4", workers=2, local_batch=32, workload=WORKLOAD, fsync="none") as t:
        with pytest.raises(InputError, match="cause must be one of"):
            t.reconfigure(workers=4, cause=np.array(["replan", "revocation"]))  # no elementwise 'in'


def test_a_closed_tracker_refuses_to_reconfigure_as_it_refuses_steps(tmp_path: Path) -> None:
    tr = Tracker(tmp_path / "job.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, fsync="none")
    tr.close()
    with pytest.raises(InputError, match="the tracker is closed"):
        tr.reconfigure(workers=2)
    assert tr.config.workers == 1


def test_an_evaluation_after_a_reconfiguration_follows_a_step_record_at_the_new_one(tmp_path: Path) -> None:
    # A full window is 100 steps; an epoch here is 63 at the new configuration: the
    # evaluation came first and `cotune replan` read the old configuration as the current one.
    from cotune.track import job_progress

    path = tmp_path / "job.jsonl"
    tr = Tracker(path, gpu="t4", workers=4, local_batch=4, workload=WORKLOAD, fsync="none")
    for _ in range(200):
        tr.step(step_time_s=0.1)
    tr.eval(metric=0.5)
    tr.reconfigure(workers=8, hosts=2)
    for _ in range(32):
        tr.step(step_time_s=0.06)
    tr.eval(metric=0.6)
    jp = job_progress(read_profile(path))
    assert (jp.workers, jp.hosts, jp.local_batch, jp.global_batch) == (8, 2, 4, 32)
    assert jp.step_time_s == pytest.approx(0.06)
    tr.close()


def test_a_resumed_job_keeps_its_clock(tmp_path: Path) -> None:
    # The deadline counts from the job's start: a resumed tracker that counted from 0
    # told `cotune replan` that almost the whole deadline was left.
    path = tmp_path / "job.jsonl"
    clock = FakeClock()
    with Tracker(path, gpu="cpu", workers=1, local_batch=10, workload=WORKLOAD, clock=clock, fsync="none") as tr:
        for _ in range(100):
            clock.now += 10.0
            tr.step(step_time_s=10.0)
        tr.eval(metric=0.5)  # epoch 1 at 1000 s
    clock.now = 0.0
    with Tracker(path, gpu="cpu", workers=1, local_batch=10, epochs_done=1.0, clock=clock, fsync="none") as tr:
        clock.now += 50.0
        assert tr.elapsed_s == pytest.approx(1050.0)  # from its last evaluation's wall time, at least
    with Tracker(path, gpu="cpu", workers=1, local_batch=10, epochs_done=1.0, elapsed_s_done=4000.0, clock=clock,
                 fsync="none") as tr:
        assert tr.elapsed_s == pytest.approx(4000.0)  # the caller knows the time it was down too
        clock.now += 5.0
        assert tr.eval(metric=0.6).elapsed_s == pytest.approx(4005.0)
    with pytest.raises(InputError, match="elapsed_s_done"):
        Tracker(path, gpu="cpu", workers=1, local_batch=10, epochs_done=1.0, elapsed_s_done=-1.0)


def test_end_pass_trims_a_partial_last_batch_and_keeps_a_longer_epoch(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="cpu", workers=2, local_batch=64, workload=WORKLOAD, warmup_steps=0, fsync="none") as tr:
        for _ in range(8):  # 8 × 128 = 1,024 counted for a pass of 1,000: the last step held 104
            tr.step(step_time_s=0.1)
        tr.end_pass()
        assert tr.epoch == pytest.approx(1.0)
        for _ in range(10):  # 1,280: more than a micro-batch of every worker over the pass — kept
            tr.step(step_time_s=0.1)
        tr.end_pass()
        assert tr.epoch == pytest.approx(1.0 + 1.28)
        for _ in range(4):  # half a pass (an epoch limited to part of the data): kept
            tr.step(step_time_s=0.1)
        tr.end_pass()
        assert tr.epoch == pytest.approx(2.28 + 0.512)


def test_a_tracker_refuses_to_be_pickled_in_one_line(tmp_path: Path) -> None:
    # Lightning's ddp_spawn pickles the callbacks into its ranks: "cannot pickle FileIO" said nothing.
    import pickle

    tr = Tracker(tmp_path / "job.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, fsync="none")
    with pytest.raises(InputError, match=r"cannot be sent to another process.*strategy='ddp'.*not 'ddp_spawn'"):
        pickle.dumps(tr)
    tr.close()


@pytest.mark.parametrize("end", [b"", b"\r"])
def test_a_profile_whose_only_line_lacks_a_newline_is_checked_for_its_workload(tmp_path: Path, end: bytes) -> None:
    # Taken for a torn first write, the workload check was skipped and a second, different
    # workload record appended: the profile became unreadable.
    path = tmp_path / "job.jsonl"
    path.write_bytes(json.dumps({"record": "workload", "name": "job-a", "dataset_size": 1000}).encode() + end)
    with pytest.raises(InputError, match="holds workload 'job-a'"):
        Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WorkloadRecord(name="other", dataset_size=5))
    assert read_profile(path).workload.name == "job-a"


def test_a_profile_whose_last_record_lacks_a_newline_is_appended_to_after_it(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    path.write_text(json.dumps({"record": "workload", "name": "job-a", "dataset_size": 1000, "metric": "acc"}))
    with Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=1) as tr:
        tr.step(step_time_s=0.1)
    assert [d["record"] for d in _lines(path)] == ["workload", "step"] and path.read_text().endswith("\n")


def test_a_profile_with_carriage_return_line_ends_keeps_its_records_when_tracked_into(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    path.write_bytes(b"\r".join(json.dumps(d).encode() for d in (
        {"record": "workload", "name": "job-a", "dataset_size": 1000},
        {"record": "eval", "global_batch": 32, "epoch": 1, "metric": 0.3})) + b"\r")
    with Tracker(path, gpu="cpu", workers=1, local_batch=32) as tr:
        tr.eval(metric=0.4, epoch=2.0)
    assert [e.metric for e in read_profile(path).evals] == [0.3, 0.4]


def test_a_profile_path_in_a_loop_of_symbolic_links_is_bad_input_not_storage(tmp_path: Path) -> None:
    from cotune.errors import EXIT_INPUT, ProfileError

    (tmp_path / "a.jsonl").symlink_to("b.jsonl")
    (tmp_path / "b.jsonl").symlink_to("a.jsonl")
    with pytest.raises(ProfileError, match="loop of symbolic links") as info:  # was StorageError ELOOP, exit 3
        Tracker(tmp_path / "a.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD)
    assert info.value.exit_code == EXIT_INPUT


def test_a_first_line_wider_in_bytes_than_in_characters_is_checked_for_its_workload(tmp_path: Path) -> None:
    # 24,000 CJK characters are 72 KB of UTF-8: within the line cap (64 Ki characters) but
    # past 64 KiB of bytes, so the first line was taken for a torn write, the workload check
    # skipped and a second workload record appended (and the profiler restarted from nothing).
    path = tmp_path / "job.jsonl"
    wide = {"record": "workload", "name": "job-a", "dataset_size": 1000, "source": "数据" * 12000}
    step = {"record": "step", "gpu": "cpu", "workers": 1, "local_batch": 8, "step_time_s": 0.1}
    path.write_text(json.dumps(wide, ensure_ascii=False) + "\n" + json.dumps(step) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="holds workload 'job-a'"):
        Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WorkloadRecord(name="other", dataset_size=5))
    assert read_profile(path).workload.name == "job-a"


@pytest.mark.parametrize("value", [1e20, -1e20], ids=repr)
def test_a_callback_records_a_metric_past_the_profiles_magnitude_as_a_diverged_run(tmp_path: Path,
                                                                                    value: float) -> None:
    # A float32 loss reaches 1e20 on its way to inf: refused by the tracker, it killed the
    # Lightning and Keras training the callbacks were recording.
    import math

    from cotune.track._adapt import CallbackGuard

    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, fsync="none") as tr:
        CallbackGuard(tr, name="TrackerCallback").write_eval(value)
    assert [math.isnan(e.metric) for e in read_profile(path).evals] == [True]


def test_a_callback_with_errors_raise_refuses_an_accumulation_the_tracker_was_not_told(tmp_path: Path) -> None:
    from cotune.track._adapt import CallbackGuard

    tr = Tracker(tmp_path / "job.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, errors="raise",
                 fsync="none")
    with pytest.raises(InputError, match="accumulates 4 batches a step .* pass Tracker\\(\\.\\.\\., accum_steps=4\\)"):
        CallbackGuard(tr, name="TrackerCallback").take_accum_steps(4, source="accumulate_grad_batches=4")
    assert tr.config.accum_steps == 1
    tr.close()


def test_a_framework_accumulation_past_the_training_set_leaves_the_fit_untracked_with_a_warning(tmp_path: Path) -> None:
    from cotune.track._adapt import CallbackGuard

    path = tmp_path / "job.jsonl"
    tr = Tracker(path, gpu="cpu", workers=1, local_batch=400, workload=WORKLOAD, fsync="none")  # 1000 samples
    guard = CallbackGuard(tr, name="TrackerCallback")
    with pytest.warns(RuntimeWarning,
                      match="more than the workload's 1,000 training samples.*this fit\\(\\) is not tracked"):
        guard.take_accum_steps(4, source="accumulate_grad_batches=4")
    assert not guard.tracking and tr.config.accum_steps == 1
    tr.close()


def test_a_profile_the_storage_will_not_open_for_writing_leaves_the_training_untracked_with_a_warning(
        tmp_path: Path, monkeypatch) -> None:
    # A read-only ConfigMap or an immutable file: the EPERM from open() killed the job at
    # Tracker(...), where a full disk gave one warning.
    import errno

    from cotune.errors import StorageError
    from cotune.profile import ProfileWriter

    path = tmp_path / "job.jsonl"
    Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, fsync="none").close()

    def refused(self) -> None:  # noqa: ANN001
        raise StorageError.from_os_error(PermissionError(errno.EPERM, "Operation not permitted"), path=path,
                                         doing="open it for writing")

    monkeypatch.setattr(ProfileWriter, "open", refused)
    with pytest.warns(RuntimeWarning, match="cannot open it for writing: Operation not permitted.*training goes on"):
        tr = Tracker(path, gpu="cpu", workers=1, local_batch=8, warmup_steps=0, window=1)
    tr.step(step_time_s=0.1)
    assert tr.eval(metric=0.5) is None and not tr.enabled
    tr.close()


def test_a_profile_on_a_read_only_mount_leaves_the_training_untracked_with_a_warning(tmp_path: Path) -> None:
    from _fsfaults import remount_read_only, tmpfs

    with tmpfs(tmp_path / "mnt", size_kib=256) as mnt:
        path = mnt / "job.jsonl"
        Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, fsync="none").close()
        before = path.read_bytes()
        remount_read_only(mnt)
        with pytest.warns(RuntimeWarning, match="read-only.*training goes on"):
            tr = Tracker(path, gpu="cpu", workers=1, local_batch=8)
        tr.step(step_time_s=0.1)
        tr.close()
        assert path.read_bytes() == before


def test_an_evaluation_within_the_warm_up_after_a_reconfiguration_waits_for_the_first_window_past_it(
        tmp_path: Path) -> None:
    # An epoch shorter than warmup_steps: with every step at 8 workers still warm-up, the
    # evaluation left the 4-worker step record as the job's current configuration; then it
    # was written after the warm-up (cold) steps' times, as the job's step time.
    from cotune.track import job_progress

    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="t4", workers=4, local_batch=4, workload=WORKLOAD, window=20, fsync="none") as tr:
        for _ in range(100):
            tr.step(step_time_s=0.1)
        tr.eval(metric=0.5)
        tr.reconfigure(workers=8)
        for _ in range(3):  # inside the 5 warm-up steps
            tr.step(step_time_s=3.0)
        tr.eval(metric=0.6)
        for _ in range(5):  # 2 more warm-up steps, then 3 timed ones: written at close, then the eval
            tr.step(step_time_s=0.06)
    rows = [(d["record"], d.get("workers") or d.get("global_batch")) for d in _lines(path)[1:]]
    assert rows[-2:] == [("step", 8), ("eval", 32)]
    p = read_profile(path)
    assert p.steps[-1].timed_steps == 3
    jp = job_progress(p)
    assert (jp.workers, jp.global_batch) == (8, 32) and jp.step_time_s == pytest.approx(0.06)


@pytest.mark.parametrize("path", [None, 123, "job\0.jsonl"], ids=repr)
def test_a_profile_path_that_is_no_path_is_one_input_error(path: object) -> None:
    # Tracker(os.environ.get("PROFILE"), ...) with the variable unset raised a TypeError.
    with pytest.raises(InputError, match="profile_path") as err:
        Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD)  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


def test_a_refused_write_of_the_last_window_at_close_warns_and_training_goes_on(tmp_path: Path, monkeypatch) -> None:
    # close() wrote the last window, the write was refused, tracking stopped (closing the
    # handles), and close() went on to close them again: AttributeError out of the loop.
    from cotune.errors import StorageError
    from cotune.profile import ProfileWriter

    path = tmp_path / "job.jsonl"
    tr = Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=100, fsync="none")
    for _ in range(3):
        tr.step(step_time_s=0.1)  # fewer than a window: written at close()
    monkeypatch.setattr(ProfileWriter, "write",
                        lambda self, record: (_ for _ in ()).throw(StorageError("File too large (EFBIG)")))
    with pytest.warns(RuntimeWarning, match="File too large.*tracking stops and training goes on"):
        tr.close()
    assert tr.closed and not tr.enabled
    monkeypatch.undo()
    assert read_profile(path).steps == ()  # the workload record is intact


def test_an_error_leaving_a_with_block_stays_itself_when_the_storage_refuses_the_last_window(
        tmp_path: Path, monkeypatch) -> None:
    # close() at the block's end replaced the loop's own error with an AttributeError.
    from cotune.errors import StorageError
    from cotune.profile import ProfileWriter

    path = tmp_path / "job.jsonl"
    with pytest.raises(ValueError, match="the real error"), pytest.warns(RuntimeWarning, match="disk full"):
        with Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=100,
                     fsync="none") as tr:
            tr.step(step_time_s=0.1)
            monkeypatch.setattr(ProfileWriter, "write",
                                lambda self, record: (_ for _ in ()).throw(StorageError("disk full")))
            raise ValueError("the real error")


def test_an_eval_whose_window_the_storage_refuses_warns_and_training_goes_on(tmp_path: Path, monkeypatch) -> None:
    # The eval's flush() stopped tracking, and the eval then wrote to the closed tracker:
    # "the tracker is closed" raised into the loop.
    from cotune.errors import StorageError
    from cotune.profile import ProfileWriter

    tr = Tracker(tmp_path / "job.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0,
                 window=100, fsync="none")
    tr.step(step_time_s=0.1)
    monkeypatch.setattr(ProfileWriter, "write", lambda self, record: (_ for _ in ()).throw(StorageError("disk full")))
    with pytest.warns(RuntimeWarning, match="disk full.*tracking stops"):
        tr.eval(metric=0.5)
    assert not tr.enabled


def _fork_a_child_that_waits(*, before: Callable[[], object] = lambda: None) -> tuple[int, int]:
    """A fork() child (as a DataLoader worker is) that lives until the returned pipe end is
    closed; returned once the child runs (the fork hooks run in it before fork() returns there)
    and has called ``before``."""
    read_end, write_end = os.pipe()
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: say it runs, wait for the parent's word, then leave without the parent's cleanup
        try:
            os.close(write_end)
            held = before()  # noqa: F841 - kept alive (an open writer) until the child leaves
            os.write(ready_write, b"r")
            os.read(read_end, 1)
        finally:  # never back into pytest in the child: a failed `before` is an empty read in the parent
            os._exit(0)
    os.close(read_end)
    os.close(ready_write)
    assert os.read(ready_read, 1) == b"r"
    os.close(ready_read)
    return pid, write_end


def test_a_fork_child_does_not_keep_the_profile_locked_after_the_tracker_closes(tmp_path: Path) -> None:
    # A persistent DataLoader worker kept the flock'ed file open: the next Tracker on the
    # profile raised ProfileLockedError ("another writer in this process") and training died.
    path = tmp_path / "job.jsonl"
    first = Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=1,
                    fsync="none")
    child, release = _fork_a_child_that_waits()
    try:
        first.step(step_time_s=0.1)
        first.close()
        with Tracker(path, gpu="cpu", workers=1, local_batch=8, job="finetune", warmup_steps=0, window=1,
                     fsync="none") as second:
            second.step(step_time_s=0.1)
            second.eval(metric=0.6)
    finally:
        os.close(release)
        os.waitpid(child, 0)
    assert [e.job for e in read_profile(path).evals] == ["finetune"]


def test_a_fork_child_left_by_a_killed_job_does_not_keep_the_profile_locked(tmp_path: Path) -> None:
    # After kill -9 the orphaned workers held the lock: the restarted job was told to kill
    # the dead pid and recorded nothing.
    path = tmp_path / "job.jsonl"
    script = textwrap.dedent(f"""
        import os, sys
        from cotune.profile import WorkloadRecord
        from cotune.track import Tracker
        tr = Tracker({str(path)!r}, gpu="cpu", workers=1, local_batch=8, warmup_steps=0, window=1, fsync="none",
                     workload=WorkloadRecord(name="job-a", dataset_size=1000))
        tr.step(step_time_s=0.1)
        if os.fork() == 0:
            print(os.getpid(), flush=True)  # the fork hooks have run in it by now
            sys.stdin.buffer.read()  # lives on until the test closes the pipe
            os._exit(0)
        sys.stdin.buffer.read()
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.stdout is not None and proc.stdin is not None
    orphan = int(proc.stdout.readline())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    try:
        with Tracker(path, gpu="cpu", workers=1, local_batch=8, warmup_steps=0, window=1, fsync="none",
                     epochs_done=1.0, errors="raise") as tr:
            tr.step(step_time_s=0.1)
            tr.eval(metric=0.5)
    finally:
        proc.stdin.close()  # the orphan reads EOF and leaves
        wait_gone = subprocess.run(["tail", f"--pid={orphan}", "-f", "/dev/null"], timeout=60)
        assert wait_gone.returncode == 0
    assert len(read_profile(path).evals) == 1


def _exit_code(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_fork_child_that_trains_with_its_parents_tracker_records_its_steps_and_eval(tmp_path: Path) -> None:
    # multiprocessing's "fork" start method and Lightning's "ddp_fork" hand the parent's
    # Tracker to the child that trains: the fork hook had closed the child's copy of the
    # profile, and its first record raised RuntimeError into the training loop.
    path = tmp_path / "job.jsonl"
    tr = Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=2, window=10,
                 fsync="none")
    pid = os.fork()
    if pid == 0:  # the child trains while the parent waits, as mp.Process(...).join() does
        code = 1
        try:
            for _ in range(30):
                tr.step(step_time_s=0.1)
            tr.eval(metric=0.5)
            tr.close()
            code = 0
        finally:
            os._exit(code)
    assert _exit_code(pid) == 0
    tr.close()
    profile = read_profile(path)
    assert ([s.timed_steps for s in profile.steps], [e.metric for e in profile.evals]) == ([10, 10, 8], [0.5])


def test_a_forked_childs_copy_of_a_writer_writes_beside_its_parent_while_the_parent_holds_the_profile(
        tmp_path: Path) -> None:
    from cotune.profile import ProfileWriter, StepRecord

    path = tmp_path / "job.jsonl"
    with ProfileWriter(path, fsync=False) as writer:
        writer.write(WORKLOAD)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                writer.write(StepRecord(gpu="cpu", workers=1, local_batch=8, step_time_s=0.1))
                code = 0
            finally:
                os._exit(code)
        assert _exit_code(pid) == 0
        writer.write(StepRecord(gpu="cpu", workers=1, local_batch=8, step_time_s=0.2))  # after the child's, whole
    assert [s.step_time_s for s in read_profile(path).steps] == [0.1, 0.2]


_RANK_VARIABLES = ("RANK", "HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "LOCAL_RANK", "NODE_RANK",
                   "GROUP_RANK", "SLURM_PROCID", "TF_CONFIG")


def test_a_fork_child_records_on_after_its_parent_closed_while_its_own_fork_child_lives(tmp_path: Path) -> None:
    # The child took the lock once its parent had closed, through the descriptor its own
    # fork() child (a DataLoader worker) had inherited: its records were refused from then
    # on, and the lock outlived it with the worker, so the restarted job was refused too.
    path = tmp_path / "job.jsonl"
    tr = Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=1,
                 fsync="none")
    release_read, release_write = os.pipe()  # the worker lives until the test closes its end
    said_read, said_write = os.pipe()
    go_read, go_write = os.pipe()
    trainer = os.fork()
    if trainer == 0:
        code = 1
        try:
            for fd in (release_write, said_read, go_write):
                os.close(fd)
            tr.step(step_time_s=0.1)
            if os.fork() == 0:  # the worker
                os.read(release_read, 1)
                os._exit(0)
            os.write(said_write, b"w")
            os.read(go_read, 1)  # the parent has closed
            for _ in range(3):
                tr.step(step_time_s=0.2)
            tr.close()
            code = 0
        finally:
            os._exit(code)
    for fd in (release_read, said_write, go_read):
        os.close(fd)
    try:
        assert os.read(said_read, 1) == b"w"
        tr.close()
        os.write(go_write, b"g")
        code = _exit_code(trainer)
        # the parent and the child are done, the worker lives on: the restarted job records
        with Tracker(path, gpu="cpu", workers=1, local_batch=8, warmup_steps=0, window=1, fsync="none",
                     epochs_done=1.0, errors="raise") as again:
            again.step(step_time_s=0.3)
    finally:
        for fd in (release_write, said_read, go_write):
            os.close(fd)
    assert code == 0 and [s.step_time_s for s in read_profile(path).steps] == [0.1, 0.2, 0.2, 0.2, 0.3]


def test_a_fork_child_whose_rank_is_not_zero_records_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every rank a "fork" launcher starts inherits the tracker its parent made, rank 0's
    # verdict included: each wrote its steps and evaluations into the one profile.
    for name in _RANK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "job.jsonl"
    tr = Tracker(path, gpu="cpu", workers=2, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=1,
                 fsync="none")
    ranks = []
    for rank in (0, 1):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.environ["RANK"] = str(rank)  # as a launcher tells each process its rank
                tr.step(step_time_s=0.1 + rank)
                tr.eval(metric=0.5 + rank)
                tr.close()
                code = 0
            finally:
                os._exit(code)
        ranks.append(pid)
    codes = [_exit_code(pid) for pid in ranks]
    tr.close()
    profile = read_profile(path)
    assert codes == [0, 0]
    assert ([s.step_time_s for s in profile.steps], [e.metric for e in profile.evals]) == ([0.1], [0.5])


def test_a_fork_child_records_where_the_lock_holder_cannot_be_read(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # Without /proc/locks (macOS, some sandboxes) the child could not tell its parent held
    # the lock: its first record stopped its tracking.
    import cotune.profile._profile as profile_module

    monkeypatch.setattr(profile_module, "_lock_holder", lambda fd: None)
    path = tmp_path / "job.jsonl"
    tr = Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=1,
                 fsync="none")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            tr.step(step_time_s=0.1)
            tr.close()
            code = 0
        finally:
            os._exit(code)
    code = _exit_code(pid)
    tr.close()
    assert code == 0 and [s.step_time_s for s in read_profile(path).steps] == [0.1]


def test_a_fork_childs_records_are_synced_to_disk_under_background_fsync(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # The helper thread that fsyncs does not survive fork(): the child's requests went
    # unanswered and its records stayed in the page cache.
    path = tmp_path / "job.jsonl"
    tr = Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=1)
    synced_read, synced_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            real_fsync = os.fsync

            def fsync_said(fd: int) -> None:
                real_fsync(fd)
                if os.path.samestat(os.fstat(fd), os.stat(path)):
                    os.write(synced_write, b"s")

            monkeypatch.setattr(os, "fsync", fsync_said)
            tr.step(step_time_s=0.1)
            tr.close()
            code = 0
        finally:
            os._exit(code)
    os.close(synced_write)
    code = _exit_code(pid)
    said = os.read(synced_read, 16)
    os.close(synced_read)
    tr.close()
    assert code == 0 and said == b"s"


def test_an_eval_before_any_step_at_a_new_configuration_is_written_after_its_first_window_after_warm_up(
        tmp_path: Path) -> None:
    # It was written at once, after step records of the old configuration only: a re-plan
    # read a change of batch that never happened, and the move's cause was never written.
    # Then it was written after the first step there, whose time (a restart's cold step,
    # warm-up or not) was written as the configuration's step time.
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="t4", workers=4, local_batch=32, workload=WORKLOAD, warmup_steps=2, window=3,
                 fsync="none") as tr:
        for _ in range(5):
            tr.step(step_time_s=0.2)
        tr.eval(metric=0.5)
        tr.reconfigure(workers=2, cause="revocation")
        tr.eval(metric=0.5)  # the checkpoint, evaluated before training resumes
        tr.step(step_time_s=0.3)
        for _ in range(4):
            tr.step(step_time_s=0.1)
    rows = [(d["record"], d.get("workers") or d.get("global_batch"), d.get("cause")) for d in _lines(path)[1:]]
    assert rows == [("step", 4, None), ("eval", 128, None), ("step", 2, "revocation"), ("eval", 64, None)]
    first_at_new = [s for s in read_profile(path).steps if s.workers == 2][0]
    assert (first_at_new.timed_steps, first_at_new.step_time_s) == (3, 0.1)  # warm-up (0.3, 0.1) left out


def test_a_resumed_jobs_cold_first_step_is_not_its_step_time_when_an_eval_waits_for_it(tmp_path: Path) -> None:
    # The checkpoint's evaluation was written after a one-step record of the first step at
    # the new configuration (CUDA and NCCL start-up, torch.compile): 100x the job's step time.
    from cotune.track import job_progress

    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="t4", workers=4, local_batch=32, workload=WORKLOAD, warmup_steps=0, window=1,
                 fsync="none") as tr:
        tr.step(step_time_s=0.3)
        tr.eval(metric=0.5)
    with Tracker(path, gpu="t4", workers=8, local_batch=32, epochs_done=0.128, cause="replan", warmup_steps=2,
                 window=4, fsync="none") as tr:
        tr.eval(metric=0.5)  # the checkpoint, evaluated before training resumes
        tr.step(step_time_s=30.0)
        for _ in range(5):
            tr.step(step_time_s=0.3)
    rows = [(d["record"], d.get("workers") or d.get("global_batch"), d.get("timed_steps")) for d in _lines(path)[1:]]
    assert rows == [("step", 4, 1), ("eval", 128, None), ("step", 8, 4), ("eval", 256, None)]
    assert job_progress(read_profile(path)).step_time_s == 0.3


@pytest.mark.parametrize("ends", ["close", "reconfigure"])
def test_a_restart_that_ends_during_warm_up_writes_no_cold_step_time(tmp_path: Path, ends: str) -> None:
    # A close() or reconfigure() during warm-up with a held evaluation wrote the warm-up
    # steps' times (CUDA and NCCL start-up, torch.compile) as a step record, then the
    # evaluation: a re-plan read 20 s a step where the job runs at 0.15 s.
    from cotune.track import job_progress

    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="t4", workers=4, local_batch=32, workload=WORKLOAD, warmup_steps=0, window=1,
                 fsync="none") as tr:
        tr.step(step_time_s=0.3)
        tr.eval(metric=0.5)
    tr = Tracker(path, gpu="t4", workers=2, local_batch=32, epochs_done=0.128, cause="replan", warmup_steps=5,
                 fsync="none")
    tr.eval(metric=0.5)  # the checkpoint, evaluated before training resumes: held
    tr.step(step_time_s=40.0)
    tr.step(step_time_s=0.15)
    with pytest.warns(RuntimeWarning, match=r"evaluation.* at global batch 64 .*not written.*2 × 32 on t4 was timed "
                                            "past warm-up"):
        if ends == "close":
            tr.close()
        else:
            tr.reconfigure(workers=1)
    tr.close()
    profile = read_profile(path)
    assert [(s.workers, s.step_time_s) for s in profile.steps] == [(4, 0.3)]
    assert [e.global_batch for e in profile.evals] == [128]
    assert job_progress(profile).step_time_s == 0.3


def test_an_out_of_memory_during_warm_up_with_a_held_eval_stays_in_force(tmp_path: Path) -> None:
    # The failure was written first, then close() wrote the warm-up steps' times at its
    # batch and the held evaluation: the step record superseded the out-of-memory, and a
    # re-plan kept the job where it runs out of memory.
    from cotune.profile import oom_superseded

    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="t4", workers=2, local_batch=64, workload=WORKLOAD, warmup_steps=0, window=1,
                 fsync="none") as tr:
        tr.step(step_time_s=0.2)
    with pytest.warns(RuntimeWarning, match="not written: the job ran out of memory"):
        with pytest.raises(MemoryError):
            with Tracker(path, gpu="t4", workers=2, local_batch=128, epochs_done=0.128, cause="replan",
                         warmup_steps=5, fsync="none") as tr:
                tr.eval(metric=0.7)  # held
                tr.step(step_time_s=30.0)
                tr.step(step_time_s=0.4)
                raise MemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    records = list(read_profile(path).records())
    assert type(records[-1]).__name__ == "FailureRecord" and records[-1].local_batch == 128
    assert oom_superseded(records) == (False,)


def test_a_resumed_tracker_at_a_new_configuration_holds_its_first_eval_for_its_first_step(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="t4", workers=4, local_batch=32, workload=WORKLOAD, warmup_steps=0, window=1,
                 fsync="none") as tr:
        tr.step(step_time_s=0.2)
        tr.eval(metric=0.5)
    with Tracker(path, gpu="t4", workers=2, local_batch=32, epochs_done=0.128, cause="replan", warmup_steps=0,
                 window=10, fsync="none") as tr:
        tr.eval(metric=0.5)
        assert [d["record"] for d in _lines(path)][-1] == "eval" and _lines(path)[-1]["global_batch"] == 128
        tr.step(step_time_s=0.1)
    rows = [(d["record"], d.get("workers") or d.get("global_batch"), d.get("cause")) for d in _lines(path)[1:]]
    assert rows == [("step", 4, None), ("eval", 128, None), ("step", 2, "replan"), ("eval", 64, None)]


def test_an_eval_no_step_at_its_configuration_follows_is_left_out_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="t4", workers=4, local_batch=32, workload=WORKLOAD, warmup_steps=0, window=1,
                 fsync="none") as tr:
        tr.step(step_time_s=0.2)
        tr.eval(metric=0.5)
    with pytest.warns(RuntimeWarning, match="evaluation.* at global batch 64 .*not written: the tracker closed before "
                                            "any step at 2 × 32"):
        with Tracker(path, gpu="t4", workers=2, local_batch=32, epochs_done=0.128, warmup_steps=0, fsync="none") as tr:
            tr.eval(metric=0.5)
    assert [e.global_batch for e in read_profile(path).evals] == [128]


def _orphan_a_fork_child_that_trains(path: Path) -> tuple[int, int]:
    """A launcher makes the tracker (one step record) and forks the child that trains with
    it, which records one step beside it; the launcher is then killed with -9. Returns the
    pipe ends to the orphan: each byte written makes it record one step (0.3 s, 0.4 s, ...);
    closing the end makes it close its tracker, write how many warnings it got, and exit."""
    to_child_read, to_child_write = os.pipe()
    from_child_read, from_child_write = os.pipe()
    launcher = os.fork()
    if launcher == 0:
        try:
            os.close(to_child_write)
            os.close(from_child_read)
            tr = Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=1,
                         fsync="none")
            tr.step(step_time_s=0.1)
            if os.fork() == 0:  # the child that trains, orphaned by the kill below
                import warnings

                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    tr.step(step_time_s=0.2)  # beside its parent, which holds the profile
                    os.write(from_child_write, b"s")
                    step_time_s = 0.3
                    while os.read(to_child_read, 1):
                        tr.step(step_time_s=step_time_s)
                        step_time_s += 0.1
                        os.write(from_child_write, b"s")
                    tr.close()
                os.write(from_child_write, "|".join(str(w.message) for w in caught).encode() + b"\n")
                os._exit(0)
            os.read(to_child_read, 1)  # waits for its kill: the test never writes to it
        finally:
            os._exit(0)
    os.close(to_child_read)
    os.close(from_child_write)
    assert os.read(from_child_read, 1) == b"s"
    os.kill(launcher, signal.SIGKILL)
    os.waitpid(launcher, 0)
    return to_child_write, from_child_read


def _orphans_last_word(to_child: int, from_child: int) -> str:
    os.close(to_child)
    said = b""
    while chunk := os.read(from_child, 4096):  # to its exit: the pipe's end closes with it
        said += chunk
    os.close(from_child)
    return said.decode()


def test_an_orphaned_fork_child_that_trains_holds_the_profile_so_a_restarted_job_is_refused(tmp_path: Path) -> None:
    # The child never took the lock: after its parent was killed it appended on, unlocked,
    # while the restarted job's tracker took the free lock, and both wrote into the profile.
    from cotune.errors import ProfileLockedError

    path = tmp_path / "job.jsonl"
    to_child, from_child = _orphan_a_fork_child_that_trains(path)
    try:
        os.write(to_child, b"s")  # its first record with the parent gone: it takes the lock
        assert os.read(from_child, 1) == b"s"
        with pytest.raises(ProfileLockedError):
            Tracker(path, gpu="cpu", workers=2, local_batch=8, warmup_steps=0, window=1, fsync="none",
                    epochs_done=1.0, errors="raise")
    finally:
        said = _orphans_last_word(to_child, from_child)
    assert said == "\n" and [s.step_time_s for s in read_profile(path).steps] == [0.1, 0.2, 0.3]


def test_an_orphaned_fork_child_stops_with_one_warning_where_a_restarted_job_took_the_profile(
        tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    to_child, from_child = _orphan_a_fork_child_that_trains(path)
    try:
        with Tracker(path, gpu="cpu", workers=2, local_batch=8, warmup_steps=0, window=1, fsync="none",
                     epochs_done=1.0, errors="raise") as restarted:
            for _ in range(2):
                os.write(to_child, b"s")
                assert os.read(from_child, 1) == b"s"
                restarted.step(step_time_s=0.5)
    finally:
        said = _orphans_last_word(to_child, from_child)
    assert said.count("|") == 0 and f"pid {os.getpid()}" in said and "tracking stops and training goes on" in said
    assert [(s.workers, s.step_time_s) for s in read_profile(path).steps] == [(1, 0.1), (1, 0.2), (2, 0.5), (2, 0.5)]


def test_an_evaluation_during_the_warm_up_after_a_restart_at_a_new_configuration_writes_no_cold_step_time(
        tmp_path: Path) -> None:
    # The evaluation wrote the warm-up steps' times (CUDA and NCCL start-up, torch.compile)
    # as a step record before it: a re-plan read 20 s a step where the job runs at 0.15 s.
    from cotune.track import job_progress

    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="t4", workers=2, local_batch=64, workload=WORKLOAD, warmup_steps=0, window=5,
                 fsync="none") as tr:
        for _ in range(5):
            tr.step(step_time_s=0.2)
    tr = Tracker(path, gpu="t4", workers=4, local_batch=64, epochs_done=0.5, cause="replan", warmup_steps=5,
                 window=5, fsync="none")
    tr.step(step_time_s=40.0)
    tr.step(step_time_s=0.15)
    tr.eval(metric=0.71)  # during the warm-up: held for the first window past it
    for _ in range(3):
        tr.step(step_time_s=0.15)
    with pytest.warns(RuntimeWarning, match=r"1 evaluation\(s\) at global batch 256 .*not written: the tracker closed"):
        tr.close()  # the job ends (or is preempted) before that window
    profile = read_profile(path)
    assert [(s.workers, s.step_time_s) for s in profile.steps] == [(2, 0.2)] and profile.evals == ()
    assert job_progress(profile).step_time_s == 0.2


def test_an_evaluation_in_the_warm_up_of_a_restart_after_an_early_out_of_memory_writes_no_cold_step_time(
    tmp_path: Path,
) -> None:
    # The job ran out of memory before its first step record; restarted at a smaller batch
    # (cause="replan"), an evaluation during the warm-up wrote the cold steps (40 s, 0.15 s)
    # as the job's step time, 20 s a step where it runs at 0.15 s: only a restart with an
    # earlier step record counted as one. With no step record of the job the evaluation
    # names no other configuration, so it is written, and the cold steps are not.
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="t4", workers=2, local_batch=128, workload=WORKLOAD, warmup_steps=5, fsync="none") as tr:
        tr.step(step_time_s=9.0)
        tr.out_of_memory("CUDA out of memory")
    with Tracker(path, gpu="t4", workers=2, local_batch=64, warmup_steps=5, fsync="none", cause="replan") as tr:
        tr.step(step_time_s=40.0)
        tr.step(step_time_s=0.15)
        tr.eval(metric=0.71)
    profile = read_profile(path)
    assert profile.steps == () and [(e.global_batch, e.metric) for e in profile.evals] == [(128, 0.71)]


def test_an_evaluation_in_the_warm_up_after_a_move_before_any_step_record_writes_no_cold_step_time(
    tmp_path: Path,
) -> None:
    # reconfigure() after an out-of-memory in the first steps, then an evaluation during the
    # new warm-up: the cold steps (30 s, 0.15 s) were written as a 15 s step record.
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="t4", workers=2, local_batch=128, workload=WORKLOAD, warmup_steps=5, fsync="none") as tr:
        tr.step(step_time_s=9.0)
        tr.out_of_memory("CUDA out of memory")
        tr.reconfigure(local_batch=64)
        tr.step(step_time_s=30.0)
        tr.step(step_time_s=0.15)
        tr.eval(metric=0.7)
    rows = [(d["record"], d.get("local_batch") or d.get("global_batch")) for d in _lines(path)[1:]]
    assert rows == [("failure", 128), ("eval", 128)]


def test_an_evaluation_in_the_warm_up_of_a_restart_at_the_same_configuration_is_written_without_cold_steps(
    tmp_path: Path,
) -> None:
    # The most common restart: the same configuration. Its evaluation during the warm-up
    # wrote the cold steps (40 s, 0.2 s) as a step record of 20.1 s before it.
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="t4", workers=2, local_batch=32, workload=WORKLOAD, warmup_steps=0, window=5,
                 fsync="none") as tr:
        for _ in range(5):
            tr.step(step_time_s=0.2)
        tr.eval(metric=0.5)
    with Tracker(path, gpu="t4", workers=2, local_batch=32, epochs_done=0.32, warmup_steps=5, fsync="none") as tr:
        tr.step(step_time_s=40.0)
        tr.step(step_time_s=0.2)
        tr.eval(metric=0.6)
    profile = read_profile(path)
    assert [(s.step_time_s, s.timed_steps) for s in profile.steps] == [(0.2, 5)]
    assert [e.metric for e in profile.evals] == [0.5, 0.6]


# --- windows coarsen as the job runs (WINDOW_DOUBLING_RECORDS) ---------------------------------


def _doubling_every_two_records(tmp_path, monkeypatch, *, window: int, steps: int):
    """A profile a tracker wrote ``steps`` steps of 0.1 s to, its window doubling every two records."""
    import cotune.track._tracker as tracker_module

    monkeypatch.setattr(tracker_module, "WINDOW_DOUBLING_RECORDS", 2)
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, window=window, warmup_steps=0,
                 fsync="none") as tr:
        for _ in range(steps):
            tr.step(step_time_s=0.1)
    return path


def test_the_window_doubles_after_every_doubling_threshold_of_records_at_one_configuration(tmp_path, monkeypatch):
    # A fixed window wrote ~43,000 records a day for a 20 ms-step job, past a service's limit in a day.
    path = _doubling_every_two_records(tmp_path, monkeypatch, window=1, steps=14)
    assert [s.timed_steps for s in read_profile(path).steps] == [1, 1, 2, 2, 4, 4]


def test_a_resumed_tracker_goes_on_at_the_window_its_configurations_records_reached(tmp_path, monkeypatch):
    path = _doubling_every_two_records(tmp_path, monkeypatch, window=3, steps=6)
    resumed = Tracker(path, gpu="cpu", workers=1, local_batch=8, window=3, warmup_steps=0, fsync="none",
                      epochs_done=0.05)
    assert resumed.current_window == 6
    resumed.reconfigure(workers=2)
    assert resumed.current_window == 3  # another configuration starts again at the window given
    resumed.close()


def test_background_fsync_syncs_the_last_record_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The helper thread is woken per record (a lock released, requests while it syncs
    # coalescing into one more sync): the file as last written must reach an fsync.
    from _waiting import wait_for

    path = tmp_path / "job.jsonl"
    synced_sizes: list[int] = []
    real_fsync = os.fsync

    def fsync_seen(fd: int) -> None:
        real_fsync(fd)
        if os.path.samestat(os.fstat(fd), os.stat(path)):
            synced_sizes.append(os.fstat(fd).st_size)

    monkeypatch.setattr(os, "fsync", fsync_seen)
    tr = Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=1,
                 fsync="background")
    for burst in range(3):
        for _ in range(5):  # records faster than the helper syncs them
            tr.step(step_time_s=0.1)
        size = path.stat().st_size
        wait_for(lambda: size in synced_sizes, what=f"an fsync of the profile after burst {burst + 1}")
    tr.close()
    assert len(read_profile(path).steps) == 15


def test_the_trackers_lines_are_the_lines_the_full_check_writes(tmp_path: Path) -> None:
    # Records after the first of a shape are written from a template (cotune/profile/_quick.py):
    # each line must be the one the full check (the record read back by the reader's rule, then
    # json.dumps) writes for the record it holds.
    from cotune.profile import record_from_dict
    from cotune.profile import _quick
    from cotune.profile._profile import _dump

    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="t4", workers=4, local_batch=8, workload=WORKLOAD, window=3, warmup_steps=1,
                 schedule_epochs=12.0, fsync="none") as tr:
        for i in range(40):
            tr.step(step_time_s=0.01 + i * 1.37e-4)
            if i % 7 == 6:
                tr.eval(metric=0.5 + i / 97, grad_sqr=1.5 + i, grad_var=0.25 * i)
            if i == 20:
                tr.reconfigure(workers=2, cause="revocation")
        tr.eval(metric=0.25)
        tr.eval(metric=-0.0)  # from the template the evaluation before made: written as the reader reads it, 0.0
        tr.noise(b_noise=512.0)
    lines = path.read_text().splitlines(keepends=True)
    assert len(lines) > 15
    for line in lines:
        _quick._TEMPLATES.clear()
        assert _dump(record_from_dict(json.loads(line))) == line
    _quick._TEMPLATES.clear()


def _can_set_sched_batch() -> bool:
    """Whether this environment lets a thread take SCHED_BATCH (a seccomp profile may refuse it)."""
    import threading

    said: list[bool] = []

    def probe() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
            said.append(True)
        except OSError:
            said.append(False)

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    return said == [True]


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="SCHED_BATCH is Linux's")
def test_the_fsync_helper_runs_under_sched_batch_so_waking_it_never_preempts_the_training_thread(
        tmp_path: Path) -> None:
    # Under the default policy the woken helper took the training thread's core in the
    # middle of its eval() on a busy machine (milliseconds in a tenth of the calls).
    from _waiting import wait_for

    if not _can_set_sched_batch():
        pytest.skip("this environment refuses SCHED_BATCH to a thread")
    tr = Tracker(tmp_path / "job.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, fsync="background")
    helper = tr._syncer._thread.native_id
    wait_for(lambda: os.sched_getscheduler(helper) == os.SCHED_BATCH, what="the fsync helper's policy")
    assert os.sched_getscheduler(0) != os.SCHED_BATCH  # the training thread keeps its own
    tr.close()


def test_close_waits_for_an_fsync_of_a_record_written_while_the_helper_was_syncing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A record written during the helper's fsync leaves a request pending; close() then finds
    # the helper's lock released already. The helper must still sync once more after the
    # close, or the last record is never fsynced although close() returned.
    import threading

    path = tmp_path / "job.jsonl"
    real_fsync = os.fsync
    syncing, sync_may_end = threading.Event(), threading.Event()
    synced_sizes: list[int] = []  # the file's size as each of the helper's fsyncs began

    def fsync_held_until_close(fd: int) -> None:
        if threading.current_thread().name == "cotune-tracker-fsync":
            synced_sizes.append(os.fstat(fd).st_size)
            syncing.set()
            assert sync_may_end.wait(timeout=60)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync_held_until_close)
    tr = Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, warmup_steps=0, window=1,
                 fsync="background")
    assert syncing.wait(timeout=60)  # the helper is syncing the workload record
    tr.step(step_time_s=0.1)  # a step record written during that sync: its request is pending
    syncer = tr._syncer
    release = syncer._release

    def release_then_end_the_sync() -> None:
        release()
        if syncer._stop:  # close() asked: only now does the sync under way end
            sync_may_end.set()

    monkeypatch.setattr(syncer, "_release", release_then_end_the_sync)
    tr.close()
    assert synced_sizes[-1] == path.stat().st_size
    assert len(read_profile(path).steps) == 1
