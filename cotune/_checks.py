"""Bounded values from untrusted input: the one place every door turns a user's number into a number.

Every door (CLI arguments, HTTP JSON, Python keywords, profile records, cluster files)
passes user-supplied numbers through these functions, so the same value is accepted or
refused the same way everywhere, with the same one-line message. The API is small:

``number(value, *, where, gt=, ge=, lt=, le=, what=)`` → ``float``
    a real number (``int``, ``float``, numpy scalars; never ``bool``, a string, ``None``),
    finite, and within ``±MAX_MAGNITUDE`` unless tighter bounds are given.
``integer(value, *, where, ge=, le=)`` → ``int``
    a whole number; an integral float (``3.0``, which JSON Schema calls an integer) is
    accepted, ``16.7`` is refused, never truncated. Bounded by ``MAX_INTEGER`` by default.
``parse_number(text, *, where, integer=False, **bounds)``
    the same from text (a CLI argument, a ``KEY=VALUE`` part): ``"nan"``, ``"inf"``,
    ``"1e400"`` and 400-digit integers are refused.
``load_json(data, *, where="", max_depth=MAX_DEPTH)``
    ``json.loads`` that refuses ``NaN``/``Infinity`` literals, nesting deeper than
    ``max_depth`` (never a ``RecursionError``), huge integers, a field named twice in one
    object (``unique_keys``, the hook the profile reader uses too), and bad encodings.
``file_problem(path)`` → ``str | None``
    why a user's path cannot be read as a file (a directory; a device, pipe or socket,
    which may never end or never answer), or None.
``excerpt(value, *, limit=40)`` → ``str``
    a short, escaped, truncated quote of an offending value for a message: control
    characters escaped (no terminal escapes), long strings cut, containers and huge
    integers described (never ``repr`` of a huge or nested value).

Failures raise :class:`BadValue`, an :class:`~cotune.errors.InputError` whose message
is ``"<where>: <problem>, got <excerpt>"``; ``where`` is the caller's name for the value
(a JSON Pointer such as ``/deadline_s``, an option such as ``--deadline``, or
``file.yaml: gpus.t4.count``); ``detail`` is the message without it, for callers (the
HTTP API) that report the location separately.

    >>> number(-5, where="/deadline_s", gt=0)
    Traceback (most recent call last):
    ...
    cotune._checks.BadValue: /deadline_s: must be a finite number > 0, got -5

This module imports only :mod:`cotune.errors` so that anything may use it.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from decimal import Decimal
from typing import Any

from cotune.errors import InputError

__all__ = [
    "BadValue",
    "MAX_DEPTH",
    "MAX_INTEGER",
    "MAX_INTERVAL",
    "MAX_GRAD_STAT",
    "MAX_MAGNITUDE",
    "excerpt",
    "integer",
    "line_break_in",
    "not_text_reason",
    "load_json",
    "number",
    "numpy_time_kind",
    "one_line_name",
    "parse_key_number",
    "path_text_problem",
    "PROFILE_NAMED",
    "CLUSTER_NAMED",
    "parse_number",
    "plain_number",
    "unique_pairs",
]

#: Largest magnitude of any number a user may give (prices, targets, seconds...): far above
#: anything meaningful, far below where float arithmetic overflows when multiplied.
MAX_MAGNITUDE = 1e15
#: Largest magnitude of a gradient statistic (``grad_sqr``, ``grad_var``): sums of squares over
#: every parameter, 7e15 for BERT in the Pollux traces; only their ratio is used, so a bound
#: far below overflow is the only one that matters.
MAX_GRAD_STAT = 1e100
#: Largest whole number a user may give unless the field says less.
MAX_INTEGER = 10**15
#: Longest name a user may give (a gpu type, a workload, a metric, a log's column, a run):
#: far above any real one; longer, it is a mistake, and it is never echoed whole.
MAX_NAME = 200
#: Widest central probability of an interval: at 1 − 2⁻⁵³ the upper tail ``(1 + p) / 2``
#: rounds to exactly 1 in floating point and its normal quantile is infinite; six nines
#: is already wider than any interval a plan is judged by.
MAX_INTERVAL = 0.999999
#: Deepest JSON nesting accepted (a request or a record is a flat object of fields).
MAX_DEPTH = 32


class BadValue(InputError):
    """A user-supplied value is not what its field needs; ``where`` names the field."""

    def __init__(self, detail: str, *, where: str = "") -> None:
        # The pointer may hold a caller's key ('/prices/0\n', an escape sequence): shown escaped,
        # so the message stays one line and a terminal shows it as text; ``where`` stays exact.
        shown = where if where.isprintable() else "".join(_escaped(c) for c in where)
        super().__init__(f"{shown}: {detail}" if where else detail)
        self.where = where
        self.detail = detail


# --- names ---------------------------------------------------------------------------------

_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")  # what str.splitlines splits on


def line_break_in(text: str) -> bool:
    """Whether ``text`` (ends stripped) breaks a line: a name holding one would print a line
    of its own choosing in every table and sentence it appears in."""
    return not _LINE_BREAKS.isdisjoint(text.strip())


def one_line_name(value: Any, *, what: str, example: str) -> str:
    """``value`` stripped, if it is a non-empty one-line string (the profile reader's rule
    for names, checked where a name enters, before anything is measured or written)."""
    if not isinstance(value, str) or not value.strip() or line_break_in(value):
        raise InputError(f"{what} must be a non-empty one-line name such as {example}, got {excerpt(value)}")
    return value.strip()


# --- excerpts ------------------------------------------------------------------------------


def _escaped(text: str) -> str:
    # Escape only what a terminal would interpret (ESC, newlines, other controls), keep é and ü.
    return "".join(c if c.isprintable() and c != "'" else ("\\'" if c == "'" else ascii(c)[1:-1]) for c in text)


def excerpt(value: Any, *, limit: int = 40) -> str:
    """A short, safe quote of ``value`` for an error message (at most about ``limit`` + 20 characters).

    >>> excerpt("30m")
    "'30m'"
    >>> excerpt("\\x1b]0;owned\\x07")
    "'\\\\x1b]0;owned\\\\x07'"
    >>> excerpt(10**400)
    'an integer of 401 digits'
    >>> excerpt([[1, 2], 3])
    'an array of 2 items'
    """
    if value is None:
        return "null"
    if _is_bool(value):  # numpy.bool_ too: a bool, not 'a bool_'
        return "true" if value else "false"
    if numpy_time_kind(value):  # before Integral: numpy registers timedelta64 as one, and int() of it fails
        text = str(value)
        return f"a {value.dtype.name} ({text if len(text) <= limit else text[:limit] + '...'})"
    if isinstance(value, numbers.Integral):
        n = int(value)
        if n.bit_length() > 128:  # str() of a huge int is slow and refused past 4300 digits
            digits = len(str(n)) if n.bit_length() < 14000 else int(n.bit_length() * 0.30103) + 1
            return f"an integer of {'about ' if n.bit_length() >= 14000 else ''}{digits} digits"
        return str(n)
    if isinstance(value, Decimal):  # as written ('Infinity', '1E+400'), not the float it rounds to
        text = str(value)
        return text if len(text) <= limit else excerpt(text, limit=limit)
    if isinstance(value, numbers.Real):
        try:
            return repr(float(value))
        except (OverflowError, ValueError):  # a Fraction of 400-digit parts has no float
            return f"a {type(value).__name__} beyond any float"
    if isinstance(value, (str, bytes)):
        text = value if isinstance(value, str) else value.decode("utf-8", "replace")
        # The limit is on what is shown: an escaped control character takes up to 10.
        shown, width = [], 0
        for c in text[: limit + 1]:
            e = _escaped(c)
            if width + len(e) > limit:
                break
            shown.append(e)
            width += len(e)
        kind = "" if isinstance(value, str) else "b"  # bytes where text belongs: say so, b'...'
        if len(shown) == len(text):
            return f"{kind}'{''.join(shown)}'"
        return f"{kind}'{''.join(shown)}...' ({len(text)} characters)"
    if isinstance(value, (list, tuple)):
        # A tuple is named as one: "must be an array, got an array of 1 item" contradicted itself
        # where JSON's arrays (Python lists) are asked for.
        kind = "an array" if isinstance(value, list) else "a tuple"
        return f"{kind} of {len(value)} item{'' if len(value) == 1 else 's'}"
    if isinstance(value, dict):
        return f"an object of {len(value)} field{'' if len(value) == 1 else 's'}"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


# --- numbers -------------------------------------------------------------------------------


def _fmt(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() and abs(bound) < 1e7 else f"{bound:g}"


def _bounds_text(gt: float | None, ge: float | None, lt: float | None, le: float | None) -> str:
    parts = [f"{op} {_fmt(b)}" for op, b in ((">", gt), (">=", ge), ("<", lt), ("<=", le)) if b is not None]
    return " and ".join(parts)


def _is_bool(value: Any) -> bool:
    # numpy's bool without importing numpy: named 'bool_' before numpy 2, 'bool' since.
    return isinstance(value, bool) or (type(value).__name__ in ("bool_", "bool") and type(value).__module__ == "numpy")


def numpy_time_kind(value: Any) -> str | None:
    """``"m"`` for a numpy ``timedelta64`` (a scalar or a 0-d array), ``"M"`` for a ``datetime64``,
    else None — told without importing numpy. Neither is a number: numpy registers timedelta64
    as an integer, whose value is a count of its unit (nanoseconds in a pandas column)."""
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind in ("m", "M") and getattr(value, "ndim", None) == 0 and type(value).__module__ == "numpy":
        return str(kind)
    return None


def _in_bounds(x: float, gt: Any, ge: Any, lt: Any, le: Any) -> bool:
    return (
        (gt is None or x > gt) and (ge is None or x >= ge) and (lt is None or x < lt) and (le is None or x <= le)
    )


# Types plain_number returns as they are, told by their exact type (a subclass may be a
# numpy scalar, which has an item()).
_AS_IS = frozenset({float, int, str, bool, type(None)})


def plain_number(value: Any) -> Any:
    """A number a Python caller holds in another type, as a plain one: a 0-d array
    (``np.array(0.94)``, what numpy reductions give) its item, a ``Decimal`` a float.
    Anything else is returned as it is, for the checks to judge."""
    if type(value) in _AS_IS:  # what JSON gives and most callers pass: no attribute lookups
        return value
    if isinstance(value, Decimal):
        return float(value) if not value.is_nan() else math.nan  # ±Infinity stays ±inf
    if getattr(value, "ndim", None) == 0 and callable(getattr(value, "item", None)):
        # A timedelta64's item() is a count of its unit or a timedelta: refused as it is.
        return value if numpy_time_kind(value) else value.item()
    return value


def number(
    value: Any,
    *,
    where: str,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
    what: str = "a finite number",
    magnitude: float = MAX_MAGNITUDE,
) -> float:
    """``value`` as a finite ``float`` within the bounds (and within ``±magnitude``, by default
    :data:`MAX_MAGNITUDE`), or :class:`BadValue`.

    ``what`` names the kind of value in the message (``"a probability"``).
    """
    def want() -> str:  # built only for a message: readers check millions of valid numbers
        bounds = _bounds_text(gt, ge, lt, le)
        return f"{what}{' ' + bounds if bounds else ''}"

    original = value
    if type(value) is float:  # the common case (every number a reader parses, a timer's seconds): as it is
        x = value
    else:
        value = plain_number(value)
        if _is_bool(value) or not isinstance(value, numbers.Real) or (type(value) not in (int, float) and numpy_time_kind(value)):
            hint = "; give seconds as a number (cotune.parse_duration reads '30m')" if isinstance(value, str) and where.endswith("_s") else ""
            raise BadValue(f"must be {want()}, got {excerpt(original)}{hint}", where=where)
        try:
            x = float(value)
        except (OverflowError, ValueError):  # an int beyond float range
            x = math.inf
    if math.isfinite(x) and not _in_bounds(x, gt, ge, lt, le):
        # A probability written as a percentage (90 for 0.9): say how to write it.
        as_pct = what == "a probability" and 1.0 < x <= 100.0 and _in_bounds(x / 100, gt, ge, lt, le)
        pct = f"; write {x / 100:g} for {x:g} %" if as_pct else ""
        raise BadValue(f"must be {want()}, got {excerpt(original)}{pct}", where=where)
    if not math.isfinite(x) or abs(x) > magnitude:
        raise BadValue(f"must be {want()} (at most {magnitude:g} in magnitude), got {excerpt(original)}", where=where)
    return x + 0.0  # -0.0 is 0 (and would print as '-0.0s')


def interval(value: Any, *, where: str) -> float:
    """A central interval's probability: > 0 and at most :data:`MAX_INTERVAL` (one rule for the
    request's ``interval``, ``fit_models`` and the estimators' parameter)."""
    return number(value, where=where, gt=0.0, le=MAX_INTERVAL, what="a probability")


def integer(value: Any, *, where: str, ge: int | None = None, le: int | None = None) -> int:
    """``value`` as an ``int`` within the bounds (and within ``±MAX_INTEGER``), or :class:`BadValue`.

    Integral floats (``3.0``) are accepted; fractional ones (``16.7``) are refused, never truncated.
    """
    def want() -> str:
        bounds = _bounds_text(None, ge, None, le)
        return f"a whole number{' ' + bounds if bounds else ''}"

    original = value
    if type(value) is int:  # the common case (every count a reader parses): as it is; a bool is another type
        n = value
    else:
        value = plain_number(value)
        if _is_bool(value) or not isinstance(value, numbers.Real) or (type(value) not in (int, float) and numpy_time_kind(value)):
            raise BadValue(f"must be {want()}, got {excerpt(original)}", where=where)
        if isinstance(value, numbers.Integral):
            n = int(value)
        else:
            try:
                x = float(value)
            except (OverflowError, ValueError):
                x = math.inf
            if not (math.isfinite(x) and x.is_integer()):
                raise BadValue(f"must be {want()}, got {excerpt(original)}", where=where)
            n = int(x)
    if not _in_bounds(n, None, ge, None, le):
        raise BadValue(f"must be {want()}, got {excerpt(original)}", where=where)
    if abs(n) > MAX_INTEGER:
        raise BadValue(f"must be {want()} (at most {MAX_INTEGER:.0e} in magnitude), got {excerpt(original)}", where=where)
    return n


def parse_number(
    text: str,
    *,
    where: str,
    integer: bool = False,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
) -> Any:
    """A number read from text (``int`` if ``integer``, else ``float``), bounded as :func:`number` / :func:`integer`."""
    raw = text.strip() if isinstance(text, str) else text
    if not isinstance(raw, str) or not raw or len(raw) > 100:
        kind = "a whole number" if integer else "a number"
        raise BadValue(f"expected {kind} (at most 100 characters), got {excerpt(text)}", where=where)
    if "_" in raw or not raw.isascii():
        # int() and float() read Python's digit separators ('1_6') and other scripts' digits
        # ('١٦'); the files cotune reads refuse them, and so does every door.
        kind = "a whole number" if integer else "a number"
        raise BadValue(f"expected {kind} written in ASCII digits, got {excerpt(text)}", where=where)
    if integer:
        try:
            n = int(raw)
        except ValueError:
            # '16.0' is the whole number 16, as integer() takes 16.0 from JSON and Python (the
            # CLI refused what HTTP accepted); '16.7' is refused, never truncated.
            try:
                x = float(raw)
            except ValueError:
                x = math.nan
            if not (math.isfinite(x) and x.is_integer() and "_" not in raw):
                bounds = _bounds_text(None, ge, None, le)
                raise BadValue(f"expected a whole number{' ' + bounds if bounds else ''}, got {excerpt(text)}",
                               where=where) from None
            n = int(x)
        return _integer(n, where=where, ge=None if ge is None else int(ge), le=None if le is None else int(le))
    try:
        x = float(raw)
    except ValueError:
        raise BadValue(f"expected a number, got {excerpt(text)}", where=where) from None
    if not math.isfinite(x):
        raise BadValue(f"expected a finite number, got {excerpt(text)}", where=where)
    return number(x, where=where, gt=gt, ge=ge, lt=lt, le=le)


_integer = integer  # parse_number's keyword ``integer`` shadows the function inside it


# --- files -------------------------------------------------------------------------------

#: Longest path a user may give as text (Linux's PATH_MAX): the OS refuses a longer one anyway.
MAX_PATH_CHARS = 4096
#: What a profile given as text may be, for :func:`path_text_problem`'s fix.
PROFILE_NAMED = "a profile file or a bundled example name (cotune examples lists them)"
#: What a cluster file given as text must be.
CLUSTER_NAMED = "a cluster file (.toml, .yaml or .yml; examples/cluster.toml shows one)"


def path_text_problem(text: str, *, what: str) -> str:
    """What is wrong with ``text`` as the path of a file a user names (``what``: "a profile
    file or a bundled example name", "a cluster file"), with the fix; "" if nothing. One rule
    for the request's fields and the functions that read the file: an empty path read as
    '.' ("is a directory") at one door and was refused at another."""
    if not text.strip():
        return f"is empty (got {excerpt(text)}): give {what}"
    if "\x00" in text:
        return f"holds a NUL byte, which no path can (got {excerpt(text)}): give {what}"
    if len(text) > MAX_PATH_CHARS:
        return f"is {len(text):,} characters long, more than the {MAX_PATH_CHARS:,} a path may have: give a shorter path to {what}"
    return ""



def file_problem(path: "str | os.PathLike[str]") -> str | None:
    """Why ``path`` cannot be read as a file, or None: ``"is a directory"`` or ``"is not
    a regular file (a device, a pipe or a socket)"``. A FIFO without a writer blocks its
    reader forever and ``/dev/zero`` never ends, so every door that reads a user's file
    asks this before opening it. A missing or unreadable path is None: the open that
    follows says so in its own words."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError, TypeError):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    if not stat.S_ISREG(mode):
        return "is not a regular file (a device, a pipe or a socket)"
    return None


# Leading bytes of files that are not UTF-8 text but are often handed over as if they were:
# a compressed copy (profiles and logs are kept compressed in object stores), or UTF-16
# (PowerShell's '>' and Excel's "Unicode text" write it). The advice is the conversion.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip-compressed: decompress it first (gunzip FILE)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed: decompress it first (zstd -d FILE)"),
    (b"BZh", "bzip2-compressed: decompress it first (bunzip2 FILE)"),
    (b"\xfd7zXZ\x00", "xz-compressed: decompress it first (unxz FILE)"),
    (b"PK\x03\x04", "a zip archive: extract the file from it first (unzip FILE)"),
    # UTF-32's marks first: UTF-32LE's begins with UTF-16LE's
    (b"\xff\xfe\x00\x00", "UTF-32 text: save it as UTF-8"),
    (b"\x00\x00\xfe\xff", "UTF-32 text: save it as UTF-8"),
    (b"\xff\xfe", "UTF-16 text (PowerShell's '>' and Excel's Unicode text write it): save it as UTF-8"),
    (b"\xfe\xff", "UTF-16 text: save it as UTF-8"),
)


def _utf16_without_mark(head: bytes) -> bool:
    """Whether ``head`` is ASCII written as UTF-16 with no byte order mark: every other byte
    NUL, the others not (``{\x00"\x00`` little-endian, ``\x00{\x00"`` big-endian). Such
    bytes are valid UTF-8 — they decode, and only the parser after fails, at column 2 — and
    UTF-8 text never holds a NUL between its characters."""
    pairs = head[: len(head) // 2 * 2]
    if len(pairs) < 4:
        return False
    even, odd = pairs[0::2], pairs[1::2]
    return (all(even) and not any(odd)) or (all(odd) and not any(even))


def not_text_reason(source: "str | os.PathLike[str] | bytes") -> str:
    """Why a file (a path, or its leading bytes) is not UTF-8 text, with the fix: a
    compressed file, an archive or UTF-16 (with or without a byte order mark) by its
    leading bytes. Returns "" when they name nothing (the caller's own "not UTF-8" advice
    stands). Readers ask it when a file fails to decode, and when its text holds a NUL:
    UTF-16 without a byte order mark decodes as UTF-8."""
    if isinstance(source, bytes):
        head = source[:8]
    else:
        try:
            with open(source, "rb") as fh:
                head = fh.read(8)
        except (OSError, ValueError):
            return ""
    why = next((why for magic, why in _MAGIC if head.startswith(magic)), "")
    if not why and _utf16_without_mark(head):
        why = "UTF-16 text without a byte order mark (iconv -t UTF-16LE and Windows programs write it): save it as UTF-8"
    return why


# --- JSON ----------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON: send finite numbers only (null for no value)")


def _depth_ok(value: Any, max_depth: int) -> bool:
    stack = [(value, 0)]
    while stack:  # iterative: a deep value must not overflow the stack here either
        node, depth = stack.pop()
        if depth > max_depth:
            return False
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return True


class DuplicateKey(ValueError):
    """A JSON object names one field twice (raised by :func:`unique_keys`)."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json.loads`` that refuses a field named twice in one
    object (:class:`DuplicateKey`): ``json.loads`` keeps the last silently, so a request or
    record naming a field twice (two merged documents, a templating slip, a hand edit)
    would be read as one of them."""
    out = dict(pairs)
    if len(out) == len(pairs):  # no key twice: the common case, one C call
        return out
    out = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(f"field {excerpt(key)} appears twice in one object")
        out[key] = value
    return out


def load_json(data: str | bytes, *, where: str = "", max_depth: int = MAX_DEPTH, nonfinite: bool = False,
              decode_fix: str | None = None) -> Any:
    """Parse JSON text refusing NaN/Infinity, nesting beyond ``max_depth``, huge integers,
    a field named twice in one object, and bad bytes.

    ``nonfinite=True`` reads ``NaN``/``Infinity`` as floats instead: a file written by
    Python's ``json`` (a training log) has them wherever a loss diverged.
    ``decode_fix``: what to do about text that is not JSON at all, added to its message
    (the service's "send one JSON object (...)"; a file's reader says it itself).
    Raises :class:`BadValue` (one line) instead of ``JSONDecodeError``, ``RecursionError``
    or ``UnicodeDecodeError``.
    """
    try:
        constants = {} if nonfinite else {"parse_constant": _reject_constant}
        value = json.loads(data, object_pairs_hook=unique_keys, **constants)
    except json.JSONDecodeError as exc:
        # Some messages end in "at" already ("Unterminated string starting at"): not "at at".
        at = "" if exc.msg.endswith(" at") else " at"
        fix = "" if decode_fix is None else f": {decode_fix}"
        raise BadValue(f"not valid JSON: {exc.msg}{at} line {exc.lineno} column {exc.colno}{fix}", where=where) from None
    except RecursionError:
        raise BadValue(f"not valid JSON here: nested deeper than {max_depth} levels", where=where) from None
    except DuplicateKey as exc:
        raise BadValue(f"{exc}: send each field once", where=where) from None
    except (ValueError, TypeError) as exc:  # NaN/Infinity, a >4300-digit integer, bad encoding
        text = " ".join(str(exc).split())
        if "integer string conversion" in text:  # Python's advice (set_int_max_str_digits) is the server's, not the sender's
            text = "a number with thousands of digits: send numbers of ordinary size"
        raise BadValue(f"not valid JSON: {text[:200]}", where=where) from None
    if not _depth_ok(value, max_depth):
        raise BadValue(f"nested deeper than {max_depth} levels: send a flat object of fields", where=where)
    return value


def parse_key_number(text: str) -> tuple[str, float]:
    """``KEY=NUMBER`` (a ``--price t4=0.53`` option): the key lower-cased, the number checked."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise InputError(f"expected KEY=NUMBER such as t4=0.53, got {text[:60]!r}")
    return key.strip().lower(), parse_number(value, where="")


def unique_pairs(pairs: list[tuple[Any, Any]] | None, option: str) -> dict[Any, Any] | None:
    """The mapping of a repeatable ``KEY=VALUE`` option; a key given twice is an error
    (as a JSON object's key given twice is), not the last one silently kept."""
    if not pairs:
        return None
    out: dict[Any, Any] = {}
    for key, value in pairs:
        if key in out:
            name = "every gpu type" if key is None else repr(key)
            raise InputError(f"{option} gives {name} twice ({out[key]!r} and {value!r}): give each once")
        out[key] = value
    return out
