"""A seeded Monte-Carlo simulator of a training run on revocable servers.

It replays the process the analytic model (:mod:`cotune.spot._revocation`) assumes —
Poisson revocations at ``λ`` per second, segments of ``τ`` seconds of work each
followed by a ``δ``-second checkpoint, ``R`` seconds to replace a revoked server and
reload — one attempt at a time, for many runs at once (numpy, vectorized over runs
and configurations). It is the ground truth the analytic expectations are tested
against, and the only model of the *mixed* policy:

``policy="mixed"`` (Can't Be Late's uniform-progress rule): the straight line from
0 at time 0 to ``work_s`` at ``schedule_s`` is the schedule. Before every attempt
(after a checkpoint or a restart) the run uses spot servers while its progress is at
or ahead of the line, and on-demand servers (never revoked) while behind; it leaves
on-demand only when it would still be on the line after paying the way back
(hysteresis, so it does not flap). Moving to
on-demand costs ``switch_s`` seconds of provisioning, except right after a
revocation, when it replaces the spot replacement; on-demand segments write no
checkpoint, so moving back to spot costs a checkpoint write plus ``switch_s``.
Behind the line the run thus progresses at full speed, and a line that ends
``τ + δ + R`` before the deadline is always caught up (``W ≤ line``).

Billing: every second of wall time is billed at the market in use, including lost
work and restart delays (the surviving servers keep running).

Streams: by default every run of every configuration draws from one generator, in
order, so a configuration's runs depend on what else is simulated beside it. With
``streams`` each configuration draws from its own generator, seeded from ``(seed,
its key)``: attempt ``a`` of run ``r`` takes the ``a·runs + r``-th draw of that stream,
so the same configuration gets the same runs whatever else is simulated (the spot
stage keys its mixed rows by configuration: a mixed row cost 3 % more in a full search
than alone, and a re-plan weighed staying and switching on different samples).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

__all__ = ["SimulationResult", "simulate"]

_MAX_ATTEMPTS = 200_000
# Draws held at once for per-configuration streams (blocks of attempts × runs per
# configuration): bounds the pool to 16 MB whatever the number of configurations.
_POOL_DRAWS = 1 << 21
_MAX_BLOCK_ATTEMPTS = 64


@dataclass(frozen=True)
class SimulationResult:
    """Per-run outcomes, shape ``(..., runs)``: wall seconds of training (no start-up),
    seconds billed on each market, and revocations suffered."""

    time_s: np.ndarray
    spot_time_s: np.ndarray
    on_demand_time_s: np.ndarray
    revocations: np.ndarray

    def cost(
        self,
        *,
        workers: np.ndarray | float,
        spot_price_per_hour: np.ndarray | float,
        on_demand_price_per_hour: np.ndarray | float = 0.0,
    ) -> np.ndarray:
        """``workers × (p_spot·t_spot + p_on_demand·t_on_demand) / 3600`` per run."""
        w = np.asarray(workers, float)[..., None]
        ps = np.asarray(spot_price_per_hour, float)[..., None]
        po = np.asarray(on_demand_price_per_hour, float)[..., None]
        return w * (ps * self.spot_time_s + po * self.on_demand_time_s) / 3600.0


def simulate(
    *,
    work_s: np.ndarray | float,
    rate_per_s: np.ndarray | float,
    checkpoint_interval_s: np.ndarray | float,
    checkpoint_write_s: np.ndarray | float,
    restart_s: np.ndarray | float,
    runs: int = 2000,
    seed: int = 0,
    policy: Literal["spot", "mixed"] = "spot",
    schedule_s: np.ndarray | float | None = None,
    switch_s: np.ndarray | float = 0.0,
    streams: Sequence[Sequence[int]] | None = None,
) -> SimulationResult:
    """Simulate ``runs`` runs of every configuration (parameters broadcast together).

    ``checkpoint_interval_s`` may be ``inf`` (no checkpoint: one segment). For
    ``policy="mixed"``, ``schedule_s`` is when the straight line reaches the end.
    Results have the broadcast shape of the parameters plus a trailing ``runs`` axis.
    ``streams``: one key of whole numbers ≥ 0 per configuration (the broadcast shape in
    C order): each configuration then draws from its own generator seeded from ``(seed,
    key)``, so its runs do not depend on the others (module doc); None: one shared stream.
    """
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    if policy not in ("spot", "mixed"):
        raise ValueError(f"policy must be 'spot' or 'mixed', got {policy!r}")
    if policy == "mixed" and schedule_s is None:
        raise ValueError("policy 'mixed' needs schedule_s: when the straight-line schedule reaches the end")
    params = [work_s, rate_per_s, checkpoint_interval_s, checkpoint_write_s, restart_s, switch_s]
    params.append(np.inf if schedule_s is None else schedule_s)
    arrays = np.broadcast_arrays(*(np.asarray(p, float) for p in params))
    shape = arrays[0].shape + (runs,)
    work, lam, tau, delta, restart, switch, sched = (np.broadcast_to(a[..., None], shape).ravel() for a in arrays)
    slope = work / sched if policy == "mixed" else np.zeros_like(work)

    configs = int(np.prod(arrays[0].shape, dtype=np.int64))
    if streams is not None and len(streams) != configs:
        raise ValueError(f"streams must give one key per configuration ({configs}); got {len(streams)}")
    draw = _Draws(seed=seed, runs=runs, configs=configs, streams=streams)
    m = work.size
    done = np.zeros(m)
    t = np.zeros(m)
    t_spot = np.zeros(m)
    t_od = np.zeros(m)
    revoked = np.zeros(m)
    on_od = np.zeros(m, dtype=bool)
    just_revoked = np.zeros(m, dtype=bool)
    active = np.flatnonzero(work > 0)
    for attempt in range(_MAX_ATTEMPTS):
        if active.size == 0:
            break
        i = active
        remaining = work[i] - done[i]
        last = remaining - tau[i] <= 1e-9 * work[i]  # float-safe: no sliver segment at the end
        seg = np.where(last, remaining, np.minimum(tau[i], remaining))
        length = seg + np.where(last, 0.0, delta[i])
        if policy == "mixed":
            # Hysteresis: leave on-demand only if still on the line after paying the way back.
            back = np.where(on_od[i], switch[i] + delta[i], 0.0)
            want_od = done[i] < slope[i] * (t[i] + back)
        else:
            want_od = np.zeros(i.size, dtype=bool)
        # Switching to on-demand right after a revocation replaces the spot replacement
        # (its delay is already paid); otherwise it costs `switch`. Leaving on-demand
        # first writes the checkpoint that on-demand segments skip.
        to_od = want_od & ~on_od[i] & ~just_revoked[i]
        to_spot = ~want_od & on_od[i]
        pay = np.where(to_od, switch[i], 0.0) + np.where(to_spot, switch[i] + delta[i], 0.0)
        t[i] += pay
        t_od[i] += np.where(to_spot, delta[i], 0.0) + np.where(to_od, switch[i], 0.0)
        t_spot[i] += np.where(to_spot, switch[i], 0.0)
        on_od[i] = want_od
        length = np.where(want_od, seg, length)  # never revoked: no checkpoint needed
        with np.errstate(divide="ignore"):
            survive = draw(i, attempt=attempt) / np.where(lam[i] > 0, lam[i], 0.0)
        ok = want_od | (survive >= length)
        just_revoked[i] = ~ok
        spent = np.where(ok, length, survive + restart[i])
        t[i] += spent
        t_od[i] += np.where(want_od, spent, 0.0)
        t_spot[i] += np.where(want_od, 0.0, spent)
        done[i] += np.where(ok, seg, 0.0)
        revoked[i] += ~ok
        active = i[done[i] < work[i]]
    else:
        t[active] = np.inf  # never finished: report it, do not hide it
    return SimulationResult(
        time_s=t.reshape(shape),
        spot_time_s=t_spot.reshape(shape),
        on_demand_time_s=t_od.reshape(shape),
        revocations=revoked.reshape(shape),
    )


class _Draws:
    """Unit exponential draws for the active runs of one attempt: from one shared
    generator in order, or (``streams``) from each configuration's own generator, where
    attempt ``a`` of run ``r`` is the ``a·runs + r``-th draw of its stream. A run is active
    at every attempt until it finishes, so each stream is read in order, a block of
    attempts at a time."""

    def __init__(self, *, seed: int, runs: int, configs: int, streams: Sequence[Sequence[int]] | None) -> None:
        self._runs = runs
        self._shared = np.random.default_rng(seed) if streams is None else None
        self._gens = [] if streams is None else [
            np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), *(int(k) for k in key)])))
            for key in streams
        ]
        self._block = max(1, min(_MAX_BLOCK_ATTEMPTS, _POOL_DRAWS // max(configs * runs, 1)))
        self._pool = None if streams is None else np.empty((configs, self._block, runs))

    def __call__(self, rows: np.ndarray, *, attempt: int) -> np.ndarray:
        if self._shared is not None:
            return self._shared.exponential(1.0, rows.size)
        assert self._pool is not None
        config, run = np.divmod(rows, self._runs)
        slot = attempt % self._block
        if slot == 0:
            for c in np.unique(config).tolist():
                self._pool[c] = self._gens[c].standard_exponential((self._block, self._runs))
        return self._pool[config, slot, run]
