"""Parse and validate a recommend request (plain data) into a frozen value.

The published contract is ``docs/schema/recommend-request.v1.json``; this module is its
executable form and must accept exactly what the schema accepts (a test checks both on
the same generated requests). It adds what a JSON Schema cannot say: which example
names exist, and messages that name the field, the value and the fix.

Nothing here touches the file system or imports user code: a profile is either a bundled
example's *name* or inline records; ``{"path": ...}`` is only resolved later, and only
when the caller allows a directory (:func:`cotune.api.recommend_request`).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Literal, Mapping

from cotune.api._errors import RequestError

__all__ = ["REQUEST_SCHEMA_VERSION", "ProfileRef", "RecommendRequest", "parse_request"]

REQUEST_SCHEMA_VERSION = 1

_MISSING = object()


@dataclass(frozen=True)
class ProfileRef:
    """Which profile a request means: exactly one of ``example``, ``records``, ``path``."""

    example: str | None = None
    records: tuple[Mapping[str, Any], ...] | None = None
    path: str | None = None


@dataclass(frozen=True)
class RecommendRequest:
    """A validated request; :meth:`recommend_kwargs` are the keywords of :func:`cotune.recommend`."""

    profile: ProfileRef
    target: float
    deadline_s: float | None = None
    max_workers: int | Mapping[str, int] = 16
    gpus_per_host: int = 4
    prices: Mapping[str, float] | None = None
    objective: Literal["cost", "time"] = "cost"
    budget: float | None = None
    confidence: float | None = None
    gpus: tuple[str, ...] | None = None
    local_batches: tuple[int, ...] | None = None
    workers: tuple[int, ...] | None = None
    hosts: Literal["packed", "any"] = "packed"
    startup_s: float = 0.0
    baseline_local_batch: int | None = None
    baseline_workers: int | None = None
    interval: float = 0.9
    top: int = 5
    pareto_limit: int = 12

    def recommend_kwargs(self) -> dict[str, Any]:
        return dict(
            target=self.target,
            deadline_s=self.deadline_s,
            max_workers=dict(self.max_workers) if isinstance(self.max_workers, Mapping) else self.max_workers,
            gpus_per_host=self.gpus_per_host,
            prices=None if self.prices is None else dict(self.prices),
            objective=self.objective,
            budget=self.budget,
            confidence=self.confidence,
            gpus=None if self.gpus is None else list(self.gpus),
            local_batches=None if self.local_batches is None else list(self.local_batches),
            workers=None if self.workers is None else list(self.workers),
            hosts=self.hosts,
            startup_s=self.startup_s,
            baseline_local_batch=self.baseline_local_batch,
            baseline_workers=self.baseline_workers,
            interval=self.interval,
            top=self.top,
            pareto_limit=self.pareto_limit,
        )


# --- field checks: each returns the clean value or raises RequestError at its pointer ---


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value: Any, path: str, *, gt: float | None = None, ge: float | None = None, lt: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RequestError(f"must be a number, got {_kind(value)} {_show(value)}", path=path)
    x = float(value)
    if not math.isfinite(x):
        raise RequestError(f"must be a finite number, got {_show(value)}", path=path)
    if gt is not None and not x > gt:
        raise RequestError(f"must be > {gt:g}, got {_show(value)}", path=path)
    if ge is not None and not x >= ge:
        raise RequestError(f"must be >= {ge:g}, got {_show(value)}", path=path)
    if lt is not None and not x < lt:
        raise RequestError(f"must be < {lt:g}, got {_show(value)}", path=path)
    return x


def _integer(value: Any, path: str, *, ge: int = 1, le: int | None = None) -> int:
    # JSON Schema's "integer" accepts 3.0 as well as 3; so do we.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
        isinstance(value, float) and not (math.isfinite(value) and value.is_integer())
    ):
        raise RequestError(f"must be a whole number, got {_kind(value)} {_show(value)}", path=path)
    n = int(value)
    if n < ge:
        raise RequestError(f"must be >= {ge}, got {_show(value)}", path=path)
    if le is not None and n > le:
        raise RequestError(f"must be <= {le}, got {_show(value)}", path=path)
    return n


def _string(value: Any, path: str, *, max_length: int = 200) -> str:
    if not isinstance(value, str) or not value:
        raise RequestError(f"must be a non-empty string, got {_kind(value)} {_show(value)}", path=path)
    if len(value) > max_length:
        raise RequestError(f"must be at most {max_length} characters, got {len(value)}", path=path)
    return value


def _choice(value: Any, path: str, options: tuple[str, ...]) -> str:
    if value not in options or not isinstance(value, str):
        raise RequestError(f"must be one of {', '.join(repr(o) for o in options)}, got {_show(value)}", path=path)
    return value


def _array(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise RequestError(f"must be an array, got {_kind(value)} {_show(value)}", path=path)
    if not value:
        raise RequestError("must not be empty: leave the field out for the default", path=path)
    return value


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RequestError(f"must be an object, got {_kind(value)} {_show(value)}", path=path)
    return value


def _unknown_keys(obj: Mapping[str, Any], known: tuple[str, ...], path: str) -> None:
    for key in obj:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known fields: {', '.join(known)}"
            raise RequestError(f"unknown field {str(key)!r}{hint}", path=f"{path}/{_escape(str(key))}")


def _escape(key: str) -> str:
    """JSON Pointer escaping (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


_FIELDS = (
    "schema_version",
    "profile",
    "target",
    "deadline_s",
    "max_workers",
    "gpus_per_host",
    "prices",
    "objective",
    "budget",
    "confidence",
    "gpus",
    "local_batches",
    "workers",
    "hosts",
    "startup_s",
    "baseline_local_batch",
    "baseline_workers",
    "interval",
    "top",
    "pareto_limit",
)
_PROFILE_KEYS = ("example", "records", "path")


def _profile(value: Any) -> ProfileRef:
    path = "/profile"
    if isinstance(value, str):
        return ProfileRef(example=_string(value, path))
    obj = _object(value, path)
    _unknown_keys(obj, _PROFILE_KEYS, path)
    given = [k for k in _PROFILE_KEYS if k in obj]
    if len(given) != 1:
        raise RequestError(
            "give exactly one of 'example' (a bundled profile name), 'records' (the profile's records inline) "
            f"or 'path' (a file under the server's profile directory); got {', '.join(given) or 'none'}",
            path=path,
        )
    key = given[0]
    if key == "example":
        return ProfileRef(example=_string(obj[key], f"{path}/example"))
    if key == "path":
        return ProfileRef(path=_string(obj[key], f"{path}/path", max_length=1000))
    records = _array(obj[key], f"{path}/records")
    for i, rec in enumerate(records):
        _object(rec, f"{path}/records/{i}")
        if not isinstance(rec.get("record"), str):
            raise RequestError(
                "every record needs a string field 'record' (workload, step, eval, failure or noise)",
                path=f"{path}/records/{i}",
            )
    return ProfileRef(records=tuple(records))


def _max_workers(value: Any) -> int | dict[str, int]:
    path = "/max_workers"
    if isinstance(value, dict):
        if not value:
            raise RequestError("must not be empty: give a number, or one entry per gpu type", path=path)
        return {
            _string(k, path).lower(): _integer(v, f"{path}/{_escape(k)}") for k, v in value.items()
        }
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RequestError(f"must be a whole number or an object of gpu → number, got {_kind(value)} {_show(value)}", path=path)
    return _integer(value, path)


def _prices(value: Any) -> dict[str, float]:
    path = "/prices"
    obj = _object(value, path)
    return {_string(k, path).lower(): _number(v, f"{path}/{_escape(k)}", ge=0.0) for k, v in obj.items()}


def _int_list(value: Any, path: str) -> tuple[int, ...]:
    return tuple(_integer(v, f"{path}/{i}") for i, v in enumerate(_array(value, path)))


MAX_DEPTH = 32


def _check_depth(value: Any) -> None:
    """Refuse absurd nesting up front (iteratively), so no later step can recurse too deep."""
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise RequestError(f"nested deeper than {MAX_DEPTH} levels: a request is a flat object of fields", path="")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def parse_request(request: Any) -> RecommendRequest:
    """Validate a request (a ``dict`` from JSON) and return it as a :class:`RecommendRequest`.

    Raises :class:`~cotune.api.RequestError` with a JSON Pointer to the first bad value.
    Unknown fields are errors (a misspelt ``deadline`` must not silently mean "no deadline").
    """
    obj = _object(request, "")
    _check_depth(obj)
    _unknown_keys(obj, _FIELDS, "")
    version = obj.get("schema_version", REQUEST_SCHEMA_VERSION)
    version = _integer(version, "/schema_version")
    if version != REQUEST_SCHEMA_VERSION:
        raise RequestError(
            f"request schema_version {version} is not understood: this cotune reads version {REQUEST_SCHEMA_VERSION}",
            path="/schema_version",
            code="unsupported_version",
        )
    for required in ("profile", "target"):
        if required not in obj:
            raise RequestError(f"missing required field {required!r}", path="")

    def opt(key: str, check: Any, default: Any = None) -> Any:
        value = obj.get(key, _MISSING)
        if value is _MISSING or value is None:
            return default
        return check(value)

    return RecommendRequest(
        profile=_profile(obj["profile"]),
        target=_number(obj["target"], "/target"),
        deadline_s=opt("deadline_s", lambda v: _number(v, "/deadline_s", gt=0.0)),
        max_workers=opt("max_workers", _max_workers, 16),
        gpus_per_host=opt("gpus_per_host", lambda v: _integer(v, "/gpus_per_host"), 4),
        prices=opt("prices", _prices),
        objective=opt("objective", lambda v: _choice(v, "/objective", ("cost", "time")), "cost"),
        budget=opt("budget", lambda v: _number(v, "/budget", gt=0.0)),
        confidence=opt("confidence", lambda v: _number(v, "/confidence", gt=0.0, lt=1.0)),
        gpus=opt("gpus", lambda v: tuple(_string(g, f"/gpus/{i}").lower() for i, g in enumerate(_array(v, "/gpus")))),
        local_batches=opt("local_batches", lambda v: _int_list(v, "/local_batches")),
        workers=opt("workers", lambda v: _int_list(v, "/workers")),
        hosts=opt("hosts", lambda v: _choice(v, "/hosts", ("packed", "any")), "packed"),
        startup_s=opt("startup_s", lambda v: _number(v, "/startup_s", ge=0.0), 0.0),
        baseline_local_batch=opt("baseline_local_batch", lambda v: _integer(v, "/baseline_local_batch")),
        baseline_workers=opt("baseline_workers", lambda v: _integer(v, "/baseline_workers")),
        interval=opt("interval", lambda v: _number(v, "/interval", gt=0.0, lt=1.0), 0.9),
        top=opt("top", lambda v: _integer(v, "/top", ge=0, le=100), 5),
        pareto_limit=opt("pareto_limit", lambda v: _integer(v, "/pareto_limit", ge=1, le=100), 12),
    )
