import pytest
from hypothesis import given
from hypothesis import strategies as st

from cotune.errors import InputError
from cotune.units import format_duration, format_duration_at_least, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90m", 5400), ("2h", 7200), ("1h30m", 5400), ("3600", 3600), ("45s", 45), ("1.5h", 5400), ("1d", 86400), (120, 120),
     ("1d2h3m4s", 93784), ("1h1.5m", 3690)],
)
def test_parse_duration_accepts_documented_forms(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "10x", "-5", "0", "1h-3m", "inf", "nan", "m"])
def test_parse_duration_rejects_garbage_with_a_hint(text):
    with pytest.raises(InputError, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["1h1h", "30m30m", "30s1h", "1m1h", "1.5h30m", "1_000", "1_0m"])
def test_a_repeated_unsorted_or_odd_span_is_refused_not_summed(text):
    # '1h1h' was 7200 s and '30s1h' 3630 s: typos read as sums
    with pytest.raises(InputError, match="each unit once, largest first"):
        parse_duration(text)


def test_a_huge_duration_is_quoted_as_an_excerpt():
    with pytest.raises(InputError) as info:
        parse_duration("9" * 100_000 + "s")
    assert len(str(info.value)) < 300


@given(st.integers(min_value=1, max_value=10**6))
def test_format_then_parse_round_trips_to_the_shown_precision(seconds):
    text = format_duration(seconds)
    # the format keeps two units: seconds are dropped past an hour, minutes past a day
    resolution = 1800 if "d" in text else 30 if "h" in text else 0.5
    assert abs(parse_duration(text) - seconds) <= resolution


@given(st.floats(min_value=1e-3, max_value=1e8, allow_nan=False))
def test_format_duration_at_least_never_reads_shorter_than_the_duration(seconds):
    shown = format_duration_at_least(seconds)
    assert parse_duration(shown) >= seconds - 1e-9
    # ... and by less than the last unit shown
    step = 0.1 if seconds < 60 else 1.0 if seconds < 3600 else 60.0 if seconds < 86400 else 3600.0
    assert parse_duration(shown) < seconds + step + 1e-6
