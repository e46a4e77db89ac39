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

from benchmarks.replay import Oracle, ReplayLauncher, build_candidates
from benchmarks.settings import Evidence, visible_batches
from benchmarks.traces import Workload
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

    def evidence(self, setting: str = "free-curves") -> Evidence:
        """What ``setting`` hands the planner for this workload (cached per workload)."""
        key = (self.workload.name, setting)
        if key not in _EVIDENCE:
            from benchmarks._registry import SETTINGS, load

            load()
            if setting not in SETTINGS:
                raise ValueError(f"unknown setting {setting!r}: use one of {', '.join(SETTINGS)}")
            _EVIDENCE[key] = SETTINGS[setting].evidence(self.workload)
        return _EVIDENCE[key]

    def launcher(self, evidence: Evidence | str = "free-curves") -> ReplayLauncher:
        """A fresh launcher: nothing probed, nothing spent; the planner sees ``evidence``."""
        ev = self.evidence(evidence) if isinstance(evidence, str) else evidence
        return ReplayLauncher(workload=self.workload, oracle=self.oracle, evidence=ev)


_EVIDENCE: dict[tuple[str, str], Evidence] = {}


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
    """Every registered trace (Pollux models on T4, ResNet-18/50 on K80/P100/V100), or the named ones."""
    from benchmarks._registry import TRACES, load

    load()
    unknown = sorted(set(names or ()) - set(TRACES))
    if unknown:
        raise ValueError(f"unknown workload {', '.join(unknown)}: registered traces are {', '.join(TRACES)}")
    return [spec.load() for name, spec in TRACES.items() if names is None or name in names]


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
