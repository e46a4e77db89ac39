"""Values the solver returns: frozen, plain, and serialisable with ``to_dict``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from cotune._lazy import annotation_module

# At run time, not under TYPE_CHECKING: typing.get_type_hints(Recommendation) (typeguard,
# pydantic, sphinx autodoc) resolves the fields' types from these names.
from cotune.solver._estimate import Estimates
from cotune.solver._plan import Plan
from cotune.solver._probes import NextMeasurement
from cotune.solver._solve import Feasibility
from cotune.units import format_chance

if TYPE_CHECKING:
    import pandas as pd
else:  # the *_frame methods' return type only: pandas is not imported to plan
    pd = annotation_module("pandas")

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
    # Probability that the target is reached at all, and that it is reached by the deadline and
    # within the budget (where the question gives them; a budget is a deadline of its own).
    p_reach: float | None = None
    p_success: float | None = None
    # Gradient-accumulation steps the local batch runs as (its probes' own): each worker
    # holds local_batch / accum_steps samples at once, and a launch at the whole local batch
    # runs out of memory where the probes did not.
    accum_steps: int = 1

    @property
    def global_batch(self) -> int:
        return self.workers * self.local_batch

    @property
    def micro_batch(self) -> int:
        """Samples a worker holds at once: the local batch over the accumulation steps."""
        return self.local_batch // self.accum_steps

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
            "accum_steps": self.accum_steps,
        }


@dataclass(frozen=True)
class Recommendation:
    """The answer: the chosen candidate, runner-ups, the cost–time frontier, the paper's
    two independent baselines, and — when nothing is feasible — what to relax."""

    # Compared by value (==), never hashed: it holds mappings and tables, which have no hash.
    __hash__ = None  # type: ignore[assignment]

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
    # The cluster the plan was made for (its gpus, markets, prices and risk), when one was given.
    cluster: Mapping[str, Any] | None = None
    # Every evaluated candidate and its feasibility, for candidates_frame() and plot();
    # not serialised (to_dict stays the documented JSON), not compared.
    estimates: "Estimates | None" = field(default=None, compare=False, repr=False)
    feasibility: "Feasibility | None" = field(default=None, compare=False, repr=False)
    # The measurement worth most before the run, and whether it is worth its price
    # (cotune.solver.next_measurement); None without a profile or with nothing to measure.
    next_measurement: "NextMeasurement | None" = None
    # How the space was searched: "exhaustive", or "optuna-tpe" when it was over the candidate limit.
    search: str = "exhaustive"
    # The GPU types the search weighed (its space): a scheduler that renders the plan must
    # send its pods to the chosen one's nodes when there were several.
    gpus: tuple[str, ...] = ()

    @property
    def feasible(self) -> bool:
        return self.chosen is not None

    def __repr__(self) -> str:
        # The generated repr printed every field — about 12 kB for one answer in a REPL or a
        # notebook. The question and the answer instead; the fields are all attributes, and
        # to_dict() is the whole answer.
        goal = ">=" if self.goal == "max" else "<="
        limits = "".join([
            "" if self.deadline_s is None else f", deadline_s={self.deadline_s:g}",
            "" if self.budget is None else f", budget={self.budget:g}",
            "" if self.confidence is None else f", confidence={self.confidence:g}",
        ])
        c = self.chosen
        unit = "USD" if self.priced else "worker-hours"
        answer = ("no feasible configuration" if c is None else
                  f"chosen {c.workers} x {c.gpu} {c.market} on {c.hosts} host{'s' if c.hosts > 1 else ''}, local batch "
                  f"{c.local_batch}: {c.time_s:.4g} s, {c.cost:.4g} {unit}"
                  + ("" if c.p_success is None else f", P(success) {format_chance(c.p_success, digits=3)}"))
        return (f"Recommendation({self.workload!r}: {self.metric_name} {goal} {self.target:g}{limits}; {answer}; "
                f"{self.n_candidates:,} candidates, {self.n_feasible:,} feasible)")

    def savings(self) -> dict[str, float | None]:
        """Fraction of the objective saved against each baseline (None if not comparable)."""
        out: dict[str, float | None] = {}
        for name, base in self.baselines.items():
            if self.chosen is None or base is None:
                out[name] = None
                continue
            # The quantity the objective ranks by (objective time: the time promised at the confidence).
            mine, theirs = (
                (self.chosen.cost, base.cost) if self.objective == "cost"
                else (self.chosen.time_at_confidence_s, base.time_at_confidence_s)
            )
            out[name] = None if not (math.isfinite(theirs) and theirs > 0) else 1.0 - mine / theirs
        return out

    def candidates_frame(self) -> "pd.DataFrame":
        """Every evaluated candidate, one row each: configuration, predictions with their
        intervals, extrapolation flags, feasibility (reaches target, meets deadline,
        within budget, all three), cost, and whether it is the chosen one or on the
        frontier. Needs pandas."""
        import pandas as pd

        from cotune.solver._estimate import cost_at_confidence

        est, feas = self.estimates, self.feasibility
        if est is None or feas is None:
            raise ValueError("this Recommendation carries no estimates (built by hand or from JSON): "
                             "get one from cotune.recommend() to have candidates_frame()")
        c = est.candidates
        frame = pd.DataFrame({
            "gpu": pd.Categorical.from_codes(c.gpu, categories=list(c.gpus)),
            "market": pd.Categorical.from_codes(c.market, categories=list(c.markets)),
            "workers": c.workers, "hosts": c.hosts, "local_batch": c.local_batch, "global_batch": c.global_batch,
            "step_time_s": est.step_time_s, "epoch_time_s": est.epoch_time_s,
            "epochs": est.epochs, "epochs_lower": est.epochs_lower, "epochs_upper": est.epochs_upper,
            "time_s": est.time_s, "time_lower_s": est.time_lower_s, "time_upper_s": est.time_upper_s,
            "time_at_confidence_s": est.time_at_confidence_s, "cost_at_confidence": cost_at_confidence(est),
            "cost": est.cost, "cost_lower": est.cost_lower, "cost_upper": est.cost_upper,
            "price_per_hour": est.price_per_hour,
            "time_extrapolated": est.time_extrapolated, "epochs_extrapolated": est.epochs_extrapolated,
        })
        # Whatever else the estimator predicts per candidate (reach and success
        # probabilities, spreads), under its own field name.
        import dataclasses

        import numpy as np

        for f in dataclasses.fields(est):
            value = getattr(est, f.name)
            if f.name not in frame and isinstance(value, np.ndarray) and value.shape == (len(frame),):
                frame[f.name] = value
        frame["reaches_target"] = feas.reaches
        frame["meets_deadline"] = feas.meets_deadline
        frame["within_budget"] = feas.within_budget
        frame["feasible"] = feas.all
        key = ["gpu", "market", "workers", "hosts", "local_batch"]
        frame["chosen"] = False
        frame["frontier"] = False
        index = {tuple(row): i for i, row in enumerate(frame[key].astype(object).itertuples(index=False, name=None))}
        for flag, choices in (("chosen", [self.chosen] if self.chosen else []), ("frontier", self.pareto)):
            for ch in choices:
                i = index.get((ch.gpu, ch.market, ch.workers, ch.hosts, ch.local_batch))
                if i is not None:
                    frame.loc[i, flag] = True
        return frame

    def frontier_frame(self) -> "pd.DataFrame":
        """The cost–time frontier (target reached, deadline and budget ignored), fastest first."""
        return _choices_frame(self.pareto, chosen=self.chosen)

    def runner_ups_frame(self) -> "pd.DataFrame":
        """The chosen candidate and the runner-ups, best first."""
        return _choices_frame(((self.chosen,) if self.chosen else ()) + tuple(self.runner_ups), chosen=self.chosen)

    def plot(self, path: "str | None" = None, *, ax: Any = None) -> Any:
        """The cost–time frontier as a matplotlib figure (see cotune.plot.plot_recommendation).

        Writes a PNG when ``path`` is given; returns the Figure. Needs matplotlib
        (``pip install 'cotune[plot]'``)."""
        from cotune.plot import plot_recommendation

        return plot_recommendation(self, path=path, ax=ax)

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
            "gpus": list(self.gpus),
            "relax": list(self.relax),
            "nearest": [c.to_dict() for c in self.nearest],
            "notes": list(self.notes),
            "solve_time_s": self.solve_time_s,
            "plan": None if self.plan is None else self.plan.to_dict(),
            "spot": None if self.spot is None else dict(self.spot),
            "cluster": None if self.cluster is None else dict(self.cluster),
            "next_measurement": None if self.next_measurement is None else self.next_measurement.to_dict(),
        }


def _choices_frame(choices: Any, *, chosen: Choice | None) -> "pd.DataFrame":
    import pandas as pd

    rows = [
        {
            "gpu": ch.gpu, "market": ch.market, "workers": ch.workers, "hosts": ch.hosts, "local_batch": ch.local_batch,
            "global_batch": ch.global_batch, "step_time_s": ch.step_time_s, "epoch_time_s": ch.epoch_time_s,
            "epochs": ch.epochs, "epochs_lower": ch.epochs_interval[0], "epochs_upper": ch.epochs_interval[1],
            "time_s": ch.time_s, "time_lower_s": ch.time_interval_s[0], "time_upper_s": ch.time_interval_s[1],
            "time_at_confidence_s": ch.time_at_confidence_s, "cost": ch.cost, "cost_lower": ch.cost_interval[0],
            "cost_upper": ch.cost_interval[1], "price_per_hour": ch.price_per_hour, "metric": ch.metric,
            "extrapolated": ",".join(ch.extrapolated), "chosen": chosen is not None and ch == chosen,
        }
        for ch in choices
    ]
    columns = ["gpu", "market", "workers", "hosts", "local_batch", "global_batch", "step_time_s", "epoch_time_s", "epochs",
               "epochs_lower", "epochs_upper", "time_s", "time_lower_s", "time_upper_s", "time_at_confidence_s", "cost",
               "cost_lower", "cost_upper", "price_per_hour", "metric", "extrapolated", "chosen"]
    return pd.DataFrame(rows, columns=columns)
