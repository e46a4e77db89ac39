"""Scenarios: a workload, a target and a deadline, from loose to tight.

Targets come from the measured curves, in the metric's own direction (``goal``):

* ``loose`` — 90 % of the way from the typical first evaluation to the weakest final
  metric over all measured batches (every batch reaches it early);
* ``all`` — the weakest final metric (every batch reaches it, the weakest at its end);
* ``tight`` — the median final metric (the larger batches cannot reach it: the
  regime where batch size and resources interact most).

Deadlines are multiples of the fastest true time to that target over the space
(the oracle's): none, 3× and 1.5×.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from benchmarks.replay import Oracle, ReplayLauncher, build_candidates, visible_batches
from benchmarks.traces import POLLUX_MODELS, Workload, load_hetero, load_pollux
from cotune.solver import Candidates

__all__ = ["Scenario", "targets_for", "workloads", "scenarios", "DEADLINE_FACTORS", "TARGET_LABELS"]

DEADLINE_FACTORS: tuple[float | None, ...] = (None, 3.0, 1.5)
TARGET_LABELS = ("loose", "all", "tight")


@dataclass(frozen=True)
class Scenario:
    workload: Workload
    candidates: Candidates
    oracle: Oracle
    visible: tuple[int, ...]
    target: float
    target_label: str
    deadline_s: float | None
    deadline_label: str
    batch_only_gpu: str
    batch_only_workers: int

    @property
    def key(self) -> str:
        return f"{self.workload.name}/{self.target_label}/{self.deadline_label}"

    def launcher(self) -> ReplayLauncher:
        """A fresh launcher: nothing probed, nothing spent."""
        return ReplayLauncher(workload=self.workload, oracle=self.oracle, visible=self.visible)


def targets_for(workload: Workload) -> dict[str, float]:
    """The three targets of a workload (raw metric values)."""
    firsts, finals = [], []
    for b in workload.batches:
        s = workload.score(workload.curves[b].metric)
        s = s[np.isfinite(s)]
        firsts.append(float(s[0]))
        finals.append(float(np.max(s)))
    start, weakest = float(np.median(firsts)), float(np.min(finals))
    scores = {"loose": start + 0.9 * (weakest - start), "all": weakest, "tight": float(np.median(finals))}
    return {k: float(workload.score(v)) for k, v in scores.items()}


def workloads(*, names: tuple[str, ...] | None = None) -> list[Workload]:
    """Every Pollux model on T4 (1–64 workers), and ResNet-18/50 on K80/P100/V100."""
    out = [load_pollux(m) for m in POLLUX_MODELS] + [load_hetero(m) for m in ("cifar10", "imagenet")]
    if names is not None:
        out = [w for w in out if w.name in names]
    return out


def scenarios(
    ws: list[Workload],
    *,
    target_labels: tuple[str, ...] = TARGET_LABELS,
    deadline_factors: tuple[float | None, ...] = DEADLINE_FACTORS,
) -> Iterator[Scenario]:
    for w in ws:
        cands = build_candidates(w)
        oracle = Oracle(w, cands)
        visible = visible_batches(w)
        gpu = "v100" if "v100" in w.gpus else w.gpus[0]
        targets = targets_for(w)
        for label in target_labels:
            target = targets[label]
            fastest = oracle.fastest_time_s(target)
            for factor in deadline_factors:
                yield Scenario(
                    workload=w,
                    candidates=cands,
                    oracle=oracle,
                    visible=visible,
                    target=target,
                    target_label=label,
                    deadline_s=None if factor is None else factor * fastest,
                    deadline_label="none" if factor is None else f"{factor:g}x_fastest",
                    batch_only_gpu=gpu,
                    batch_only_workers=4,
                )
