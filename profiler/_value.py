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
   A measurement already tried (it ran out of memory, or did not fit the ``--probe-budget``)
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
from profiler._plan import CurvePoint, TimingGroup, TimingPoint, data_cap, geometric_batches
from profiler._state import ProfileState

__all__ = ["PlanNote", "ValuePlan", "DEFAULT_MAX_MEASUREMENTS"]

# Measurements bought after the seed, at most: the value of information normally stops
# the plan long before (each probe narrows what the next could reveal).
DEFAULT_MAX_MEASUREMENTS = 24
# The question fields the plan passes through (the rest are set from the machine).
QUESTION_FIELDS = ("target", "deadline_s", "prices", "objective", "budget", "confidence")


@dataclass(frozen=True)
class PlanNote:
    """Not a probe: a line the session shows — why the plan stopped (``final``), or what a
    measurement it bought did to the plan (the ledger, shown as it happens)."""

    text: str
    final: bool = True


def _config(c: Any) -> str:
    return f"{c.workers} × {c.gpu} at local batch {c.local_batch}"


def ledger_line(label: str, nm: Any, before: Any, after: Any) -> str:
    """What one bought measurement did, by the models refitted on it: ``nm`` the
    :class:`cotune.solver.NextMeasurement` that bought it, ``before``/``after`` the
    :class:`cotune.Recommendation` that chose it and the one after.

    The realised saving is the objective's drop from the plan before (re-estimated by the
    refitted models) to the plan after — the same models' reckoning, not the truth, which
    only the run shows. Its sum over a session against the expected savings says how far the
    planner's promises ran ahead of what its own measurements then showed.
    """
    from cotune.units import format_duration, format_money

    cost = after.objective == "cost"
    fmt = (lambda v: format_money(v, priced=after.priced)) if cost else format_duration  # noqa: E731
    head = f"value plan: bought {label}: expected saving {format_money(nm.expected_gain, priced=after.priced)}"
    old, new = before.chosen, after.chosen
    if new is None:
        if old is not None:
            return head + "; the refitted models find no plan that meets the question now"
        chances = [max((c.p_success for c in r.nearest if c.p_success is not None), default=None) for r in (before, after)]
        moved = "" if None in chances else f" (best chance {chances[0]:.2f} -> {chances[1]:.2f})"
        return head + f"; still no plan meets the question{moved}"
    if old is None:
        return head + f"; the refitted models find a plan: {_config(new)} ({fmt(new.cost if cost else new.time_s)})"
    value = (lambda c: c.cost) if cost else (lambda c: c.time_s)  # noqa: E731
    same = (old.gpu, old.market, old.workers, old.hosts, old.local_batch) == (new.gpu, new.market, new.workers, new.hosts,
                                                                               new.local_batch)
    if same:
        return head + f"; the plan stays {_config(new)} (now {fmt(value(new))}, was {fmt(value(old))}): realised saving 0"
    frame = after.candidates_frame()
    row = frame[(frame.gpu == old.gpu) & (frame.market == old.market) & (frame.workers == old.workers)
                & (frame.hosts == old.hosts) & (frame.local_batch == old.local_batch)]
    if row.empty:
        return head + f"; the plan moves from {_config(old)} to {_config(new)}"
    r = row.iloc[0]
    if not bool(r["feasible"]):
        chance = r["p_success"]
        said = "" if chance is None or chance != chance else f", P(success) {float(chance):.2f}"
        return head + (f"; the plan moves from {_config(old)}, which the refitted models say no longer meets the "
                       f"question{said}, to {_config(new)}: a miss avoided")
    old_now = float(r["cost"] if cost else r["time_s"])
    return head + (f"; the plan moves from {_config(old)} ({fmt(old_now)} now) to {_config(new)} ({fmt(value(new))}): "
                   f"realised saving {fmt(max(old_now - value(new), 0.0))} by the refitted models")


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
            evals=state.all_evals(),
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
        ladder = [b for b in geometric_batches(self.min_batch, data_cap(state, self.max_batch))
                  if bound is None or b < bound]
        return ladder or [self.min_batch]

    def _seed(self, state: ProfileState, gpu: str, tried: set[Any]) -> Iterator[TimingPoint | TimingGroup]:
        def fresh(point: TimingPoint) -> bool:  # a point the session skipped (budget) is not asked twice
            new = point not in tried
            tried.add(point)
            return new

        ladder = self._ladder(state, gpu)
        # The smallest and the largest batch in one launch (one start-up for both).
        ends = [p for p in dict.fromkeys((TimingPoint(workers=1, local_batch=ladder[0]),
                                           TimingPoint(workers=1, local_batch=ladder[-1]))) if fresh(p)]
        if len(ends) > 1:
            yield TimingGroup(tuple(ends))
        elif ends:
            yield ends[0]
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

    def points(self, state: ProfileState, *, gpu: str, hosts: int) -> Iterator[TimingPoint | TimingGroup | CurvePoint | PlanNote]:
        from cotune import recommend

        self.check(gpu=gpu, hosts=hosts)
        tried: set[Any] = set()
        yield from self._seed(state, gpu, tried)
        if not state.all_evals():  # a tracked job's evaluations are a curve too
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
        bought = None  # (label, NextMeasurement, Recommendation) of the last measurement bought
        for _ in range(self.max_measurements):
            try:
                rec = recommend(self.request(state, gpu=gpu))
            except CotuneError as exc:
                yield PlanNote(f"value plan: stopped: {exc}")
                return
            if bought is not None:
                yield PlanNote(ledger_line(*bought, rec), final=False)
                bought = None
            nm = rec.next_measurement
            if nm is None:
                yield PlanNote("value plan: done: every configuration of the question is measured")
                return
            if not nm.buy:
                yield PlanNote(f"value plan: done: {nm.reason}")
                return
            point = self.point_of(nm)
            if point in tried:
                yield PlanNote(f"value plan: stopped: the next measurement, {point.label}, was tried and gave "
                               "nothing new (out of memory, a failure, or over --probe-budget)")
                return
            tried.add(point)
            bought = (point.label, nm, rec)
            yield point
        if bought is not None:
            try:
                yield PlanNote(ledger_line(*bought, recommend(self.request(state, gpu=gpu))), final=False)
            except CotuneError:
                pass  # the limit's note below still says why it stopped
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

