"""Argument types shared by commands. They only *read* text — a number, a duration, a
list, ``KEY=VALUE`` — through :mod:`cotune._checks` (finite, bounded, never NaN or a
400-digit integer); ranges and cross-field rules belong to the request value
(:mod:`cotune._request`), so each is checked in one place."""

from __future__ import annotations

import argparse
import difflib
import re
from typing import Any, Callable, Sequence

from cotune._checks import excerpt, parse_key_number, parse_number, unique_pairs
from cotune.errors import InputError
from cotune.units import parse_duration

__all__ = [
    "duration",
    "finite_float",
    "gpu_count",
    "int_list",
    "int_range",
    "key_text",
    "key_value",
    "non_negative_int",
    "port",
    "positive_int",
    "real_number",
    "signed_duration",
    "unique_pairs",
    "usage_hint",
    "whole_number",
]


def _wrap(fn: Callable[[str], Any]) -> Callable[[str], Any]:  # argparse reports ArgumentTypeError messages verbatim
    def inner(text: str) -> Any:
        try:
            return fn(text)
        except InputError as exc:
            raise argparse.ArgumentTypeError(getattr(exc, "detail", str(exc))) from None

    inner.__name__ = fn.__name__
    return inner


@_wrap
def duration(text: str) -> float:
    return parse_duration(text)


def _duration_as_written(text: str) -> float:
    """A span as written: its sign and zero kept (``-5``, ``-30m``, ``0``), and a plain number
    read as Python reads it (``nan``, ``inf``, ``1e400`` as inf). The request's rule for the
    field judges the range, in the words and with the pointer every door uses (``/deadline_s:
    must be a finite number > 0, got nan``); the parser's own ("duration must be zero or more
    and finite") was wrong for a field that must be > 0 and carried no pointer."""
    raw = text.strip()
    if raw and len(raw) <= 100 and raw.isascii() and "_" not in raw:
        try:
            return float(raw) + 0.0  # + 0.0: '-0' is 0 seconds
        except ValueError:
            pass  # a span such as 90m, read below
    if raw.startswith("-") and len(raw) > 1:
        return -parse_duration(raw[1:], allow_zero=True) + 0.0
    return parse_duration(raw, allow_zero=True)


@_wrap
def duration_or_zero(text: str) -> float:
    """A duration that may be 0 by its field's rule: time already spent (``--elapsed``), or an
    overhead that may be none (``--restart 0``) — read as written (:func:`_duration_as_written`),
    so the request's ``ge=0`` rule for ``elapsed_s`` and ``restart_s`` judges it, as at every door."""
    return _duration_as_written(text)


@_wrap
def signed_duration(text: str) -> float:
    """A span as written, its sign, zero, ``nan`` and ``inf`` kept (``-5``, ``-30m``, ``0``):
    the request's rule for the field says what is wrong with it, in the words every door
    uses — the parser's own ("duration must be positive") differed from Python's and HTTP's."""
    return _duration_as_written(text)


@_wrap
def real_number(text: str) -> float:
    """A number as written, ``nan``, ``inf`` and ``1e400`` included: the request refuses them
    in its own words (``--budget: must be a finite number > 0 …, got nan``), as at every door."""
    raw = text.strip()
    if not raw or len(raw) > 100 or "_" in raw or not raw.isascii():
        return parse_number(text, where="")  # raises, in its words for text that is no number
    try:
        return float(raw)
    except ValueError:
        raise InputError(f"expected a number, got {excerpt(text)}") from None


@_wrap
def whole_number(text: str) -> int:
    return parse_number(text, where="", integer=True)


@_wrap
def positive_int(text: str) -> int:
    return parse_number(text, where="", integer=True, ge=1)


@_wrap
def non_negative_int(text: str) -> int:
    return parse_number(text, where="", integer=True, ge=0)


@_wrap
def port(text: str) -> int:
    return parse_number(text, where="", integer=True, ge=1, le=65535)


@_wrap
def finite_float(text: str) -> float:
    return parse_number(text, where="")


@_wrap
def target_value(text: str) -> float:
    """A target metric: a number in the unit the profile's curves are logged in. '94%'
    is refused with both readings named — the unit is the log's, not the option's."""
    if text.strip().endswith("%"):
        try:
            number = parse_number(text.strip()[:-1], where="")
        except InputError:
            number = parse_number(text, where="")  # not a number with a percent sign: say so of the whole text
        raise InputError(f"expected a number in the metric's own unit, got {text[:40]!r}: write {number:g} if the "
                         f"curves log percentages, {number / 100:g} if they log fractions")
    return parse_number(text, where="")


def _ints(text: str, example: str) -> list[int]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or len(parts) > 10_000:
        got = "none" if not parts else f"{len(parts):,} of them"
        raise InputError(f"expected comma-separated whole numbers such as {example}, got {got}")
    return [parse_number(p, where="", integer=True) for p in parts]


@_wrap
def int_list(text: str) -> list[int]:
    return _ints(text, "32,64,128")


@_wrap
def int_range(text: str) -> tuple[int, int]:
    parts = text.replace("..", ",").split(",")
    if len(parts) != 2:
        raise InputError(f"expected MIN..MAX such as 256..4096, got {text[:40]!r}")
    lo, hi = (parse_number(p, where="", integer=True) for p in parts)
    return lo, hi


# One definition of a KEY=NUMBER option (--price) for every command, the profiler's too.
key_value = _wrap(parse_key_number)


def key_text(example: str) -> Callable[[str], tuple[str, str]]:
    """The parser of a ``KEY=VALUE`` option whose value is text (``--node-selector``,
    ``--where``, ``--column``): both sides trimmed, the key non-empty; ``example`` is shown
    when the form is wrong."""
    def parse(text: str) -> tuple[str, str]:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise argparse.ArgumentTypeError(f"expected KEY=VALUE such as {example}, got {text[:60]!r}")
        return key.strip(), value.strip()

    return parse


@_wrap
def gpu_count(text: str) -> tuple[str | None, int]:
    """``N`` (every gpu type) or ``GPU=N``."""
    key, sep, num = text.partition("=")
    if sep and not key.strip():
        raise InputError(f"expected N or GPU=N such as t4=8, got {text[:60]!r}")
    return (key.strip().lower() if sep else None), parse_number(num if sep else key, where="", integer=True)


def _nearest(word: str, choices: list[str]) -> list[str]:
    """At most two of ``choices`` near ``word``: close spellings first, then those it begins
    (an abbreviation, which the parsers refuse: ``allow_abbrev=False``)."""
    close = difflib.get_close_matches(word, choices, n=2, cutoff=0.7)
    begun = [c for c in choices if c.startswith(word) and c != word] if len(word) > 2 else []
    return list(dict.fromkeys(close + begun))[:2]


def usage_hint(parser: argparse.ArgumentParser, message: str, *, argv: Sequence[str] = ()) -> str:
    """argparse's usage ``message`` with the nearest spelling the ``parser`` knows.

    "unrecognized arguments: --gpus 8" gains "; did you mean --gpu or --gpus-per-host?" and
    "invalid choice: 'pack'" gains "; did you mean 'packed'?". A parser's ``option_hints``
    (option → text) say what a known mistake meant instead. The parsers take no
    abbreviations (``allow_abbrev=False``): a prefix such as ``--gpus`` bound silently to
    ``--gpus-per-host``, and an option added later would change what an old script means.
    ``argv``, the words parsed: a required option missing because it was abbreviated
    (``--targ 0.9``) is named, where argparse says only that ``--target`` is required.
    """
    m = re.fullmatch(r"the following arguments are required: (.*)", message, flags=re.DOTALL)
    if m:
        missing = [name.strip() for name in m.group(1).split(",")]
        known = {s for a in parser._actions for s in a.option_strings}
        words = list(argv[: list(argv).index("--")] if "--" in argv else argv)
        for word in (w.split("=", 1)[0] for w in words if w.startswith("--") and len(w) > 2):
            meant = [name for name in missing if name.startswith(word)] if word not in known else []
            if meant:
                return f"{message}; {word} is not {meant[0]}: options are written in full"
        return message
    m = re.fullmatch(r"unrecognized arguments: (.*)", message, flags=re.DOTALL)
    if m:
        options = sorted({s for a in parser._actions for s in a.option_strings if s.startswith("--")})
        unknown = [t.split("=", 1)[0] for t in m.group(1).split() if t.startswith("--") and len(t) > 2]
        hints: dict[str, str] = getattr(parser, "option_hints", {})  # a command's words for what was meant
        if unknown and unknown[0] in hints:
            return f"{message}; {hints[unknown[0]]}"
        if unknown:
            near = _nearest(unknown[0], options)
            if near:
                return f"{message}; did you mean {' or '.join(near)}?"
        return message
    m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if m:
        choices = re.findall(r"'([^']*)'", m.group(2))
        near = _nearest(m.group(1), choices)
        if near:
            return f"{message}; did you mean {' or '.join(repr(c) for c in near)}?"
    return message
