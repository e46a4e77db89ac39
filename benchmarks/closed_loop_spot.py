"""Spot revocations in the closed-loop replay (opt-in per policy).

A cluster file — the format cotune reads (``docs/spot.md``), parsed by
:func:`cotune.spot.load_cluster` — gives, per GPU type, the spot price, the revocation
rate per spot server-hour, the replacement delay, and the checkpoint write and reload
times. The default is ``benchmarks/clusters/spot_replay.toml``: the ratios of
``examples/cluster.toml`` put on each trace's own GPU prices (assumptions, not
measurements); ``python -m benchmarks --cluster FILE`` replaces it. The file's spot
price is read as a share of its on-demand price and applied to the trace's own
on-demand price, so the on-demand side — the oracle, every on-demand row — stays the
trace's.

**The truth on spot** (:class:`SpotReplay`, driven by
:func:`benchmarks.closed_loop.simulate`). A job on ``h`` spot servers is revoked as a
Poisson process at ``λ = h × rate / 3600`` per second of exposure (training and
checkpoint writes; not while waiting for a replacement), sampled from one seeded stream
per scenario (:class:`RevocationStream`, seed :func:`scenario_seed` of the scenario key:
every spot policy of a scenario meets the same revocation hazard, and a rerun the same
revocations). The job writes a checkpoint every ``τ`` seconds of training — the interval
cotune's spot model chooses for the plan (:func:`cotune.spot.revocation_estimate`: the
exact-expectation refinement of Young/Daly), ``δ`` seconds each. A revocation loses the
work since the last completed checkpoint and the job **waits** ``R = replacement delay +
reload`` for a replacement, then resumes on the same servers: "stop and replace", the
process cotune's spot model and simulator assume (``cotune/spot/_revocation.py``), so the
replay tests the model's own assumption rather than a different one (a synchronous
data-parallel job with a different worker count also changes its global batch, which
is the controller's choice to make, not the market's). Every second on spot is billed at
the spot price: lost work, checkpoint writes and the wait included.

**The policies.** ``cotune_closed_spot`` / ``_q90`` buy the same probes as
``cotune_closed`` / ``_q90``; their initial plan is cotune's spot stage on those fits
(:class:`cotune.spot.SpotMarket`: on-demand and spot rows, the spot rows' time and cost
revocation-aware, then cotune's solve). The controller is the closed loop's
:class:`~benchmarks.closed_loop.SuccessController` over every configuration on both
markets, its assessment wrapped (:class:`SpotSuccessController`) so that a spot row's
remaining work pays the library's expected revocation overhead in time and money and
its ``P(success)`` counts the revocations' time at the confidence; behind the
straight-line schedule spot rows are out (the uniform-progress rule ``cotune replan``
uses). After every revocation the controller is asked at once (``Progress.revoked``).
``cotune_open_spot_q90`` runs the spot plan as planned.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks._registry import policy
from benchmarks.closed_loop import (
    CONTINUE,
    ClosedLoopRun,
    Progress,
    SuccessController,
    _start_anyway,
    _success_controller,
    _truth,
    simulate,
)
from benchmarks.policies import Plan, choose, library_models, run_policy, subset
from benchmarks.scenarios import Scenario
from benchmarks.settings import Evidence
from cotune.errors import InputError
from cotune.solver import Candidates, estimate
from cotune.spot import Cluster, GpuOffer, SpotMarket, job_rate_per_s, load_cluster, revocation_estimate, time_at_confidence_s

__all__ = [
    "DEFAULT_CLUSTER",
    "use_cluster",
    "replay_cluster",
    "workload_cluster",
    "scenario_seed",
    "RevocationStream",
    "sample_revocations",
    "SpotSegment",
    "SpotSpace",
    "SpotReplay",
    "SpotSuccessController",
    "spot_controller",
    "spot_plan",
    "run_spot",
]

DEFAULT_CLUSTER = Path(__file__).with_name("clusters") / "spot_replay.toml"

_CLUSTER: dict[str, Cluster] = {}  # the replay cluster of this process (set by use_cluster)


def use_cluster(path: str | os.PathLike[str] | None = None) -> Cluster:
    """Read and validate the replay's cluster file (None: the bundled default) and use it
    from now on in this process; raises :class:`cotune.errors.InputError` on a bad file."""
    cl = load_cluster(DEFAULT_CLUSTER if path is None else path)
    for name, o in cl.gpus.items():
        if o.spot > 0 and not (o.on_demand_price_per_hour or 0.0) > 0:
            raise InputError(
                f"{cl.source}: gpu.{name}.on_demand_price_per_hour is missing or 0; the replay reads the spot price as "
                "a share of it: give both prices"
            )
    _CLUSTER["current"] = cl
    return cl


def replay_cluster() -> Cluster:
    """The cluster :func:`use_cluster` set (the bundled default until then)."""
    return _CLUSTER["current"] if "current" in _CLUSTER else use_cluster(None)


def workload_cluster(cluster: Cluster, workload) -> Cluster:  # type: ignore[no-untyped-def]
    """``cluster`` on the trace's prices: every GPU type of the workload on demand at its
    own price (as many as the trace measured), and on spot where the file offers it, at the
    file's spot share of that price, with the file's risk and availability."""
    big = 1_000_000  # the trace's measured configurations are the on-demand offer
    offers: dict[str, GpuOffer] = {}
    for g in workload.gpus:
        price = float(workload.prices[g])
        o = cluster.gpus.get(g)
        if o is None or o.spot == 0 or o.spot_price_per_hour is None:
            offers[g] = GpuOffer(name=g, on_demand=big, on_demand_price_per_hour=price)
        else:
            share = o.spot_price_per_hour / float(o.on_demand_price_per_hour)  # type: ignore[arg-type]
            offers[g] = dataclasses.replace(o, on_demand=big, on_demand_price_per_hour=price, spot_price_per_hour=share * price)
    return dataclasses.replace(cluster, gpus=offers)


def scenario_seed(key: str) -> int:
    """A seed from the scenario key (stable across processes and runs, unlike ``hash``)."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


# -- revocations --------------------------------------------------------------------------------
class RevocationStream:
    """The revocations of one job: a unit-rate Poisson process in cumulative hazard.

    Exposure at ``λ`` per second for ``t`` seconds adds ``λ·t`` expected revocations to the
    hazard ``Λ``; a revocation falls wherever ``Λ`` crosses the next arrival of a unit-rate
    Poisson process (gaps exponential(1) from ``seed``). That is exactly a Poisson process
    of rate ``λ(t)`` however the rate changes (servers added, market switched), and the
    arrivals do not depend on what the job does with them.
    """

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        self.hazard = 0.0
        self._next = float(self._rng.exponential())

    def expose(self, *, rate_per_s: float, seconds: float) -> float | None:
        """Expose the job for ``seconds`` at ``rate_per_s``: the seconds into this exposure
        of the first revocation (the exposure ends there), or None when none falls in it."""
        if rate_per_s <= 0.0 or seconds <= 0.0:
            return None
        h = rate_per_s * seconds
        if self.hazard + h < self._next:
            self.hazard += h
            return None
        x = (self._next - self.hazard) / rate_per_s
        self.hazard = self._next
        self._next += float(self._rng.exponential())
        return x


def sample_revocations(*, rate_per_server_hour: float, servers: int, hours: float, seed: int) -> np.ndarray:
    """Times (hours) of the revocations of ``servers`` spot servers exposed for ``hours``
    (the stream :class:`SpotReplay` uses; the count is Poisson with mean rate × servers × hours)."""
    stream = RevocationStream(seed)
    lam = float(job_rate_per_s(rate_per_server_hour=rate_per_server_hour, servers=servers))
    t, out = 0.0, []
    while (x := stream.expose(rate_per_s=lam, seconds=hours * 3600.0 - t)) is not None:
        t += x
        out.append(t / 3600.0)
    return np.array(out)


@dataclass(frozen=True)
class SpotSegment:
    """One stretch of a spot run: wall seconds (writes, lost work and the wait included),
    training seconds reached before any loss, training seconds lost (since the last
    checkpoint), whether it ended in a revocation, and whether the job finished."""

    wall_s: float
    work_s: float
    lost_s: float
    revoked: bool
    finished: bool


# -- the spot space and the truth -------------------------------------------------------------
@dataclass(frozen=True)
class SpotSpace:
    """Every configuration of a scenario on each market the cluster offers it on."""

    candidates: Candidates  # markets cotune.spot.PLAN_MARKETS (no mixed rows: the controller mixes)
    base: np.ndarray  # row -> index into the scenario's (on-demand) candidates
    market: SpotMarket
    usd_per_hour: np.ndarray  # per row, one worker at its market's price
    revocations_per_s: np.ndarray  # per row: the job's λ (0 on demand)
    revocation_restart_s: np.ndarray  # per row: replacement delay + reload (R)
    checkpoint_write_s: float  # δ

    @classmethod
    def of(cls, scn: Scenario, cluster: Cluster | None = None) -> "SpotSpace":
        w, c = scn.workload, scn.candidates
        cl = workload_cluster(cluster or replay_cluster(), w)
        n = len(c)
        both = Candidates(
            gpus=c.gpus, markets=("on_demand", "spot"), gpu=np.concatenate([c.gpu, c.gpu]),
            market=np.repeat(np.array([0, 1], dtype=c.market.dtype), n), workers=np.concatenate([c.workers, c.workers]),
            hosts=np.concatenate([c.hosts, c.hosts]), local_batch=np.concatenate([c.local_batch, c.local_batch]),
        )
        market = SpotMarket.create(cl, profiled_gpus=c.gpus, gpus=None, max_workers=int(c.workers.max()),
                                   gpus_per_host=w.gpus_per_host)
        ext = market.candidates(both, mixed=False)  # the library drops what the cluster cannot supply
        where = {(int(g), int(k), int(h), int(b)): i for i, (g, k, h, b) in enumerate(zip(c.gpu, c.workers, c.hosts, c.local_batch))}
        base = np.array([where[(int(g), int(k), int(h), int(b))] for g, k, h, b in zip(ext.gpu, ext.workers, ext.hosts, ext.local_batch)])
        spot = ext.in_market("spot")
        offers = [cl.gpus[g] for g in ext.gpus]
        table = market.price_table(ext.gpus)
        usd = np.where(spot, table[ext.gpu, ext.market], scn.oracle.price_per_hour[base])
        rate_h = np.array([o.revocation_rate_per_hour for o in offers])[ext.gpu]
        ck = cl.checkpoint
        restart = np.array([o.replacement_delay_s for o in offers])[ext.gpu] + (ck.restart_s if ck else 0.0)
        lam = np.where(spot, job_rate_per_s(rate_per_server_hour=rate_h, servers=ext.hosts), 0.0)
        return cls(candidates=ext, base=base, market=market, usd_per_hour=usd, revocations_per_s=lam,
                   revocation_restart_s=np.where(spot, restart, 0.0), checkpoint_write_s=float(ck.write_s if ck else 0.0))

    def checkpoint_intervals_s(self, work_s: float) -> np.ndarray:
        """Per row, the checkpoint interval cotune's spot model picks for ``work_s`` seconds of
        training (inf: none); on-demand rows write none."""
        work = work_s if math.isfinite(work_s) and work_s > 0 else 3600.0
        rev = revocation_estimate(work_s=np.full(len(self.candidates), work), rate_per_s=self.revocations_per_s,
                                  checkpoint_write_s=self.checkpoint_write_s, restart_s=self.revocation_restart_s)
        return np.asarray(rev.checkpoint_interval_s, float)


@dataclass
class SpotReplay:
    """The spot side of one closed-loop run: what :func:`benchmarks.closed_loop.simulate`
    asks about a row (its scenario candidate, price, market) and how a spot row advances."""

    space: SpotSpace
    stream: RevocationStream
    checkpoint_interval_s: np.ndarray  # per row (inf: no checkpoint)
    _since: float = field(default=0.0, init=False)  # training since the last checkpoint

    @classmethod
    def create(cls, space: SpotSpace, *, seed: int, planned_work_s: float) -> "SpotReplay":
        return cls(space=space, stream=RevocationStream(seed), checkpoint_interval_s=space.checkpoint_intervals_s(planned_work_s))

    def base_index(self, j: int) -> int:
        return int(self.space.base[j])

    def rate_per_s(self, j: int) -> float:
        """USD per second of row ``j`` (all its workers at its market's price)."""
        return float(self.space.candidates.workers[j] * self.space.usd_per_hour[j] / 3600.0)

    def market(self, j: int) -> str:
        c = self.space.candidates
        return c.markets[int(c.market[j])]

    def revocable(self, j: int) -> bool:
        return self.market(j) == "spot"

    def restarted(self) -> None:
        """The job moved (a switch writes a checkpoint): no training is at risk."""
        self._since = 0.0

    def advance(self, j: int, *, work_s: float, final: bool) -> SpotSegment:
        """Train ``work_s`` seconds on spot row ``j`` (``final``: that finishes the job, so the
        last stretch writes no checkpoint), or until the first revocation."""
        lam = float(self.space.revocations_per_s[j])
        tau = float(self.checkpoint_interval_s[j])
        delta = self.space.checkpoint_write_s
        wall = done = 0.0
        rest = work_s
        while rest > 0.0:
            to_ckpt = tau - self._since if math.isfinite(tau) else math.inf
            piece = min(rest, to_ckpt)
            rest = 0.0 if piece >= rest else rest - piece
            write = piece >= to_ckpt and not (final and rest == 0.0)
            length = piece + (delta if write else 0.0)
            x = self.stream.expose(rate_per_s=lam, seconds=length)
            if x is not None:
                ran = min(x, piece)
                lost = self._since + ran  # a write cut short saves nothing
                self._since = 0.0
                return SpotSegment(wall_s=wall + x + float(self.space.revocation_restart_s[j]), work_s=done + ran,
                                   lost_s=lost, revoked=True, finished=False)
            wall += length
            done += piece
            self._since = 0.0 if write else self._since + piece
        return SpotSegment(wall_s=wall, work_s=done, lost_s=0.0, revoked=False, finished=final)


# -- the controller -------------------------------------------------------------------------------
@dataclass
class SpotSuccessController(SuccessController):
    """:class:`SuccessController` over both markets, its assessment made revocation-aware.

    For a spot row whose remaining work takes ``W`` (the wrapped assessment, which knows no
    revocations), cotune's spot model (:func:`cotune.spot.revocation_estimate`) gives the
    expected time ``E[T](W)`` and the time at the confidence ``T_q(W)``: the row's remaining
    time becomes ``E[T]``, its cost pays ``E[T] − W`` more at its price, and its
    ``P(success)`` is that of a deadline ``T_q − W`` shorter (the wrapped assessment at
    three shorter deadlines, ``A/16``, ``A/4`` and ``A`` for the largest allowance ``A``,
    piecewise linear in between). Behind the straight line (done share of the work ``<`` elapsed share of
    the deadline) spot rows get ``P = 0``: the job moves to on-demand (``cotune replan``'s
    uniform-progress rule).
    """

    spot: SpotSpace | None = None
    dataset_size: int = 0
    line_rule: bool = True

    def assess(self, p: Progress | None, *, target: float, deadline_s: float | None):
        usable, here, p_succ, cost, rem_time = super().assess(p, target=target, deadline_s=deadline_s)
        sp = self.spot
        if sp is None:
            return usable, here, p_succ, cost, rem_time
        p_succ, cost, rem_time = (np.array(a, float) for a in (p_succ, cost, rem_time))
        on_spot = sp.candidates.in_market("spot")[usable]
        risky = on_spot & np.isfinite(rem_time) & (rem_time > 0)
        if np.any(risky):
            rows = usable[risky]
            work = rem_time[risky]
            with np.errstate(invalid="ignore", over="ignore"):
                rev = revocation_estimate(work_s=work, rate_per_s=sp.revocations_per_s[rows],
                                          checkpoint_write_s=sp.checkpoint_write_s, restart_s=sp.revocation_restart_s[rows])
                q = 0.5 if self.confidence is None else self.confidence
                t_q = np.asarray(time_at_confidence_s(rev, q), float)
            t_mean = np.asarray(rev.expected_time_s, float)
            # A remaining work of ~1e11 s or more (a hopeless row: P(success) ~ 0 already) takes
            # forever on spot (∞ from the spot model); such rows stay as the wrapped assessment has them.
            sane = np.isfinite(t_mean) & np.isfinite(t_q)
            allowance = np.where(sane, np.maximum(t_q - work, 0.0), 0.0)
            extra = np.where(sane, np.maximum(t_mean - work, 0.0), 0.0)
            usd_per_s = sp.candidates.workers[rows] * sp.usd_per_hour[rows] / 3600.0
            cost[risky] = cost[risky] + usd_per_s * extra
            rem_time[risky] = work + extra
            a_max = float(allowance.max()) if allowance.size else 0.0
            if deadline_s is not None and a_max > 0:
                # P(success) within a deadline shorter by each row's allowance: the wrapped
                # assessment at a few shorter deadlines (the allowances span the rows' server
                # counts, hence the geometric grid), piecewise linear in between.
                grid = a_max * np.array([0.0, 1.0 / 16.0, 0.25, 1.0])
                wrapped = super().assess
                at = [p_succ[risky]] + [
                    np.asarray(wrapped(p, target=target, deadline_s=deadline_s - a)[2], float)[risky] for a in grid[1:]
                ]
                table = np.stack(at, axis=-1)
                p_succ[risky] = [np.interp(a, grid, row) for a, row in zip(allowance, table)]
        if self.line_rule and p is not None and deadline_s is not None and here is not None and deadline_s > 0:
            # Behind the line the job leaves spot for on-demand — where an on-demand option keeps
            # the confidence (the rule assumes on-demand can catch up; where none can, the
            # chances decide).
            q = 0.5 if self.confidence is None else self.confidence
            done_s = self._done_work_s(p)
            left_s = float(rem_time[here])
            # ... at least as likely to finish as the best spot option (cotune replan's rule).
            spot_best = float(p_succ[on_spot].max()) if np.any(on_spot) else 0.0
            if (np.any(~on_spot & (p_succ >= max(q, spot_best))) and math.isfinite(done_s) and math.isfinite(left_s)
                    and done_s + left_s > 0 and done_s / (done_s + left_s) < min(p.elapsed_s / deadline_s, 1.0)):
                p_succ = np.where(on_spot, 0.0, p_succ)
        return usable, here, p_succ, cost, rem_time

    def _done_work_s(self, p: Progress) -> float:
        """Training seconds the job's epochs done take at its configuration (its own step time)."""
        c = self.candidates
        i = p.index
        key = (c.gpus[int(c.gpu[i])], int(c.workers[i]), int(c.hosts[i]), int(c.local_batch[i]))
        step = next((s.step_time_s for s in p.steps if (s.gpu, s.workers, s.hosts, s.local_batch) == key), None)
        if step is None or self.dataset_size <= 0:
            return math.nan
        done = self.frame(self.models(p), p, target=p.target).epochs_done  # at its batch, not its own count
        return float(done * self.dataset_size / p.global_batch * step)


def spot_controller(scn: Scenario, evidence: Evidence, plan: Plan, confidence: float | None, space: SpotSpace) -> SpotSuccessController:
    """The closed loop's controller (its models and settings) over ``space``'s rows."""
    inner = _success_controller(scn, evidence, plan, confidence)
    kept = {f.name: getattr(inner, f.name) for f in dataclasses.fields(inner) if f.init}
    kept.update(candidates=space.candidates, price_per_hour=space.market.price_table(space.candidates.gpus))
    return SpotSuccessController(**kept, spot=space, dataset_size=int(scn.workload.dataset_size))


# -- the plan and the policies ---------------------------------------------------------------------
def spot_plan(scn: Scenario, budget: int, *, planner: str, confidence: float | None, name: str, space: SpotSpace) -> Plan:
    """``planner``'s probes, then cotune's spot stage on its fits: every configuration on
    each market, spot rows revocation-aware (:meth:`cotune.spot.SpotMarket.adjust`), cotune's
    solve. The plan's ``index`` is a row of ``space``."""
    first = run_policy(planner, scn, (budget,), setting="one-curve")[0]
    models = library_models(scn, scn.evidence("one-curve"), first.probed)
    ext = space.candidates
    rows = np.flatnonzero(np.isin(ext.gpu, [ext.gpus.index(g) for g in models.time_models]))
    sub = subset(ext, rows)
    est = estimate(sub, models, target=scn.target, price_per_hour=space.market.price_table(ext.gpus), confidence=confidence)
    est, _ = space.market.adjust(est, startup_s=0.0, confidence=confidence, deadline_s=scn.deadline_s)
    est, _, top = choose(est, deadline_s=scn.deadline_s, confidence=confidence, limit=1)
    j = int(top[0]) if top.size else None
    p = None if j is None or est.p_success is None else float(np.asarray(est.p_success)[j])
    return Plan(
        policy=name, budget=budget, probes=first.probes, probe_cost=first.probe_cost,
        index=None if j is None else int(rows[j]), predicted_cost=math.inf if j is None else float(est.cost[j]),
        predicted_time_s=math.inf if j is None else float(est.time_s[j]), probed=first.probed,
        confidence=confidence, p_success=p if p is None or math.isfinite(p) else None,
    )


def run_spot(scn: Scenario, evidence: Evidence, budget: int, *, name: str, planner: str, confidence: float | None,
             closed: bool, cluster: Cluster | None = None) -> ClosedLoopRun:
    """One spot policy on one scenario: plan on both markets, run on the truth with revocations."""
    space = SpotSpace.of(scn, cluster)
    plan = spot_plan(scn, budget, planner=planner, confidence=confidence, name=name, space=space)
    controller = spot_controller(scn, evidence, plan, confidence, space) if closed else None
    if controller is not None:
        plan = _start_anyway(scn, plan, controller)  # the spot controller is a SuccessController
    if plan.index is None:
        rec = dict(reached=False, gave_up=False, time_s=math.inf, train_cost=0.0, restart_cost=0.0, restarts=0,
                   final_index=None, actions=(), revocations=0)
        initial, market = None, "on_demand"
    else:
        replay = SpotReplay.create(space, seed=scenario_seed(scn.key), planned_work_s=plan.predicted_time_s)
        rec = simulate(scn, index=plan.index, planned_time_s=plan.predicted_time_s,
                       controller=controller or (lambda p: CONTINUE), truth=_truth(scn), spot=replay)
        market = replay.market(rec["final_index"])
        rec["final_index"] = replay.base_index(rec["final_index"])
        initial = replay.base_index(plan.index)
    return ClosedLoopRun(
        policy=name, budget=budget, probes=plan.probes, probe_cost=plan.probe_cost, initial_index=initial,
        predicted_cost=plan.predicted_cost, predicted_time_s=plan.predicted_time_s, confidence=plan.confidence,
        p_success=plan.p_success, market=market, **rec,
    )


def _register(name: str, *, planner: str, confidence: float | None, closed: bool, description: str) -> None:
    def run(scn: Scenario, evidence: Evidence, budget: int) -> ClosedLoopRun:
        return run_spot(scn, evidence, budget, name=name, planner=planner, confidence=confidence, closed=closed)

    policy(name, closed_loop=True, planner=planner, family="cotune_closed_spot" if closed else "cotune_open_spot",
           confidence=confidence, description=description)(run)


_register("cotune_closed_spot", planner="cotune", confidence=None, closed=True,
          description="cotune_closed planning on spot and on-demand (cotune's spot stage, the replay cluster file); "
          "revocations replayed; the controller may change market after every revocation and checkpoint")
_register("cotune_closed_spot_q90", planner="cotune_q90", confidence=0.9, closed=True,
          description="cotune_closed_spot at confidence 0.9 (plan and re-plan)")
_register("cotune_open_spot_q90", planner="cotune_q90", confidence=0.9, closed=False,
          description="cotune's spot-stage plan at confidence 0.9 run as planned under replayed revocations (open loop)")
