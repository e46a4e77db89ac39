"""The spot market stage: on-demand, spot and mixed candidates from a cluster file.

:class:`SpotMarket` is the :class:`~cotune.solver.MarketStage` that
:func:`cotune.recommend` uses when the request has a ``cluster``; it sits between the
core steps and changes nothing else::

    market = SpotMarket.from_request(request, models)          # gpus, caps, prices from the file
    cands  = market.candidates(enumerate_candidates(space), request)
    est    = estimate(cands, models, price_per_hour=market.price_table(space.gpus), …)
    est, details = market.adjust(est, request)

``estimate`` prices every candidate as if no server were ever revoked.
:meth:`SpotMarket.adjust` then replaces, for the spot rows, the training time ``W``
by the revocation-aware expectation ``E[T](W)`` and the time at confidence by
``T_q(W_q)`` (:mod:`cotune.spot._revocation`: Young/Daly checkpointing, the law of the
time as a mixture over the revocation count), evaluated at the model's own quantile
``W_q``, or where later the quantile of ``P(success)``'s law — the model's error on the
checkpointed work plus the revocations' delay (``revocation_law_s``), so a promise at
``q`` covers both. On-demand rows are left as they are: with zero revocations the spot
model equals them exactly.

Mixed rows run the same configuration on spot while ahead of the straight-line
schedule and on on-demand while behind (Can't Be Late's uniform-progress rule). The
line ends ``margin = τ + δ + R`` before the deadline (one lost segment and one
switch), so falling behind can always be recovered on on-demand; its numbers come
from the seeded simulator (:mod:`cotune.spot._simulate`), run only for the
configurations where the rule matters — on-demand meets the deadline at the
requested confidence and spot alone does not (``every_mixed``, for a job already
running mixed: every row, its line ending at once if the work at the confidence does not
fit before it, so it runs on on-demand while behind). Elsewhere mixed is dominated (by spot,
or is impossible) and is dropped — and so is a row whose run would take more than
:data:`MAX_MIXED_ATTEMPTS` segments and revocations to simulate (bounded time).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from cotune._request import DEFAULT_GPUS_PER_HOST
from cotune._checks import BadValue, excerpt
from cotune.errors import InputError
from cotune.solver import Candidates, Estimates, SearchSpace
from cotune.spot._cluster import Cluster, load_cluster, parse_cluster
from cotune.spot._revocation import (
    MAX_SEGMENTS,
    MIN_CHECKPOINT_INTERVAL_S,
    RevocationEstimate,
    job_rate_per_s,
    revocation_delay_nodes_s,
    revocation_estimate,
    time_at_confidence_s,
    young_daly_interval_s,
)
from cotune.spot._simulate import simulate

__all__ = ["MAX_MIXED_ATTEMPTS", "SpotMarket", "SpotDetails", "PLAN_MARKETS", "cluster_of", "success_log_sigma",
           "take_estimates"]

# Markets of the candidates the spot stage produces (the space itself holds the first two).
PLAN_MARKETS = ("on_demand", "spot", "mixed")


@dataclass(frozen=True)
class SpotDetails:
    """Per-candidate revocation details aligned with the adjusted estimates (NaN where
    not applicable: on-demand rows have no revocations, spot rows no schedule)."""

    checkpoint_interval_s: np.ndarray
    job_revocations_per_hour: np.ndarray
    expected_revocations: np.ndarray
    on_demand_share: np.ndarray  # mixed: fraction of billed time on on-demand
    schedule_s: np.ndarray  # mixed: when the straight line reaches the end (from start)
    #: Mixed rows that could matter (on-demand meets the deadline, spot alone does not) but
    #: would need more than MAX_MIXED_ATTEMPTS simulated segments: left out, and said so.
    mixed_not_simulated: int = 0

    def rows(self, keep: np.ndarray) -> "SpotDetails":
        """The details of the rows ``keep`` (indices or mask); the counts stay."""
        arrays = {k: getattr(self, k)[keep] for k in _ROW_FIELDS}
        return SpotDetails(**arrays, mixed_not_simulated=self.mixed_not_simulated)


_ROW_FIELDS = tuple(f.name for f in fields(SpotDetails) if f.name != "mixed_not_simulated")  # the per-row arrays


def take_estimates(est: Estimates, keep: np.ndarray) -> Estimates:
    """The rows ``keep`` (indices or mask) of an :class:`~cotune.solver.Estimates`: ``est.take(keep)``."""
    return est.take(keep)


def success_log_sigma(model_log_sigma: np.ndarray, rev: RevocationEstimate) -> np.ndarray:
    """σ of log time to success on spot: the model's σ and the revocations' own spread.

    The revocations add ``N`` penalties to the checkpointed work, ``N`` with variance
    ``Var[N]`` and each penalty with mean ``c̄`` and standard deviation ``σ_u`` (lost work
    is a truncated exponential), so ``Var[T_rev] = Var[N]·c̄² + E[N]·σ_u²`` (the variance
    of a random sum). Independent of the model's error on the work, in log space
    (delta method): ``σ² = σ_model² + Var[T_rev] / E[T]²``. Without it ``P(success)`` on
    a spot plan would count the expected revocations but not the chance of more.

    ``recommend``'s P(success) of a spot row no longer uses it (a symmetric spread around
    ``E[T]`` let a spot row's chance exceed its on-demand twin's): that is the mixture of
    ``revocation_law_s``, and ``replan``'s spot options mix over it too; ``replan``'s mixed
options still widen by it.
    """
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        var_rev = rev.revocations_variance * rev.penalty_s**2 + rev.expected_revocations * rev.lost_work_sd_s**2
        rel = var_rev / rev.expected_time_s**2
    rel = np.where(np.isfinite(rel), rel, 0.0)
    return np.sqrt(np.asarray(model_log_sigma, float) ** 2 + rel)


def cluster_of(value: Cluster | str | Mapping[str, Any]) -> Cluster:
    """A :class:`Cluster` from a cluster file, itself, or the file's fields as a mapping."""
    return parse_cluster(value, source="cluster") if isinstance(value, Mapping) else load_cluster(value)


def _size_function(gpus_per_host: int | Mapping[str, int] | Callable[[str], int | None] | None
                   ) -> Callable[[str], int | None]:
    """GPUs per server stated by gpu type (``"*"``: the size of types not named; None: not stated)."""
    if callable(gpus_per_host):
        return gpus_per_host
    if isinstance(gpus_per_host, Mapping):
        return lambda g: gpus_per_host.get(g, gpus_per_host.get("*"))
    return lambda g: None if gpus_per_host is None else int(gpus_per_host)


def _cap_function(max_workers: int | Mapping[str, int] | Callable[[str], int]) -> Callable[[str], int]:
    if callable(max_workers):
        return max_workers
    if isinstance(max_workers, Mapping):
        def cap(g: str) -> int:
            if g not in max_workers:
                raise InputError(f"max_workers has no entry for gpu {g}: give one per gpu type")
            return int(max_workers[g])

        return cap
    return lambda g: int(max_workers)


# Equally likely values of the revocation delay in a spot row's P(success) law (its error
# in P: well under one in a hundred, the work's own spread smooths between them).
SUCCESS_DELAY_NODES = 128

# Segments plus revocations a mixed row's simulated run may take (module doc, _mixed).
MAX_MIXED_ATTEMPTS = 20_000
# The shortest straight line a running mixed job is simulated with (its line may already
# have ended): positive, so the simulator's line is defined and the job is behind on it.
_MIN_SCHEDULE_S = 1e-6


@dataclass(frozen=True)
class SpotMarket:
    """The market stage of a cluster file: gpus, availability, prices and spot risk."""

    cluster: Cluster
    gpus: tuple[str, ...]
    max_workers: Mapping[str, int]
    gpus_per_host: Mapping[str, int]
    runs: int = 400
    seed: int = 0
    notes: tuple[str, ...] = ()
    #: The file's own gpus_per_host, else the request's for the types it does not name: the
    #: report's top-level ``gpus_per_host`` (each gpu's entry has the size it was searched at).
    default_gpus_per_host: int = DEFAULT_GPUS_PER_HOST

    space_markets: tuple[str, ...] = ("on_demand", "spot")
    # Mixed rows are copies of the spot rows: at most 3 rows per 2 enumerated candidates.
    rows_per_candidate: float = 1.5

    @classmethod
    def create(
        cls,
        cluster: Cluster | str | Mapping[str, Any],
        *,
        profiled_gpus: Sequence[str],
        gpus: Sequence[str] | None,
        max_workers: int | Mapping[str, int] | Callable[[str], int],
        gpus_per_host: int | Mapping[str, int] | Callable[[str], int | None] | None = None,
        runs: int = 400,
        seed: int = 0,
    ) -> "SpotMarket":
        """``cluster``: a file, a :class:`Cluster`, or the file's fields as a mapping;
        ``max_workers``: one cap, one per gpu type, or a function of the gpu type;
        ``gpus_per_host`` alike, None where not stated (the file's sizes rule where it gives
        them, and a stated size that differs is a contradiction)."""
        cl = cluster_of(cluster)
        user_cap = _cap_function(max_workers)
        wanted = [g.lower() for g in gpus] if gpus else list(profiled_gpus)
        # Each refusal points at the cluster (over HTTP "path" was null and the code
        # invalid_request); an inline cluster (source "/cluster" over HTTP, "cluster" from
        # Python) has no file to name.
        what = "the cluster" if cl.source in ("/cluster", "cluster") else f"the cluster file {cl.source}"
        for g in wanted if gpus else ():
            if g not in cl.gpus:  # a type asked for by name: refused (a type not asked for is left out with a note)
                raise BadValue(f"gpu {excerpt(g)} is not in {what} (it lists {', '.join(cl.gpus)}): add a [gpu.{g}] table, "
                               "or leave it out of --gpu (gpus)", where="/cluster")
        chosen = tuple(g for g in wanted if g in cl.gpus and g in profiled_gpus)
        notes = []
        left_out = [g for g in profiled_gpus if g not in cl.gpus and not gpus]
        if left_out:
            notes.append(f"profiled gpu {', '.join(left_out)} not in {cl.source}: not considered")
        unprobed = [g for g in cl.gpus if g not in profiled_gpus]
        if unprobed and not gpus:
            notes.append(f"{cl.source} offers {', '.join(unprobed)}, which the profile has no timing probes for: "
                         "not searched; probe it (cotune profile) to weigh it too")
        if not chosen:
            raise BadValue(
                f"{what} offers {', '.join(cl.gpus)} but the profile has timing probes for "
                f"{', '.join(profiled_gpus)}: add a [gpu.NAME] table for a profiled type", where="/cluster"
            )
        caps = {}
        for g in chosen:
            o = cl.gpus[g]
            caps[g] = int(min(max(o.on_demand, o.spot), user_cap(g)))
        user_size = _size_function(gpus_per_host)
        sizes = {}
        for g in chosen:
            asked, filed = user_size(g), cl.host_size(g)
            if filed is not None and asked is not None and asked != filed:
                # as prices: the file says what its servers hold; a different value asked for
                # alongside it is a contradiction, not a preference to drop without a word
                key = "gpus_per_host" if cl.gpus[g].gpus_per_host is None else f"gpu.{g}.gpus_per_host"
                raise BadValue(f"gpus_per_host {asked} for {g} contradicts {cl.source}'s {key} = {filed}: "
                               "drop --gpus-per-host (gpus_per_host) or edit the cluster file", where="/gpus_per_host")
            sizes[g] = filed if filed is not None else asked if asked is not None else DEFAULT_GPUS_PER_HOST
        return cls(
            cluster=cl, gpus=chosen, max_workers=caps, gpus_per_host=sizes,
            default_gpus_per_host=cl.gpus_per_host or user_size("*") or DEFAULT_GPUS_PER_HOST, runs=runs, seed=seed,
            notes=tuple(notes),
        )

    @classmethod
    def from_request(cls, request: Any, models: Any, *, cluster: Cluster | None = None) -> "SpotMarket":
        """The stage of a :class:`~cotune.RecommendRequest` with a ``cluster`` (or the given, updated one)."""
        return cls.create(
            cluster if cluster is not None else request.cluster, profiled_gpus=models.gpus, gpus=request.gpus,
            max_workers=request.cap_for, gpus_per_host=request.stated_host_size,
        )

    # --- MarketStage -------------------------------------------------------------------

    def space(self, request: Any, models: Any) -> tuple[SearchSpace, list[str]]:
        from cotune.solver import build_space

        return build_space(
            models, gpus=self.gpus, max_workers=self.max_workers, gpus_per_host=self.gpus_per_host,
            local_batches=request.local_batches, hosts=request.hosts, workers=request.workers,
            markets=self.space_markets,
        )

    def price_per_hour(self, gpus: Sequence[str]) -> tuple[np.ndarray, bool]:
        return self.price_table(gpus), True

    @property
    def document(self) -> dict[str, Any]:
        """The cluster as searched, for the report: gpus with availability, prices and risk; checkpoint cost."""
        ck = self.cluster.checkpoint
        return {
            "source": self.cluster.source,
            "gpus_per_host": self.default_gpus_per_host,
            "checkpoint": None if ck is None else {"write_s": ck.write_s, "restart_s": ck.restart_s},
            "gpus": {
                g: {
                    "on_demand": o.on_demand,
                    "spot": o.spot,
                    "on_demand_price_per_hour": o.on_demand_price_per_hour,
                    "spot_price_per_hour": o.spot_price_per_hour,
                    "revocation_rate_per_hour": o.revocation_rate_per_hour,
                    "replacement_delay_s": o.replacement_delay_s,
                    "max_workers": self.max_workers[g],
                    "gpus_per_host": self.gpus_per_host[g],
                }
                for g, o in self.cluster.gpus.items()
                if g in self.gpus
            },
        }

    def adjust_for(self, est: Estimates, request: Any) -> tuple[Estimates, SpotDetails]:
        return self.adjust(est, startup_s=request.startup_s, confidence=request.confidence, deadline_s=request.deadline_s)

    def report(self, est: Estimates, details: "SpotDetails", index: int) -> tuple[list[str], Mapping[str, Any] | None]:
        return self.describe(est, details, index), self.summary(est, details, index)

    def adjust_notes(self, details: "SpotDetails") -> list[str]:
        n = details.mixed_not_simulated
        if not n:
            return []
        return [
            f"{n} mixed plan{'s' if n > 1 else ''} (spot falling back to on-demand) left out to bound the answer's time: "
            f"each would need more than {MAX_MIXED_ATTEMPTS:,} simulated checkpoint segments and revocations "
            "(cotune.spot.MAX_MIXED_ATTEMPTS); the spot and on-demand plans of the same configurations are weighed as usual"
        ]

    def price_table(self, gpus: Sequence[str]) -> np.ndarray:
        """USD per worker-hour, shape ``(len(gpus), 3)`` over :data:`PLAN_MARKETS`
        (mixed starts at the spot price; :meth:`adjust` replaces it by the mix).
        Always priced: a cluster file gives prices."""
        table = np.full((len(gpus), len(PLAN_MARKETS)), np.nan)
        for gi, g in enumerate(gpus):
            o = self.cluster.gpus[g]
            od = np.nan if o.on_demand_price_per_hour is None else o.on_demand_price_per_hour
            sp = np.nan if o.spot_price_per_hour is None else o.spot_price_per_hour
            table[gi] = (od, sp, sp)
        return table

    def candidates(self, cands: Candidates, request: Any = None, *, mixed: bool | None = None) -> Candidates:
        """Add mixed rows (copies of the spot rows; only with a deadline, which their schedule
        needs) and drop what the cluster cannot supply."""
        if mixed is None:
            mixed = request is not None and request.deadline_s is not None
        if tuple(cands.markets) != self.space_markets:
            raise InputError(f"the space's markets must be {self.space_markets}, got {cands.markets}")
        spot = cands.in_market("spot")
        parts = [np.arange(len(cands)), np.flatnonzero(spot)] if mixed else [np.arange(len(cands))]
        idx = np.concatenate(parts)
        mixed_code = PLAN_MARKETS.index("mixed")
        market = np.concatenate([cands.market, np.full(int(spot.sum()), mixed_code, dtype=cands.market.dtype)] if mixed else [cands.market])
        avail = np.array([[self.cluster.gpus[g].available(m) for m in PLAN_MARKETS] for g in cands.gpus])
        workers = cands.workers[idx]
        keep = workers <= avail[cands.gpu[idx], market]
        return Candidates(
            gpus=cands.gpus, markets=PLAN_MARKETS, gpu=cands.gpu[idx][keep], market=market[keep],
            workers=workers[keep], hosts=cands.hosts[idx][keep], local_batch=cands.local_batch[idx][keep],
        )

    def _per_row(self, est: Estimates) -> dict[str, np.ndarray]:
        c = est.candidates
        g = c.gpu
        ck = self.cluster.checkpoint
        offers = [self.cluster.gpus[name] for name in c.gpus]
        rate_h = np.array([o.revocation_rate_per_hour for o in offers])[g]
        repl = np.array([o.replacement_delay_s for o in offers])[g]
        restart = repl + (ck.restart_s if ck else 0.0)
        write = np.full(len(c), ck.write_s if ck else 0.0)
        p_od = np.array([np.nan if o.on_demand_price_per_hour is None else o.on_demand_price_per_hour for o in offers])[g]
        p_sp = np.array([np.nan if o.spot_price_per_hour is None else o.spot_price_per_hour for o in offers])[g]
        lam = job_rate_per_s(rate_per_server_hour=rate_h, servers=c.hosts)
        return dict(lam=lam, restart=restart, write=write, p_od=p_od, p_sp=p_sp)

    def adjust(
        self,
        est: Estimates,
        *,
        startup_s: float,
        confidence: float | None,
        deadline_s: float | None,
        every_mixed: bool = False,
    ) -> tuple[Estimates, SpotDetails]:
        """Revocation-aware time and cost for spot and mixed rows (see the module doc).

        ``every_mixed``: simulate every mixed row that has both twins, not only those where
        the rule can matter (on-demand meets the deadline, spot alone does not) — a job
        running mixed must be weighed as it runs even where spot alone would do."""
        from cotune.solver._estimate import DEFAULT_CONFIDENCE

        # Unset confidence is the documented 0.5, exactly: judging spot rows by E[T] instead
        # (and skipping the joint quantile) chose plans with P(success) < 0.5 when unset.
        q = DEFAULT_CONFIDENCE if confidence is None else float(confidence)
        c = est.candidates
        n = len(c)
        row = self._per_row(est)
        w = c.workers.astype(float)
        train = est.time_s - startup_s
        lo, hi = est.time_lower_s - startup_s, est.time_upper_s - startup_s
        at_q = est.time_at_confidence_s - startup_s

        time_s, lower, upper, at_conf = (a.copy() for a in (est.time_s, est.time_lower_s, est.time_upper_s, est.time_at_confidence_s))
        cost, cost_lo, cost_hi, price = (a.copy() for a in (est.cost, est.cost_lower, est.cost_upper, est.price_per_hour))
        nan = np.full(n, np.nan)
        ckpt_s, revs, od_share, sched = nan.copy(), nan.copy(), nan.copy(), nan.copy()
        keep = np.ones(n, dtype=bool)

        def rev(work, sel):
            return revocation_estimate(work_s=work[sel], rate_per_s=row["lam"][sel], checkpoint_write_s=row["write"][sel], restart_s=row["restart"][sel])

        reached = est.time_s if est.time_if_reached_s is None else est.time_if_reached_s
        if_reached = reached.copy()
        sig_success = est.log_sigma_time.copy()
        law = np.full((n, 1 + SUCCESS_DELAY_NODES), np.nan)
        s = np.flatnonzero(c.in_market("spot"))
        if s.size:
            mean = rev(train, s)
            time_s[s] = startup_s + mean.expected_time_s
            work_if_reached = rev(reached - startup_s, s)
            if_reached[s] = startup_s + work_if_reached.expected_time_s
            sig_success[s] = success_log_sigma(est.log_sigma_time[s], work_if_reached)
            # P(success)'s law: the work's own error on the checkpointed work plus the delay the
            # revocations add (a mixture over their count), at the work the solver judges by
            # (the median where the target is reached at it, else the time if reached).
            succ = mean if np.all(np.isfinite(train[s])) else rev(np.where(np.isfinite(train), train, reached - startup_s), s)
            law[s, 0] = succ.checkpointed_work_s
            law[s, 1:] = revocation_delay_nodes_s(succ, SUCCESS_DELAY_NODES)
            lower[s] = startup_s + rev(lo, s).expected_time_s
            upper[s] = startup_s + rev(hi, s).expected_time_s
            at_conf[s] = startup_s + time_at_confidence_s(rev(at_q, s), q)
            rate = w[s] * row["p_sp"][s] / 3600.0
            cost[s], cost_lo[s], cost_hi[s] = rate * time_s[s], rate * lower[s], rate * upper[s]
            ckpt_s[s], revs[s] = mean.checkpoint_interval_s, mean.expected_revocations

        m = np.flatnonzero(c.in_market("mixed"))
        not_simulated = 0
        if m.size:
            keep[m] = False
            if deadline_s is not None:
                chosen, not_simulated = self._mixed(est, m, row, startup_s=startup_s, confidence=q, deadline_s=deadline_s,
                                     spot_at_conf=at_conf, od_at_conf=est.time_at_confidence_s, every=every_mixed)
                for i, vals in chosen.items():
                    keep[i] = True
                    time_s[i], lower[i], upper[i], at_conf[i] = vals["time"], vals["lower"], vals["upper"], vals["at_conf"]
                    cost[i], cost_lo[i], cost_hi[i] = vals["cost"], vals["cost_lower"], vals["cost_upper"]
                    price[i] = vals["price"]
                    ckpt_s[i], revs[i], od_share[i], sched[i] = vals["ckpt"], vals["revs"], vals["od_share"], vals["schedule"]

        out = replace(
            est, time_s=time_s, time_lower_s=lower, time_upper_s=upper, time_at_confidence_s=at_conf,
            cost=cost, cost_lower=cost_lo, cost_upper=cost_hi, price_per_hour=price,
            time_if_reached_s=if_reached, log_sigma_success=sig_success, revocation_law_s=law,
        )
        # One promise: the count quantile above (n_q revocations at the work's q-quantile)
        # said 9m08s at q = 0.9 for a spot plan whose P(success) by a 10-minute deadline
        # was 0.81 — each factor at q is not both at q. The time at the confidence is the
        # later of the two, so "done by it" implies P(success) ≥ q, and the solver's
        # deadline and budget rules (time and cost at the confidence) keep that promise.
        from cotune.solver import success_time_quantile_s

        moved = np.flatnonzero(~c.in_market("on_demand") & keep)
        if moved.size:
            joint = success_time_quantile_s(out.take(moved), q, startup_s=startup_s)
            at_conf[moved] = np.maximum(at_conf[moved], joint)
            out = replace(out, time_at_confidence_s=at_conf)
        details = SpotDetails(
            checkpoint_interval_s=ckpt_s, job_revocations_per_hour=np.where(~c.in_market("on_demand"), row["lam"] * 3600.0, np.nan),
            expected_revocations=revs, on_demand_share=od_share, schedule_s=sched, mixed_not_simulated=not_simulated,
        )
        if keep.all():
            return out, details
        idx = np.flatnonzero(keep)
        return out.take(idx), details.rows(idx)

    def _mixed(self, est, m, row, *, startup_s, confidence: float, deadline_s, spot_at_conf, od_at_conf,
               every: bool = False) -> tuple[dict[int, dict[str, float]], int]:
        """Simulate the uniform-progress rule for mixed rows where it can matter; also the
        count of such rows left out for needing more than MAX_MIXED_ATTEMPTS segments."""
        c = est.candidates
        # The spot and on-demand twins of each mixed row (same gpu, workers, hosts, batch).
        key = lambda i: (int(c.gpu[i]), int(c.workers[i]), int(c.hosts[i]), int(c.local_batch[i]))  # noqa: E731
        twins: dict[tuple[int, int, int, int], dict[int, int]] = {}
        for i in np.flatnonzero(~c.in_market("mixed")):
            twins.setdefault(key(i), {})[c.markets[int(c.market[i])]] = int(i)
        train = est.time_s - startup_s
        plan_work = est.time_at_confidence_s - startup_s
        todo = []
        for i in m:
            t = twins.get(key(i), {})
            if "on_demand" not in t or "spot" not in t:
                continue
            od_ok = od_at_conf[t["on_demand"]] <= deadline_s
            spot_ok = spot_at_conf[t["spot"]] <= deadline_s
            if (every or (od_ok and not spot_ok)) and math.isfinite(train[i]):
                todo.append(int(i))
        if not todo:
            return {}, 0
        idx = np.array(todo)
        mean = revocation_estimate(
            work_s=train[idx], rate_per_s=row["lam"][idx], checkpoint_write_s=row["write"][idx], restart_s=row["restart"][idx]
        )
        tau = mean.checkpoint_interval_s
        seg = np.where(np.isfinite(tau), tau, train[idx])
        margin = seg + row["write"][idx] + row["restart"][idx]
        schedule = deadline_s - startup_s - margin
        # The simulator takes one numpy step per segment or revocation of the longest run:
        # a row needing more than MAX_MIXED_ATTEMPTS (a job of days checkpointed every
        # minute under heavy revocation) is not simulated — left out like a row where the
        # rule cannot matter — so an answer takes seconds, not minutes.
        with np.errstate(divide="ignore", invalid="ignore"):
            attempts = plan_work[idx] / seg + 2.0 * np.nan_to_num(mean.expected_revocations, nan=np.inf)
        fits = schedule >= plan_work[idx]
        if every:
            # A job already running mixed is weighed as it runs: a line too short for the work
            # at the confidence only means it runs on on-demand while behind (a line ending at
            # ε is behind from the start). Dropping the row told a job ahead of schedule that
            # "the current configuration cannot continue" and paid a restart to leave it.
            fits = np.ones_like(fits)
            schedule = np.maximum(schedule, _MIN_SCHEDULE_S)
        ok = fits & (attempts <= MAX_MIXED_ATTEMPTS)
        not_simulated = int(np.count_nonzero(fits & ~ok))
        idx, tau, schedule = idx[ok], tau[ok], schedule[ok]
        if idx.size == 0:
            return {}, not_simulated
        common = dict(
            rate_per_s=row["lam"][idx], checkpoint_interval_s=tau, checkpoint_write_s=row["write"][idx],
            restart_s=row["restart"][idx], runs=self.runs, seed=self.seed, policy="mixed",
            schedule_s=schedule, switch_s=row["restart"][idx],
            # Each configuration its own stream, seeded from it: the same configuration gets
            # the same runs whatever else is searched (one shared stream priced 2 x t4 mixed
            # at $0.3285 in a full search and $0.3185 alone, and a re-plan judged staying and
            # switching on different samples, 3 % apart against a 5 % margin).
            streams=[(zlib.crc32(c.gpus[int(c.gpu[i])].encode()), int(c.workers[i]), int(c.hosts[i]), int(c.local_batch[i]))
                     for i in idx.tolist()],
        )
        sim = simulate(work_s=train[idx], **common)
        t_mean = sim.time_s.mean(axis=-1)
        costs = sim.cost(workers=c.workers[idx], spot_price_per_hour=row["p_sp"][idx], on_demand_price_per_hour=row["p_od"][idx])
        start_cost = c.workers[idx] * row["p_sp"][idx] * startup_s / 3600.0
        c_mean = costs.mean(axis=-1) + start_cost
        sim_q = sim if np.allclose(plan_work[idx], train[idx]) else simulate(work_s=plan_work[idx], **common)
        t_conf = np.quantile(sim_q.time_s, confidence, axis=-1)
        share = sim.on_demand_time_s.sum(axis=-1) / np.maximum(sim.time_s.sum(axis=-1), 1e-12)
        out: dict[int, dict[str, float]] = {}
        for j, i in enumerate(idx.tolist()):
            r_lo = (est.time_lower_s[i] - startup_s) / train[i] if train[i] > 0 else 1.0
            r_hi = (est.time_upper_s[i] - startup_s) / train[i] if train[i] > 0 else 1.0
            t = startup_s + float(t_mean[j])
            out[i] = dict(
                time=t, lower=startup_s + float(t_mean[j]) * r_lo, upper=startup_s + float(t_mean[j]) * r_hi,
                at_conf=startup_s + float(t_conf[j]), cost=float(c_mean[j]),
                cost_lower=float(c_mean[j]) * r_lo, cost_upper=float(c_mean[j]) * r_hi,
                price=float(c_mean[j]) / (float(c.workers[i]) * t / 3600.0),
                ckpt=float(tau[j]), revs=float(sim.revocations[j].mean()), od_share=float(share[j]),
                schedule=float(schedule[j]) + startup_s,
            )
        return out, not_simulated

    def summary(self, est: Estimates, details: SpotDetails, i: int) -> dict[str, float | str | None] | None:
        """Candidate ``i``'s revocation details as plain data (None for on-demand)."""
        c = est.candidates
        market = c.markets[int(c.market[i])]
        if market == "on_demand":
            return None
        delta = self.cluster.checkpoint.write_s if self.cluster.checkpoint else 0.0
        lam = float(details.job_revocations_per_hour[i]) / 3600.0

        def num(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        return {
            "market": market,
            "checkpoint_interval_s": num(float(details.checkpoint_interval_s[i])),
            "young_daly_interval_s": num(float(young_daly_interval_s(checkpoint_write_s=delta, rate_per_s=lam))),
            "checkpoint_write_s": float(delta),
            "job_revocations_per_hour": float(details.job_revocations_per_hour[i]),
            "expected_revocations": float(details.expected_revocations[i]),
            "on_demand_share": num(float(details.on_demand_share[i])) if market == "mixed" else None,
            "schedule_s": num(float(details.schedule_s[i])) if market == "mixed" else None,
        }

    def describe(self, est: Estimates, details: SpotDetails, i: int) -> list[str]:
        """Plain-language notes about candidate ``i`` (its checkpointing and revocation risk)."""
        from cotune.units import format_duration

        c = est.candidates
        market = c.markets[int(c.market[i])]
        if market == "on_demand":
            return []
        gpu = c.gpus[int(c.gpu[i])]
        tau = float(details.checkpoint_interval_s[i])
        delta = self.cluster.checkpoint.write_s if self.cluster.checkpoint else 0.0
        lam = float(details.job_revocations_per_hour[i]) / 3600.0
        yd = float(young_daly_interval_s(checkpoint_write_s=delta, rate_per_s=lam))
        rule = f"Young/Daly √(2δ/λ) = {format_duration(yd)} with δ = {format_duration(delta)}"
        if yd == 0.0 and math.isfinite(tau):
            # A free checkpoint: Young/Daly says "continuously"; the interval shown is the
            # one the segment cap allows, not a rounding of 0.
            rule += (f": a free checkpoint, so as often as a plan may, every {format_duration(MIN_CHECKPOINT_INTERVAL_S)} "
                     "or so")
        ck = (
            f"checkpoint every {format_duration(tau)} of training ({rule}, rounded to equal segments)"
            if math.isfinite(tau)
            else f"no intermediate checkpoint: one segment has the lower expected time ({rule})"
        )
        hosts = int(c.hosts[i])
        lines = [
            f"{market} plan ({gpu} x{int(c.workers[i])} on {hosts} server{'s' if hosts > 1 else ''}): {ck}; "
            f"job revocation rate {details.job_revocations_per_hour[i]:.3g}/h, "
            f"{details.expected_revocations[i]:.2g} revocations expected"
        ]
        if market == "mixed":
            lines.append(
                f"mixed plan: spot while ahead of the straight line to {format_duration(float(details.schedule_s[i]))}, "
                f"on-demand while behind; {details.on_demand_share[i]:.0%} of the time on on-demand in "
                f"{self.runs} simulated runs (seed {self.seed})"
            )
        return lines
