"""The plain-data API that schedulers call: a JSON request in, a JSON document out
(``recommend_request``, ``replan_request``; ``cotune serve`` puts them on HTTP).

    >>> from cotune.api import recommend_request
    >>> doc = recommend_request({"profile": "cifar10-resnet18", "target": 0.94,
    ...                          "deadline_s": 1800, "max_workers": 16})
    >>> doc["status"], doc["recommendation"]["workers"]          # doctest: +SKIP

Schemas (versioned, published): ``docs/schema/recommend-request.v1.json``,
``recommend-response.v1.json``, ``replan-request.v1.json``, ``replan-response.v1.json``
and ``error.v1.json``; :func:`schema` returns them.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from cotune.api._errors import ERROR_SCHEMA_VERSION, LimitError, RequestError, error_document
from cotune._request import ProfileRef, RecommendRequest, ReplanRequest
from cotune.api._request import REQUEST_SCHEMA_VERSION, parse_replan_request, parse_request
from cotune.api._service import SPOT_ROW_WEIGHT, Limits, candidate_count, clear_cache, recommend_request, replan_request

__all__ = [
    "ERROR_SCHEMA_VERSION",
    "REQUEST_SCHEMA_VERSION",
    "SCHEMA_NAMES",
    "SPOT_ROW_WEIGHT",
    "Limits",
    "LimitError",
    "ProfileRef",
    "RecommendRequest",
    "ReplanRequest",
    "RequestError",
    "candidate_count",
    "clear_cache",
    "error_document",
    "parse_replan_request",
    "parse_request",
    "recommend_request",
    "replan_request",
    "schema",
]

SCHEMA_NAMES = ("recommend-request.v1", "recommend-response.v1", "replan-request.v1", "replan-response.v1", "error.v1")
_DIR = Path(__file__).parent / "schemas"


@lru_cache(maxsize=None)
def _load(name: str) -> str:
    return (_DIR / f"{name}.json").read_text(encoding="utf-8")


def schema(name: str) -> dict[str, Any]:
    """A published JSON Schema by name (see :data:`SCHEMA_NAMES`), as a fresh ``dict``."""
    if name not in SCHEMA_NAMES:
        raise KeyError(f"unknown schema {name!r}: known are {', '.join(SCHEMA_NAMES)}")
    return json.loads(_load(name))
