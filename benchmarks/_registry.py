"""One registry for the benchmark's moving parts: traces, settings and policies.

A new trace, setting or policy is one decorated function, nothing else:

* ``@trace("cifar10-t4", family="pollux-t4")`` on a loader ``() -> Workload``;
* ``@setting("one-curve", ...)`` on an evidence builder ``(Workload) -> Evidence``
  (what the planner sees besides its own paid probes);
* ``@policy("cotune", ...)`` on a planner ``(Scenario, Evidence, budgets) -> list[Plan]``
  (open-loop settings) or, with ``closed_loop=True``, on a runner
  ``(Scenario, Evidence, budget) -> ClosedLoopRun``;
* ``@prior_set("held-out", ...)`` on ``(workloads, *, jobs) -> {workload name: Priors or None}``: the
  priors each workload's scenarios are planned with (``python -m benchmarks --priors``;
  None: the shipped constants; :mod:`benchmarks.priors`).

The registering modules are imported by :func:`load`, so ``POLICIES`` etc. are complete
after one call; nothing else in the benchmark keeps a list of names.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

__all__ = [
    "TraceSpec",
    "SettingSpec",
    "PolicySpec",
    "PriorSetSpec",
    "TRACES",
    "SETTINGS",
    "POLICIES",
    "PRIOR_SETS",
    "trace",
    "setting",
    "policy",
    "prior_set",
    "load",
    "policies_for",
]


@dataclass(frozen=True)
class TraceSpec:
    """A replayable workload: its loader and the family it belongs to."""

    name: str
    family: str
    load: Callable[[], Any]
    description: str = ""


@dataclass(frozen=True)
class SettingSpec:
    """What a planner is given besides its paid step-time probes.

    ``evidence`` builds the curves and gradient statistics from the workload;
    ``closed_loop`` settings run the chosen plan against the truth and let a controller
    act at checkpoints; ``upper_bound`` marks a setting with more information than a
    user has (reported, but labelled so).
    """

    name: str
    evidence: Callable[[Any], Any]
    description: str
    closed_loop: bool = False
    upper_bound: bool = False
    order: int = 0  # reports list settings by this (the headline first)
    # Run only where ``--settings`` names it (a diagnostic input, not part of the default replay).
    opt_in: bool = False


@dataclass(frozen=True)
class PolicySpec:
    """A planning policy.

    ``family`` groups variants of one planner (``cotune``, ``cotune_q50`` and
    ``cotune_q90`` are the ``cotune`` family); ``confidence`` is the probability at
    which a variant plans its deadline (None: the mean prediction). ``settings`` lists
    where it runs (None: every open-loop setting); ``requires`` names importable
    modules it needs (it is skipped where they are missing); ``intervals`` says the
    policy's models report calibrated intervals worth checking for coverage;
    ``probabilities`` is False where the policy's models make no probability claim (Pollux's
    peer models have zero-width intervals, so their "P(success)" is 1 or 0 by construction):
    its summary rows then show no promised probability;
    ``optional`` policies run only when named (``python -m benchmarks --policies``).
    """

    name: str
    run: Callable[..., Any]
    family: str
    confidence: float | None = None
    settings: tuple[str, ...] | None = None
    closed_loop: bool = False
    requires: tuple[str, ...] = ()
    intervals: bool = False
    probabilities: bool = True
    optional: bool = False  # runs only when asked for by name (too slow for the default runs)
    description: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def available(self) -> bool:
        return all(importlib.util.find_spec(m) is not None for m in self.requires)

    def runs_in(self, setting_name: str) -> bool:
        spec = SETTINGS[setting_name]
        if self.closed_loop != spec.closed_loop:
            return False
        return self.settings is None or setting_name in self.settings


@dataclass(frozen=True)
class PriorSetSpec:
    """Where the priors of a run come from: ``table(workloads, jobs=n)`` maps each workload's
    name to the :class:`benchmarks.priors.Priors` its scenarios are planned with (None: the
    shipped constants), computed once per run on up to ``n`` processes."""

    name: str
    table: Callable[[Any], Mapping[str, Any]]
    description: str


TRACES: dict[str, TraceSpec] = {}
SETTINGS: dict[str, SettingSpec] = {}
POLICIES: dict[str, PolicySpec] = {}
PRIOR_SETS: dict[str, PriorSetSpec] = {}


def _unique(table: Mapping[str, Any], name: str, kind: str) -> None:
    if name in table:
        raise ValueError(f"{kind} {name!r} is registered twice: give the new one another name")


def trace(name: str, *, family: str, description: str = "") -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    def register(fn: Callable[[], Any]) -> Callable[[], Any]:
        _unique(TRACES, name, "trace")
        TRACES[name] = TraceSpec(name=name, family=family, load=fn, description=description or (fn.__doc__ or "").strip())
        return fn

    return register


def setting(
    name: str, *, description: str, closed_loop: bool = False, upper_bound: bool = False, order: int = 0,
    opt_in: bool = False,
) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    def register(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        _unique(SETTINGS, name, "setting")
        SETTINGS[name] = SettingSpec(
            name=name, evidence=fn, description=description, closed_loop=closed_loop, upper_bound=upper_bound, order=order,
            opt_in=opt_in,
        )
        return fn

    return register


def policy(
    name: str,
    *,
    family: str | None = None,
    confidence: float | None = None,
    settings: tuple[str, ...] | None = None,
    closed_loop: bool = False,
    requires: tuple[str, ...] = (),
    intervals: bool = False,
    probabilities: bool = True,
    optional: bool = False,
    description: str = "",
    **extra: Any,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        _unique(POLICIES, name, "policy")
        POLICIES[name] = PolicySpec(
            name=name,
            run=fn,
            family=family or name,
            confidence=confidence,
            settings=settings,
            closed_loop=closed_loop,
            requires=requires,
            intervals=intervals,
            probabilities=probabilities,
            optional=optional,
            description=description or (fn.__doc__ or "").strip().split("\n")[0],
            extra=dict(extra),
        )
        return fn

    return register


def prior_set(name: str, *, description: str) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    def register(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        _unique(PRIOR_SETS, name, "prior set")
        PRIOR_SETS[name] = PriorSetSpec(name=name, table=fn, description=description)
        return fn

    return register


# Modules whose import registers entries (traces, settings, policies, prior sets).
_REGISTERING = ("benchmarks.traces", "benchmarks.settings", "benchmarks.policies", "benchmarks.voi", "benchmarks.closed_loop",
               "benchmarks.closed_loop_spot", "benchmarks.priors")


def load() -> None:
    """Import every registering module (idempotent)."""
    for module in _REGISTERING:
        importlib.import_module(module)


def policies_for(setting_name: str, *, include_optional: bool = False) -> tuple[str, ...]:
    """Registered policies that run in ``setting_name`` and whose requirements are installed
    (optional ones only with ``include_optional``)."""
    load()
    return tuple(
        p.name
        for p in POLICIES.values()
        if p.runs_in(setting_name) and p.available() and (include_optional or not p.optional)
    )
