"""The question, as one frozen value: :class:`RecommendRequest` (and :class:`ReplanRequest`).

Every door builds the same value and nothing else validates it again:

* Python: ``cotune.recommend(profile, target=…, …)`` builds it from the same keywords, or
  takes one (``cotune.recommend(RecommendRequest(…))``);
* the CLI: ``cotune recommend`` / ``cotune k8s`` build it from argparse
  (:func:`cotune.cli._question.request_from_args`);
* HTTP / plain data: :func:`cotune.api.parse_request` turns JSON into it.

Validation happens once, in ``__post_init__``, through :mod:`cotune._checks`: a bad value
raises :class:`~cotune._checks.BadValue` (an :class:`~cotune.errors.InputError`) whose
``where`` is a JSON Pointer to the field (``/deadline_s``, ``/max_workers/t4``); the CLI
rewrites the pointer into its option name (:data:`CLI_OPTIONS`). Defaults are defined
here and nowhere else. ``docs/request.md`` lists every field and the doors that expose it.

Per-GPU ``max_workers`` naming only some GPU types: the others get the ``"*"`` entry if
there is one, else the default — the same at every door (the CLI's
``--max-workers 32 --max-workers t4=8`` is ``{"*": 32, "t4": 8}``). The default is the
question's: :data:`DEFAULT_MAX_WORKERS` for ``recommend``, :data:`DEFAULT_REPLAN_MAX_WORKERS`
for ``replan``. ``RecommendRequest.max_workers`` is therefore None until stated, and
:class:`ReplanRequest` resolves it: a stated 16 and the recommend default were one value, and
a ``ReplanRequest`` got 16 workers where every other replan door got 64.
"""

from __future__ import annotations

import datetime
import numbers
import os
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, Sequence

from cotune._checks import _AS_IS  # the scalar types plain_number returns as they are
from cotune._checks import (
    CLUSTER_NAMED, MAX_INTEGER, MAX_NAME, PROFILE_NAMED, BadValue, _is_bool, excerpt, integer, number, numpy_time_kind, path_text_problem,
    plain_number,
)
from cotune._checks import interval as check_interval
from cotune._lazy import annotation_module

if TYPE_CHECKING:  # pragma: no cover
    import cotune.profile
    import cotune.spot
else:
    # The annotations name cotune.profile.Profile and cotune.spot.Cluster. Imported here they
    # would cost every door numpy (`cotune --help` imports this module), and cotune.spot
    # imports this module: they are imported when a tool evaluates the annotations.
    cotune = annotation_module("cotune")

__all__ = [
    "CLI_OPTIONS",
    "DEFAULT_GPUS_PER_HOST",
    "DEFAULT_INTERVAL",
    "DEFAULT_MAX_CANDIDATES",
    "DEFAULT_MAX_WORKERS",
    "DEFAULT_PARETO_LIMIT",
    "DEFAULT_TOP",
    "Objective",
    "HostsMode",
    "Market",
    "ProfileRef",
    "Progress",
    "RecommendRequest",
    "ReplanRequest",
    "request_from_call",
    "unsearched_note",
]

Objective = Literal["cost", "time"]
HostsMode = Literal["packed", "any"]
Market = Literal["on_demand", "spot", "mixed"]
MARKET_NAMES: tuple[Market, ...] = ("on_demand", "spot", "mixed")

#: Workers available per GPU type unless the request says.
DEFAULT_MAX_WORKERS = 16
#: Workers per GPU type that ``replan`` considers unless the request says: a running job's
#: cluster file bounds what can be rented, so the cap is only a backstop.
DEFAULT_REPLAN_MAX_WORKERS = 64
DEFAULT_GPUS_PER_HOST = 4
DEFAULT_TOP = 5
DEFAULT_PARETO_LIMIT = 12
DEFAULT_INTERVAL = 0.9
DEFAULT_MARGIN = 0.05
#: What a configuration change of a running job costs when nothing else says (no
#: ``restart_s``, no cluster file's checkpoint and replacement delay, no ``startup_s``): save a
#: checkpoint, start the new workers, rendezvous, reload, warm up. Two minutes is the
#: closed-loop replay's restart (benchmarks/closed_loop.py); a free restart would make every
#: small saving look worth a move.
DEFAULT_RESTART_S = 120.0
#: The one limit on the search-space size for every door (a service may set a lower one):
#: 10⁶ candidates solve in well under a second and in a few hundred MB.
DEFAULT_MAX_CANDIDATES = 1_000_000
#: Most runner-ups / frontier points a request may ask for.
MAX_LISTED = 1000

#: The CLI option of each field (``None``: positional or not a CLI option).
CLI_OPTIONS: Mapping[str, str] = MappingProxyType(
    {
        "profile": "PROFILE",
        "target": "--target",
        "deadline_s": "--deadline",
        "max_workers": "--max-workers",
        "gpus_per_host": "--gpus-per-host",
        "prices": "--price",
        "cluster": "--cluster",
        "objective": "--objective",
        "budget": "--budget",
        "confidence": "--confidence",
        "gpus": "--gpu",
        "local_batches": "--local-batch",
        "workers": "--workers",
        "hosts": "--hosts",
        "startup_s": "--startup",
        "global_batch_range": "--global-batch",
        "baseline_local_batch": "--baseline-batch",
        "baseline_workers": "--baseline-workers",
        "interval": "--interval",
        "top": "--top",
        "pareto_limit": "--pareto-limit",
        "max_candidates": "--max-candidates",
        # replan
        "progress": "--current/--elapsed/--epochs-done",
        "margin": "--margin",
        "restart_s": "--restart",
        "lr_rule": "--lr-rule",
        "job": "--job",
    }
)


class FrozenMap(dict):  # type: ignore[type-arg]
    """A read-only ``dict`` for the request's mappings: frozen like the request, yet picklable
    and JSON-serialisable (a ``MappingProxyType`` is neither)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a request's mappings are read-only: use request.replace(...) for a changed copy")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]
    __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMap, (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))


def _choice(value: Any, where: str, options: tuple[str, ...]) -> Any:
    if not isinstance(value, str) or value not in options:
        raise BadValue(f"must be one of {', '.join(repr(o) for o in options)}, got {excerpt(value)}", where=where)
    return value


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadValue(f"must be a non-empty string, got {excerpt(value)}", where=where)
    if len(value) > MAX_NAME:
        raise BadValue(f"must be at most {MAX_NAME} characters, got {len(value)}", where=where)
    return value.strip().lower()


def _sequence(value: Any, where: str) -> Sequence[Any]:
    if not isinstance(value, (str, bytes, Mapping)) and callable(getattr(value, "tolist", None)):
        value = value.tolist()  # a numpy array or a pandas Series / Index, as Python callers hold them
    if isinstance(value, (set, frozenset)):
        # A set of batches or gpus is what a Python caller means by "these": in a fixed
        # order, so an error's pointer (/local_batches/1) names the same value every run.
        try:
            value = sorted(value)
        except TypeError:  # mixed types: the element check below names the odd one
            value = sorted(value, key=repr)
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple, range)):
        raise BadValue(f"must be an array (a list), got {excerpt(value)}", where=where)
    if len(value) == 0:
        raise BadValue("must not be empty: leave the field out for the default", where=where)
    return value


def _mapping(value: Any, where: str, what: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping) and callable(getattr(value, "to_dict", None)):
        value = value.to_dict()  # a pandas Series keyed by gpu, as Python callers hold one
    if not isinstance(value, Mapping):
        raise BadValue(f"must be an object (a mapping) of {what}, got {excerpt(value)}", where=where)
    return value


def pointer_key(key: str) -> str:
    """JSON Pointer escaping of one key (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def _unique(values: Iterable[Any]) -> tuple[Any, ...]:
    """``values`` without repeats, in the order first given."""
    return tuple(dict.fromkeys(values))


def _int_tuple(value: Any, where: str, *, ge: int = 1) -> tuple[int, ...]:
    return tuple(integer(v, where=f"{where}/{i}", ge=ge) for i, v in enumerate(_sequence(value, where)))


#: Seconds in one unit of a numpy timedelta64 of fixed length (years and months have none).
_TIMEDELTA64_UNIT_S: Mapping[str, float] = MappingProxyType({
    "W": 604800.0, "D": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9,
    "ps": 1e-12, "fs": 1e-15, "as": 1e-18,
})


def _timedelta64_seconds(value: Any, where: str) -> float:
    # A count of its unit (nanoseconds in a pandas timedelta column): read as seconds it was a
    # deadline of 57,000 years. The count times the unit's seconds in Python floats, which
    # cannot overflow as numpy's int64 unit conversion would.
    import numpy as np

    if np.isnat(value):
        raise BadValue("must be a duration, got NaT (not a time): give seconds or a timedelta", where=where)
    unit, step = np.datetime_data(value.dtype)
    if unit not in _TIMEDELTA64_UNIT_S:
        raise BadValue(f"must be a duration of fixed length, got {excerpt(value)}: give it in seconds, hours or days",
                       where=where)
    return float(int(value.astype(np.int64))) * step * _TIMEDELTA64_UNIT_S[unit]


def _seconds(value: Any, where: str, *, gt: float | None = None, ge: float | None = None) -> float:
    if isinstance(value, datetime.timedelta):  # pandas' Timedelta is one too
        value = value.total_seconds()
    elif numpy_time_kind(value) == "m":
        value = _timedelta64_seconds(value, where)
    return number(value, where=where, gt=gt, ge=ge)  # bounded by MAX_MAGNITUDE like every number


@dataclass(frozen=True)
class ProfileRef:
    """A profile named in plain data: exactly one of a bundled ``example`` name, inline
    ``records`` (the JSON Lines records as objects) or a file ``path``."""

    example: str | None = None
    records: tuple[Mapping[str, Any], ...] | None = None
    path: str | None = None

    def load(self) -> "cotune.profile.Profile":
        """The profile it names (``path`` is read as given: the service confines paths before)."""
        from cotune.profile import load_profile, parse_profile

        if self.records is not None:
            return parse_profile(self.record_lines())
        return load_profile(self.example if self.example is not None else self.path)

    def record_lines(self) -> list[str]:
        """The inline ``records`` as the JSON Lines text :func:`~cotune.profile.parse_profile`
        reads, so that they are judged exactly as a file's lines are.

        JSON has no NaN, so an eval's ``"metric": null`` is written as the file format's
        ``NaN`` (a diverged run). A number that overflowed to infinity (``1e400`` parses
        as ``inf``) is written as ``Infinity``: the profile's own checks then accept it
        where the format does (an eval's metric) and name the record's field elsewhere.
        A record JSON cannot hold (a Python caller's object) is a :class:`ProfileError`
        at its line (1-based), as a bad line of a file is.
        """
        import json

        from cotune.errors import ProfileError

        # One encoder for all the records: json.dumps with options builds a new one per call.
        # sort_keys: the same record in any key order is the same text (a cache key).
        encode = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
        lines = []
        for i, rec in enumerate(self.records or ()):
            if isinstance(rec, Mapping) and rec.get("record") == "eval" and "metric" in rec and rec["metric"] is None:
                rec = {**rec, "metric": float("nan")}
            try:
                lines.append(encode(rec) + "\n")
            except (TypeError, ValueError, RecursionError) as exc:
                raise ProfileError(f"not a JSON record ({' '.join(str(exc).split())[:120]}): give numbers, strings, "
                                   "lists and objects only", line=i + 1) from None
        return lines

    def __post_init__(self) -> None:
        given = [k for k in ("example", "records", "path") if getattr(self, k) is not None]
        if len(given) != 1:
            raise BadValue(
                "give exactly one of 'example' (a bundled profile name), 'records' (the profile's records inline) "
                f"or 'path' (a file under the server's profile directory); got {', '.join(given) or 'none'}",
                where="/profile",
            )
        if self.records is not None:
            # A copy the caller cannot change afterwards, hashable like the rest of a frozen request.
            object.__setattr__(self, "records", _frozen_records(self.records))


def _frozen_records(records: Any) -> tuple[FrozenMap, ...]:
    """``records`` (a sequence of mappings) as a tuple of read-only maps, nested objects and
    lists frozen too and numpy scalars as plain numbers (``json`` refused ``np.int64``), or
    :class:`BadValue` naming the entry that is not a record."""
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Sequence):
        raise BadValue(f"must be a list of records (objects), got {excerpt(records)}", where="/profile/records")
    out = []
    for i, rec in enumerate(records):
        if type(rec) is not dict and not isinstance(rec, Mapping):
            raise BadValue(f"must be a record (an object with a 'record' field), got {excerpt(rec)}",
                           where=f"/profile/records/{i}")
        try:
            out.append(_frozen(rec))
        except RecursionError:
            raise BadValue("is nested too deeply: give numbers, strings, lists and objects a few levels deep",
                           where=f"/profile/records/{i}") from None
    return tuple(out)


def _frozen(value: Any) -> Any:
    kind = type(value)
    if kind in _AS_IS:  # a JSON scalar, what nearly every value is: plain_number keeps it as it is
        return value
    if kind is dict:  # a JSON object: skips the Mapping ABC's isinstance, 40 % of a 45,000-record request's freeze
        return FrozenMap({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, Mapping):
        return FrozenMap({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return plain_number(value)


def _check_profile(value: Any) -> Any:
    # None: the caller passes fitted models instead (recommend(..., models=...)).
    if value is None or isinstance(value, ProfileRef) or isinstance(value, os.PathLike):
        return value
    if isinstance(value, str):
        problem = path_text_problem(value, what=PROFILE_NAMED)
        if problem:
            raise BadValue(problem, where="/profile")
        return value
    from cotune.profile import Profile

    if isinstance(value, Profile):
        return value
    raise BadValue(
        f"must be a profile file path, a bundled example name, a Profile or a ProfileRef, got {excerpt(value)}",
        where="/profile",
    )


#: The most accelerators one host may hold (a cluster file's ``gpus_per_host`` has the same
#: bound): every door refuses more, where replan's cluster of on-demand servers refused
#: --gpus-per-host 5000 that recommend took.
MAX_GPUS_PER_HOST = 4096


def _check_per_gpu_count(value: Any, where: str, *, le: int | None = None) -> int | Mapping[str, int]:
    """One whole number ≥ 1 (and ≤ ``le``) for every gpu type, or an object of gpu → number
    (``"*"``: the types not named): ``max_workers`` and ``gpus_per_host`` alike."""
    if not isinstance(value, Mapping) and callable(getattr(value, "to_dict", None)):
        value = _mapping(value, where, "gpu → number")  # a pandas Series keyed by gpu
    if isinstance(value, Mapping):
        if not value:
            raise BadValue("must not be empty: give a number, or one entry per gpu type", where=where)
        out = {}
        for k, v in value.items():
            key = "*" if k == "*" else _name(k, where)
            _once(out, key, k, where)
            out[key] = integer(v, where=f"{where}/{pointer_key(str(k))}", ge=1, le=le)
        return FrozenMap(out)
    value = plain_number(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise BadValue(f"must be a whole number >= 1 or an object of gpu → number, got {excerpt(value)}", where=where)
    return integer(value, where=where, ge=1, le=le)


def price_key(key: str) -> str:
    """A price's key in one spelling: ``"t4"`` and ``"t4:on_demand"`` are one price."""
    key = key.strip().lower()
    return key[: -len(":on_demand")] if key.endswith(":on_demand") else key


def _check_prices(value: Any) -> Mapping[str, float]:
    where = "/prices"
    obj = _mapping(value, where, "gpu (or gpu:market) → USD per worker-hour")
    out: dict[str, float] = {}
    seen: dict[str, str] = {}
    for k, v in obj.items():
        key = _name(k, where)
        _once(seen, price_key(key), k, where)  # 't4' and 't4:on_demand' name one price: the last would win silently
        seen[price_key(key)] = key
        out[key] = number(v, where=f"{where}/{pointer_key(str(k))}", ge=0.0)
    return FrozenMap(out)


def _once(seen: Mapping[str, Any], key: str, given: Any, where: str) -> None:
    # GPU names are compared lower-case and stripped: 't4' and ' T4' are one gpu, and
    # keeping the last of them would drop a value without a word.
    if key in seen:
        raise BadValue(f"names gpu {key!r} twice (as {excerpt(given)} after an earlier spelling): give each gpu once",
                       where=f"{where}/{pointer_key(str(given))}")


def _is_cluster(value: Any) -> bool:
    # A cotune.spot.Cluster, recognised without importing cotune.spot (which imports this module).
    return type(value).__name__ == "Cluster" and type(value).__module__.startswith("cotune.spot")


def _check_cluster(value: Any) -> Any:
    if isinstance(value, str):
        problem = path_text_problem(value, what=CLUSTER_NAMED)
        if problem:
            raise BadValue(problem, where="/cluster")
        return value
    if isinstance(value, (os.PathLike, Mapping)) or _is_cluster(value):
        return value  # a mapping (the file's fields) is validated where it is read: cotune.spot.load_cluster
    raise BadValue(f"must be a cluster file path, a Cluster or its fields as an object, got {excerpt(value)}", where="/cluster")


@dataclass(frozen=True, kw_only=True)
class RecommendRequest:
    """The whole question :func:`cotune.recommend` answers (fields: ``docs/request.md``).

    profile : a :class:`~cotune.profile.Profile`, a profile file path, a bundled example
        name, or a :class:`ProfileRef` (None only when fitted models are passed instead).
    target : metric to reach (accuracy for ``goal: max``, loss for ``goal: min``).
    deadline_s : wall-clock limit in seconds (None: no limit).
    max_workers : workers available, for all GPU types or per type (``"*"``: the others);
        None: the question's default — :data:`DEFAULT_MAX_WORKERS` for ``recommend``, and
        :data:`DEFAULT_REPLAN_MAX_WORKERS` in a :class:`ReplanRequest`, which states it.
    gpus_per_host : accelerators per machine (hosts = ⌈workers / gpus_per_host⌉), for all GPU
        types or per type (``"*"``: the others) — a fleet of 8-GPU V100 servers and 4-GPU T4 ones;
        None: :data:`DEFAULT_GPUS_PER_HOST`, or the cluster file's.
    prices : USD per worker-hour by GPU type (``"t4"``) or ``"t4:on_demand"``; None → worker-hours.
    cluster : a cluster file, a :class:`~cotune.spot.Cluster`, or the file's fields as a
        mapping: availability, prices and spot risk (``docs/spot.md``). Replaces ``prices``.
    objective : ``"cost"`` or ``"time"``.
    budget : upper bound on cost, in the cost unit, met at the same confidence as the deadline
        (a budget is a deadline of its own: the time at which the job spends it).
    confidence : the deadline and the budget must hold with this probability,
        ``P(success) ≥ confidence`` (None: 0.5, the median).
    gpus, local_batches, workers : restrict the space (defaults: every profiled GPU,
        every probed local batch below the memory limit, 1..max_workers).
    hosts : ``"packed"`` (fewest hosts) or ``"any"`` host counts per worker count.
    startup_s : fixed overhead added to every run (start-up, data loading).
    global_batch_range : (min, max) global batch allowed, e.g. what the learning-rate rule supports.
    baseline_local_batch, baseline_workers : what the two single-knob baselines keep.
    interval : central probability of reported intervals.
    top, pareto_limit : how many runner-ups and frontier points to report.
    max_candidates : enumerate at most this many candidates; a larger on-demand space is searched
        with Optuna's TPE sampler, a larger spot/mixed one refused before anything is enumerated.
    """

    profile: "cotune.profile.Profile | str | os.PathLike[str] | ProfileRef"
    target: float
    deadline_s: float | None = None
    max_workers: int | Mapping[str, int] | None = None
    gpus_per_host: int | Mapping[str, int] | None = None
    prices: Mapping[str, float] | None = None
    cluster: "cotune.spot.Cluster | str | os.PathLike[str] | Mapping[str, Any] | None" = None
    objective: Objective = "cost"
    budget: float | None = None
    confidence: float | None = None
    gpus: tuple[str, ...] | None = None
    local_batches: tuple[int, ...] | None = None
    workers: tuple[int, ...] | None = None
    hosts: HostsMode = "packed"
    startup_s: float = 0.0
    global_batch_range: tuple[int, int] | None = None
    baseline_local_batch: int | None = None
    baseline_workers: int | None = None
    interval: float = DEFAULT_INTERVAL
    top: int = DEFAULT_TOP
    pareto_limit: int = DEFAULT_PARETO_LIMIT
    max_candidates: int = DEFAULT_MAX_CANDIDATES

    def __post_init__(self) -> None:
        # Field order = message order: the first bad field is reported.
        put = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        put("profile", _check_profile(self.profile))
        put("target", number(self.target, where="/target"))
        if self.deadline_s is not None:
            put("deadline_s", _seconds(self.deadline_s, "/deadline_s", gt=0.0))
        if self.max_workers is not None:  # None: not stated (16 for recommend; a ReplanRequest states 64)
            put("max_workers", _check_per_gpu_count(self.max_workers, "/max_workers"))
        if self.gpus_per_host is not None:  # None: not stated (DEFAULT_GPUS_PER_HOST, or the cluster file's)
            put("gpus_per_host", _check_per_gpu_count(self.gpus_per_host, "/gpus_per_host", le=MAX_GPUS_PER_HOST))
        if self.prices is not None:
            put("prices", _check_prices(self.prices))
        if self.cluster is not None:
            if self.prices:
                raise BadValue(
                    "prices come from the cluster file when one is given: drop the prices (--price) or edit the cluster file",
                    where="/prices",
                )
            put("cluster", _check_cluster(self.cluster))
        _choice(self.objective, "/objective", ("cost", "time"))
        if self.budget is not None:
            put("budget", number(self.budget, where="/budget", gt=0.0))
        if self.confidence is not None:
            put("confidence", number(self.confidence, where="/confidence", gt=0.0, lt=1.0, what="a probability"))
        # A list names a set: a repeat (--gpu t4 --gpu T4) is the same choice once. Kept, each
        # copy was searched again — 800,000 copies of "t4" in a 3 MB body held the solver for
        # hours while the candidate limit counted one type.
        if self.gpus is not None:
            put("gpus", _unique(_name(g, f"/gpus/{i}") for i, g in enumerate(_sequence(self.gpus, "/gpus"))))
        if self.local_batches is not None:
            put("local_batches", _unique(_int_tuple(self.local_batches, "/local_batches")))
        if self.workers is not None:
            put("workers", _unique(_int_tuple(self.workers, "/workers")))
        _choice(self.hosts, "/hosts", ("packed", "any"))
        put("startup_s", _seconds(self.startup_s, "/startup_s", ge=0.0))
        if self.global_batch_range is not None:
            pair = _int_tuple(self.global_batch_range, "/global_batch_range")
            if len(pair) != 2 or pair[0] > pair[1]:
                raise BadValue(
                    # the value as JSON ([10, 5]): the service's callers never wrote the CLI's 10..5
                    f"must be [min, max] with 1 <= min <= max, got {f'[{pair[0]}, {pair[1]}]' if len(pair) == 2 else excerpt(list(pair))}",
                    where="/global_batch_range",
                )
            put("global_batch_range", pair)
        if self.baseline_local_batch is not None:
            put("baseline_local_batch", integer(self.baseline_local_batch, where="/baseline_local_batch", ge=1))
        if self.baseline_workers is not None:
            put("baseline_workers", integer(self.baseline_workers, where="/baseline_workers", ge=1))
        put("interval", check_interval(self.interval, where="/interval"))
        put("top", integer(self.top, where="/top", ge=0, le=MAX_LISTED))
        put("pareto_limit", integer(self.pareto_limit, where="/pareto_limit", ge=1, le=MAX_LISTED))
        put("max_candidates", integer(self.max_candidates, where="/max_candidates", ge=1, le=MAX_INTEGER))

    @property
    def implied_market(self) -> str | None:
        """The market a running job is on when its progress does not say: without a cluster
        file only on-demand servers are searched (a job on spot needs the file's revocation
        rates), so ``"on_demand"``; with one, None — spot or mixed must be stated."""
        return "on_demand" if self.cluster is None else None

    def cap_for(self, gpu: str) -> int:
        """The worker cap of ``gpu``: its own entry, else ``"*"``, else :data:`DEFAULT_MAX_WORKERS`."""
        if self.max_workers is None:
            return DEFAULT_MAX_WORKERS
        if isinstance(self.max_workers, Mapping):
            return int(self.max_workers.get(gpu, self.max_workers.get("*", DEFAULT_MAX_WORKERS)))
        return int(self.max_workers)

    def caps(self, gpus: Sequence[str]) -> dict[str, int]:
        return {g: self.cap_for(g) for g in gpus}

    def stated_host_size(self, gpu: str) -> int | None:
        """The GPUs per machine the request states for ``gpu`` (its own entry, else ``"*"``),
        None where it states none: a cluster file's size then rules without contradiction."""
        if isinstance(self.gpus_per_host, Mapping):
            size = self.gpus_per_host.get(gpu, self.gpus_per_host.get("*"))
            return None if size is None else int(size)
        return None if self.gpus_per_host is None else int(self.gpus_per_host)

    def host_size_for(self, gpu: str) -> int:
        """The GPUs per machine of ``gpu``: its own entry, else ``"*"``, else :data:`DEFAULT_GPUS_PER_HOST`."""
        size = self.stated_host_size(gpu)
        return DEFAULT_GPUS_PER_HOST if size is None else size

    def host_sizes(self, gpus: Sequence[str]) -> dict[str, int]:
        return {g: self.host_size_for(g) for g in gpus}

    def check_cap_names(self, profiled: Sequence[str]) -> list[str]:
        """Every entry of ``gpus`` must name a profiled GPU type (the error points at it,
        ``/gpus/1``). A per-GPU cap, host size or price may name a type the profile has no probes for —
        a scheduler sends its whole inventory and price list with every job — but only where
        every searched type has a cap of its own (``"*"`` does not count: a typo, ``t5`` for
        ``t4``, would otherwise leave that type at the ``"*"`` or default cap without a
        word; the replan doors add a ``"*"`` of their own). Prices need no such
        rule: a searched type without a price is refused where the prices are read. Returns
        the notes that name what was not searched."""
        for k, g in enumerate(self.gpus or ()):
            if g not in profiled:
                raise BadValue(f"gpu {excerpt(g)} has no timing probes in this profile (profiled: {', '.join(profiled)}): "
                               "check the name, or probe it (cotune profile)", where=f"/gpus/{k}")
        named: set[str] = set()
        for field, what in (("max_workers", "a cap"), ("gpus_per_host", "a host size")):
            per_gpu = getattr(self, field)
            if not isinstance(per_gpu, Mapping):
                continue
            unknown = sorted(k for k in per_gpu if k != "*" and k not in profiled)
            searched = self.gpus or profiled
            covered = all(g in per_gpu for g in searched)
            if unknown and not covered:
                raise BadValue(
                    f"names gpu {listed(unknown)}, which has no timing probes in this profile (profiled: "
                    f"{', '.join(profiled)}): check the name (other types are taken, and left out, only beside {what} "
                    f"of its own for {', '.join(searched)})",
                    where=f"/{field}/{pointer_key(unknown[0])}",
                )
            named.update(unknown)
        named.update(g for g in (k.split(":", 1)[0] for k in (self.prices or {})) if g not in profiled)
        return [unsearched_note(named, profiled, named_in="the caps, host sizes or prices")] if named else []

    def replace(self, **changes: Any) -> "RecommendRequest":
        """A copy with some fields changed, validated again (an unknown name is an
        :class:`~cotune.errors.InputError` that names the closest field, as ``recommend``'s)."""
        refuse_unknown_keywords(changes)
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return RecommendRequest(**values)

    def load_profile(self) -> "cotune.profile.Profile":
        """The request's profile, read (a :class:`~cotune.profile.Profile` passes through)."""
        if isinstance(self.profile, ProfileRef):
            return self.profile.load()
        from cotune.profile import load_profile

        return load_profile(self.profile)


def unsearched_note(names: Iterable[str], profiled: Sequence[str], *, named_in: str) -> str:
    """The note for GPU types a question names (``named_in``: its caps, host sizes or prices) that the
    profile has no timing probes for: left out of the search, not refused."""
    return (f"{listed(sorted(set(names)))} named in {named_in} but without timing probes in this profile "
            f"(profiled: {', '.join(profiled)}): not searched; probe it (cotune profile) to weigh it too")


def listed(names: Sequence[str], *, limit: int = 8) -> str:
    """At most ``limit`` names, each cut to an excerpt, then how many more: a scheduler's
    price list of 100,000 unknown GPU types made a note of 789 KB."""
    shown = ", ".join(n if len(n) <= 40 and n.isprintable() else excerpt(n) for n in names[:limit])
    more = len(names) - limit
    return shown + (f" and {more:,} more" if more > 0 else "")


FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(RecommendRequest))


def refuse_unknown_keywords(question: Mapping[str, Any], *, known: Sequence[str] = FIELD_NAMES) -> None:
    """An :class:`~cotune.errors.InputError` naming the closest of ``known`` (the request's
    fields unless the door takes others) for the first unknown key of ``question`` — before
    any constructor sees it, whose TypeError says less."""
    import difflib

    from cotune.errors import InputError

    unknown = sorted(set(question) - set(known))
    if unknown:
        close = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known are {', '.join(known)}"
        raise InputError(f"got an unknown keyword {excerpt(unknown[0])}: {hint}")


def request_from_call(profile: Any = None, question: Mapping[str, Any] | None = None) -> RecommendRequest:
    """A :class:`RecommendRequest` from one, or from ``recommend``'s profile and keywords
    (the Python door: an unknown keyword is an :class:`~cotune.errors.InputError` that names the closest field)."""
    from cotune.errors import InputError

    question = dict(question or {})
    if "profile" in question:  # recommend(profile=...): the request's field name, as RecommendRequest(profile=...) takes it
        if profile is not None:
            raise InputError("the profile was given twice: pass it once, first (recommend(PROFILE, target=...))")
        profile = question.pop("profile")
    # Before the request's replace: a RecommendRequest with bogus=1 raised a raw TypeError.
    refuse_unknown_keywords(question)
    if isinstance(profile, RecommendRequest):
        return profile.replace(**question) if question else profile
    if "target" not in question:
        raise InputError("target= is required: the metric to reach (accuracy for goal 'max', a loss for 'min')")
    return RecommendRequest(profile=profile, **question)


@dataclass(frozen=True, kw_only=True)
class Progress:
    """What a running job has done: on ``gpu``/``market`` with ``workers × local_batch``
    at the start, ``epochs_done`` epochs in ``elapsed_s`` seconds, ``spent`` money (USD, or
    worker-hours without prices) so far; since then it lost ``workers_lost`` and gained
    ``workers_added`` workers. ``schedule_epochs``: where its learning-rate schedule ends
    (its configured epochs; None: not given) — a target not reached by then is missed, and
    a batch change keeps the epoch count. A profile with the job's tracked records can tell
    all but ``spent`` and ``schedule_epochs`` (:func:`cotune.track.progress_from_records`).
    ``out_of_memory``: the job stopped with an out-of-memory at its current configuration
    that its profile does not record (a rank other than 0 ran out, whose tracker writes
    nothing; a pod the kernel killed) — it cannot go on as it ran, and every option runs a
    micro-batch below the one it ran out at."""

    epochs_done: float
    elapsed_s: float
    gpu: str
    market: Market
    workers: int
    local_batch: int
    workers_lost: int = 0
    workers_added: int = 0
    spent: float = 0.0
    schedule_epochs: float | None = None
    out_of_memory: bool = False

    def __post_init__(self) -> None:
        put = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        if not _is_bool(self.out_of_memory):  # "false" or 0 would read as a different answer
            raise BadValue(f"must be true or false, got {excerpt(self.out_of_memory)}", where="/progress/out_of_memory")
        put("out_of_memory", bool(self.out_of_memory))  # numpy.bool_ as the plain bool it is
        put("epochs_done", number(self.epochs_done, where="/progress/epochs_done", ge=0.0))
        if self.schedule_epochs is not None:
            put("schedule_epochs", number(self.schedule_epochs, where="/progress/schedule_epochs", gt=0.0,
                                          what="a number of epochs"))
        put("spent", number(self.spent, where="/progress/spent", ge=0.0))
        put("elapsed_s", _seconds(self.elapsed_s, "/progress/elapsed_s", ge=0.0))
        put("gpu", _name(self.gpu, "/progress/gpu"))
        if isinstance(self.market, str):
            put("market", self.market.strip().lower().replace("-", "_"))
        _choice(self.market, "/progress/market", MARKET_NAMES)
        put("workers", integer(self.workers, where="/progress/workers", ge=1))
        put("local_batch", integer(self.local_batch, where="/progress/local_batch", ge=1))
        put("workers_lost", integer(self.workers_lost, where="/progress/workers_lost", ge=0))
        put("workers_added", integer(self.workers_added, where="/progress/workers_added", ge=0))
        if self.workers_now < 1:
            raise BadValue(
                f"the job lost {self.workers_lost} of {self.workers + self.workers_added} workers and has none left: "
                "give workers_added (--workers-added), or re-plan from the last checkpoint with a fresh start (cotune recommend)",
                where="/progress/workers_lost",
            )

    @property
    def workers_now(self) -> int:
        return self.workers - self.workers_lost + self.workers_added

    @property
    def global_batch(self) -> int:
        return self.workers * self.local_batch


#: The fields of a progress, in every door (Python keywords, the HTTP body's ``progress``).
PROGRESS_FIELDS = tuple(f.name for f in fields(Progress))

# Fields of the question that replan does not use (yet): refusing them beats ignoring them.
_REPLAN_UNUSED = ("workers", "global_batch_range", "baseline_local_batch", "baseline_workers")
LR_RULES = ("sqrt", "linear", "none")
#: The switching rule's keywords of ``replan``, beside the question's fields.
REPLAN_RULE_FIELDS = ("margin", "restart_s", "prices", "lr_rule", "job")
#: Every keyword ``replan(profile, ...)`` takes: the question's fields it uses (not the ones it
#: refuses, nor the table sizes of recommend's answer), ``progress``, ``models`` and the rule's.
REPLAN_KEYWORDS: tuple[str, ...] = tuple(
    f for f in FIELD_NAMES if f not in _REPLAN_UNUSED + ("top", "pareto_limit")
) + ("progress", "models") + tuple(f for f in REPLAN_RULE_FIELDS if f not in FIELD_NAMES)


@dataclass(frozen=True, kw_only=True)
class ReplanRequest:
    """Re-plan a running job: the job's question, its progress, and the switching rule.

    ``request`` is the question the job was planned with (``deadline_s`` counted from the
    job's start — a job at or past it is answered, not refused: :attr:`overdue_s`;
    ``budget``, if any, for the whole job: what is left is ``budget − progress.spent``).
    With a ``cluster`` every market is considered; without one, on-demand servers at
    ``request.prices``. ``prices`` are *new* prices overriding the cluster file
    (``"t4"``/``"t4:on_demand"``, ``"t4:spot"``). ``margin``: switch only when the best alternative,
    after its restart, saves more than this fraction of the whole job's cost (the money spent
    plus staying's remaining, a miss counted; of staying's remaining time with objective
    ``"time"``); ``restart_s``: what a switch costs (None:
    checkpoint write + reload + slowest replacement delay of the cluster file, else
    ``request.startup_s``; where those are all 0, ``DEFAULT_RESTART_S``).
    ``lr_rule``: how the job rescales its learning rate when the global batch changes
    (``sqrt``, ``linear``, ``none``), reported with a batch change. ``job``: which tracked
    job's records in the profile are the running job (default: the latest).
    """

    request: RecommendRequest
    progress: Progress
    margin: float = DEFAULT_MARGIN
    restart_s: float | None = None
    prices: Mapping[str, float] | None = None
    lr_rule: Literal["sqrt", "linear", "none"] = "sqrt"
    job: str | None = None

    def __post_init__(self) -> None:
        put = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        if not isinstance(self.request, RecommendRequest):
            raise BadValue(f"must be a RecommendRequest, got {excerpt(self.request)}", where="/request")
        if not isinstance(self.progress, Progress):
            raise BadValue(f"must be a Progress, got {excerpt(self.progress)}", where="/progress")
        _choice(self.lr_rule, "/lr_rule", LR_RULES)
        if self.job is not None and (not isinstance(self.job, str) or not self.job.strip() or len(self.job) > MAX_NAME):
            raise BadValue(f"must be the name of a tracked job (1 to {MAX_NAME} characters), got {excerpt(self.job)}",
                           where="/job")
        if self.request.deadline_s is None:
            raise BadValue("replan needs the job's deadline, counted from its start (--deadline, deadline_s=)", where="/deadline_s")
        for name in _REPLAN_UNUSED:
            if getattr(self.request, name) is not None:
                raise BadValue(f"replan does not use {name} yet: leave it out", where=f"/{name}")
        # Table sizes of recommend's answer: a replan answers one decision, and shows no runner-ups or frontier.
        for name, default in (("top", DEFAULT_TOP), ("pareto_limit", DEFAULT_PARETO_LIMIT)):
            if getattr(self.request, name) != default:
                raise BadValue(f"replan answers one decision and lists no {'runner-ups' if name == 'top' else 'frontier'}: "
                               "leave it out", where=f"/{name}")
        put("margin", number(self.margin, where="/margin", ge=0.0, lt=1.0, what="a fraction"))
        # replan's own default cap, resolved here for every door (Python keywords, a ReplanRequest,
        # the CLI, HTTP): for a cap not stated, and for the types a per-GPU cap leaves unnamed.
        caps = self.request.max_workers
        if caps is None:
            put("request", self.request.replace(max_workers=DEFAULT_REPLAN_MAX_WORKERS))
        elif isinstance(caps, Mapping) and "*" not in caps:
            put("request", self.request.replace(max_workers={"*": DEFAULT_REPLAN_MAX_WORKERS, **caps}))
        if self.progress.market != "on_demand" and self.request.cluster is None:
            # Without one, only on-demand servers are searched: staying would be "not in the
            # space" and the answer a market switch that no measurement supports.
            raise BadValue(f"the job runs on the {self.progress.market} market, but no cluster file states spot's prices "
                           "and revocation rates: give it (--cluster FILE / cluster, docs/spot.md), or give the market the job "
                           "runs on", where="/cluster")
        if self.restart_s is not None:
            put("restart_s", _seconds(self.restart_s, "/restart_s", ge=0.0))
        if self.prices is not None:
            put("prices", _check_prices(self.prices))

    @property
    def remaining_s(self) -> float:
        """The time left to the deadline; 0 once it has passed (nothing is left, not less)."""
        assert self.request.deadline_s is not None
        return max(self.request.deadline_s - self.progress.elapsed_s, 0.0)

    @property
    def overdue_s(self) -> float | None:
        """How far past its deadline the job is (0 exactly at it); None while time is left.
        A late job is a normal state of a running job, not bad input: ``replan`` answers it
        ``infeasible`` with the nearest option and the deadline that option needs."""
        assert self.request.deadline_s is not None
        over = self.progress.elapsed_s - self.request.deadline_s
        return over if over >= 0.0 else None
