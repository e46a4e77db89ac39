"""Fuzz the tracker a training loop calls: a run of calls (steps, evaluations, noise,
out-of-memory, moves, flushes) with one or two hostile values among sane ones. A hostile
value is a one-line :class:`~cotune.errors.InputError` and nothing else — never a
``TypeError`` from inside, never a record half-written; the loop goes on after it, and the
profile on disk reads back with every record the tracker said it wrote."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fuzz_helpers import FAST, HEAVY, PY_VALUES, one_line
from hypothesis import given
from hypothesis import strategies as st

from cotune.errors import InputError
from cotune.profile import WorkloadRecord, read_profile
from cotune.track import Tracker

WORKLOAD = WorkloadRecord(name="w", dataset_size=50_000, metric="acc")
# What a training loop holds besides plain values: numpy scalars and arrays (0-d: a reduction).
VALUES = st.one_of(PY_VALUES, st.sampled_from([np.array([1, 2]), np.array(0.5), np.array(8), np.float32("nan"),
                                               np.int64(3), np.int64(-1), np.array("t4"), np.float64(1e300),
                                               np.array([[0.5]])]))
# Each call with sane values: what a hostile draw replaces one of.
SANE = {
    "step": {"step_time_s": 0.1, "micro_batches": None},
    "eval": {"metric": 0.5, "epoch": None, "grad_sqr": None, "grad_var": None},
    "noise": {"b_noise": 512.0, "epoch": None},
    "out_of_memory": {"message": "CUDA out of memory"},
    "reconfigure": {"gpu": None, "workers": 4, "local_batch": None, "hosts": None, "accum_steps": None,
                    "market": None, "cause": "replan"},
    "flush": {},
}
CONSTRUCTOR = {"gpu": "t4", "workers": 2, "local_batch": 32, "hosts": 1, "accum_steps": 1, "market": "on_demand",
               "job": None, "window": 3, "flush_every_s": 60.0, "warmup_steps": 1, "epochs_done": 0.0,
               "schedule_epochs": None, "cause": None}


@st.composite
def calls(draw) -> list[tuple[str, dict]]:
    out = []
    for _ in range(draw(st.integers(1, 30))):
        name = draw(st.sampled_from(sorted(SANE) + ["step"] * 4))  # mostly steps, as a loop makes
        kw = dict(SANE[name])
        if kw and draw(st.integers(0, 3)) == 0:
            for key in draw(st.lists(st.sampled_from(sorted(kw)), min_size=1, max_size=2, unique=True)):
                kw[key] = draw(VALUES)
        out.append((name, kw))
    return out


def _check(tmp_path_factory, constructor: dict, run: list[tuple[str, dict]]) -> None:
    path = tmp_path_factory.mktemp("fuzz-tracker", numbered=True) / "job.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an epoch going back is said, and written
        try:
            tracker = Tracker(path, workload=WORKLOAD, rank=0, fsync="none", **constructor)
        except InputError as exc:
            assert one_line(str(exc)) and len(str(exc)) < 2000, str(exc)[:2000]
            assert not path.exists() or not (read_profile(path).steps or read_profile(path).evals)
            return
        with tracker:
            for name, kw in run:
                try:
                    getattr(tracker, name)(**kw)
                except InputError as exc:  # a hostile value: one line, and the loop goes on
                    assert one_line(str(exc)) and len(str(exc)) < 2000, str(exc)[:2000]
    profile = read_profile(path)
    assert not profile.warnings, profile.warnings  # no torn line, nothing skipped
    # The tracker made the file: every line is a record it wrote (the workload's first).
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(lines) == tracker.records_written
    assert len(profile.steps) + len(profile.evals) + len(profile.noise) + len(profile.failures) == len(lines) - 1


@FAST
@given(run=calls())
def test_hostile_values_in_a_loops_calls_are_one_line_errors_and_lose_no_record(tmp_path_factory, run):
    _check(tmp_path_factory, CONSTRUCTOR, run)


@st.composite
def constructors(draw) -> dict:
    kw = dict(CONSTRUCTOR)
    for key in draw(st.lists(st.sampled_from(sorted(kw)), min_size=1, max_size=2, unique=True)):
        kw[key] = draw(VALUES)
    return kw


@FAST
@given(constructor=constructors(), run=calls())
def test_a_tracker_built_with_hostile_values_is_refused_in_one_line_or_tracks(tmp_path_factory, constructor, run):
    _check(tmp_path_factory, constructor, run)


@pytest.mark.slow
@HEAVY
@given(constructor=constructors(), run=calls())
def test_many_hostile_trackers_and_calls_are_one_line_errors_and_lose_no_record(tmp_path_factory, constructor, run):
    _check(tmp_path_factory, constructor, run)
