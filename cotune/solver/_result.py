"""Values the solver returns: frozen, plain, and serialisable with ``to_dict``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from cotune.solver._plan import Plan

__all__ = ["Choice", "Recommendation", "RESULT_SCHEMA_VERSION"]

RESULT_SCHEMA_VERSION = 1


def _num(x: float) -> float | None:
    """JSON has no infinity: unreachable values serialise as null."""
    return None if x is None or not math.isfinite(x) else float(x)


@dataclass(frozen=True)
class Choice:
    """One estimated candidate: the configuration and what it is predicted to do."""

    gpu: str
    market: str
    workers: int
    hosts: int
    local_batch: int
    step_time_s: float
    epoch_time_s: float
    epochs: float
    epochs_interval: tuple[float, float]
    time_s: float
    time_interval_s: tuple[float, float]
    time_at_confidence_s: float
    cost: float
    cost_interval: tuple[float, float]
    price_per_hour: float
    metric: float
    extrapolated: tuple[str, ...] = ()
    # Probability that the target is reached at all, and that it is reached by the deadline.
    p_reach: float | None = None
    p_success: float | None = None

    @property
    def global_batch(self) -> int:
        return self.workers * self.local_batch

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "market": self.market,
            "workers": self.workers,
            "hosts": self.hosts,
            "local_batch": self.local_batch,
            "global_batch": self.global_batch,
            "step_time_s": _num(self.step_time_s),
            "epoch_time_s": _num(self.epoch_time_s),
            "epochs": _num(self.epochs),
            "epochs_interval": [_num(v) for v in self.epochs_interval],
            "time_s": _num(self.time_s),
            "time_interval_s": [_num(v) for v in self.time_interval_s],
            "time_at_confidence_s": _num(self.time_at_confidence_s),
            "cost": _num(self.cost),
            "cost_interval": [_num(v) for v in self.cost_interval],
            "price_per_hour": _num(self.price_per_hour),
            "metric": _num(self.metric),
            "extrapolated": list(self.extrapolated),
            "p_reach": _num(self.p_reach) if self.p_reach is not None else None,
            "p_success": _num(self.p_success) if self.p_success is not None else None,
        }


@dataclass(frozen=True)
class Recommendation:
    """The answer: the chosen candidate, runner-ups, the cost–time frontier, the paper's
    two independent baselines, and — when nothing is feasible — what to relax."""

    workload: str
    metric_name: str
    goal: str
    objective: str
    target: float
    deadline_s: float | None
    budget: float | None
    confidence: float | None
    priced: bool
    chosen: Choice | None
    runner_ups: tuple[Choice, ...]
    pareto: tuple[Choice, ...]
    baselines: Mapping[str, Choice | None]
    baseline_settings: Mapping[str, Mapping[str, Any]]
    n_candidates: int
    n_feasible: int
    relax: tuple[str, ...] = ()
    nearest: tuple[Choice, ...] = ()
    notes: tuple[str, ...] = ()
    interval: float = 0.9
    solve_time_s: float = field(default=0.0, compare=False)
    # Placement and elastic range of the chosen candidate (None when nothing is feasible).
    plan: "Plan | None" = None
    # Revocation details of the chosen candidate on spot/mixed servers (cotune.spot), else None.
    spot: Mapping[str, Any] | None = None

    @property
    def feasible(self) -> bool:
        return self.chosen is not None

    def savings(self) -> dict[str, float | None]:
        """Fraction of the objective saved against each baseline (None if not comparable)."""
        out: dict[str, float | None] = {}
        for name, base in self.baselines.items():
            if self.chosen is None or base is None:
                out[name] = None
                continue
            mine, theirs = (
                (self.chosen.cost, base.cost) if self.objective == "cost" else (self.chosen.time_s, base.time_s)
            )
            out[name] = None if not (math.isfinite(theirs) and theirs > 0) else 1.0 - mine / theirs
        return out

    def to_dict(self) -> dict[str, Any]:
        from cotune import __version__

        return {
            "schema_version": RESULT_SCHEMA_VERSION,
            "cotune_version": __version__,
            "status": "ok" if self.feasible else "infeasible",
            "workload": self.workload,
            "metric": self.metric_name,
            "goal": self.goal,
            "objective": self.objective,
            "constraints": {
                "target": self.target,
                "deadline_s": self.deadline_s,
                "budget": self.budget,
                "confidence": self.confidence,
            },
            "cost_unit": "USD" if self.priced else "worker_hours",
            "interval": self.interval,
            "recommendation": None if self.chosen is None else self.chosen.to_dict(),
            "runner_ups": [c.to_dict() for c in self.runner_ups],
            "pareto": [c.to_dict() for c in self.pareto],
            "baselines": {
                name: {
                    "settings": dict(self.baseline_settings.get(name, {})),
                    "choice": None if c is None else c.to_dict(),
                    "saving": self.savings().get(name),
                }
                for name, c in self.baselines.items()
            },
            "n_candidates": self.n_candidates,
            "n_feasible": self.n_feasible,
            "relax": list(self.relax),
            "nearest": [c.to_dict() for c in self.nearest],
            "notes": list(self.notes),
            "solve_time_s": self.solve_time_s,
            "plan": None if self.plan is None else self.plan.to_dict(),
            "spot": None if self.spot is None else dict(self.spot),
        }
