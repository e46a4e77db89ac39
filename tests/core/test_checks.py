"""cotune._checks: every user number bounded and finite, every quoted value short and escaped."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cotune._checks import MAX_DEPTH, MAX_INTEGER, MAX_MAGNITUDE, BadValue, excerpt, integer, load_json, number, parse_number
from cotune.errors import InputError

_ANY_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=200),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5),
    max_leaves=30,
)


def test_number_message_names_the_field_the_bound_and_the_value():
    with pytest.raises(BadValue, match=r"^/deadline_s: must be a finite number > 0, got -5$") as info:
        number(-5, where="/deadline_s", gt=0)
    assert isinstance(info.value, InputError)
    assert info.value.where == "/deadline_s" and info.value.detail.startswith("must be")


@pytest.mark.parametrize("bad", [True, False, math.nan, math.inf, -math.inf, 10**400, 10**30, "30m", None, [1], {"a": 1}])
def test_number_refuses_bools_non_finite_huge_and_non_numbers(bad):
    with pytest.raises(BadValue):
        number(bad, where="/x")


def test_number_hints_parse_duration_for_a_string_in_a_seconds_field():
    with pytest.raises(BadValue, match="parse_duration"):
        number("30m", where="/deadline_s", gt=0)


@pytest.mark.parametrize(("value", "hint"), [(90, "write 0.9 for 90 %"), (99.9, "write 0.999 for 99.9 %"), (100, None), (1.5, "write 0.015 for 1.5 %"), (-3, None)])
def test_a_probability_written_as_a_percentage_is_refused_with_how_to_write_it(value, hint):
    with pytest.raises(BadValue) as info:
        number(value, where="/confidence", gt=0.0, lt=1.0, what="a probability")
    assert (hint in str(info.value)) if hint else " for " not in str(info.value)


@pytest.mark.parametrize("bad", [16.7, True, math.nan, 10**400, "16", None, 0])
def test_integer_refuses_fractions_bools_huge_strings_and_out_of_range(bad):
    with pytest.raises(BadValue):
        integer(bad, where="/workers/0", ge=1)


def test_integer_accepts_integral_floats_as_json_schema_does():
    assert integer(3.0, where="/w", ge=1) == 3 and type(integer(3.0, where="/w")) is int


def test_integer_accepts_numpy_integers():
    np = pytest.importorskip("numpy")
    assert integer(np.int64(7), where="/w", ge=1) == 7
    with pytest.raises(BadValue):
        integer(np.bool_(True), where="/w")


@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers())
def test_number_returns_a_bounded_finite_float_or_raises_bad_value(x):
    try:
        y = number(x, where="/x")
    except BadValue as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 200
    else:
        assert math.isfinite(y) and abs(y) <= MAX_MAGNITUDE


@given(st.integers() | st.floats())
def test_integer_never_truncates(x):
    try:
        n = integer(x, where="/n")
    except BadValue:
        assert not (float(x).is_integer() if math.isfinite(float(x)) else False) or abs(x) > MAX_INTEGER
    else:
        assert n == x


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e400", "9" * 400, "", "  ", "12abc", "0x10"])
def test_parse_number_refuses_non_finite_huge_and_garbage_text(text):
    with pytest.raises(BadValue):
        parse_number(text, where="--x")


def test_parse_number_reads_ints_and_floats():
    assert parse_number(" 7 ", where="--n", integer=True, ge=1) == 7
    assert parse_number("0.5", where="--q", gt=0, lt=1) == 0.5
    with pytest.raises(BadValue, match="whole number"):
        parse_number("16.7", where="--workers", integer=True)


@given(_ANY_JSONISH)
def test_excerpt_is_short_single_line_and_free_of_control_characters(value):
    text = excerpt(value)
    assert len(text) <= 80
    assert all(c.isprintable() for c in text)


def test_excerpt_escapes_terminal_sequences_and_describes_huge_values():
    assert "\x1b" not in excerpt("\x1b]0;title\x07") and "\\x1b" in excerpt("\x1b]0;title\x07")
    assert excerpt(10**400) == "an integer of 401 digits"
    assert excerpt(10**5000) in ("an integer of about 5000 digits", "an integer of about 5001 digits")
    assert excerpt([[1] * 10**5]) == "an array of 1 item"
    assert "(300000 characters)" in excerpt("a" * 300_000)


def test_load_json_refuses_nan_infinity_deep_nesting_huge_ints_and_bad_bytes():
    for bad in ('{"a": NaN}', "[Infinity]", "[" * 100_000 + "]" * 100_000, "[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2),
                "1" * 5000, b"\xff\xfe{", "{", ""):
        with pytest.raises(BadValue) as info:
            load_json(bad)
        assert "\n" not in str(info.value)


def test_load_json_refuses_a_field_named_twice_in_one_object():
    for bad in ('{"target": 0.9, "target": 0.5}', '{"a": {"x": 1, "x": 2}}'):
        with pytest.raises(BadValue, match="appears twice in one object: send each field once"):
            load_json(bad, where="/")
    assert load_json('[{"x": 1}, {"x": 2}]') == [{"x": 1}, {"x": 2}]  # the same name in two objects is fine


def test_load_json_says_a_huge_integer_is_the_senders_to_fix():
    with pytest.raises(BadValue) as info:
        load_json('{"target": ' + "9" * 5000 + "}")
    assert "ordinary size" in str(info.value) and "set_int_max_str_digits" not in str(info.value)


def test_load_json_reads_ordinary_json():
    assert load_json('{"a": [1, 2.5, null]}') == {"a": [1, 2.5, None]}


def test_negative_zero_is_read_as_zero():
    # a cluster file's write_s = -0.0 printed 'Young/Daly ... = -0.0s'
    y = number(-0.0, where="/x", ge=0.0)
    assert y == 0.0 and math.copysign(1.0, y) == 1.0


def test_excerpt_marks_bytes_where_text_belongs():
    # gpus=[b"t4"] was refused as "must be a non-empty string, got 't4'"
    assert excerpt(b"t4") == "b't4'" and excerpt("t4") == "'t4'"


def test_excerpt_of_a_number_beyond_any_float_names_its_type():
    # float() of a Fraction of 400-digit parts raised OverflowError inside the message itself.
    from fractions import Fraction

    from cotune._checks import excerpt

    assert excerpt(Fraction(10**400, 3)) == "a Fraction beyond any float"
    assert excerpt(Fraction(1, 3)) == repr(1 / 3)


@pytest.mark.parametrize("key", ["0\n", "\x1b[2J", "a\rb"])
def test_a_callers_key_in_the_pointer_is_shown_escaped_and_kept_exact(key):
    # recommend(prices={'0\n': None}) gave a two-line message; an escape sequence reached the terminal.
    import cotune

    with pytest.raises(BadValue) as err:
        cotune.recommend("cifar10-resnet18", target=0.9, prices={key: None})
    assert err.value.where == f"/prices/{key}" and str(err.value).isprintable(), repr(str(err.value))
    assert str(err.value).endswith(": must be a finite number >= 0, got null")


@pytest.mark.parametrize("value, maximise, want", [
    (5e-324, True, 5e-324),  # 10**327 is no float: OverflowError in the target hint (the profiles' fuzz)
    (1.23456e-5, True, 1.234e-5),
    (1.23456e-5, False, 1.235e-5),
    (1e308, False, 1e308),
])
def test_a_target_hint_rounds_toward_the_easier_side_at_any_magnitude(value, maximise, want):
    from cotune._explain import _round_easier

    assert _round_easier(value, maximise=maximise) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("text", ["1_6", "١٦", "１６"])
def test_a_number_from_text_is_written_in_ascii_digits_at_every_door(text):
    from cotune._checks import parse_number

    for integer in (True, False):
        with pytest.raises(BadValue, match="written in ASCII digits"):
            parse_number(text, where="--max-workers", integer=integer)


def test_utf32_text_is_named_utf32_not_utf16():
    from cotune._checks import not_text_reason

    assert not_text_reason("{}\n".encode("utf-32")).startswith("UTF-32 text")
    assert not_text_reason("{}\n".encode("utf-16")).startswith("UTF-16 text")
