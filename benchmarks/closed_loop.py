"""Closed-loop replay: the chosen plan runs against the truth and a controller may act.

The ``closed-loop`` setting hands the planner what ``one-curve`` does (paid step-time
probes, one reference curve and its gradient statistics). The initial plan is then run
on the replay truth. Every ``CHECKPOINT_FRACTION`` of the planned training time the
controller sees the job's own progress — the true best-so-far curve at its batch so far
(evaluations every ``EVALS_PER_CHECKPOINT``-th of a checkpoint) and its true step time —
and answers an :class:`Action`: continue, switch to another candidate (workers, GPU
type and/or batch), or give up. Every switch pays a restart: ``RESTART_S`` seconds on
the new configuration's workers (checkpoint, start-up, rendezvous, data loader).

Truth at any global batch ``B`` extends the oracle's: the epochs ``E(B, m)`` to reach
a best-so-far level ``m`` follow the oracle's rule (:func:`benchmarks.replay.epochs_at`:
log-log between the measured neighbours where both reach ``m``; where one does, the
log-B blend of their curves), so the true curve at ``B`` is the inverse ``m(e)``, and the
run ends where the measured recipes end (``E_max``, log-log interpolated): a target not
reached by then is missed. A batch change hands the run over at the same level: at the
new batch it continues from the epoch ``E(B', m)`` at which that batch reaches the level
it had (the scale-invariant progress of AdaScale/Pollux, read off the metric) — but never
further into the new batch's recipe than the share of the old recipe already trained
(:func:`handover_share`): where ``B'`` reaches ``m`` only late in its schedule, after its
learning-rate decay, the level rule alone skipped most of that schedule for free, and one
switch beat the static optimum by half.

A controller is a callable ``(Progress) -> Action``; a policy is one ``@policy``
entry with ``closed_loop=True`` that makes the initial plan and the controller (see
:func:`_register_closed`). Costs: probes (before), training and restarts (during);
regret counts all three.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

import numpy as np

from benchmarks._registry import policy
from benchmarks.policies import Plan, run_policy, subset, _fit_time, _models, _probe_arrays
from benchmarks.replay import epochs_at, price_matrix, recipe_end_at
from benchmarks.scenarios import Scenario
from benchmarks.settings import Evidence, one_curve
from benchmarks.regret import Outcome
from benchmarks._registry import setting
from cotune._request import DEFAULT_RESTART_S
from cotune.models import FittedModels, fit_models
from cotune.models._shape import EPOCHS_ERROR_SHAPE, STEP_ERROR_SHAPE
from cotune.profile import EvalRecord, Profile, StepRecord
from cotune.solver import P_MARGIN, Candidates, count_returns, estimate, feasibility

if TYPE_CHECKING:
    from benchmarks.closed_loop_spot import SpotReplay

__all__ = [
    "RESTART_S",
    "CHECKPOINT_FRACTION",
    "Progress",
    "Action",
    "CONTINUE",
    "GIVE_UP",
    "Controller",
    "TrueRun",
    "handover_share",
    "ClosedLoopRun",
    "simulate",
    "RemainingWorkController",
]

RESTART_S = DEFAULT_RESTART_S  # save a checkpoint, start the new workers, rendezvous, reload, warm up (120 s)
CHECKPOINT_FRACTION = 0.1  # act every 10 % of the planned training time
EVALS_PER_CHECKPOINT = 2
MAX_CHECKPOINTS = 60  # after this many the controller is no longer asked (runs far over plan)
# Steps after every start at which the controller also looks (0: only every CHECKPOINT_FRACTION);
# the churn check sets it (python -m benchmarks.probe_tradeoff --first-steps 50).
FIRST_STEPS = 0
MAX_SEGMENTS = 100_000  # a spot run revoked faster than it checkpoints never ends: stop it there


# -- what a controller sees and says --------------------------------------------------------
@dataclass(frozen=True)
class Progress:
    """The running job as its controller sees it at a checkpoint (no truth beyond this)."""

    checkpoint: int
    index: int  # current candidate
    global_batch: int
    # The job's own count, as a tracker records it: epochs run since its start, across every
    # change of batch (the controller places them at its batch: cotune.solver.job_frame).
    # The truth's own hand-over epoch is not shown: no real job knows it.
    epochs_done: float
    level: float  # best metric so far (raw, the metric's own direction)
    elapsed_s: float  # wall-clock since the job started, restarts included
    spent: float  # USD on training and restarts so far
    evals: tuple[EvalRecord, ...]  # the job's own curve so far, every configuration it ran (epochs: its own count)
    steps: tuple[StepRecord, ...]  # the job's own measured step times, one per configuration run
    target: float
    deadline_s: float | None
    restart_s: float = RESTART_S
    # Where the job's learning-rate schedule ends at its batch (its configured epochs, known
    # to whoever launched it): a target not reached by then is missed.
    schedule_epochs: float = math.inf
    # The spot replay (benchmarks/closed_loop_spot.py): the running configuration's market, whether
    # this checkpoint is a revocation (the job has already lost its work since its last checkpoint
    # and waited for the replacement), and the revocations suffered so far.
    market: str = "on_demand"
    revoked: bool = False
    revocations: int = 0
    # The configuration the job started at (its plan; a tracker's first step record): what a
    # miss redoes (cotune.solver.miss_cost). -1: the current one.
    started_index: int = -1
    # Moves back to a configuration the job had left (cotune.solver.count_returns over the
    # configurations it ran, as `cotune replan` counts them from its step records).
    returns: int = 0


@dataclass(frozen=True)
class Action:
    """``continue``, ``switch`` (to candidate ``index``) or ``give_up``; ``reason`` for the log."""

    kind: str
    index: int | None = None
    reason: str = ""


CONTINUE = Action("continue")
GIVE_UP = Action("give_up")

Controller = Callable[[Progress], Action]


# -- the truth of one run ----------------------------------------------------------------------
class TrueRun:
    """True best-so-far curves at any candidate batch of a workload (see the module docstring)."""

    def __init__(self, scn: Scenario) -> None:
        self.scn = scn
        w = scn.workload
        self.w = w
        self.sign = 1.0 if w.goal == "max" else -1.0
        metrics = np.concatenate([w.curves[b].metric for b in w.batches])
        scores = np.unique(self.sign * metrics[np.isfinite(metrics)])
        self.levels = scores  # ascending best-so-far scores: every measured metric value
        self._cache: dict[int, tuple[np.ndarray, float]] = {}
        self._exact: dict[tuple[int, float], float] = {}

    def curve(self, gb: int) -> tuple[np.ndarray, float]:
        """(epochs to reach each level, last epoch of the recipe) at global batch ``gb``."""
        if gb not in self._cache:
            e = epochs_at(self.w, float(gb), self.sign * self.levels)
            # Monotone in level at measured batches and by epochs_at's floor between them.
            self._cache[gb] = (np.maximum.accumulate(np.where(np.isfinite(e), e, np.inf)), recipe_end_at(self.w, float(gb)))
        return self._cache[gb]

    def epochs_to(self, gb: int, score: float) -> float:
        """Epochs at ``gb`` until the best-so-far score reaches ``score`` (inf: never), computed
        exactly for ``score`` as the oracle does (not read off the level grid)."""
        key = (gb, float(score))
        if key not in self._exact:
            v = float(epochs_at(self.w, float(gb), np.array([self.sign * score]))[0])
            _, end = self.curve(gb)
            self._exact[key] = v if v <= end + 1e-9 else math.inf
        return self._exact[key]

    def score_at(self, gb: int, epochs: float) -> float:
        """Best-so-far score at ``gb`` after ``epochs`` (the lowest level before any is reached)."""
        e, _ = self.curve(gb)
        ok = e <= epochs + 1e-12
        return float(self.levels[ok].max()) if np.any(ok) else float(self.levels[0])

    def max_score(self, gb: int) -> float:
        e, end = self.curve(gb)
        ok = e <= end + 1e-9
        return float(self.levels[ok].max()) if np.any(ok) else float(self.levels[0])


# -- the result of one closed-loop run ---------------------------------------------------------
@dataclass(frozen=True)
class ClosedLoopRun:
    policy: str
    budget: int
    probes: int
    probe_cost: float
    initial_index: int | None
    final_index: int | None
    predicted_cost: float
    predicted_time_s: float
    confidence: float | None
    p_success: float | None
    reached: bool
    gave_up: bool
    time_s: float
    train_cost: float
    restart_cost: float
    restarts: int
    actions: tuple[str, ...] = ()
    revocations: int = 0  # spot replay: revocations the run suffered
    market: str = "on_demand"  # the final configuration's market

    def outcome(self, scn: Scenario, evidence: Evidence, oracle_cost: float) -> Outcome:
        c = scn.candidates
        i = self.final_index
        if self.initial_index is None:
            miss = "no_plan"
        elif self.gave_up:
            miss = "gave_up"
        elif not self.reached:
            miss = "target"
        elif scn.deadline_s is not None and self.time_s > scn.deadline_s * (1 + 1e-9):
            miss = "deadline"
        else:
            miss = None
        total = self.probe_cost + self.train_cost + self.restart_cost
        spent = self.train_cost + self.restart_cost
        return Outcome(
            scenario=scn.key,
            workload=scn.workload.name,
            family=scn.workload.family,
            target_label=scn.target_label,
            deadline_label=scn.deadline_label,
            policy=self.policy,
            budget=self.budget,
            probes=self.probes,
            probe_cost=self.probe_cost,
            gpu=None if i is None else c.gpus[int(c.gpu[i])],
            workers=None if i is None else int(c.workers[i]),
            local_batch=None if i is None else int(c.local_batch[i]),
            predicted_cost=self.predicted_cost,
            predicted_time_s=self.predicted_time_s,
            true_cost=total if self.initial_index is not None else math.inf,
            true_time_s=self.time_s,
            oracle_cost=oracle_cost,
            regret=math.inf if miss else total / oracle_cost - 1.0,
            miss=miss,
            probe_share=self.probe_cost / spent if spent > 0 else math.inf,
            setting=evidence.setting,
            curve_cost=evidence.curve_cost,
            curve_share=evidence.curve_cost / spent if spent > 0 else math.inf,
            confidence=self.confidence,
            p_success=self.p_success,
            train_cost=self.train_cost,
            restart_cost=self.restart_cost,
            restarts=self.restarts,
            revocations=self.revocations,
            market=self.market,
        )


def handover_share(epochs_done: float, schedule_end: float) -> float:
    """The share of its recipe a run has trained, in [0, 1]: at a batch change the run resumes
    at most this far into the new batch's recipe (``simulate``'s hand-over cap)."""
    if not (math.isfinite(schedule_end) and schedule_end > 0):
        return 1.0
    return float(min(max(epochs_done / schedule_end, 0.0), 1.0))


def simulate(
    scn: Scenario,
    *,
    index: int,
    planned_time_s: float,
    controller: Controller,
    truth: TrueRun | None = None,
    restart_s: float = RESTART_S,
    spot: "SpotReplay | None" = None,
    first_steps: int = 0,
) -> dict:
    """Run candidate ``index`` on the truth, asking ``controller`` at every checkpoint.

    With ``spot`` (:class:`benchmarks.closed_loop_spot.SpotReplay`) indices are rows of
    its candidates (every configuration on each market): a spot row's segments run
    through ``spot.advance`` (revocations: lost work, replacement, restart), it is billed
    at its market's price, and a revocation asks the controller at once.

    ``first_steps`` > 0 also asks the controller after the first ``first_steps`` steps of
    every start (on-demand rows), before any evaluation there: a scheduler that calls
    ``cotune replan`` at every restart as well as at evaluations (the churn check of
    benchmarks/README.md § Closed loop).

    Returns the run's record: reached, gave_up, time_s, train_cost, restart_cost,
    restarts, final index, the actions taken and the revocations suffered.
    """
    truth = truth or TrueRun(scn)
    w, c, oracle = scn.workload, scn.candidates, scn.oracle
    base = (lambda j: j) if spot is None else spot.base_index  # row of scn.candidates
    sign = truth.sign
    target_score = sign * scn.target
    dt = CHECKPOINT_FRACTION * planned_time_s if math.isfinite(planned_time_s) and planned_time_s > 0 else math.inf
    i, gb = index, int(c.global_batch[base(index)])
    e = 0.0  # the truth's epoch at the current batch
    gap = 0.0  # e − the job's own count (epochs run since its start): the truth's hand-overs
    elapsed = train = restart_cost = 0.0
    restarts = revocations = 0
    evals: list[EvalRecord] = []
    steps: dict[int, StepRecord] = {}
    actions: list[str] = []
    ran = [index]  # the configurations run, in order
    k = 0
    fresh = True  # no segment run since the last start

    def rate(j: int) -> float:
        if spot is not None:
            return spot.rate_per_s(j)
        return float(c.workers[j] * oracle.price_per_hour[j] / 3600.0)

    def epoch_time(j: int) -> float:
        j = base(j)
        return float(w.dataset_size / c.global_batch[j] * oracle.step_time_s[j])

    def record(reached: bool, gave_up: bool = False) -> dict:
        return dict(reached=reached, gave_up=gave_up, time_s=elapsed, train_cost=train, restart_cost=restart_cost,
                    restarts=restarts, final_index=i, actions=tuple(actions), revocations=revocations)

    for _ in range(MAX_SEGMENTS):
        e_target = truth.epochs_to(gb, target_score)
        _, end = truth.curve(gb)
        horizon = min(e_target, end)
        span = dt if k < MAX_CHECKPOINTS else math.inf
        # A first look right after every start, before any evaluation there (first_steps > 0).
        early = first_steps > 0 and fresh and k < MAX_CHECKPOINTS and spot is None
        if early:
            span = min(span, first_steps * float(oracle.step_time_s[base(i)]))
        fresh = False
        revoked = False
        ended = False  # this segment runs out the schedule without reaching the target
        if spot is not None and spot.revocable(i):
            left_s = max(horizon - e, 0.0) * epoch_time(i)
            seg = spot.advance(i, work_s=min(span, left_s), final=span >= left_s)
            elapsed += seg.wall_s
            train += seg.wall_s * rate(i)
            if seg.finished:
                return record(math.isfinite(e_target) and e_target <= end)
            # the evaluations the segment ran, lost work included (the job saw them); work redone
            # after a revocation repeats evaluations already made, which are not recorded twice
            reached_e = e + seg.work_s / epoch_time(i)
            for f in np.linspace(1.0 / EVALS_PER_CHECKPOINT, 1.0, EVALS_PER_CHECKPOINT):
                ee = e + f * (reached_e - e)
                if ee - gap > max((r.epoch for r in evals if r.global_batch == gb), default=-1.0):
                    evals.append(EvalRecord(global_batch=gb, epoch=float(ee - gap), metric=float(sign * truth.score_at(gb, ee)),
                                            seed=1))
            e = max(reached_e - seg.lost_s / epoch_time(i), 0.0)
            revoked = seg.revoked
            revocations += int(revoked)
            if k >= MAX_CHECKPOINTS:
                continue  # the controller is no longer asked (as for on-demand runs past the last checkpoint)
        else:
            step_epochs = span / epoch_time(i)
            if e + step_epochs >= horizon:
                t = max(horizon - e, 0.0) * epoch_time(i)
                reached = math.isfinite(e_target) and e_target <= end
                if reached or k >= MAX_CHECKPOINTS:
                    elapsed += t
                    train += t * rate(i)
                    return record(reached)
                # The schedule ends short of the target. The job is not over: it is checkpointed
                # and its scheduler re-plans it like any job (`cotune replan` answers a job past
                # its schedule's end), so the controller is asked once more, at the end.
                step_epochs, span, ended = max(horizon - e, 0.0), t, True
            # observe this segment: evaluations (none in a first look) and the step time
            for f in np.linspace(1.0 / EVALS_PER_CHECKPOINT, 1.0, EVALS_PER_CHECKPOINT) if not early else ():
                ee = e + f * step_epochs
                evals.append(EvalRecord(global_batch=gb, epoch=float(ee - gap), metric=float(sign * truth.score_at(gb, ee)),
                                        seed=1))
            e += step_epochs
            elapsed += span
            train += span * rate(i)
        b = base(i)
        steps[b] = StepRecord(
            gpu=c.gpus[int(c.gpu[b])], workers=int(c.workers[b]), hosts=int(c.hosts[b]),
            local_batch=int(c.local_batch[b]), step_time_s=float(oracle.step_time_s[b]),
        )
        k += 1
        level = truth.score_at(gb, e)
        act = controller(
            Progress(
                checkpoint=k, index=i, global_batch=gb, epochs_done=e - gap, level=float(sign * level), elapsed_s=elapsed,
                spent=train + restart_cost, evals=tuple(evals), steps=tuple(steps.values()), target=scn.target,
                deadline_s=scn.deadline_s, restart_s=restart_s, schedule_epochs=end,
                market="on_demand" if spot is None else spot.market(i), revoked=revoked, revocations=revocations,
                started_index=index, returns=count_returns(ran),
            )
        )
        if act.kind == "give_up":
            actions.append(f"{k}:give_up")
            return record(False, gave_up=True)
        if ended and not (act.kind == "switch" and act.index is not None and act.index != i):
            return record(False)  # the schedule has ended without the target and the job stays: missed
        if act.kind == "switch" and act.index is not None and act.index != i:
            j = int(act.index)
            restarts += 1
            elapsed += restart_s
            restart_cost += restart_s * rate(j)
            new_gb = int(c.global_batch[base(j)])
            if new_gb != gb:
                # Hand over at the same level (capped at what the new batch ever reaches), but
                # never further into the new recipe than the share of the old one already run:
                # a level the new batch reaches only late in its schedule (after its learning-rate
                # decay) would otherwise skip most of that schedule for free — measured, a single
                # switch from batch 200 to 6400 on ImageNet beat the static optimum by 53 %.
                lv = min(level, truth.max_score(new_gb))
                e_new = truth.epochs_to(new_gb, lv)
                e_new = 0.0 if not math.isfinite(e_new) else e_new
                e_new = min(e_new, handover_share(e, end) * truth.curve(new_gb)[1])
                gap += e_new - e
                e = e_new
            if spot is not None:
                spot.restarted()  # a switch writes a checkpoint: nothing is at risk on the new servers
            actions.append(f"{k}:switch:{i}->{j}")
            ran.append(j)
            i, gb = j, new_gb
            fresh = True
    # A spot run that never finishes (revoked faster than it checkpoints): report it, do not hide it.
    elapsed = math.inf
    return record(False)


# -- controllers -----------------------------------------------------------------------------------
class _ModelSource(Protocol):
    def __call__(self, progress: Progress) -> FittedModels: ...


@dataclass
class RemainingWorkController:
    """Re-plan the remaining work at every checkpoint; switch only when it pays.

    With fitted models ``M`` (refitted by ``models`` from what the job has shown), the
    remaining epochs at candidate ``c'`` of batch ``B'`` are
    ``r · (E_M(B', target) − E_M(B', level))`` — from the level the job has reached to
    the target — where ``r`` corrects the model by the job's own pace: ``r = (epochs
    done / E_M(B, level))^d`` at the running batch, ``d = E_M(B, level) / E_M(B, target)``
    the share of the predicted work done (``correct_pace``; 1 otherwise). The
    remaining time at confidence ``q`` scales the candidate's time at that confidence
    the same way. The decision is cotune's own re-planning rule,
    :func:`cotune.solver.decide_replan`, on those remaining times and costs (restart
    included for every alternative): stay unless an alternative that meets the remaining
    deadline saves more than ``margin``; switch when the running configuration misses it;
    when nothing meets it, move to the nearest option; give up only when no candidate
    reaches the target at all.
    """

    candidates: Candidates
    price_per_hour: np.ndarray
    dataset_size: int
    models: _ModelSource
    confidence: float | None = None
    margin: float = 0.05
    correct_pace: bool = True

    def __call__(self, p: Progress) -> Action:
        m = self.models(p)
        usable = np.flatnonzero(np.isin(self.candidates.gpu, [self.candidates.gpus.index(g) for g in m.time_models]))
        sub = subset(self.candidates, usable)
        est_t = estimate(sub, m, target=p.target, price_per_hour=self.price_per_hour, confidence=self.confidence)
        est_l = m.predict_epochs(np.unique(sub.global_batch.astype(float)), p.level)
        ub = np.unique(sub.global_batch.astype(float))
        e_level = np.asarray(est_l.epochs, float)[np.searchsorted(ub, sub.global_batch.astype(float))]
        here = int(np.flatnonzero(usable == p.index)[0]) if p.index in usable else None
        pace = 1.0
        if self.correct_pace and here is not None and math.isfinite(e_level[here]) and e_level[here] > 0:
            # Early on the pace is a noisy ratio of small numbers: trust it as much as the
            # share of the predicted work already done.
            from cotune.solver import job_frame

            done_here = job_frame(m, evals=p.evals, global_batch=float(p.global_batch), epochs_done=p.epochs_done,
                                  target=p.target, goal=m.accuracy.goal).epochs_done
            raw = float(np.clip(done_here / e_level[here], 0.25, 4.0))
            done = float(np.clip(e_level[here] / est_t.epochs[here], 0.0, 1.0)) if math.isfinite(est_t.epochs[here]) else 1.0
            pace = raw**done
        with np.errstate(invalid="ignore", divide="ignore"):
            rem_epochs = pace * np.maximum(est_t.epochs - np.where(np.isfinite(e_level), e_level, 0.0), 0.0)
            if here is not None:
                rem_epochs[here] = pace * max(float(est_t.epochs[here] - e_level[here]), 0.0) if math.isfinite(e_level[here]) else rem_epochs[here]
            frac = np.where(est_t.epochs > 0, rem_epochs / est_t.epochs, 0.0)
            rem_time = frac * est_t.time_at_confidence_s
            rem_mean = frac * est_t.time_s
        # cotune's own rule: a candidate whose probability of reaching the target at all is
        # not above the confidence is out.
        reaches = feasibility(est_t, deadline_s=None, budget=None, confidence=self.confidence).reaches
        rem_mean = np.where(reaches, rem_mean, np.inf)
        rem_time = np.where(reaches, rem_time, np.inf)
        rate = sub.workers * est_t.price_per_hour / 3600.0
        switch = np.ones(len(sub), dtype=bool)
        if here is not None:
            switch[here] = False
        restart_t = np.where(switch, p.restart_s, 0.0)
        if not np.any(np.isfinite(est_t.epochs)):
            return Action("give_up", reason="the models see the target unreachable at every candidate")
        return self._decide(p, usable, sub, here, rem_mean + restart_t, rem_time + restart_t, rate * (rem_mean + restart_t))

    def fastest(self, target: float) -> tuple[int, float, float] | None:
        """Before the job starts: the candidate its models predict fastest to ``target``
        among those they see reach it (index, mean time, cost); None when none does."""
        m = self.models(None)
        usable = np.flatnonzero(np.isin(self.candidates.gpu, [self.candidates.gpus.index(g) for g in m.time_models]))
        if usable.size == 0:
            return None
        sub = subset(self.candidates, usable)
        est = estimate(sub, m, target=target, price_per_hour=self.price_per_hour, confidence=self.confidence)
        reaches = feasibility(est, deadline_s=None, budget=None, confidence=self.confidence).reaches
        t = np.where(reaches & np.isfinite(est.time_s), est.time_s, np.inf)
        if not np.any(np.isfinite(t)):
            return None
        k = int(np.argmin(t))
        return int(usable[k]), float(t[k]), float(est.cost[k])

    def _decide(self, p: Progress, usable, sub, here, rem_mean, rem_conf, rem_cost) -> Action:
        """cotune's re-planning rule (``cotune.solver.decide_replan``) on the remaining work."""
        from cotune.solver import ReplanOption, decide_replan

        if p.deadline_s is not None and p.elapsed_s >= p.deadline_s:
            return Action("continue", reason="the deadline has passed: finish where the job is")
        opts = {}
        for k in np.flatnonzero(np.isfinite(rem_cost) & np.isfinite(rem_mean)):
            k = int(k)
            opts[k] = ReplanOption(
                gpu=sub.gpus[int(sub.gpu[k])], market=sub.markets[int(sub.market[k])], workers=int(sub.workers[k]),
                local_batch=int(sub.local_batch[k]), hosts=int(sub.hosts[k]), time_s=float(rem_mean[k]),
                cost=float(rem_cost[k]), time_at_confidence_s=float(rem_conf[k]) if np.isfinite(rem_conf[k]) else math.inf,
            )
        stay = opts.get(here) if here is not None else None
        alternatives = [o for k, o in opts.items() if k != here]
        remaining = math.inf if p.deadline_s is None else p.deadline_s - p.elapsed_s
        d = decide_replan(
            stay=stay, alternatives=alternatives, remaining_s=remaining, margin=self.margin,
            use_confidence=self.confidence is not None,
        )
        index_of = {id(o): k for k, o in opts.items()}
        if d.decision == "stay":
            return CONTINUE
        if d.decision == "switch":
            return Action("switch", int(usable[index_of[id(d.chosen)]]), d.reason)
        if d.nearest is None:
            return Action("give_up", reason=d.reason)
        k = index_of[id(d.nearest)]
        return CONTINUE if k == here else Action("switch", int(usable[k]), "nothing meets the deadline: the nearest")


@dataclass
class SuccessController:
    """Re-plan by the probability of success of the *remaining* work (cotune's closed loop).

    At a checkpoint the job has run ``e`` epochs at batch ``B`` and reached level ``m``.
    For every candidate ``k`` (batch ``B_k``), with the accuracy model ``M`` refitted on
    the job's step times:

    * **the running batch** — the job's own curve extrapolated and pooled with ``M``'s
      prior there (``cotune.models._curve``): total epochs ``E_B`` log-normal
      ``(ln Ê_B, σ_B)``, reached with probability ``p_B``;
    * **the job's shift** ``δ = ln Ê_B − ln E_M(B)`` — how far this job runs from the
      model at its batch — carried to every other batch: ``ln Ê_k = ln E_M(B_k) + δ``
      with the model's spread there (the model is wrong by about the same factor at
      neighbouring batches; Pollux/AdaScale's scale-invariant progress);
    * **reach** — ``p_k = P_M(reach at B_k)``, and no higher than ``p_B`` for ``B_k ≥ B``
      (a larger batch does not reach a level a smaller one plateaus below);
    * **hand-over** — a switch resumes at the epoch ``d_k = E_M(B_k, m)·e^δ`` where ``B_k``
      reaches the level already reached (``d = e`` when staying), after a restart
      ``ρ_k`` (0 when staying);
    * the target is not reached yet: :func:`cotune.solver.remaining_work` conditions
      every belief on ``E_k > d_k`` and gives each option's ``P(success)`` within the
      remaining deadline (restart ``ρ_k`` included, 0 for staying), its conditional
      median remaining time and its expected remaining cost.

    The decision is :func:`cotune.solver.decide_replan` in its probability form at
    ``confidence`` (0.5 when None), on risk-adjusted costs ``cost_k + (1 − P_k)·L`` with
    ``L`` what a miss wastes (:func:`cotune.solver.miss_cost`: the money spent so far plus
    the whole job redone, the models' cost of it at the configuration it started at —
    the one definition ``cotune replan`` uses too): stay
    while the job keeps that chance unless an alternative saves more than ``margin``;
    otherwise the cheapest that keeps it; when none does, the best chance if it beats
    staying by more than ``p_margin``.
    """

    candidates: Candidates
    price_per_hour: np.ndarray
    models: _ModelSource
    goal: str
    confidence: float | None = None
    margin: float = 0.05
    p_margin: float = P_MARGIN
    interval: float = 0.9
    # The job's configured epochs before it starts (its recipe's, from the reference run): the
    # same schedule end the controller reads from the running job afterwards.
    schedule_epochs: float = math.inf

    def assess(self, p: Progress | None, *, target: float, deadline_s: float | None):
        """``(usable, here, P(success), expected remaining cost, remaining time)`` of every
        candidate of a probed GPU type; ``p`` None: before the job starts (nothing done)."""
        from cotune.solver import finish_first, frame_outlook, job_outlook, remaining_work, schedule_left_s

        m = self.models(p)
        c = self.candidates
        usable = np.flatnonzero(np.isin(c.gpu, [c.gpus.index(g) for g in m.time_models]))
        sub = subset(c, usable)
        est = estimate(sub, m, target=target, price_per_hour=self.price_per_hour)
        here = int(np.flatnonzero(usable == p.index)[0]) if (p is not None and p.index in usable) else None
        running = np.zeros(len(sub), dtype=bool)
        if here is not None:
            running[here] = True
        if p is None:  # before the job starts: the models alone
            o = job_outlook(m, global_batch=sub.global_batch, target=target, goal=self.goal)  # type: ignore[arg-type]
        else:
            # The level is the job's own best evaluation (none before its first: then a switch
            # resumes at the same share of the work), as for a tracked job in `cotune replan`.
            o = frame_outlook(m, self.frame(m, p, target=target), global_batch=sub.global_batch, running=running,
                              target=target, goal=self.goal, interval=self.interval)  # type: ignore[arg-type]
        e_hat, s_hat, p_hat, done = o.epochs, o.log_sigma, o.p_reach, o.done_epochs
        restart = np.full(len(sub), 0.0 if p is None else p.restart_s)
        if here is not None:
            restart[here] = 0.0
        elapsed = 0.0 if p is None else p.elapsed_s
        # The job's schedule length in epochs applies at every batch (a recipe keeps its
        # epoch count when the batch changes; the truth's recipes differ a little).
        schedule = np.full(len(sub), self.schedule_epochs if p is None else p.schedule_epochs)
        sigma = np.sqrt(s_hat**2 + np.asarray(est.step_log_sigma, float) ** 2)
        rate = sub.workers * est.price_per_hour / 3600.0
        left = math.inf if deadline_s is None else deadline_s - elapsed
        rw = remaining_work(
            epochs=e_hat, log_sigma=sigma, p_reach=p_hat,
            # Before the job has run, the belief is the models' alone: their error shapes,
            # as `recommend` uses; with progress, the job's own forecast (normal).
            step_log_sigma=est.step_log_sigma, shapes=(STEP_ERROR_SHAPE, EPOCHS_ERROR_SHAPE) if p is None else None,
            done_epochs=done, epoch_time_s=est.epoch_time_s, restart_s=restart,
            rate_per_s=rate, remaining_s=None if deadline_s is None else left, max_epochs=schedule,
        )
        p_succ, cost, rem_time = rw.p_success, rw.cost, rw.time_s
        if here is not None and p is not None:
            # Staying runs out the schedule first where that leaves time to move after it
            # (cotune.solver.finish_first; `cotune replan` weighs staying the same way).
            fin = schedule_left_s(schedule_epochs=float(schedule[here]), done_epochs=float(done[here]),
                                  epoch_time_s=float(est.epoch_time_s[here]))
            if 0.0 < fin < left:
                after = remaining_work(
                    epochs=e_hat, log_sigma=sigma, p_reach=p_hat, done_epochs=done, epoch_time_s=est.epoch_time_s,
                    restart_s=np.full(len(sub), p.restart_s), rate_per_s=rate,
                    remaining_s=None if deadline_s is None else left - fin, max_epochs=schedule,
                )
                ff = finish_first(p_success=float(p_succ[here]), p_reach=float(rw.p_reach[here]), cost=float(cost[here]),
                                  finish_cost=float(rate[here]) * fin, global_batch=sub.global_batch,
                                  running_batch=float(sub.global_batch[here]), fallback_p_success=after.p_success,
                                  fallback_cost=after.cost)
                p_succ, cost = p_succ.copy(), cost.copy()
                p_succ[here], cost[here] = ff.p_success, ff.cost
        return usable, here, p_succ, cost, rem_time

    def frame(self, m: FittedModels, p: Progress, *, target: float):
        """The job's progress at its batch (:func:`cotune.solver.job_frame`: its own count of
        epochs placed at the batch it runs now, each change of batch handed over by the rule
        the switch was judged by)."""
        from cotune.solver import job_frame

        return job_frame(m, evals=p.evals, global_batch=float(p.global_batch), epochs_done=p.epochs_done, target=target,
                         goal=self.goal, interval=self.interval)  # type: ignore[arg-type]

    def best_chance(self, *, target: float, deadline_s: float | None, tolerance: float = 0.02) -> int | None:
        """Where to start when no plan reaches the confidence: the highest chance of
        success (the cheapest within ``tolerance`` of it); None when every chance is 0."""
        usable, _, p_succ, cost, _ = self.assess(None, target=target, deadline_s=deadline_s)
        k = _best_chance_row(p_succ, cost, tolerance)
        return None if k is None else int(usable[k])

    def job_cost(self, p: Progress) -> float:
        """The models' cost of the whole job at the configuration it started at — the cost
        ``recommend`` states for it — the redo of :func:`cotune.solver.miss_cost`, as
        ``cotune replan`` reads it from a tracked job's first step record (∞ off the
        profiled GPU types). The controller used to take the open-loop plan's cost,
        which is none when the job starts at its best chance: such jobs ran with a miss
        costing only the money spent."""
        m = self.models(p)
        c = self.candidates
        j = p.index if p.started_index < 0 else p.started_index
        if c.gpus[int(c.gpu[j])] not in m.time_models:
            return math.inf
        est = estimate(subset(c, np.array([j])), m, target=p.target, price_per_hour=self.price_per_hour)
        return float(est.cost[0])

    def __call__(self, p: Progress) -> Action:
        from cotune.solver import ReplanOption, backoff_margin, decide_replan, miss_cost

        if p.deadline_s is not None and p.elapsed_s >= p.deadline_s:
            return Action("continue", reason="the deadline has passed: finish where the job is")
        usable, here, p_succ, cost, rem_time = self.assess(p, target=p.target, deadline_s=p.deadline_s)
        if not np.any(p_succ > 0):
            return Action("give_up", reason="the models give every candidate no chance of reaching the target")
        c = self.candidates
        opts = {}
        for k in np.flatnonzero(np.isfinite(cost) & (p_succ > 0)):
            k = int(k)
            j = int(usable[k])
            opts[k] = ReplanOption(
                gpu=c.gpus[int(c.gpu[j])], market=c.markets[int(c.market[j])], workers=int(c.workers[j]),
                local_batch=int(c.local_batch[j]), hosts=int(c.hosts[j]), time_s=float(rem_time[k]),
                cost=float(cost[k]), p_success=float(p_succ[k]),
            )
        stay = opts.get(here) if here is not None else None
        d = decide_replan(
            stay=stay, alternatives=[o for k, o in opts.items() if k != here],
            remaining_s=math.inf if p.deadline_s is None else p.deadline_s - p.elapsed_s,
            margin=backoff_margin(self.margin, returns=p.returns),
            confidence=0.5 if self.confidence is None else self.confidence,
            p_margin=backoff_margin(self.p_margin, returns=p.returns),
            miss_cost=miss_cost(spent=p.spent, job_cost=self.job_cost(p)), spent=p.spent,
        )
        index_of = {id(o): k for k, o in opts.items()}
        to = d.chosen if d.decision != "infeasible" else d.nearest
        if to is None:
            return Action("give_up", reason=d.reason)
        k = index_of[id(to)]
        return CONTINUE if k == here else Action("switch", int(usable[k]), d.reason)


def _with_job_records(profile: Profile, p: Progress | None) -> Profile:
    return profile if p is None else dataclasses.replace(profile, steps=profile.steps + p.steps)


# -- the setting and its policies ---------------------------------------------------------------
@setting(
    "closed-loop",
    order=1,
    closed_loop=True,
    description="the one-curve inputs; the chosen plan runs on the replay truth and a controller may act every "
    "10 % of the planned time (continue / switch workers, GPU or batch / give up), paying a 120 s restart per "
    "switch; regret counts probes, training and restarts",
)
def closed_loop_evidence(workload):  # type: ignore[no-untyped-def]
    return dataclasses.replace(one_curve(workload), setting="closed-loop")


_TRUTH: dict[str, TrueRun] = {}


def _truth(scn: Scenario) -> TrueRun:
    key = f"{scn.workload.name}"
    if key not in _TRUTH:
        _TRUTH.clear()
        _TRUTH[key] = TrueRun(scn)
    return _TRUTH[key]


def _initial(scn: Scenario, evidence: Evidence, planner: str, budget: int) -> Plan:
    """The open-loop plan of ``planner`` on the one-curve inputs (shared with that setting's run)."""
    return run_policy(planner, scn, (budget,), setting="one-curve")[0]


def _profile(scn: Scenario, evidence: Evidence, probed: tuple[int, ...]) -> Profile:
    launcher = scn.launcher(evidence)
    for i in probed:
        launcher.probe(i)
    return launcher.profile()


def _run(name: str, scn: Scenario, evidence: Evidence, budget: int, plan: Plan, controller: Controller | None) -> ClosedLoopRun:
    if plan.index is None:
        rec = dict(reached=False, gave_up=False, time_s=math.inf, train_cost=0.0, restart_cost=0.0, restarts=0,
                   final_index=None, actions=())
    else:
        rec = simulate(scn, index=plan.index, planned_time_s=plan.predicted_time_s,
                       controller=controller or (lambda p: CONTINUE), truth=_truth(scn), first_steps=FIRST_STEPS)
    return ClosedLoopRun(
        policy=name, budget=budget, probes=plan.probes, probe_cost=plan.probe_cost, initial_index=plan.index,
        predicted_cost=plan.predicted_cost, predicted_time_s=plan.predicted_time_s, confidence=plan.confidence,
        p_success=plan.p_success, **rec,
    )


def _cotune_controller(scn: Scenario, evidence: Evidence, plan: Plan, confidence: float | None) -> Controller:
    """The morning's closed-loop cotune (``cotune_closed_pace``): cotune's library models
    refitted with the job's own step times, their epochs corrected by the job's pace."""
    base = _profile(scn, evidence, plan.probed)
    cache: dict[tuple, FittedModels] = {}

    def models(p: Progress | None) -> FittedModels:
        key = tuple(sorted((s.gpu, s.workers, s.hosts, s.local_batch) for s in (() if p is None else p.steps)))
        if key not in cache:
            cache.clear()
            # Intervals matter only when planning at a confidence; few bootstrap refits keep it quick.
            cache[key] = fit_models(_with_job_records(base, p), n_bootstrap=0 if confidence is None else 4)
        return cache[key]

    return RemainingWorkController(
        candidates=scn.candidates, price_per_hour=price_matrix(scn.workload), dataset_size=scn.workload.dataset_size,
        models=models, confidence=confidence,
    )


def _pollux_controller(scn: Scenario, evidence: Evidence, plan: Plan) -> Controller:
    """Adaptive Pollux-style: its throughput model refitted with the job's step times, its
    statistical efficiency from the reference gradient noise; re-chosen by goodput per dollar
    (cheapest remaining work at the mean) at every checkpoint. It does not read the curve's pace."""
    from benchmarks.policies import _accuracy

    launcher = scn.launcher(evidence)
    for i in plan.probed:
        launcher.probe(i)
    acc = _accuracy("pollux", scn, evidence, launcher)
    c = scn.candidates

    def models(p: Progress | None) -> FittedModels:
        arrays = _probe_arrays(launcher)
        for s in () if p is None else p.steps:
            a = arrays.setdefault(s.gpu, {k: np.array([]) for k in ("workers", "hosts", "local_batch", "step_time_s")})
            for k, v in (("workers", s.workers), ("hosts", s.hosts), ("local_batch", s.local_batch), ("step_time_s", s.step_time_s)):
                a[k] = np.append(a[k], float(v))
        return _models(scn, _fit_time("pollux", arrays), acc)

    return RemainingWorkController(
        candidates=c, price_per_hour=price_matrix(scn.workload), dataset_size=scn.workload.dataset_size,
        models=models, confidence=None, correct_pace=False,
    )


def _success_controller(scn: Scenario, evidence: Evidence, plan: Plan, confidence: float | None) -> SuccessController:
    """Closed-loop cotune: its library models refitted with the job's step times, the job's
    own curve read at every checkpoint, decisions by P(success) of the remaining work."""
    base = _profile(scn, evidence, plan.probed)
    cache: dict[tuple, FittedModels] = {}

    def models(p: Progress | None) -> FittedModels:
        steps = () if p is None else p.steps
        key = tuple(sorted((s.gpu, s.workers, s.hosts, s.local_batch) for s in steps))
        if key not in cache:
            cache.clear()
            # No bootstrap refits: they widen the step-time spread a little (the epochs spread
            # dominates P(success) here) and cost seconds a checkpoint; measured on four
            # workloads the misses were no fewer with them (16.7 % against 11.1 %).
            cache[key] = fit_models(dataclasses.replace(base, steps=base.steps + tuple(steps)), n_bootstrap=0)
        return cache[key]

    ref = evidence.curves[0] if evidence.curves else None
    return SuccessController(
        candidates=scn.candidates, price_per_hour=price_matrix(scn.workload), models=models, goal=scn.workload.goal,
        confidence=confidence,
        schedule_epochs=math.inf if ref is None else recipe_end_at(scn.workload, float(ref)),
    )


def _best_chance_row(p_succ: np.ndarray, cost: np.ndarray, tolerance: float = 0.02) -> int | None:
    """Row of the highest chance of success (the cheapest within ``tolerance`` of it); None when all are 0."""
    if not np.any(p_succ > 0):
        return None
    close = np.flatnonzero(p_succ >= p_succ.max() - tolerance)
    return int(close[np.argmin(cost[close])])


def _start_anyway(scn: Scenario, plan: Plan, controller: Controller | None) -> Plan:
    """No plan reaches the confidence: a watched job starts at its best chance instead (a
    goodput controller, which has no chance to rank by, at its own fastest estimate —
    every adaptive policy gets the same start-anyway rule)."""
    if plan.index is not None:
        return plan
    if isinstance(controller, RemainingWorkController):
        start = controller.fastest(scn.target)
        if start is None:
            return plan
        k, time_s, cost = start
        return dataclasses.replace(plan, index=k, predicted_cost=cost, predicted_time_s=time_s)
    if not isinstance(controller, SuccessController):
        return plan
    usable, _, p_succ, cost, rem_time = controller.assess(None, target=scn.target, deadline_s=scn.deadline_s)
    k = _best_chance_row(p_succ, cost)
    if k is None:
        return plan
    return dataclasses.replace(plan, index=int(usable[k]), predicted_cost=float(cost[k]),
                               predicted_time_s=float(rem_time[k]), p_success=float(p_succ[k]))


def _register_closed(name: str, *, planner: str, make: Callable[[Scenario, Evidence, Plan], Controller | None], **kw) -> None:
    """One closed-loop policy: the open-loop planner that makes the initial plan, and the
    controller (a :class:`SuccessController` also starts a job the planner found no plan for)."""

    def run(scn: Scenario, evidence: Evidence, budget: int) -> ClosedLoopRun:
        plan = _initial(scn, evidence, planner, budget)
        controller = make(scn, evidence, plan)
        return _run(name, scn, evidence, budget, _start_anyway(scn, plan, controller), controller)

    policy(name, closed_loop=True, planner=planner, **kw)(run)


_register_closed("cotune_open", planner="cotune", make=lambda s, e, p: None, family="cotune_open",
                 description="cotune's plan, run as planned (open loop)")
_register_closed("cotune_open_q90", planner="cotune_q90", make=lambda s, e, p: None, family="cotune_open", confidence=0.9,
                 description="cotune's plan at confidence 0.9, run as planned (open loop)")
_register_closed("cotune_closed", planner="cotune", make=lambda s, e, p: _success_controller(s, e, p, None),
                 family="cotune_closed",
                 description="cotune's plan (its best chance when none reaches P(success) 0.5), re-planned at every "
                 "checkpoint by P(success) of the remaining work, reading the job's own curve")
_register_closed("cotune_closed_q90", planner="cotune_q90", make=lambda s, e, p: _success_controller(s, e, p, 0.9),
                 family="cotune_closed", confidence=0.9,
                 description="cotune_closed at confidence 0.9 (plan and re-plan)")
_register_closed("cotune_closed_voi", planner="cotune_voi", make=lambda s, e, p: _success_controller(s, e, p, None),
                 family="cotune_closed_voi",
                 description="cotune_closed whose probes are bought by value of information (stops when no gain "
                 "covers a probe's price)")
PROBE_SHARE_CAP = 0.1  # cotune_closed_lean: probes may cost at most this share of the plan's expected cost


def _confirm_loop(scn: Scenario, budget: int, confidence: float | None) -> list[tuple[int, tuple[int, ...], float]]:
    """Probes that confirm the choice: from the reference run's step time alone, fit →
    solve → probe the best of the top three not yet measured, until the top three are all
    measured or ``budget`` probes are bought (no space-filling seed design first; its
    points only while nothing is feasible).
    Same shape as :func:`benchmarks.policies._probe_loop`'s answer."""
    from benchmarks.policies import SEED_PER_GPU, choose, fitted_estimates, policy_mask, seed_design

    launcher = scn.launcher(scn.evidence("one-curve"))
    seed = seed_design(scn.candidates, policy_mask(scn, "all"), per_gpu=SEED_PER_GPU)  # fixed: computed once
    out: list[tuple[int, tuple[int, ...], float]] = []
    for k in range(1, budget + 1):
        # The design's next point: the first pick when nothing is measured (imagenet-hetero has
        # no reference run in its space) and the fallback while nothing is feasible.
        pick = next((i for i in seed if i not in launcher.measured), None)
        if launcher.measured:
            usable, est = fitted_estimates(scn, tuple(launcher.probed), policy="cotune", setting="one-curve")
            est, _, top = choose(est, deadline_s=scn.deadline_s, confidence=confidence, limit=3)
            fresh = [int(usable[i]) for i in top if int(usable[i]) not in launcher.measured]
            if top.size and not fresh:
                break  # the choice and its two runners-up are measured
            if fresh:
                pick = fresh[0]
        if pick is None:
            break
        launcher.probe(pick)
        out.append((k, tuple(launcher.probed), launcher.probe_cost))
    return out


def _lean_run(scn: Scenario, evidence: Evidence, budget: int, *, confidence: float | None = None,
              name: str = "cotune_closed_lean", cap: float = PROBE_SHARE_CAP, sequence: str = "design") -> ClosedLoopRun:
    """cotune's probe sequence, stopped before the probe that would take the probes'
    total past ``cap`` of the current plan's expected cost; the running job then
    measures the rest (its own step times, its own curve). ``cap=inf`` is cotune_closed.
    ``sequence="confirm"`` buys :func:`_confirm_loop`'s probes instead of the anytime loop's."""
    from benchmarks.policies import _probe_loop, choose, fitted_estimates

    if sequence == "confirm":
        seq = _confirm_loop(scn, budget, confidence)
    else:
        seq = _probe_loop(scn, scn.evidence("one-curve"), "cotune", "cotune", "all", tuple(range(1, budget + 1)))
    # Before any probe: the step time the reference curve's own run logged (free) may do.
    if scn.launcher(scn.evidence("one-curve")).known:
        seq = [(0, (), 0.0), *seq]
    for k, (_, probed, probe_cost) in enumerate(seq, start=1):
        usable, est = fitted_estimates(scn, probed, policy="cotune", setting="one-curve")
        est, _, top = choose(est, deadline_s=scn.deadline_s, confidence=confidence, limit=1)
        j = int(top[0]) if top.size else None
        plan = Plan(
            policy=name, budget=budget, probes=len(probed), probe_cost=probe_cost,
            index=None if j is None else int(usable[j]), predicted_cost=math.inf if j is None else float(est.cost[j]),
            predicted_time_s=math.inf if j is None else float(est.time_s[j]), probed=probed,
            p_success=None if (j is None or est.p_success is None) else float(est.p_success[j]), confidence=confidence,
        )
        controller = _success_controller(scn, evidence, plan, confidence)
        start = _start_anyway(scn, plan, controller)
        nxt = seq[k][2] if k < len(seq) else math.inf
        if k == len(seq) or not (math.isfinite(start.predicted_cost) and nxt <= cap * start.predicted_cost):
            return _run(name, scn, evidence, budget, start, controller)
    raise AssertionError("unreachable: the loop returns at its last budget")


policy("cotune_closed_lean", closed_loop=True, planner="cotune", family="cotune_closed_lean",
       description=f"cotune_closed buying probes only while they cost at most {PROBE_SHARE_CAP:.0%} of the plan's "
       "expected cost: the running job is the rest of the probe")(_lean_run)
policy("cotune_closed_lean_q90", closed_loop=True, planner="cotune_q90", family="cotune_closed_lean", confidence=0.9,
       description="cotune_closed_lean planning and re-planning at confidence 0.9")(
    lambda scn, evidence, budget: _lean_run(scn, evidence, budget, confidence=0.9, name="cotune_closed_lean_q90"))

_register_closed("cotune_closed_pace", planner="cotune", make=lambda s, e, p: _cotune_controller(s, e, p, None),
                 family="cotune_closed_pace",
                 description="the 2026-12-01 morning controller: remaining work by the job's pace, decisions on times")
_register_closed("pollux_adaptive", planner="pollux", make=_pollux_controller, probabilities=False,
                 description="Pollux-style goodput policy, re-chosen at the same checkpoints")


@policy("oracle", closed_loop=True, description="the true optimum run as planned: no probes, no restarts")
def _oracle(scn: Scenario, evidence: Evidence, budget: int) -> ClosedLoopRun:
    sol = scn.oracle.solve(scn.target, scn.deadline_s)
    plan = Plan(policy="oracle", budget=budget, probes=0, probe_cost=0.0, index=sol.index,
                predicted_cost=sol.cost, predicted_time_s=sol.time_s)
    return _run("oracle", scn, evidence, budget, plan, None)
