"""Argument types shared by commands: durations, KEY=VALUE pairs, lists."""

from __future__ import annotations

import argparse
import math

from cotune.errors import InputError
from cotune.units import parse_duration

__all__ = [
    "duration",
    "positive_int",
    "non_negative_int",
    "positive_float",
    "finite_float",
    "non_negative_float",
    "fraction",
    "probability",
    "int_list",
    "key_value",
]


def _wrap(fn):  # argparse reports ArgumentTypeError messages verbatim
    def inner(text: str):
        try:
            return fn(text)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    inner.__name__ = fn.__name__
    return inner


@_wrap
def duration(text: str) -> float:
    return parse_duration(text)


def _int(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InputError(f"expected a whole number >= {minimum}, got {text!r}") from None
    if value < minimum:
        raise InputError(f"expected a whole number >= {minimum}, got {value}")
    return value


@_wrap
def positive_int(text: str) -> int:
    return _int(text, 1)


def _float(text: str, example: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"expected {example}, got {text!r}") from None
    if not math.isfinite(value):
        raise InputError(f"expected a finite number, got {text!r}")
    return value


@_wrap
def non_negative_int(text: str) -> int:
    return _int(text, 0)


@_wrap
def non_negative_float(text: str) -> float:
    value = _float(text, "a number >= 0")
    if value < 0:
        raise InputError(f"expected a finite number >= 0, got {text!r}")
    return value


@_wrap
def fraction(text: str) -> float:
    value = _float(text, "a fraction such as 0.05")
    if not 0 <= value < 1:
        raise InputError(f"expected a fraction in [0, 1) such as 0.05, got {text!r}")
    return value


@_wrap
def positive_float(text: str) -> float:
    value = _float(text, "a number")
    if value <= 0:
        raise InputError(f"expected a positive number, got {text!r}")
    return value


@_wrap
def finite_float(text: str) -> float:
    return _float(text, "a number")


@_wrap
def probability(text: str) -> float:
    value = _float(text, "a probability such as 0.95")
    if not 0.0 < value < 1.0:
        raise InputError(f"expected a probability strictly between 0 and 1, got {text!r}")
    return value


@_wrap
def int_list(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = int(part)
        except ValueError:
            raise InputError(f"expected comma-separated whole numbers such as 32,64,128, got {text!r}") from None
        if value < 1:
            raise InputError(f"values must be >= 1, got {value} in {text!r}")
        out.append(value)
    if not out:
        raise InputError("empty list: give comma-separated whole numbers such as 32,64,128")
    return out


@_wrap
def key_value(text: str) -> tuple[str, float]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise InputError(f"expected KEY=NUMBER such as t4=0.53, got {text!r}")
    try:
        number = float(value)
    except ValueError:
        raise InputError(f"expected a number after '=' in {text!r}") from None
    if not math.isfinite(number) or number < 0:
        raise InputError(f"expected a non-negative number in {text!r}")
    return key.strip().lower(), number
