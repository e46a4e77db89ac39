"""Replay launcher and exhaustive oracle over published measurements.

The launcher answers probe requests from a :class:`~benchmarks.traces.Workload`'s
measured tables and charges for them; a planner sees only what it probed (plus the
learning curves the scenario makes visible). The oracle sees every measurement and
computes the true time and cost of every candidate, hence the true optimum.

Ground truth, for candidate ``c = (gpu, n, h, b)`` with global batch ``B = n·b``::

    E*(B)     = first epoch where the best-so-far metric of the curve at B reaches the
                target (linear between evaluations); between measured batches
                log E* is linear in log B (Pollux's simulator interpolates likewise)
    time*(c)  = E*(B) × N / B × step_time*(gpu, n, h, b)
    cost*(c)  = n × price(gpu) × time*(c) / 3600

A candidate exists only where its step time was measured (with packed hosts,
``h = ⌈n / gpus_per_host⌉``) and ``B`` lies within the measured batches, so planner
and oracle share one space and every choice has a true cost.

A probe at ``c`` runs ``setup_s`` of start-up plus ``probe_steps`` steps on all ``n``
workers and costs ``n × price × (setup_s + probe_steps × step_time*) / 3600``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from benchmarks.settings import Evidence, evals_of, visible_batches
from benchmarks.traces import Curve, Workload
from cotune.profile import EvalRecord, Profile, StepRecord, WorkloadRecord
from cotune.solver import Candidates

__all__ = [
    "PROBE_SETUP_S",
    "PROBE_STEPS",
    "curve_epochs_to_target",
    "true_epochs",
    "build_candidates",
    "visible_batches",
    "Oracle",
    "OracleSolution",
    "ReplayLauncher",
]

PROBE_SETUP_S = 60.0  # container start, torchrun rendezvous, data loader and CUDA warm-up
PROBE_STEPS = 50  # 10 warm-up + 40 timed steps


def curve_epochs_to_target(curve: Curve, target: float, goal: str) -> float:
    """Epochs until the curve's best-so-far metric first reaches ``target`` (inf if never)."""
    sign = 1.0 if goal == "max" else -1.0
    score = np.where(np.isfinite(curve.metric), sign * curve.metric, -np.inf)
    best = np.maximum.accumulate(score)
    t = sign * target
    hit = np.flatnonzero(best >= t)
    if hit.size == 0:
        return float("inf")
    i = int(hit[0])
    if i == 0:
        return float(curve.epochs[0])
    e0, e1, s0, s1 = curve.epochs[i - 1], curve.epochs[i], best[i - 1], best[i]
    frac = 0.0 if s1 == s0 else (t - s0) / (s1 - s0)
    return float(e0 + frac * (e1 - e0))


def _interp_log(q: np.ndarray, batches: np.ndarray, epochs: np.ndarray) -> np.ndarray:
    """log-log interpolation of epochs between measured batches; inf if a neighbour is unreached."""
    q = np.asarray(q, float)
    out = np.full(q.shape, np.nan)
    inside = (q >= batches[0]) & (q <= batches[-1])
    if not np.any(inside):
        return out
    qi = q[inside]
    idx = np.clip(np.searchsorted(batches, qi), 1, len(batches) - 1)
    lo, hi = idx - 1, idx
    exact_lo, exact_hi = qi == batches[lo], qi == batches[hi]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = (np.log(qi) - np.log(batches[lo])) / (np.log(batches[hi]) - np.log(batches[lo]))
        val = np.exp(np.log(epochs[lo]) + frac * (np.log(epochs[hi]) - np.log(epochs[lo])))
    val = np.where(np.isfinite(epochs[lo]) & np.isfinite(epochs[hi]), val, np.inf)
    val = np.where(exact_lo, epochs[lo], np.where(exact_hi, epochs[hi], val))
    out[inside] = val
    return out


def true_epochs(workload: Workload, global_batch: np.ndarray, target: float) -> np.ndarray:
    """E*(B): true epochs to target (inf: unreached; NaN: B outside the measured batches)."""
    batches = np.array(workload.batches, float)
    measured = np.array([curve_epochs_to_target(workload.curves[b], target, workload.goal) for b in workload.batches])
    return _interp_log(np.asarray(global_batch, float), batches, measured)


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
    probed: list[int] = field(default_factory=list)
    probe_cost: float = 0.0
    probe_time_s: float = 0.0

    def probe(self, index: int) -> float:
        """Run (replay) a probe at candidate ``index``; returns its measured step time.

        A configuration already probed is answered from the log at no charge.
        """
        step = float(self.oracle.step_time_s[index])
        if index in self.probed:
            return step
        duration = self.setup_s + self.probe_steps * step
        self.probe_cost += float(self.oracle.candidates.workers[index] * self.oracle.price_per_hour[index] * duration / 3600)
        self.probe_time_s += duration
        self.probed.append(int(index))
        return step

    def profile(self) -> Profile:
        """What the planner knows: probed step times and the setting's curves and noise records."""
        c = self.oracle.candidates
        steps = tuple(
            StepRecord(
                gpu=c.gpus[int(c.gpu[i])],
                workers=int(c.workers[i]),
                hosts=int(c.hosts[i]),
                local_batch=int(c.local_batch[i]),
                step_time_s=float(self.oracle.step_time_s[i]),
            )
            for i in self.probed
        )
        return Profile(workload=self.workload_record(), steps=steps, evals=self.evidence.evals, noise=self.evidence.noise)

    @property
    def visible(self) -> tuple[int, ...]:
        return self.evidence.curves

    def workload_record(self) -> WorkloadRecord:
        w = self.workload
        return WorkloadRecord(name=w.name, dataset_size=w.dataset_size, metric=w.metric, goal=w.goal, source=w.source)  # type: ignore[arg-type]


def visible_evals(workload: Workload, visible: tuple[int, ...]) -> tuple[EvalRecord, ...]:
    """Eval records of the given curves, with gradient statistics at the reference batch."""
    return evals_of(workload, visible)
