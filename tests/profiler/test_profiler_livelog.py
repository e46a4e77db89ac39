"""The probe's live log is bounded while the workers write it (profiler._livelog).

The unit tests drive :class:`BoundedLog` with small bounds; the launch tests run real
processes through :func:`profiler._launcher.run_group` (a pipe, the reader thread), the
TensorFlow spawner, and torchrun with gloo on CPU (marked slow).
"""

from __future__ import annotations

import io
import os
import random
import sys
import threading
from pathlib import Path

import pytest
from _fsfaults import tmpfs
from profiler_helpers import FAST, run_cli, spec

from cotune.errors import StorageError
from cotune.profile import read_profile
from profiler._launcher import LaunchOutcome, LaunchRequest, run_group
from profiler._livelog import (
    KEPT_FAULT_LINES,
    KEPT_LOG_HEAD_BYTES,
    KEPT_LOG_TAIL_BYTES,
    LIVE_LOG_SEGMENT_BYTES,
    BoundedLog,
    LiveLog,
    copy_log_bounded,
)
from profiler._protocol import FAULT_MARKER
from profiler._records import classify

HEAD, TAIL, SEGMENT = 100, 400, 64
# The note between a cut log's head and tail, with no fault lines: well under this.
NOTE_BYTES = 200


def _stream(size: int, *, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.choice(b"abcdefgh \n") for _ in range(size))


def _write_in_chunks(log: BoundedLog, data: bytes, *, seed: int = 0, on_disk: list[int] | None = None) -> None:
    rng = random.Random(seed)
    at = 0
    while at < len(data):
        step = rng.randint(1, 3 * SEGMENT)
        log.write(data[at:at + step])
        at += step
        if on_disk is not None:
            on_disk.append(sum(p.stat().st_size for p in log.path.parent.glob("log.txt*")))


def _bounded(tmp_path: Path) -> BoundedLog:
    return BoundedLog(tmp_path / "log.txt", head_bytes=HEAD, tail_bytes=TAIL, segment_bytes=SEGMENT)


def _cut_as_the_kept_copy(data: bytes) -> bytes:
    dst = io.BytesIO()
    copy_log_bounded(io.BytesIO(data), dst, head_bytes=HEAD, tail_bytes=TAIL)
    return dst.getvalue()


@pytest.mark.parametrize("size", [0, 1, HEAD - 1, HEAD, HEAD + 1, HEAD + TAIL - 1, HEAD + TAIL])
def test_a_log_within_the_bound_is_kept_whole(tmp_path, size):
    data = _stream(size)
    log = _bounded(tmp_path)
    _write_in_chunks(log, data)
    log.close()
    assert (tmp_path / "log.txt").read_bytes() == data
    assert [p.name for p in tmp_path.iterdir()] == ["log.txt"]  # its segments are gone


@pytest.mark.parametrize("size", [HEAD + TAIL + 1, HEAD + TAIL + SEGMENT, 7_919, 50_000])
def test_a_log_over_the_bound_keeps_its_head_and_tail_as_the_kept_copy_would(tmp_path, size):
    data = _stream(size, seed=size)
    log = _bounded(tmp_path)
    _write_in_chunks(log, data, seed=size)
    log.close()
    text = (tmp_path / "log.txt").read_bytes()
    assert text.startswith(data[:HEAD]) and text.endswith(data[-TAIL:])
    assert f"[cotune: {size - HEAD - TAIL} bytes of this log cut here".encode() in text
    assert text == _cut_as_the_kept_copy(data)
    assert [p.name for p in tmp_path.iterdir()] == ["log.txt"]


def test_the_live_log_on_disk_never_holds_more_than_head_tail_and_one_segment(tmp_path):
    on_disk: list[int] = []
    log = _bounded(tmp_path)
    _write_in_chunks(log, _stream(20_000), on_disk=on_disk)
    assert max(on_disk) <= HEAD + TAIL + SEGMENT
    log.close()


@pytest.mark.parametrize("chunk", [1, 7, 19, 64, 1000])
def test_a_fault_line_in_the_cut_part_is_kept_between_head_and_tail(tmp_path, chunk):
    line = f"{FAULT_MARKER} storage: cannot write the result: [Errno 28] No space left on device".encode()
    data = _stream(3_000) + b"rank 1 half a line, then " + line + b"\n" + _stream(3_000, seed=1)
    log = _bounded(tmp_path)
    for at in range(0, len(data), chunk):  # the marker split at every place a chunk boundary can fall
        log.write(data[at:at + chunk])
    log.close()
    text = (tmp_path / "log.txt").read_bytes()
    assert text.count(line) == 1 and text.endswith(data[-TAIL:])
    head_end = text.index(b"\n[cotune: ")
    assert head_end == HEAD and text.index(line) > head_end


def test_a_fault_line_in_the_head_or_the_tail_is_not_written_twice(tmp_path):
    line = f"{FAULT_MARKER} setup: the rendezvous store is gone".encode()
    data = line + b"\n" + _stream(5_000) + line + b"\n"
    log = _bounded(tmp_path)
    _write_in_chunks(log, data)
    log.close()
    assert (tmp_path / "log.txt").read_bytes().count(line) == 2


@pytest.mark.parametrize("status_cut_by", [1, len(" storage:")])
def test_a_fault_line_whose_marker_ends_the_head_but_whose_status_is_cut_is_kept_between_head_and_tail(
        tmp_path, status_cut_by):
    # The verdict looks for "cotune-worker-fault: storage:"; a line whose marker was whole in
    # the head but whose status fell in the cut part was not kept, and a storage fault of ours
    # read as the workload's crash.
    line = f"{FAULT_MARKER} storage: cannot write the result: [Errno 28] No space left on device".encode()
    status_at = len(FAULT_MARKER) + len(" storage:")
    lead = b"x" * (HEAD - status_at + status_cut_by - 1) + b"\n"  # the head ends status_cut_by bytes short of it
    log = _bounded(tmp_path)
    _write_in_chunks(log, lead + line + b"\n" + _stream(5_000))
    log.close()
    text = (tmp_path / "log.txt").read_bytes()
    assert FAULT_MARKER.encode() in text[:HEAD] and f"{FAULT_MARKER} storage:".encode() not in text[:HEAD]
    assert line + b"\n" in text[HEAD:-TAIL]


def test_a_fault_line_ending_where_the_head_ends_is_not_written_twice(tmp_path):
    line = f"{FAULT_MARKER} storage: cannot write the result".encode()
    lead = b"x" * (HEAD - len(line) - 1) + b"\n"
    log = _bounded(tmp_path)
    _write_in_chunks(log, lead + line + b"\n" + _stream(5_000))
    log.close()
    text = (tmp_path / "log.txt").read_bytes()
    assert text[:HEAD].endswith(line) and text.count(line) == 1


def test_a_workload_printing_the_fault_marker_in_a_loop_keeps_only_the_last_lines(tmp_path):
    lines = [f"{FAULT_MARKER} storage: printed by the workload {i}".encode() for i in range(10 * KEPT_FAULT_LINES)]
    log = _bounded(tmp_path)
    _write_in_chunks(log, b"\n".join(lines) + b"\n" + _stream(1_000))
    log.close()
    text = (tmp_path / "log.txt").read_bytes()
    kept = [ln for ln in lines if ln + b"\n" in text[HEAD:-TAIL]]
    assert kept == lines[-KEPT_FAULT_LINES:]


def test_a_fault_line_is_kept_to_its_end_at_most_a_thousand_bytes(tmp_path):
    line = FAULT_MARKER.encode() + b" storage: " + b"x" * 5_000
    log = _bounded(tmp_path)
    _write_in_chunks(log, _stream(1_000) + line + b"\n" + _stream(1_000))
    log.close()
    text = (tmp_path / "log.txt").read_bytes()
    assert line[:1000] + b"\n" in text and line[:1001] not in text


def test_the_kept_copy_of_a_cut_live_log_is_the_log_itself(tmp_path):
    line = f"{FAULT_MARKER} storage: cannot write".encode()
    data = _stream(3_000) + line + b"\n" + _stream(3_000)
    log = _bounded(tmp_path)
    _write_in_chunks(log, data)
    log.close()
    live = (tmp_path / "log.txt").read_bytes()
    assert _cut_as_the_kept_copy(live) == live  # not cut again: one note, with the true count


# ----------------------------------------------------------------- launches (real processes, a pipe)

# Prints FIRST, then MIB mebibytes of lines (a fault line after the first 2 MiB if FAULT is
# set), then LAST on stderr, and exits with CODE.
_PRINTER = r"""
import os, sys
mib, code, fault = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
out = sys.stdout.buffer
out.write(b"FIRST: the workload starts\n")
line = b"loss is still going down, printing every step\n"
for i in range(mib):
    out.write(line * (2**20 // len(line)))
    if i == 2 and fault:
        out.write(fault.encode() + b"\n")
out.flush()
sys.stderr.write("LAST: the workload's own end\n")
sys.stderr.flush()
os._exit(code)
"""


def _print(tmp_path: Path, *, mib: int, code: int = 0, fault: str = "") -> tuple[LaunchOutcome, Path]:
    log = tmp_path / "probe" / "log.txt"
    outcome = run_group([sys.executable, "-c", _PRINTER, str(mib), str(code), fault], env=dict(os.environ),
                        timeout_s=300, log_path=log, poll=None)
    return outcome, log


def _bound_bytes() -> int:
    return KEPT_LOG_HEAD_BYTES + KEPT_LOG_TAIL_BYTES + NOTE_BYTES


def test_a_launch_printing_far_over_the_bound_keeps_its_start_and_its_end(tmp_path):
    outcome, log = _print(tmp_path, mib=24, code=1)
    text = log.read_bytes()
    assert outcome.returncode == 1 and outcome.log_tail.endswith("LAST: the workload's own end\n")
    assert len(text) <= _bound_bytes() and text.startswith(b"FIRST: the workload starts\n")
    assert b"bytes of this log cut here" in text
    assert sorted(p.name for p in log.parent.iterdir()) == ["log.txt"]


def test_our_fault_line_printed_before_a_flood_still_makes_the_verdict_storage(tmp_path):
    # The line was looked for in the last 16 MiB of an unbounded log: 20 MiB printed after it,
    # a storage fault of ours was recorded as the workload's crash.
    fault = f"{FAULT_MARKER} storage: cannot write the result: [Errno 28] No space left on device"
    outcome, log = _print(tmp_path, mib=24, code=5, fault=fault)
    assert fault not in outcome.log_tail
    verdict = classify(outcome, [], timeout_s=300, log=log, workers=1, started=1)
    assert verdict.kind == "storage", verdict


# Prints its first argument's bytes less the fault line's first CUT bytes (the head then ends
# CUT bytes into the line), the fault line, 6 MiB of a peer's lines, and exits with 5.
_STRADDLER = r"""
import os, sys
head, cut, fault = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
out = sys.stdout.buffer
out.write(b"x" * (head - cut - 1) + b"\n" + fault + b"\n")
out.write(b"a peer prints on\n" * (6 * 2**20 // 17))
out.flush()
os._exit(5)
"""


def test_our_fault_line_whose_status_the_head_cuts_still_makes_the_verdict_storage(tmp_path):
    fault = f"{FAULT_MARKER} storage: cannot write the result: [Errno 28] No space left on device"
    cut = len(FAULT_MARKER) + len(" st")  # the marker ends the head; its status is cut
    log = tmp_path / "probe" / "log.txt"
    outcome = run_group([sys.executable, "-c", _STRADDLER, str(KEPT_LOG_HEAD_BYTES), str(cut), fault],
                        env=dict(os.environ), timeout_s=300, log_path=log, poll=None)
    assert outcome.returncode == 5 and b"bytes of this log cut here" in log.read_bytes()
    verdict = classify(outcome, [], timeout_s=300, log=log, workers=1, started=1)
    assert verdict.kind == "storage", verdict


def test_the_launch_returns_while_a_process_it_left_behind_holds_the_log_open(tmp_path):
    # A daemon the workload started keeps the pipe's write end: the launch must not wait for it.
    log = tmp_path / "probe" / "log.txt"
    daemon = tmp_path / "daemon.pid"
    script = (f"import subprocess, sys; p = subprocess.Popen(['sleep', '600'], start_new_session=True); "
              f"open({str(daemon)!r}, 'w').write(str(p.pid)); print('started it')")
    outcome = run_group([sys.executable, "-c", script], env=dict(os.environ), timeout_s=300, log_path=log, poll=None)
    pid = int(daemon.read_text())
    try:
        assert outcome.returncode == 0 and "started it" in outcome.log_tail
        os.kill(pid, 0)  # still running, holding the pipe: the launch did not wait for it
    finally:
        os.kill(pid, 9)


def test_a_full_disk_under_the_live_log_is_our_storage_fault(tmp_path):
    with tmpfs(tmp_path / "scratch", size_kib=2048) as scratch:
        with pytest.raises(StorageError) as raised:
            run_group([sys.executable, "-c", _PRINTER, "64", "0", ""], env=dict(os.environ), timeout_s=300,
                      log_path=scratch / "probe" / "log.txt", poll=None)
    assert "cannot write the probe's log" in str(raised.value) and "(ENOSPC)" in str(raised.value)


def test_a_reader_that_fails_stops_the_launch_with_its_error_not_a_timeout(tmp_path, monkeypatch):
    # A reader thread that died would leave the pipe full and the workers blocked until the
    # probe's time-out, recorded as the workload's. The time-out is short enough that such a
    # reader fails the test (a timed-out outcome, no error raised) rather than hangs it for an
    # hour, and long enough never to be reached here: the error stops the launch at its first write.
    def broken(self, data):
        raise RuntimeError("a bug in the log writer")

    monkeypatch.setattr(BoundedLog, "write", broken)
    with pytest.raises(RuntimeError, match="a bug in the log writer"):
        run_group([sys.executable, "-c", _PRINTER, "64", "0", ""], env=dict(os.environ), timeout_s=120,
                  log_path=tmp_path / "probe" / "log.txt", poll=None)


class _InterruptedOnce(threading.Event):
    """An event whose first wait is cut short by a stop signal (Ctrl-C's KeyboardInterrupt,
    as the profiler raises for SIGTERM and SIGHUP too)."""

    def __init__(self) -> None:
        super().__init__()
        self.interrupted = False

    def wait(self, timeout: float | None = None) -> bool:
        if not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        return super().wait(timeout)


def test_a_stop_signal_while_the_log_closes_is_raised_once_the_reader_ended_and_the_log_is_whole(tmp_path):
    # A close that gave up on the reader at the signal left it writing segments into the
    # probe's folder while the stopped run removed that folder, and the log without its tail.
    data = _stream(3_000, seed=3)
    live = LiveLog(tmp_path / "log.txt", head_bytes=HEAD, tail_bytes=TAIL, segment_bytes=SEGMENT)
    live._done = _InterruptedOnce()
    os.write(live.write_fd, data)  # within the pipe's buffer: the reader finds it, then the end
    live.started()
    with pytest.raises(KeyboardInterrupt):
        live.close()
    assert live._done.interrupted and live._done.is_set()
    assert (tmp_path / "log.txt").read_bytes() == _cut_as_the_kept_copy(data)
    assert [p.name for p in tmp_path.iterdir()] == ["log.txt"]


def test_a_reader_stuck_in_a_write_the_storage_never_finishes_is_a_storage_fault_not_a_hang(tmp_path, monkeypatch):
    import profiler._livelog as livelog

    # A hung network mount: the write never returns. close() waited for the reader forever.
    release = threading.Event()
    monkeypatch.setattr(BoundedLog, "write", lambda self, data: release.wait())
    monkeypatch.setattr(livelog, "CLOSE_WAIT_S", 0.2)
    live = LiveLog(tmp_path / "log.txt", head_bytes=HEAD, tail_bytes=TAIL, segment_bytes=SEGMENT)
    os.write(live.write_fd, b"a line the disk never takes\n")
    live.started()
    try:
        with pytest.raises(StorageError, match=r"cannot write the probe's log: .*\(ETIMEDOUT\)"):
            live.close()
    finally:
        release.set()  # the reader ends: nothing of it outlives the test


def test_the_tensorflow_spawners_workers_write_through_the_bounded_log(tmp_path, monkeypatch):
    from profiler.tf import TFConfigLauncher

    # The spawner runs `python -m MODULE ARGS` in each worker: a module that floods, no TensorFlow.
    (tmp_path / "flood_module.py").write_text(_PRINTER)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    log = tmp_path / "probe" / "log.txt"
    # Both workers exit 0: a worker that failed first would have the spawner stop its peer
    # mid-flood, and the peer's lines already in the pipe would follow the failed one's last
    # line (which of the two ends first is the scheduler's choice). Succeeding, each ends with
    # its LAST line, so the log's last bytes are one of them whatever the order.
    request = LaunchRequest(workers=2, module="flood_module", args=("12", "0", ""), run_id="flood", timeout_s=300,
                            log_path=log)
    outcome = TFConfigLauncher().launch(request)
    text = log.read_bytes()
    assert outcome.returncode == 0 and outcome.log_tail.endswith("LAST: the workload's own end\n")
    assert len(text) <= _bound_bytes() and text.startswith(b"FIRST: the workload starts\n")


# ----------------------------------------------------------------- torchrun probes (gloo, CPU)

def _sizes(path: Path) -> list[int]:
    """The live log's sizes on disk as the flooding workload measured them (one a line, every rank)."""
    return [int(v) for v in path.read_text().split()] if path.exists() else []


def _run_flooding(workload: str, *, workers: str, local_batch: str, tmp_path, capsys, monkeypatch):
    """Profile a flooding workload that records the live log's sizes as it prints:
    ``(exit code, stderr, profile path, sizes file)``."""
    sizes = tmp_path / "sizes.json"
    monkeypatch.setenv("COTUNE_TEST_LOG_SIZES", str(sizes))
    out = tmp_path / "p.jsonl"
    code, err = run_cli(["--workload", spec(workload), "--workers", workers, "--local-batch", local_batch,
                         "--out", str(out), "--no-curves", *FAST], capsys)
    return code, err, out, sizes


@pytest.mark.slow
def test_a_workload_flooding_its_log_then_crashing_keeps_its_crash_and_a_bounded_log(tmp_path, capsys, monkeypatch):
    code, err, out, sizes = _run_flooding("floods_then_crashes", workers="1", local_batch="4",
                                          tmp_path=tmp_path, capsys=capsys, monkeypatch=monkeypatch)
    assert code == 1 and "every probe of this run failed (crash)" in err, err
    (failure,) = read_profile(out).failures
    assert failure.failure == "crash" and "boom after printing 16 MiB" in failure.message, failure.message
    # Measured by the workload while it printed: the live log beside its task file. (A segment
    # may be counted as it is removed while the next fills: one segment of slack for that.)
    measured = _sizes(sizes)
    assert measured and max(measured) <= KEPT_LOG_HEAD_BYTES + KEPT_LOG_TAIL_BYTES + 2 * LIVE_LOG_SEGMENT_BYTES
    (kept,) = (tmp_path / "p.jsonl.cotune" / "logs").iterdir()
    text = kept.read_bytes()
    assert len(text) <= _bound_bytes() + 8000 and b"bytes of this log cut here" in text  # + the traceback
    assert b"Root Cause (first observed failure)" in text  # torchrun's report, at the end


@pytest.mark.slow
def test_a_workload_flooding_its_log_then_succeeding_records_its_timings(tmp_path, capsys, monkeypatch):
    code, err, out, sizes = _run_flooding("floods_its_log", workers="2", local_batch="4,8",
                                          tmp_path=tmp_path, capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0, err
    profile = read_profile(out)
    assert sorted(s.local_batch for s in profile.steps) == [4, 8] and not profile.failures
    measured = _sizes(sizes)
    assert measured and max(measured) <= KEPT_LOG_HEAD_BYTES + KEPT_LOG_TAIL_BYTES + 2 * LIVE_LOG_SEGMENT_BYTES
