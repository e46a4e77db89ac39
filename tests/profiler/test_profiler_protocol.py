"""The typed wire protocol and the verdict of a launch (no processes: pure functions)."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from profiler._entry import ScratchWriteError, failure_of, scratch_write
from profiler._launcher import LaunchOutcome
from profiler._protocol import (
    CurveResult,
    CurveTask,
    EpochLine,
    FailureResult,
    TimingResult,
    TimingTask,
    result_from_dict,
    task_from_dict,
)
from profiler._records import classify, failure_record, merge_rank_results

LOG = Path("log.txt")
finite = st.floats(min_value=0, max_value=1e6, allow_nan=False)


@given(local_batch=st.integers(1, 4096), seed=st.integers(0, 10**6), steps=st.integers(1, 500), precision=finite,
       target=st.none() | finite, checkpoint=st.none() | st.text(min_size=1, max_size=20))
def test_tasks_round_trip_through_their_dicts(local_batch, seed, steps, precision, target, checkpoint):
    timing = TimingTask(workload="w.py:w", result_dir="/r", local_batch=local_batch, seed=seed,
                        max_timed_steps=steps, rel_precision=precision)
    curve = CurveTask(workload="w.py:w", result_dir="/r", local_batch=local_batch, seed=seed, max_epochs=steps,
                      progress_path="/p", target=target, checkpoint_path=checkpoint)
    for task in (timing, curve):
        assert task_from_dict(task.to_dict()) == task
    assert timing.to_dict()["kind"] == "timing" and curve.to_dict()["kind"] == "curve"


@given(times=st.lists(finite, min_size=1, max_size=20), rank=st.integers(0, 64))
def test_results_round_trip_and_tolerate_unknown_keys(times, rank):
    timing = TimingResult(rank=rank, peak_memory_bytes=1.0, raw_times=tuple(times))
    assert result_from_dict({**timing.to_dict(), "future_field": 1}, kind="timing") == timing
    curve = CurveResult(rank=rank, reason="target", epochs=3)
    assert result_from_dict(curve.to_dict(), kind="curve") == curve
    failure = FailureResult(status="storage", rank=rank, message="m")
    assert result_from_dict(failure.to_dict(), kind="curve") == failure


def test_minimal_result_of_a_replacement_launcher_parses():
    # docs/profiler.md §8: a launcher of one's own writes only what it knows.
    result = result_from_dict({"rank": 0, "status": "ok", "step_time_s": 0.1}, kind="timing")
    assert isinstance(result, TimingResult) and result.step_time_s == 0.1 and result.sync_time_s is None


def test_unknown_status_or_kind_is_an_error():
    with pytest.raises(ValueError, match="status"):
        result_from_dict({"status": "maybe"}, kind="timing")
    with pytest.raises(ValueError, match="kind"):
        task_from_dict({"kind": "other"})


def test_epoch_line_omits_noise_when_not_measured():
    assert "b_noise" not in EpochLine(epoch_index=1, epoch=1.0, metric=0.5).to_dict()
    assert EpochLine.from_dict({"epoch_index": 2, "epoch": 2.0, "metric": 0.6, "b_noise": 9.0}).b_noise == 9.0


def test_tensorflow_raw_times_are_merged_as_the_per_step_maximum_over_ranks():
    a = TimingResult(rank=0, peak_memory_bytes=1.0, raw_times=(1.0, 3.0, 1.0), raw_nosync=(0.5, 0.5, 0.5))
    b = TimingResult(rank=1, peak_memory_bytes=2.0, raw_times=(2.0, 1.0, 2.0), raw_nosync=(0.5, 0.5, 0.5))
    merged = merge_rank_results([a, b])
    assert merged.step_time_s == 2.0 and merged.peak_memory_bytes == 2.0 and merged.sync_time_s == 1.5


def _outcome(returncode: int, tail: str = "", timed_out: bool = False) -> LaunchOutcome:
    return LaunchOutcome(returncode=returncode, timed_out=timed_out, wall_s=1.0, log_tail=tail)


def test_storage_failure_outranks_the_crashes_it_caused():
    results = [FailureResult(status="crash", rank=1, message="peer gone"),
               FailureResult(status="storage", rank=0, message="cannot write the progress line")]
    verdict = classify(_outcome(1), results, timeout_s=10, log=LOG, workers=2)
    assert verdict.kind == "storage" and "progress line" in verdict.message


def test_worker_exit_code_5_without_a_result_file_is_a_storage_failure():
    tail = ("cotune-worker-fault: storage: cannot write the result\n"
            "Root Cause (first observed failure):\n  exitcode  : 5 (pid: 123)\n")
    assert classify(_outcome(1, tail), [], timeout_s=10, log=LOG, workers=1).kind == "storage"
    tail = "Root Cause (first observed failure):\n  exitcode  : 4 (pid: 123)\n"
    assert classify(_outcome(1, tail), [], timeout_s=10, log=LOG, workers=1).kind == "crash"


@pytest.mark.parametrize("code", [5, 6])
def test_a_workloads_own_exit_5_or_6_is_its_crash_not_our_storage_or_launcher(code):
    # os._exit(5) in the workload read as our storage's fault (exit 3, nothing recorded):
    # only our worker's own line in the log makes those codes ours.
    tail = f"Root Cause (first observed failure):\n  exitcode  : {code} (pid: 123)\n"
    assert classify(_outcome(1, tail), [], timeout_s=10, log=LOG, workers=1).kind == "crash"
    assert classify(_outcome(code), [], timeout_s=10, log=LOG, workers=1).kind == "crash"  # the TF spawner's code
    said = "storage" if code == 5 else "setup"
    ours = classify(_outcome(code, f"cotune-worker-fault: {said}: x\n"), [], timeout_s=10, log=LOG, workers=1)
    assert ours.kind == ("storage" if code == 5 else "launcher")


def test_a_bare_memory_error_gets_a_message_that_says_what_it_was():
    # the oom record read "MemoryError: "
    failure = failure_of(MemoryError(), rank=0, is_oom=lambda e: isinstance(e, MemoryError))
    assert failure.status == "oom" and failure.message == "MemoryError: out of memory (the error carried no message)"


def test_storage_verdicts_never_become_failure_records():
    for kind in ("oom", "crash", "timeout"):
        assert failure_record(kind, "m", gpu="cpu", workers=1, hosts=1, local_batch=4).failure == kind
    with pytest.raises(ValueError, match="only workload failures"):
        failure_record("storage", "m", gpu="cpu", workers=1, hosts=1, local_batch=4)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EIO, errno.EDQUOT, errno.EFBIG])
def test_storage_errnos_anywhere_in_a_worker_are_storage_not_crash(code):
    try:
        try:
            raise OSError(code, "disk trouble")
        except OSError as inner:
            raise RuntimeError("the data loader failed") from inner
    except RuntimeError as exc:
        assert failure_of(exc, rank=0, is_oom=lambda e: False).status == "storage"


def test_a_failed_write_of_our_own_file_is_storage_whatever_the_library_raises(tmp_path):
    # torch.save reports a full disk as RuntimeError("... file write failed").
    with pytest.raises(ScratchWriteError) as info:
        with scratch_write(tmp_path / "c.pt", "the curve checkpoint"):
            raise RuntimeError("PytorchStreamWriter failed writing file data/0: file write failed")
    assert "the curve checkpoint" in str(info.value)
    assert failure_of(info.value, rank=0, is_oom=lambda e: False).status == "storage"
    assert failure_of(ValueError("bad shape"), rank=0, is_oom=lambda e: False).status == "crash"
    assert failure_of(MemoryError(), rank=0, is_oom=lambda e: isinstance(e, MemoryError)).status == "oom"


def _session(out: Path, launcher, **kwargs):
    import io

    import profiler
    from profiler_helpers import spec

    return profiler.profile(spec("tiny"), out=out, launcher=launcher, gpu="cpu", stream=io.StringIO(),
                            probe=profiler.ProbeSettings(device="cpu"), workers=[1], local_batches=[4, 8],
                            curves=[], **kwargs)


class _StorageFailingLauncher:
    """Every rank reports that it could not write its files; then, once fixed, succeeds."""

    hosts = 1

    def __init__(self) -> None:
        self.broken = True

    def launch(self, request, *, poll=None) -> LaunchOutcome:
        import json

        from profiler._protocol import read_task, write_result

        task = read_task(Path(request.args[0]))
        if self.broken:
            write_result(task.result_dir, FailureResult(status="storage", message="cannot write the result: ENOSPC"))
            return LaunchOutcome(returncode=5, timed_out=False, wall_s=1.0)
        write_result(task.result_dir, TimingResult(peak_memory_bytes=1.0, step_time_s=0.01 * task.local_batch,
                                                   step_time_spread_s=0.0, timed_steps=10))
        assert json.loads((Path(task.result_dir) / "rank0.json").read_text())["status"] == "ok"
        return LaunchOutcome(returncode=0, timed_out=False, wall_s=1.0)


def test_a_storage_fault_stops_the_session_and_a_rerun_measures_what_was_missing(tmp_path):
    from cotune.errors import StorageError
    from cotune.profile import read_profile

    out = tmp_path / "p.jsonl"
    launcher = _StorageFailingLauncher()
    with pytest.raises(StorageError, match="the storage failed, not the workload"):
        _session(out, launcher)
    assert read_profile(out).failures == () and read_profile(out).steps == ()
    launcher.broken = False
    summary = _session(out, launcher)
    profile = read_profile(out)
    assert sorted(s.local_batch for s in profile.steps) == [4, 8] and profile.failures == ()
    assert summary.ran == 2 and summary.failed == 0


class _StorageExitLauncher:
    """A worker that could write neither its result nor anything but its log: exit code 5
    and our worker's line in the log, as ``profiler._entry`` leaves it."""

    hosts = 1

    def launch(self, request, *, poll=None) -> LaunchOutcome:
        request.log_path.write_text("cotune-worker-fault: storage: cannot write the result: ENOSPC\n")
        return LaunchOutcome(returncode=5, timed_out=False, wall_s=1.0, log_tail=request.log_path.read_text())


def test_the_log_a_storage_fault_names_is_kept(tmp_path):
    # It named the probe's log.txt, which the run removed as it stopped.
    import re

    from cotune.errors import StorageError

    with pytest.raises(StorageError, match="the storage failed, not the workload") as info:
        _session(tmp_path / "p.jsonl", _StorageExitLauncher())
    named = re.search(r"log: (\S+?)\)", str(info.value))
    assert named is not None, str(info.value)
    assert "cotune-worker-fault: storage" in Path(named.group(1)).read_text()


def test_a_launcher_that_cannot_start_is_an_environment_error_not_a_crash(tmp_path):
    from cotune.errors import EXIT_ENVIRONMENT
    from cotune.profile import read_profile
    from profiler import TorchrunLauncher
    from profiler._launcher import LauncherError

    out = tmp_path / "p.jsonl"
    with pytest.raises(LauncherError, match="cannot start the probe launcher") as info:
        _session(out, TorchrunLauncher(python=str(tmp_path / "no-such-python")))
    assert info.value.exit_code == EXIT_ENVIRONMENT
    assert read_profile(out).failures == ()
    assert not list((tmp_path / "p.jsonl.cotune").glob("run-*"))  # the run's scratch folder is gone


def test_an_io_error_on_the_profile_stops_the_session_with_whole_records_only(tmp_path, monkeypatch):
    # A failing disk cannot be staged unprivileged: inject EIO at the profile's fsync only.
    from cotune.errors import StorageError
    from cotune.profile import read_profile

    out = tmp_path / "p.jsonl"
    real_fsync = os.fsync
    calls = {"n": 0}

    def flaky_fsync(fd: int) -> None:
        real_fsync(fd)
        if os.readlink(f"/proc/self/fd/{fd}") == str(out):
            calls["n"] += 1
            if calls["n"] == 3:  # workload record, step at b=4, then the probe cost line fails
                raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", flaky_fsync)
    launcher = _StorageFailingLauncher()
    launcher.broken = False
    with pytest.raises(StorageError, match=r"Input/output error \(EIO\)"):
        _session(out, launcher)
    monkeypatch.undo()
    profile = read_profile(out)
    assert not profile.warnings and [s.local_batch for s in profile.steps] == [4] and profile.failures == ()
    _session(out, launcher)  # the disk is back: b=4 is done, only b=8 is measured
    assert sorted(s.local_batch for s in read_profile(out).steps) == [4, 8]


def test_a_failed_launch_with_no_worker_started_is_the_launchers_fault():
    outcome = _outcome(2, "torchrun: error: unrecognized arguments: --bogus\n")
    assert classify(outcome, [], timeout_s=10, log=LOG, workers=1, started=0).kind == "launcher"
    # Workers that started and then died without a word: the workload (a native crash, say).
    assert classify(outcome, [], timeout_s=10, log=LOG, workers=1, started=1).kind == "crash"
    assert classify(outcome, [], timeout_s=10, log=LOG, workers=1).kind == "crash"  # unknown: as before


def test_a_timeout_with_no_worker_started_is_the_launchers_fault_not_the_workloads():
    # a rendezvous endpoint nothing answers, a second host that never joins: torchrun waits until killed
    hung = _outcome(-9, "", timed_out=True)
    verdict = classify(hung, [], timeout_s=30, log=LOG, workers=1, started=0)
    assert verdict.kind == "launcher" and "no worker started within 30s" in verdict.message and "--rdzv-endpoint" in verdict.message
    # a worker that started and then hung (in a step, or importing the workload) is the workload's timeout
    assert classify(hung, [], timeout_s=30, log=LOG, workers=1, started=1).kind == "timeout"
    assert classify(hung, [], timeout_s=30, log=LOG, workers=1).kind == "timeout"  # unknown: as before


@pytest.mark.slow
def test_torchrun_refusing_its_arguments_stops_the_session_and_records_nothing(tmp_path):
    from cotune.profile import read_profile
    from profiler import TorchrunLauncher
    from profiler._launcher import LauncherError

    out = tmp_path / "p.jsonl"
    launcher = TorchrunLauncher(extra_args=("--no-such-torchrun-flag",))
    with pytest.raises(LauncherError, match="the launcher failed before any worker started"):
        _session(out, launcher)
    assert read_profile(out).failures == () and not [r for r in out.read_text().splitlines() if "probe_cost" in r]


def test_a_launcher_killed_by_a_signal_we_did_not_send_is_its_fault_not_the_workloads():
    # kill -9 of torchrun or of the TensorFlow spawner mid-probe: its workers die with it
    killed = _outcome(-9, "I0000 port.cc:153] oneDNN custom operations are on.\n")
    verdict = classify(killed, [], timeout_s=60, log=LOG, workers=1, started=1)
    assert verdict.kind == "launcher" and "killed by signal 9" in verdict.message  # was 'crash', recorded
    # the launcher that exits on its own after a worker died is not killed: that stays the workload's
    assert classify(_outcome(1, "boom\n"), [], timeout_s=60, log=LOG, workers=1, started=1).kind == "crash"


def test_the_tensorflow_spawners_word_for_a_sigkilled_worker_reads_as_out_of_memory():
    tail = "I0000 oneDNN ...\nprofiler.tf._spawn: worker 1 exited: Signals.SIGKILL (exitcode  : -9)\n"
    assert classify(_outcome(137, tail), [], timeout_s=60, log=LOG, workers=2, started=2).kind == "oom"


@pytest.mark.slow
def test_the_tensorflow_spawner_names_a_sigkilled_worker_and_stops_a_peer_that_ignores_sigterm(tmp_path):
    import subprocess
    import sys
    import time

    mod = tmp_path / "fake_worker.py"
    # rank 1 dies of SIGKILL (as the kernel's OOM killer kills); rank 0 ignores SIGTERM, as a
    # worker blocked in a collective can
    mod.write_text(
        "import os, signal, time\n"
        "if os.environ['RANK'] == '1':\n    time.sleep(0.5); os.kill(os.getpid(), signal.SIGKILL)\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(600)\n"
    )
    began = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "profiler.tf._spawn", "2", "fake_worker"], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{Path(__file__).resolve().parents[2]}"})
    assert res.returncode == 137
    assert "worker 1 exited: Signals.SIGKILL" in res.stderr and "exitcode  : -9" in res.stderr
    assert time.monotonic() - began < 300  # rank 0 was killed after the grace, not left for the probe's timeout


def _torchrun_report(root_exitcode: int, *others: int) -> str:
    """torchrun's failure report as it prints it (the first observed failure is the root cause)."""
    other = "".join(f"[{i + 1}]:\n  rank      : {i + 1}\n  exitcode  : {c} (pid: {200 + i})\n" for i, c in enumerate(others))
    return ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
            "============================================================\n"
            f"Failures:\n{other or '  <NO_OTHER_FAILURES>'}\n"
            "------------------------------------------------------------\n"
            "Root Cause (first observed failure):\n[0]:\n  rank      : 0 (local_rank: 0)\n"
            f"  exitcode  : {root_exitcode} (pid: 123)\n  error_file: <N/A>\n"
            "============================================================\n")


@pytest.mark.parametrize("signal_no", [1, 2, 3, 15])
def test_a_worker_stopped_by_a_signal_from_outside_is_the_environments_not_a_crash(signal_no):
    verdict = classify(_outcome(1, _torchrun_report(-signal_no)), [], timeout_s=60, log=LOG, workers=1, started=1)
    assert verdict.kind == "launcher" and f"signal {signal_no} from outside" in verdict.message  # was 'crash'


@pytest.mark.parametrize("signal_no,name", [(1, "SIGHUP"), (2, "SIGINT"), (3, "SIGQUIT"), (15, "SIGTERM")])
def test_a_tensorflow_worker_stopped_by_a_signal_from_outside_is_the_environments_not_a_crash(signal_no, name):
    # The TensorFlow spawner has no torchrun report: it says which worker a signal ended,
    # then exits 128 + N.
    tail = f"I0000 oneDNN ...\nprofiler.tf._spawn: worker 0 exited: Signals.{name} (exitcode  : -{signal_no})\n"
    verdict = classify(_outcome(128 + signal_no, tail), [], timeout_s=60, log=LOG, workers=1, started=1)
    assert verdict.kind == "launcher" and f"signal {signal_no} from outside" in verdict.message  # was 'crash'


def test_a_segfault_stays_a_crash_when_torchrun_force_kills_a_stuck_peer():
    # torchrun's teardown line names SIGKILL; the root cause is the workload's SIGSEGV
    tail = ("[W api.py] Unable to shutdown process 101 via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL\n"
            + _torchrun_report(-11))
    outcome = LaunchOutcome(returncode=1, timed_out=False, wall_s=1.0, log_tail=tail, oom_kills=0)
    assert classify(outcome, [], timeout_s=60, log=LOG, workers=2, started=2).kind == "crash"  # was 'launcher' ('oom' before)


def test_a_workload_crash_stays_a_crash_when_torchrun_then_stops_the_other_ranks():
    # rank 0 segfaults (the root cause); torchrun then SIGTERMs rank 1
    assert classify(_outcome(1, _torchrun_report(-11, -15)), [], timeout_s=60, log=LOG, workers=2, started=2).kind == "crash"


def test_a_signal_sent_to_torchrun_itself_is_the_environments():
    tail = ("torch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 got signal: 15\n")
    verdict = classify(_outcome(1, tail), [], timeout_s=60, log=LOG, workers=1, started=1)
    assert verdict.kind == "launcher" and "signal 15" in verdict.message


def test_a_sigkill_is_out_of_memory_only_when_the_kernel_counted_an_oom_kill():
    tail = _torchrun_report(-9)
    counted = LaunchOutcome(returncode=1, timed_out=False, wall_s=1.0, log_tail=tail, oom_kills=1)
    none = LaunchOutcome(returncode=1, timed_out=False, wall_s=1.0, log_tail=tail, oom_kills=0)
    unknown = LaunchOutcome(returncode=1, timed_out=False, wall_s=1.0, log_tail=tail)
    assert classify(counted, [], timeout_s=60, log=LOG, workers=1, started=1).kind == "oom"
    verdict = classify(none, [], timeout_s=60, log=LOG, workers=1, started=1)
    assert verdict.kind == "launcher" and "not by the kernel's out-of-memory killer" in verdict.message  # was 'oom'
    assert classify(unknown, [], timeout_s=60, log=LOG, workers=1, started=1).kind == "oom"  # no count: as before


def test_the_launch_counts_the_kernels_oom_kills_where_it_keeps_a_count(tmp_path):
    from profiler._launcher import oom_kill_count, run_group

    outcome = run_group([sys.executable, "-c", "pass"], env=dict(os.environ), timeout_s=120, log_path=tmp_path / "log.txt",
                        poll=None)
    assert outcome.returncode == 0
    if oom_kill_count() is None:
        assert outcome.oom_kills is None
    else:
        assert outcome.oom_kills is not None and outcome.oom_kills >= 0


def test_our_fault_line_is_found_past_the_kept_tail_of_a_many_rank_log(tmp_path):
    # torchrun's report (about 235 bytes a rank) follows the worker's line: at 8 ranks it was
    # out of the 4 KB tail, and a storage fault of ours was recorded as the workload's crash.
    from profiler._launcher import log_tail

    log = tmp_path / "log.txt"
    report = "".join(f"[{r}]:\n  time      : 2026-12-06_10:00:00\n  host      : h\n  rank      : {r} (local_rank: {r})\n"
                     f"  exitcode  : -15 (pid: {100 + r})\n  error_file: <N/A>\n  traceback : Signal 15 (SIGTERM)\n"
                     for r in range(1, 48))
    log.write_text("cotune-worker-fault: storage: cannot write the result: [Errno 5] Input/output error\n"
                   + report + "Root Cause (first observed failure):\n[0]:\n  exitcode  : 5 (pid: 100)\n")
    tail = log_tail(log)
    assert "cotune-worker-fault" not in tail
    verdict = classify(LaunchOutcome(returncode=1, timed_out=False, wall_s=1.0, log_tail=tail), [], timeout_s=10,
                       log=log, workers=48)
    assert verdict.kind == "storage"


def _two_rank_report(root: tuple[int, int], other: tuple[int, int]) -> str:
    """torchrun's report of a 2-rank launch as torch 2.13 prints it: ``(rank, exitcode)`` of the
    root cause (its first observed failure, to the second) and of the other failed rank."""
    def entry(index: int, rank: int, code: int) -> str:
        said = f"  (SIG{'KILL' if code == -9 else 'TERM' if code == -15 else 'SEGV'})" if code < 0 else ""
        return (f"[{index}]:\n  time      : 2026-12-07_04:30:29\n  host      : localhost\n"
                f"  rank      : {rank} (local_rank: {rank})\n  exitcode  : {code} (pid: {17522 + rank}){said}\n"
                "  error_file: <N/A>\n")
    return ("profiler._worker FAILED\n------------------------------------------------------------\nFailures:\n"
            + entry(1, *other) + "------------------------------------------------------------\n"
            "Root Cause (first observed failure):\n" + entry(0, *root)
            + "============================================================\n")


# What rank 0 raises (and reports as its crash) when rank 1 dies under it in a collective.
_PEER_CLOSED = FailureResult(status="crash", rank=0, message="RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/"
                             "transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:15747. This is typically "
                             "caused by a remote worker crashing.")
_PEER_RESET = FailureResult(status="crash", rank=1, message="RuntimeError: [../third_party/gloo/gloo/transport/tcp/"
                            "pair.cc:534] Read error [127.0.0.1]:4567: Connection reset by peer")
# Both orders torchrun names them in: the killed rank seen first, or the peer that noticed in the same second.
_KILLED_RANK1_REPORTS = [pytest.param(((1, -9), (0, 4)), id="root-is-the-killed-rank"),
                         pytest.param(((0, 4), (1, -9)), id="root-is-the-peer-that-noticed")]


@pytest.mark.parametrize("order", _KILLED_RANK1_REPORTS)
def test_a_sigkilled_rank_is_oom_or_the_launchers_even_when_its_peer_reported_the_lost_connection(order):
    # The kernel's OOM kill (or someone's kill -9) of rank 1; rank 0 reports "Connection closed
    # by peer". It was recorded as the workload's crash, and reruns skipped the point.
    tail = _two_rank_report(*order)
    for oom_kills, kind in ((1, "oom"), (0, "launcher")):
        outcome = LaunchOutcome(returncode=1, timed_out=False, wall_s=3.0, log_tail=tail, oom_kills=oom_kills)
        verdict = classify(outcome, [_PEER_CLOSED], timeout_s=300, log=LOG, workers=2, started=2)
        assert verdict.kind == kind, (oom_kills, verdict)


@pytest.mark.parametrize("order", [((1, -15), (0, 4)), ((0, 4), (1, -15))])
def test_a_rank_stopped_from_outside_is_the_launchers_even_when_its_peer_reported_the_lost_connection(order):
    verdict = classify(_outcome(1, _two_rank_report(*order)), [_PEER_CLOSED], timeout_s=60, log=LOG, workers=2,
                       started=2)
    assert verdict.kind == "launcher" and "signal 15 from outside" in verdict.message, verdict
    # On one host of several the peer that died may be elsewhere: a SIGTERM here is then
    # torchrun's own teardown, and the follow-on stays the workload's crash.
    elsewhere = classify(_outcome(1, _two_rank_report((0, 4), (1, -15))), [_PEER_CLOSED], timeout_s=60, log=LOG,
                         workers=4, started=2)
    assert elsewhere.kind == "crash", elsewhere


@pytest.mark.parametrize("results", [[FailureResult(status="crash", rank=0, message="ValueError: boom on rank 0"),
                                      _PEER_RESET],
                                     [_PEER_RESET, FailureResult(status="crash", rank=0,
                                                                 message="ValueError: boom on rank 0")]])
def test_a_ranks_own_exception_is_the_message_not_its_peers_follow_on(results):
    verdict = classify(_outcome(1, _two_rank_report((0, 4), (1, 4))), results, timeout_s=60, log=LOG, workers=2,
                       started=2)
    assert verdict.kind == "crash" and verdict.message == "ValueError: boom on rank 0", verdict


@pytest.mark.parametrize("order", [((1, -11), (0, 4)), ((0, 4), (1, -11))])
def test_a_segfaulted_ranks_signal_is_the_message_not_its_peers_follow_on(order):
    verdict = classify(_outcome(1, _two_rank_report(*order)), [_PEER_CLOSED], timeout_s=60, log=LOG, workers=2,
                       started=2)
    assert verdict.kind == "crash" and verdict.message.startswith("rank 1 was ended by signal 11 (SIGSEGV)"), verdict


def _own_io_error(message: str, *, rank: int) -> FailureResult:
    """A rank's crash on the workload's own socket or pipe, with the words of a lost peer."""
    return FailureResult(status="crash", rank=rank, message=message,
                         traceback=("Traceback (most recent call last):\n"
                                    '  File "/opt/job/shards.py", line 41, in fetch\n'
                                    f"    return self._read(url)\n{message}\n"))


@pytest.mark.parametrize("message", ["ConnectionResetError: [Errno 104] Connection reset by peer",
                                     "BrokenPipeError: [Errno 32] Broken pipe"])
def test_a_root_cause_ranks_own_connection_error_is_its_crash_not_a_peers_sigterm_from_outside(message):
    # Rank 1's workload lost its own connection (reading a shard over HTTP) and exited 4 with a
    # result file; torchrun then stopped rank 0 with SIGTERM. It was "stopped by signal 15 from
    # outside" (exit 3, nothing recorded, every rerun the same).
    verdict = classify(_outcome(1, _two_rank_report((1, 4), (0, -15))), [_own_io_error(message, rank=1)],
                       timeout_s=60, log=LOG, workers=2, started=2)
    assert verdict.kind == "crash" and verdict.message == message, verdict


def test_a_ranks_own_connection_reset_is_the_message_not_its_peers_gloo_follow_on():
    # Was rank 0's gloo "Connection closed by peer", the first of the two read as a follow-on.
    own = _own_io_error("ConnectionResetError: [Errno 104] Connection reset by peer", rank=1)
    verdict = classify(_outcome(1, _two_rank_report((1, 4), (0, 4))), [_PEER_CLOSED, own], timeout_s=60, log=LOG,
                       workers=2, started=2)
    assert verdict.kind == "crash" and verdict.message == own.message, verdict


def _raised_in(path: str, message: str) -> FailureResult:
    return FailureResult(status="crash", rank=1, message=message,
                         traceback=f'Traceback (most recent call last):\n  File "{path}", line 7, in f\n    x()\n{message}\n')


@pytest.mark.parametrize("failure, follow_on", [
    # "igloo" in the workload's own URL is no gloo (the word check had no boundaries)
    (_own_io_error("ConnectionResetError: [Errno 104] Connection reset by peer (GET https://igloo-store/shard-7)",
                   rank=1), False),
    # the workload's own I/O raised inside torch.distributed's code (its checkpoint reader)
    (_raised_in("/usr/lib/python3/site-packages/torch/distributed/checkpoint/filesystem.py",
                "ConnectionResetError: [Errno 104] Connection reset by peer"), False),
    # a collective's error raised there, not naming its backend: a follow-on
    (_raised_in("/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py",
                "RuntimeError: Connection closed by peer"), True),
    # gloo names itself in its own words
    (_PEER_RESET, True),
])
def test_a_follow_on_is_a_collectives_error_never_the_workloads_own_io(failure, follow_on):
    from profiler._records import _lost_a_peer

    assert _lost_a_peer(failure, tensorflow=False) is follow_on


# What a TensorFlow worker raised when its peer was killed with SIGKILL mid-step (a real
# two-worker probe of examples/digits_keras.py, tensorflow-cpu 2.21; its message is cut at 500
# characters by the worker, before the cause, which the traceback's end keeps).
_TF_SOCKET_LOST = FailureResult(
    status="crash", rank=0,
    message="UnavailableError: Graph execution error:\n\nDetected at node sgd/CollectiveReduceV2 defined at (most "
            "recent call last):\n  File \"<frozen runpy>\", line 198, in _run_module_as_main\n",
    traceback="Traceback (most recent call last):\n  File \"profiler/_entry.py\", line 162, in worker_main\n"
              "tensorflow.python.framework.errors_impl.UnavailableError: Graph execution error:\n\n"
              "Collective ops is aborted by: recvmsg:Connection reset by peer\nAdditional GRPC error information from "
              "remote target /job:worker/replica:0/task:1 while calling /tensorflow.WorkerService/RecvBuf:\n"
              ":UNKNOWN:Error received from peer  {grpc_status:14, grpc_message:\"recvmsg:Connection reset by peer\"}\n"
              "\t [[{{node sgd/CollectiveReduceV2}}]] [Op:__inference_full_step_568]\n")
# ... and when the peer died before the first collective: the coordination service's word.
_TF_HEARTBEATS_LOST = FailureResult(
    status="crash", rank=0,
    message="UnavailableError: {{function_node __wrapped__CollectiveBcastSend_device_/job:worker/replica:0/task:0/"
            "device:CPU:0}} Collective ops is aborted by: Error reported from /job:worker/task:1: The following tasks "
            "are unhealthy (stopped sending heartbeats):\n/job:worker/replica:0/task:1\nThe tasks have crashed.")
_TF_SPAWNER_SIGKILL = "profiler.tf._spawn: worker 1 exited: Signals.SIGKILL (exitcode  : -9)\n"


@pytest.mark.parametrize("failure", [_TF_SOCKET_LOST, _TF_HEARTBEATS_LOST])
def test_a_tensorflow_peers_follow_on_error_points_to_the_worker_killed_from_outside(failure):
    outcome = LaunchOutcome(returncode=137, timed_out=False, wall_s=1.0, log_tail=_TF_SPAWNER_SIGKILL, oom_kills=0)
    verdict = classify(outcome, [failure], timeout_s=60, log=LOG, workers=2, started=2, tensorflow=True)
    # Was a 'crash' record quoting the peer's UnavailableError: reruns skipped the point.
    assert verdict.kind == "launcher" and "killed by SIGKILL, and not by the kernel's" in verdict.message, verdict


def test_a_tensorflow_follow_on_is_its_collectives_lost_peer_by_class_name_and_words():
    from profiler._records import _lost_a_peer

    assert _lost_a_peer(_TF_SOCKET_LOST, tensorflow=True) and _lost_a_peer(_TF_HEARTBEATS_LOST, tensorflow=True)
    not_follow_ons = [
        # the workload's own data read over grpc: a TensorFlow error class, but no collective's
        FailureResult(status="crash", rank=0, message="UnavailableError: failed to connect to all addresses "
                                                      "(reading gs://bucket/shard-3)"),
        # the workload's own socket, whatever words come with it
        FailureResult(status="crash", rank=0, message="ConnectionResetError: [Errno 104] Connection reset by peer",
                      traceback="CollectiveReduceV2: Socket closed"),
        # a collective that failed for a reason of its own, in no follow-on error class
        FailureResult(status="crash", rank=0, message="InvalidArgumentError: Collective ops shapes differ; "
                                                      "Socket closed"),
    ]
    assert not any(_lost_a_peer(failure, tensorflow=True) for failure in not_follow_ons)


# A workload's own tf.data-service read failing (its data worker went away): a TensorFlow error
# class and grpc's "failed to connect to all addresses", but tf.data service's own
# /tensorflow.data.WorkerService, no collective's.
_TF_DATA_SERVICE_LOST = FailureResult(
    status="crash", rank=0,
    message="UnavailableError: Failed to get element from worker localhost:41235: failed to connect to all addresses; "
            "last error: UNKNOWN: ipv4:127.0.0.1:41235: Failed to connect to remote host: Connection refused "
            "(while calling /tensorflow.data.WorkerService/GetElement)")


def test_a_tf_data_service_error_is_no_tensorflow_collectives_follow_on():
    from profiler._records import _lost_a_peer, _tf_lost_a_peer

    # Was one: a bare "WorkerService" was taken for a collective's RecvBuf.
    assert not _tf_lost_a_peer(_TF_DATA_SERVICE_LOST)
    assert not _lost_a_peer(_TF_DATA_SERVICE_LOST, tensorflow=True)


def test_a_torch_workers_tf_data_service_error_is_its_own_crash_not_a_stop_from_outside():
    # torchrun names rank 0 (its own error) as root cause and then stops rank 1 with SIGTERM.
    outcome = _outcome(1, _two_rank_report((0, 1), (1, -15)))
    verdict = classify(outcome, [_TF_DATA_SERVICE_LOST], timeout_s=60, log=LOG, workers=2, started=2)
    # Was 'launcher' ("stopped by signal 15 from outside", exit 3): TensorFlow's rule read a torch
    # worker's error as a peer's follow-on, and every rerun stopped the same way.
    assert verdict.kind == "crash" and "/tensorflow.data.WorkerService/GetElement" in verdict.message, verdict
