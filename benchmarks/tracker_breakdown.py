"""Where a tracked step's overhead goes: each piece of a record's path, timed alone.

``benchmarks/tracker_overhead.py`` measures the tracker inside a real training loop, where
each call runs in caches the training step has just evicted. This times the pieces of
that cost one by one in the same state — a 16 MB array summed before every timed call
evicts the caches — and, for contrast, warm (the same call repeated): a plain ``step``,
a ``step`` that closes its window and writes a step record, an ``eval`` (one evaluation
record), the writer's ``write`` of an evaluation record (serialised, checked, appended),
and what that write is made of: the full check's parts (the record read back by the
reader's rule, ``json.dumps``) and the ``write(2)`` of a line alone. Medians of CPU time
of the calling thread (``time.thread_time``), in microseconds; the tracker as the
example runs it (``fsync="background"``, so the helper thread's fsync is not the
caller's).

``--wake`` instead times the *wall* time of ``Tracker.eval`` after 5 ms of work on the
calling thread, with the fsync helper thread under the policy it runs with
(``SCHED_BATCH`` on Linux: woken, it never preempts the thread that woke it) and under the
default one, alternately: on a machine busy with other work, a woken helper under the
default policy may take the training thread's core in the middle of its call.

    PYTHONPATH=. python benchmarks/tracker_breakdown.py            # ~15 s
    PYTHONPATH=. python benchmarks/tracker_breakdown.py --calls 400
    PYTHONPATH=. python benchmarks/tracker_breakdown.py --wake     # ~30 s
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cotune.profile import EvalRecord, ProfileWriter, WorkloadRecord, record_from_dict, record_to_dict  # noqa: E402
from cotune.track import Tracker  # noqa: E402

_EVICT = np.ones(4 << 20, dtype=np.float32)  # 16 MB: more than this machine's caches


def _median_cpu_us(call: Callable[[], object], *, calls: int, cold: bool,
                   prepare: Callable[[], object] = lambda: None) -> float:
    took = []
    for _ in range(calls):
        prepare()
        if cold:
            _EVICT.sum()
        began = time.thread_time_ns()
        call()
        took.append(time.thread_time_ns() - began)
        if cold:
            time.sleep(0.0005)  # the helper thread's fsync runs here, not inside the next timed call
    return statistics.median(took) / 1e3


def _eval_wall_us(*, calls: int, default_policy: bool) -> tuple[list[float], list[float]]:
    """Wall and CPU microseconds of ``calls`` evaluations, each after 5 ms of work on this
    thread; the fsync helper under the default scheduling policy where ``default_policy``."""
    from cotune.track import _tracker

    shipped = _tracker._never_preempting
    if default_policy:
        _tracker._never_preempting = lambda: None  # the helper keeps the policy it was started with
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tracker = Tracker(Path(tmp) / "p.jsonl", gpu="cpu", workers=1, local_batch=32,
                              workload=WorkloadRecord(name="digits-cnn", dataset_size=1437), window=20,
                              warmup_steps=0, flush_every_s=1e9)
            for _ in range(20):
                tracker.step(step_time_s=0.007)
            wall, cpu = [], []
            for _ in range(calls):
                began = time.perf_counter()
                while time.perf_counter() - began < 0.005:  # "training": the helper's sync is due by now
                    _EVICT[: 1 << 18].sum()
                began, began_cpu = time.perf_counter_ns(), time.thread_time_ns()
                tracker.eval(metric=0.5)
                wall.append((time.perf_counter_ns() - began) / 1e3)
                cpu.append((time.thread_time_ns() - began_cpu) / 1e3)
            tracker.close()
    finally:
        _tracker._never_preempting = shipped
    return wall, cpu


def _wake(*, calls: int, rounds: int) -> None:
    print(f"wall microseconds of Tracker.eval after 5 ms of work, {calls} calls a run; 1-min load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'fsync helper':28s} {'mean':>8s} {'median':>8s} {'p90':>8s} {'CPU mean':>9s}")
    for _ in range(rounds):
        for default_policy in (True, False):
            wall, cpu = _eval_wall_us(calls=calls, default_policy=default_policy)
            name = "default policy" if default_policy else "as shipped (SCHED_BATCH)"
            print(f"{name:28s} {statistics.mean(wall):8.1f} {statistics.median(wall):8.1f} "
                  f"{statistics.quantiles(wall, n=10)[-1]:8.1f} {statistics.mean(cpu):9.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="timed calls per piece and state (default 200)")
    parser.add_argument("--wake", action="store_true", help="the wall time of an evaluation, helper policy A/B")
    parser.add_argument("--rounds", type=int, default=3, help="--wake: runs of each policy, alternated (default 3)")
    args = parser.parse_args(argv)
    if args.calls < 2:
        parser.error(f"--calls must be a whole number of at least 2, got {args.calls}")
    if args.rounds < 1:
        parser.error(f"--rounds must be a whole number of at least 1, got {args.rounds}")
    if args.wake:
        _wake(calls=args.calls, rounds=args.rounds)
        return 0
    workload = WorkloadRecord(name="digits-cnn", dataset_size=1437)
    record = EvalRecord(global_batch=32, epoch=1.25, metric=0.8125, job="digits-cnn", elapsed_s=12.345)
    as_dict = record_to_dict(record)
    with tempfile.TemporaryDirectory() as tmp:
        # The example's window; flush_every_s so long that only the count closes a window.
        tracker = Tracker(Path(tmp) / "tracked.jsonl", gpu="cpu", workers=1, local_batch=32, workload=workload,
                          window=20, warmup_steps=0, flush_every_s=1e9)
        writer = ProfileWriter(Path(tmp) / "written.jsonl", fsync=False)
        writer.open()
        writer.write(workload)
        writer.write(record)  # the record's shape is known from here on
        fd = os.open(Path(tmp) / "plain.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        line = (json.dumps(as_dict) + "\n").encode()
        step_times_s = [0.007 + k * 1e-5 for k in range(20)]

        def fill_window(steps: int) -> Callable[[], None]:
            """Steps (untimed) until the window holds ``steps`` of its 20."""
            def fill() -> None:
                tracker.flush()
                for t in step_times_s[:steps]:
                    tracker.step(step_time_s=t)
            return fill

        fill_window(20)()  # the first window is on record: an eval writes one record
        pieces: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
            "nothing (the timer's own cost)": (lambda: None, lambda: None),
            "Tracker.step, no record": (fill_window(10), lambda: tracker.step(step_time_s=0.007)),
            "Tracker.step closing a 20-step window": (fill_window(19), lambda: tracker.step(step_time_s=0.007)),
            "Tracker.eval (one eval record)": (fill_window(0), lambda: tracker.eval(metric=0.5)),
            "ProfileWriter.write(eval record)": (lambda: None, lambda: writer.write(record)),
            "  record_from_dict (the full check)": (lambda: None, lambda: record_from_dict(as_dict)),
            "  json.dumps of the record": (lambda: None, lambda: json.dumps(as_dict)),
            "  os.write of its line (the syscall)": (lambda: None, lambda: os.write(fd, line)),
        }
        rows = [(name, _median_cpu_us(call, calls=args.calls, cold=True, prepare=prepare),
                 _median_cpu_us(call, calls=args.calls, cold=False, prepare=prepare))
                for name, (prepare, call) in pieces.items()]
        tracker.close()
        writer.close()
        os.close(fd)
    print(f"median CPU microseconds per call, {args.calls} calls each; cold: caches evicted before each call "
          f"(as in a training loop); 1-min load average {os.getloadavg()[0]:.2f}")
    print(f"{'piece':40s} {'cold':>8s} {'warm':>8s}")
    for name, cold, warm in rows:
        print(f"{name:40s} {cold:8.1f} {warm:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
