"""Fuzz the Python door's keywords: hostile values for every keyword of
:func:`cotune.recommend` give a recommendation or a one-line :class:`cotune.InputError`,
never TypeError, OverflowError or a numpy error; bounded time and memory."""

from __future__ import annotations

import json

import pytest
from fuzz_helpers import FAST, HEAVY, PY_VALUES, SANE_QUESTION, memory_bound, one_line, synthetic_records, time_bound
from hypothesis import given
from hypothesis import strategies as st

import cotune
from cotune.errors import InputError

_RECORDS = synthetic_records(seed=13, workers=(1, 2, 4), batches=(16, 32, 64))
_SANE = dict(SANE_QUESTION)


@pytest.fixture(scope="module")
def fitted():
    profile = cotune.parse_profile([json.dumps(r) + "\n" for r in _RECORDS])
    return profile, cotune.fit_models(profile)


def _check_recommend(fitted, kwargs) -> None:
    profile, models = fitted
    with time_bound(kwargs), memory_bound():
        try:
            rec = cotune.recommend(profile, models=models, **kwargs)
        except InputError as exc:
            assert one_line(str(exc)) and len(str(exc)) < 2000, str(exc)[:2000]
            return
    assert rec.feasible in (True, False)
    json.dumps(rec.to_dict(), allow_nan=False)  # the documented JSON object, always serialisable


@st.composite
def keyword_sets(draw) -> dict:
    names = ["target"] + draw(st.lists(st.sampled_from(sorted(set(_SANE) - {"target"})), max_size=6, unique=True))
    kwargs = {n: _SANE[n] for n in names}
    for n in draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True)):
        kwargs[n] = draw(PY_VALUES)
    return kwargs


@FAST
@given(kwargs=keyword_sets())
def test_recommend_with_hostile_keywords_raises_only_input_error(fitted, kwargs):
    _check_recommend(fitted, kwargs)


@pytest.mark.slow
@HEAVY
@given(kwargs=keyword_sets())
def test_recommend_with_many_hostile_keywords_raises_only_input_error(fitted, kwargs):
    _check_recommend(fitted, kwargs)


