"""The records of a profile: one frozen dataclass per record type.

A profile is JSON Lines; each line is one record whose ``"record"`` field names its
type. The full field reference, with units, lives in ``docs/profile-format.md``; this
module is its executable form. Parsing validates every field and raises
:class:`~cotune.errors.ProfileError` naming the field, the value and the fix.

Format version: :data:`FORMAT_VERSION`. A workload record may carry ``"version"``;
files without it are read as version 1. Unknown *fields* are ignored (writers may add
diagnostics), unknown *record types* are an error unless the record sets
``"optional": true``.
"""

from __future__ import annotations

import collections.abc
import math
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal, Mapping, Union

from cotune._checks import MAX_GRAD_STAT, MAX_MAGNITUDE, BadValue, excerpt, line_break_in
from cotune._checks import integer as _integer
from cotune._checks import number as _number
from cotune.errors import ProfileError

__all__ = [
    "FORMAT_VERSION",
    "GOALS",
    "FAILURE_KINDS",
    "MOVE_CAUSES",
    "WorkloadRecord",
    "StepRecord",
    "EvalRecord",
    "FailureRecord",
    "NoiseRecord",
    "Record",
    "checked_record",
    "record_from_dict",
    "record_to_dict",
]

FORMAT_VERSION = 1
GOALS = ("max", "min")
FAILURE_KINDS = ("oom", "crash", "timeout")
# Why a running job arrived at a configuration: "replan" (chosen: by cotune replan or a
# person) or "revocation" (forced: the provider took workers or the market). The back-off
# after returns (cotune.solver.count_returns) counts only moves back to a configuration
# the job had left by choice: a return after a revocation is recovery, not dithering.
MOVE_CAUSES = ("replan", "revocation")


class MissingFieldError(ProfileError):
    """A record lacks a field it needs; ``field`` names it (a table's reader names the
    column to read it from, or the empty cell, from this)."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


def _missing(data: Mapping[str, Any], key: str) -> MissingFieldError:
    kind = data.get("record")
    what = f"a {kind!r} record" if isinstance(kind, str) else "this record"
    return MissingFieldError(f"missing field {key!r}: {what} needs it (docs/profile-format.md lists every field and its "
                             "unit)", field=key)


# No optimizer step of a real training job takes under a microsecond (a kernel launch alone
# takes several): a smaller step time is a timer in the wrong unit or a denormal, and it
# planned a job of 0.0 s at a cost of 6e-323.
MIN_STEP_TIME_S = 1e-6


# Fields that name something (a workload, a metric, a GPU type, a market, a job): shown
# inside one line of every table and sentence. A line break in one would print a line of
# the profile's choosing (`"t4\nCHOSEN ..."`), so the reader refuses it and the one
# serialiser (`record_to_dict`) never writes it. Other control characters are kept and
# escaped on display (cotune.cli._output).
NAME_FIELDS = ("name", "metric", "gpu", "market", "job")


# "field 'epoch'", as a message names a field: made once per field name, not for every value
# checked (a profile's reader checks millions; a tracked job's every record passes here).
_WHERE: dict[str, str] = {}


def _where(key: str) -> str:
    where = _WHERE.get(key)
    if where is None:
        where = _WHERE[key] = f"field {key!r}"
    return where


class _Field:
    """Validators shared by the record types; each raises ProfileError with the fix."""

    @staticmethod
    def text(data: Mapping[str, Any], key: str, *, required: bool = True, default: str | None = None) -> str | None:
        if key not in data or data[key] is None:
            if required:
                raise _missing(data, key)
            return default
        value = data[key]
        if not isinstance(value, str) or not value.strip():
            raise ProfileError(f"field {key!r} must be a non-empty string, got {excerpt(value)}")
        if key in NAME_FIELDS and line_break_in(value):
            raise ProfileError(f"field {key!r} must be one line, got {excerpt(value)}: remove the line break")
        return value.strip()

    @staticmethod
    def choice(data: Mapping[str, Any], key: str, options: tuple[str, ...], *, required: bool = True) -> str | None:
        value = _Field.text(data, key, required=required)
        if value is not None and value not in options:
            raise ProfileError(f"field {key!r} must be one of {', '.join(options)}, got {excerpt(value)}")
        return value

    @staticmethod
    def number(
        data: Mapping[str, Any],
        key: str,
        *,
        required: bool = True,
        default: float | None = None,
        minimum: float | None = None,
        strict_minimum: bool = False,
        magnitude: float | None = None,
    ) -> float | None:
        if key not in data or data[key] is None:
            if required:
                raise _missing(data, key)
            return default
        try:
            return _number(data[key], where=_where(key), gt=minimum if strict_minimum else None,
                           ge=None if strict_minimum else minimum,
                           magnitude=MAX_MAGNITUDE if magnitude is None else magnitude)
        except BadValue as exc:
            raise ProfileError(f"{exc}: drop the record or re-measure it") from None

    @staticmethod
    def integer(
        data: Mapping[str, Any], key: str, *, required: bool = True, default: int | None = None, minimum: int = 1
    ) -> int | None:
        if key not in data or data[key] is None:
            if required:
                raise _missing(data, key)
            return default
        try:
            return _integer(data[key], where=_where(key), ge=minimum)
        except BadValue as exc:
            raise ProfileError(f"{exc}: drop the record or re-measure it") from None


@dataclass(frozen=True)
class WorkloadRecord:
    """What is being trained: one per profile, normally the first line.

    ``goal`` is ``"max"`` for accuracy-like metrics (top-1, F1, hit rate) and ``"min"``
    for loss-like ones (loss, word error rate).
    """

    name: str
    dataset_size: int
    metric: str = "metric"
    goal: Literal["max", "min"] = "max"
    version: int = FORMAT_VERSION
    source: str | None = None

    kind: ClassVar[str] = "workload"
    # What makes two records the same workload; version and source are provenance.
    IDENTITY: ClassVar[tuple[str, ...]] = ("name", "dataset_size", "metric", "goal")

    def differs_from(self, other: "WorkloadRecord", *, fields: tuple[str, ...] | None = None) -> str | None:
        """The first identifying field in which ``other`` is another workload (None: the same).
        ``fields``: a door that maps one of them itself checks the rest (``cotune import`` keeps
        the profile's metric name for a tool's other spelling of it)."""
        return next((f for f in (self.IDENTITY if fields is None else fields) if getattr(self, f) != getattr(other, f)),
                    None)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "WorkloadRecord":
        goal = _Field.text(data, "goal", required=False, default="max")
        if goal not in GOALS:
            raise ProfileError(f"field 'goal' must be 'max' or 'min', got {excerpt(goal)}: use 'max' for accuracy, 'min' for loss")
        version = _Field.integer(data, "version", required=False, default=FORMAT_VERSION)
        if version > FORMAT_VERSION:
            raise ProfileError(
                f"profile format version {version} is newer than this cotune reads ({FORMAT_VERSION}): upgrade cotune"
            )
        return cls(
            name=_Field.text(data, "name"),
            dataset_size=_Field.integer(data, "dataset_size"),
            metric=_Field.text(data, "metric", required=False, default="metric"),
            goal=goal,  # type: ignore[arg-type]
            version=version,
            source=_Field.text(data, "source", required=False),
        )


@dataclass(frozen=True)
class StepRecord:
    """One timing measurement: seconds per optimizer step at a configuration.

    ``step_time_s`` includes gradient synchronisation; ``sync_time_s`` is the part of
    it spent in all-reduce, when the probe measured it. ``accum_steps`` micro-batches
    of ``local_batch`` samples make one step (global batch = workers × local_batch ×
    accum_steps). ``job`` names the running job that wrote the record (the tracker's
    median of a window of its steps); probes leave it unset. ``cause`` is set on the
    job's first record after it moved to this configuration: why it moved (one of
    :data:`MOVE_CAUSES`).
    """

    gpu: str
    workers: int
    local_batch: int
    step_time_s: float
    hosts: int = 1
    sync_time_s: float | None = None
    accum_steps: int = 1
    market: str = "on_demand"
    peak_memory_bytes: float | None = None
    step_time_spread_s: float | None = None
    timed_steps: int | None = None
    placement: str | None = None
    job: str | None = None
    cause: str | None = None

    kind: ClassVar[str] = "step"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "StepRecord":
        workers = _Field.integer(data, "workers")
        hosts = _Field.integer(data, "hosts", required=False, default=1)
        if hosts > workers:
            raise ProfileError(f"'hosts' ({hosts}) cannot exceed 'workers' ({workers}): each host runs at least one worker")
        step = _Field.number(data, "step_time_s", minimum=MIN_STEP_TIME_S)
        sync = _Field.number(data, "sync_time_s", required=False, minimum=0.0)
        if sync is not None and sync > step:
            raise ProfileError(f"'sync_time_s' ({sync:g}) exceeds 'step_time_s' ({step:g}): sync time is part of the step")
        timed = _Field.integer(data, "timed_steps", required=False)
        placement = data.get("placement")
        return cls(
            gpu=_Field.text(data, "gpu").lower(),
            workers=workers,
            local_batch=_Field.integer(data, "local_batch"),
            step_time_s=step,
            hosts=hosts,
            sync_time_s=sync,
            accum_steps=_Field.integer(data, "accum_steps", required=False, default=1),
            market=_Field.text(data, "market", required=False, default="on_demand"),
            peak_memory_bytes=_Field.number(data, "peak_memory_bytes", required=False, minimum=0.0),
            step_time_spread_s=_Field.number(data, "step_time_spread_s", required=False, minimum=0.0),
            timed_steps=timed,
            placement=None if placement is None else str(placement),
            job=_Field.text(data, "job", required=False),
            cause=_Field.choice(data, "cause", MOVE_CAUSES, required=False),
        )


@dataclass(frozen=True)
class EvalRecord:
    """One point of a learning curve: the metric after ``epoch`` passes over the data.

    ``epoch`` counts real passes (samples seen / dataset size) and may be fractional.
    ``seed`` tells repeated runs at the same global batch apart. ``grad_sqr`` and
    ``grad_var`` are optional gradient statistics (Pollux/AdaScale, measured at
    ``grad_batch`` samples, by default the record's own global batch).
    ``job`` names the running job that wrote the record (set by :class:`cotune.track.Tracker`;
    probes leave it unset); for such records ``epoch`` counts from the job's start,
    ``elapsed_s`` is the job's wall time at the evaluation and ``schedule_epochs``, when the
    tracker was told, where the job's learning-rate schedule ends (its configured epochs).
    """

    global_batch: int
    epoch: float
    metric: float
    seed: int = 0
    grad_sqr: float | None = None
    grad_var: float | None = None
    grad_batch: int | None = None
    job: str | None = None
    elapsed_s: float | None = None
    schedule_epochs: float | None = None

    kind: ClassVar[str] = "eval"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EvalRecord":
        metric = data.get("metric")
        # A diverged run legitimately reports NaN/inf: keep the record, the accuracy
        # model treats it as "no progress" rather than rejecting the whole profile.
        if metric is None or isinstance(metric, bool) or not isinstance(metric, (int, float)):
            raise ProfileError(f"field 'metric' must be a number (NaN allowed for a diverged run), got {excerpt(metric)}")
        if not (isinstance(metric, float) and not math.isfinite(metric)):  # finite: bounded like any number
            metric = _Field.number(data, "metric")
        seed = data.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ProfileError(f"field 'seed' must be an integer, got {excerpt(seed)}")
        seed = _Field.integer(data, "seed", required=False, default=0, minimum=-(10**15))
        return cls(
            global_batch=_Field.integer(data, "global_batch"),
            epoch=_Field.number(data, "epoch", minimum=0.0),
            metric=float(metric),
            seed=seed,
            grad_sqr=_Field.number(data, "grad_sqr", required=False, minimum=0.0, magnitude=MAX_GRAD_STAT),
            grad_var=_Field.number(data, "grad_var", required=False, minimum=0.0, magnitude=MAX_GRAD_STAT),
            grad_batch=_Field.integer(data, "grad_batch", required=False),
            job=_Field.text(data, "job", required=False),
            elapsed_s=_Field.number(data, "elapsed_s", required=False, minimum=0.0),
            schedule_epochs=_Field.number(data, "schedule_epochs", required=False, minimum=0.0, strict_minimum=True),
        )


@dataclass(frozen=True)
class FailureRecord:
    """A probe that did not produce a timing: out of memory, a crash, or a time-out.

    An ``oom`` at ``local_batch`` b on ``gpu`` bounds the largest feasible local batch
    there to below b.
    """

    gpu: str
    workers: int
    local_batch: int
    failure: Literal["oom", "crash", "timeout"]
    hosts: int = 1
    message: str = ""

    kind: ClassVar[str] = "failure"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "FailureRecord":
        failure = _Field.choice(data, "failure", FAILURE_KINDS)
        return cls(
            gpu=_Field.text(data, "gpu").lower(),
            workers=_Field.integer(data, "workers"),
            local_batch=_Field.integer(data, "local_batch"),
            failure=failure,  # type: ignore[arg-type]
            hosts=_Field.integer(data, "hosts", required=False, default=1),
            message=str(data.get("message", "")),
        )


@dataclass(frozen=True)
class NoiseRecord:
    """A gradient-noise-scale measurement (McCandlish et al. 2018).

    ``b_noise`` is the simple noise scale ``tr(Σ)/|G|²`` in samples; it sets the
    critical batch of the relation ``E(B) ≈ E_min·(1 + B/B_noise)``.
    """

    b_noise: float
    global_batch: int | None = None
    epoch: float | None = None
    job: str | None = None

    kind: ClassVar[str] = "noise"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "NoiseRecord":
        return cls(
            b_noise=_Field.number(data, "b_noise", minimum=0.0, strict_minimum=True),
            global_batch=_Field.integer(data, "global_batch", required=False),
            epoch=_Field.number(data, "epoch", required=False, minimum=0.0),
            job=_Field.text(data, "job", required=False),
        )


Record = Union[WorkloadRecord, StepRecord, EvalRecord, FailureRecord, NoiseRecord]

_TYPES: dict[str, type] = {t.kind: t for t in (WorkloadRecord, StepRecord, EvalRecord, FailureRecord, NoiseRecord)}


def record_from_dict(data: Mapping[str, Any]) -> Record | None:
    """Parse one decoded JSON object; ``None`` for an unknown record marked optional."""
    if not isinstance(data, collections.abc.Mapping):  # typing.Mapping's isinstance is a slow way to the same
        hint = (": a profile is JSON Lines, one record object per line, not a JSON array (jq -c '.[]' FILE > PROFILE.jsonl)"
                if isinstance(data, list) else "")
        raise ProfileError(f"each line must be a JSON object, got {type(data).__name__}{hint}")
    kind = data.get("record")
    cls = _TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        if data.get("optional") is True:
            return None
        known = ", ".join(sorted(_TYPES))
        if "record" not in data:
            raise ProfileError(f"no \"record\" field: each line names its type, \"record\": one of {known}")
        raise ProfileError(f"unknown record type {excerpt(kind)}: use one of {known} (or mark it \"optional\": true)")
    record = cls.from_dict(data)
    # Built by the rule: a Profile holding it is not checked again where it enters a door
    # (checked_record). An attribute, not a field: equality, the file format and
    # dataclasses.replace ignore it, and a replaced record is checked again.
    object.__setattr__(record, _BY_RULE, True)
    return record


_BY_RULE = "_built_by_reader_rule"


def _same_value(a: Any, b: Any) -> bool:
    # The same type and text: -0.0 is read as 0.0 and " t4" as "t4", which == alone misses
    # (the first) or a type check alone misses (a numpy float is no float).
    return a is b or (type(a) is type(b) and repr(a) == repr(b))


def checked_record(record: Record) -> Record:
    """``record`` when :func:`record_from_dict` built it; else the record the reader's rule
    reads from its fields: a record built by hand (``StepRecord(step_time_s="0.1")``,
    ``EvalRecord(metric="x")``, ``gpu=None``, a numpy integer) is judged as its line in a
    file would be, and a refusal is the same :class:`ProfileError`."""
    if getattr(record, _BY_RULE, False):
        return record
    from cotune._checks import plain_number

    # numpy scalars as plain numbers first: the reader's rule is for JSON, which has no other
    checked = record_from_dict({k: plain_number(v) for k, v in record_to_dict(record).items()})
    assert checked is not None  # a record type's own kind is never an optional unknown one
    names = _FIELD_NAMES.get(type(record)) or tuple(f.name for f in fields(record))
    if all(_same_value(getattr(checked, n), getattr(record, n)) for n in names):
        # The rule read back the very values, of the very types, the caller gave: the caller's
        # record is marked and handed on, so a program that passes its own records to one door
        # after another (the replay benchmarks fit them at every checkpoint) pays once a record.
        object.__setattr__(record, _BY_RULE, True)
        return record
    return checked


# Each record type's field names, in order: dataclasses.fields() rebuilt the list for every
# record written, a share of what a tracked training step pays per record.
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def record_to_dict(record: Record) -> dict[str, Any]:
    """The JSON object of a record, without fields left at ``None``."""
    names = _FIELD_NAMES.get(type(record))
    if names is None:
        names = _FIELD_NAMES[type(record)] = tuple(f.name for f in fields(record))
    out: dict[str, Any] = {"record": record.kind}
    for name in names:
        value = getattr(record, name)
        if value is None:
            continue
        if name in NAME_FIELDS and isinstance(value, str) and line_break_in(value):
            # Written, it would make the whole profile unreadable (the reader's rule above).
            raise ProfileError(f"{record.kind} record: field {name!r} must be one line, got {excerpt(value)}: "
                               "remove the line break")
        out[name] = value
    return out

