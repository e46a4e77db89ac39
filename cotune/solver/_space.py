"""The search space: every (gpu, market, workers, hosts, local batch) candidate."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Mapping

import numpy as np

from cotune._checks import integer
from cotune._request import DEFAULT_MAX_CANDIDATES
from cotune.errors import InputError
from cotune.solver._count import check_candidate_limit

__all__ = ["SearchSpace", "Candidates", "enumerate_candidates", "geometric_batches", "MARKETS"]

MARKETS = ("on_demand", "spot")


@dataclass(frozen=True)
class SearchSpace:
    """What may be chosen.

    ``max_workers`` caps each GPU type (available accelerators); ``local_batches``
    lists the per-worker batches to consider for each GPU type (already capped by
    memory); ``gpus_per_host`` is one size for every GPU type or one per type;
    ``hosts`` is ``"packed"`` (fewest hosts: ⌈workers / gpus_per_host⌉) or
    ``"any"`` (every host count that fits, for schedulers that cannot pack).
    ``max_global_batch`` (the training set's size, when known) leaves out every
    (workers, local batch) whose step would hold more samples than the training set:
    such a step is no configuration (its "epoch" would be shorter than one step).
    """

    gpus: tuple[str, ...]
    max_workers: Mapping[str, int]
    local_batches: Mapping[str, tuple[int, ...]]
    gpus_per_host: int | Mapping[str, int] = 4
    markets: tuple[str, ...] = ("on_demand",)
    hosts: Literal["packed", "any"] = "packed"
    min_workers: int = 1
    workers: tuple[int, ...] | None = None
    max_global_batch: int | None = None

    def __post_init__(self) -> None:
        # Whole numbers >= 1 and <= MAX_INTEGER (10**15), as every door's request: this class is
        # public, and a cap of 10**12 built by hand asked enumerate_candidates for 7 TiB.
        if not self.gpus:
            raise InputError("the search space has no gpu type: profile at least one")
        for gpu in self.gpus:
            if isinstance(self.gpus_per_host, Mapping) and gpu not in self.gpus_per_host:
                raise InputError(f"gpus_per_host has no entry for gpu {gpu!r}: give one per gpu type")
            size = self.gpus_per_host[gpu] if isinstance(self.gpus_per_host, Mapping) else self.gpus_per_host
            integer(size, where=f"gpus_per_host[{gpu!r}]", ge=1)
            if gpu not in self.max_workers:
                raise InputError(f"max_workers has no entry for gpu {gpu!r}: give one per gpu type")
            integer(self.max_workers[gpu], where=f"max_workers[{gpu!r}]", ge=1)
            # len(), not truth: a numpy array of batches (as the docs invite) has no truth value.
            if len(self.local_batches.get(gpu, ())) == 0:
                raise InputError(f"no local batch to consider for {gpu!r}: every probed batch exceeds its memory limit")
            for b in self.local_batches[gpu]:
                integer(b, where=f"local_batches[{gpu!r}]", ge=1)
        integer(self.min_workers, where="min_workers", ge=1)
        for w in () if self.workers is None else self.workers:  # None, not truth: an ndarray has none
            integer(w, where="workers", ge=1)
        for market in self.markets:
            if market not in MARKETS:
                raise InputError(f"unknown market {market!r}: use one of {', '.join(MARKETS)}")
        if self.hosts not in ("packed", "any"):
            raise InputError(f"hosts must be 'packed' or 'any', got {self.hosts!r}")
        if self.max_global_batch is not None:
            integer(self.max_global_batch, where="max_global_batch", ge=1)

    def host_size(self, gpu: str) -> int:
        """GPUs per machine of ``gpu``: a fleet's server types differ (8 V100s, 4 T4s a host)."""
        if isinstance(self.gpus_per_host, Mapping):
            return int(self.gpus_per_host[gpu])
        return int(self.gpus_per_host)

    def worker_counts(self, gpu: str) -> np.ndarray:
        """Worker counts of ``gpu`` some local batch allows (the smallest batch allows the most)."""
        cap = self.worker_cap(gpu, min(self.local_batches[gpu]))
        if self.workers is not None:
            return np.array(sorted({w for w in self.workers if self.min_workers <= w <= cap}), dtype=np.int64)
        return np.arange(self.min_workers, cap + 1, dtype=np.int64)

    def worker_cap(self, gpu: str, local_batch: int) -> int:
        """The most workers of ``gpu`` at ``local_batch``: its cap, and the training set's size."""
        cap = int(self.max_workers[gpu])
        if self.max_global_batch is None:
            return cap
        return min(cap, self.max_global_batch // int(local_batch))


@dataclass(frozen=True)
class Candidates:
    """Struct of arrays, one entry per candidate; ``gpu``/``market`` index the space's tuples."""

    gpus: tuple[str, ...]
    markets: tuple[str, ...]
    gpu: np.ndarray
    market: np.ndarray
    workers: np.ndarray
    hosts: np.ndarray
    local_batch: np.ndarray

    def __len__(self) -> int:
        return int(self.workers.size)

    @property
    def global_batch(self) -> np.ndarray:
        return self.workers * self.local_batch

    def in_market(self, name: str) -> np.ndarray:
        """Mask of the rows on market ``name``: markets are named, ``market`` only indexes ``markets``."""
        if name not in self.markets:
            return np.zeros(len(self), dtype=bool)
        return self.market == self.markets.index(name)


def _placements(workers: np.ndarray, gpus_per_host: int, mode: str) -> tuple[np.ndarray, np.ndarray]:
    packed = -(-workers // gpus_per_host)
    if mode == "packed":
        return workers, packed
    ws, hs = [], []
    for w, h0 in zip(workers.tolist(), packed.tolist()):
        for h in range(h0, w + 1):
            ws.append(w)
            hs.append(h)
    return np.array(ws, dtype=np.int64), np.array(hs, dtype=np.int64)


def enumerate_candidates(space: SearchSpace, *, limit: int = DEFAULT_MAX_CANDIDATES) -> Candidates:
    """Every candidate of the space, as flat arrays (gpu-major order).

    The space is counted in closed form first: over ``limit`` candidates (default: every
    door's, 10⁶; a request's ``max_candidates``) it raises
    :class:`~cotune.solver.SearchSpaceTooLarge` before a single array is made.
    """
    check_candidate_limit(space, limit=limit)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("gpu", "market", "workers", "hosts", "local_batch")}
    for gi, gpu in enumerate(space.gpus):
        w, h = _placements(space.worker_counts(gpu), space.host_size(gpu), space.hosts)
        b = np.asarray(space.local_batches[gpu], dtype=np.int64)
        ww, bb = np.meshgrid(w, b, indexing="ij")
        hh = np.broadcast_to(h[:, None], ww.shape)
        keep = np.ones(ww.shape, dtype=bool) if space.max_global_batch is None else ww * bb <= space.max_global_batch
        ww, bb, hh = ww[keep], bb[keep], hh[keep]
        n = ww.size
        for mi, _ in enumerate(space.markets):
            parts["gpu"].append(np.full(n, gi, dtype=np.int32))
            parts["market"].append(np.full(n, mi, dtype=np.int32))
            parts["workers"].append(ww)
            parts["hosts"].append(hh)
            parts["local_batch"].append(bb)
    cat = {k: np.concatenate(v) if v else np.empty(0, dtype=np.int64) for k, v in parts.items()}
    return Candidates(gpus=space.gpus, markets=space.markets, **cat)


def geometric_batches(lo: int, hi: int, *, per_doubling: int = 2) -> tuple[int, ...]:
    """A geometric grid of integer batches from ``lo`` to ``hi`` inclusive."""
    if lo < 1 or hi < lo:
        raise InputError(f"batch range must satisfy 1 <= lo <= hi, got {lo}..{hi}")
    steps = max(1, int(math.ceil(math.log2(hi / lo) * per_doubling)))
    return tuple(sorted({int(round(v)) for v in np.geomspace(lo, hi, steps + 1)}))

