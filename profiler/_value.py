"""The value plan: probe what the question needs, stop when no probe is worth its price.

``cotune profile --plan value --target T [--deadline D] [--price GPU=USD] [--confidence Q]``
asks cotune's own question after every probe, with the profile as it stands, and runs
the measurement :func:`cotune.solver.next_measurement` names — a step-time probe of an
unprobed configuration or a short run (a learning curve) at an unmeasured global batch —
for as long as its expected saving beats its price (docs/models.md § 6: the value of
information). The loop:

1. **seed** — what a fit needs, cheapest first: the smallest and the largest local batch
   on one worker (a largest batch that runs out of memory is halved until one fits), the
   middle one on ``max_workers`` workers (the synchronisation cost), and one learning
   curve at the middle global batch unless the profile already holds one (a previous
   run's, from ``cotune import``);
2. **ask** — fit the profile, answer the question on this machine's GPU type and worker
   counts (``1 … max_workers`` on one host, every local batch of the ladder below the
   memory limit), read ``next_measurement``;
3. **buy or stop** — run it when ``buy`` (expected gain > price), else stop and say why.
   A measurement already tried (it ran out of memory, or did not fit the ``--budget``)
   also stops the plan: asking again would name it again.

The plan yields :class:`PlanNote` lines besides points: why it stopped, shown by the
session, never printed here. Every fit and answer is cotune's public door
(:class:`cotune.RecommendRequest`, :func:`cotune.recommend`): the same question a user
would ask after profiling, asked at every step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from cotune.errors import CotuneError, InputError
from profiler._plan import CurvePoint, TimingPoint, geometric_batches
from profiler._state import ProfileState

__all__ = ["PlanNote", "ValuePlan", "DEFAULT_MAX_MEASUREMENTS"]

# Measurements bought after the seed, at most: the value of information normally stops
# the plan long before (each probe narrows what the next could reveal).
DEFAULT_MAX_MEASUREMENTS = 24
# The question fields the plan passes through (the rest are set from the machine).
QUESTION_FIELDS = ("target", "deadline_s", "prices", "objective", "budget", "confidence")


@dataclass(frozen=True)
class PlanNote:
    """Not a probe: a line the session shows (why the plan stopped)."""

    text: str


@dataclass(frozen=True)
class ValuePlan:
    """The value-of-information plan described in the module docstring.

    ``question`` holds :class:`cotune.RecommendRequest` fields (``target`` required;
    ``deadline_s``, ``prices``, ``objective``, ``budget``, ``confidence``), ``max_workers``
    the workers of this host the answer may use.
    """

    question: Mapping[str, Any]
    max_workers: int
    min_batch: int = 8
    max_batch: int = 1024
    seed: int = 0
    with_curves: bool = True
    max_measurements: int = DEFAULT_MAX_MEASUREMENTS

    def __post_init__(self) -> None:
        if not isinstance(self.question, Mapping):
            raise InputError(f"the value plan's question must be a mapping of request fields such as "
                             f"{{'target': 0.9}}, got {type(self.question).__name__}")
        unknown = sorted(set(self.question) - set(QUESTION_FIELDS))
        if unknown:
            raise InputError(f"the value plan's question has no field {unknown[0]!r}: use {', '.join(QUESTION_FIELDS)}")
        if self.question.get("target") is None:
            raise InputError("--plan value needs the question's --target: the metric the job must reach")
        if self.max_workers < 1 or self.min_batch < 1 or self.max_batch < self.min_batch:
            raise InputError(f"the value plan needs 1 <= max_workers and 1 <= min_batch <= max_batch, got "
                             f"{self.max_workers}, {self.min_batch}, {self.max_batch}")

    # ------------------------------------------------------------------ the question

    def request(self, state: ProfileState, *, gpu: str) -> Any:
        """The question asked of the profile as it stands (a :class:`cotune.RecommendRequest`)."""
        from cotune import Profile, RecommendRequest

        if state.workload is None:
            raise InputError("the profile has no workload record yet")
        profile = Profile(
            workload=state.workload,
            steps=tuple(state.steps.values()),
            failures=tuple(state.failures.values()),
            evals=tuple(e for runs in state.evals.values() for e in runs),
            noise=tuple(state.noise),
        )
        return RecommendRequest(
            profile=profile, gpus=(gpu,), max_workers=self.max_workers, gpus_per_host=self.max_workers,
            local_batches=tuple(self._ladder(state, gpu)), **dict(self.question),
        )

    def check(self, *, gpu: str, hosts: int) -> None:
        """Refuse, before any probe runs, a question this machine cannot measure."""
        if hosts != 1:
            raise InputError(f"--plan value probes one host, got --nnodes {hosts}: drop --nnodes, or use the "
                             "automatic plan for several hosts")
        prices = self.question.get("prices") or {}
        other = sorted(k for k in prices if str(k).split(":")[0] != gpu)
        if other:
            raise InputError(f"--price {other[0]}: this machine probes {gpu!r}; price it instead "
                             f"(--price {gpu}=USD_PER_HOUR), or leave --price out to count worker-hours")
        from cotune import Profile, RecommendRequest
        from cotune.profile import WorkloadRecord

        # Every question field is checked here, by the request's own rules, not after the seed was paid.
        RecommendRequest(profile=Profile(workload=WorkloadRecord(name="check", dataset_size=1)), gpus=(gpu,),
                         max_workers=self.max_workers, gpus_per_host=self.max_workers, **dict(self.question))

    # ------------------------------------------------------------------ points

    def _ladder(self, state: ProfileState, gpu: str) -> list[int]:
        bound = state.oom_bound(gpu)
        ladder = [b for b in geometric_batches(self.min_batch, self.max_batch) if bound is None or b < bound]
        return ladder or [self.min_batch]

    def _seed(self, state: ProfileState, gpu: str, tried: set[Any]) -> Iterator[TimingPoint]:
        def fresh(point: TimingPoint) -> bool:  # a point the session skipped (budget) is not asked twice
            new = point not in tried
            tried.add(point)
            return new

        ladder = self._ladder(state, gpu)
        if fresh(first := TimingPoint(workers=1, local_batch=ladder[0])):
            yield first
        # The largest batch that fits: the next one down the ladder past each out-of-memory.
        while True:
            ladder = self._ladder(state, gpu)
            top = TimingPoint(workers=1, local_batch=ladder[-1])
            # Measured (or failed otherwise), or skipped by the session: the ladder stays, so stop.
            if len(ladder) == 1 or state.timing_done((gpu, 1, 1, top.local_batch)) or not fresh(top):
                break
            yield top
        if self.max_workers > 1:
            ladder = self._ladder(state, gpu)
            if fresh(wide := TimingPoint(workers=self.max_workers, local_batch=ladder[len(ladder) // 2])):
                yield wide

    def points(self, state: ProfileState, *, gpu: str, hosts: int) -> Iterator[TimingPoint | CurvePoint | PlanNote]:
        from cotune import recommend

        self.check(gpu=gpu, hosts=hosts)
        tried: set[Any] = set()
        yield from self._seed(state, gpu, tried)
        if not state.evals:
            if not self.with_curves:
                yield PlanNote("value plan: stopped after the seed probes: the profile has no learning curve and "
                               "this run trains none (--no-curves, or a workload without eval_data); import a "
                               "previous run's curve (cotune import), or let the run train one, then run the same "
                               "command again")
                return
            ladder = self._ladder(state, gpu)
            middle = ladder[len(ladder) // 2]
            tried.add(curve := CurvePoint(global_batch=middle, seed=self.seed, workers=1))
            yield curve
        for _ in range(self.max_measurements):
            try:
                nm = recommend(self.request(state, gpu=gpu)).next_measurement
            except CotuneError as exc:
                yield PlanNote(f"value plan: stopped: {exc}")
                return
            if nm is None:
                yield PlanNote("value plan: done: every configuration of the question is measured")
                return
            if not nm.buy:
                yield PlanNote(f"value plan: done: {nm.reason}")
                return
            point = self.point_of(nm)
            if point in tried:
                yield PlanNote(f"value plan: stopped: the next measurement, {point.label}, was tried and gave "
                               "nothing new (out of memory, a failure, or over --budget)")
                return
            tried.add(point)
            yield point
        yield PlanNote(f"value plan: stopped after {self.max_measurements} measurements (its limit); run the "
                       "same command again to ask for more")

    def point_of(self, nm: Any) -> TimingPoint | CurvePoint:
        """The probe that makes a :class:`cotune.solver.NextMeasurement`: a timing point, or a
        short run that trains for the epochs it was priced at (the upper end of its epochs
        interval), when the session's ``--max-epochs`` allows as many."""
        if nm.kind == "step":
            return TimingPoint(workers=nm.workers, local_batch=nm.local_batch)
        epochs = None if nm.epochs is None or not math.isfinite(nm.epochs) else max(1, math.ceil(nm.epochs))
        return CurvePoint(global_batch=nm.global_batch, seed=self.seed, workers=nm.workers, max_epochs=epochs)

    def size_hint(self) -> int:
        return 3 + int(self.with_curves)

