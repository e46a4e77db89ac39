"""Several local batches timed in one launch (``TimingGroup``): one start-up for the lot,
each batch still its own record, and a failure or a kill loses no batch already timed.

The fast tests drive the session with a replacement launcher that answers groups the way
the torch worker does (a result folder per batch, the first failure ends the launch); the
slow one runs real torchrun probes.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from profiler_helpers import FormulaLauncher, of, spec

import profiler
from cotune.profile import read_profile
from profiler import LaunchOutcome, LaunchRequest, ProbeSettings, TorchrunLauncher
from profiler._plan import TimingGroup, TimingPoint


@dataclass
class GroupLauncher(FormulaLauncher):
    timing_groups: bool = True

    def step_time(self, local_batch: int, workers: int) -> tuple[float, float]:
        return 0.001 * local_batch + 0.002 * (workers - 1), 0.002 * (workers - 1)

    def metric(self, epoch: int, global_batch: int) -> float:
        return 1 - 0.5 / epoch


def _profile(out: Path, launcher, **kwargs):
    return profiler.profile(spec("tiny"), out=out, launcher=launcher, gpu="t4", stream=io.StringIO(),
                            probe=ProbeSettings(device="cpu"), **kwargs)


def _timing_launches(launcher: FormulaLauncher) -> list[tuple[int, list[int]]]:
    return [(t["local_batch"] and launcher.calls[i][1], [t["local_batch"], *t.get("more_local_batches", [])])
            for i, t in enumerate(launcher.tasks) if t["kind"] == "timing"]


def test_a_grid_times_each_worker_count_in_one_launch(tmp_path):
    out, fake = tmp_path / "g.jsonl", GroupLauncher()
    summary = _profile(out, fake, workers=[1, 2], local_batches=[32, 8, 16], curves=[])
    assert _timing_launches(fake) == [(1, [8, 16, 32]), (2, [8, 16, 32])]
    steps = {(s.workers, s.local_batch): s.step_time_s for s in read_profile(out).steps}
    assert steps == {(w, b): pytest.approx(0.001 * b + 0.002 * (w - 1)) for w in (1, 2) for b in (8, 16, 32)}
    assert summary.ran == 6 and summary.failed == 0 and summary.launches == 2
    assert "6 probes run (0 failed) in 2 launches" in summary.describe()
    costs = of(out, "probe_cost")
    assert len(costs) == 6 and all(c["outcome"] == "ok" for c in costs)
    # The launches' wall time is shared out among their points, not counted once per point.
    assert sum(c["wall_s"] for c in costs) == pytest.approx(2 * fake.wall_s)


def test_an_oom_in_a_group_keeps_the_batches_before_it_and_ends_the_ladder(tmp_path):
    out, fake = tmp_path / "oom.jsonl", GroupLauncher(oom_at=65)
    _profile(out, fake, max_workers=1, min_batch=8, max_batch=1024, curves=[])
    launches = _timing_launches(fake)
    # The whole ladder in one launch, up to the workload's 512 training samples.
    assert launches[0] == (1, [8, 16, 32, 64, 128, 256, 512])
    assert len(launches) == 1  # nothing at or above the out-of-memory batch was launched again
    profile = read_profile(out)
    assert [s.local_batch for s in profile.steps] == [8, 16, 32, 64]
    assert [(f.local_batch, f.failure) for f in profile.failures] == [(128, "oom")]
    assert [c["outcome"] for c in of(out, "probe_cost")] == ["ok"] * 4 + ["oom"]


def test_a_crash_in_a_group_is_recorded_and_the_rest_runs_in_a_new_launch(tmp_path):
    out, fake = tmp_path / "crash.jsonl", GroupLauncher(crash_at=16)
    summary = _profile(out, fake, workers=[1], local_batches=[8, 16, 32, 64], curves=[])
    assert _timing_launches(fake) == [(1, [8, 16, 32, 64]), (1, [32, 64])]
    profile = read_profile(out)
    assert [s.local_batch for s in profile.steps] == [8, 32, 64]
    assert [(f.local_batch, f.failure) for f in profile.failures] == [(16, "crash")]
    assert summary.ran == 4 and summary.failed == 1


def test_a_rerun_launches_only_the_batches_the_profile_lacks(tmp_path):
    out = tmp_path / "r.jsonl"
    _profile(out, GroupLauncher(), workers=[1], local_batches=[8, 16], curves=[])
    again = GroupLauncher()
    summary = _profile(out, again, workers=[1], local_batches=[8, 16, 32, 64], curves=[])
    assert _timing_launches(again) == [(1, [32, 64])]
    assert summary.skipped_done == 2 and summary.ran == 2


@dataclass
class KilledMidGroup(GroupLauncher):
    """Times the first batch of a group, lets the session see it, then the session dies."""

    def _launch_group(self, task, results, w, poll):
        folder = results / "batch-000"
        folder.mkdir()
        (folder / "rank0.json").write_text(__import__("json").dumps(self._timing(task["local_batch"], w)))
        poll()
        raise KeyboardInterrupt  # a Ctrl-C (or a kill) while the launch runs


def test_a_kill_while_a_group_runs_keeps_the_batches_already_timed(tmp_path):
    out = tmp_path / "k.jsonl"
    with pytest.raises(KeyboardInterrupt):
        _profile(out, KilledMidGroup(), workers=[1], local_batches=[8, 16, 32], curves=[])
    assert [s.local_batch for s in read_profile(out).steps] == [8]
    # The rerun measures only what is missing.
    again = GroupLauncher()
    _profile(out, again, workers=[1], local_batches=[8, 16, 32], curves=[])
    assert _timing_launches(again) == [(1, [16, 32])]
    assert [s.local_batch for s in read_profile(out).steps] == [8, 16, 32]


def test_a_launcher_without_groups_gets_one_launch_per_point(tmp_path):
    out, fake = tmp_path / "one.jsonl", GroupLauncher(timing_groups=False)
    _profile(out, fake, workers=[1], local_batches=[8, 16, 32], curves=[])
    assert _timing_launches(fake) == [(1, [8]), (1, [16]), (1, [32])]


def test_a_timing_group_holds_one_worker_count_in_ascending_batches():
    with pytest.raises(ValueError, match="one worker count"):
        TimingGroup((TimingPoint(workers=1, local_batch=8), TimingPoint(workers=2, local_batch=8)))
    with pytest.raises(ValueError, match="ascend"):
        TimingGroup((TimingPoint(workers=1, local_batch=16), TimingPoint(workers=1, local_batch=8)))


@dataclass
class CountingLauncher:
    """A real torchrun launcher that counts its launches."""

    inner: TorchrunLauncher
    launches: int = 0
    timing_groups = True

    @property
    def hosts(self) -> int:
        return self.inner.hosts

    def launch(self, request: LaunchRequest, *, poll=None) -> LaunchOutcome:
        self.launches += 1
        return self.inner.launch(request, poll=poll)


@pytest.mark.slow
def test_real_torchrun_times_three_batches_in_one_launch(tmp_path):
    out, launcher = tmp_path / "real.jsonl", CountingLauncher(TorchrunLauncher())
    summary = profiler.profile(
        spec("tiny"), out=out, launcher=launcher, workers=[2], local_batches=[4, 8, 16], curves=[],
        stream=io.StringIO(), probe=ProbeSettings(device="cpu", warmup_steps=2, min_timed_steps=5,
                                                  max_timed_steps=15, max_timed_s=3.0),
    )
    assert launcher.launches == 1 and summary.failed == 0
    steps = read_profile(out).steps
    assert [(s.workers, s.local_batch) for s in steps] == [(2, 4), (2, 8), (2, 16)]
    for s in steps:
        assert 0 < s.step_time_s < 5 and s.sync_time_s is not None and 5 <= s.timed_steps <= 15
    costs = of(out, "probe_cost")
    assert [c["local_batch"] for c in costs] == [4, 8, 16] and all(c["wall_s"] > 0 for c in costs)


class _Clock:
    """Stands in for the session's ``time`` module: a monotonic clock the launcher moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def __getattr__(self, name: str):
        return getattr(__import__("time"), name)  # time_ns etc. stay real


@dataclass
class TimedGroupLauncher(GroupLauncher):
    """A group launcher on a fake clock: ``startup_s`` per launch, ``batch_s`` per batch."""

    clock: _Clock | None = None
    startup_s: float = 8.0
    batch_s: float = 1.0

    def launch(self, request, *, poll=None):
        began = self.clock.now
        self.clock.now += self.startup_s

        def tick() -> None:
            self.clock.now += self.batch_s
            if poll is not None:
                poll()

        outcome = super().launch(request, poll=tick)
        if not (json.loads(Path(request.args[0]).read_text()).get("more_local_batches")):
            self.clock.now += self.batch_s  # a lone point's own steps
        return LaunchOutcome(returncode=outcome.returncode, timed_out=False, wall_s=self.clock.now - began)


def test_the_budget_prices_a_further_batch_of_a_launch_by_what_such_batches_cost(tmp_path, monkeypatch):
    import profiler._session as session_module

    clock = _Clock()
    monkeypatch.setattr(session_module, "time", clock)
    out = tmp_path / "b.jsonl"
    fake = TimedGroupLauncher(clock=clock)
    summary = _profile(out, fake, workers=[1, 2], local_batches=[8, 16, 32, 64], curves=[], budget_s=20.0)
    launches = _timing_launches(fake)
    # Nothing measured yet: a further batch is priced as a launch of its own (8 s), so the
    # first launch takes two batches (16 s of 20). Then a launch is 9 s and a further batch
    # 1 s: the second launch fits two batches in the 10 s left.
    assert launches == [(1, [8, 16]), (2, [8, 16])]
    costs = of(out, "probe_cost")
    assert [round(c["wall_s"], 6) for c in costs] == [9.0, 1.0, 9.0, 1.0]
    assert sum(c["wall_s"] for c in costs) <= 20.0 and summary.skipped_budget == 4


@dataclass
class HangsAtLauncher(TimedGroupLauncher):
    """On the fake clock, the batch ``hang_at`` never reports: the clock runs on while the
    session polls, until the session stops the launch (an exception out of ``poll``, on
    which a real launcher kills its workers)."""

    hang_at: int = 16

    def _launch_group(self, task, results, w, poll):
        for rank in range(w):
            (results / f"rank{rank}.started").touch()  # as every real worker does first
        for i, b in enumerate([task["local_batch"], *task["more_local_batches"]]):
            if b == self.hang_at:
                for _ in range(10_000):  # a tick each: 10,000 s of fake time
                    poll()  # raises once the batch is overdue
                raise AssertionError("the session never stopped the hanging batch")
            folder = results / f"batch-{i:03d}"
            folder.mkdir()
            (folder / "rank0.json").write_text(json.dumps(self._timing(b, w)))
            poll()
        (results / "rank0.json").write_text(json.dumps(self._timing(b, w)))
        return LaunchOutcome(returncode=0, timed_out=False, wall_s=0.0)


def test_probe_timeout_holds_for_each_batch_of_a_launch(tmp_path, monkeypatch):
    import profiler._session as session_module

    clock = _Clock()
    monkeypatch.setattr(session_module, "time", clock)
    out = tmp_path / "t.jsonl"
    fake = HangsAtLauncher(clock=clock, hang_at=16)
    summary = profiler.profile(spec("tiny"), out=out, launcher=fake, gpu="t4", stream=io.StringIO(),
                               probe=ProbeSettings(device="cpu", timeout_s=30.0), workers=[1],
                               local_batches=[8, 16, 32], curves=[])
    profile = read_profile(out)
    assert [s.local_batch for s in profile.steps] == [8, 32]  # 32 ran in a launch of its own after the time-out
    (failure,) = profile.failures
    assert (failure.local_batch, failure.failure) == (16, "timeout") and "--probe-timeout" in failure.message
    assert "30s" in failure.message  # the limit is the batch's own, not the launch's 3 × 30 s
    costs = {c["local_batch"]: c["wall_s"] for c in of(out, "probe_cost")}
    assert 30.0 < costs[16] <= 32.0  # stopped within a tick of the batch's limit
    assert summary.ran == 3 and summary.failed == 1


def test_a_batch_whose_result_is_in_is_kept_even_when_it_took_longer_than_the_timeout(tmp_path, monkeypatch):
    import profiler._session as session_module

    clock = _Clock()
    monkeypatch.setattr(session_module, "time", clock)
    out = tmp_path / "late.jsonl"
    # Each batch's result is on disk when the session next looks, 39 s (the first) and 31 s
    # after the one before: over the 30 s limit, yet measured — the clock must not discard it.
    fake = TimedGroupLauncher(clock=clock, startup_s=8.0, batch_s=31.0)
    summary = profiler.profile(spec("tiny"), out=out, launcher=fake, gpu="t4", stream=io.StringIO(),
                               probe=ProbeSettings(device="cpu", timeout_s=30.0), workers=[1],
                               local_batches=[8, 16, 32], curves=[])
    assert [s.local_batch for s in read_profile(out).steps] == [8, 16, 32]
    assert not read_profile(out).failures and summary.launches == 1


@dataclass
class FloodsItsLog(GroupLauncher):
    """A workload that prints ``flood_bytes`` in a loop, then crashes: its probe's log is that big."""

    flood_bytes: int = 0
    run: int = 1  # said in the log's first line: which run's log a kept log holds
    FIRST = b"the start of the workload's output\n"
    LINE = b"loss is still going down, printing every step\n"
    LAST = b"RuntimeError: the workload's own error, at the very end\n"

    @property
    def lines(self) -> int:
        return self.flood_bytes // len(self.LINE)

    @property
    def run_line(self) -> bytes:
        return f"run {self.run}\n".encode()

    @property
    def log_bytes(self) -> int:
        return len(self.FIRST) + len(self.run_line) + self.lines * len(self.LINE) + len(self.LAST)

    def launch(self, request: LaunchRequest, *, poll=None) -> LaunchOutcome:
        with open(request.log_path, "wb") as fh:
            fh.write(self.FIRST + self.run_line + self.LINE * self.lines + self.LAST)
        return super().launch(request, poll=poll)


def test_a_failed_probes_kept_log_holds_its_start_and_end_not_all_it_printed(tmp_path):
    from profiler._session import KEPT_LOG_HEAD_BYTES, KEPT_LOG_TAIL_BYTES

    out, fake = tmp_path / "flood.jsonl", FloodsItsLog(crash_at=8, flood_bytes=12 * 2**20)
    _profile(out, fake, workers=[1], local_batches=[8], curves=[])
    (kept,) = (tmp_path / "flood.jsonl.cotune" / "logs").iterdir()
    text = kept.read_bytes()
    # Was a copy of all 12 MiB, per failed probe: a gigabyte printed was a gigabyte kept.
    assert len(text) < KEPT_LOG_HEAD_BYTES + KEPT_LOG_TAIL_BYTES + 200
    assert text.startswith(fake.FIRST) and fake.LAST in text[-KEPT_LOG_TAIL_BYTES:]
    cut = fake.log_bytes - KEPT_LOG_HEAD_BYTES - KEPT_LOG_TAIL_BYTES
    assert f"[cotune: {cut} bytes of this log cut here".encode() in text


def test_a_rerun_of_a_failing_probe_keeps_only_its_own_bounded_log(tmp_path):
    from profiler._session import KEPT_LOG_HEAD_BYTES, KEPT_LOG_TAIL_BYTES

    out = tmp_path / "flood.jsonl"
    for run in (1, 2):  # the second run measures the failed point again, under the same probe name
        _profile(out, FloodsItsLog(crash_at=8, flood_bytes=12 * 2**20, run=run), workers=[1], local_batches=[8],
                 curves=[], retry_failed=["crash"])
    (kept,) = (tmp_path / "flood.jsonl.cotune" / "logs").iterdir()
    text = kept.read_bytes()
    # Was appended to: 5 MiB more on every rerun, starting with the first run's log.
    assert len(text) < KEPT_LOG_HEAD_BYTES + KEPT_LOG_TAIL_BYTES + 200
    assert text.startswith(FloodsItsLog.FIRST + b"run 2\n") and text.count(FloodsItsLog.FIRST) == 1


@dataclass
class LauncherKilledAfterACrash(GroupLauncher):
    """A rerun's launch whose launcher is killed (kill -9 of torchrun): a fault of ours, recorded nowhere."""

    LOG = b"torchrun: the launcher's own log, nothing the workload printed\n"

    def launch(self, request: LaunchRequest, *, poll=None) -> LaunchOutcome:
        request.log_path.write_bytes(self.LOG)
        return LaunchOutcome(returncode=-9, timed_out=False, wall_s=self.wall_s)


def test_a_launcher_fault_on_a_rerun_keeps_its_log_apart_from_the_recorded_crashs(tmp_path):
    from profiler._launcher import LauncherError

    out = tmp_path / "flood.jsonl"
    _profile(out, FloodsItsLog(crash_at=8, run=1), workers=[1], local_batches=[8], curves=[])
    (crash_log,) = (tmp_path / "flood.jsonl.cotune" / "logs").iterdir()
    with pytest.raises(LauncherError) as info:
        _profile(out, LauncherKilledAfterACrash(), workers=[1], local_batches=[8], curves=[], retry_failed=["crash"])
    # Was replaced by the launcher's log, which the crash record still in effect then named.
    (failure,) = read_profile(out).failures
    assert str(crash_log) in failure.message and b"run 1" in crash_log.read_bytes()
    fault_log = crash_log.with_name(crash_log.stem + ".launcher.log")
    assert fault_log.read_bytes() == LauncherKilledAfterACrash.LOG and str(fault_log) in str(info.value)
