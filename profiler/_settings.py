"""What a session is told (probe and curve settings) and what it reports (its summary)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cotune._checks import integer, number
from cotune.errors import InputError
from cotune.units import format_duration
from profiler._plan import CurvePoint
from profiler._state import ProfileState
from profiler._workload import MAX_DURATION_S, MAX_SEED

__all__ = ["ProbeSettings", "CurveSettings", "SessionSummary", "ProbeEstimator"]


@dataclass(frozen=True)
class ProbeSettings:
    """How one timing probe measures.

    Timed steps continue in chunks until the median's ~95 % interval is within
    ``rel_precision`` of it, or ``max_timed_steps`` / ``max_timed_s`` is reached.
    ``cpu_threads`` is the intra-op threads of each worker on CPU (0: share the cores).
    """

    warmup_steps: int = 5
    min_timed_steps: int = 10
    max_timed_steps: int = 200
    max_timed_s: float = 30.0
    rel_precision: float = 0.05
    measure_sync: bool = True
    timeout_s: float = 300.0
    device: str = "auto"
    loader_workers: int = 0
    cpu_threads: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        # The Python API's door, as the CLI's options are: a value no probe can run with was
        # launched and ended as the workload's crash (max_timed_steps=0), which reruns skip.
        _whole(self, "warmup_steps", ge=0)
        _whole(self, "min_timed_steps", ge=1)
        _whole(self, "max_timed_steps", ge=1)
        if self.max_timed_steps < self.min_timed_steps:
            raise InputError(f"ProbeSettings.max_timed_steps {self.max_timed_steps} is below min_timed_steps "
                             f"{self.min_timed_steps}: raise max_timed_steps or lower min_timed_steps")
        _seconds(self, "max_timed_s", ge=0.0)  # 0: stop at min_timed_steps
        object.__setattr__(self, "rel_precision", number(self.rel_precision, where="ProbeSettings.rel_precision",
                                                         gt=0.0, lt=1.0, what="a fraction (0.05 for ±5 %)"))
        _flag(self, "measure_sync")
        _seconds(self, "timeout_s")
        if self.device not in ("auto", "cpu", "cuda"):
            raise InputError(f"ProbeSettings.device must be 'auto', 'cpu' or 'cuda', got {self.device!r}")
        _whole(self, "loader_workers", ge=0)
        _whole(self, "cpu_threads", ge=0)
        _whole(self, "seed", ge=0, le=MAX_SEED)


@dataclass(frozen=True)
class CurveSettings:
    """How learning curves train: epoch limit, target (optional), gradient noise."""

    max_epochs: int = 20
    target: float | None = None
    noise: bool = False
    timeout_s: float = 3600.0
    checkpoint: bool = True

    def __post_init__(self) -> None:
        # As ProbeSettings: max_epochs=0 marked every curve done with no epoch trained.
        _whole(self, "max_epochs", ge=1)
        if self.target is not None:
            object.__setattr__(self, "target", number(self.target, where="CurveSettings.target"))
        _flag(self, "noise")
        _seconds(self, "timeout_s")
        _flag(self, "checkpoint")


def _whole(settings: object, name: str, *, ge: int, le: int | None = None) -> None:
    """Check the whole-number field ``name`` of a frozen settings object (3.0 is kept as 3)."""
    where = f"{type(settings).__name__}.{name}"
    object.__setattr__(settings, name, integer(getattr(settings, name), where=where, ge=ge, le=le))


def _seconds(settings: object, name: str, *, ge: float | None = None) -> None:
    """Check the duration field ``name``: positive (or at least ``ge``), and no longer than any
    option takes (a longer one overflowed the time-out alarm)."""
    where = f"{type(settings).__name__}.{name}"
    bounds = {"gt": 0.0} if ge is None else {"ge": ge}
    object.__setattr__(settings, name, number(getattr(settings, name), where=where, le=MAX_DURATION_S,
                                              what="a number of seconds", **bounds))


def _flag(settings: object, name: str) -> None:
    if not isinstance(getattr(settings, name), bool):
        raise InputError(f"{type(settings).__name__}.{name} must be True or False, got {getattr(settings, name)!r}")


@dataclass(frozen=True)
class SessionSummary:
    """What a session did; ``probe_*`` include earlier runs on the same profile."""

    out: str
    gpu: str
    ran: int
    failed: int
    skipped_done: int
    skipped_oom: int
    skipped_budget: int
    records_written: int
    session_wall_s: float
    probe_wall_s: float
    probe_worker_s: float
    plan_note: str | None = None  # why the plan stopped (the value plan says; the fixed plans run out)
    # The value plan's ledger: per measurement it bought, the expected saving and what the
    # refitted models then showed (profiler._value.ledger_line).
    ledger: tuple[str, ...] = ()
    launches: int | None = None  # process launches this run (None: not counted); fewer than ran with timing groups
    skipped_failed: tuple[tuple[str, int], ...] = ()  # of skipped_done: (kind, count) of points that failed before
    failed_kinds: tuple[str, ...] = ()  # how this run's failed probes failed ("crash", "oom", ...)

    @property
    def probe_worker_hours(self) -> float:
        return self.probe_worker_s / 3600.0

    def describe(self) -> str:
        parts = [
            f"{self.out}: {self.ran} probe{'' if self.ran == 1 else 's'} run ({self.failed} failed)"
            + (f" in {self.launches} launch{'' if self.launches == 1 else 'es'}" if self.launches is not None and self.launches < self.ran else "")
            + f", {self.records_written} records written",
            f"{self.skipped_done} already in the profile" + self._failed_before(),
        ]
        if self.skipped_oom:
            parts.append(f"{self.skipped_oom} skipped above an out-of-memory batch")
        if self.skipped_budget:
            parts.append(f"{self.skipped_budget} left out by --probe-budget")
        cost = (
            f"probe cost so far: {self.probe_worker_hours:.4f} worker-hours "
            f"({format_duration(self.probe_wall_s)} of probing)"
        )
        ledger = "".join(f"\n{line}" for line in self.ledger)
        return ("; ".join(parts) + "\n" + cost + ledger + (f"\n{self.plan_note}" if self.plan_note else "")
                + self._all_failed())

    def _failed_before(self) -> str:
        """' (2 of them failed before: crash 2; ...)': a rerun counts a failed point as done,
        so the user who fixed the cause is told how to run it again."""
        if not self.skipped_failed:
            return ""
        n = sum(c for _, c in self.skipped_failed)
        kinds = ", ".join(f"{k} {c}" for k, c in self.skipped_failed)
        names = ",".join(k for k, _ in self.skipped_failed)
        return f" ({n} of them failed before: {kinds}; --retry-failed {names} runs them again)"

    @property
    def all_failed(self) -> bool:
        """Whether this run started probes and every one of them failed: it measured nothing
        (``cotune profile`` exits 1 then, so a script does not go on as if it had)."""
        return bool(self.ran) and self.failed >= self.ran

    @property
    def retry_kinds(self) -> str:
        """What ``--retry-failed`` names to run this run's failed points again ("crash,oom")."""
        return ",".join(k for k in self.failed_kinds if k != "other") or "crash,timeout"

    def all_failed_line(self, *, where: str = "the logs under") -> str:
        """The one line on a run whose every probe failed (``where``: what says why, before the
        logs folder), with the rerun that runs them again ("" if some probe succeeded)."""
        if not self.all_failed:
            return ""
        return (f"every probe of this run failed ({', '.join(self.failed_kinds)}): {where} {self.out}.cotune/logs/ "
                f"say why; fix the cause, then run the same command with --retry-failed {self.retry_kinds}")

    def _all_failed(self) -> str:
        """A run whose every probe failed measured nothing: most often the workload's own
        error (the same one at every point), which a rerun would skip as done."""
        line = self.all_failed_line(where="the lines above and the logs under")
        return f"\n{line}" if line else ""


@dataclass
class ProbeEstimator:
    """Rough cost of the next point, for the budget and the time-left display."""

    timing_walls: list[float] = field(default_factory=list)  # points that began a launch (start-up included)
    extra_walls: list[float] = field(default_factory=list)  # further batches of a launch already started
    curve_epoch_s: list[float] = field(default_factory=list)
    default_timing_s: float = 8.0

    def timing_s(self) -> float:
        """A timing point in a launch of its own (or the first of a group)."""
        if not self.timing_walls:
            return self.default_timing_s
        return sorted(self.timing_walls)[len(self.timing_walls) // 2]

    def extra_s(self) -> float:
        """One more local batch in a launch already started; until one has been seen, as
        much as a launch of its own (the budget errs on the side of probing less)."""
        if not self.extra_walls:
            return self.timing_s()
        return sorted(self.extra_walls)[len(self.extra_walls) // 2]

    def curve_s(self, point: CurvePoint, state: ProfileState, *, gpu: str, hosts: int, dataset_size: int,
                max_epochs: int) -> float:
        done = len(state.evals.get((point.global_batch, point.seed), []))
        epochs = max(0, max_epochs - done)
        step = state.steps.get((gpu, point.workers, hosts, point.local_batch))
        if step is not None:
            per_epoch = dataset_size / point.global_batch * step.step_time_s * 1.3
        elif self.curve_epoch_s:
            per_epoch = sorted(self.curve_epoch_s)[len(self.curve_epoch_s) // 2]
        else:
            per_epoch = 2.0
        return self.timing_s() * 0.6 + epochs * per_epoch
