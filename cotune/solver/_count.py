"""Counting a search space in closed form, and the one candidate limit every door enforces.

Below :mod:`cotune.solver._space` (which counts a space before enumerating it) and
:mod:`cotune.solver._inputs` (which builds spaces): it imports neither at run time."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Sequence

from cotune._lazy import annotation_module
from cotune.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import cotune.solver
else:  # cotune.solver._space imports this module: SearchSpace is imported when an annotation is evaluated
    cotune = annotation_module("cotune")

__all__ = ["SearchSpaceTooLarge", "check_candidate_limit", "count_candidates", "placements"]


class SearchSpaceTooLarge(InputError):
    """The search space has more candidates than the limit allows (``count`` and ``limit`` say how many)."""

    def __init__(self, message: str, *, count: int, limit: int) -> None:
        super().__init__(message)
        self.count = count
        self.limit = limit


def _any_hosts(n: int, g: int) -> int:
    """Σ_{w=1..n} (w − ⌈w/g⌉ + 1): host counts per worker count with ``hosts="any"``, in closed form."""
    q, r = divmod(n, g)
    return n * (n + 1) // 2 - (g * q * (q + 1) // 2 + r * (q + 1)) + n


def placements(*, cap: int, gpus_per_host: int, hosts: str, workers: Sequence[int] | None, min_workers: int = 1) -> int:
    """(workers, hosts) pairs of one gpu type, counted in closed form (no arrays: caps may be huge)."""
    g = gpus_per_host
    if workers is not None:
        ws = {int(w) for w in workers if min_workers <= w <= cap}
        return sum(w - -(-w // g) + 1 for w in ws) if hosts == "any" else len(ws)
    if cap < min_workers:
        return 0
    if hosts == "any":
        return _any_hosts(cap, g) - (_any_hosts(min_workers - 1, g) if min_workers > 1 else 0)
    return cap - min_workers + 1


def count_candidates(space: "cotune.solver.SearchSpace") -> int:
    """How many candidates :func:`~cotune.solver.enumerate_candidates` makes of ``space``, without making them."""
    return sum(
        placements(cap=space.worker_cap(gpu, b), gpus_per_host=space.host_size(gpu), hosts=space.hosts,
                   workers=space.workers, min_workers=space.min_workers)
        for gpu in space.gpus
        for b in space.local_batches[gpu]
    ) * len(space.markets)


def check_candidate_limit(space: "cotune.solver.SearchSpace | int", *, limit: int, rows_per_candidate: float = 1.0) -> int:
    """The space's candidate count (times the rows a market stage may add per candidate), or
    :class:`SearchSpaceTooLarge` if it exceeds ``limit``. ``space`` may be a count already.

    The one place every door's candidate limit is enforced (CLI, Python, HTTP): a search
    that handles larger spaces otherwise (sampling instead of enumerating) hooks in here.
    """
    # Exact integers: a float product misprints counts past 2**53 (4,125,000,000,000,011,165,...).
    count = space if isinstance(space, int) else count_candidates(space)
    n = int(count * Fraction(rows_per_candidate).limit_denominator(1000))
    packed = not isinstance(space, int) and space.hosts == "packed"
    if n > limit:
        raise SearchSpaceTooLarge(
            f"the search space has {n:,} candidates, over the limit of {limit:,}: lower max_workers (--max-workers), "
            "list the worker counts or local batches to consider (--workers, --local-batch)"
            + ("" if packed else ", or use hosts 'packed'"),
            count=n,
            limit=limit,
        )
    return n
