"""Re-planning a running job: the best configuration for the *remaining* work.

Remaining work as a distribution. Every option — stay, or switch to another GPU type,
worker count, market or batch — gets the belief of :func:`cotune.solver.job_outlook`
about the job's *total* epochs at its batch and the epoch where it resumes there, and
:func:`cotune.solver.remaining_work` turns it into the remaining work *given the target
is not reached yet*: ``P(success)`` within the remaining deadline, the conditional median
time and cost, an interval and the time at the requested confidence. This is the same
pair of functions the closed-loop replay (``benchmarks/closed_loop.py``) decides with.

* Without the job's own curve (``progress`` given by hand), the model's epochs answer
  and a switch resumes at the same share of the work: ``φ = e / E(B_old)`` done, so
  ``(1 − φ)·E(B_new)`` epochs are left at median (exact at ``B_new = B_old`` and
  consistent with the critical-batch law, ``E(B) = E_min(1 + B/B_noise)``, which
  scales every stage of training alike).
* With the job's tracked records (``cotune.track.Tracker``; ``job`` set), the curve it
  trained so far at its batch is extrapolated and pooled with the model's prior there;
  the job's shift from the model (``Ê_job / E_model(B_old)``, at most ``MAX_SHIFT`` either
  way) scales the model at every batch, and a switch resumes where the new batch reaches
  the best metric already reached.
* After a change of batch the tracked epochs still count from the job's start; they are
  placed at the new batch by the same hand-over (:func:`cotune.solver.job_frame`): the
  job resumed there at the epoch the switch was judged by, and its curve there is pooled
  with the belief that option had as an alternative (the old batch's evidence, carried),
  not with the bare model — so an option reads the same just before and just after the
  switch, and a job does not switch back for want of its own history.

Spot and mixed options go through the spot stage on their remaining work. A spot
option's ``P(success)`` is the remaining work's chance by the deadline less the
revocations' delay, averaged over the delay's law (:func:`_spot_success`); a mixed
option's revocation-aware time stretches the epoch time and the revocation-count
variance adds to the spread of its ``P(success)``.

Decision. The current configuration ("stay": same GPU, market and local batch on the
workers left after losses and additions) pays no restart; every other candidate pays
``restart_s`` — checkpoint write, reload and the slowest replacement delay, by default —
in time and money. Every option gets the ``P(success)`` of its remaining work within the
remaining deadline, and the decision is :func:`cotune.solver.decide_replan` in its
probability form (the rule the closed-loop benchmark replays):

* staying keeps ``P(success) ≥ q`` (``confidence``, 0.5 without one): stay, unless the
  best alternative at the entry threshold (``min(q + 0.05, (1 + q)/2)``,
  :func:`cotune.solver.entry_threshold`) is cheaper by more than ``margin`` of the whole
  job's cost (money spent plus the remaining) — a job nearly done does not restart to
  save a few percent of its last minutes, nor for a chance just above ``q``;
* alternatives are compared by risk-adjusted cost ``cost + (1 − P(success)) · L``, ``L``
  what a miss wastes (:func:`cotune.solver.miss_cost`: the money spent plus the whole job
  redone at the configuration it started at, priced as ``recommend`` prices it, spot
  stage included): a sure finish is not traded for a cheaper gamble; the decision is
  handed the cheapest option of every pool it may pick from (at the entry threshold, at
  ``q``, clear of staying's chance by the margin) and the likeliest, so a wider search
  space never gives a worse answer;
* staying falls below ``q``: switch to the best alternative at the entry threshold (the
  best that keeps ``q`` when none is);
* a tracked job whose step records move back to a configuration it had left: both
  margins double with each such return (:func:`cotune.solver.backoff_margin`), so a job
  the models keep over-promising to settles instead of touring its options.

Models are fitted on every step record (the job's step windows included) but only on
offline curves.

Schedule. With ``progress.schedule_epochs`` ``M`` (the job's configured epochs: where its
learning-rate schedule ends, kept when the batch changes) a target not reached by then
is missed. Reach probabilities mean "within the runs they came from", so every option's
epochs given reached are truncated at ``H = max(M, the accuracy model's longest run)``
and cut at ``M`` (:func:`cotune.solver.remaining_work`'s ``horizon_epochs`` and
``max_epochs``): a job whose schedule is shorter than the runs the model learnt from,
or near its end without the target, has less chance left; one past it none by staying.

Money. ``progress.spent`` is what the job has cost so far; with a ``budget`` (the whole
job's), options must fit ``budget − spent``. Without a cluster file only on-demand
servers at the request's prices are considered (a restart costs the request's
``startup_s`` unless ``restart_s`` is given).

Unreachable. When nothing keeps ``P(success) ≥ q``, the answer is ``infeasible`` with
the *nearest* configuration: the best chance (highest ``P(success)``, staying unless an
alternative beats it by more than 5 points), or, when no option has a real chance
(``MIN_CHANCE``), the one that misses by the least (time at the requested confidence
over the time left, or cost over the budget left, whichever is worse). A job at or past its
deadline is answered, not refused: every ``P(success)`` by it is 0, and the nearest is the
option that finishes soonest at the confidence (within the budget left where one fits it;
staying unless that one saves more than the margin of its time), with the deadline from
the job's start that it needs.

Straight-line rule. If the run is behind the straight line from 0 at start to the
target at the deadline (the progress below ``elapsed / deadline``; the progress is the
epochs done over those plus the remaining epochs where the job runs, given the target is
not reached yet: the STAY row's), pure-spot candidates are left
out: behind schedule the job runs on on-demand (or mixed, which starts on on-demand
while behind) — Can't Be Late's uniform-progress rule at this decision point. Only where
an on-demand or mixed option (or the job itself, running on one) keeps ``P(success) ≥ q``
within the budget left and is at least as likely to finish as the best spot option that
keeps it, as the closed-loop replay's spot controller rules: the rule
assumes on-demand can catch up, and where none can (no on-demand offered, or too little)
the spot options stay in and a note says so. Past the deadline the line has ended: the rule
does not apply.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any, Callable, Literal, Mapping

import numpy as np

from cotune._checks import BadValue, excerpt
from cotune._request import (
    price_key,
    DEFAULT_RESTART_S,
    FIELD_NAMES,
    REPLAN_KEYWORDS,
    REPLAN_RULE_FIELDS,
    Progress,
    RecommendRequest,
    ReplanRequest,
    pointer_key,
    refuse_unknown_keywords,
    request_from_call,
    unsearched_note,
)
from cotune.errors import InputError, ModelError
from cotune.profile._profile import distinct_evals, repeated_evals_note
from cotune.units import (
    count_of, format_chance, format_duration, format_duration_at_least, format_money, format_money_at_least,
)
from cotune.models import FittedModels
from cotune.solver import MIN_CHANCE, Choice, Plan  # MIN_CHANCE: below it the nearest is the option that misses by the least

__all__ = ["MIN_CHANCE", "Progress", "ReplanResult", "remaining_fraction", "replan"]



@dataclass(frozen=True)
class ReplanResult:
    """The decision and the numbers behind it (``to_dict()`` is the JSON form)."""

    # Compared by value (==), never hashed: it holds mappings and tables, which have no hash.
    __hash__ = None  # type: ignore[assignment]

    decision: Literal["stay", "switch", "infeasible"]
    reason: str
    stay: Any  # Choice | None
    best: Any  # Choice | None: best alternative (restart paid)
    progress_fraction: float  # epochs done / (those + the remaining given not reached yet); 1 once reached
    schedule_fraction: float  # elapsed / deadline: where the straight line is
    remaining_deadline_s: float
    restart_s: float
    margin: float
    objective: str
    confidence: float | None
    gain: float | None  # stay − best in the objective's unit (positive: best is better)
    notes: tuple[str, ...] = field(default_factory=tuple)
    changes: tuple[str, ...] = ()  # what a switch changes (cotune.solver.CHANGES)
    nearest: Any = None  # Choice | None: least-missing configuration when infeasible
    lr_rule: str = "sqrt"
    lr_scale: float | None = None  # learning-rate factor of a switch that changes the batch
    forecast: Any = None  # CurveForecast | None: the job's own curve at its batch
    epochs_done: float | None = None
    spent: float = 0.0
    budget_left: float | None = None
    job: str | None = None
    priced: bool = True  # costs in USD; False: worker-hours (no prices, no cluster file)
    # What makes the answer deployable on its own (cotune k8s --answer): the workload, the
    # target, the intervals' level and the hosts' size the plan of a switch is laid out on.
    workload: str | None = None
    target: float | None = None
    interval: float | None = None
    gpus_per_host: int | None = None
    gpus: tuple[str, ...] = ()  # the GPU types the re-plan weighed (its space)
    # best's revocation details when it runs on spot or mixed servers (recommend's ``spot``
    # block, same keys): its checkpoint interval is what its time and cost assume.
    spot: Mapping[str, Any] | None = None

    @property
    def ahead(self) -> bool:
        return self.progress_fraction >= self.schedule_fraction

    def __repr__(self) -> str:
        # The generated repr dumped both options' every field (2 kB); the decision and the two
        # configurations it chose between instead (to_dict() is the whole answer).
        def brief(c: Any) -> str:
            if c is None:
                return "none"
            p = getattr(c, "p_success", None)
            return (f"{c.workers} x {c.gpu} {c.market}, local batch {c.local_batch}: {c.time_s:.4g} s, cost {c.cost:.4g}"
                    + ("" if p is None else f", P(success) {format_chance(p, digits=3)}"))

        return (f"ReplanResult({self.decision!r}: {self.reason}; stay {brief(self.stay)}; best {brief(self.best)}"
                + ("" if self.nearest is None else f"; nearest {brief(self.nearest)}") + ")")

    @property
    def chosen(self) -> Choice | None:
        """The configuration to run: ``best`` on a switch, ``stay`` on a stay, None when infeasible."""
        return self.best if self.decision == "switch" else self.stay if self.decision == "stay" else None

    @property
    def plan(self) -> Plan | None:
        """The deployable plan of a switch (hosts packed as the solver packs them; one size:
        a re-plan answers for one configuration), else None: nothing new to submit."""
        from cotune.solver import balanced_hosts

        best = self.best
        if self.decision != "switch" or best is None or self.gpus_per_host is None:
            return None
        return Plan(gpu=best.gpu, market=best.market, local_batch=int(best.local_batch), workers=int(best.workers),
                    hosts=int(best.hosts), gpus_per_host=int(self.gpus_per_host),
                    workers_per_host=balanced_hosts(workers=int(best.workers), hosts=int(best.hosts)),
                    min_workers=int(best.workers), max_workers=int(best.workers),
                    accum_steps=int(getattr(best, "accum_steps", 1)))

    def to_dict(self) -> dict[str, Any]:
        """The re-plan document (``docs/schema/replan-response.v1.json``), what every door answers."""
        from cotune.solver import RESULT_SCHEMA_VERSION

        num = lambda x: None if x is None or not math.isfinite(x) else float(x)  # noqa: E731
        return {
            "schema_version": RESULT_SCHEMA_VERSION,
            "decision": self.decision,
            "reason": self.reason,
            "progress_fraction": num(self.progress_fraction),
            "schedule_fraction": num(self.schedule_fraction),
            "ahead_of_schedule": self.ahead,
            "remaining_deadline_s": num(self.remaining_deadline_s),
            "restart_s": num(self.restart_s),
            "margin": self.margin,
            "objective": self.objective,
            "confidence": self.confidence,
            "gain": num(self.gain),
            "stay": None if self.stay is None else self.stay.to_dict(),
            "best": None if self.best is None else self.best.to_dict(),
            "notes": list(self.notes),
            "changes": list(self.changes),
            "nearest": None if self.nearest is None else self.nearest.to_dict(),
            "lr_rule": self.lr_rule,
            "lr_scale": num(self.lr_scale),
            "forecast": None if self.forecast is None else self.forecast.to_dict(),
            "epochs_done": num(self.epochs_done),
            "spent": float(self.spent),
            "budget_left": num(self.budget_left),
            "job": self.job,
            "cost_unit": "USD" if self.priced else "worker_hours",
            "workload": self.workload,
            "target": num(self.target),
            "interval": self.interval,
            "plan": None if self.plan is None else self.plan.to_dict(),
            "gpus": list(self.gpus),
            "spot": None if self.spot is None else dict(self.spot),
        }


def remaining_fraction(models: FittedModels, *, global_batch: int, epochs_done: float, target: float) -> float:
    """``1 − φ`` with ``φ = epochs_done / E(global_batch)`` clipped to ``[0, 1]`` (the model's
    median epochs given the target is reached; a job's own curve refines it in ``replan``)."""
    pred = models.predict_epochs(np.array([float(global_batch)]), target)
    need = float(np.asarray(getattr(pred, "epochs_if_reached", pred.epochs), float)[0])
    if not math.isfinite(need):
        raise InputError(
            f"the accuracy model predicts that global batch {global_batch} never reaches the target {target:g}, "
            "so progress toward it is undefined: check --current and --target"
        )
    return float(min(max(1.0 - epochs_done / need, 0.0), 1.0))


def _schedule(n: int, schedule: tuple[float, float] | None) -> dict[str, np.ndarray | None]:
    """``remaining_work``'s schedule keywords for ``n`` options: ``schedule`` is ``(M, H)``, the
    job's schedule end and the horizon of the runs behind its reach probabilities (None: no
    known end)."""
    if schedule is None:
        return {"max_epochs": None, "horizon_epochs": None}
    return {"max_epochs": np.full(n, float(schedule[0])), "horizon_epochs": np.full(n, float(schedule[1]))}


def _remaining_estimates(raw, o, *, startup_s: float, remaining_s: float, confidence: float, interval: float,
                         schedule: tuple[float, float] | None = None, budget_left: float | None = None):
    """Estimates of the *remaining* work of every option, on-demand (``raw``: the whole job's,
    no start-up): epochs, time and cost are the conditional median given the target is reached
    (:func:`cotune.solver.remaining_work` on the outlook ``o``), the interval its central
    ``interval`` quantiles, the time at confidence the time by which ``P(success)`` reaches it;
    with ``budget_left``, ``P(success)`` counts it too (the time each option spends it).
    ``schedule``: ``(M, H)`` of :func:`_schedule`, at every batch (None: no known end)."""
    from cotune.solver import remaining_work, spend_time_s

    n = len(raw.candidates)
    sigma = np.sqrt(np.asarray(o.log_sigma, float) ** 2 + np.asarray(raw.step_log_sigma, float) ** 2)
    rate = raw.candidates.workers * raw.price_per_hour / 3600.0
    common = dict(log_sigma=sigma, done_epochs=o.done_epochs, epoch_time_s=raw.epoch_time_s,
                  restart_s=np.full(n, float(startup_s)), rate_per_s=rate, **_schedule(n, schedule))
    rw = remaining_work(epochs=o.epochs, p_reach=o.p_reach, remaining_s=remaining_s, confidence=confidence,
                        budget_end_s=spend_time_s(budget_left, rate), interval=interval, **common)
    # Given reached (by the schedule's end), no deadline: the central interval of the remaining time.
    lo, hi = rw.time_interval_s
    tau = np.asarray(raw.epoch_time_s, float)
    with np.errstate(invalid="ignore"):
        e_lo, e_hi = (lo - startup_s) / tau, (hi - startup_s) / tau
    return replace(
        raw, epochs=rw.epochs, epochs_lower=e_lo, epochs_upper=e_hi, time_s=rw.time_s, time_lower_s=lo, time_upper_s=hi,
        time_at_confidence_s=rw.time_at_confidence_s, cost=rw.cost, cost_lower=rate * lo, cost_upper=rate * hi,
        p_reach=rw.p_reach, log_sigma_time=sigma, p_success=rw.p_success, time_if_reached_s=rw.time_s,
        log_sigma_success=None, revocation_law_s=None,
    )


def _spot_success(est, o, *, startup_s: float, remaining_s: float | None, schedule: tuple[float, float] | None = None,
                  budget_left: float | None = None):
    """``P(success)`` after the spot stage, of the remaining work; on-demand rows keep theirs.

    A spot row with a revocation law (``revocation_law_s``: the checkpointed work ``W_c`` and
    the revocations' delay as equally likely values ``d_i``) is the mixture
    ``mean_i P_rw(τ·W_c/W, R − d_i)``: the remaining work (:func:`cotune.solver.remaining_work`,
    conditioned on the target not reached yet) at the epoch time its checkpoints stretch, by
    an end ``R`` (the deadline left, or where it comes first the time the budget left is
    spent) shortened by the delay — ``recommend``'s law, so a spot option's chance is never
    above its on-demand twin's. Mixed rows (and spot rows without a law) stretch the epoch
    time to the revocation-aware time and add the revocation-count variance to the spread
    (their on-demand fallback bounds the revocations' effect)."""
    from cotune.solver import cost_rate_per_s, remaining_work, spend_time_s

    c = est.candidates
    n = len(c)
    moved = ~c.in_market("on_demand")
    if not moved.any():
        return est
    tau = np.asarray(est.epoch_time_s, float)
    work = np.asarray(est.epochs, float) * tau
    sig_t = np.asarray(est.log_sigma_time, float)
    end = np.full(n, np.inf if remaining_s is None else float(remaining_s))
    by_budget = spend_time_s(budget_left, cost_rate_per_s(est))
    if by_budget is not None:
        end = np.minimum(end, np.nan_to_num(by_budget, nan=0.0))
    rest = dict(restart_s=np.full(n, float(startup_s)), rate_per_s=np.zeros(n), remaining_s=None, **_schedule(n, schedule))
    p = np.asarray(est.p_success, float).copy()

    law = _revocation_law(est, moved & np.isfinite(work) & (work > 0))
    if law is not None:
        rows, w_c, delay = law
        stretched = tau[rows] * w_c / work[rows]
        p[rows] = _mixture_success(o, rows, delay, epoch_time_s=stretched, sigma=sig_t[rows], end_s=end[rows],
                                   startup_s=startup_s, schedule=schedule)
    old = moved.copy()
    if law is not None:
        old[law[0]] = False
    if old.any():
        with np.errstate(invalid="ignore", divide="ignore"):
            stretch = np.where(old & (work > 0), (np.asarray(est.time_s, float) - startup_s) / work, 1.0)
        stretch = np.where(np.isfinite(stretch) & (stretch > 0), stretch, 1.0)
        extra = np.zeros(n) if est.log_sigma_success is None else np.maximum(
            np.asarray(est.log_sigma_success, float) ** 2 - sig_t**2, 0.0)
        sigma = np.sqrt(sig_t**2 + np.where(old, extra, 0.0))
        rw = remaining_work(epochs=o.epochs, log_sigma=sigma, p_reach=o.p_reach, done_epochs=o.done_epochs,
                            epoch_time_s=tau * stretch, budget_end_s=end, **rest)
        p = np.where(old, rw.p_success, p)
    return replace(est, p_success=p)


# Rows × delay values evaluated at once by the spot mixture: bounds its temporaries (about
# thirty float arrays of this length) to a few tens of MB whatever the space.
_MIXTURE_BLOCK = 1 << 16


def _revocation_law(est, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(rows, W_c, delays)`` of the ``rows`` whose revocation law is complete (the rule
    ``recommend``'s mixture reads rows by), or None."""
    from cotune.solver._estimate import _revocation_rows

    ok = rows & _revocation_rows(est)
    if not ok.any():
        return None
    idx = np.flatnonzero(ok)
    law = np.asarray(est.revocation_law_s, float)
    return idx, law[idx, 0], law[idx, 1:]


def _mixture_success(o, rows: np.ndarray, delay: np.ndarray, *, epoch_time_s: np.ndarray, sigma: np.ndarray,
                     end_s: np.ndarray, startup_s: float, schedule: tuple[float, float] | None) -> np.ndarray:
    """The mean over each row's delay values ``d_i`` of the remaining work's ``P(success)``
    by ``end_s − d_i`` (:func:`_spot_success`), in blocks of :data:`_MIXTURE_BLOCK`."""
    from cotune.solver import remaining_work

    k, m = delay.shape
    out = np.empty(k)
    per = max(1, _MIXTURE_BLOCK // m)
    for a in range(0, k, per):
        r = slice(a, min(a + per, k))
        cnt = r.stop - r.start
        pick = np.repeat(rows[r], m)
        rep = lambda v: np.repeat(np.asarray(v, float)[r], m)  # noqa: E731
        size = cnt * m
        rw = remaining_work(
            epochs=np.asarray(o.epochs, float)[pick], log_sigma=rep(sigma), p_reach=np.asarray(o.p_reach, float)[pick],
            done_epochs=np.asarray(o.done_epochs, float)[pick], epoch_time_s=rep(epoch_time_s),
            restart_s=np.full(size, float(startup_s)), rate_per_s=np.zeros(size), remaining_s=None,
            budget_end_s=(np.repeat(np.asarray(end_s, float)[r], m) - delay[r].ravel()), **_schedule(size, schedule),
        )
        out[r] = rw.p_success.reshape(cnt, m).mean(axis=1)
    return out


def _micro_batch(profile: Any, job: Any, progress: Progress) -> int:
    """The samples per worker per micro-step the job runs: its last tracked step's, when it
    accumulates where the progress says it runs; else the progress's local batch."""
    if profile is not None and job is not None:
        own = [s for s in profile.steps if s.job == job.job]
        last = own[-1] if own else None
        # its last step's micro-batch, unless the progress given says it runs elsewhere now
        if last is not None and (last.gpu, last.local_batch * last.accum_steps) == (progress.gpu, progress.local_batch):
            return last.local_batch
    return progress.local_batch


def _out_of_memory_at(profile: Any, job: Any, progress: Progress) -> int | None:
    """The local batch at which the job ran out of memory where it runs — the one the
    progress reports (``out_of_memory``), else the smallest out-of-memory on its GPU type at
    or below its micro-batch that no later step superseded
    (:func:`cotune.profile.oom_superseded`) — or None."""
    micro = _micro_batch(profile, job, progress)
    if progress.out_of_memory:
        return micro
    if profile is None:
        return None
    cap = profile.max_local_batch(progress.gpu)
    return None if cap is None or micro <= cap else cap + 1


def _out_of_memory_source(profile: Any, progress: Progress, oom_at: int) -> str:
    """Where the out-of-memory a note cites comes from: the re-plan's own report, or the
    profile's failure record — "after its steps there" only where steps ran at that batch
    (a record alone read as if the job had run there)."""
    if progress.out_of_memory:
        return "as the re-plan reports"
    ran = profile is not None and any(s.gpu == progress.gpu and s.local_batch == oom_at for s in profile.steps)
    return "a failure record after its steps there" if ran else "a failure record in the profile"


def _stay_candidates(space_gpus: tuple[str, ...], progress: Progress, gpus_per_host: Mapping[str, int]):
    return _config_candidates(space_gpus, gpu=progress.gpu, workers=progress.workers_now, local_batch=progress.local_batch,
                              gpus_per_host=gpus_per_host[progress.gpu])


def _config_candidates(space_gpus: tuple[str, ...], *, gpu: str, workers: int, local_batch: int, gpus_per_host: int):
    """One configuration on both markets (rows on_demand, spot), packed on the fewest hosts."""
    from cotune.solver import Candidates

    gi = space_gpus.index(gpu)
    h = -(-workers // gpus_per_host)
    one = lambda v: np.array([v, v], dtype=np.int64)  # noqa: E731
    return Candidates(
        gpus=space_gpus, markets=("on_demand", "spot"), gpu=np.array([gi, gi], dtype=np.int32),
        market=np.array([0, 1], dtype=np.int32), workers=one(workers), hosts=one(h), local_batch=one(local_batch),
    )


def _job_cost(models: Any, *, plan: Any, space_gpus: tuple[str, ...], gpus_per_host: Mapping[str, int], table: np.ndarray,
              target: float, start: Any, progress: Progress, startup_s: float, confidence: float | None,
              deadline_s: float) -> float:
    """The models' cost of the whole job at the configuration it started at (``start``, a
    step record; None: the one it runs), on its market, priced as ``recommend`` prices it:
    the spot stage (``plan``) on the whole job's deadline, so spot pays its revocations and
    mixed its simulated on-demand share. ∞ off the profiled GPU types or an unpriced market."""
    from cotune.solver import Candidates, estimate
    from cotune.spot._market import PLAN_MARKETS

    gpu, workers, local_batch, market = (
        (progress.gpu, progress.workers_now, progress.local_batch, progress.market) if start is None
        else (start.gpu, start.workers, start.local_batch * start.accum_steps, start.market)
    )
    if gpu not in space_gpus or gpu not in models.time_models or workers < 1 or market not in PLAN_MARKETS:
        return math.inf
    two = _config_candidates(space_gpus, gpu=gpu, workers=workers, local_batch=local_batch,
                             gpus_per_host=gpus_per_host[gpu])
    # The configuration on every market, its spot twin copied as the mixed row (as the spot
    # stage's candidates are), without the cluster's availability cut: what the job started
    # on is priced even where the cluster offers fewer servers now. Priced at the spot price
    # on-demand time and all, the redo of a mixed or spot job was underpriced by half or more.
    three = Candidates(gpus=two.gpus, markets=PLAN_MARKETS, gpu=np.append(two.gpu, two.gpu[1]),
                       market=np.arange(3, dtype=two.market.dtype), workers=np.append(two.workers, two.workers[1]),
                       hosts=np.append(two.hosts, two.hosts[1]), local_batch=np.append(two.local_batch, two.local_batch[1]))
    est = estimate(three, models, target=target, price_per_hour=table, startup_s=startup_s, confidence=confidence)
    adj, _ = plan.adjust(est, startup_s=startup_s, confidence=confidence, deadline_s=deadline_s,
                         every_mixed=market == "mixed")
    rows = np.flatnonzero(adj.candidates.in_market(market))
    cost = float(adj.cost[rows[0]]) if rows.size else math.inf  # a mixed row it could not simulate: none
    return cost if math.isfinite(cost) else math.inf  # unpriced market: no redo counted


def _cost_at_q(choice: Any) -> float:
    """What an option costs by its time at the confidence (its rate times that time): the
    budget left at which its ``P(success)`` reaches the confidence — its median cost, quoted
    at ``--confidence 0.9``, was a raise after which the re-plan asked for a second one."""
    t, t_q = choice.time_s, choice.time_at_confidence_s
    if not (math.isfinite(t) and t > 0 and math.isfinite(t_q)):
        return float(choice.cost)
    return float(choice.cost) * t_q / t


def _nearest_without_chance(est: Any, mask: np.ndarray, *, stay: Any, remaining_s: float, budget_left: float | None,
                            target: float, margin: float) -> Any:
    """The option to name when every ``P(success)`` is 0 — the budget is spent, or the
    deadline has passed (``remaining_s`` 0: no option meets it) — so no chance tells the
    options apart: the cheapest, by its median cost, whose time at the confidence meets the
    remaining deadline (staying on a tie); else the fastest at the confidence whose cost at
    the confidence (:func:`_cost_at_q`) fits the budget left; else the fastest at the
    confidence — staying, without a restart, unless that option saves more than ``margin``
    of staying's time at the confidence (the switching margin, on time); else the likeliest
    to reach the target at all — staying unless that one's chance is more than
    :data:`~cotune.solver.P_MARGIN` higher; None when no option has a finite cost. Its cost is what
    going on needs on top of the money spent; its time at the confidence, what it needs of
    the deadline. (With the budget spent no option fits it, so that step names nothing
    there.)"""
    from cotune.solver import P_MARGIN, choice_at

    t_q = np.where(mask, np.asarray(est.time_at_confidence_s, float), np.inf)
    cost = np.where(mask, np.asarray(est.cost, float), np.inf)
    t = np.asarray(est.time_s, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        # _cost_at_q of every row: its cost scaled from its median time to its time at the confidence.
        cost_q = np.where(np.isfinite(t) & (t > 0) & np.isfinite(t_q), cost * t_q / np.where(t > 0, t, 1.0), cost)
    priced = np.isfinite(cost)
    in_time, timed = priced & (t_q <= remaining_s), priced & np.isfinite(t_q)
    fits = timed if budget_left is None else timed & (cost_q <= budget_left)
    if in_time.any():
        i: int | None = int(np.argmin(np.where(in_time, cost, np.inf)))
    elif fits.any():
        i = int(np.argmin(np.where(fits, t_q, np.inf)))
    elif timed.any():
        i = int(np.argmin(np.where(timed, t_q, np.inf)))
    elif priced.any():
        i = int(np.argmax(np.where(priced, np.nan_to_num(np.asarray(est.p_reach, float), nan=0.0), -np.inf)))
    else:
        i = None
    # Staying first: min and max keep the first of equals, so a tie goes to no restart.
    pool = ([] if stay is None or not math.isfinite(stay.cost) else [stay]) + (
        [] if i is None else [choice_at(est, i, target)])
    in_time_pool = [c for c in pool if c.time_at_confidence_s <= remaining_s]
    if in_time_pool:
        return min(in_time_pool, key=lambda c: c.cost)
    timed_pool = [c for c in pool if math.isfinite(c.time_at_confidence_s)]
    fits_pool = [c for c in timed_pool if budget_left is None or _cost_at_q(c) <= budget_left]
    if fits_pool or timed_pool:
        fastest = min(fits_pool or timed_pool, key=lambda c: c.time_at_confidence_s)
        # A restart for a few percent of the time left is churn: the switching margin, on time
        # (as with objective "time"), keeps the job where it is.
        if any(c is stay for c in fits_pool or timed_pool) and (
                stay.time_at_confidence_s - fastest.time_at_confidence_s <= margin * stay.time_at_confidence_s):
            return stay
        return fastest
    likeliest = max(pool, key=lambda c: c.p_reach, default=None)
    # No option reaches the target with the confidence at all: a restart for a chance of it a
    # few points better is churn too (the probability rule's margin, as for a switch).
    if likeliest is not None and stay in pool and likeliest.p_reach - stay.p_reach <= P_MARGIN:
        return stay
    return likeliest


def _as_replan_request(profile: Any, progress: Any, question: dict[str, Any]) -> ReplanRequest:
    if isinstance(profile, ReplanRequest):
        if progress is not None or question:
            raise InputError("replan(ReplanRequest) takes no other arguments: put them in the request")
        return profile
    # An unknown keyword is named beside replan's own list: recommend's named workers and top,
    # which replan refuses (the request's fields go on, for ReplanRequest's reason why), and left
    # out progress and the switching rule.
    refuse_unknown_keywords({k: v for k, v in question.items() if k not in FIELD_NAMES}, known=REPLAN_KEYWORDS)
    rule = {k: question.pop(k) for k in REPLAN_RULE_FIELDS if k in question}
    # A RecommendRequest holds the target: replan(request, progress=...) is the question and its progress.
    if "target" not in question and not isinstance(profile, RecommendRequest):
        raise InputError("replan() needs target=: the metric the job trains to")
    request = request_from_call(profile, question)
    if progress is None or isinstance(progress, Mapping):
        from cotune.track import progress_from_records

        loaded = request.load_profile()
        request = request.replace(profile=loaded)  # read once
        progress = progress_from_records(loaded, job=rule.get("job"), default_market=request.implied_market,
                                         target=request.target, **dict(progress or {}))
    return ReplanRequest(request=request, progress=progress, **rule)


def _infeasible_levers(
    est: Any, mask: np.ndarray, *, space: Any, remaining_s: float, deadline_s: float, spent: float,
    budget_left: float | None, confidence: float, priced: bool,
) -> tuple[bool, list[str]]:
    """Whether some option finishes within the remaining deadline at the confidence, and
    what would make a re-plan feasible, each lever only where it would help (as
    ``recommend``'s hints). When no option finishes within the remaining deadline at the
    confidence: the deadline the fastest option needs — the fastest within the budget left
    where one is, else the fastest, with the budget its cost needs — and more workers when
    that option uses every worker the space allows. When some option does (the budget is
    what binds): the budget the cheapest of them needs. Always: the confidence. ``est``
    holds the remaining work's estimates, times counted from now; money at the confidence
    (:func:`cotune.solver.cost_at_confidence`), spent money added back."""
    from cotune.solver import cost_at_confidence
    from cotune.units import format_money_at_least

    t_q = np.where(mask, np.asarray(est.time_at_confidence_s, float), np.inf)
    cost_q = cost_at_confidence(est)
    finite = np.isfinite(t_q)
    affordable = finite if budget_left is None else finite & (cost_q <= budget_left)
    in_time = t_q <= remaining_s
    at_q = f"at confidence {confidence:g}"
    out: list[str] = []
    if in_time.any():
        need_left = float(np.min(np.where(in_time, cost_q, np.inf)))
        if budget_left is not None and need_left > budget_left:
            out.append(f"raise the budget (--budget / budget) to at least {format_money_at_least(spent + need_left, priced=priced)} "
                       f"(the spent money plus the lowest cost {at_q} of an option that meets the deadline)")
    elif finite.any():
        pool = affordable if affordable.any() else finite
        i = int(np.argmin(np.where(pool, t_q, np.inf)))
        needed = deadline_s - remaining_s + float(t_q[i])
        who = "the fastest option within the budget left" if budget_left is not None and affordable.any() else "the fastest option"
        text = (f"relax the deadline (--deadline / deadline_s) to at least {format_duration_at_least(needed)} from the "
                f"job's start ({who} needs it {at_q})")
        if not affordable[i]:
            text += (f", and the budget (--budget / budget) to at least "
                     f"{format_money_at_least(spent + float(cost_q[i]), priced=priced)}, with its cost")
        out.append(text)
        c = est.candidates
        if c.workers[i] >= space.max_workers[c.gpus[c.gpu[i]]]:
            out.append(f"allow more than {count_of(c.workers[i], 'worker')} (--max-workers / max_workers): {who} uses them all")
    else:
        return False, _unreachable_levers(est, mask, confidence=confidence)
    out.append(f"lower the confidence (--confidence / confidence, now {confidence:g})")
    return bool(in_time.any()), out


def _unreachable_levers(est: Any, mask: np.ndarray, *, confidence: float) -> list[str]:
    """The levers when no option's chance of reaching the target at all (within its
    schedule) comes to the confidence: no deadline or budget is enough, only a lower
    confidence or target."""
    reach = np.where(mask, np.nan_to_num(np.asarray(est.p_reach, float), nan=0.0), 0.0)
    best = float(np.max(reach)) if reach.size else 0.0
    out = [f"no deadline is enough: no option reaches the target with probability {confidence:g} at all (the "
           f"likeliest reaches it with {best:.3f}); lower the target (--target / target)"]
    cap = math.floor(best * 100.0 - 1e-9) / 100.0  # a q strictly under the best chance, as written
    if cap > 0.0:
        out.append(f"lower the confidence (--confidence / confidence, now {confidence:g}) to at most {cap:.2f}")
    return out


def _late_levers(
    nearest: Any, est: Any, mask: np.ndarray, *, space: Any, elapsed_s: float, spent: float, budget_left: float | None,
    confidence: float, priced: bool,
) -> list[str]:
    """What would let a job past its deadline finish, each lever for ``nearest`` (the option
    :func:`_nearest_without_chance` names, the one the job would go on with): the deadline,
    counted from the job's start, that it needs at the confidence (the time used plus its
    time at the confidence, rounded up), with the budget its cost at the confidence needs
    where the budget left is short of it; more workers where it uses every worker allowed;
    and the confidence. Where it has no finite time at the confidence, no option reaches
    the target with that probability at all and no deadline is enough."""
    from cotune.units import format_money_at_least

    if nearest is None or not math.isfinite(nearest.time_at_confidence_s):
        return _unreachable_levers(est, mask, confidence=confidence)
    at_q = f"at confidence {confidence:g}"
    needed = elapsed_s + float(nearest.time_at_confidence_s)
    text = (f"relax the deadline (--deadline / deadline_s) to at least {format_duration_at_least(needed)} from the job's "
            f"start (the nearest needs it {at_q})")
    cost_q = _cost_at_q(nearest)
    if budget_left is not None and cost_q > budget_left:
        text += (f", and the budget (--budget / budget) to at least {format_money_at_least(spent + cost_q, priced=priced)}, "
                 "with its cost")
    out = [text]
    if nearest.workers >= space.max_workers.get(nearest.gpu, math.inf):
        out.append(f"allow more than {count_of(nearest.workers, 'worker')} (--max-workers / max_workers): the nearest "
                   "uses them all")
    out.append(f"lower the confidence (--confidence / confidence, now {confidence:g})")
    return out


def replan(
    profile: Any = None,
    /,
    *,
    progress: Progress | Mapping[str, Any] | None = None,
    models: Any = None,
    **question: Any,
) -> ReplanResult:
    """Best configuration for the remaining work of a running job (see the module doc).

    Call it with a :class:`~cotune.ReplanRequest`, or with a profile and keywords: the
    job's question (``target``, ``deadline_s`` counted from the job's start, ``cluster``,
    ``confidence``, ``objective``, ``max_workers`` — default 64 —, ``gpus_per_host``,
    ``gpus``, ``local_batches``, ``interval``…, as for ``recommend``), ``progress``, and
    the switching rule: ``margin``, ``restart_s`` and ``prices`` (new prices that override
    the cluster file: ``"t4"`` or ``"t4:on_demand"`` for on-demand, ``"t4:spot"``),
    ``lr_rule`` and ``job``. ``progress`` may be left out (or given in part, as a mapping)
    when the profile holds the job's tracked records: the rest comes from them.
    """
    from cotune.models import fit_models
    from cotune.solver import (
        DEFAULT_CONFIDENCE, MAX_BACKOFF_MARGIN, P_MARGIN, backoff_margin, build_space, changes_between, choice_at,
        entry_threshold, enumerate_candidates, estimate, finish_first, frame_outlook, job_frame, job_outlook, lr_scale,
        miss_cost, ranked, schedule_left_s,
    )
    from cotune.spot._market import SpotMarket, cluster_of
    from cotune.track import job_progress, planning_profile
    from cotune.track._progress import COLLAPSE_SHARE

    from cotune.models._fitted import check_fitted, check_workload

    rr = _as_replan_request(profile, progress, question)
    req, progress = rr.request, rr.progress
    models = check_fitted(models, interval=req.interval)
    target, deadline_s, confidence, objective = req.target, req.deadline_s, req.confidence, req.objective
    assert deadline_s is not None
    margin, restart_s = rr.margin, rr.restart_s
    remaining_s = rr.remaining_s  # 0 past the deadline: every P(success) by it is then 0
    overdue_s = rr.overdue_s  # None while time is left
    # Models given and no profile (a caller that fitted them itself): no tracked records to read.
    loaded = None if (models is not None and req.profile is None) else req.load_profile()
    # progress is the caller's or was read from these records (and checked there): its
    # configuration stands, whatever the records' last step says.
    if models is not None and loaded is not None:
        check_workload(models, loaded)
    job = None if loaded is None else job_progress(loaded, job=rr.job, target=target, check_configuration=False)
    if models is None:
        models = fit_models(planning_profile(loaded), interval=req.interval)
    if progress.out_of_memory:
        # An out-of-memory the profile does not hold: the same cap a failure record gives,
        # on the models' copy only (the profile and the fit cache stay as measured).
        micro = _micro_batch(loaded, job, progress)
        held = models.max_local_batch.get(progress.gpu)
        cap = micro - 1 if held is None else min(held, micro - 1)
        # Out of memory at a micro-batch of 1: no batch fits on this GPU type (the search
        # leaves it out, as a failure record at batch 1 does). It was refused with "re-plan
        # with another gpu", which is what the answer itself should do.
        cap = max(cap, 0)
        models = replace(models, max_local_batch={**models.max_local_batch, progress.gpu: cap})
    unsearched = req.check_cap_names(models.gpus)
    # Each error points at the value it is about (HTTP answered "path": null).
    if progress.gpu not in models.gpus:  # before any cluster lookup: the profile is what lacks it
        raise BadValue(f"current gpu {progress.gpu!r} has no timing probes in this profile: profiled gpus are "
                       f"{', '.join(models.gpus)}: probe it, or give the gpu the job runs on", where="/progress/gpu")
    # Checked in this order, the second can fail only by the workers added since the start:
    # its pointer names that field (it named /progress/workers, which was within bounds).
    for label, workers, where in (("runs", progress.workers, "/progress/workers"),
                                  ("runs now", progress.workers_now, "/progress/workers_added")):
        if workers * progress.local_batch > models.dataset_size:
            # A step holds at most every training sample once (the profiler's rule too).
            raise BadValue(f"the job {label} {workers} × {progress.local_batch} = {workers * progress.local_batch:,} "
                           f"samples a step, more than the profile's {models.dataset_size:,} training samples: "
                           "check the current configuration (workers, local batch; workers added)",
                           where=where)
    priced = True  # a cluster file states its prices
    if req.cluster is None:
        cl, priced = _on_demand_cluster(models, req, rr.prices)
        if restart_s is None and req.startup_s > 0:  # no cluster file to read checkpoint costs from: the start-up
            restart_s = req.startup_s
    else:
        cl = cluster_of(req.cluster)
    unpriced: list[str] = []
    for key, value in (rr.prices or {}).items():
        gpu, _, market = key.lower().partition(":")
        market = market or "on_demand"
        at = "/prices/" + pointer_key(key)
        if market not in ("on_demand", "spot"):
            raise BadValue(f"new price key {key!r}: use GPU (on-demand), GPU:on_demand or GPU:spot", where=at)
        if req.cluster is None and gpu not in cl.gpus:
            unpriced.append(gpu)  # a type the profile has no probes for: unused, and said so
            continue
        if gpu not in cl.gpus:
            raise BadValue(f"gpu {excerpt(gpu)} is not in the cluster file (it lists {', '.join(cl.gpus)}): price only "
                           f"what it offers, or add a [gpu.{gpu}] table to it", where=at)
        field_name = "spot_price_per_hour" if market == "spot" else "on_demand_price_per_hour"
        cl = cl.with_offer(gpu, **{field_name: float(value)})
    if req.cluster is None and progress.gpu not in cl.gpus:  # profiled (checked above): --gpu leaves it out
        raise BadValue(f"current gpu {progress.gpu!r} is not among the gpus asked for ({', '.join(cl.gpus)}), so "
                       "staying cannot be weighed: add it to --gpu (gpus), or drop --gpu", where="/progress/gpu")
    if progress.gpu not in cl.gpus:
        # A cluster file that does not offer it: named, with the table to add, and pointing at
        # the cluster (over HTTP the error's path was null, "/cluster:" only inside the text).
        # An inline cluster (source "/cluster" over HTTP, "cluster" from Python) has no file to name.
        what = "the cluster" if cl.source in ("/cluster", "cluster") else f"the cluster file {cl.source}"
        raise BadValue(f"gpu {excerpt(progress.gpu)}, which the job runs on, is not in {what} (it lists "
                       f"{', '.join(cl.gpus)}): add a [gpu.{progress.gpu}] table, or give the gpu the job runs on",
                       where="/cluster")

    notes: list[str] = [] if loaded is None else list(loaded.warnings)  # e.g. a torn last line a kill left, as recommend says
    if unpriced:
        unsearched.append(unsearched_note(unpriced, models.gpus, named_in="the prices"))
    notes += unsearched
    returns = 0 if job is None else job.returns
    p_margin = backoff_margin(P_MARGIN, returns=returns)
    if returns:
        backed = backoff_margin(margin, returns=returns)
        notes.append(f"the job has moved back to a configuration it had left by choice {returns} time(s): a switch must save more "
                     f"than {backed:.0%} (the {margin:.0%} margin doubled each time, at most {MAX_BACKOFF_MARGIN:.0%}) "
                     f"and a better chance must beat staying's by {p_margin:.2f}")
        margin = backed
    if job is not None and rr.job is None and len(job.jobs) > 1:  # the default pick (the last tracked) is a guess
        notes.append(f"the profile holds the records of jobs {', '.join(map(repr, job.jobs))}: re-planned {job.job!r}, "
                     "the last tracked; pass --job (job=) to choose")
    goal = models.accuracy.goal if loaded is None else loaded.workload.goal
    # The job counts its epochs from its start, across changes of batch; at the batch it runs
    # now they are placed by the hand-over rule a switch is judged by (cotune.solver.job_frame),
    # and its curve there is pooled with the belief handed over from the batch before.
    tracked = [] if job is None or loaded is None else [e for e in loaded.evals if e.job == job.job]
    # A diverged or collapsed job (cotune.track job_setback) restarts from a checkpoint: the
    # evaluations after its best one are the collapse, not its curve (read as points of it,
    # the forecast narrowed and staying's chance rose as top-1 fell to 0.10).
    setback = None if job is None else job.setback
    if setback is not None:
        tracked = tracked[:setback.kept]  # kept counts the records as written, repeats included
    # An exact repeat is one measurement, as in the models' fit (a profile concatenated with
    # itself): read twice it doubled the curve's points and moved the forecast.
    tracked, repeats = distinct_evals(tracked)
    if repeats:
        notes.append(repeated_evals_note(dropped=repeats, total=len(tracked) + repeats, whose=f"job {job.job!r}'s evaluations"))
    frame = None if not tracked else job_frame(
        models, evals=tracked, global_batch=float(progress.global_batch), epochs_done=progress.epochs_done,
        target=target, goal=goal, interval=req.interval,
    )
    own = frame is not None and bool(frame.curve_epochs)
    curve = (frame.curve_epochs, frame.curve_metric) if (frame is not None and own) else ((), ())
    level = None if frame is None else frame.level
    epochs_here = progress.epochs_done if frame is None else frame.epochs_done
    for h in () if frame is None else frame.handovers:
        notes.append(f"the job changed global batch {h.from_batch:g} -> {h.to_batch:g} at its epoch {h.at_epoch:.3g}: "
                     f"at {h.to_batch:g} it resumed at epoch {h.epoch:.3g}, the earlier of where that batch reaches the "
                     "level already reached and the same share of the work (its epochs there count on from it)")

    def outlook(cands, *, running: bool, forecast=None):
        # The running configuration resumes where it is; after lost or added workers its
        # batch differs, and it resumes like any switch (job_outlook's hand-over).
        gb = np.asarray(cands.global_batch)
        if frame is not None:
            return frame_outlook(models, frame, global_batch=gb, running=(gb == progress.global_batch) & running,
                                 target=target, goal=goal, interval=req.interval, forecast=forecast)
        return job_outlook(
            models, global_batch=gb, target=target, goal=goal,
            running=(gb == progress.global_batch) & running, running_batch=float(progress.global_batch),
            epochs_done=epochs_here, level=level, curve_epochs=curve[0], curve_metric=curve[1],
            interval=req.interval, forecast=forecast,
        )

    here = outlook(SimpleNamespace(global_batch=np.array([progress.global_batch])), running=True)
    # The job's curve is fitted once; every later outlook reuses it. Not evaluated at its new
    # batch yet: the options are judged from the previous batch's curve, not a forecast here.
    waiting = frame is not None and frame.source is not None
    forecast = None if waiting else here.forecast
    if waiting:
        assert frame is not None and frame.source is not None
        notes.append(f"no evaluation at global batch {progress.global_batch} yet: every option is judged as just before "
                     f"the change, from the job's curve at {frame.source.global_batch:g}")
    total_here = float(here.epochs[0])
    if not (math.isfinite(total_here) and total_here > 0):
        raise InputError(
            f"the accuracy model predicts that global batch {progress.global_batch} never reaches the target {target:g}, "
            "so progress toward it is undefined: check --current and --target"
        )
    # The median of the total epochs, unconditional: a job past it without the target is
    # still short of it (the progress and the forecast note below are conditional).
    past_median = epochs_here >= total_here
    # The forecast's note states the conditional forecast, which needs the schedule and the
    # staying option: it is written at the end, here in the notes' order.
    forecast_slot = len(notes) if forecast is not None and math.isfinite(forecast.epochs_if_reached) else None
    job_factor = math.exp(here.shift)  # the job's shift from the model, as the note states it
    if forecast_slot is None and (forecast is not None or own):
        notes.append(f"the job's own curve at global batch {progress.global_batch} gives no finite forecast "
                     f"({'; '.join(forecast.notes) if forecast is not None and forecast.notes else 'it does not reach the target'}): "
                     "the accuracy model's epochs are used")
    schedule = None
    if progress.schedule_epochs is not None:
        # The reach probabilities are "within the runs they came from": the accuracy model's
        # longest measured run, or the job's own schedule if that is longer.
        runs = np.asarray(getattr(models.accuracy, "max_epochs_", []), float)
        schedule = (progress.schedule_epochs, max([progress.schedule_epochs, *runs[np.isfinite(runs)].tolist()]))
        left_e = progress.schedule_epochs - progress.epochs_done
        notes.append(f"the job's learning-rate schedule ends at epoch {progress.schedule_epochs:g} "
                     + (f"({left_e:.3g} epochs left)" if left_e > 0 else "and it has passed it: staying cannot reach the target")
                     + "; a target not reached by then is missed, at every batch")
    on_line = min(progress.elapsed_s / deadline_s, 1.0)
    ck = cl.checkpoint
    if restart_s is None:
        restart_s = (ck.write_s + ck.restart_s if ck else 0.0) + max(o.replacement_delay_s for o in cl.gpus.values())
        if restart_s <= 0.0:
            # Nothing states what a change costs, and a free one makes every small saving a move.
            restart_s = DEFAULT_RESTART_S
            notes.append(f"a change of configuration is taken to cost {format_duration(restart_s)} of the new "
                         "configuration's time (checkpoint, new workers, rendezvous, reload, warm-up), the default: "
                         "give --restart / restart_s to set it")
    budget_left = None if req.budget is None else req.budget - progress.spent

    plan = SpotMarket.from_request(req, models, cluster=cl)
    if progress.gpu not in plan.gpus:  # profiled (checked above): the cluster or --gpu leaves it out
        raise BadValue(f"current gpu {progress.gpu!r} is not among the gpus asked for ({', '.join(plan.gpus)}), so "
                         "staying cannot be weighed: add it to --gpu (gpus), or drop --gpu", where="/progress/gpu")
    oom_at = _out_of_memory_at(loaded, job, progress)

    def space_requiring(required: tuple[str, ...]) -> tuple[Any, list[str]]:
        return build_space(models, gpus=plan.gpus, max_workers=plan.max_workers, gpus_per_host=plan.gpus_per_host,
                           local_batches=req.local_batches, markets=plan.space_markets, hosts=req.hosts,
                           required_gpus=required)

    try:
        # Staying where the job runs is always weighed.
        space, space_notes = space_requiring((progress.gpu,))
    except ModelError:
        # Unless it ran out of memory there and no probed batch is left below that (an
        # out-of-memory at a micro-batch of 1, or at the smallest one probed): staying is no
        # option, and the other types are the options. Local batches the request names above
        # its memory stay the request's error (BadValue, at /local_batches).
        if oom_at is None:
            raise
        try:
            space, space_notes = space_requiring(())
        except ModelError as exc:
            left_out = [g for g in models.gpus if g not in plan.gpus]
            if not left_out:
                raise
            where = "the cluster file" if req.cluster is not None else "--gpu (gpus)"
            raise ModelError(f"{exc}; or weigh the profiled {', '.join(left_out)}: add {'it' if len(left_out) == 1 else 'them'} "
                             f"to {where}") from None
    # The GPU types the job's own configuration is priced and estimated on: the space's, or
    # the job's type alone where the space left it out.
    here_gpus = space.gpus if progress.gpu in space.gpus else (progress.gpu,)
    from cotune.solver import check_candidate_limit

    check_candidate_limit(space, limit=req.max_candidates, rows_per_candidate=plan.rows_per_candidate)
    if forecast_slot is not None:
        forecast_slot += len(space_notes) + len(plan.notes)
    notes = list(space_notes) + list(plan.notes) + notes
    table = plan.price_table(space.gpus)

    q = DEFAULT_CONFIDENCE if confidence is None else confidence
    # Progress: the epochs done over those plus the remaining epochs *given the target is not
    # reached yet* at the batch the job runs (remaining_work, the STAY row's epochs). The
    # unconditional median clipped to the epochs seen read "100 % of the work done" beside a
    # STAY row with epochs still to go, for a job past its median without the target.
    running = _running_work(models=models, outlook=outlook, space_gpus=here_gpus, progress=progress,
                            gpus_per_host=plan.gpus_per_host[progress.gpu],
                            table=table if here_gpus == space.gpus else plan.price_table(here_gpus), target=target,
                            confidence=confidence, forecast=forecast, schedule=schedule, interval=req.interval)
    if forecast is not None and forecast.reached:
        done = 1.0  # the curve has crossed the target: nothing is left
    else:
        d_here, rem_here = running.done_epochs, running.epochs_left
        done = d_here / (d_here + rem_here) if d_here > 0 and math.isfinite(rem_here) else 0.0
    left = 1.0 - done
    ahead = done >= on_line

    def evaluate(cands, startup: float, *, running: bool, every_mixed: bool = False, time_left_s: float = remaining_s,
                 money_left: float | None = budget_left):
        # The remaining work of every option as a distribution (cotune.solver.job_outlook →
        # remaining_work, the closed-loop replay's belief), then the spot stage on it.
        # ``time_left_s``/``money_left``: the remaining deadline and budget (staying's
        # fallback after its schedule asks with less of both).
        raw = estimate(cands, models, target=target, price_per_hour=table, startup_s=0.0, confidence=confidence)
        o = outlook(cands, running=running, forecast=forecast)
        rem = _remaining_estimates(raw, o, startup_s=startup, remaining_s=time_left_s, confidence=q, interval=req.interval,
                                   schedule=schedule, budget_left=money_left)
        adj, details = plan.adjust(rem, startup_s=startup, confidence=q, deadline_s=time_left_s,
                                   every_mixed=every_mixed)
        # The spot stage may drop mixed rows: the outlook of the rows it kept (no refit).
        kept = outlook(adj.candidates, running=running, forecast=forecast)
        return _spot_success(adj, kept, startup_s=startup, remaining_s=time_left_s,
                             schedule=schedule, budget_left=money_left), details

    new_cands = plan.candidates(enumerate_candidates(space, limit=req.max_candidates), mixed=True)
    est, details = evaluate(new_cands, restart_s, running=False)
    mask = np.ones(len(est.candidates), dtype=bool)
    # Every option carries the P(success) of its remaining work within the remaining
    # deadline (restart included); confidence q means P(success) ≥ q, and the decision is
    # cotune.solver.decide_replan's probability form, the rule the closed-loop replay runs.
    ok = (np.asarray(est.p_success, float) >= q) & mask
    if budget_left is not None:
        ok &= est.cost <= budget_left

    stay = None
    if progress.market in ("on_demand", "spot", "mixed") and progress.gpu in space.gpus:
        # A job running mixed is weighed as it runs, even where spot alone would now do (the
        # spot stage offers a mixed row only where the rule can matter): it read "the current
        # configuration cannot continue" and paid a restart ahead of schedule.
        s_est, _ = evaluate(plan.candidates(_stay_candidates(space.gpus, progress, plan.gpus_per_host), mixed=True), 0.0,
                            running=True, every_mixed=progress.market == "mixed")
        rows = np.flatnonzero(s_est.candidates.in_market(progress.market))
        if rows.size:
            i = int(rows[0])
            stay = choice_at(s_est, i, target)
        else:
            scope = ("in the cluster file (or, for mixed, no longer needed)" if req.cluster is not None
                     else "within the search space (max_workers, gpus_per_host, the profile's gpus)")
            notes.append(f"the current configuration ({progress.workers_now} x {progress.gpu} {progress.market}) is not "
                         f"available {scope}: staying is not an option")
    if stay is not None and setback is None:
        # Restarting the job where it runs is no alternative to staying: the same work for a
        # restart more (it was listed as BEST, "would add 13.4 % to the job's cost"). A
        # diverged or collapsed job's restart from a checkpoint is one.
        c = est.candidates
        same = (c.in_market(stay.market) & (c.gpu == c.gpus.index(stay.gpu)) & (c.workers == stay.workers)
                & (c.hosts == stay.hosts) & (c.local_batch == stay.local_batch))
        ok &= ~same
        mask &= ~same

    # Staying is no option where the job ran out of memory or lost its weights: its row stays
    # in the answer at P(success) 0, but nothing may weigh it as the nearest (the search for
    # the nearest took it as meeting the deadline and answered "nearest": null).
    stay_ruled_out = oom_at is not None or setback is not None
    if oom_at is not None and progress.gpu not in space.gpus:
        how = _out_of_memory_source(loaded, progress, oom_at)
        notes.append(f"the job ran out of memory at local batch {oom_at} on {progress.gpu} ({how}): no local batch is "
                     f"left to consider on {progress.gpu} below it; staying is not an option; every option runs on "
                     "another gpu type")
    elif oom_at is not None and stay is not None:
        # The job ran out of memory where it runs (its tracker's failure record, after its
        # steps there): it cannot go on as it was, and every option is below that batch.
        stay = replace(stay, p_success=0.0)
        how = _out_of_memory_source(loaded, progress, oom_at)
        notes.append(f"the job ran out of memory at local batch {oom_at} on {progress.gpu} ({how}): staying is not an "
                     f"option; every option runs a local batch below {oom_at}")

    if setback is not None and stay is not None:
        # The job's latest evaluation is NaN or infinite, or has lost most of its curve's rise:
        # such a run does not recover where it runs (its weights are gone), so staying cannot
        # reach the target. A NaN was read as a point that adds no progress, a collapse as a
        # plateau of the curve, and the answer said "stay" at the chance before it (or above).
        stay = replace(stay, p_success=0.0)
        if setback.kind == "diverged":
            notes.append(f"the job diverged: its latest evaluation (epoch {setback.epoch:.4g}) is not a number: staying "
                         "is not an option; every option resumes from the progress before it, epoch "
                         f"{setback.resume_epoch:.4g} (restore a checkpoint from before the divergence)")
        else:
            notes.append(f"the job collapsed: its latest evaluation (epoch {setback.epoch:.4g}, metric "
                         f"{setback.metric:.4g}) and the one before it have lost more than {COLLAPSE_SHARE:.0%} of what its curve had gained "
                         f"(from {setback.first_metric:.4g} to its best, {setback.best_metric:.4g} at epoch "
                         f"{setback.resume_epoch:.4g}): staying is not an option; every option resumes from epoch "
                         f"{setback.resume_epoch:.4g} (restore the checkpoint of its best evaluation)")

    # The straight-line (uniform-progress) rule moves a job behind the line off pure spot on
    # the premise that on-demand can catch up: only where an on-demand or mixed option (or
    # the job itself, running on one and able to go on) keeps P(success) ≥ q within the
    # budget left, as the closed-loop replay's spot controller rules. Applied regardless, a cluster with no (or
    # too little) on-demand read every option as out and answered "infeasible: lower the
    # target", or moved a job at P(success) 1.0 on spot to one on-demand server at 0.72.
    line_rule = False
    # Past the deadline the straight line has ended: no schedule is left to be behind.
    if not ahead and req.cluster is not None and overdue_s is None:
        on_spot = est.candidates.in_market("spot")
        p_all = np.asarray(est.p_success, float)
        # ... and only where that option is at least as likely to finish as the best spot one:
        # otherwise leaving spot trades a surer finish for a dearer, less likely one (a job
        # at P(success) 0.96 on spot moved to on-demand at 0.94 and 2.2 times the cost).
        spot_best = max([float(p_all[ok & on_spot].max()) if np.any(ok & on_spot) else 0.0]
                        + ([float(stay.p_success)] if stay is not None and stay.market == "spot" else []))
        catches_up = bool(np.any(ok & ~on_spot & (p_all >= spot_best))) or (
            stay is not None and stay.market != "spot" and float(stay.p_success) >= max(q, spot_best)
            and (budget_left is None or stay.cost <= budget_left))
        if catches_up:
            line_rule = True
            mask &= ~on_spot
            ok &= ~on_spot
            if stay is not None and progress.market == "spot":
                stay = replace(stay, p_success=0.0)  # the uniform-progress rule: pure spot must move
            notes.append(
                f"behind the straight-line schedule ({done:.0%} done, {on_line:.0%} of the time used): spot-only plans "
                "left out (on-demand, or mixed which starts on on-demand)"
            )
        else:
            notes.append(
                f"behind the straight-line schedule ({done:.0%} done, {on_line:.0%} of the time used), but no on-demand "
                f"or mixed option keeps P(success) {q:g}"
                + ("" if budget_left is None else " within the budget left")
                + " at a chance no lower than the best spot option's"
                + ": spot-only plans stay in (the straight-line rule assumes on-demand can catch up)"
            )

    weighed = stay  # staying as the decision weighs it: with the fallback after its schedule, where one counts
    if (stay is not None and not stay_ruled_out and schedule is not None and overdue_s is None and float(stay.p_success or 0.0) > 0.0
            and stay.global_batch == progress.global_batch and not (forecast is not None and forecast.reached)):
        # Staying runs out the learning-rate schedule first where that leaves time to move
        # after it, should the target not be reached by then (cotune.solver.finish_first, the
        # closed-loop replay's rule): a job near its schedule's end restarted elsewhere on a
        # paused curve and missed where finishing would have reached the target.
        fin_s = schedule_left_s(schedule_epochs=schedule[0], done_epochs=running.done_epochs,
                                epoch_time_s=stay.epoch_time_s)
        if 0.0 < fin_s < remaining_s and stay.p_success is not None and stay.p_reach is not None:
            fin_cost = stay.workers * stay.price_per_hour / 3600.0 * fin_s
            after, _ = evaluate(new_cands, restart_s, running=False, time_left_s=remaining_s - fin_s,
                                money_left=None if budget_left is None else budget_left - fin_cost)
            a, b = after.candidates, est.candidates
            # Row k of the fallback's estimates must be row k of the options (the mask is theirs): the
            # spot stage keeps mixed rows by the deadline, so a shorter one could keep another set.
            if len(a) == len(b) and all(np.array_equal(getattr(a, f), getattr(b, f))
                                        for f in ("gpu", "market", "workers", "hosts", "local_batch")):
                ff = finish_first(p_success=float(stay.p_success), p_reach=float(stay.p_reach), cost=float(stay.cost),
                                  finish_cost=fin_cost, global_batch=np.asarray(after.candidates.global_batch),
                                  running_batch=float(progress.global_batch),
                                  fallback_p_success=np.where(mask, np.asarray(after.p_success, float), 0.0),
                                  fallback_cost=np.asarray(after.cost, float))
                if ff.fallback is not None:
                    fb = after.candidates
                    k = ff.fallback
                    notes.append(
                        f"staying runs out the learning-rate schedule in {format_duration(fin_s)}; should the target not be "
                        f"reached by then (a chance of {format_chance(1.0 - float(stay.p_reach))}), the job can still move to "
                        f"{int(fb.workers[k])} x {fb.gpus[int(fb.gpu[k])]} {fb.markets[int(fb.market[k])]} at local batch "
                        f"{int(fb.local_batch[k])}: staying "
                        f"is weighed with that fallback, P(success) {format_chance(ff.p_success)} at an expected cost of "
                        f"{format_money(ff.cost, priced=priced)} (the STAY row shows staying alone, "
                        f"{format_chance(float(stay.p_success))})"
                    )
                    weighed = replace(stay, p_success=ff.p_success, cost=ff.cost)

    # What a miss wastes (cotune.solver.miss_cost): the money spent and the whole job redone
    # at the configuration it started at (a tracked job's first step record; else the one
    # it runs), priced as `recommend` prices it — the closed-loop replay's rule.
    start = None if job is None else job.first_step
    job_cost = _job_cost(models, plan=plan, space_gpus=space.gpus, gpus_per_host=plan.gpus_per_host, table=table,
                         target=target, start=start, progress=progress, startup_s=req.startup_s, confidence=confidence,
                         deadline_s=deadline_s)
    whole = miss_cost(spent=progress.spent, job_cost=job_cost)
    if math.isfinite(job_cost) and objective == "cost":
        where = "it runs" if start is None else (
            f"it started at ({start.workers} x {start.gpu} {start.market}, local batch {start.local_batch * start.accum_steps})")
        notes.append(f"a miss is counted as wasting {whole:.4g} {'USD' if priced else 'worker-hours'} in the risk-adjusted costs: {progress.spent:.4g} spent plus "
                     f"{job_cost:.4g}, the whole job redone at the configuration {where}")
    with np.errstate(invalid="ignore"):
        risk = np.where(np.isfinite(est.cost), est.cost + (1.0 - np.asarray(est.p_success, float)) * whole, np.inf)
    contenders = []
    keyed = replace(est, cost=risk) if objective == "cost" else est
    order = ranked(keyed, ok, objective, limit=1)
    if order.size:
        contenders.append(int(order[0]))
    # decide_replan picks among the alternatives it is handed by the entry threshold (and,
    # below q, by a chance clear of staying's): the best of each such pool must be among them.
    # Handed only the best at q, it dropped that one when under the threshold and compared
    # staying with the likeliest option — dearer — so a smaller search space switched where
    # the whole one stayed (c4: "would add 127.1%" beside a 34.9% saving in a subset).
    p_all = np.asarray(est.p_success, float)
    pools = [ok & (p_all >= entry_threshold(q, p_margin))]
    if weighed is not None:
        pools.append(ok & (p_all > float(weighed.p_success) + p_margin))
    for pool in pools:
        top = ranked(keyed, pool, objective, limit=1)
        if top.size:
            contenders.append(int(top[0]))
    affordable = np.ones(len(est.cost), dtype=bool) if budget_left is None else est.cost <= budget_left
    chance = np.where(mask & affordable & np.isfinite(est.cost), np.asarray(est.p_success, float), 0.0)
    if chance.size and chance.max() > 0.0:
        contenders.append(int(np.argmax(chance)))
    options = {i: choice_at(est, i, target) for i in dict.fromkeys(contenders)}
    best = options[int(order[0])] if order.size else None

    from cotune.solver import decide_replan

    # decide_replan weighs chances by a deadline still ahead; past it every chance is 0 and
    # the answer is infeasible, with the nearest named below.
    d = None if overdue_s is not None else decide_replan(
        stay=weighed, alternatives=list(options.values()), remaining_s=remaining_s, budget_left=budget_left,
        objective=objective, margin=margin, confidence=q, p_margin=p_margin, miss_cost=whole, spent=progress.spent,
    )
    if d is not None and weighed is not stay:
        # The rows show staying alone; the decision weighed it with its fallback (the note says so).
        d = replace(d, chosen=stay if d.chosen is weighed else d.chosen, nearest=stay if d.nearest is weighed else d.nearest,
                    compared=stay if d.compared is weighed else d.compared)
    money = lambda x: format_money(x, priced=priced)  # noqa: E731 - the answer's unit, as its table
    within = "the remaining deadline" + ("" if budget_left is None else f" and the budget left ({money(budget_left)})")
    nearest = None
    if forecast is not None and forecast.reached:
        decision, reason = "stay", (
            f"the job's curve has reached the target (crossing it at about epoch {forecast.epochs:.3g}, read between its "
            "evaluations): no work is left to re-plan (stop training)"
        )
        if stay is not None:
            # Nothing is left: the row says so (it showed the model's 0.6 epochs, 0.2 s and a cost
            # still to go beside '100% of the work done').
            stay = replace(stay, epochs=0.0, epochs_interval=(0.0, 0.0), time_s=0.0, time_interval_s=(0.0, 0.0),
                           time_at_confidence_s=0.0, cost=0.0, cost_interval=(0.0, 0.0), p_reach=1.0, p_success=1.0)
        best = None  # nothing to move to: no BEST row, no gain (it read as minus an option's cost)
    elif overdue_s is not None:
        # A late job is a normal state for a scheduler that re-plans every running job, not bad
        # input (it was refused, exit 2 / HTTP 422). Every P(success) by the passed deadline is
        # 0, so no chance tells the options apart: the nearest is the one that finishes soonest
        # at the confidence within the budget left (else the soonest; staying, without a
        # restart, unless that one saves more than the margin of its time), and what it
        # needs — the deadline from the job's start, the money — are the levers.
        nearest = _nearest_without_chance(est, mask, stay=None if stay_ruled_out else stay, remaining_s=0.0,
                                          budget_left=budget_left, target=target, margin=margin)
        levers = _late_levers(nearest, est, mask, space=space, elapsed_s=progress.elapsed_s, spent=progress.spent,
                              budget_left=budget_left, confidence=q, priced=priced)
        if progress.schedule_epochs is not None:
            levers.append("lengthen the learning-rate schedule")
        t_q = math.inf if nearest is None else float(nearest.time_at_confidence_s)
        decision, reason = "infeasible", (
            f"the deadline ({format_duration(deadline_s)} from the job's start) has passed"
            + (f" by {format_duration(overdue_s)}" if overdue_s > 0 else "")
            + f": {format_duration(progress.elapsed_s)} elapsed, {left:.0%} of the work left, and no configuration can "
            "finish by it"
            + ("" if nearest is None else
               f"; the nearest is {nearest.workers} x {nearest.gpu} {nearest.market} at local batch {nearest.local_batch}"
               + (f", which needs {format_duration(t_q)} more at confidence {q:g}" if math.isfinite(t_q) else ""))
            + ": " + ", or ".join(levers) + ", or stop the job"
        )
    elif d.decision == "infeasible":
        nearest = d.nearest
        # Each option's time at the confidence: the fastest is the nearest when nothing has a
        # real chance, and what it needs is the deadline the reason names.
        t_fast = np.where(mask & np.isfinite(est.time_at_confidence_s), est.time_at_confidence_s, np.inf)
        fastest = float(t_fast.min()) if t_fast.size else math.inf
        if nearest is None or not (nearest.p_success >= MIN_CHANCE):
            # No real chance anywhere: the nearest is the option that misses by the least.
            far = [choice_at(est, int(np.argmin(t_fast)), target)] if math.isfinite(fastest) else []
            nearest = decide_replan(
                stay=None if stay_ruled_out else stay, alternatives=far, remaining_s=remaining_s,
                budget_left=budget_left, objective=objective, margin=margin, use_confidence=confidence is not None,
            ).nearest
        if budget_left is not None and budget_left <= 0:
            # Every chance counts the budget left, so with none left each is 0 and no option
            # came out nearest ("nearest": null, nothing said of the money going on needs).
            nearest = _nearest_without_chance(est, mask, stay=None if stay_ruled_out else stay, remaining_s=remaining_s,
                                              budget_left=budget_left, target=target, margin=margin)
        at = None if nearest is None else (f"; the nearest is {nearest.workers} x {nearest.gpu} {nearest.market} at "
                                           f"local batch {nearest.local_batch}")
        # Its chance counts the budget left; where even its median cost is over it, say by how much.
        over = ("" if nearest is None or budget_left is None or not nearest.cost > budget_left else
                f", but it costs {money(nearest.cost)} against the {money(budget_left)} left")
        if budget_left is not None and budget_left <= 0:
            # Not the target's fault: the money is gone before the work is done.
            decision, reason = "infeasible", (
                f"the budget is spent ({money(progress.spent)} of {money(req.budget)}) with {left:.0%} of the work left: no "
                "configuration can finish within it"
                + ("" if at is None else f"{at}, which needs {money(_cost_at_q(nearest))} more")
                + ": raise the budget (--budget / budget) "
                + ("" if nearest is None else
                   f"to at least {format_money_at_least(progress.spent + _cost_at_q(nearest), priced=priced)} ")
                + "to go on, or stop the job"
            )
        elif past_median:
            # Past the model's whole job without the target: "the remaining 0 % of the work"
            # read as a contradiction. The models' belief, conditioned on the target not
            # reached so far, is that it will not be: say so, and what would change it.
            decision, reason = "infeasible", (
                f"the job has run {epochs_here:.4g} epochs at global batch {progress.global_batch} without reaching "
                f"the target, past the {total_here:.4g} the accuracy model expects there: the models give no "
                f"configuration a chance of {q:g} of reaching it within {within}"
                + ("" if at is None else f"{at} (P(success) {format_chance(nearest.p_success, against=q)}{over})")
                + ": if the job has reached the target, stop it; if not, "
                + ("check --epochs-done / epochs_done, or track its evaluations (cotune.track.Tracker) so the "
                   "forecast reads the job's own curve" if not own else
                   "its own curve is below the target where the model expected it reached: lower the target or "
                   "lengthen the learning-rate schedule")
            )
        else:
            in_time, levers = _infeasible_levers(est, mask, space=space, remaining_s=remaining_s, deadline_s=deadline_s,
                                                 spent=progress.spent, budget_left=budget_left, confidence=q, priced=priced)
            if progress.schedule_epochs is not None:
                levers.append("lengthen the learning-rate schedule")
            # Only the budget binds when some option finishes within the remaining deadline at
            # the confidence: the target is reachable, not affordable, and the reason says so.
            lead = ("the budget left is too small" if budget_left is not None and in_time
                    else "the target is not reachable at any configuration")
            decision, reason = "infeasible", (
                f"{lead}: none finishes the remaining {left:.0%} of the work within {within} with probability {q:g}"
                + ("" if at is None else f"{at} (P(success) {format_chance(nearest.p_success, against=q)}{over})")
                + ": " + ", or ".join(levers)
            )
    elif d.decision == "switch" and line_rule and progress.market == "spot" and stay is not None:
        best = d.chosen
        decision, reason = "switch", (
            "the job is on spot and behind the straight-line schedule: the uniform-progress rule moves it off pure spot"
        )
    elif d.decision == "switch" and oom_at is not None:
        best = d.chosen
        decision, reason = "switch", f"the job ran out of memory at local batch {oom_at} on {progress.gpu}: it cannot continue as it ran"
    elif d.decision == "switch":
        best = d.chosen
        decision, reason = "switch", d.reason
    else:
        if d.compared is not None:
            # The alternative the reason's numbers are of (the best above the entry
            # threshold), not the cheapest of all that keep q: the BEST row showed one
            # option at P(success) 0.53 while the reason priced another at 0.55 or more.
            best = d.compared
        decision, reason = "stay", d.reason + (f" (restart {restart_s:.0f} s)" if best is not None else "")
    key = (lambda c: c.cost) if objective == "cost" else (lambda c: c.time_s)
    gain = None if stay is None or best is None else key(stay) - key(best)
    changes: tuple[str, ...] = ()
    scale_lr = None
    if decision == "switch" and best is not None:
        here = SimpleNamespace(gpu=progress.gpu, market=progress.market, workers=progress.workers_now,
                               local_batch=progress.local_batch)
        changes = changes_between(here, best)
        if best.global_batch != progress.workers_now * progress.local_batch:
            scale_lr = lr_scale(old_global_batch=progress.workers_now * progress.local_batch,
                                new_global_batch=best.global_batch, rule=rr.lr_rule)
            notes.append(f"the global batch changes {progress.workers_now * progress.local_batch} -> {best.global_batch}: "
                         f"scale the learning rate by {scale_lr:.3g} ({rr.lr_rule} rule)")
    best_row = None if best is None else _row_of(est, choice=best)

    # Each option runs as its probes did (as recommend's rows): the memory cap admits a local
    # batch measured only with gradient accumulation, so a switch to it launched without the
    # accumulation would hold the whole local batch at once and run out of memory.
    stay, best, nearest = (models.with_accumulation(ch) for ch in (stay, best, nearest))
    if forecast_slot is not None:
        # Staying's chance is the STAY row's only where staying runs the batch the curve is at.
        same = stay is not None and stay.global_batch == progress.global_batch
        notes.insert(forecast_slot, _forecast_note(forecast, job_factor, running=running,
                                                   stay_p_success=stay.p_success if same else None))
    return ReplanResult(
        decision=decision, reason=reason, stay=stay, best=best, progress_fraction=done, schedule_fraction=on_line,
        remaining_deadline_s=remaining_s, restart_s=float(restart_s), margin=margin, objective=objective,
        confidence=confidence, gain=gain, notes=tuple(notes), changes=changes, nearest=nearest, lr_rule=rr.lr_rule,
        lr_scale=scale_lr, forecast=forecast, epochs_done=progress.epochs_done, spent=progress.spent,
        budget_left=budget_left, job=None if job is None else job.job, priced=priced,
        workload=None if loaded is None else loaded.workload.name, target=float(target), interval=req.interval,
        gpus_per_host=None if best is None else int(plan.gpus_per_host[best.gpu]), gpus=tuple(space.gpus),
        spot=None if best_row is None else plan.summary(est, details, best_row),
    )


def _row_of(est: Any, *, choice: Any) -> int | None:
    """The row of ``est`` that ``choice`` was read from (its GPU, market, workers, hosts and
    local batch), or None."""
    c = est.candidates
    if choice.gpu not in c.gpus or choice.market not in c.markets:
        return None
    rows = np.flatnonzero(c.in_market(choice.market) & (c.gpu == c.gpus.index(choice.gpu)) & (c.workers == choice.workers)
                          & (c.hosts == choice.hosts) & (c.local_batch == choice.local_batch))
    return int(rows[0]) if rows.size else None


def _on_demand_cluster(models: Any, req: RecommendRequest, new_prices: Mapping[str, float] | None):
    """A cluster of on-demand servers only, at the request's prices: replan without a cluster
    file; and whether it is priced. Without prices each GPU costs 1 per worker-hour, so
    cost reads as worker-hours (as ``recommend`` without prices)."""
    from cotune.solver._inputs import price_table
    from cotune.spot._cluster import MAX_GPUS_PER_TYPE, parse_cluster

    names = [g.lower() for g in (req.gpus or models.gpus)]
    # recommend's own rule (price_table): every gpu priced or none (worker-hours), and a spot
    # price refused without a cluster file's revocation rates
    # New prices replace the request's under any spelling of the same key ('t4' is 't4:on_demand').
    new = {price_key(k): v for k, v in (new_prices or {}).items()}
    given = {**{k: v for k, v in (req.prices or {}).items() if price_key(k) not in new}, **(new_prices or {})}
    table, priced = price_table(given or None, names, ("on_demand",))
    # The request's caps as a cluster file's counts, whose bounds they may pass (recommend takes
    # --max-workers 10**9): past a million a cap is no cap.
    gpus = {g: {"on_demand": min(req.cap_for(g), MAX_GPUS_PER_TYPE), "on_demand_price_per_hour": float(table[i, 0]),
                "gpus_per_host": req.host_size_for(g)} for i, g in enumerate(names)}
    cluster = parse_cluster({"version": 1, "gpu": gpus}, source="(on-demand servers at --price)")
    return cluster, priced


@dataclass(frozen=True, kw_only=True)
class _RunningWork:
    """The remaining work at the batch the job runs, given the target is not reached yet
    (:func:`cotune.solver.remaining_work`): what its progress and its forecast note state."""

    done_epochs: float  # where it resumes there (its epochs, placed at that batch)
    epochs_left: float  # conditional median (∞: no estimate)
    epochs_left_interval: tuple[float, float]  # central ``interval`` of the epochs left
    interval: float
    p_reach: float  # reached (by the schedule's end, if any), given not reached yet


def _running_work(*, models: Any, outlook: Callable[..., Any], space_gpus: tuple[str, ...], progress: Progress, gpus_per_host: int,
                  table: np.ndarray, target: float, confidence: float | None, forecast: Any,
                  schedule: tuple[float, float] | None, interval: float) -> _RunningWork:
    """:class:`_RunningWork` of the configuration the job has run (``progress``: its GPU,
    workers and local batch), by the belief ``outlook`` (``replan``'s) and the STAY row's
    spread — so where staying runs that batch its epochs are the STAY row's."""
    from cotune.solver import estimate, remaining_work

    cands = _config_candidates(space_gpus, gpu=progress.gpu, workers=progress.workers,
                               local_batch=progress.local_batch, gpus_per_host=gpus_per_host)
    raw = estimate(cands, models, target=target, price_per_hour=table, startup_s=0.0, confidence=confidence)
    o = outlook(cands, running=True, forecast=forecast)
    first = lambda v: np.asarray(v, float)[:1]  # noqa: E731 - the on-demand row; epochs are the market's alike
    # The spread the STAY row has (the epochs' and the step time's, _remaining_estimates) on a
    # unit epoch time: epochs do not depend on it, and a step time the models cannot give (a
    # local batch past a memory cap) leaves them defined.
    step = np.nan_to_num(first(raw.step_log_sigma), nan=0.0, posinf=0.0)
    rw = remaining_work(
        epochs=first(o.epochs), log_sigma=np.sqrt(first(o.log_sigma) ** 2 + step**2), p_reach=first(o.p_reach),
        done_epochs=first(o.done_epochs), epoch_time_s=np.ones(1), restart_s=np.zeros(1), rate_per_s=np.zeros(1),
        remaining_s=None, interval=interval, **_schedule(1, schedule),
    )
    assert rw.epochs is not None and rw.time_interval_s is not None
    lo, hi = rw.time_interval_s  # in epochs: a unit epoch time and no restart
    return _RunningWork(done_epochs=float(first(o.done_epochs)[0]), epochs_left=float(rw.epochs[0]),
                        epochs_left_interval=(float(lo[0]), float(hi[0])), interval=interval,
                        p_reach=float(rw.p_reach[0]))


def _forecast_note(forecast: Any, factor: float, *, running: _RunningWork, stay_p_success: float | None) -> str:
    """The job's curve and what it forecasts *given the target is not reached yet*: the
    unconditional median (and its interval) lay at or before the epochs seen for a job past
    it, so "forecasts the target at epoch 59.5 … with probability 0.64" sat beside a STAY
    row with 5.4 epochs left at 47 %. ``stay_p_success``: the STAY row's chance, where
    staying runs the curve's batch (None: it does not)."""
    from cotune.solver import MAX_SHIFT

    if forecast.reached:
        # The crossing is interpolated between two evaluations: "at epoch 3.42" read as measured.
        return f"the job's own curve has reached the target (crossing it at about epoch {forecast.epochs:.3g})"
    head = f"the job's own curve ({forecast.n_points} evaluations, {forecast.epochs_seen:.3g} epochs, {forecast.source})"
    tail = f"the model's epochs are scaled by {factor:.3g} for this job (at most {MAX_SHIFT:g}x either way)"
    d, left = running.done_epochs, running.epochs_left
    if not math.isfinite(left):  # no conditional estimate: the curve's own median, said to be that
        return f"{head} forecasts the target at epoch {forecast.epochs_if_reached:.3g} (its median given reached); {tail}"
    lo, hi = (d + x for x in running.epochs_left_interval)
    text = (f"{head}, given the target not reached by epoch {d:.3g}, forecasts it at epoch {d + left:.3g} "
            f"({running.interval:.0%}: {lo:.3g}–{hi:.3g}), reached with probability {format_chance(running.p_reach)}")
    if stay_p_success is not None:
        text += f"; by the deadline, staying's P(success) is {format_chance(stay_p_success)}"
    # Equal where the forecast clipped its median to the epochs seen (up to float noise).
    if forecast.epochs_if_reached <= forecast.epochs_seen * (1.0 + 1e-9):
        text += f"; its median without that condition, epoch {forecast.epochs_if_reached:.3g}, is already past"
    return f"{text}; {tail}"
