"""Which probes to run, in which order: explicit grids, or a plan chosen within a budget.

Points are produced one at a time from the current :class:`ProfileState`, so the plan
reacts to what the probes found (an out-of-memory stops the batch ladder) and a
resumed run skips what is done.

Automatic plan (no ``--workers``/``--local-batch``), cheapest information first:

1. the batch ladder on one worker: ``min_batch, 2·min_batch, …`` up to the first
   out-of-memory or ``max_batch`` (the memory limit and the step-time shape in batch);
2. one probe per larger worker count (1, 2, 4, … up to ``max_workers``) at the
   middle feasible batch (the synchronisation cost in workers);
3. the learning curves (``--curves``, or three global batches spread geometrically
   over the feasible range), which the accuracy model cannot do without;
4. the smallest and largest feasible batch at every larger worker count.

Steps 1 and 4 (and an explicit grid's batches at each worker count) are
:class:`TimingGroup` values: the session times them in one launch where the launcher can.
A ``--probe-budget`` cuts the list where the next point's estimated cost no longer fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, Sequence, Union

from profiler._state import ProfileState

__all__ = [
    "TimingPoint", "TimingGroup", "CurvePoint", "Point", "GridPlan", "AutoPlan", "data_cap", "geometric_batches",
    "worker_ladder",
]


@dataclass(frozen=True)
class TimingPoint:
    """Measure the step time of ``workers`` × ``local_batch``."""

    workers: int
    local_batch: int

    @property
    def label(self) -> str:
        return f"timing workers={self.workers} local_batch={self.local_batch}"


@dataclass(frozen=True)
class CurvePoint:
    """Train a learning curve at ``global_batch`` on ``workers`` workers with ``seed``, for
    at most ``max_epochs`` (None: the session's ``--max-epochs``; never more than it)."""

    global_batch: int
    seed: int
    workers: int
    max_epochs: int | None = None

    @property
    def local_batch(self) -> int:
        return self.global_batch // self.workers

    @property
    def label(self) -> str:
        return f"curve global_batch={self.global_batch} seed={self.seed} workers={self.workers}"


Point = Union[TimingPoint, CurvePoint]


@dataclass(frozen=True)
class TimingGroup:
    """Timing points at one worker count, local batches ascending, that the session may
    time in one launch (one start-up for the lot; each point is still its own record).

    A plan yields a group only where it does not need the result of one point to choose
    the next: the session runs the group's points in order and stops the launch at the
    first failure (an out-of-memory ends the ladder, as the points one by one would)."""

    points: tuple[TimingPoint, ...]

    def __post_init__(self) -> None:
        if len({p.workers for p in self.points}) > 1:
            raise ValueError(f"a timing group runs at one worker count, got {sorted({p.workers for p in self.points})}")
        batches = [p.local_batch for p in self.points]
        if batches != sorted(batches):
            raise ValueError(f"a timing group's local batches ascend (out-of-memory ends it), got {batches}")


def geometric_batches(low: int, high: int) -> list[int]:
    """Powers-of-two ladder ``low, 2·low, …`` not above ``high``."""
    out, b = [], max(1, low)
    while b <= high:
        out.append(b)
        b *= 2
    return out


def worker_ladder(max_workers: int) -> list[int]:
    """``1, 2, 4, …`` up to and including ``max_workers``."""
    out, w = [], 1
    while w < max_workers:
        out.append(w)
        w *= 2
    out.append(max_workers)
    return sorted(set(out))


def data_cap(state: ProfileState, max_batch: int) -> int:
    """``max_batch``, lowered to the training set's size once the profile knows it."""
    return min(max_batch, state.workload.dataset_size) if state.workload is not None else max_batch


def _curve_points(batches: Sequence[int], seeds: Sequence[int], workers: int) -> list[CurvePoint]:
    return [CurvePoint(global_batch=b, seed=s, workers=workers) for b in batches for s in seeds]


def _spread_curve_batches(smallest_local: int, largest_local: int, *, curve_workers: int) -> list[int]:
    """Three global batches spread geometrically over the feasible range, each a multiple of
    ``curve_workers``: a curve trains at ``curve_workers × (B // curve_workers)``, so any other
    B was recorded at a batch it did not train at (its epochs and learning rate were another's)."""
    low = -(-smallest_local // curve_workers) * curve_workers  # up: each worker's local batch is >= 1
    high = largest_local * curve_workers
    geometric_mid = 2 ** round(math.log2(math.sqrt(low * high)))
    mid = min(high, max(low, round(geometric_mid / curve_workers) * curve_workers))
    return sorted({low, mid, high})


@dataclass(frozen=True)
class GridPlan:
    """Every (workers, local_batch) of the grids, batch ascending, then the curves."""

    workers: tuple[int, ...]
    local_batches: tuple[int, ...]
    curves: tuple[int, ...] = ()
    seeds: tuple[int, ...] = (0,)
    curve_workers: int = 1

    def points(self, state: ProfileState, *, gpu: str, hosts: int) -> Iterator[Point | TimingGroup]:
        for w in self.workers:
            yield TimingGroup(tuple(TimingPoint(workers=w, local_batch=b) for b in sorted(set(self.local_batches))))
        yield from _curve_points(self.curves, self.seeds, self.curve_workers)

    def size_hint(self) -> int:
        return len(self.workers) * len(self.local_batches) + len(self.curves) * len(self.seeds)


@dataclass(frozen=True)
class AutoPlan:
    """The budgeted automatic plan described in the module docstring."""

    max_workers: int
    min_batch: int = 8
    max_batch: int = 1024
    curves: tuple[int, ...] | None = None  # None: choose three global batches
    seeds: tuple[int, ...] = (0,)
    curve_workers: int = 1
    with_curves: bool = True

    def _feasible(self, state: ProfileState, gpu: str, hosts: int) -> list[int]:
        return sorted(k[3] for k in state.steps if k[0] == gpu and k[1] == 1 and k[2] == hosts)

    def points(self, state: ProfileState, *, gpu: str, hosts: int) -> Iterator[Point | TimingGroup]:
        # 1. batch ladder on one worker, until the first out-of-memory (the group stops there)
        #    and never past the training set (a step holds at most every sample once).
        bound = state.oom_bound(gpu)
        ladder = [b for b in geometric_batches(self.min_batch, data_cap(state, self.max_batch))
                  if bound is None or b < bound]
        yield TimingGroup(tuple(TimingPoint(workers=1, local_batch=b) for b in ladder))
        feasible = self._feasible(state, gpu, hosts) or [self.min_batch]
        larger = [w for w in worker_ladder(self.max_workers) if w > 1 and w % hosts == 0]
        # 2. the middle batch at every larger worker count.
        middle = feasible[len(feasible) // 2]
        for w in larger:
            yield TimingPoint(workers=w, local_batch=middle)
        # 3. learning curves.
        if self.with_curves:
            if self.curves is not None:
                chosen = list(self.curves)
            else:
                chosen = _spread_curve_batches(feasible[0], feasible[-1], curve_workers=self.curve_workers)
            yield from _curve_points(chosen, self.seeds, self.curve_workers)
        # 4. the ends of the feasible range at every larger worker count.
        for w in larger:
            yield TimingGroup(tuple(TimingPoint(workers=w, local_batch=b) for b in sorted({feasible[0], feasible[-1]})))

    def size_hint(self) -> int:
        rungs = len(geometric_batches(self.min_batch, self.max_batch))
        larger = len(worker_ladder(self.max_workers)) - 1
        curves = (len(self.curves) if self.curves is not None else 3) * len(self.seeds) if self.with_curves else 0
        return rungs + larger * 3 + curves
