"""The wire protocol between the session and its worker processes, as typed records.

The session writes one task file per probe (:class:`TimingTask` or :class:`CurveTask`);
every worker rank answers with one result file (``rank<N>.json``: :class:`TimingResult`,
:class:`CurveResult` or :class:`FailureResult`), and a curve's rank 0 appends one
:class:`EpochLine` per epoch to the progress file. The PyTorch and the TensorFlow workers
speak exactly this protocol, so the session cannot tell which framework answered.

Every record is a frozen dataclass with ``to_dict`` / ``from_dict``. ``from_dict``
ignores keys it does not know and fills optional fields with their defaults, so a
replacement launcher (see ``docs/profiler.md`` §8) may write the minimal result.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Union

from cotune._checks import MAX_MAGNITUDE

__all__ = [
    "TimingTask",
    "CurveTask",
    "Task",
    "TimingResult",
    "CurveResult",
    "FailureResult",
    "Result",
    "EpochLine",
    "diverged_metric",
    "task_from_dict",
    "result_from_dict",
    "read_task",
    "write_task",
    "batch_result_dir",
    "write_result",
    "read_results",
    "mark_started",
    "count_started",
    "append_epoch",
    "EXIT_OOM",
    "EXIT_CRASH",
    "EXIT_STORAGE",
    "EXIT_SETUP",
    "FAULT_MARKER",
    "STORAGE_ERRNOS",
]

# Exit codes of a worker process (torchrun reports them as "exitcode : N").
EXIT_OOM = 3
EXIT_CRASH = 4
EXIT_STORAGE = 5  # writing (or reading) our own files failed: a fault of ours, not of the workload
EXIT_SETUP = 6  # joining the process group or setting up the device failed: the environment's, not the workload's

# The line a worker writes to stderr (the probe's log) before it exits with EXIT_STORAGE or
# EXIT_SETUP: "FAULT_MARKER storage: …". Only with it are those codes ours: a workload that
# calls os._exit(5) or sys.exit(6) itself was blamed on our storage or launcher (exit 3,
# nothing recorded) instead of being recorded as its crash.
FAULT_MARKER = "cotune-worker-fault:"

# errno values that mean "the storage failed", wherever they are raised.
# EFBIG: a file-size limit (ulimit -f, RLIMIT_FSIZE) the environment sets, not the workload.
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG})


def _fields(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """The keys of ``data`` that ``cls`` declares, with lists turned into tuples."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names}


class _Record:
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self._tag(), **dataclasses.asdict(self)}  # type: ignore[call-overload]
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    def _tag(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """The record from its dict; unknown keys are ignored, missing optional ones defaulted."""
        return cls(**_fields(cls, data))


# --------------------------------------------------------------------------- tasks


@dataclass(frozen=True, kw_only=True)
class _TaskBase(_Record):
    workload: str  # FILE.py:NAME spec; every worker loads it again
    result_dir: str  # where each rank writes rank<N>.json
    local_batch: int
    seed: int = 0
    device: str = "auto"  # "auto", "cpu" or "cuda"
    loader_workers: int = 0
    cpu_threads: int = 1  # intra-op threads per worker on CPU (0: share the cores)

    kind: ClassVar[str] = ""

    def _tag(self) -> dict[str, Any]:
        return {"kind": self.kind}


@dataclass(frozen=True, kw_only=True)
class TimingTask(_TaskBase):
    """Warm up, then time steps until the median is within ``rel_precision``."""

    warmup_steps: int = 5
    min_timed_steps: int = 10
    max_timed_steps: int = 200
    max_timed_s: float = 30.0
    rel_precision: float = 0.05
    measure_sync: bool = True
    chunk_steps: int = 5
    # Further local batches timed in the same launch, in order, after ``local_batch``
    # (one start-up for the lot: torchrun, importing the framework, the rendezvous and
    # the model are most of a short probe's cost). Each batch's results go to
    # ``batch_result_dir(result_dir, i)``; the first failure ends the launch.
    more_local_batches: tuple[int, ...] = ()

    kind: ClassVar[str] = "timing"

    @property
    def local_batches(self) -> tuple[int, ...]:
        return (self.local_batch, *self.more_local_batches)


@dataclass(frozen=True, kw_only=True)
class CurveTask(_TaskBase):
    """Train at ``local_batch`` × workers, evaluating after every epoch, until the target."""

    max_epochs: int
    progress_path: str
    target: float | None = None
    noise: bool = False
    checkpoint_path: str | None = None

    kind: ClassVar[str] = "curve"


Task = Union[TimingTask, CurveTask]


def task_from_dict(data: dict[str, Any]) -> Task:
    kind = data.get("kind")
    cls = {"timing": TimingTask, "curve": CurveTask}.get(str(kind))
    if cls is None:
        raise ValueError(f"task kind must be 'timing' or 'curve', got {kind!r}")
    return cls(**_fields(cls, data))


def write_task(path: Path, task: Task) -> None:
    path.write_text(json.dumps(task.to_dict(), allow_nan=True), encoding="utf-8")


def read_task(path: Path) -> Task:
    return task_from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, kw_only=True)
class TimingResult(_Record):
    """A finished timing probe, as one rank saw it.

    The PyTorch worker gathers every rank's step times and reports the summary
    (``step_time_s``, ...); the TensorFlow worker reports its own ``raw_times`` and the
    session summarises the per-step maximum over ranks.
    """

    rank: int = 0
    peak_memory_bytes: float = 0.0
    step_time_s: float | None = None
    step_time_spread_s: float | None = None
    timed_steps: int | None = None
    sync_time_s: float | None = None
    compute_time_s: float | None = None
    rel_halfwidth: float | None = None
    hosts: int | None = None
    step_times_s: tuple[float, ...] = ()
    raw_times: tuple[float, ...] = ()
    raw_nosync: tuple[float, ...] = ()

    status: ClassVar[str] = "ok"

    def _tag(self) -> dict[str, Any]:
        return {"status": "ok"}


@dataclass(frozen=True, kw_only=True)
class CurveResult(_Record):
    """A learning curve that ended normally (``reason``: target, max_epochs, diverged, stopped)."""

    rank: int = 0
    reason: str = "max_epochs"
    epochs: int = 0
    steps_per_epoch: int = 0

    status: ClassVar[str] = "ok"

    def _tag(self) -> dict[str, Any]:
        return {"status": "ok"}


@dataclass(frozen=True, kw_only=True)
class FailureResult(_Record):
    """A rank that failed: ``oom`` and ``crash`` are facts about the workload; ``storage``
    (our own files could not be written) and ``setup`` (the rank could not join the process
    group or set up its device, before any workload code ran) are not, and are never
    recorded in the profile."""

    status: Literal["oom", "crash", "storage", "setup"]
    rank: int = 0
    message: str = ""
    traceback: str = ""


Result = Union[TimingResult, CurveResult, FailureResult]


def result_from_dict(data: dict[str, Any], *, kind: str) -> Result:
    """Parse one ``rank<N>.json`` of a ``kind`` ("timing" or "curve") task."""
    status = data.get("status")
    if status == "ok":
        cls: type = TimingResult if kind == "timing" else CurveResult
        return cls(**_fields(cls, data))
    if status in ("oom", "crash", "storage", "setup"):
        return FailureResult(**_fields(FailureResult, data))
    raise ValueError(f"result status must be ok, oom, crash, storage or setup, got {status!r}")


def write_result(result_dir: str | Path, result: Result) -> None:
    """Write ``rank<N>.json`` atomically (a reader never sees half a file)."""
    path = Path(result_dir) / f"rank{result.rank}.json"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(result.to_dict(), allow_nan=True), encoding="utf-8")
    os.replace(tmp, path)


def batch_result_dir(result_dir: str | Path, index: int) -> Path:
    """Where each rank writes its result for the ``index``-th local batch of a timing task
    that times several (:attr:`TimingTask.more_local_batches`)."""
    return Path(result_dir) / f"batch-{index:03d}"


def mark_started(result_dir: str | Path, rank: int) -> None:
    """``rank<N>.started``: this rank's process is running (it read its task)."""
    (Path(result_dir) / f"rank{rank}.started").touch()


def count_started(result_dir: Path) -> int:
    """How many ranks reached the worker's entry point (0: the launcher never started one)."""
    return sum(1 for _ in Path(result_dir).glob("rank*.started"))


def read_results(result_dir: Path, *, kind: str) -> list[Result]:
    """Every readable result file, by rank; a rank killed while writing is skipped
    (the others, or the exit code, tell what happened)."""
    out = []
    for path in sorted(Path(result_dir).glob("rank*.json")):
        try:
            out.append(result_from_dict(json.loads(path.read_text(encoding="utf-8")), kind=kind))
        except (OSError, ValueError, TypeError):
            continue
    return out


# --------------------------------------------------------------------------- progress


@dataclass(frozen=True, kw_only=True)
class EpochLine(_Record):
    """One finished epoch of a curve, appended by rank 0 to the progress file."""

    epoch_index: int
    epoch: float  # real passes over the data (drop_last makes an epoch slightly short)
    metric: float
    b_noise: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if self.b_noise is None:
            del out["b_noise"]
        return out


def diverged_metric(metric: float) -> bool:
    """Whether an evaluation says the run diverged: NaN, ±inf, or a finite value beyond what a
    profile holds (``MAX_MAGNITUDE``: the perplexity exp(40) of a diverged language model)."""
    return not math.isfinite(metric) or abs(metric) > MAX_MAGNITUDE


def append_epoch(path: Path, line: EpochLine) -> None:
    """Append one epoch line, flushed and fsync'ed (the session copies it at once)."""
    with Path(path).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line.to_dict(), allow_nan=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())

