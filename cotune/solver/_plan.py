"""The deployable plan of a chosen candidate: how to lay workers on hosts, and how far a
scheduler may resize the job without losing the target or the deadline.

Schedulers (Kubeflow's elastic PyTorchJob, Volcano, a load-aware autoscaler) need more
than one worker count: they need the *range* they may move in. The range is read off the
same estimates the solver ranked, so it costs nothing extra and cannot disagree with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from cotune.solver._estimate import Estimates

__all__ = ["Plan", "plan_for", "balanced_hosts"]


def balanced_hosts(*, workers: int, hosts: int) -> tuple[int, ...]:
    """Workers per host, as even as possible: ``w = h·q + r`` → ``r`` hosts of ``q+1``, the rest ``q``.

    Even splits let a manifest use identical pods (one per host) whenever ``h`` divides ``w``.
    """
    if hosts < 1 or workers < hosts:
        raise ValueError(f"need 1 <= hosts <= workers, got workers={workers}, hosts={hosts}")
    q, r = divmod(workers, hosts)
    return tuple([q + 1] * r + [q] * (hosts - r))


@dataclass(frozen=True)
class Plan:
    """Where and how elastically to run the chosen configuration.

    ``min_workers``..``max_workers`` is the widest run of consecutive worker counts of
    the search space, around the chosen one, that keeps the same gpu, market and local
    batch and still meets every constraint when the whole job runs at that count
    (hosts packed: ⌈workers / gpus_per_host⌉). ``min_workers == max_workers`` means the
    plan does not allow resizing.
    """

    gpu: str
    market: str
    local_batch: int
    workers: int
    hosts: int
    gpus_per_host: int
    workers_per_host: tuple[int, ...]
    min_workers: int
    max_workers: int
    # Gradient-accumulation steps of the local batch (Choice.accum_steps): what the launched
    # job must run with to hold local_batch / accum_steps samples at once, as its probes did.
    accum_steps: int = 1

    @property
    def elastic(self) -> bool:
        return self.max_workers > self.min_workers

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "market": self.market,
            "local_batch": self.local_batch,
            "accum_steps": self.accum_steps,
            "workers": self.workers,
            "hosts": self.hosts,
            "gpus_per_host": self.gpus_per_host,
            "workers_per_host": list(self.workers_per_host),
            "elastic": {"min_workers": self.min_workers, "max_workers": self.max_workers},
        }


def plan_for(est: Estimates, ok: np.ndarray, index: int, *, gpus_per_host: int | Mapping[str, int]) -> Plan:
    """The plan of candidate ``index``, given the feasibility mask ``ok`` of all candidates
    (``gpus_per_host``: one size, or the search space's per GPU type)."""
    c = est.candidates
    gi, mi, b = int(c.gpu[index]), int(c.market[index]), int(c.local_batch[index])
    if isinstance(gpus_per_host, Mapping):
        gpus_per_host = int(gpus_per_host[c.gpus[gi]])
    w0, h0 = int(c.workers[index]), int(c.hosts[index])
    packed = -(-c.workers // gpus_per_host)
    same = (c.gpu == gi) & (c.market == mi) & (c.local_batch == b) & (c.hosts == packed)
    counts = np.unique(np.append(c.workers[same], w0))  # every worker count of the space, in order
    good = set(c.workers[same & ok].tolist()) | {w0}
    k = int(np.searchsorted(counts, w0))
    lo = hi = k
    while lo > 0 and int(counts[lo - 1]) in good:
        lo -= 1
    while hi + 1 < counts.size and int(counts[hi + 1]) in good:
        hi += 1
    return Plan(
        gpu=c.gpus[gi],
        market=c.markets[mi],
        local_batch=b,
        workers=w0,
        hosts=h0,
        gpus_per_host=gpus_per_host,
        workers_per_host=balanced_hosts(workers=w0, hosts=h0),
        min_workers=int(counts[lo]),
        max_workers=int(counts[hi]),
    )
