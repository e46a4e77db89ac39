"""Replay launcher and exhaustive oracle over published measurements.

The launcher answers probe requests from a :class:`~benchmarks.traces.Workload`'s
measured tables and charges for them; a planner sees only what it probed (plus the
learning curves the scenario makes visible). The oracle sees every measurement and
computes the true time and cost of every candidate, hence the true optimum.

Ground truth, for candidate ``c = (gpu, n, h, b)`` with global batch ``B = n·b``::

    E*(B)     = first epoch where the best-so-far metric of the curve at B reaches the
                target (linear between evaluations); between measured batches
                log E* is linear in log B where both neighbours reach the target
                (Pollux's simulator interpolates likewise). Where only one does, B
                reaches it iff the plateau interpolated in log B does: at the first
                epoch where the log-B blend of the two best-so-far curves reaches it,
                and no earlier than B reaches the highest level both neighbours reach
                (:func:`epochs_at`). A batch next to a measured one behaves like it: one
                run's seed noise at the far neighbour no longer makes it unreachable.
    time*(c)  = E*(B) × N / B × step_time*(gpu, n, h, b)
    cost*(c)  = n × price(gpu) × time*(c) / 3600

A candidate exists only where its step time was measured (with packed hosts,
``h = ⌈n / gpus_per_host⌉``) and ``B`` lies within the measured batches, so planner
and oracle share one space and every choice has a true cost.

A probe at ``c`` runs ``setup_s`` of start-up plus ``probe_steps`` steps on all ``n``
workers and costs ``n × price × (setup_s + probe_steps × step_time*) / 3600``.

The reference curve came from a previous run, and that run logged its step time: the
launcher knows it from the start, free (its price is in the curve's cost), at the
configuration the curve is billed at (:func:`curve_run_index`, as
:func:`benchmarks.settings.curve_cost` bills it: the recipe's configuration — the fewest
workers of that global batch, the lowest price among GPU types — chosen without the true
step times; ``Evidence.step_runs``). Every setting gets this one run's step time — the
free curves of the upper-bound setting come without theirs, so the settings differ in
curves only. Probing it again costs nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from benchmarks.settings import Evidence, evals_of, recipe_order, visible_batches
from benchmarks.traces import Curve, Workload
from cotune.profile import EvalRecord, Profile, StepRecord, WorkloadRecord
from cotune.solver import DEFAULT_PROBE_SETUP_S, DEFAULT_PROBE_STEPS, Candidates

__all__ = [
    "PROBE_SETUP_S",
    "PROBE_STEPS",
    "probe_price",
    "curve_epochs_to_target",
    "curve_epochs_to_targets",
    "epochs_at",
    "recipe_end_at",
    "true_epochs",
    "build_candidates",
    "visible_batches",
    "Oracle",
    "OracleSolution",
    "ReplayLauncher",
    "curve_run_index",
]

# A replayed probe costs what cotune prices one at (cotune.solver.DEFAULT_PROBE_SETUP_S / _STEPS).
PROBE_SETUP_S = DEFAULT_PROBE_SETUP_S  # container start, torchrun rendezvous, data loader and CUDA warm-up
PROBE_STEPS = DEFAULT_PROBE_STEPS  # 10 warm-up + 40 timed steps


def probe_price(workers, price_per_hour, step_time_s, *, setup_s: float = PROBE_SETUP_S, probe_steps: int = PROBE_STEPS):
    """USD of a probe (arrays or scalars): ``setup_s`` plus ``probe_steps`` steps on every worker."""
    return workers * price_per_hour * (setup_s + probe_steps * step_time_s) / 3600.0


def _best_so_far(curve: Curve, goal: str) -> tuple[np.ndarray, np.ndarray]:
    """(epochs, best-so-far score) of a curve; score is the metric, negated for ``goal="min"``."""
    sign = 1.0 if goal == "max" else -1.0
    score = np.where(np.isfinite(curve.metric), sign * curve.metric, -np.inf)
    return np.asarray(curve.epochs, float), np.maximum.accumulate(score)


def _first_crossing(epochs: np.ndarray, best: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """First epoch where the non-decreasing ``best`` reaches each score (linear between points)."""
    scores = np.asarray(scores, float)
    idx = np.searchsorted(best, scores, side="left")  # first point with best >= score
    out = np.full(scores.shape, np.inf)
    hit = idx < best.size
    first = hit & (idx == 0)
    out[first] = epochs[0]
    mid = hit & (idx > 0)
    if np.any(mid):
        i = idx[mid]
        e0, e1, s0, s1 = epochs[i - 1], epochs[i], best[i - 1], best[i]
        with np.errstate(invalid="ignore", divide="ignore"):
            frac = np.where(s1 > s0, (scores[mid] - s0) / (s1 - s0), 0.0)
        frac = np.where(np.isfinite(frac), frac, 1.0)  # from "no value yet" (-inf): at the evaluation that reaches it
        out[mid] = e0 + frac * (e1 - e0)
    return out


def curve_epochs_to_targets(curve: Curve, targets: np.ndarray, goal: str) -> np.ndarray:
    """Epochs until the curve's best-so-far metric first reaches each target (inf if never)."""
    sign = 1.0 if goal == "max" else -1.0
    epochs, best = _best_so_far(curve, goal)
    return _first_crossing(epochs, best, sign * np.asarray(targets, float))


def curve_epochs_to_target(curve: Curve, target: float, goal: str) -> float:
    """Epochs until the curve's best-so-far metric first reaches ``target`` (inf if never)."""
    return float(curve_epochs_to_targets(curve, np.array([target], float), goal)[0])


def _loglog(frac: float, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.exp(np.log(lo) + frac * (np.log(hi) - np.log(lo)))
    return np.where(np.isfinite(lo) & np.isfinite(hi), val, np.inf)


def _blend_crossing(lo: Curve, hi: Curve, frac: float, goal: str, scores: np.ndarray, end: float) -> np.ndarray:
    """First epoch (≤ ``end``) where ``(1 − frac)·best_lo + frac·best_hi`` reaches each score.

    Both best-so-far curves are linear between their evaluations and held at their last
    value; a value before a curve's first finite evaluation is its lowest finite one.
    """
    parts = []
    for c in (lo, hi):
        e, s = _best_so_far(c, goal)
        finite = np.isfinite(s)
        s = np.where(finite, s, np.min(s[finite]) if np.any(finite) else 0.0)
        parts.append((e, s))
    grid = np.union1d(parts[0][0], parts[1][0])
    grid = np.append(grid[grid < end], end)
    blend = (1.0 - frac) * np.interp(grid, *parts[0]) + frac * np.interp(grid, *parts[1])
    return _first_crossing(grid, np.maximum.accumulate(blend), scores)


def _neighbours(workload: Workload, gb: float) -> tuple[int, int, float]:
    """(lower, upper) indices of the measured batches around ``gb`` and its log-B weight on the upper."""
    batches = np.array(workload.batches, float)
    j = int(np.clip(np.searchsorted(batches, gb), 1, len(batches) - 1))
    i = j - 1
    if batches[j] == batches[i]:  # a single measured batch
        return i, j, 0.0
    frac = (math.log(gb) - math.log(batches[i])) / (math.log(batches[j]) - math.log(batches[i]))
    return i, j, min(max(frac, 0.0), 1.0)


def recipe_end_at(workload: Workload, global_batch: float) -> float:
    """The last epoch a run at ``global_batch`` trains for: the measured recipes' ends,
    log-log interpolated between the neighbouring measured batches."""
    i, j, frac = _neighbours(workload, float(global_batch))
    ends = [float(np.nanmax(workload.curves[workload.batches[k]].epochs)) for k in (i, j)]
    return float(_loglog(frac, np.array([ends[0]]), np.array([ends[1]]))[0])


def epochs_at(workload: Workload, global_batch: float, targets: np.ndarray) -> np.ndarray:
    """E*(B, t) at one global batch for many targets (raw metric): inf where unreached, NaN
    where ``B`` lies outside the measured batches. See the module docstring for the rule."""
    targets = np.asarray(targets, float)
    batches = np.array(workload.batches, float)
    gb = float(global_batch)
    if not batches[0] <= gb <= batches[-1]:
        return np.full(targets.shape, np.nan)
    goal = workload.goal
    i, j, frac = _neighbours(workload, gb)
    for k in (i, j):
        if gb == batches[k]:
            return curve_epochs_to_targets(workload.curves[workload.batches[k]], targets, goal)
    lo, hi = workload.curves[workload.batches[i]], workload.curves[workload.batches[j]]
    e_lo, e_hi = curve_epochs_to_targets(lo, targets, goal), curve_epochs_to_targets(hi, targets, goal)
    out = _loglog(frac, e_lo, e_hi)
    one = np.isfinite(e_lo) ^ np.isfinite(e_hi)
    if np.any(one):
        sign = 1.0 if goal == "max" else -1.0
        blend = _blend_crossing(lo, hi, frac, goal, sign * targets[one], recipe_end_at(workload, gb))
        # No earlier than the highest level both neighbours reach (the lower of their bests),
        # so a higher target is never reached sooner than a lower one.
        both = min(_best_so_far(lo, goal)[1][-1], _best_so_far(hi, goal)[1][-1]) * sign
        floor = _loglog(frac, curve_epochs_to_targets(lo, np.array([both]), goal),
                        curve_epochs_to_targets(hi, np.array([both]), goal))[0]
        out[one] = np.where(np.isfinite(blend), np.maximum(blend, floor), np.inf)
    return out


def true_epochs(workload: Workload, global_batch: np.ndarray, target: float) -> np.ndarray:
    """E*(B): true epochs to target (inf: unreached; NaN: B outside the measured batches)."""
    gb = np.asarray(global_batch, float)
    uniq, inv = np.unique(gb, return_inverse=True)
    vals = np.array([epochs_at(workload, float(b), np.array([target]))[0] for b in uniq])
    return vals[inv.ravel()].reshape(gb.shape)


def build_candidates(workload: Workload, *, max_workers: int | None = None) -> Candidates:
    """Every measured packed configuration whose global batch lies within the measured batches."""
    gph = workload.gpus_per_host
    lo, hi = workload.batches[0], workload.batches[-1]
    rows = [
        (workload.gpus.index(g), n, h, b)
        for (g, n, h, b) in workload.steps
        if g in workload.gpus
        and h == -(-n // gph)
        and lo <= n * b <= hi
        and (max_workers is None or n <= max_workers)
    ]
    rows.sort()
    arr = np.array(rows, dtype=np.int64).reshape(-1, 4)
    return Candidates(
        gpus=workload.gpus,
        markets=("on_demand",),
        gpu=arr[:, 0].astype(np.int32),
        market=np.zeros(len(arr), dtype=np.int32),
        workers=arr[:, 1],
        hosts=arr[:, 2],
        local_batch=arr[:, 3],
    )


def price_matrix(workload: Workload) -> np.ndarray:
    """(gpus × markets) USD per worker-hour, the layout cotune's ``estimate`` takes."""
    return np.array([[workload.prices[g]] for g in workload.gpus], float)


@dataclass(frozen=True)
class OracleSolution:
    index: int | None  # into the candidates; None if nothing is truly feasible
    cost: float
    time_s: float


class Oracle:
    """True step time, epochs, time and cost of every candidate of a workload."""

    def __init__(self, workload: Workload, candidates: Candidates) -> None:
        self.workload = workload
        self.candidates = candidates
        gpus = candidates.gpus
        self.step_time_s = np.array(
            [
                workload.steps[(gpus[g], int(n), int(h), int(b))]
                for g, n, h, b in zip(candidates.gpu, candidates.workers, candidates.hosts, candidates.local_batch)
            ]
        )
        self.price_per_hour = price_matrix(workload)[candidates.gpu, 0]
        self._cache: dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def evaluate(self, target: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(epochs, time_s, cost) of every candidate for ``target``; inf where unreached."""
        key = float(target)
        if key not in self._cache:
            gb = self.candidates.global_batch.astype(float)
            epochs = true_epochs(self.workload, gb, target)
            time_s = epochs * self.workload.dataset_size / gb * self.step_time_s
            cost = self.candidates.workers * self.price_per_hour * time_s / 3600.0
            self._cache[key] = (epochs, time_s, cost)
        return self._cache[key]

    def fastest_time_s(self, target: float) -> float:
        _, time_s, _ = self.evaluate(target)
        return float(np.min(time_s))

    def solve(self, target: float, deadline_s: float | None) -> OracleSolution:
        _, time_s, cost = self.evaluate(target)
        ok = np.isfinite(cost) & ((time_s <= deadline_s) if deadline_s is not None else True)
        if not np.any(ok):
            return OracleSolution(None, float("inf"), float("inf"))
        idx = np.flatnonzero(ok)
        i = int(idx[np.lexsort((time_s[idx], cost[idx]))[0]])
        return OracleSolution(i, float(cost[i]), float(time_s[i]))

    def pareto(self, target: float) -> np.ndarray:
        """True cost–time frontier (indices, fastest first)."""
        _, time_s, cost = self.evaluate(target)
        idx = np.flatnonzero(np.isfinite(cost))
        order = idx[np.lexsort((cost[idx], time_s[idx]))]
        running = np.minimum.accumulate(cost[order])
        keep = np.ones(order.size, dtype=bool)
        keep[1:] = cost[order][1:] < running[:-1]
        return order[keep]


@dataclass
class ReplayLauncher:
    """Answers probes from the measurements and keeps the bill.

    The planner gets a cotune :class:`~cotune.profile.Profile` holding only the
    probed step times and the setting's evidence (learning curves, noise records).
    """

    workload: Workload
    oracle: Oracle
    evidence: "Evidence"
    setup_s: float = PROBE_SETUP_S
    probe_steps: int = PROBE_STEPS
    probed: list[int] = field(default_factory=list)  # paid probes, in order
    probe_cost: float = 0.0
    probe_time_s: float = 0.0
    known: tuple[int, ...] = ()  # candidates whose step time the reference run logged (free)

    def __post_init__(self) -> None:
        if not self.known:
            c = self.oracle.candidates
            runs = (curve_run_index(c, self.oracle.price_per_hour, b) for b in self.evidence.step_runs)
            self.known = tuple(dict.fromkeys(i for i in runs if i is not None))

    @property
    def measured(self) -> tuple[int, ...]:
        """Every candidate whose step time the planner knows: the curves' runs, then the probes."""
        return tuple(dict.fromkeys((*self.known, *self.probed)))

    def probe(self, index: int) -> float:
        """Run (replay) a probe at candidate ``index``; returns its measured step time.

        A configuration already measured (probed, or the reference run) is answered from
        the log at no charge.
        """
        step = float(self.oracle.step_time_s[index])
        if index in self.probed or index in self.known:
            return step
        self.probe_cost += float(probe_price(self.oracle.candidates.workers[index], self.oracle.price_per_hour[index], step,
                                             setup_s=self.setup_s, probe_steps=self.probe_steps))
        self.probe_time_s += self.setup_s + self.probe_steps * step
        self.probed.append(int(index))
        return step

    def profile(self) -> Profile:
        """What the planner knows: the measured step times (the curves' runs and the probes)
        and the setting's curves and noise records."""
        c = self.oracle.candidates
        steps = tuple(
            StepRecord(
                gpu=c.gpus[int(c.gpu[i])],
                workers=int(c.workers[i]),
                hosts=int(c.hosts[i]),
                local_batch=int(c.local_batch[i]),
                step_time_s=float(self.oracle.step_time_s[i]),
            )
            for i in self.measured
        )
        return Profile(workload=self.workload_record(), steps=steps, evals=self.evidence.evals, noise=self.evidence.noise)

    @property
    def visible(self) -> tuple[int, ...]:
        return self.evidence.curves

    def workload_record(self) -> WorkloadRecord:
        w = self.workload
        return WorkloadRecord(name=w.name, dataset_size=w.dataset_size, metric=w.metric, goal=w.goal, source=w.source)  # type: ignore[arg-type]


def curve_run_index(candidates: Candidates, price_per_hour: np.ndarray, global_batch: int) -> int | None:
    """The candidate a curve at ``global_batch`` was recorded on: the recipe's own
    configuration, chosen without any measurement — the fewest workers among the packed
    candidates of exactly that batch, then the lowest price per worker-hour, then the GPU
    type's name (None when the space has none). The cheapest per epoch would be chosen by
    the true step times: a previous run did not know them."""
    idx = np.flatnonzero(candidates.global_batch == int(global_batch))
    if idx.size == 0:
        return None
    key = [recipe_order(candidates.workers[i], price_per_hour[i], candidates.gpus[int(candidates.gpu[i])]) for i in idx]
    return int(idx[min(range(len(idx)), key=key.__getitem__)])


def visible_evals(workload: Workload, visible: tuple[int, ...]) -> tuple[EvalRecord, ...]:
    """Eval records of the given curves, with gradient statistics at the reference batch."""
    return evals_of(workload, visible)
