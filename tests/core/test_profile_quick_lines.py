"""cotune/profile/_quick.py: a record written from its shape's template is the line the full check writes.

The oracle is the full check itself (``_dump`` with no template remembered: the record read
back by the reader's rule, then ``json.dumps``); each test first makes a template with a
valid record of the same shape, then writes the record under test, and holds the two side
by side — or checks that both refuse it.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune._checks import MAX_GRAD_STAT, MAX_INTEGER, MAX_MAGNITUDE
from cotune.errors import ProfileError
from cotune.profile import MIN_STEP_TIME_S, EvalRecord, StepRecord, read_profile
from cotune.profile import _quick
from cotune.profile._profile import MAX_LINE_CHARS, _dump

STEP = StepRecord(gpu="t4", workers=4, local_batch=32, step_time_s=0.25, hosts=2, accum_steps=1, market="spot",
                  step_time_spread_s=0.01, timed_steps=20, job="job-1", cause="replan")
EVAL = EvalRecord(global_batch=128, epoch=1.5, metric=0.75, job="job-1", elapsed_s=30.0, schedule_epochs=10.0,
                  grad_sqr=2.0, grad_var=3.0)


def _full(record: Any) -> str | type[ProfileError]:
    """The full check's line for ``record`` (ProfileError if it refuses it), no template in play."""
    _quick._TEMPLATES.clear()
    try:
        return _dump(record)
    except ProfileError:
        return ProfileError
    finally:
        _quick._TEMPLATES.clear()


def _after_template(warm: Any, record: Any) -> str | type[ProfileError]:
    """``record``'s line once ``warm`` (same shape, valid) has made its shape's template."""
    _quick._TEMPLATES.clear()
    try:
        _dump(warm)
        return _dump(record)
    except ProfileError:
        return ProfileError
    finally:
        _quick._TEMPLATES.clear()


def _edges(low: float, high: float) -> list[Any]:
    """Values at, just inside and just past each bound, and the ones a float can be that are no number."""
    inside = [low, math.nextafter(low, math.inf), high, math.nextafter(high, -math.inf), (low + high) / 2]
    outside = [math.nextafter(low, -math.inf), math.nextafter(high, math.inf), math.nan, math.inf, -math.inf]
    return inside + outside + [-0.0, 0.0, 1e-300, -1e-300]


FLOAT_FIELDS = [
    (STEP, "step_time_s", MIN_STEP_TIME_S, MAX_MAGNITUDE),
    (STEP, "step_time_spread_s", 0.0, MAX_MAGNITUDE),
    (EVAL, "epoch", 0.0, MAX_MAGNITUDE),
    (EVAL, "metric", -MAX_MAGNITUDE, MAX_MAGNITUDE),
    (EVAL, "elapsed_s", 0.0, MAX_MAGNITUDE),
    (EVAL, "grad_sqr", 0.0, MAX_GRAD_STAT),
    (EVAL, "grad_var", 0.0, MAX_GRAD_STAT),
]


@pytest.mark.parametrize(("warm", "name", "low", "high"), FLOAT_FIELDS, ids=[f[1] for f in FLOAT_FIELDS])
def test_a_measured_float_at_and_past_its_bounds_is_written_or_refused_as_the_full_check_does(warm, name, low, high):
    for value in _edges(low, high):
        record = replace(warm, **{name: value})
        assert _after_template(warm, record) == _full(record), (name, value)


@pytest.mark.parametrize("value", [1, 20, MAX_INTEGER, MAX_INTEGER + 1, 0, -1, True, 20.0, 20.5, np.int64(20), None])
def test_a_measured_count_is_written_or_refused_as_the_full_check_does(value):
    record = replace(STEP, timed_steps=value)
    assert _after_template(STEP, record) == _full(record)


@pytest.mark.parametrize("value", [np.float64(0.5), np.float32(0.5), np.array(0.5), 1, True, "0.5"])
def test_a_measured_value_of_another_type_is_written_or_refused_as_the_full_check_does(value):
    record = replace(EVAL, metric=value)
    assert _after_template(EVAL, record) == _full(record)
    assert _quick.quick_line(record) is None  # never from a template: the full check reads it


def test_a_record_in_range_is_written_from_its_template():
    # The point of the module: without it every record above would pass trivially.
    _quick._TEMPLATES.clear()
    _dump(EVAL)
    later = replace(EVAL, epoch=2.25, metric=0.8125, elapsed_s=61.5)
    assert _quick.quick_line(later) == _full(later)


@pytest.mark.parametrize(("name", "value"), [
    ("workers", True), ("accum_steps", True), ("workers", 4.0), ("workers", np.int64(4)), ("local_batch", 32.5), ("hosts", 5),
    ("gpu", "T4"), ("gpu", " t4 "), ("gpu", "t4\nCHOSEN"), ("market", "reserved"), ("job", ""), ("cause", "whim"),
    ("accum_steps", 0), ("placement", ["a"]),
])
def test_a_fixed_field_that_differs_only_in_type_or_spelling_never_uses_anothers_template(name, value):
    # 4 == 4.0 == np.int64(4) and True == 1: a template made for the plain value must not
    # write (or let through) what the full check normalises or refuses.
    record = replace(STEP, **{name: value})
    assert _after_template(STEP, record) == _full(record)


def test_a_step_record_with_its_sync_time_is_always_checked_in_full():
    # sync_time_s <= step_time_s ties a fixed field to a measured one.
    warm = replace(STEP, sync_time_s=0.1)
    faster = replace(warm, step_time_s=0.05)  # now the sync time exceeds the step
    assert _after_template(warm, faster) is ProfileError
    assert _after_template(warm, replace(warm, step_time_s=0.5)) == _full(replace(warm, step_time_s=0.5))


@pytest.mark.parametrize("job", ["50% done", "{job}", "%r %s %%", 'quote " and \\ backslash', "é ☃ 日本"])
def test_a_name_json_escapes_or_printf_would_read_is_written_as_the_full_check_writes_it(job):
    warm = replace(EVAL, job=job)
    later = replace(warm, epoch=3.0)
    assert _after_template(warm, later) == _full(later) != ProfileError


def test_a_measured_field_left_out_is_a_shape_of_its_own():
    without = replace(EVAL, grad_sqr=None, grad_var=None)
    assert _after_template(EVAL, without) == _full(without)
    assert _after_template(without, EVAL) == _full(EVAL)


def test_a_line_that_a_longer_number_takes_past_the_longest_a_profile_may_hold_is_refused():
    # The template's line fitted; the same shape with a longer number must not slip past the cap.
    base = replace(STEP, step_time_s=0.5, placement="")
    warm = replace(base, placement="x" * (MAX_LINE_CHARS - len(_full(base))))
    assert len(_full(warm)) == MAX_LINE_CHARS  # the longest line a profile may hold
    longer = replace(warm, step_time_s=0.123456789)
    assert _full(longer) is ProfileError and _after_template(warm, longer) is ProfileError


def test_templates_are_bounded():
    _quick._TEMPLATES.clear()
    for batch in range(1, _quick.MAX_TEMPLATES + 10):
        _dump(replace(EVAL, global_batch=batch))
    assert len(_quick._TEMPLATES) <= _quick.MAX_TEMPLATES
    _quick._TEMPLATES.clear()


@settings(max_examples=200, deadline=None)
@given(epoch=st.floats(allow_nan=True, allow_infinity=True), metric=st.floats(allow_nan=True, allow_infinity=True),
       elapsed_s=st.floats(allow_nan=True, allow_infinity=True))
def test_any_float_is_written_or_refused_as_the_full_check_does(epoch, metric, elapsed_s):
    record = replace(EVAL, epoch=epoch, metric=metric, elapsed_s=elapsed_s)
    written = _after_template(EVAL, record)
    assert written == _full(record)
    if written is not ProfileError:
        back = json.loads(written)
        assert back["epoch"] == epoch + 0.0 and (back["metric"] == metric or math.isnan(metric))


def test_a_profile_of_template_lines_reads_as_the_records_written(tmp_path):
    from cotune.profile import ProfileWriter, WorkloadRecord

    path = tmp_path / "p.jsonl"
    evals = [replace(EVAL, epoch=0.5 * k, metric=0.1 + k / 100, elapsed_s=10.0 * k) for k in range(1, 6)]
    with ProfileWriter(path, fsync=False) as writer:
        writer.write(WorkloadRecord(name="w", dataset_size=10_000))
        for e in evals:
            writer.write(e)
    assert list(read_profile(path).evals) == evals
