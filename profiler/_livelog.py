"""A probe's log, bounded while the workers write it, and its bounded copy.

A probe's workers (and torchrun, or the TensorFlow spawner) write their output into a
pipe; :class:`LiveLog` drains it from a thread of the profiler into ``log.txt`` in the
probe's folder, keeping the first ``KEPT_LOG_HEAD_BYTES`` and the last
``KEPT_LOG_TAIL_BYTES`` of it. Until 2026-12-07 the workers wrote ``log.txt`` directly,
unbounded: a workload printing in a loop for the whole of ``--probe-timeout`` could fill
the disk, and the full disk was then our storage's fault on this probe (or the next).

What the verdict reads of a log (:mod:`profiler._records`) is its end (torchrun's
failure report, the TensorFlow spawner's line, the last 4000 bytes) and, anywhere in it,
a worker's ``cotune-worker-fault:`` line. The end is the kept tail; a fault line in the
part that is cut (a peer went on printing after the worker wrote it), or only partly in
the head, is kept whole too, between the head and the tail, as the bytes stream past.

While the probe runs, ``log.txt`` holds the first ``KEPT_LOG_HEAD_BYTES``; what follows
goes to segments beside it (``log.txt.1``, ``log.txt.2``, …, ``LIVE_LOG_SEGMENT_BYTES``
each), the oldest removed once the newer ones hold the tail. When the launch ends the
kept tail is appended to ``log.txt`` and the segments removed: ``log.txt`` is then what
:func:`copy_log_bounded` would have made of the whole output. On disk: at most head +
tail + one segment (6 MiB) while it runs, and one more segment while the tail is
appended.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import shutil
import threading
import time
from collections import deque
from pathlib import Path
from typing import BinaryIO, Iterable

from cotune.errors import StorageError
from profiler._protocol import FAULT_MARKER

__all__ = [
    "KEPT_LOG_HEAD_BYTES",
    "KEPT_LOG_TAIL_BYTES",
    "LIVE_LOG_SEGMENT_BYTES",
    "BoundedLog",
    "LiveLog",
    "copy_log_bounded",
]

# What a log holds of a probe's output at most: its start (the set-up, the first error) and
# its end (the worker's exception, torchrun's report). A workload that printed a gigabyte in
# a loop before failing filled the disk with its copy, once per failed probe.
KEPT_LOG_HEAD_BYTES = 1 * 2**20
KEPT_LOG_TAIL_BYTES = 4 * 2**20
# The live log's tail is kept in files of this size: the margin over head + tail on disk,
# and how much is copied at a time when the tail is appended.
LIVE_LOG_SEGMENT_BYTES = 1 * 2**20
# A fault line of the cut part is kept from its marker to its end, at most this long (the
# worker writes at most 500 characters), and only the last KEPT_FAULT_LINES of them (a
# workload printing the marker in a loop must not grow the memory or the log).
FAULT_LINE_BYTES = 1000
KEPT_FAULT_LINES = 64
# The pipe's kernel buffer (Linux F_SETPIPE_SZ; 1 MiB is the unprivileged limit): what the
# workers can write while the reader thread waits for a CPU, before a write of theirs blocks.
PIPE_BYTES = 1 * 2**20
# After the launcher exits: the reader stops once the pipe has been empty this long (a
# process the workload left behind may hold it open), or after DRAIN_MAX_S in any case.
DRAIN_IDLE_S = 0.2
# The reader's wait after a small read (see _drain): a chatty workload's lines are read in
# batches. Measured by benchmarks/live_log.py (docs/profiler.md § 9).
BATCH_S = 0.002
DRAIN_MAX_S = 5.0
# How long close() waits for the reader. Its own bound is DRAIN_MAX_S plus the write in hand
# (1 MiB at most); a reader still busy this long after is stuck in a write the storage does
# not finish (a hung network mount): the probe then stops as a storage fault.
CLOSE_WAIT_S = 60.0

_CUT_NOTE = b" bytes of this log cut here"
_NOTE_START = b"\n[cotune: "
# The longest note between head and tail: its two lines and the fault lines.
_NOTE_MAX_BYTES = 512 + KEPT_FAULT_LINES * (FAULT_LINE_BYTES + 1)


def cut_note(*, cut_bytes: int, head_bytes: int, tail_bytes: int, fault_lines: Iterable[bytes] = ()) -> bytes:
    """The lines between a cut log's head and tail: how much was cut, and the fault lines of the cut part."""
    note = (f"\n[cotune: {cut_bytes}{_CUT_NOTE.decode()}; the first {head_bytes} and the last {tail_bytes} "
            "are kept]\n").encode()
    lines = list(fault_lines)
    if lines:
        note += f"[cotune: the cut part's {len(lines)} {FAULT_MARKER} line(s), kept:]\n".encode()
        note += b"".join(line + b"\n" for line in lines)
    return note


def _already_cut(src: BinaryIO, size: int, *, head_bytes: int, tail_bytes: int) -> bool:
    """Whether ``src`` is a log :class:`LiveLog` already cut to these bounds (its note at ``head_bytes``)."""
    if not head_bytes + tail_bytes < size <= head_bytes + tail_bytes + _NOTE_MAX_BYTES:
        return False
    src.seek(head_bytes)
    first = src.read(128)
    return first.startswith(_NOTE_START) and _CUT_NOTE in first


def copy_log_bounded(src: BinaryIO, dst: BinaryIO, *, head_bytes: int, tail_bytes: int) -> None:
    """Copy ``src`` to ``dst`` whole if it holds at most ``head_bytes + tail_bytes`` (or is a
    live log already cut to them); else its first ``head_bytes`` and last ``tail_bytes``,
    with a line between saying how much was cut."""
    src.seek(0, os.SEEK_END)
    size = src.tell()
    if size <= head_bytes + tail_bytes or _already_cut(src, size, head_bytes=head_bytes, tail_bytes=tail_bytes):
        src.seek(0)
        shutil.copyfileobj(src, dst)
        return
    src.seek(0)
    dst.write(src.read(head_bytes))
    dst.write(cut_note(cut_bytes=size - head_bytes - tail_bytes, head_bytes=head_bytes, tail_bytes=tail_bytes))
    src.seek(size - tail_bytes)
    shutil.copyfileobj(src, dst)


def _write_all(fh: BinaryIO, data: bytes | memoryview) -> None:
    # An unbuffered file may take part of a write (a disk that fills): the rest, or the error, follows.
    view = memoryview(data)
    while view:
        taken = fh.write(view)
        if not taken:  # a file that takes nothing, without an error, has no room
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(getattr(fh, "name", "")))
        view = view[taken:]


class _FaultLines:
    """The ``FAULT_MARKER`` lines of a byte stream, found as it streams past: each from its
    marker to the end of its line (at most ``FAULT_LINE_BYTES``), with the stream offset of
    its marker; the last ``KEPT_FAULT_LINES`` of them."""

    def __init__(self) -> None:
        self.marker = FAULT_MARKER.encode()
        self.lines: deque[tuple[int, bytes]] = deque(maxlen=KEPT_FAULT_LINES)
        self._carry = b""  # the stream's last bytes that may begin a marker the next chunk ends
        self._open: bytearray | None = None  # a marked line whose end has not come yet
        self._open_at = 0

    def feed(self, chunk: bytes, *, offset: int) -> None:
        """Scan ``chunk``, which starts at byte ``offset`` of the stream."""
        start = 0
        if self._open is not None:
            end = chunk.find(b"\n")
            self._open += chunk[: (len(chunk) if end < 0 else end)][: FAULT_LINE_BYTES - len(self._open)]
            if end < 0:
                return
            self.lines.append((self._open_at, bytes(self._open)))
            self._open, start = None, end + 1
        data = self._carry + chunk[start:]
        base = offset + start - len(self._carry)
        pos = 0
        while (found := data.find(self.marker, pos)) >= 0:
            end = data.find(b"\n", found)
            if end < 0:
                self._open, self._open_at = bytearray(data[found:found + FAULT_LINE_BYTES]), base + found
                self._carry = b""
                return
            self.lines.append((base + found, data[found:min(end, found + FAULT_LINE_BYTES)]))
            pos = end + 1
        self._carry = data[max(pos, len(data) - len(self.marker) + 1):]

    def finish(self) -> None:
        """The stream ended: a marked line with no newline yet is complete."""
        if self._open is not None:
            self.lines.append((self._open_at, bytes(self._open)))
            self._open = None


class BoundedLog:
    """``path`` written as a bounded log: its first ``head_bytes``, then segments beside it of
    which the last ``tail_bytes`` are kept; :meth:`close` appends the kept tail (after a note
    of what was cut) to ``path``. Appends to what ``path`` already holds, counted as the head's.
    Not thread-safe: one writer."""

    def __init__(self, path: Path, *, head_bytes: int = KEPT_LOG_HEAD_BYTES, tail_bytes: int = KEPT_LOG_TAIL_BYTES,
                 segment_bytes: int = LIVE_LOG_SEGMENT_BYTES) -> None:
        self.path = Path(path)
        self.head_bytes, self.tail_bytes, self.segment_bytes = head_bytes, tail_bytes, segment_bytes
        self._head: BinaryIO = open(self.path, "ab", buffering=0)  # noqa: SIM115 - closed in close()
        self.written = self._head.tell()  # bytes of the stream so far
        self._head_left = max(0, head_bytes - self.written)
        self._head_end = max(head_bytes, self.written)  # where the head ends in the stream
        self._rest = 0  # bytes past the head
        self._segments: deque[list] = deque()  # [path, bytes] of the segments on disk, oldest first
        self._segment: BinaryIO | None = None
        self._index = 0
        self.fault_lines = _FaultLines()

    def write(self, data: bytes) -> None:
        self.fault_lines.feed(data, offset=self.written)
        self.written += len(data)
        view = memoryview(data)
        if self._head_left:
            take = min(self._head_left, len(view))
            _write_all(self._head, view[:take])
            self._head_left -= take
            view = view[take:]
        while view:
            if self._segment is None or self._segments[-1][1] >= self.segment_bytes:
                self._next_segment()
            assert self._segment is not None
            take = min(self.segment_bytes - self._segments[-1][1], len(view))
            # Once the newer segments (with these bytes) hold the tail, the oldest is never kept:
            # removed before the write, so the disk never holds more than head + tail + a segment.
            while len(self._segments) > 1 and self._on_disk() + take - self._segments[0][1] >= self.tail_bytes:
                os.unlink(self._segments.popleft()[0])
            _write_all(self._segment, view[:take])
            self._segments[-1][1] += take
            self._rest += take
            view = view[take:]

    def _on_disk(self) -> int:
        return sum(size for _, size in self._segments)

    def _next_segment(self) -> None:
        if self._segment is not None:
            self._segment.close()
        self._index += 1
        path = self.path.with_name(f"{self.path.name}.{self._index}")
        self._segment = open(path, "wb", buffering=0)  # noqa: SIM115 - closed here or in close()
        self._segments.append([path, 0])

    def close(self) -> None:
        """Append the kept tail to ``path`` (whole, when nothing was cut) and remove the segments."""
        try:
            if self._segment is not None:
                self._segment.close()
                self._segment = None
            self.fault_lines.finish()
            cut = max(0, self._rest - self.tail_bytes)
            skip = self._on_disk() - min(self._rest, self.tail_bytes)  # bytes of the oldest segment not kept
            if cut:
                # Lines not whole in the head or the tail: there, they are kept anyway. Whole, not
                # only their marker: the verdict looks for the marker and the status after it
                # ("cotune-worker-fault: storage:"), and a line whose marker ends the head but
                # whose status was cut read as the workload's crash.
                first_kept = self.written - self.tail_bytes
                lines = [line for at, line in self.fault_lines.lines
                         if at + len(line) > self._head_end and at < first_kept]
                _write_all(self._head, cut_note(cut_bytes=cut, head_bytes=self._head_end,
                                                tail_bytes=self.tail_bytes, fault_lines=lines))
            while self._segments:
                path, size = self._segments[0]
                with open(path, "rb") as src:
                    src.seek(min(skip, size))
                    while block := src.read(self.segment_bytes):
                        _write_all(self._head, block)
                skip = max(0, skip - size)
                os.unlink(path)  # at once: the disk never holds the tail twice
                self._segments.popleft()
        finally:
            self._head.close()
            if self._segment is not None:
                self._segment.close()

    def discard(self) -> None:
        """Close without assembling (the storage failed): remove the segments, keep the head."""
        for fh in (self._segment, self._head):
            if fh is not None:
                with contextlib.suppress(OSError):
                    fh.close()
        for path, _ in self._segments:
            with contextlib.suppress(OSError):
                os.unlink(path)
        self._segments.clear()


class LiveLog:
    """A pipe for a launcher's stdout and stderr, drained by a thread into a :class:`BoundedLog`.

    Use: ``live = LiveLog(path)``; start the launcher with ``stdout=live.write_fd``; then
    :meth:`started` (closes this process's copy of the write end, starts the reader);
    while it runs, :meth:`check` raises what stopped the log being written, if anything did
    (the reader then drains the pipe on without writing, so the workers never block on it);
    after it exits, :meth:`close`. The reader thread starts only after the launcher's fork:
    ``subprocess``'s ``preexec_fn`` is not safe while other threads run.
    """

    def __init__(self, path: Path, *, head_bytes: int = KEPT_LOG_HEAD_BYTES, tail_bytes: int = KEPT_LOG_TAIL_BYTES,
                 segment_bytes: int = LIVE_LOG_SEGMENT_BYTES) -> None:
        self.path = Path(path)
        self._log = BoundedLog(self.path, head_bytes=head_bytes, tail_bytes=tail_bytes, segment_bytes=segment_bytes)
        try:
            self._read_fd, self.write_fd = os.pipe()  # both close-on-exec; Popen dup2s the write end onto 1 and 2
        except OSError:
            self._log.discard()
            raise
        with contextlib.suppress(OSError, AttributeError):  # a smaller buffer only means the workers block sooner
            fcntl.fcntl(self.write_fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        try:
            self._pipe_bytes = fcntl.fcntl(self.write_fd, fcntl.F_GETPIPE_SZ)
        except (OSError, AttributeError):
            self._pipe_bytes = 2**16  # Linux's default
        os.set_blocking(self._read_fd, False)  # the read end's own file description: the workers' stays blocking
        self.error: BaseException | None = None
        self._ending = threading.Event()
        # Set by the reader as its last act. close() waits on this, not on Thread.join: a join
        # that a stop signal interrupts (Python 3.11's bpo-45274 handling) marks a reader that is
        # still running as stopped, and close() would then close its pipe and log under it.
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._drain, name=f"cotune-log-{self.path.parent.name}", daemon=True)

    def started(self) -> None:
        """The launcher holds the write end now: close ours (so its end is seen) and start reading."""
        self._close_write_end()
        self._thread.start()

    def _close_write_end(self) -> None:
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def _drain(self) -> None:
        try:
            self._pump()
        except BaseException as exc:  # noqa: BLE001 - a reader that stops would stall the workers on a full pipe
            if self.error is None:
                self.error = exc  # the caller stops the probe (check)
        finally:
            self._done.set()

    def _pump(self) -> None:
        poller = select.poll()
        poller.register(self._read_fd, select.POLLIN)
        ending_since: float | None = None
        while True:
            ending = self._ending.is_set()
            if ending and ending_since is None:
                ending_since = time.monotonic()
            if ending_since is not None and time.monotonic() - ending_since > DRAIN_MAX_S:
                return  # a process the workload left behind writes on: what it writes now is its own
            events = poller.poll(DRAIN_IDLE_S * 1000 if ending else 100)
            if not events:
                if ending:
                    return  # empty since the launcher exited
                continue
            try:
                chunk = os.read(self._read_fd, PIPE_BYTES)
            except BlockingIOError:
                continue
            if not chunk:
                return  # every writer has closed it
            if self.error is None:
                try:
                    self._log.write(chunk)
                except Exception as exc:  # noqa: BLE001 - drained on, unwritten: the caller stops the probe
                    self.error = exc
            if len(chunk) < self._pipe_bytes // 16:
                # Little came since the last read: let more gather before the next, rather than a
                # read (and a write) for every line a chatty workload prints. The pipe holds 16
                # times what came, so a writer blocks only on a burst of that much in this wait.
                self._ending.wait(BATCH_S)

    def check(self) -> None:
        """Raise what stopped the log: a :class:`~cotune.errors.StorageError` when the storage
        failed (a full disk, ``ulimit -f``), else the error itself (a bug of ours: exit 4)."""
        if self.error is None:
            return
        if isinstance(self.error, OSError):
            raise StorageError.from_os_error(self.error, path=self.path, doing="write the probe's log") from None
        raise self.error

    def close(self) -> None:
        """After the launcher exited (or was stopped): read what is left in the pipe, then write
        the log's tail (:meth:`check` raises what went wrong). A stop signal that lands meanwhile
        (Ctrl-C, or SIGTERM or SIGHUP taken down its path) is raised once the log is whole: the
        reader ends within ``DRAIN_MAX_S`` of this call whatever the workers do, and a reader
        left running would write segments into the probe's folder as the run removes it."""
        self._close_write_end()
        self._ending.set()
        interrupted: BaseException | None = None
        if self._thread.ident is not None:  # started
            deadline = time.monotonic() + CLOSE_WAIT_S
            while not self._done.is_set() and (left_s := deadline - time.monotonic()) > 0:
                try:
                    self._done.wait(left_s)
                except BaseException as exc:  # noqa: BLE001 - raised below, once the reader has ended
                    interrupted = exc
            if not self._done.is_set():
                # The pipe and the log stay open with the reader that holds them (a daemon thread):
                # closed under it, its write could land in whatever file reuses the descriptor.
                if interrupted is not None:
                    raise interrupted
                stuck = OSError(errno.ETIMEDOUT, f"a write did not finish within {CLOSE_WAIT_S:g} s")
                raise StorageError.from_os_error(stuck, path=self.path, doing="write the probe's log")
        try:
            os.close(self._read_fd)
            if self.error is None:
                try:
                    self._log.close()
                    return
                except Exception as exc:  # noqa: BLE001 - named by check
                    self.error = exc
            self._log.discard()
            self.check()
        finally:
            if interrupted is not None:
                raise interrupted
