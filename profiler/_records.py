"""From worker results to profile records: pure functions, no I/O.

:func:`classify` turns one launch (how the processes ended, and the ranks' results)
into a :class:`Verdict`; the builders turn a verdict or a progress line into the
records the session appends. A ``storage`` verdict has no builder on purpose: a fault
of our own files is never written into the profile as a fact about the workload.
"""

from __future__ import annotations

import math
import re
import signal
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from cotune._checks import MAX_MAGNITUDE
from cotune.profile import EvalRecord, FailureRecord, NoiseRecord, StepRecord, WorkloadRecord
from profiler._launcher import LaunchOutcome
from profiler._protocol import (EXIT_SETUP, EXIT_STORAGE, FAULT_MARKER, EpochLine, FailureResult, Result,
                                TimingResult, diverged_metric)
from profiler._stats import summarize
from profiler._workload import WorkloadError

__all__ = [
    "Verdict",
    "classify",
    "merge_rank_results",
    "root_cause",
    "workload_record",
    "step_record",
    "failure_record",
    "epoch_records",
]

VerdictKind = Literal["ok", "oom", "crash", "timeout", "storage", "launcher"]


@dataclass(frozen=True)
class Verdict:
    """How one probe ended: ``kind``, a one-line ``message``, and the merged ok result."""

    kind: VerdictKind
    message: str = ""
    result: Result | None = None

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def merge_rank_results(results: list[Result]) -> Result | None:
    """Rank 0's result; for workers that report only raw per-rank times (TensorFlow),
    the per-step maximum over ranks is summarised here instead."""
    oks = [r for r in results if not isinstance(r, FailureResult)]
    # On the other hosts of a multi-host probe rank 0's file is elsewhere; torch timing
    # results are identical on every rank (all ranks gather all times), so any will do.
    rank0 = next((r for r in oks if r.rank == 0), None) or next(
        (r for r in oks if isinstance(r, TimingResult) and r.step_time_s is not None), None)
    if not isinstance(rank0, TimingResult) or not rank0.raw_times:
        return rank0
    timings = [r for r in oks if isinstance(r, TimingResult)]
    n = min(len(r.raw_times) for r in timings)
    per_step = [max(r.raw_times[i] for r in timings) for i in range(n)]
    summary = summarize(per_step)
    sync = None
    m = min(len(r.raw_nosync) for r in timings)
    if m:
        compute = summarize([max(r.raw_nosync[i] for r in timings) for i in range(m)]).median_s
        sync = min(summary.median_s, max(0.0, summary.median_s - compute))
    return replace(rank0, step_time_s=summary.median_s, step_time_spread_s=summary.spread_s,
                   timed_steps=summary.n, peak_memory_bytes=max(r.peak_memory_bytes for r in timings),
                   sync_time_s=sync if sync is not None else rank0.sync_time_s)


def _root_cause_line(outcome: LaunchOutcome) -> str | None:
    """The ``exitcode  : N (pid: …)`` line of torchrun's root cause (its first observed failure), if reported."""
    lines = [ln.strip() for ln in outcome.log_tail.splitlines()]
    cause = next((i for i, ln in enumerate(lines) if ln.startswith("Root Cause")), None)
    return None if cause is None else next((ln for ln in lines[cause:] if ln.startswith("exitcode")), None)


def root_cause(outcome: LaunchOutcome) -> str:
    """One line on why the launch failed, from torchrun's failure report if present."""
    code = _root_cause_line(outcome)
    if code is not None:
        return "a worker " + " ".join(code.split())
    lines = [ln.strip() for ln in outcome.log_tail.splitlines() if ln.strip() and not set(ln.strip()) <= set("=-")]
    return f"exit code {outcome.returncode}: {(lines or ['no output'])[-1][:300]}"


# Signals someone sends to stop a process (HUP, INT, QUIT, TERM); torchrun reports a worker
# they ended as "exitcode  : -15", and one sent to torchrun itself as a SignalException.
_STOP_SIGNALS = (1, 2, 3, 15)


def _root_exitcode(outcome: LaunchOutcome) -> int | None:
    """The exit code of torchrun's root cause (its first observed failure), if it reported one."""
    code = _root_cause_line(outcome)
    try:
        return None if code is None else int(code.split(":", 1)[1].split()[0])
    except (ValueError, IndexError):
        return None


# The TensorFlow spawner's line for its first worker that a signal ended (profiler.tf._spawn);
# it prints none for the peers it then stops itself.
_SPAWNER_SIGNALLED = re.compile(r"profiler\.tf\._spawn: worker (\d+) exited: .*\(exitcode\s*:\s*(-\d+)\)")


def _spawner_exitcode(outcome: LaunchOutcome) -> int | None:
    """The negative exit code of the first worker a signal ended, as the TensorFlow spawner said it."""
    found = _SPAWNER_SIGNALLED.search(outcome.log_tail)
    return None if found is None else int(found.group(2))


# What a rank raises when a peer it was exchanging with died (gloo: "Connection closed by
# peer", "Read error [...]: Connection reset by peer", "Write error [...]: Broken pipe";
# NCCL: "remote process exited"): the consequence of that peer's end, not a fault of its own.
_PEER_LOST = re.compile(r"connection (closed|reset) by peer|broken pipe|remote process exited", re.IGNORECASE)
# The same words come from a workload's own sockets and pipes (a ConnectionResetError reading a
# shard over HTTP, a BrokenPipeError on a closed pipe): that is its own crash. Only a collective's
# error is a follow-on: gloo and NCCL name themselves in it ("[.../gloo/transport/tcp/pair.cc:553]",
# "NCCL error in: .../c10d/ProcessGroupNCCL.cpp"), or it was raised in torch.distributed's code.
# Whole words: "igloo-store" in a URL is no gloo.
_COLLECTIVES_WORD = re.compile(r"\bgloo\b|pair\.cc|\bnccl\b|\bc10d\b", re.IGNORECASE)
# The OSError family by the name a failure's message starts with: a socket's or a pipe's own
# error, which the frame rule must not take for a collective's even where torch.distributed's
# code raised it (its checkpoint reader on network storage).
_OWN_IO = re.compile(r"^\s*(?:\w+\.)*(?:OSError|IOError|ConnectionError|ConnectionResetError|ConnectionAbortedError|"
                     r"ConnectionRefusedError|BrokenPipeError)\b")
_FRAME_FILE = re.compile(r'^\s*File "([^"]+)", line \d+', re.MULTILINE)
_DISTRIBUTED_FILE = re.compile(r"[/\\]torch[/\\]distributed[/\\]")


def _raised_in_torch_distributed(traceback: str) -> bool:
    """Whether the innermost frame of ``traceback`` is torch.distributed's code: only the frame
    that raised, since a workload's own code runs under torch's frames too (DDP's forward)."""
    files = _FRAME_FILE.findall(traceback)
    return bool(files) and _DISTRIBUTED_FILE.search(files[-1]) is not None


# TensorFlow's words for the same: a worker whose peer died raises one of TensorFlow's own
# error classes (grpc's UNAVAILABLE, or the collective's abort), from a collective op
# ("Detected at node sgd/CollectiveReduceV2", "Collective ops is aborted by: ...",
# ring_alg's "/tensorflow.WorkerService/RecvBuf"), naming the lost connection
# ("recvmsg:Connection reset by peer", "Socket closed", "failed to connect to all addresses";
# its coordination service: "tasks are unhealthy (stopped sending heartbeats)"). Its message is
# cut at 500 characters before the cause, so the traceback's end is read too. Only collective
# markers: a bare "WorkerService" is tf.data service's too ("/tensorflow.data.WorkerService/
# GetElement", the workload's own data read failing), and that is the workload's crash.
_TF_PEER_ERROR = re.compile(r"^\s*(?:\w+\.)*(?:UnavailableError|CancelledError|AbortedError|DeadlineExceededError):")
_TF_COLLECTIVE = re.compile(r"\bCollective ops is aborted\b|\bCollective(?:Reduce|Bcast|Gather)\w*|\bRingReduce\b|"
                            r"/tensorflow\.WorkerService/RecvBuf\b")
_TF_PEER_LOST = re.compile(r"\bconnection (?:closed|reset) by peer\b|\bsocket closed\b|\bbroken pipe\b|"
                           r"\bfailed to connect to all addresses\b|\berror received from peer\b|"
                           r"\bstopped sending heartbeats\b|\btasks have crashed\b", re.IGNORECASE)


def _tf_lost_a_peer(failure: FailureResult) -> bool:
    """Whether ``failure`` is a TensorFlow worker's follow-on error after a peer died: one of
    TensorFlow's error classes from a collective, about the lost connection (a workload's own
    ConnectionResetError is no TensorFlow error class, and stays its crash)."""
    said = f"{failure.message}\n{failure.traceback}"
    return (_TF_PEER_ERROR.search(failure.message) is not None and _TF_COLLECTIVE.search(said) is not None
            and _TF_PEER_LOST.search(said) is not None)


def _lost_a_peer(failure: FailureResult, *, tensorflow: bool) -> bool:
    """Whether ``failure`` is a rank's follow-on crash after a peer died under it: a collective's
    error about the lost connection, never the same words from the workload's own I/O.
    ``tensorflow``: the launch's workers are TensorFlow's (the spawner's); only their failures
    are read by TensorFlow's rule (a torch workload's own TensorFlow-flavoured error, tf.data
    service's, is its crash)."""
    if failure.status != "crash":
        return False
    if tensorflow and _tf_lost_a_peer(failure):
        return True
    if _PEER_LOST.search(failure.message) is None:
        return False
    if _COLLECTIVES_WORD.search(failure.message) is not None:
        return True
    return _OWN_IO.search(failure.message) is None and _raised_in_torch_distributed(failure.traceback)


def _report_exitcodes(outcome: LaunchOutcome) -> dict[int, int]:
    """Every failed rank's exit code in torchrun's failure report (rank → code, from its
    "rank : R" and "exitcode : N" lines), or the TensorFlow spawner's word for its first
    worker a signal ended."""
    lines = [ln.strip() for ln in outcome.log_tail.splitlines()]
    start = max((i for i, ln in enumerate(lines) if ln == "Failures:"), default=None)
    codes: dict[int, int] = {}
    if start is not None:
        rank = None
        for ln in lines[start:]:
            key, _, value = ln.partition(":")
            try:
                if key.strip() == "rank":
                    rank = int(value.split()[0])
                elif key.strip() == "exitcode" and rank is not None:
                    codes.setdefault(rank, int(value.split()[0]))
                    rank = None
            except (ValueError, IndexError):
                rank = None
    for found in _SPAWNER_SIGNALLED.finditer(outcome.log_tail):
        codes.setdefault(int(found.group(1)), int(found.group(2)))
    return codes


def _root_rank(outcome: LaunchOutcome) -> int | None:
    """The rank of torchrun's root cause, if its report names one."""
    lines = [ln.strip() for ln in outcome.log_tail.splitlines()]
    cause = next((i for i, ln in enumerate(lines) if ln.startswith("Root Cause")), None)
    if cause is None:
        return None
    for ln in lines[cause:]:
        key, _, value = ln.partition(":")
        if key.strip() == "rank":
            try:
                return int(value.split()[0])
            except (ValueError, IndexError):
                return None
    return None


def _silent_death(outcome: LaunchOutcome, results: list[Result], *, workers: int) -> tuple[int, int] | None:
    """``(rank, exit code)`` of a rank that failed without a result file of its own (a signal,
    an os._exit), for a launch whose failed results are peers' follow-on crashes.

    torchrun's root cause is its first observed failure, to the second: a peer that noticed the
    lost connection and exited in the same second can be named instead of the rank that died.
    So the root cause is taken unless it is such a peer; then another silent rank, a signal
    other than SIGTERM first (torchrun stops the ranks left with SIGTERM, so that one tells
    least) — only where every rank of the launch is seen here: on one host of several, the
    peer that died may be on another, and a silent rank here only torchrun's teardown."""
    codes = _report_exitcodes(outcome)
    reported = {r.rank for r in results}
    silent = {rank: code for rank, code in codes.items() if code != 0 and rank not in reported}
    root = _root_rank(outcome)
    if root in silent:
        return root, silent[root]
    if not silent or len(reported | set(codes)) < workers:
        return None
    rank = min(silent, key=lambda r: (silent[r] == -15, silent[r] > 0, r))
    return rank, silent[rank]


def _signal_exitcode(outcome: LaunchOutcome, results: list[Result], *, workers: int, tensorflow: bool) -> int | None:
    """The exit code of the rank whose end ended the launch: the silent rank a peer's follow-on
    crash points to, else torchrun's root cause, else the TensorFlow spawner's first signalled
    worker (it exits 128 + N, which read as the workload's crash)."""
    if any(isinstance(r, FailureResult) and _lost_a_peer(r, tensorflow=tensorflow) for r in results):
        dead = _silent_death(outcome, results, workers=workers)
        if dead is not None:
            return dead[1]
    return _root_exitcode(outcome) if _root_cause_line(outcome) is not None else _spawner_exitcode(outcome)


def _outside_signal(outcome: LaunchOutcome, results: list[Result], *, workers: int, tensorflow: bool) -> int | None:
    """The stop signal that ended the launch, if one did (:func:`_signal_exitcode`: a rank ended
    by a workload's own crash is the root cause even when torchrun then stops the others with
    SIGTERM), or a signal torchrun itself received."""
    for ln in outcome.log_tail.splitlines():
        if "SignalException" in ln and "got signal:" in ln:
            try:
                return int(ln.rsplit("got signal:", 1)[1].split()[0])
            except (ValueError, IndexError):
                return 15
    code = _signal_exitcode(outcome, results, workers=workers, tensorflow=tensorflow)
    return -code if code is not None and -code in _STOP_SIGNALS else None


def _sigkilled(outcome: LaunchOutcome, results: list[Result], *, workers: int, tensorflow: bool) -> bool:
    """Whether a worker's SIGKILL ended the launch. With torchrun's report, only the rank that
    ended it counts (:func:`_signal_exitcode`): torchrun's own teardown ("forcefully exiting via
    Signals.SIGKILL", a peer stuck in a collective after another rank crashed) is not why the
    probe failed. Without one (the TensorFlow spawner: "worker N exited: Signals.SIGKILL"), the
    log's word for it."""
    if _root_exitcode(outcome) is not None:
        return _signal_exitcode(outcome, results, workers=workers, tensorflow=tensorflow) == -9
    return "exitcode  : -9" in outcome.log_tail or "Signals.SIGKILL" in outcome.log_tail


def _death_message(rank: int, code: int) -> str:
    """One line on how a rank that left no result ended: its signal, or its own exit code."""
    if code < 0:
        try:
            name = f" ({signal.Signals(-code).name})"
        except ValueError:
            name = ""
        return f"rank {rank} was ended by signal {-code}{name} before it reported an error"
    return f"rank {rank} exited with code {code} before it reported an error"


# How far back from a probe log's end the worker's fault line is looked for: torchrun's
# failure report (about 235 bytes a rank, tracebacks) follows it, so the 4 KB tail a launch
# keeps lost it at 8 ranks. The profiler's own launchers write a bounded log (5 MiB, with the
# fault lines of the part cut kept: profiler._livelog), read whole here; the window bounds
# the read of a replacement launcher's log that a workload flooded.
FAULT_SEARCH_BYTES = 16 * 2**20


def _said_in_log(outcome: LaunchOutcome, log: Path | None, line: str) -> bool:
    """Whether ``line`` is in the launch's log: its kept tail, else the last
    ``FAULT_SEARCH_BYTES`` of the log file (unreadable: not said)."""
    if line in outcome.log_tail:
        return True
    if log is None:
        return False
    try:
        with open(log, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(fh.tell() - FAULT_SEARCH_BYTES, 0))
            return line.encode() in fh.read()
    except OSError:
        return False


def _exited_with(outcome: LaunchOutcome, code: int, status: str, log: Path | None = None) -> bool:
    """Whether a worker left with our own exit ``code`` for ``status`` (storage, setup): torchrun's
    failure report ("exitcode  : 5 (pid: ...)") or the spawner's own exit code, and the worker's
    own word for it (``FAULT_MARKER``) in the log. A workload's os._exit(5) has no such line:
    it is the workload's crash, not our storage's fault."""
    said = _said_in_log(outcome, log, f"{FAULT_MARKER} {status}:")
    return said and (outcome.returncode == code or any(
        ln.split(":", 1)[0].strip() == "exitcode" and ln.split(":", 1)[1].split()[:1] == [str(code)]
        for ln in outcome.log_tail.splitlines() if ":" in ln))


def classify(outcome: LaunchOutcome, results: list[Result], *, timeout_s: float, log: Path, workers: int,
             option: str = "--probe-timeout", started: int | None = None, tensorflow: bool = False) -> Verdict:
    """The verdict of one launch. Storage faults come first: a rank that could not write
    its own files may have crashed its peers, and none of that is the workload's doing.

    ``started`` counts the ranks that reached the worker's entry point (None: unknown,
    e.g. a replacement launcher's workers elsewhere). A launch that failed with none
    started and nothing reported is the launcher's failure (torchrun's arguments, its
    rendezvous), never the workload's. ``tensorflow``: the workers are TensorFlow's (the
    TensorFlow spawner's launch), whose peers' follow-on errors are TensorFlow's own.
    """
    failures = {r.status: r for r in results if isinstance(r, FailureResult)}
    if "storage" in failures:
        return Verdict("storage", failures["storage"].message)
    if _exited_with(outcome, EXIT_STORAGE, "storage", log):
        return Verdict("storage", f"a worker could not read or write its files ({root_cause(outcome)}; log: {log})")
    if "setup" in failures or _exited_with(outcome, EXIT_SETUP, "setup", log):
        said = failures["setup"].message if "setup" in failures else root_cause(outcome)
        return Verdict("launcher", f"a worker could not join the process group or set up its device ({said}; log: "
                                   f"{log}): the environment's fault (network interface, rendezvous, device, memory "
                                   "limit)")
    # A rank's own exception outranks a peer's follow-on crash ("Connection reset by peer"),
    # whatever the order of the result files: the lowest rank's own, where several raised.
    own = sorted((r for r in results if isinstance(r, FailureResult) and r.status in ("oom", "crash")
                  and not _lost_a_peer(r, tensorflow=tensorflow)), key=lambda r: (r.status != "oom", r.rank))
    if own:
        return Verdict(own[0].status, own[0].message or ("out of memory" if own[0].status == "oom" else "crashed"))
    follow_on = next((r for r in results if isinstance(r, FailureResult) and _lost_a_peer(r, tensorflow=tensorflow)),
                     None)
    dead = _silent_death(outcome, results, workers=workers) if follow_on is not None else None
    if follow_on is not None and dead is None:
        return Verdict("crash", follow_on.message or "crashed")
    # Past here a follow-on crash only points to the rank that died without a word: how that
    # rank ended (a signal from outside, the kernel's OOM killer, a segfault) is the verdict.
    if outcome.timed_out:
        if started == 0 and not results:
            # No rank reached the worker's entry point in all that time: the launcher never
            # started them (a rendezvous endpoint nothing answers, a host that never joined),
            # which says nothing about the workload.
            return Verdict("launcher", f"no worker started within {timeout_s:g}s (the launcher's rendezvous never "
                                       f"completed: check --rdzv-endpoint and that every host joins, or raise {option} "
                                       f"if a launch takes longer here; log: {log})")
        return Verdict("timeout", f"no result within {timeout_s:g}s: raise {option}, or see {log}")
    ok = merge_rank_results(results)
    if ok is not None and (outcome.returncode == 0 or len(results) == workers):
        # Every rank reported success: a non-zero exit after that is teardown noise.
        return Verdict("ok", "", ok)
    signal_no = _outside_signal(outcome, results, workers=workers, tensorflow=tensorflow)
    if signal_no is not None:
        # SIGTERM, SIGINT, SIGHUP or SIGQUIT, to a worker or to torchrun, that the profiler did
        # not send (its own stop is a timeout, above): someone stopped the probe; the workload
        # did nothing wrong, and a crash record would make reruns skip the point.
        return Verdict("launcher", f"the probe was stopped by signal {signal_no} from outside the profiler (log: {log}); "
                                   "rerun to measure this point")
    if _sigkilled(outcome, results, workers=workers, tensorflow=tensorflow):
        if outcome.oom_kills == 0:
            # The kernel counted no OOM kill while the probe ran: someone else's kill -9. An
            # "oom" record would cap the local batch of every later search.
            return Verdict("launcher", f"a worker was killed by SIGKILL, and not by the kernel's out-of-memory killer "
                                       f"(it counted no OOM kill; log: {log}); rerun to measure this point")
        # A worker killed by SIGKILL that we did not send: the kernel's OOM killer (it counted
        # one, or keeps no count here).
        return Verdict("oom", "a worker was killed by SIGKILL (the kernel's out-of-memory killer, most likely)")
    if outcome.returncode is not None and outcome.returncode < 0:
        # The launcher itself (torchrun, the TensorFlow spawner) was killed by a signal the
        # profiler did not send, its workers with it: nothing the workload did says so.
        return Verdict("launcher", f"the launcher was killed by signal {-outcome.returncode} before the workers reported "
                                   f"(log: {log}); rerun to measure this point")
    if started == 0 and not results:
        return Verdict("launcher", f"the launcher failed before any worker started ({root_cause(outcome)}; log: {log})")
    said = root_cause(outcome) if dead is None else _death_message(*dead)
    return Verdict("crash", f"{said} (full log: {log})")


def workload_record(workload: Any, *, spec: str) -> WorkloadRecord:
    """The profile's workload record (torch or TensorFlow workload: same attributes)."""
    try:
        samples = int(workload.count_samples())
    except (Exception, SystemExit) as exc:  # the user's train_data(): its failure is theirs to fix, in one line
        # SystemExit too (sys.exit("data not found: run download.py")): it escaped as --help's
        # exit, a traceback or a silent exit 0 with nothing profiled.
        what = f"exited ({exc.code!r})" if isinstance(exc, SystemExit) else f"failed with {type(exc).__name__}: {exc}"
        raise WorkloadError(f"workload {workload.name!r}: counting the training samples with train_data() {what}: fix "
                            "it, or give the Workload dataset_size=N") from None
    if samples < 1:  # no step can be formed: every probe would fail, and the profile would say so wrongly
        where = "its dataset_size" if getattr(workload, "dataset_size", None) is not None else "train_data() is empty"
        raise WorkloadError(f"workload {workload.name!r} has {samples} training samples ({where}): give it its training "
                            "data (or dataset_size=N, the samples of one epoch)")
    return WorkloadRecord(name=workload.name, dataset_size=samples, metric=workload.metric,
                          goal=workload.goal, source=f"cotune profile {spec}")


def step_record(ok: TimingResult, *, gpu: str, workers: int, hosts: int, local_batch: int) -> StepRecord:
    assert ok.step_time_s is not None, "a timing result is summarised before it becomes a record"
    return StepRecord(
        gpu=gpu, workers=workers, local_batch=local_batch, step_time_s=float(ok.step_time_s), hosts=hosts,
        sync_time_s=None if ok.sync_time_s is None else float(ok.sync_time_s),
        peak_memory_bytes=float(ok.peak_memory_bytes),
        step_time_spread_s=float(ok.step_time_spread_s or 0.0), timed_steps=int(ok.timed_steps or 0),
    )


def failure_record(kind: str, message: str, *, gpu: str, workers: int, hosts: int, local_batch: int) -> FailureRecord:
    if kind not in ("oom", "crash", "timeout"):
        raise ValueError(f"only workload failures (oom, crash, timeout) become records, not {kind!r}")
    return FailureRecord(gpu=gpu, workers=workers, local_batch=local_batch, failure=kind, hosts=hosts,
                         message=message[:500])


def epoch_records(line: EpochLine, *, global_batch: int, seed: int) -> list[EvalRecord | NoiseRecord]:
    """The eval record of one finished epoch, and its noise record when measured.

    A diverged run's numbers are the workload's, never bad input: a finite metric past
    ``MAX_MAGNITUDE`` is recorded as ±inf (the profile's word for a diverged evaluation, which
    it would refuse as a number), and a noise scale that is not a finite positive number of at
    most ``MAX_MAGNITUDE`` is left out (both stopped the session with exit 2, on every rerun)."""
    metric = float(line.metric)
    if math.isfinite(metric) and diverged_metric(metric):
        metric = math.copysign(math.inf, metric)
    out: list[EvalRecord | NoiseRecord] = [
        EvalRecord(global_batch=global_batch, epoch=float(line.epoch), metric=metric, seed=seed)]
    b_noise = None if line.b_noise is None else float(line.b_noise)
    if b_noise is not None and 0 < b_noise <= MAX_MAGNITUDE:
        out.append(NoiseRecord(b_noise=b_noise, global_batch=global_batch, epoch=float(line.epoch)))
    return out
