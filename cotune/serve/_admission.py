"""Admission control of the service: how many requests may wait, and how much solving
may run at once.

Memory of a solve grows with its search space (one near-limit solve of 10⁶ candidates
peaks around +320 MB), so a count of concurrent solves alone does not bound memory: two
near-limit solves double it. :class:`Admission` bounds both

* the requests inside the service at all (waiting or running): beyond ``max_pending``
  the service answers 503 at once instead of queueing without end, and
* the candidates being solved at once (``candidate_budget``): a solve waits until its
  candidates fit beside those already running; one solve may always run alone, so the
  budget never starves a request the limits allow. A solve's candidates are the count the
  service admitted it with, a spot or mixed plan counted as
  :data:`cotune.api.SPOT_ROW_WEIGHT` (its cost, not one row).

A request that cannot start within ``wait_s`` is refused with 503 too. Thread-safe: the
budget is taken in the worker thread that solves.

Serialising solves is not enough on glibc: each worker thread allocates from its own
malloc arena, and an arena keeps the pages a finished solve freed, so two threads that
solved one after the other still hold two solves' worth of memory (measured: 8
near-limit solves on 2 threads peaked at 743 MiB with the budget alone). The budget
therefore hands freed memory back (:func:`release_freed_memory`) before the next solve
starts.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Iterator

__all__ = ["Admission", "Overloaded", "release_freed_memory"]


@lru_cache(maxsize=1)
def _malloc_trim() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        return None if libc is None else libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS, Windows): nothing to trim
        return None


def release_freed_memory() -> None:
    """Return memory that ``free`` kept in malloc arenas to the system (glibc; else a no-op)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


class Overloaded(Exception):
    """The service is at capacity; the caller should retry after ``retry_after_s``."""

    def __init__(self, message: str, *, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Admission:
    """Bounds on pending requests and on candidates solved at once (see the module doc)."""

    def __init__(self, *, max_pending: int, candidate_budget: int, wait_s: float) -> None:
        if max_pending < 1:
            raise ValueError(f"max_pending must be >= 1, got {max_pending}")
        if candidate_budget < 1:
            raise ValueError(f"candidate_budget must be >= 1, got {candidate_budget}")
        if not wait_s > 0:
            raise ValueError(f"wait_s must be > 0, got {wait_s}")
        self.max_pending = max_pending
        self.candidate_budget = candidate_budget
        self.wait_s = wait_s
        self._cond = threading.Condition()
        self._pending = 0
        self._in_flight = 0  # candidates being solved now
        self._solving = 0

    @property
    def pending(self) -> int:
        with self._cond:
            return self._pending

    @property
    def candidates_in_flight(self) -> int:
        with self._cond:
            return self._in_flight

    @contextmanager
    def request(self) -> Iterator[None]:
        """Hold a pending slot for the whole request; :class:`Overloaded` when none is free."""
        with self._cond:
            if self._pending >= self.max_pending:
                raise Overloaded(
                    f"the service has {self._pending} requests in progress, its limit: retry shortly, "
                    "or raise 'cotune serve --max-pending'"
                )
            self._pending += 1
        try:
            yield
        finally:
            with self._cond:
                self._pending -= 1
                self._cond.notify_all()

    @contextmanager
    def solve(self, candidates: int) -> Iterator[None]:
        """Run a solve of ``candidates`` inside the budget (waits up to ``wait_s``)."""
        weight = max(1, int(candidates))
        deadline = time.monotonic() + self.wait_s
        with self._cond:
            # A solve alone may exceed the budget (its own limit was checked before): it runs
            # once nothing else does.
            while self._solving and self._in_flight + weight > self.candidate_budget:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Overloaded(
                        f"{self._in_flight:,} candidates are being solved and this request adds {weight:,} "
                        f"(budget {self.candidate_budget:,}): retry shortly"
                    )
                self._cond.wait(timeout=left)
            self._in_flight += weight
            self._solving += 1
        try:
            yield
        finally:
            release_freed_memory()
            with self._cond:
                self._in_flight -= weight
                self._solving -= 1
                self._cond.notify_all()
