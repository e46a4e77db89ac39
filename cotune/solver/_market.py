"""The market stage of a recommendation: how the markets a job may run on change the search.

:func:`cotune.recommend` is a straight line — enumerate → *stage* → estimate → *stage* →
feasibility → rank → report — and the two *stage* steps belong to a :class:`MarketStage`.
The default, :class:`OnDemandMarket`, changes nothing: one market, prices from a table.
:class:`cotune.spot.SpotMarket` (a cluster file) adds spot and mixed rows and replaces
their time and cost by revocation-aware ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence

import numpy as np

from cotune._request import RecommendRequest
from cotune.models import FittedModels
from cotune.solver._estimate import Estimates
from cotune.solver._inputs import build_space, price_table
from cotune.solver._space import Candidates, SearchSpace

__all__ = ["MarketStage", "OnDemandMarket"]


class MarketStage(Protocol):
    """What a market changes in a recommendation. Every method is pure."""

    #: Most rows :meth:`candidates` makes per enumerated candidate (bounds the search size).
    rows_per_candidate: float
    #: Notes about the market for the report (e.g. gpu types left out).
    notes: tuple[str, ...]
    #: The market as plain data for the report's ``cluster`` field (None: on-demand prices only).
    document: Mapping[str, Any] | None

    def space(self, request: "RecommendRequest", models: "FittedModels") -> tuple[SearchSpace, list[str]]:
        """The search space (gpus, caps, host size, markets) and notes about what was capped."""
        ...

    def price_per_hour(self, gpus: Sequence[str]) -> tuple[np.ndarray, bool]:
        """USD per worker-hour, shape ``(len(gpus), len(markets))``, and whether it is priced."""
        ...

    def candidates(self, cands: Candidates, request: "RecommendRequest") -> Candidates:
        """The enumerated candidates with rows added or dropped for this market."""
        ...

    def adjust_for(self, est: Estimates, request: "RecommendRequest") -> tuple[Estimates, Any]:
        """The estimates corrected for this market, and per-row details for :meth:`report`."""
        ...

    def report(self, est: Estimates, details: Any, index: int) -> tuple[list[str], Mapping[str, Any] | None]:
        """Notes about candidate ``index`` and its market summary for the report (None: nothing to say)."""
        ...

    def adjust_notes(self, details: Any) -> list[str]:
        """Notes about what :meth:`adjust_for` left out of every answer (e.g. rows it could not simulate)."""
        ...


@dataclass(frozen=True)
class OnDemandMarket:
    """The default stage: on-demand servers that are never revoked, priced by ``prices``."""

    prices: Mapping[str, float] | None = None
    rows_per_candidate: float = 1.0
    notes: tuple[str, ...] = ()
    document: Mapping[str, Any] | None = None

    def space(self, request: "RecommendRequest", models: "FittedModels") -> tuple[SearchSpace, list[str]]:
        gpus = [g.lower() for g in request.gpus or models.gpus]
        return build_space(
            models, gpus=gpus, max_workers=request.caps(gpus), gpus_per_host=request.host_sizes(gpus),
            local_batches=request.local_batches, hosts=request.hosts, workers=request.workers,
        )

    def price_per_hour(self, gpus: Sequence[str]) -> tuple[np.ndarray, bool]:
        return price_table(self.prices, gpus, ("on_demand",))

    def candidates(self, cands: Candidates, request: "RecommendRequest") -> Candidates:
        return cands

    def adjust_for(self, est: Estimates, request: "RecommendRequest") -> tuple[Estimates, Any]:
        return est, None

    def report(self, est: Estimates, details: Any, index: int) -> tuple[list[str], Mapping[str, Any] | None]:
        return [], None

    def adjust_notes(self, details: Any) -> list[str]:
        return []
