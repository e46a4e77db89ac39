"""Inputs of the solver built from a fitted profile and a question: the search space, the
price table, and the search-space size checked against the candidate limit *before*
anything is enumerated (so an absurd space fails fast instead of exhausting memory)."""

from __future__ import annotations

import math
from typing import Literal, Mapping, Sequence

import numpy as np

from cotune._checks import BadValue
from cotune.errors import InputError, ModelError
from cotune.models import FittedModels
from cotune.solver._count import SearchSpaceTooLarge, check_candidate_limit, count_candidates, placements
from cotune.solver._space import SearchSpace

__all__ = ["SearchSpaceTooLarge", "build_space", "check_candidate_limit", "count_candidates", "price_table"]


def _per_gpu(value: int | Mapping[str, int], gpus: Sequence[str], name: str) -> dict[str, int]:
    if isinstance(value, Mapping):
        missing = [g for g in gpus if g not in value]
        if missing:
            raise InputError(f"{name} has no entry for gpu {', '.join(missing)}: give one per gpu type")
        out = {g: int(value[g]) for g in gpus}
    else:
        out = {g: int(value) for g in gpus}
    for g, v in out.items():
        if v < 1:
            raise InputError(f"{name} for {g!r} must be >= 1, got {v}")
    return out


def _market_spelling(market: str) -> str | None:
    """The market a misspelt one means ('on-demand', 'On Demand', 'ondemand'), or None."""
    squashed = market.strip().lower().replace("-", "").replace("_", "").replace(" ", "")
    known = {"ondemand": "on_demand", "spot": "spot"}.get(squashed)
    return known if known is not None and known != market else None


def _price_at(key: str) -> str:
    """The JSON Pointer of a price."""
    from cotune._request import pointer_key

    return "/prices/" + pointer_key(key)


def price_table(
    prices: Mapping[str, float] | None, gpus: Sequence[str], markets: Sequence[str]
) -> tuple[np.ndarray, bool]:
    """Price per worker-hour as an array (gpu × market); ones (worker-hours) when unpriced.

    Keys are ``"gpu"`` (on-demand) or ``"gpu:market"``; keys of other types are not used.
    """
    table = np.ones((len(gpus), len(markets)))
    if not prices:
        return table, False
    for key, value in prices.items():
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise InputError(f"price for {key!r} must be a non-negative number, got {value!r}")
    off_market = sorted(k for k in prices if ":" in k and k.split(":", 1)[1] not in markets)
    misspelt = {k: _market_spelling(k.split(":", 1)[1]) for k in off_market}
    misspelt = {k: m for k, m in misspelt.items() if m is not None}
    # Each error points at the price it is about (/prices/t4:bogus; --price t4:bogus at the
    # CLI), as every other field's check does: HTTP callers got "path": null.
    if misspelt:
        k, m = next(iter(misspelt.items()))
        raise BadValue(f"price key {k!r}: the market is written {m!r} ({k.split(':', 1)[0]}:{m}); markets are "
                       "on_demand and spot", where=_price_at(k))
    unknown_market = [k for k in off_market if k.split(":", 1)[1] not in ("on_demand", "spot")]
    if unknown_market:
        raise BadValue(f"price key {unknown_market[0]!r} names no market cotune knows: markets are on_demand (a key "
                       "without one means it) and spot", where=_price_at(unknown_market[0]))
    if off_market:
        raise BadValue(
            f"price for {', '.join(off_market)} names a market that is not searched ({', '.join(markets)}): "
            "spot prices need revocation rates, so give them in a cluster file (--cluster FILE, docs/spot.md)",
            where=_price_at(off_market[0]),
        )
    # A price for a type outside the search space is unused (a scheduler's whole price list, or
    # a type --gpu leaves out; the request's check_cap_names notes the unprofiled ones). A typo
    # cannot slip through: the searched type it was meant for has no price and is refused below.
    for gi, gpu in enumerate(gpus):
        for mi, market in enumerate(markets):
            key = f"{gpu}:{market}"
            if key in prices:
                table[gi, mi] = prices[key]
            elif market == "on_demand" and gpu in prices:
                table[gi, mi] = prices[gpu]
            else:
                key = gpu if market == "on_demand" else key
                raise BadValue(
                    f"no price for {gpu} on the {market} market: add its USD per worker-hour (--price {key}=USD_PER_HOUR / "
                    f"prices[\"{key}\"]), or give no prices at all to compare worker-hours", where="/prices"
                )
    return table, True


def _host_size_notes(models: "FittedModels", gpus: Sequence[str], gpus_per_host: Mapping[str, int]) -> list[str]:
    """A note per GPU type whose probes ran more workers on one host than the space puts
    there: its hosts hold more GPUs than ``gpus_per_host`` says, and every candidate of that
    size is split over hosts it was never measured on (an imported 8-GPU run, planned on 2
    hosts of 4 and "extrapolated in time")."""
    out = []
    for gpu in gpus:
        points = models.time_models[gpu].points_
        per_host = np.ceil(points[:, 0] / points[:, 1])
        k = int(np.argmax(per_host))
        size = gpus_per_host[gpu]
        if per_host[k] > size:
            hosts = int(points[k, 1])
            out.append(f"{gpu}: the profile measured {int(points[k, 0])} workers on {hosts} host{'' if hosts == 1 else 's'}, "
                       f"but gpus_per_host (--gpus-per-host, or the cluster file's) is {size}: candidates put at "
                       f"most {size} workers on a host; give {gpu}={int(per_host[k])} if its hosts hold that many GPUs")
    return out


def build_space(
    models: "FittedModels",
    *,
    gpus: Sequence[str] | None,
    max_workers: int | Mapping[str, int],
    gpus_per_host: int | Mapping[str, int],
    local_batches: Sequence[int] | None,
    markets: Sequence[str] = ("on_demand",),
    hosts: Literal["packed", "any"] = "packed",
    workers: Sequence[int] | None = None,
    required_gpus: Sequence[str] = (),
) -> tuple[SearchSpace, list[str]]:
    """The search space for a fitted profile, and notes about what was capped.

    A GPU type whose every local batch is above its memory limit is left out with a note
    (one type that ran out of memory must not sink the others); the space is refused only
    when no type is left, or when that type is in ``required_gpus`` (a re-plan's current
    GPU: staying on it must be weighed)."""
    notes: list[str] = []
    chosen = tuple(g.lower() for g in (gpus or models.gpus))
    unknown = [g for g in chosen if g not in models.time_models]
    if unknown:
        raise InputError(
            f"gpu {', '.join(unknown)} has no timing probes in this profile: profiled gpus are {', '.join(models.gpus)}"
        )
    sizes = _per_gpu(gpus_per_host, chosen, "gpus_per_host")
    caps = _per_gpu(max_workers, chosen, "max_workers")
    batches: dict[str, tuple[int, ...]] = {}
    # GPU types left without a local batch by their memory limit: (gpu, why, the fix, whether
    # the fix is the request's local_batches).
    no_batch: list[tuple[str, str, str, bool]] = []
    for g in chosen:
        probed = sorted({int(v) for v in models.time_models[g].points_[:, 2]})
        wanted = sorted({int(v) for v in local_batches}) if local_batches else probed
        if any(v < 1 for v in wanted):
            raise InputError(f"local batches must be >= 1, got {wanted}")
        # A step holds at most every training sample once: a larger local batch is no
        # configuration at all (it was answered with a billion epochs and 925,207 days).
        too_big = [v for v in wanted if v > models.dataset_size]
        if too_big:
            wanted = [v for v in wanted if v <= models.dataset_size]
            if not wanted:
                message = (f"local batch {', '.join(map(str, too_big))} is more than the profile's "
                           f"{models.dataset_size:,} training samples: a step cannot hold more; give local "
                           f"batches (--local-batch / local_batches) of at most {models.dataset_size:,}")
                if not local_batches:  # the profile's own probed batches: no request field to point at
                    raise InputError(message)
                # The pointer, as every other bad field has: a --json error and HTTP's carry it.
                first = next(k for k, v in enumerate(local_batches) if int(v) > models.dataset_size)
                raise BadValue(message, where=f"/local_batches/{first}")
            notes.append(f"{g}: local batch {', '.join(map(str, too_big))} dropped (more than the "
                         f"{models.dataset_size:,} training samples)")
        limit = models.max_local_batch.get(g)
        if limit is not None:
            # The limit is one micro-batch's (an out-of-memory record's local batch is what a
            # worker holds at once): a batch probed as 64 × 4 accumulation steps holds 64, and
            # comparing its 256 dropped every probed batch of a user who OOMs at 128.
            holds = {v: v // models.accum_steps_for(g, v) for v in wanted}
            dropped = [v for v in wanted if holds[v] > limit]
            wanted = [v for v in wanted if holds[v] <= limit]
            named = ", ".join(str(v) if holds[v] == v else f"{v} ({holds[v]} × {v // holds[v]} accumulation steps)"
                              for v in dropped)
            if dropped and wanted:
                notes.append(f"{g}: local batch {named} dropped (out of memory above {limit})")
            if not wanted:
                if limit < 1:  # out of memory at a local batch of 1: there is no smaller batch to suggest
                    why = f"no local batch fits in its memory (out of memory at local batch {limit + 1})"
                    no_batch.append((g, why, "probe another gpu type (cotune profile)", False))
                elif local_batches:
                    why = f"local batch {named} is above its memory limit (out of memory above {limit})"
                    no_batch.append((g, why, f"give local batches (--local-batch / local_batches) of at most {limit}", True))
                else:
                    why = f"local batch {named} (every probed one) is above its memory limit (out of memory above {limit})"
                    no_batch.append((g, why, f"probe a local batch of at most {limit}, or give local batches "
                                             "(--local-batch / local_batches)", False))
                continue
        batches[g] = tuple(wanted)
    if no_batch:
        left = [g for g in chosen if g in batches]
        refused = [entry for entry in no_batch if entry[0] in required_gpus] or ([] if left else no_batch)
        if refused:
            # Said here, at what to change: the space's own check ("no local batch to
            # consider") was a plain error that HTTP answered with "path": null.
            told = "; ".join(f"no local batch to consider for {g!r}: {why}: {fix}" for g, why, fix, _ in refused)
            if all(at for *_, at in refused):
                raise BadValue(told, where="/local_batches")
            raise ModelError(told)
        for g, why, fix, _ in no_batch:
            # A smaller batch is worth probing only where one exists.
            fits_one = (models.max_local_batch.get(g) or 0) >= 1
            notes.append(f"{g}: not considered: {why}" + (f"; {fix} to weigh it" if fits_one else ""))
        chosen = tuple(left)
    # First, as before; only of the types searched (a type left out above gets no advice on its hosts).
    notes[:0] = _host_size_notes(models, chosen, sizes)
    # A global batch (workers × local batch) above the training set is no configuration
    # either: the space leaves those pairs out (SearchSpace.max_global_batch), said here.
    data = models.dataset_size
    for g in list(chosen):
        cut = [(b, data // b) for b in batches[g] if data // b < caps[g]]
        if not cut:
            continue
        # Every local batch left is <= the training set (above), so each keeps one worker at least.
        listed = ", ".join(f"{b} on at most {w}" for b, w in sorted(cut, reverse=True))
        notes.append(f"{g}: global batches above the profile's {data:,} training samples left out (a step cannot "
                     f"hold more): local batch {listed} workers")
    space = SearchSpace(
        gpus=chosen,
        max_workers=caps,
        local_batches=batches,
        gpus_per_host=sizes,
        markets=tuple(markets),
        hosts=hosts,
        workers=None if workers is None else tuple(int(w) for w in workers),
        max_global_batch=data,
    )
    if space.workers is not None and count_candidates(space) == 0:
        # Only listed worker counts can empty the space (every local batch fits one worker):
        # said here, not as "nothing feasible" with a hint about the target.
        why = []
        for g in chosen:
            b = min(space.local_batches[g])
            by_cap = caps[g] <= data // b
            why.append(f"{g} allows at most {space.worker_cap(g, b):,} ("
                       + (f"max_workers {caps[g]:,}" if by_cap else f"{data:,} training samples at local batch {b}") + ")")
        capped = any(caps[g] <= data // min(space.local_batches[g]) for g in chosen)
        raise BadValue(f"no candidate: every worker count listed ({', '.join(map(str, sorted(set(space.workers))))}) "
                       f"is above what the space allows ({'; '.join(why)}): list smaller ones"
                       + (", or raise max_workers (--max-workers)" if capped else ""), where="/workers")
    return space, notes
