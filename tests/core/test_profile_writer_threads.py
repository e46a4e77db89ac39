"""One ProfileWriter shared by threads, and a close() that fails.

The promise: threads sharing a writer (a training loop and a framework's callback thread)
each get whole lines; a failed write cuts back only its own record, never one another
thread wrote meanwhile, and every write after it is refused; close() waits for a write
in progress; and a close that fails is a StorageError, never silent, that leaves nothing
open and never replaces the exception a ``with`` block ends in.
"""

from __future__ import annotations

import errno
import os
import threading

import pytest

from _fsfaults import CloseFails
from _helpers import fork_while_a_thread_holds_a_lock
from cotune.errors import EXIT_ENVIRONMENT, StorageError
from cotune.profile import ProfileWriter, StepRecord, WorkloadRecord, read_profile

WORKLOAD = WorkloadRecord(name="w", dataset_size=100_000)


def _record(thread: str, i: int) -> StepRecord:
    """Record ``i`` of ``thread``: its job names the thread, its local batch the index."""
    return StepRecord(gpu="cpu", workers=1, local_batch=i + 1, step_time_s=0.1 + i / 1e6, job=thread)


def _written_by(path) -> dict[str, list[int]]:  # noqa: ANN001
    """The profile's step records as each thread's indices, in file order; it must read clean."""
    profile = read_profile(path)
    assert not profile.warnings  # no torn or glued line
    by: dict[str, list[int]] = {}
    for step in profile.steps:
        by.setdefault(step.job, []).append(step.local_batch - 1)
    return by




@pytest.mark.parametrize("fsync", [False, True])
def test_records_from_threads_sharing_one_writer_are_each_one_whole_line(tmp_path, fsync, fewer_gil_turns):
    path = tmp_path / "p.jsonl"
    threads, per_thread = 4, 250
    start = threading.Barrier(threads)
    errors: list[BaseException] = []

    def hammer(name: str) -> None:
        try:
            start.wait()
            for i in range(per_thread):
                writer.write(_record(name, i))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    with ProfileWriter(path, fsync=fsync) as writer:
        writer.write(WORKLOAD)
        workers = [threading.Thread(target=hammer, args=(f"t{k}",)) for k in range(threads)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    assert errors == []
    assert _written_by(path) == {f"t{k}": list(range(per_thread)) for k in range(threads)}
    assert len(path.read_bytes().splitlines()) == 1 + threads * per_thread


def test_a_failed_write_cuts_back_only_its_own_record_while_other_threads_write(tmp_path, monkeypatch,
                                                                               fewer_gil_turns):
    # Thread "a"'s 100th record fails in its fsync (ENOSPC); while it is inside that fsync,
    # thread "b" starts a write, and two more threads write all along. The cut-back read
    # where a's record began from the shared descriptor's offset: b's record appended
    # meanwhile moved it, and the cut took b's record (reported written) and kept a's.
    path = tmp_path / "p.jsonl"
    real_fsync = os.fsync
    b_may_write, b_writes = threading.Event(), threading.Event()
    fail_at = 100
    a_calls = [0]

    def fsync(fd: int) -> None:
        if threading.current_thread().name == "a":
            a_calls[0] += 1
            if a_calls[0] == fail_at:
                b_may_write.set()
                b_writes.wait()  # b is calling write() now: with the lock, it waits for this one
                raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    start = threading.Barrier(3)
    outcome: dict[str, list[tuple[int, BaseException | None]]] = {}

    def hammer(name: str, count: int) -> None:
        done = outcome.setdefault(name, [])
        if name != "b":
            start.wait()
        else:
            b_may_write.wait()
            b_writes.set()
        for i in range(count):
            try:
                writer.write(_record(name, i))
            except StorageError as exc:
                done.append((i, exc))
            else:
                done.append((i, None))

    with ProfileWriter(path, fsync=True) as writer:
        writer.write(WORKLOAD)
        monkeypatch.setattr(os, "fsync", fsync)
        workers = [threading.Thread(target=hammer, args=(name, count), name=name)
                   for name, count in (("a", 1000), ("b", 1), ("c", 1000), ("d", 1000))]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        monkeypatch.undo()
        with pytest.raises(StorageError, match="No space left on device"):  # broken for every thread after it
            writer.write(_record("main", 0))

    a_failed = [i for i, exc in outcome["a"] if exc is not None]
    assert a_failed[0] == fail_at - 1 and outcome["a"][fail_at - 1][1].errno == errno.ENOSPC
    ((_, b_error),) = outcome["b"]  # b's write began while a's failed write was under way
    assert isinstance(b_error, StorageError) and b_error.errno == errno.ENOSPC
    for done in outcome.values():  # after the failure, every write of every thread is refused
        failed_from = next((k for k, (_, exc) in enumerate(done) if exc is not None), len(done))
        assert all(exc is not None for _, exc in done[failed_from:])
    # The file holds exactly the records whose write returned, each thread's in its order.
    returned = {name: [i for i, exc in done if exc is None] for name, done in outcome.items()}
    assert _written_by(path) == {name: indices for name, indices in returned.items() if indices}


def test_close_from_another_thread_waits_for_a_write_in_progress(tmp_path, monkeypatch):
    # close() closed the descriptor under a write in its fsync: the write failed (EBADF) as
    # a StorageError, after its record had reached the file.
    path = tmp_path / "p.jsonl"
    real_fsync = os.fsync
    in_fsync, may_sync, closed = threading.Event(), threading.Event(), threading.Event()
    results: list[BaseException | None] = []

    def fsync(fd: int) -> None:
        if threading.current_thread().name == "writing":
            in_fsync.set()
            may_sync.wait()
            assert not closed.is_set()  # raised into the writing thread's result below
        real_fsync(fd)

    def write() -> None:
        try:
            writer.write(_record("w", 0))
            results.append(None)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            results.append(exc)

    def close() -> None:
        writer.close()
        closed.set()

    writer = ProfileWriter(path, fsync=True)
    writer.open()
    writer.write(WORKLOAD)
    monkeypatch.setattr(os, "fsync", fsync)
    writing = threading.Thread(target=write, name="writing")
    writing.start()
    in_fsync.wait()
    closing = threading.Thread(target=close)
    closing.start()
    may_sync.set()
    writing.join()
    closing.join()
    monkeypatch.undo()
    assert results == [None] and closed.is_set() and not writer.is_open
    assert _written_by(path) == {"w": [0]}


def test_a_close_that_fails_is_a_storage_error_raised_after_the_file_is_closed(tmp_path):
    path = tmp_path / "p.jsonl"
    writer = ProfileWriter(path, fsync=False)
    writer.open()
    writer.write(WORKLOAD)
    fd = writer._fh.fileno()
    writer._fh = CloseFails(writer._fh, errno.EIO)
    with pytest.raises(StorageError) as info:
        writer.close()
    message = str(info.value)
    assert message.startswith(f"{path}: cannot close it") and "(EIO)" in message and "check the disk" in message
    assert "\n" not in message and info.value.errno == errno.EIO and info.value.exit_code == EXIT_ENVIRONMENT
    assert not writer.is_open
    with pytest.raises(OSError) as gone:
        os.fstat(fd)  # the descriptor is closed, not leaked
    assert gone.value.errno == errno.EBADF
    writer.close()  # a second close does nothing
    with ProfileWriter(path) as again:  # the lock went with the descriptor
        again.write(_record("w", 0))
    assert _written_by(path) == {"w": [0]}


def test_a_with_block_that_raises_keeps_its_exception_when_the_close_fails_too(tmp_path):
    path = tmp_path / "p.jsonl"
    with pytest.warns(RuntimeWarning, match=r"cannot close it.*\(EIO\).*while ValueError was raised"):
        with pytest.raises(ValueError, match="the job's own error"):
            with ProfileWriter(path, fsync=False) as writer:
                writer.write(WORKLOAD)
                writer._fh = CloseFails(writer._fh, errno.EIO)
                raise ValueError("the job's own error")
    assert not writer.is_open


def test_a_with_block_that_ends_normally_raises_a_failed_close(tmp_path):
    path = tmp_path / "p.jsonl"
    with pytest.raises(StorageError, match=r"cannot close it.*\(ENOSPC\)"):
        with ProfileWriter(path, fsync=False) as writer:
            writer.write(WORKLOAD)
            writer._fh = CloseFails(writer._fh, errno.ENOSPC)
    assert not writer.is_open


def test_a_writer_forked_while_another_thread_held_its_lock_writes_in_the_child(tmp_path, monkeypatch):
    # The lock another thread held at the fork stays held in the child, where that thread
    # never runs: the child's first write waited on it for ever.
    path = tmp_path / "p.jsonl"
    with ProfileWriter(path, fsync=True) as writer:
        writer.write(WORKLOAD)
        code = fork_while_a_thread_holds_a_lock(monkeypatch, hold=lambda: writer.write(_record("parent", 0)),
                                                child=lambda: writer.write(_record("child", 0)))
    assert code == 0
    assert _written_by(path) == {"parent": [0], "child": [0]}


def test_a_failed_write_never_cuts_the_record_a_signal_handler_wrote_inside_it(tmp_path, monkeypatch):
    # The lock is reentrant so that a signal handler which writes while its thread is inside
    # a write does not hang. A signal that lands in the fsync (the kernel's EINTR: Python runs
    # the handler, then retries the sync) ran a handler whose write appended after this
    # record; the retried sync failed, and the cut-back, taking this record's length off the
    # end, cut the handler's record (its write had returned) and kept this one's.
    import signal

    path = tmp_path / "p.jsonl"
    real_fsync = os.fsync
    handler_wrote: list[bool] = []
    signalled: list[bool] = []

    def handler(signo, frame) -> None:  # noqa: ANN001
        writer.write(_record("handler", 0))
        handler_wrote.append(True)

    def fsync(fd: int) -> None:
        if not signalled:  # the first record's sync: interrupted by the signal, then failing
            signalled.append(True)
            signal.raise_signal(signal.SIGUSR1)
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        with ProfileWriter(path, fsync=True) as writer:
            writer.write(WORKLOAD)
            monkeypatch.setattr(os, "fsync", fsync)
            with pytest.raises(StorageError, match=r"\(EIO\)"):
                writer.write(_record("interrupted", 0))
            monkeypatch.undo()
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert handler_wrote == [True]
    # The handler's record, reported written, is whole in the file; the failed one is not cut
    # from under it (whole too: its write(2) had completed, only its sync failed).
    assert _written_by(path) == {"interrupted": [0], "handler": [0]}
