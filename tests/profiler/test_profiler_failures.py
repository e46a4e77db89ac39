"""Failure paths: a simulated out-of-memory, crashes, a hang; profiling goes on."""

from __future__ import annotations

import pytest

import time

from _waiting import wait_for
from profiler_helpers import FAST, of, processes_mentioning, run_cli, spec

from cotune.profile import read_profile


@pytest.mark.slow
def test_oom_is_recorded_and_bounds_the_batch(tmp_path, capsys):
    out = tmp_path / "oom.jsonl"
    code, err = run_cli(["--workload", spec("oom_above_8"), "--workers", "1", "--local-batch", "4,16,32",
                         "--out", str(out), "--no-curves", *FAST], capsys)
    assert code == 0, err
    profile = read_profile(out)
    assert [s.local_batch for s in profile.steps] == [4]
    assert [(f.local_batch, f.failure) for f in profile.failures] == [(16, "oom")]
    assert "simulated out of memory" in profile.failures[0].message
    assert profile.max_local_batch("cpu") == 15  # 32 was never probed: it is above the OOM
    assert [c["local_batch"] for c in of(out, "probe_cost")] == [4, 16]


@pytest.mark.slow
def test_crash_on_every_rank_and_on_one_rank_are_recorded(tmp_path, capsys):
    out = tmp_path / "crash.jsonl"
    code, err = run_cli(["--workload", spec("crashing"), "--workers", "1", "--local-batch", "4", "--out", str(out),
                         "--no-curves", *FAST], capsys)
    assert code == 0, err
    (failure,) = read_profile(out).failures
    assert failure.failure == "crash" and "boom: the model factory is broken" in failure.message

    out2 = tmp_path / "crash2.jsonl"
    code, err = run_cli(["--workload", spec("rank1_crashing"), "--workers", "2", "--local-batch", "4,8",
                         "--out", str(out2), "--no-curves", *FAST], capsys)
    assert code == 0, err
    profile = read_profile(out2)
    assert [(f.workers, f.local_batch, f.failure) for f in profile.failures] == [(2, 4, "crash"), (2, 8, "crash")]
    assert all("boom on rank 1 only" in f.message for f in profile.failures)
    assert not profile.steps


@pytest.mark.slow
def test_hanging_probe_times_out_and_leaves_no_process(tmp_path, capsys):
    out = tmp_path / "hang.jsonl"
    began = time.monotonic()
    code, err = run_cli(["--workload", spec("hanging"), "--workers", "2", "--local-batch", "4",
                         "--probe-timeout", "8s", "--out", str(out), "--no-curves", *FAST], capsys)
    took = time.monotonic() - began
    assert code == 0, err
    (failure,) = read_profile(out).failures
    assert failure.failure == "timeout" and failure.workers == 2
    assert "--probe-timeout" in failure.message
    assert 8 <= took < 30
    wait_for(lambda: processes_mentioning(str(tmp_path)) == [], timeout_s=60,
             what="every probe process to exit after the timeout")


@pytest.mark.slow
def test_a_batch_that_hangs_inside_a_launch_times_out_and_keeps_the_batch_before_it(tmp_path, capsys):
    out = tmp_path / "hang2.jsonl"
    # 30 s, not less: batch 4 (start-up included) must finish within it even on a loaded machine.
    code, err = run_cli(["--workload", spec("hang_above_4"), "--workers", "1", "--local-batch", "4,8",
                         "--probe-timeout", "30s", "--out", str(out), "--no-curves", *FAST], capsys)
    assert code == 0, err
    profile = read_profile(out)
    assert [s.local_batch for s in profile.steps] == [4]
    (failure,) = profile.failures
    assert (failure.local_batch, failure.failure) == (8, "timeout") and "--probe-timeout" in failure.message
    wait_for(lambda: processes_mentioning(str(tmp_path)) == [], timeout_s=60,
             what="every probe process to exit after the batch's time-out")
