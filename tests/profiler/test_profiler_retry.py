"""--retry-failed's bookkeeping without a launch: which failed points a rerun runs again,
how the summary names them, and the one out-of-memory rule the solver shares."""

from __future__ import annotations

import pytest

from cotune.errors import InputError
from cotune.profile import FailureRecord, StepRecord, oom_superseded
from profiler._session import _retry_kinds
from profiler._settings import SessionSummary
from profiler._state import DEFAULT_RETRY, CurveDoneRecord, ProfileState


def _state() -> ProfileState:
    state = ProfileState()
    for kind, b in (("crash", 4), ("timeout", 8), ("oom", 64)):
        state.add(FailureRecord(gpu="t4", workers=1, hosts=1, local_batch=b, failure=kind, message="x"))
    state.add(CurveDoneRecord(global_batch=32, seed=0, workers=1, epochs=3, reason="diverged"))
    state.add(CurveDoneRecord(global_batch=64, seed=0, workers=1, epochs=9, reason="max_epochs"))
    state.add(CurveDoneRecord(global_batch=128, seed=0, workers=1, epochs=0, reason="crash"))
    return state


def test_bare_retry_forgets_crashes_and_timeouts_only():
    state = _state()
    assert state.forget_failures(DEFAULT_RETRY) == 3  # crash at 4, timeout at 8, the crashed curve at 128
    assert not state.timing_done(("t4", 1, 1, 4)) and not state.timing_done(("t4", 1, 1, 8))
    assert state.timing_done(("t4", 1, 1, 64)) and state.oom_bound("t4") == 64
    assert set(state.curves_done) == {(32, 0), (64, 0)}


def test_a_named_out_of_memory_is_forgotten_and_its_cap_with_it():
    state = _state()
    assert state.forget_failures(frozenset({"oom"})) == 1
    assert state.oom_bound("t4") is None and set(state.curves_done) == {(32, 0), (64, 0), (128, 0)}


def test_a_finished_or_diverged_curve_is_never_a_failure_to_retry():
    # a diverged curve's epochs stay: a rerun with another recipe would extend them as one curve
    state = _state()
    assert state.failed_before((64, 0)) is None and state.failed_before((32, 0)) is None
    assert state.failed_before((128, 0)) == "crash" and state.failed_before(("t4", 1, 1, 4)) == "crash"


def test_a_failure_a_step_has_since_measured_is_not_failed_before():
    state = _state()
    state.add(StepRecord(gpu="t4", workers=1, hosts=1, local_batch=4, step_time_s=0.1))
    assert state.failed_before(("t4", 1, 1, 4)) is None
    assert state.forget_failures(DEFAULT_RETRY) == 2  # the crash at 4 is measured: nothing to run again


@pytest.mark.parametrize(("given", "kinds"), [(True, {"crash", "timeout"}), (False, set()), ((), set()),
                                              ("OOM", {"oom"}), (["crash", " oom"], {"crash", "oom"})])
def test_retry_kinds_are_read_from_a_flag_a_name_or_a_list(given, kinds):
    assert _retry_kinds(given) == kinds


def test_an_unknown_retry_kind_is_refused_with_the_known_ones():
    with pytest.raises(InputError, match=r"unknown failure kind 'diverged': name some of crash, timeout, oom \("):
        _retry_kinds(["diverged"])


def _step(b: int, gpu: str = "t4") -> StepRecord:
    return StepRecord(gpu=gpu, workers=1, hosts=1, local_batch=b, step_time_s=0.1)


def _oom(b: int, gpu: str = "t4") -> FailureRecord:
    return FailureRecord(gpu=gpu, workers=1, hosts=1, local_batch=b, failure="oom", message="x")


@pytest.mark.parametrize(("records", "flags"), [
    ([_oom(16), _step(16)], (True,)),  # retried after a fix: it fits now
    ([_step(16), _oom(16)], (False,)),  # a job that ran at 16 for a while, then ran out of memory there
    ([_oom(16), _step(8)], (False,)),  # a smaller batch says nothing about 16
    ([_oom(16), _step(32, gpu="v100")], (False,)),  # another GPU type's memory
    ([_oom(16), _oom(64), _step(32)], (True, False)),
])
def test_an_out_of_memory_is_superseded_only_by_a_later_step_at_its_batch_or_above(records, flags):
    assert oom_superseded(records) == flags


def test_the_profiler_state_reads_the_files_order_and_follows_the_session():
    state = ProfileState()
    state.add(_oom(16))
    assert state.oom_bound("t4") == 16
    state.add(_step(32))  # a retried point ran
    assert state.oom_bound("t4") is None
    state.add(_oom(16))  # and ran out of memory again
    assert state.oom_bound("t4") == 16


def _summary(**kw) -> SessionSummary:
    base = dict(out="p.jsonl", gpu="t4", ran=0, failed=0, skipped_done=0, skipped_oom=0, skipped_budget=0,
                records_written=0, session_wall_s=1.0, probe_wall_s=1.0, probe_worker_s=1.0)
    return SessionSummary(**{**base, **kw})


def test_the_summary_says_how_to_rerun_points_that_failed_before():
    text = _summary(skipped_done=3, skipped_failed=(("crash", 1), ("oom", 1))).describe()
    assert "3 already in the profile (2 of them failed before: crash 1, oom 1; --retry-failed crash,oom runs them again)" \
        in text


def test_a_run_whose_every_probe_failed_says_so_and_a_partly_failed_one_does_not():
    text = _summary(ran=2, failed=2, failed_kinds=("crash",)).describe()
    assert text.endswith("every probe of this run failed (crash): the lines above and the logs under p.jsonl.cotune/logs/ "
                         "say why; fix the cause, then run the same command with --retry-failed crash")
    assert "every probe" not in _summary(ran=2, failed=1, failed_kinds=("crash",)).describe()
    assert "every probe" not in _summary().describe()


def test_the_summary_counts_one_launch_in_the_singular():
    assert "2 probes run (0 failed) in 1 launch, 0 records written" in _summary(ran=2, launches=1).describe()
    assert "3 probes run (0 failed) in 2 launches" in _summary(ran=3, launches=2).describe()
