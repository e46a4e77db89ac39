"""What an existing profile already holds, so a rerun skips finished points.

Besides the standard records, the profiler appends two *optional* record types that
``cotune.profile.read_profile`` skips (``"optional": true``) but resume needs:

* ``probe_cost`` — after each probe: what it measured and its wall seconds, so the
  probe cost can be reported next to the recommendation and a ``--probe-budget`` holds
  across interrupted runs;
* ``curve_done`` — when a learning curve ended (target reached, epoch limit, or a
  failure), so a curve is never re-run; a curve without it is continued.

A timing point (gpu, workers, hosts, local_batch) is done once a ``step`` or
``failure`` record names it; records are written before the ``probe_cost`` line, so a
kill between the two at worst loses one cost line, never a measurement.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from cotune.errors import InputError
from cotune.profile import (
    EvalRecord, FailureRecord, NoiseRecord, StepRecord, WorkloadRecord, check_profile_path,
    oom_superseded, read_profile,
)
from cotune.profile._profile import holds_records

__all__ = ["DEFAULT_RETRY", "RETRY_KINDS", "ProbeCostRecord", "CurveDoneRecord", "ProfileState", "read_state"]


@dataclass(frozen=True)
class ProbeCostRecord:
    """Optional record: one probe's cost (``wall_s`` × ``workers`` worker-seconds)."""

    probe: str  # "timing" or "curve"
    gpu: str
    workers: int
    hosts: int
    local_batch: int
    wall_s: float
    outcome: str  # "ok", "oom", "crash", "timeout", "budget"
    optional: bool = True

    kind: ClassVar[str] = "probe_cost"


@dataclass(frozen=True)
class CurveDoneRecord:
    """Optional record: the learning curve at (``global_batch``, ``seed``) is finished."""

    global_batch: int
    seed: int
    workers: int
    epochs: int
    reason: str  # "target", "max_epochs", "diverged", "oom", "crash", "timeout"
    message: str = ""
    optional: bool = True

    kind: ClassVar[str] = "curve_done"


#: What ``--retry-failed`` may run again: the failure kinds of a timing point and the
#: failed endings of a curve. Bare ``--retry-failed`` is :data:`DEFAULT_RETRY`: a crash or a
#: timeout is most often the code's or the machine's of that day; an out-of-memory is a fact
#: about the point until the job's memory changes. A diverged curve is not retried: its
#: epochs stay in the profile, and a rerun with another recipe would continue them as one
#: curve of two recipes (record it into a new profile instead).
RETRY_KINDS = ("crash", "timeout", "oom")
DEFAULT_RETRY = frozenset({"crash", "timeout"})

TimingKey = tuple[str, int, int, int]  # gpu, workers, hosts, local_batch
CurveKey = tuple[int, int]  # global_batch, seed


@dataclass
class ProfileState:
    """Mutable view of a profile's content, kept current as the session appends."""

    workload: WorkloadRecord | None = None
    steps: dict[TimingKey, StepRecord] = field(default_factory=dict)
    failures: dict[TimingKey, FailureRecord] = field(default_factory=dict)
    # Steps and failures in the order added (the profile's records(), then the session's
    # appends): what oom_superseded reads, the solver's rule.
    timing: list[StepRecord | FailureRecord] = field(default_factory=list)
    # The profiler's own curves, by (global_batch, seed): what a rerun continues. A tracked
    # job's evaluations (``job`` set) are another run's epochs at the same key: counted here,
    # they were taken for the curve's first epochs, whose measurements were then skipped.
    evals: dict[CurveKey, list[EvalRecord]] = field(default_factory=lambda: defaultdict(list))
    job_evals: list[EvalRecord] = field(default_factory=list)  # the profile's tracked jobs' evaluations
    curves_done: dict[CurveKey, str] = field(default_factory=dict)
    noise: list[NoiseRecord] = field(default_factory=list)
    probe_wall_s: float = 0.0
    probe_worker_s: float = 0.0

    def all_evals(self) -> tuple[EvalRecord, ...]:
        """Every evaluation the profile holds, the profiler's curves' and tracked jobs'."""
        return tuple(e for runs in self.evals.values() for e in runs) + tuple(self.job_evals)

    def timing_done(self, key: TimingKey) -> bool:
        return key in self.steps or key in self.failures

    def oom_bound(self, gpu: str) -> int | None:
        """Smallest local batch that ran out of memory on ``gpu`` and that no later step
        superseded (None: none did; :func:`cotune.profile.oom_superseded`, the solver's rule).
        A failure ``forget_failures`` dropped, or a later one of its point replaced, is not counted."""
        failures = [r for r in self.timing if isinstance(r, FailureRecord)]
        bounds = [f.local_batch for f, gone in zip(failures, oom_superseded(self.timing))
                  if f.gpu == gpu and f.failure == "oom" and not gone
                  and self.failures.get((f.gpu, f.workers, f.hosts, f.local_batch)) is f]
        return min(bounds) if bounds else None

    def forget_failures(self, kinds: frozenset[str]) -> int:
        """Forget the failed timing points and curves of ``kinds`` so that this run probes
        them again (``--retry-failed``); the records stay in the file. Returns how many."""
        timing = [k for k, f in self.failures.items() if f.failure in kinds and k not in self.steps]
        curves = [k for k, reason in self.curves_done.items() if reason in kinds]
        for k in timing:
            del self.failures[k]
        for k in curves:
            del self.curves_done[k]
        return len(timing) + len(curves)

    def failed_before(self, key: TimingKey | CurveKey) -> str | None:
        """How a point this profile counts as done failed (None: it did not fail)."""
        if len(key) == 4:
            f = self.failures.get(key)  # type: ignore[arg-type]
            return None if f is None or key in self.steps else f.failure
        reason = self.curves_done.get(key)  # type: ignore[arg-type]
        return reason if reason in RETRY_KINDS else None

    def add(self, record: Any) -> None:
        if isinstance(record, WorkloadRecord):
            self.workload = record
        elif isinstance(record, StepRecord):
            self.steps[(record.gpu, record.workers, record.hosts, record.local_batch)] = record
            self.timing.append(record)
        elif isinstance(record, FailureRecord):
            self.failures[(record.gpu, record.workers, record.hosts, record.local_batch)] = record
            self.timing.append(record)
        elif isinstance(record, EvalRecord) and record.job is not None:
            self.job_evals.append(record)
        elif isinstance(record, EvalRecord):
            self.evals[(record.global_batch, record.seed)].append(record)
        elif isinstance(record, NoiseRecord):
            self.noise.append(record)
        elif isinstance(record, CurveDoneRecord):
            self.curves_done[(record.global_batch, record.seed)] = record.reason
        elif isinstance(record, ProbeCostRecord):
            self.probe_wall_s += record.wall_s
            self.probe_worker_s += record.wall_s * record.workers


def _optional_lines(path: Path) -> list[dict[str, Any]]:
    """Decoded ``probe_cost``/``curve_done`` lines; a torn last line is ignored."""
    out = []
    with path.open("r", encoding="utf-8-sig") as fh:  # as read_profile: a leading byte-order mark is read past
        for raw in fh:
            if not raw.endswith("\n"):
                break  # torn tail of an interrupted write
            try:
                data = json.loads(raw)
            except json.JSONDecodeError:
                continue  # read_profile has already rejected a bad middle line
            if isinstance(data, dict) and data.get("record") in ("probe_cost", "curve_done"):
                out.append(data)
    return out


def read_state(path: Path) -> ProfileState:
    """The state of the profile at ``path`` (empty if it does not exist or has no record yet)."""
    state = ProfileState()
    if not path.exists():
        return state
    check_profile_path(path)  # a device or a pipe: refused before anything reads it
    if not holds_records(path):
        # Empty, or only a torn first line: nothing was recorded yet. (A whole record without
        # its newline, or lines ending in "\r", are records: taken for a torn line, the done
        # probes were run again and a second workload record written.)
        return state
    profile = read_profile(path)
    for rec in profile.records():  # an order that keeps what supersedes an out-of-memory (Profile.records)
        state.add(rec)
    for data in _optional_lines(path):
        try:
            if data["record"] == "probe_cost":
                state.add(ProbeCostRecord(**{k: data[k] for k in (
                    "probe", "gpu", "workers", "hosts", "local_batch", "wall_s", "outcome")}))
            else:
                state.add(CurveDoneRecord(**{k: data[k] for k in (
                    "global_batch", "seed", "workers", "epochs", "reason")}))
        except (KeyError, TypeError) as exc:
            raise InputError(f"{path}: malformed {data.get('record')} record ({exc}): delete that line and rerun") from None
    return state
