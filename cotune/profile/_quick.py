"""The line of a record whose fixed fields were checked before: a running job's records.

A tracked job writes records that differ from one another only in a few measured numbers
(a window's step time, an evaluation's epoch, metric and wall time) at a configuration
that changes rarely. Writing each one through the full check — the record as a dict, read
back by the reader's rule (``record_from_dict``), as a dict again, ``json.dumps`` — cost
the training loop most of what a record costs it: in caches a training step has just
evicted, the reader's check and ``json.dumps`` alone took about 0.15 ms where the whole
evaluation took 0.24–0.26 ms (``benchmarks/tracker_breakdown.py``, 2 busy cores).

Here the full check runs once per *shape*: the record's type, the exact values (and
types) of all its other fields, and which of its measured numbers are left out. The line
it wrote becomes a template that holds those fields' checked text;
a later record of the same shape is written from the template when each of its measured
numbers is a plain ``float`` (``int`` for a count) inside :data:`_MEASURED`'s range —
a range the reader's rule certainly accepts, so nothing the full check refuses is ever
written. Anything else (a numpy number, NaN, a value past a bound, a new
configuration) takes the full check, which stays the one rule. The template's text is
what the full check wrote: a quick line is byte for byte the line the full check writes
for the same record (``tests/core/test_profile_quick_lines.py`` holds them side by side
at and past every bound).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from operator import itemgetter
from typing import Any, Callable

from cotune._checks import MAX_GRAD_STAT, MAX_INTEGER, MAX_MAGNITUDE
from cotune.profile._schema import MIN_STEP_TIME_S, EvalRecord, Record, StepRecord, record_to_dict

#: Measured fields of the record types a running job writes again and again, each with the
#: inclusive range in which a plain number of its type is one the reader's rule accepts
#: (``StepRecord.from_dict``, ``EvalRecord.from_dict``: ``number(ge=..., magnitude=...)``,
#: ``integer(ge=1)`` within ``MAX_INTEGER``). A bound may be tighter than the rule, never
#: looser. A metric's NaN or infinity (a diverged run) is outside: the full check writes it.
_MEASURED: dict[type, dict[str, tuple[type, float, float]]] = {
    StepRecord: {
        "step_time_s": (float, MIN_STEP_TIME_S, MAX_MAGNITUDE),
        "step_time_spread_s": (float, 0.0, MAX_MAGNITUDE),
        "timed_steps": (int, 1, MAX_INTEGER),
    },
    EvalRecord: {
        "epoch": (float, 0.0, MAX_MAGNITUDE),
        "metric": (float, -MAX_MAGNITUDE, MAX_MAGNITUDE),
        "elapsed_s": (float, 0.0, MAX_MAGNITUDE),
        "grad_sqr": (float, 0.0, MAX_GRAD_STAT),
        "grad_var": (float, 0.0, MAX_GRAD_STAT),
    },
}

#: Fields that tie a measured one to another (``sync_time_s`` <= ``step_time_s``): a record
#: that sets one is always checked in full.
_CROSS_CHECKED: dict[type, tuple[str, ...]] = {StepRecord: ("sync_time_s",)}

#: Shapes remembered at most: a tracked job has a few (one per configuration and kind of
#: record); a writer of many configurations (an import) starts over past this.
MAX_TEMPLATES = 256


@dataclass(frozen=True)
class _Kind:
    """How one record type splits into its fixed and its measured fields."""

    measured: Callable[[dict[str, Any]], tuple[Any, ...]]
    fixed: Callable[[dict[str, Any]], tuple[Any, ...]]
    bounds: tuple[tuple[type, float, float], ...]
    measured_names: tuple[str, ...]
    cross_checked: tuple[str, ...]


def _kind(cls: type) -> _Kind:
    measured = _MEASURED[cls]
    names = tuple(f.name for f in fields(cls) if f.name in measured)  # in the order a line holds them
    fixed = tuple(f.name for f in fields(cls) if f.name not in measured)
    return _Kind(measured=_getter(names), fixed=_getter(fixed), bounds=tuple(measured[n] for n in names),
                 measured_names=names, cross_checked=_CROSS_CHECKED.get(cls, ()))


def _getter(names: tuple[str, ...]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    get = itemgetter(*names)
    return get if len(names) > 1 else (lambda d: (get(d),))


_KINDS: dict[type, _Kind] = {cls: _kind(cls) for cls in _MEASURED}


# Shape -> template: the shape's line with a ``%r`` for each measured number it holds
# (printf-style: half the cost of ``str.format`` in caches a training step has just
# evicted). A shape is (record type, the types of its fixed fields, their values,
# which measured fields are left out): types beside values, and compared first, as
# 1 == 1.0 == True and a template made for workers=1 must not write workers=True, which the
# full check refuses. Only shapes whose fixed fields are all of _PLAIN types, and that set no
# cross-checked field, are ever remembered, so a record of any other shape finds nothing.
_TEMPLATES: dict[tuple[Any, ...], str] = {}
_PLAIN = frozenset({str, int, float, type(None)})  # hash and compare by value


def _shape(record: Record) -> tuple[tuple[Any, ...], list[Any]] | None:
    """The record's shape and its measured numbers as written (the ones not left out), or
    None where one of them is not a plain number inside its range: such a record is
    checked in full."""
    kind = _KINDS.get(type(record))  # the exact type: a subclass is checked in full
    if kind is None:
        return None
    values = vars(record)
    written: list[Any] = []
    left_out = 0  # one bit a measured field, set where it is None
    bit = 1
    for value, (kind_of, low, high) in zip(kind.measured(values), kind.bounds):
        if value is None:
            left_out |= bit
        # A bool is no int here (type, not isinstance), NaN fails both comparisons.
        elif type(value) is not kind_of or not low <= value <= high:
            return None
        else:
            written.append(value + 0.0 if kind_of is float else value)  # as the rule returns it: -0.0 is 0.0
        bit <<= 1
    fixed = kind.fixed(values)
    return (type(record), tuple(map(type, fixed)), fixed, left_out), written


def quick_line(record: Record) -> str | None:
    """The record's line from its shape's template, or None (check it in full)."""
    shaped = _shape(record)
    if shaped is None:
        return None
    shape, written = shaped
    try:
        template = _TEMPLATES.get(shape)
    except Exception:  # noqa: BLE001 - a fixed field that does not hash (a list, an array): no shape of ours
        return None
    return None if template is None else template % tuple(written)


def remember(record: Record, checked: Record, line: str) -> None:
    """After the full check wrote ``line`` for ``record`` (``checked``: as the reader read
    it), keep its shape's template for the next record of that shape."""
    shaped = _shape(record)
    if shaped is None:
        return
    shape, written = shaped
    kind = _KINDS[type(record)]
    if not _PLAIN.issuperset(shape[1]) or any(getattr(record, name) is not None for name in kind.cross_checked):
        return
    if shape in _TEMPLATES:
        return
    parts: list[str] = []
    for name, value in record_to_dict(checked).items():
        if name in kind.measured_names:
            parts.append(json.dumps(name) + ": %r")  # repr is json's spelling of a finite float and of an int
        else:
            parts.append((json.dumps(name) + ": " + json.dumps(value)).replace("%", "%%"))
    template = "{" + ", ".join(parts) + "}\n"
    if template % tuple(written) != line:
        return  # not the full check's text (a value json spells otherwise): this shape is checked in full
    if len(_TEMPLATES) >= MAX_TEMPLATES:
        _TEMPLATES.clear()
    _TEMPLATES[shape] = template
