"""The tracker shared by threads, and a last fsync that fails when it closes.

The promise: calls from several threads (a training loop and a framework's callback
thread) each count and write as one; the helper thread's failed fsync reaches the
caller, at its next record or at close() (by ``errors``), never as a thread's traceback
and never unsaid; and close() never replaces the exception a training ends in.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from _helpers import fork_while_a_thread_holds_a_lock
from cotune.errors import StorageError
from cotune.profile import WorkloadRecord, read_profile
from cotune.track import Tracker

WORKLOAD = WorkloadRecord(name="job-a", dataset_size=1000, metric="acc", goal="max")




@pytest.fixture
def thread_tracebacks(monkeypatch) -> list[BaseException]:
    """The exceptions that ended a thread (what would print a thread's traceback on stderr)."""
    seen: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(args.exc_value))
    return seen


def _eio(fd: int) -> None:
    raise OSError(errno.EIO, "Input/output error")


def _share_a_tracker(path: Path, *, steppers: int, steps: int, evals: int) -> tuple[float, list[BaseException]]:
    """``steppers`` threads step one tracker ``steps`` times each while one more evaluates
    ``evals`` times, all started together; the epochs it counted, and what the threads raised."""
    start = threading.Barrier(steppers + 1)
    errors: list[BaseException] = []

    def run(call) -> None:  # noqa: ANN001
        try:
            start.wait()
            call()
        except BaseException as exc:  # noqa: BLE001 - reported by the caller's assertion
            errors.append(exc)

    def stepping() -> None:
        for i in range(steps):
            tr.step(step_time_s=0.1 + i / 1e6)

    def evaluating() -> None:
        for k in range(evals):
            tr.eval(metric=k / evals)

    with Tracker(path, gpu="cpu", workers=1, local_batch=1, workload=WORKLOAD, window=7, warmup_steps=0,
                 fsync="none") as tr:
        threads = [threading.Thread(target=run, args=(stepping,)) for _ in range(steppers)]
        threads.append(threading.Thread(target=run, args=(evaluating,)))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return tr.epoch, errors


def test_steps_and_evals_from_threads_sharing_a_tracker_are_each_recorded_once(tmp_path: Path,
                                                                                fewer_gil_turns) -> None:
    # Two threads in flush() at once wrote one window twice, or a window of no step (a
    # ProfileError in the training thread); a step appended during a flush was lost.
    steppers, steps, evals = 3, 400, 40
    for round_ in range(10):  # a race shows in some rounds, not every one
        path = tmp_path / f"job{round_}.jsonl"
        epoch, errors = _share_a_tracker(path, steppers=steppers, steps=steps, evals=evals)
        assert errors == []
        assert epoch == steppers * steps / WORKLOAD.dataset_size  # no step's samples lost
        profile = read_profile(path)
        assert not profile.warnings
        assert sum(s.timed_steps for s in profile.steps) == steppers * steps  # each step in one window, once
        assert sorted(e.metric for e in profile.evals) == [k / evals for k in range(evals)]


def _tracker(path: Path, **kw) -> Tracker:  # noqa: ANN003
    # window=1, no warm-up: every step writes its record, so close() has no window left to
    # write and its only work is the last sync.
    return Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, window=1, warmup_steps=0,
                   fsync="background", **kw)


def test_a_failed_last_background_sync_is_raised_by_close_under_errors_raise(tmp_path: Path, monkeypatch,
                                                                            thread_tracebacks) -> None:
    path = tmp_path / "job.jsonl"
    tr = _tracker(path, errors="raise")
    for _ in range(3):
        tr.step(step_time_s=0.1)
    syncer = tr._syncer
    monkeypatch.setattr(os, "fsync", _eio)
    with pytest.raises(StorageError) as info:
        tr.close()
    monkeypatch.undo()
    message = str(info.value)
    assert message.startswith(f"{path}: cannot sync its last records to disk") and "(EIO)" in message
    assert "check the disk" in message and "\n" not in message and info.value.errno == errno.EIO
    # Raised once everything was closed: the helper thread ended, its descriptor closed, the lock free.
    assert tr.closed and not syncer._thread.is_alive()
    with pytest.raises(OSError) as gone:
        os.fstat(syncer._fd)
    assert gone.value.errno == errno.EBADF
    tr.close()  # a second close does nothing
    with _tracker(path, errors="raise") as again:
        again.step(step_time_s=0.1)
    assert len(read_profile(path).steps) == 4
    assert thread_tracebacks == []


def test_a_failed_last_background_sync_is_a_warning_from_close_under_errors_warn(tmp_path: Path, monkeypatch,
                                                                                thread_tracebacks) -> None:
    tr = _tracker(tmp_path / "job.jsonl")
    tr.step(step_time_s=0.1)
    monkeypatch.setattr(os, "fsync", _eio)
    with pytest.warns(RuntimeWarning, match=r"cotune tracker: .*cannot sync its last records to disk.*\(EIO\)"):
        tr.close()
    assert tr.closed and thread_tracebacks == []


def test_a_sync_failure_a_step_raised_is_not_raised_again_by_close(tmp_path: Path, monkeypatch) -> None:
    from _waiting import wait_for

    tr = _tracker(tmp_path / "job.jsonl", errors="raise")
    monkeypatch.setattr(os, "fsync", _eio)
    raised: list[StorageError] = []

    def a_step_raises() -> bool:
        # Which step hears of the failure depends on when the helper runs its sync (that of
        # the workload record, still pending, may be the one that fails): the first, where
        # the helper ran at once (as it does where it cannot run under SCHED_BATCH), or a
        # later one. Every step asks for a sync, so one of them does.
        try:
            tr.step(step_time_s=0.1)
        except StorageError as exc:
            raised.append(exc)
        return bool(raised)

    wait_for(a_step_raises, what="a step that reports the failed sync")
    assert "cannot sync it to disk" in str(raised[0]) and raised[0].errno == errno.EIO
    tr.close()  # said once already, by the step
    assert tr.closed


def test_a_with_tracker_block_that_raises_keeps_its_exception_when_the_last_sync_fails(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    with pytest.warns(RuntimeWarning, match=r"cannot sync its last records.*while ValueError was raised"):
        with pytest.raises(ValueError, match="the training's own error"):
            with _tracker(tmp_path / "job.jsonl", errors="raise") as tr:
                tr.step(step_time_s=0.1)
                monkeypatch.setattr(os, "fsync", _eio)
                raise ValueError("the training's own error")
    assert tr.closed


def test_a_with_tracker_block_that_raises_keeps_its_exception_when_the_last_window_cannot_be_written(
        tmp_path: Path, monkeypatch) -> None:
    # errors="raise": the last partial window's write failed inside __exit__, and its
    # StorageError took the place of the training's own exception.
    from cotune.profile import ProfileWriter

    def full(self, record) -> None:  # noqa: ANN001
        raise StorageError("job.jsonl: cannot append a record: No space left on device (ENOSPC): free space")

    with pytest.warns(RuntimeWarning, match=r"No space left on device.*while KeyboardInterrupt was raised"):
        with pytest.raises(KeyboardInterrupt):
            with Tracker(tmp_path / "job.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, window=10,
                         warmup_steps=0, fsync="none", errors="raise") as tr:
                tr.step(step_time_s=0.1)  # a window of one step, for close() to write
                monkeypatch.setattr(ProfileWriter, "write", full)
                raise KeyboardInterrupt
    assert tr.closed


@pytest.mark.slow  # importing Lightning: 17 s on the shared 2 cores
def test_the_lightning_callback_keeps_the_trainings_exception_when_the_last_sync_fails(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    pytest.importorskip("lightning")
    from types import SimpleNamespace

    from cotune.track.lightning import TrackerCallback

    tr = _tracker(tmp_path / "job.jsonl", errors="raise")
    callback = TrackerCallback(tr, monitor="val_acc")
    tr.step(step_time_s=0.1)
    monkeypatch.setattr(os, "fsync", _eio)
    # Lightning raises the training's exception once on_exception returns: raised from there,
    # the storage fault would reach the user instead.
    with pytest.warns(RuntimeWarning, match=r"cannot sync its last records.*while ValueError was raised"):
        callback.on_exception(SimpleNamespace(is_global_zero=True), None, ValueError("the training's own error"))
    assert tr.closed


def test_a_tracker_forked_while_another_thread_was_in_a_call_records_in_the_child(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    # The tracker's lock, held by another thread at the fork, stays held in the child, where
    # that thread never runs: the child's first call waited on it for ever.
    path = tmp_path / "job.jsonl"
    with Tracker(path, gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, window=1, warmup_steps=0,
                 fsync="each") as tr:
        code = fork_while_a_thread_holds_a_lock(monkeypatch, hold=lambda: tr.step(step_time_s=0.1),
                                                child=lambda: tr.step(step_time_s=0.2))
    assert code == 0
    assert sorted(s.step_time_s for s in read_profile(path).steps) == [0.1, 0.2]


class _Signalled(Exception):
    """What the test's signal handler raises: a Ctrl-C's KeyboardInterrupt, under a name of its own."""


def test_an_exception_a_signal_raises_in_step_never_leaves_the_tracker_locked(tmp_path: Path,
                                                                              fewer_gil_turns) -> None:
    # Ctrl-C (SIGINT's KeyboardInterrupt) lands wherever the training thread is, this tracker's
    # step() included. Raised just as the lock was taken, before the block that releases it
    # (step() took it with acquire() then try:), it left the lock held by that thread for
    # good: any other thread's next call — a callback thread's eval(), a close() — waited
    # for ever. A real signal, sent again and again at random moments of a stepping loop
    # (on a step() that took the lock outside its try, 246 of 2,000 left it held).
    import queue
    import random
    import signal

    def handler(signo, frame) -> None:  # noqa: ANN001
        raise _Signalled

    rounds = 300
    tokens: queue.Queue[int | None] = queue.Queue()
    main = threading.get_ident()
    rng = random.Random(0)

    def signaller() -> None:
        while tokens.get() is not None:
            for _ in range(rng.randrange(2000)):  # a moment of the loop's, not a fixed delay
                pass
            signal.pthread_kill(main, signal.SIGUSR1)

    tr = Tracker(tmp_path / "job.jsonl", gpu="cpu", workers=1, local_batch=8, workload=WORKLOAD, window=10**6,
                 warmup_steps=0, fsync="none")
    previous = signal.signal(signal.SIGUSR1, handler)
    sender = threading.Thread(target=signaller)
    sender.start()
    held = 0
    try:
        for _ in range(rounds):
            try:
                tokens.put(1)  # one signal, for the loop below: it raises inside this try
                while True:
                    tr.step(step_time_s=0.1)
            except _Signalled:
                pass
            held += tr._lock._is_owned()  # a lock this thread keeps is one no other thread can take
            while tr._lock._is_owned():
                tr._lock.release()
    finally:
        tokens.put(None)
        sender.join()
        signal.signal(signal.SIGUSR1, previous)
    assert held == 0
    tr.close()
