"""Parsing and formatting of durations, money and chances: ``90m``, ``2h``, ``1h30m``, ``3600``."""

from __future__ import annotations

import math
import numbers
import re

from cotune._checks import excerpt
from cotune.errors import InputError

__all__ = [
    "parse_duration", "format_duration", "format_duration_at_least", "format_money", "format_money_at_least", "format_chance",
    "count_of",
]

_UNIT_S = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([dhms])")


def parse_duration(text: str | float | int, *, allow_zero: bool = False) -> float:
    """Return seconds for ``'90m'``, ``'2h'``, ``'1h30m'``, ``'45s'``, ``'3600'`` or a number.

    Positive unless ``allow_zero`` (a time already spent: a job that has just started).

    >>> parse_duration("1h30m")
    5400.0
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        try:
            value = float(text)
        except OverflowError:  # an int beyond float range (10**400): out of range, said so below
            value = math.inf
    else:
        raw = str(text).strip().lower().replace(" ", "")
        if not raw:
            raise InputError("empty duration: give seconds (3600) or a span such as 90m, 2h, 1h30m")
        unreadable = InputError(
            f"cannot read duration {excerpt(text)}: use seconds (3600) or a span such as 90m, 2h, 1h30m "
            "(each unit once, largest first)"
        )
        if not raw.isascii():  # float() reads other scripts' digits ('٣٠٠٠'); no door takes them
            raise unreadable
        if raw.startswith("-") and len(raw) > 1:
            # '-0', '-0s', '-0e0' are zero (they were refused as "must be zero or more"): the span
            # after the sign is read first, and only a negative one refused.
            try:
                magnitude = parse_duration(raw[1:], allow_zero=True)
            except InputError:
                raise unreadable from None
            if magnitude != 0.0 or not allow_zero:
                raise InputError(f"duration must be {'zero or more' if allow_zero else 'positive'}, got {excerpt(text)}")
            return 0.0
        try:
            if "_" in raw:  # float() reads Python's digit separators: '1_000' is no duration anyone writes
                raise unreadable
            value = float(raw)
        except ValueError:
            pos, value, last, previous = 0, 0.0, math.inf, ""
            for match in _PART.finditer(raw):
                unit = _UNIT_S[match.group(2)]
                # '1h1h', '30s1h' and '1.5h30m' are typos, not sums: units run largest first,
                # each once, and only the last part may be fractional
                if match.start() != pos or unit >= last or "." in previous:
                    raise unreadable from None
                value += float(match.group(1)) * unit
                pos, last, previous = match.end(), unit, match.group(1)
            if pos != len(raw) or pos == 0:
                raise unreadable from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise InputError(f"duration must be {'zero or more' if allow_zero else 'positive'} and finite, got {excerpt(text)}")
    return value + 0.0  # -0.0 is 0 seconds


def format_duration(seconds: float) -> str:
    """Format seconds as a short human span: ``'1h23m'``, ``'4m05s'``, ``'12.3s'``
    (``'inf'``, ``'-inf'`` and ``'nan'`` for what is not a span; a negative span keeps its sign)."""
    if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real):
        raise InputError(f"seconds must be a number, got {excerpt(seconds)}")
    try:
        seconds = float(seconds)
    except OverflowError:  # an int (or Fraction) past float range: a span longer than any, as 1e400 reads
        seconds = math.inf if seconds > 0 else -math.inf
    if not math.isfinite(seconds):
        return str(seconds)  # 'inf', '-inf', 'nan'
    if seconds < 0:
        return "-" + format_duration(-seconds)
    if round(seconds, 1) < 60:  # 59.96 shows as 1m00s, not 60.0s
        return f"{seconds:.1f}s"
    total = int(round(seconds))
    # Round to the last unit shown (minutes past an hour, hours past a day), not truncate.
    if total >= 86400:
        total = int(round(total / 3600)) * 3600
    elif total >= 3600:
        total = int(round(total / 60)) * 60
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours >= 24:
        return f"{hours // 24}d{hours % 24:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s"


def format_duration_at_least(seconds: float) -> str:
    """:func:`format_duration` rounded *up* to the last unit shown: a hint "at least 2h01m"
    must not name a deadline shorter than the one needed."""
    if not math.isfinite(seconds) or seconds <= 0:
        return format_duration(seconds)
    if seconds < 60:
        step = 0.1
    elif seconds < 3600:
        step = 1.0
    elif seconds < 86400:
        step = 60.0
    else:
        step = 3600.0
    return format_duration(math.ceil(round(seconds / step, 9)) * step)


def format_money(amount: float, *, priced: bool) -> str:
    """Dollars when prices were given, worker-hours (``w·h``) when they were not."""
    if not math.isfinite(amount):
        return "inf"
    # Two decimals hide small jobs ($0.00): below 1, three significant digits — with their
    # trailing zeros, so a column reads $0.490 under $0.464, not $0.49 (and $0.700, not $0.7).
    if abs(amount) >= 1 or amount == 0:
        text = f"{amount:,.2f}"
    else:
        decimals = 2 - math.floor(math.log10(abs(amount)))
        text = f"{amount:.{decimals}f}" if round(abs(amount), decimals) < 1 else f"{amount:.2f}"
    return f"${text}" if priced else f"{text} w·h"


def format_money_at_least(amount: float, *, priced: bool) -> str:
    """:func:`format_money` rounded *up* to the last digit shown: a hint "raise the budget to
    at least $1.12" must not name less than the $1.1232 needed."""
    if not math.isfinite(amount) or amount <= 0:
        return format_money(amount, priced=priced)
    decimals = 2 if amount >= 1 else 2 - math.floor(math.log10(amount))
    step = 10.0 ** -decimals
    up = math.ceil(round(amount / step, 9)) * step
    text = f"{up:,.{decimals}f}" if up >= 1 else f"{up:.{decimals}f}"
    return f"${text}" if priced else f"{text} w·h"


MAX_CHANCE_DIGITS = 9


def format_chance(p: float | None, *, against: float | None = None, digits: int = 2, percent: bool = False) -> str:
    """A probability with ``digits`` decimals (of a percentage with ``percent``) — more where
    that would put it on the wrong side of the confidence ``against`` it is judged by
    (``0.9999987`` is below a confidence of 0.999999, not "1.00"). It never reads 0 or 1, not
    even where the float is exactly that (a saturated normal tail): the model is not certain
    of either (``>0.99``, ``<1%``)."""
    if p is None or not math.isfinite(p):
        return "—"
    p = min(max(float(p), 0.0), 1.0)  # float noise past either end (-1e-17) would print "-0.00"
    scale, unit = (100.0, "%") if percent else (1.0, "")
    d = digits
    while d < MAX_CHANCE_DIGITS and against is not None and (
        (p < against) != (round(p * scale, d) / scale < against)
        # ">0.99" against 0.999 would not say which side: the bound itself must clear it
        or (p >= against and round(p * scale, d) >= scale and (scale - 10.0 ** -d) / scale < against)
    ):
        d += 1
    shown = round(p * scale, d)
    if against is not None and (p < against) != (shown / scale < against):
        # At the confidence itself to every digit (p == against): the shortest exact form.
        return f"{float(p * scale)!r}{unit}"
    if shown >= scale:
        return f">{scale - 10.0 ** -d:.{d}f}{unit}"
    if shown <= 0.0:
        return f"<{10.0 ** -d:.{d}f}{unit}"
    return f"{shown:.{d}f}{unit}"


def count_of(n: float, noun: str) -> str:
    """``n`` and ``noun`` in the number it takes: "1 worker", "8 workers", "1.5 hosts" (a
    report reads "step time at 1 worker", never "1 workers").

    >>> count_of(1, "worker"), count_of(8, "host")
    ('1 worker', '8 hosts')
    """
    return f"{n:g} {noun}{'' if n == 1 else 's'}"
