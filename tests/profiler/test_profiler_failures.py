"""Failure paths: a simulated out-of-memory, crashes, a hang; profiling goes on."""

from __future__ import annotations

import pytest

import json
import time
from pathlib import Path

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
                         "--no-curves", "--quiet", *FAST], capsys)
    # The run measured nothing: exit 1 (it was 0, and with --quiet nothing said so either).
    assert code == 1, err
    assert err.count("\n") == 1 and err.startswith("cotune: every probe of this run failed (crash): the logs under "), err
    (failure,) = read_profile(out).failures
    assert failure.failure == "crash" and "boom: the model factory is broken" in failure.message

    out2 = tmp_path / "crash2.jsonl"
    code, err = run_cli(["--workload", spec("rank1_crashing"), "--workers", "2", "--local-batch", "4,8",
                         "--out", str(out2), "--no-curves", *FAST], capsys)
    assert code == 1 and "every probe of this run failed (crash)" in err, err
    profile = read_profile(out2)
    assert [(f.workers, f.local_batch, f.failure) for f in profile.failures] == [(2, 4, "crash"), (2, 8, "crash")]
    assert all("boom on rank 1 only" in f.message for f in profile.failures)
    assert not profile.steps


@pytest.mark.slow
@pytest.mark.parametrize("workload, said", [("sigtermed", "stopped by signal 15 from outside the profiler"),
                                            ("sigkilled", "killed by SIGKILL, and not by the kernel's out-of-memory killer")])
def test_a_probe_killed_from_outside_is_not_recorded_as_the_workloads_failure(tmp_path, capsys, workload, said):
    from profiler._launcher import oom_kill_count

    if workload == "sigkilled" and oom_kill_count() is None:
        pytest.skip("this kernel keeps no OOM-kill count: a SIGKILL reads as the OOM killer's, as documented")
    out = tmp_path / "killed.jsonl"
    code, err = run_cli(["--workload", spec(workload), "--workers", "1", "--local-batch", "4", "--out", str(out),
                         "--no-curves", "--quiet", *FAST], capsys)
    assert code == 3, err  # the environment's: was exit 1 with a 'crash' (SIGTERM) or an 'oom' (SIGKILL) record
    assert said in err and err.count("\n") == 1, err
    assert not read_profile(out).failures


@pytest.mark.slow
@pytest.mark.parametrize("workload, said", [
    ("rank1_sigtermed_in_a_step", "stopped by signal 15 from outside the profiler"),
    ("rank1_sigkilled_in_a_step", "killed by SIGKILL, and not by the kernel's out-of-memory killer")])
def test_one_rank_killed_from_outside_is_not_recorded_as_a_crash_when_its_peer_sees_the_connection_close(
        tmp_path, capsys, workload, said):
    from profiler._launcher import oom_kill_count

    if workload == "rank1_sigkilled_in_a_step" and oom_kill_count() is None:
        pytest.skip("this kernel keeps no OOM-kill count: a SIGKILL reads as the OOM killer's, as documented")
    out = tmp_path / "killed.jsonl"
    code, err = run_cli(["--workload", spec(workload), "--workers", "2", "--local-batch", "4", "--out", str(out),
                         "--no-curves", "--quiet", *FAST], capsys)
    # Was exit 0 with a 'crash' record quoting rank 0's "Connection closed by peer".
    assert code == 3, err
    assert said in err and err.count("\n") == 1, err
    assert not read_profile(out).failures


@pytest.mark.slow
def test_a_ranks_own_connection_reset_is_recorded_as_its_crash(tmp_path, capsys):
    out = tmp_path / "reset.jsonl"
    code, err = run_cli(["--workload", spec("rank1_connection_reset"), "--workers", "2", "--local-batch", "4",
                         "--out", str(out), "--no-curves", "--quiet", *FAST], capsys)
    # Was exit 3 "stopped by signal 15 from outside" with nothing recorded (rank 0 stopped by
    # torchrun), or a crash record quoting rank 0's gloo "Connection closed by peer".
    assert code == 1 and "every probe of this run failed (crash)" in err, err
    (failure,) = read_profile(out).failures
    assert failure.failure == "crash", failure
    assert failure.message.startswith("ConnectionResetError: [Errno 104] Connection reset by peer (fetching a shard "
                                      "from the object store)"), failure


def _signal_mid_probe(tmp_path: Path, *signal_names: str, stderr: object, quiet: bool = False,
                      sighup_ignored: bool = False) -> tuple[object, Path]:
    """A profiler run of a hanging workload, sent ``signal_names`` in turn once its probe's
    worker has started (the profiler is mid-probe); (the process, after it ended; its scratch
    folder). The profiler starts with SIGHUP and SIGTERM at their defaults, or SIGHUP ignored
    as ``nohup`` leaves it: a child inherits the ignored ones, and the profiler keeps them
    ignored (by design), so a test runner started under ``nohup`` made the SIGHUP cases wait
    out their 120 s for a stop that was never coming."""
    import os
    import signal
    import subprocess
    import sys

    def dispositions() -> None:  # in the child, before exec: only what this test chose
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_IGN if sighup_ignored else signal.SIG_DFL)

    root = Path(__file__).resolve().parents[2]
    scratch = tmp_path / "stopped.jsonl.cotune"
    proc = subprocess.Popen([sys.executable, "-m", "profiler", "--workload", spec("hanging"), "--workers", "1",
                             "--local-batch", "4", "--out", str(tmp_path / "stopped.jsonl"), "--no-curves",
                             *(["--quiet"] if quiet else []), *FAST],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=stderr, text=True,
                            env={**os.environ, "PYTHONPATH": str(root)}, preexec_fn=dispositions)
    try:
        wait_for(lambda: any(scratch.glob("run-*/*/results/rank*.started")) or proc.poll() is not None,
                 timeout_s=120, what="the probe's worker to start")
        assert proc.poll() is None, proc.returncode
        for name in signal_names:
            proc.send_signal(getattr(signal, name))
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc, scratch


@pytest.mark.slow
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGHUP"])
def test_a_profiler_stopped_by_sigterm_or_sighup_cleans_up_says_so_and_exits_130(tmp_path, signal_name):
    import subprocess

    proc, scratch = _signal_mid_probe(tmp_path, signal_name, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    proc.stderr.close()
    # Was exit 143 / 129 with nothing said and this run's scratch folder left behind.
    assert proc.returncode == 130, err
    assert err == f"cotune: stopped by {signal_name}; run the same command again to continue where it stopped\n", err
    assert not list(scratch.glob("run-*"))
    assert not read_profile(tmp_path / "stopped.jsonl").failures
    wait_for(lambda: processes_mentioning(str(tmp_path)) == [], timeout_s=60, what="the probe's processes to end")


@pytest.mark.slow
@pytest.mark.parametrize("signal_name", ["SIGHUP", "SIGTERM"])
def test_a_profiler_stopped_with_its_stderr_gone_still_exits_130(tmp_path, signal_name):
    import os

    # The terminal was closed (SIGHUP's usual cause), or the job's log reader is gone: stderr
    # is a pipe nobody reads, and writing to it fails with EPIPE.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc, scratch = _signal_mid_probe(tmp_path, signal_name, stderr=write_end, quiet=True)
    finally:
        os.close(write_end)
    # Was exit 1 (the docs' "every probe failed"): the stop line's BrokenPipeError escaped main().
    assert proc.returncode == 130
    assert not list(scratch.glob("run-*"))
    wait_for(lambda: processes_mentioning(str(tmp_path)) == [], timeout_s=60, what="the probe's processes to end")


@pytest.mark.slow
def test_a_sighup_that_nohup_ignores_does_not_stop_the_profiler(tmp_path):
    import subprocess

    # SIGHUP then SIGTERM: a SIGHUP taken as a stop would be named in the line (Python runs the
    # handler of the lower signal number first), or end the run with 129 at its default.
    proc, scratch = _signal_mid_probe(tmp_path, "SIGHUP", "SIGTERM", stderr=subprocess.PIPE, sighup_ignored=True)
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.returncode == 130, err
    assert err == "cotune: stopped by SIGTERM; run the same command again to continue where it stopped\n", err
    assert not list(scratch.glob("run-*"))
    wait_for(lambda: processes_mentioning(str(tmp_path)) == [], timeout_s=60, what="the probe's processes to end")


@pytest.mark.slow
def test_a_launch_stopped_from_outside_keeps_the_cost_of_the_batches_it_timed(tmp_path, capsys):
    out = tmp_path / "cost.jsonl"
    code, err = run_cli(["--workload", spec("sigtermed_from_batch_8"), "--workers", "1", "--local-batch", "4,8",
                         "--out", str(out), "--no-curves", *FAST], capsys)
    assert code == 3 and "stopped by signal 15 from outside" in err, err  # the session stops: nothing recorded for 8
    assert [s.local_batch for s in read_profile(out).steps] == [4]
    # Was lost with the launch's fault: --probe-budget then overspent on every rerun.
    assert [(c["local_batch"], c["outcome"]) for c in of(out, "probe_cost")] == [(4, "ok")]


@pytest.mark.slow
def test_hanging_probe_times_out_and_leaves_no_process(tmp_path, capsys):
    out = tmp_path / "hang.jsonl"
    began = time.monotonic()
    code, err = run_cli(["--workload", spec("hanging"), "--workers", "2", "--local-batch", "4",
                         "--probe-timeout", "8s", "--out", str(out), "--no-curves", *FAST], capsys)
    took = time.monotonic() - began
    assert code == 1 and "every probe of this run failed (timeout)" in err, err
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


@pytest.mark.slow
def test_a_crash_fixed_in_the_workload_is_skipped_on_rerun_and_run_again_with_retry_failed(tmp_path):
    import profiler

    out = tmp_path / "fixed.jsonl"
    common = dict(out=str(out), workers=[1], local_batches=[4], curves=[], quiet=True,
                  probe=profiler.ProbeSettings(device="cpu", warmup_steps=2, min_timed_steps=5, max_timed_steps=15,
                                               max_timed_s=3.0))
    broken = profiler.profile(spec("crashing"), **common)
    assert (broken.ran, broken.failed, broken.failed_kinds) == (1, 1, ("crash",))
    assert "every probe of this run failed (crash)" in broken.describe()
    assert "--retry-failed crash" in broken.describe()

    # the workload is fixed (same job): a plain rerun skips the failed point, and says how to run it
    skipped = profiler.profile(spec("tiny"), **common)
    assert (skipped.ran, skipped.skipped_done, skipped.skipped_failed) == (0, 1, (("crash", 1),))
    assert "1 of them failed before: crash 1; --retry-failed crash runs them again" in skipped.describe()
    assert not read_profile(out).steps

    again = profiler.profile(spec("tiny"), retry_failed=True, **common)
    assert (again.ran, again.failed) == (1, 0)
    profile = read_profile(out)
    assert [(s.workers, s.local_batch) for s in profile.steps] == [(1, 4)]
    assert [f.failure for f in profile.failures] == ["crash"]  # append-only: the old record stays
    # and now the point is done by its step: no 'failed before' on the next rerun
    assert profiler.profile(spec("tiny"), **common).skipped_failed == ()


@pytest.mark.slow
def test_an_out_of_memory_is_retried_only_when_named_and_a_step_above_it_lifts_the_cap(tmp_path):
    import profiler

    out = tmp_path / "oom.jsonl"
    common = dict(out=str(out), workers=[1], local_batches=[4, 16], curves=[], quiet=True,
                  probe=profiler.ProbeSettings(device="cpu", warmup_steps=2, min_timed_steps=5, max_timed_steps=15,
                                               max_timed_s=3.0))
    profiler.profile(spec("oom_above_8"), **common)
    assert read_profile(out).max_local_batch("cpu") == 15
    # bare retry is crash and timeout: the out-of-memory stands
    assert profiler.profile(spec("tiny"), retry_failed=True, **common).ran == 0
    ran = profiler.profile(spec("tiny"), retry_failed=["oom"], **common)
    assert (ran.ran, ran.failed) == (1, 0)
    profile = read_profile(out)
    assert sorted(s.local_batch for s in profile.steps) == [4, 16]
    assert profile.max_local_batch("cpu") is None  # the step at 16 contradicts the old out-of-memory


@pytest.mark.slow
def test_a_process_group_that_cannot_form_is_the_environments_fault_and_records_nothing(tmp_path, capsys, monkeypatch):
    # GLOO_SOCKET_IFNAME naming no interface: written as a 'crash' of the workload at that
    # point, which every rerun then skipped ("1 of them failed before: crash 1").
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "no-such-interface0")
    out = tmp_path / "p.jsonl"
    code, err = run_cli(["--workload", spec("tiny"), "--out", str(out), "--no-curves", "--workers", "2",
                         "--local-batch", "4", *FAST], capsys)
    assert code == 3 and "could not join the process group or set up its device" in err, err
    assert "no-such-interface0" in err and "nothing was recorded" in err
    assert not out.exists() or not read_profile(out).failures


@pytest.mark.slow
@pytest.mark.parametrize("workload", ["exits_5", "exits_6"])
def test_a_workload_that_exits_with_our_fault_codes_is_recorded_as_its_crash(workload, tmp_path, capsys):
    # os._exit(5) / os._exit(6) in the workload were blamed on our storage or launcher:
    # exit 3 and nothing recorded, so every rerun tried the point again.
    out = tmp_path / "p.jsonl"
    code, err = run_cli(["--workload", spec(workload), "--workers", "1", "--local-batch", "4", "--out", str(out),
                         "--no-curves", *FAST], capsys)
    assert code == 1 and "every probe of this run failed (crash)" in err, err
    (failure,) = read_profile(out).failures
    assert failure.failure == "crash" and f"exitcode : {workload[-1]}" in failure.message, failure.message


@pytest.mark.slow
def test_our_ddp_running_out_of_memory_is_the_environments_fault_not_the_workloads_oom(tmp_path, capsys):
    # Under `ulimit -v`, building DistributedDataParallel (it imports torch._dynamo) raised
    # MemoryError: recorded as the workload's oom at that batch ("MemoryError: "), capping
    # every later search. Staged here by a workload file that breaks DDP in the worker.
    job = tmp_path / "job.py"
    job.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
        "import torch.nn.parallel\n"
        "from workloads import tiny as workload\n"
        "def _no_memory(self, *args, **kwargs):\n"
        "    raise MemoryError()\n"
        "if 'LOCAL_RANK' in os.environ:  # only in the probe's worker, not in the test's own process\n"
        "    torch.nn.parallel.DistributedDataParallel.__init__ = _no_memory\n")
    out = tmp_path / "p.jsonl"
    code, err = run_cli(["--workload", f"{job}:workload", "--workers", "1", "--local-batch", "4", "--out", str(out),
                         "--no-curves", *FAST], capsys)
    assert code == 3 and err.count("\n") == 1, err
    assert "building DistributedDataParallel ran out of memory" in err and "raise the memory limit" in err
    assert "nothing was recorded" in err and not read_profile(out).failures


@pytest.mark.slow
def test_timing_never_runs_past_max_steps(tmp_path):
    # A whole chunk of 5 was added past the cap: --min-steps 3 --max-steps 5 timed 8 steps.
    import profiler

    out = tmp_path / "p.jsonl"
    profiler.profile(spec("tiny"), out=str(out), workers=[1], local_batches=[4], curves=[], quiet=True,
                     probe=profiler.ProbeSettings(device="cpu", warmup_steps=1, min_timed_steps=3, max_timed_steps=5,
                                                  max_timed_s=60.0, rel_precision=1e-9))
    lines_ = [json.loads(ln) for ln in out.read_text().splitlines()]
    timed = [ln["timed_steps"] for ln in lines_ if ln.get("record") == "step"]
    assert timed and all(3 <= t <= 5 for t in timed), timed


def test_a_train_data_that_exits_is_one_line_and_exit_2_not_a_traceback_or_a_silent_0(tmp_path, capsys):
    # SystemExit escaped the sample count: a traceback ("invalid literal for int()"), or with
    # sys.exit(0) an exit 0 with nothing profiled and nothing said.
    out = tmp_path / "p.jsonl"
    code, err = run_cli(["--workload", spec("exits_for_data"), "--out", str(out), "--no-curves", "--workers", "1",
                         "--local-batch", "4", *FAST], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "counting the training samples with train_data() exited ('data not found: run download.py first')" in err
    assert not out.exists()


def test_a_workload_file_that_hangs_when_imported_is_bounded_by_the_probe_timeout(tmp_path, capsys):
    # `cotune profile` waited for ever: the probes have a time-out, loading the file had none.
    script = tmp_path / "hangs.py"
    script.write_text("import time\nwhile True:\n    time.sleep(1)\n")
    out = tmp_path / "p.jsonl"
    code, err = run_cli(["--workload", f"{script}:workload", "--out", str(out), "--no-curves", "--workers", "1",
                         "--local-batch", "4", *FAST, "--probe-timeout", "2s"], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "loading the workload" in err and "took more than 2 s" in err and "if __name__" in err
    assert not out.exists()


@pytest.mark.slow
def test_a_train_data_that_hangs_is_bounded_by_the_probe_timeout(tmp_path, capsys):
    # A generous bound: loading the workloads file (it imports torch) must fit in it on a
    # loaded machine, so that it is the sample count that runs out of time.
    out = tmp_path / "p.jsonl"
    code, err = run_cli(["--workload", spec("hangs_for_data"), "--out", str(out), "--no-curves", "--workers", "1",
                         "--local-batch", "4", *FAST, "--probe-timeout", "30s"], capsys)
    assert code == 2 and "counting the training samples" in err and "took more than 30 s" in err, err
    assert not out.exists()


def test_the_load_bound_keeps_a_callers_own_alarm_and_handler():
    import signal

    from profiler._workload import bounded

    fired = []

    def mine(*_):  # noqa: ANN002
        fired.append(1)

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        signal.setitimer(signal.ITIMER_REAL, 100.0)
        with bounded(5.0, "loading"):
            pass
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 90.0 < left <= 100.0  # the caller's alarm still runs, with its time
        assert signal.getsignal(signal.SIGALRM) is mine and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
