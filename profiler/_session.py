"""A profiling session: run the plan's probes and append their records to the profile.

The session is the only writer of the profile. For each point it prepares a task
file, lets the launcher start the workers, turns their ``rank<N>.json`` results into
records (a ``step`` record, or a ``failure`` record for an out-of-memory, a crash or
a time-out) and moves on. Learning-curve epochs are copied into the profile while the
curve trains, so a kill loses at most the epoch being copied.

Scratch files (task files, logs, curve checkpoints) live next to the profile in
``<out>.cotune/``; failed probes keep their log there for inspection.

Faults of ours are not failures of the workload: when the profile or the scratch
folder cannot be written (disk full, read-only, I/O error), the session stops with a
:class:`~cotune.errors.StorageError` and writes nothing about the probe, so a rerun
once the storage is fixed measures it. The wire protocol is :mod:`profiler._protocol`,
the records are built in :mod:`profiler._records`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TextIO

from cotune._checks import excerpt, integer, one_line_name
from cotune.errors import InputError, StorageError
from cotune.profile import ProfileWriter, WorkloadRecord, check_profile_path
from profiler._launcher import (
    Launcher,
    LauncherError,
    LaunchOutcome,
    LaunchRequest,
    TorchrunLauncher,
    log_tail,
)
from profiler._livelog import KEPT_LOG_HEAD_BYTES, KEPT_LOG_TAIL_BYTES, copy_log_bounded
from profiler._plan import AutoPlan, CurvePoint, GridPlan, Point, TimingGroup, TimingPoint
from profiler._value import PlanNote, ValuePlan
from profiler._progress import Progress
from profiler._protocol import (
    CurveResult,
    CurveTask,
    EpochLine,
    FailureResult,
    Result,
    Task,
    TimingResult,
    TimingTask,
    batch_result_dir,
    count_started,
    read_results,
    write_task,
)
from profiler._records import (
    Verdict,
    classify,
    epoch_records,
    failure_record,
    merge_rank_results,
    step_record,
    workload_record,
)
from profiler._settings import CurveSettings, ProbeEstimator, ProbeSettings, SessionSummary
from profiler._state import DEFAULT_RETRY, RETRY_KINDS, CurveDoneRecord, ProbeCostRecord, ProfileState, read_state
from profiler._storage import check_storage, storage_guard
from profiler._workload import MAX_SEED, Workload, WorkloadError, bounded, load_workload

__all__ = ["ProbeSettings", "CurveSettings", "SessionSummary", "Session", "run_session"]


# Worker modules that time a task's ``more_local_batches`` in the same launch.
GROUP_WORKERS = frozenset({"profiler._worker", "profiler.tf._worker"})
# The TensorFlow workers' module: their peers' follow-on errors are read by TensorFlow's rule.
TF_WORKER_MODULE = "profiler.tf._worker"
# KEPT_LOG_HEAD_BYTES, KEPT_LOG_TAIL_BYTES and copy_log_bounded are profiler._livelog's (the
# live log is bounded to the same), named here too for the code and the tests that import them from here.


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]+", "-", text).strip("-").lower() or "workload"


class Session:
    """One run of ``cotune profile``: see :func:`run_session` for the arguments."""

    def __init__(
        self,
        *,
        workload_spec: str,
        out: Path,
        plan: GridPlan | AutoPlan | ValuePlan,
        probe: ProbeSettings,
        curve: CurveSettings,
        launcher: Launcher,
        gpu: str | None,
        budget_s: float | None,
        stream: TextIO | None,
        quiet: bool,
        workload: Any = None,
        worker_module: str = "profiler._worker",
        timing_groups: bool = True,
        retry_failed: frozenset[str] = frozenset(),
    ) -> None:
        self.spec = workload_spec
        self.retry_failed = retry_failed
        self.out = Path(out)
        self.plan = plan
        self.probe = probe
        self.curve = curve
        self.launcher = launcher
        self.budget_s = budget_s
        # A torch Workload by default; the TensorFlow adapter passes its own workload
        # object (same attribute names) and worker module.
        self.workload: Workload = workload if workload is not None else load_workload(workload_spec)
        self.worker_module = worker_module
        # Several local batches in one launch (the torch and TensorFlow workers do; a
        # replacement launcher that does not say it can runs one launch a point).
        self.timing_groups = (timing_groups and worker_module in GROUP_WORKERS
                              and bool(getattr(launcher, "timing_groups", False)))
        # Checked before any probe: the records would refuse it after the probe ran.
        self.gpu = (one_line_name(gpu, what="--gpu", example="t4") if gpu is not None else self._detect_gpu()).lower()
        # Resolved, so two spellings of one --out (a symlink, a relative path) share the
        # scratch folder that the profile's lock protects.
        check_profile_path(self.out)  # a loop of symbolic links: named (resolve() raises RuntimeError on one)
        try:
            resolved = self.out.resolve()
        except (RuntimeError, OSError) as exc:  # a loop made meanwhile; an unreadable folder of the path
            raise InputError(f"--out {self.out}: cannot resolve the path ({exc}): give the profile file's own path") from None
        check_profile_path(resolved, shown=str(self.out))  # a directory (even `/`, which has no name) or a device
        self.scratch = resolved.with_name(resolved.name + ".cotune")
        # Task folders of this run only: a folder of its own per run, so no other run
        # (an earlier killed one, say) can remove or overwrite a probe's files.
        self.run_dir = self.scratch / f"run-{os.getpid()}-{time.time_ns()}"
        self.progress = Progress(total=plan.size_hint(), stream=stream, quiet=quiet)
        self.estimator = ProbeEstimator()
        # Read once the profile's lock is held (in run): another writer may still be appending.
        self.state = ProfileState()
        self.writer = ProfileWriter(self.out)
        self.records_written = 0
        self.launches = 0  # processes started by the launcher this run (timing groups share one)

    def _detect_gpu(self) -> str:
        if self.probe.device == "cpu":
            return "cpu"
        from profiler._gpu import local_gpu_name

        name = local_gpu_name()
        if self.probe.device == "cuda" and name == "cpu":
            raise InputError("--device cuda but torch sees no CUDA device here: use --device cpu, or run on a GPU host")
        return name

    # ----------------------------------------------------------------- records

    def _write(self, record: Any) -> None:
        self.writer.write(record)
        self.state.add(record)
        if not isinstance(record, (ProbeCostRecord, CurveDoneRecord)):
            self.records_written += 1

    def _check_or_write_workload(self, mine: WorkloadRecord) -> None:
        have = self.state.workload
        if have is None:
            self._write(mine)
            return
        # The metric's name may differ between versions of a workload file; its goal may not
        # (a loss recorded into an accuracy profile would read every point backwards).
        differs = have.differs_from(mine, fields=("name", "dataset_size", "goal"))
        if differs is not None:
            raise InputError(
                f"{self.out} holds workload {have.name!r} ({have.dataset_size} samples, goal {have.goal}), not "
                f"{mine.name!r} ({mine.dataset_size} samples, goal {mine.goal}): choose another --out, or delete the "
                "file to start over"
            )

    # ----------------------------------------------------------------- budget

    def _remaining_budget_s(self) -> float | None:
        if self.budget_s is None:
            return None
        return self.budget_s - self.state.probe_wall_s

    def _epoch_limit(self, point: CurvePoint) -> int:
        """The epochs a curve trains at most: the point's own limit (a short run bought at a
        price), never more than ``--max-epochs``."""
        return self.curve.max_epochs if point.max_epochs is None else max(1, min(point.max_epochs, self.curve.max_epochs))

    def _estimate(self, point: Point, *, in_launch: bool = False) -> float:
        """Seconds ``point`` will cost; ``in_launch``: a further batch of a launch that
        another point of the same group starts."""
        if isinstance(point, TimingPoint):
            return self.estimator.extra_s() if in_launch else self.estimator.timing_s()
        return self.estimator.curve_s(point, self.state, gpu=self.gpu, hosts=self.launcher.hosts,
                                      dataset_size=self.state.workload.dataset_size if self.state.workload else 1,
                                      max_epochs=self._epoch_limit(point))

    def _remaining_s(self) -> float:
        left = max(0, self.progress.total - self.progress.done)
        return left * self.estimator.timing_s()

    # ----------------------------------------------------------------- probes

    def _task_dir(self, name: str) -> Path:
        path = self.run_dir / name
        with storage_guard(path, "prepare the probe's task folder"):
            if path.exists():
                shutil.rmtree(path)
            (path / "results").mkdir(parents=True)
        return path

    def _check_storage(self, *, after: str | None = None) -> None:
        check_storage(scratch=self.scratch, profile=self.out, after=after)

    def _launch(self, *, task: Task, name: str, workers: int, timeout_s: float,
                poll: Callable[[], None] | None) -> tuple[LaunchOutcome, list[Result], Path]:
        folder = Path(task.result_dir).parent
        task_path = folder / "task.json"
        with storage_guard(task_path, "write the probe's task file"):
            write_task(task_path, task)

        def tick() -> None:
            self.progress.tick()
            if poll is not None:
                poll()

        request = LaunchRequest(
            workers=workers, module=self.worker_module, args=(str(task_path),),
            run_id=f"cotune-{_slug(self.workload.name)}-{name}", timeout_s=timeout_s, log_path=folder / "log.txt",
            env=(("COTUNE_CPU_THREADS", str(self.probe.cpu_threads)),),
        )
        self.launches += 1
        outcome = self.launcher.launch(request, poll=tick)
        return outcome, read_results(folder / "results", kind=task.kind), folder

    def _task_fields(self, folder: Path, point: Point) -> dict[str, Any]:
        """What every task carries: the workload, where results go, how workers run."""
        return dict(workload=self.spec, result_dir=str(folder / "results"), local_batch=point.local_batch,
                    device=self.probe.device, loader_workers=self.probe.loader_workers,
                    cpu_threads=self.probe.cpu_threads)

    def _verdict(self, outcome: LaunchOutcome, results: list[Result], *, label: str, timeout_s: float, log: Path,
                 workers: int, option: str = "--probe-timeout") -> Verdict:
        """Classify a launch; a fault of our storage stops the session and records nothing."""
        verdict = classify(outcome, results, timeout_s=timeout_s, log=log, workers=workers, option=option,
                           started=count_started(log.parent / "results"),
                           tensorflow=self.worker_module == TF_WORKER_MODULE)
        # A fault of ours records nothing, so its log is kept under a name of its own
        # (<probe>.launcher.log, <probe>.storage.log): kept as <probe>.log, it replaced the log
        # that a failure recorded for this point by an earlier run names, and that record,
        # still in effect, then pointed at a rendezvous log.
        unrecorded = f"{log.parent.name}.{verdict.kind}"
        if verdict.kind == "launcher":
            kept = self._keep_log(log.parent, unrecorded)  # the probe's folder goes when the run ends
            raise LauncherError(
                f"probe {label} stopped: {verdict.message.replace(str(log), str(kept))}: a fault of the launcher, not "
                f"the workload, so nothing was recorded for it (its log is kept as {kept.name}, apart from a failure "
                "recorded for this probe before): fix the launcher (see the log), then run the same command again")
        if verdict.kind == "storage":
            # The message names the log: keep it, as for a launcher fault (the probe's folder
            # goes when the run ends, and the message named a file that no longer existed).
            # On the failing storage the copy may fail too: then say so rather than name it.
            try:
                kept = self._keep_log(log.parent, unrecorded)
                message = verdict.message.replace(str(log), str(kept))
                # A worker's own storage report may not name the log: then name all of it here.
                shown = kept.name if str(kept) in message else str(kept)
                message = f"{message} (its log is kept as {shown}, apart from a failure recorded for this probe before)"
            except StorageError:
                message = f"{verdict.message.replace(f'; log: {log}', '')} (its log could not be kept there)"
            raise StorageError(
                f"probe {label} stopped: {message}: the storage failed, not the workload, so nothing was "
                "recorded for it: free space or fix the disk, then run the same command again")
        if not verdict.ok:
            # A worker too starved for space to report it looks like a crash or a hang.
            self._check_storage(after=label)
        return verdict

    def _keep_log(self, folder: Path, name: str) -> Path:
        """Copy a failed probe's log (its first and last few MiB: :func:`copy_log_bounded`) and
        the workers' tracebacks (4000 characters each, cut by the worker) to ``logs/<name>.log``.
        ``name`` is the probe's where a failure record names the log, and the probe's plus
        the fault's kind where nothing is recorded."""
        logs = self.scratch / "logs"
        kept = logs / f"{name}.log"
        # The probe's name is the same on every run: the kept log is written afresh, not appended
        # to (appended, it grew by up to 5 MiB on each rerun of a failing probe and began with the
        # first run's log). Written beside it and renamed, as the ranks' results are, so a copy
        # that fails half-way leaves no half log under the name the message gives.
        part = logs / f".{name}.log.part"
        with storage_guard(kept, "keep the failed probe's log"):
            logs.mkdir(parents=True, exist_ok=True)
            try:
                with open(part, "wb") as dst:
                    if (folder / "log.txt").exists():  # a replacement launcher may keep logs elsewhere
                        with open(folder / "log.txt", "rb") as src:
                            copy_log_bounded(src, dst, head_bytes=KEPT_LOG_HEAD_BYTES, tail_bytes=KEPT_LOG_TAIL_BYTES)
                    for result in read_results(folder / "results", kind="timing"):
                        if isinstance(result, FailureResult) and result.traceback:
                            dst.write(f"\n--- rank{result.rank} traceback ---\n{result.traceback}".encode())
                os.replace(part, kept)
            finally:
                part.unlink(missing_ok=True)  # renamed: already gone; a failed copy: not left behind
        return kept

    def run_timing(self, point: TimingPoint) -> tuple[str, bool]:
        hosts = self.launcher.hosts
        p = self.probe
        name = f"t-w{point.workers}-b{point.local_batch}"
        folder = self._task_dir(name)
        task = TimingTask(
            **self._task_fields(folder, point), warmup_steps=p.warmup_steps, min_timed_steps=p.min_timed_steps,
            max_timed_steps=p.max_timed_steps, max_timed_s=p.max_timed_s, rel_precision=p.rel_precision,
            measure_sync=p.measure_sync, seed=p.seed,
        )
        outcome, results, folder = self._launch(task=task, name=name, workers=point.workers,
                                                timeout_s=p.timeout_s, poll=None)
        verdict = self._verdict(outcome, results, label=point.label, timeout_s=p.timeout_s, log=folder / "log.txt",
                                workers=point.workers)
        where = dict(gpu=self.gpu, workers=point.workers, hosts=hosts, local_batch=point.local_batch)
        if isinstance(verdict.result, TimingResult):
            self._write(step_record(verdict.result, **where))
            self.estimator.timing_walls.append(outcome.wall_s)
            shown = f"{verdict.result.step_time_s:.4g} s/step"
        else:
            shown = self._record_timing_failure(verdict, folder=folder, name=name, where=where)
        self._write(ProbeCostRecord(probe="timing", wall_s=outcome.wall_s, outcome=verdict.kind, **where))
        shutil.rmtree(folder, ignore_errors=True)
        return shown, verdict.ok

    def _record_timing_failure(self, verdict: Verdict, *, folder: Path, name: str, where: dict[str, Any]) -> str:
        """The ``failure`` record of a timing point (its log kept, and named: the probe's own
        folder is removed after it); returns the line the progress shows."""
        kept = self._keep_log(folder, name)
        message = verdict.message.replace(str(folder / "log.txt"), str(kept))
        if verdict.kind == "crash" and str(kept) not in message:
            message = f"{message} (log: {kept})"
        self._write(failure_record(verdict.kind, message, **where))
        return f"{verdict.kind}: {message[:120]}"

    def run_timing_group(
        self, points: list[TimingPoint],
    ) -> tuple[list[tuple[TimingPoint, str, bool, float]], list[TimingPoint]]:
        """Time ``points`` (one worker count, batches ascending) in one launch.

        Each batch's step record, and its ``probe_cost`` (the last batch's at the launch's
        end), is written as soon as every rank has reported it (while the launch runs), so a
        kill or a later failure keeps every batch already timed, and what it cost.
        The launch's wall time is shared out as it was spent: a point is charged the time
        since the previous one finished (the first carries the start-up, the last the
        teardown). Returns ``(point, shown, ok, wall_s)`` for the points measured or failed, and
        the points after a failure, not measured, for the caller to run again.
        """
        hosts = self.launcher.hosts
        p = self.probe
        workers = points[0].workers
        name = f"t-w{workers}-b{points[0].local_batch}-b{points[-1].local_batch}"
        folder = self._task_dir(name)
        task = TimingTask(
            **self._task_fields(folder, points[0]), warmup_steps=p.warmup_steps, min_timed_steps=p.min_timed_steps,
            max_timed_steps=p.max_timed_steps, max_timed_s=p.max_timed_s, rel_precision=p.rel_precision,
            measure_sync=p.measure_sync, seed=p.seed, more_local_batches=tuple(q.local_batch for q in points[1:]),
        )
        done: list[tuple[TimingPoint, TimingResult, float]] = []
        began = time.monotonic()
        last = began

        running = True

        def poll() -> None:
            nonlocal last
            while len(done) < len(points):
                results = read_results(batch_result_dir(folder / "results", len(done)), kind="timing")
                ok = [r for r in results if isinstance(r, TimingResult)]
                if len(ok) < workers // hosts:  # this host's ranks (the others write on their own hosts)
                    # --probe-timeout holds for each batch, as for a lone point (checked after
                    # reading, so a result that is in is never lost to the clock).
                    if running and time.monotonic() - last > p.timeout_s:
                        raise _BatchTimedOut
                    return
                point = points[len(done)]
                merged = merge_rank_results(ok)
                assert isinstance(merged, TimingResult)
                self._write(step_record(merged, gpu=self.gpu, workers=workers, hosts=hosts,
                                        local_batch=point.local_batch))
                now = time.monotonic()
                done.append((point, merged, now - last))
                if len(done) < len(points):
                    # Its cost now, with its step: a later fault of the launch (the session then
                    # stops) or a kill lost it, and --probe-budget overspent across reruns. The
                    # last point's waits for the launch's end: it carries the teardown.
                    self._write(ProbeCostRecord(probe="timing", wall_s=now - last, outcome="ok", gpu=self.gpu,
                                                workers=workers, hosts=hosts, local_batch=point.local_batch))
                last = now

        try:
            outcome, results, folder = self._launch(task=task, name=name, workers=workers,
                                                    timeout_s=p.timeout_s * len(points), poll=poll)
        except _BatchTimedOut:  # the launcher has stopped the workers on the way out
            outcome = LaunchOutcome(returncode=None, timed_out=True, wall_s=time.monotonic() - began,
                                    log_tail=log_tail(folder / "log.txt"))
            results = read_results(folder / "results", kind="timing")
        running = False
        poll()  # results that came in as the launch ended
        out: list[tuple[TimingPoint, str, bool, float]] = []
        rest: list[TimingPoint] = []
        failed: TimingPoint | None = None
        verdict = None
        if len(done) < len(points):
            failed = points[len(done)]
            verdict = self._verdict(outcome, results, label=failed.label, timeout_s=p.timeout_s,
                                    log=folder / "log.txt", workers=workers)
            if verdict.ok:  # every rank said ok, yet a batch has no complete result: not the workload's doing
                raise StorageError(f"probe {failed.label} stopped: its ranks' results for local batch "
                                   f"{failed.local_batch} are missing under {folder}: the storage lost them, not the "
                                   "workload, so nothing was recorded for it: run the same command again")
            rest = list(points[len(done) + 1:])
        # Teardown (and a failed batch's own time) goes to the last point charged.
        tail = max(0.0, outcome.wall_s - sum(wall for _, _, wall in done))
        for i, (point, result, wall) in enumerate(done):
            extra = tail if failed is None and i == len(done) - 1 else 0.0
            where = dict(gpu=self.gpu, workers=workers, hosts=hosts, local_batch=point.local_batch)
            if i == len(points) - 1:  # the others' were written as they finished (poll)
                self._write(ProbeCostRecord(probe="timing", wall_s=wall + extra, outcome="ok", **where))
            (self.estimator.extra_walls if i else self.estimator.timing_walls).append(wall + extra)
            out.append((point, f"{result.step_time_s:.4g} s/step", True, wall + extra))
        if failed is not None and verdict is not None:
            where = dict(gpu=self.gpu, workers=workers, hosts=hosts, local_batch=failed.local_batch)
            shown = self._record_timing_failure(verdict, folder=folder, name=name, where=where)
            self._write(ProbeCostRecord(probe="timing", wall_s=tail, outcome=verdict.kind, **where))
            out.append((failed, shown, False, tail))
        shutil.rmtree(folder, ignore_errors=True)
        return out, rest

    def _copy_progress(self, point: CurvePoint, path: Path, offset: int) -> int:
        """Append eval (and noise) records for epochs the profile lacks; new byte offset."""
        with storage_guard(path, "read the curve's progress file"):
            if not path.exists():
                return offset
            with path.open("rb") as fh:
                fh.seek(offset)
                chunk = fh.read()
        end = chunk.rfind(b"\n")
        if end < 0:
            return offset
        have = len(self.state.evals.get((point.global_batch, point.seed), []))
        for raw in chunk[: end + 1].splitlines():
            line = EpochLine.from_dict(json.loads(raw))
            if line.epoch_index <= have:
                continue  # already in the profile (a resumed curve replays from its checkpoint)
            for record in epoch_records(line, global_batch=point.global_batch, seed=point.seed):
                self._write(record)
            have += 1
        return offset + end + 1

    def _target_reached(self, point: CurvePoint) -> bool:
        target = self.curve.target
        if target is None:
            return False
        for e in self.state.evals.get((point.global_batch, point.seed), []):
            if self.workload.goal == "max" and e.metric >= target or self.workload.goal == "min" and e.metric <= target:
                return True
        return False

    def run_curve(self, point: CurvePoint, *, budget_left_s: float | None) -> tuple[str, bool]:
        key = f"c-B{point.global_batch}-s{point.seed}-w{point.workers}"
        progress = self.scratch / f"{key}.progress.jsonl"
        ckpt = self.scratch / f"{key}.pt"
        # Epochs a killed session left in the progress file but had not copied yet.
        self._copy_progress(point, progress, 0)
        with storage_guard(progress, "remove the copied progress file"):
            progress.unlink(missing_ok=True)
        have = len(self.state.evals.get((point.global_batch, point.seed), []))
        limit = self._epoch_limit(point)
        if self._target_reached(point) or have >= limit:
            reason = "target" if self._target_reached(point) else "max_epochs"
            self._write(CurveDoneRecord(global_batch=point.global_batch, seed=point.seed, workers=point.workers,
                                        epochs=have, reason=reason))
            ckpt.unlink(missing_ok=True)
            return f"already complete ({reason})", True
        timeout_s = self.curve.timeout_s
        by_budget = budget_left_s is not None and budget_left_s < timeout_s
        if by_budget:
            timeout_s = max(1.0, budget_left_s)
        folder = self._task_dir(key)
        task = CurveTask(
            **self._task_fields(folder, point), seed=point.seed, max_epochs=limit,
            target=self.curve.target, noise=self.curve.noise, progress_path=str(progress),
            checkpoint_path=str(ckpt) if self.curve.checkpoint else None,
        )
        offset = 0

        def poll() -> None:
            nonlocal offset
            offset = self._copy_progress(point, progress, offset)

        began_epochs = have
        outcome, results, folder = self._launch(task=task, name=key, workers=point.workers,
                                                timeout_s=timeout_s, poll=poll)
        poll()
        epochs = len(self.state.evals.get((point.global_batch, point.seed), []))
        if epochs > began_epochs:
            self.estimator.curve_epoch_s.append(outcome.wall_s / (epochs - began_epochs))
        verdict = self._verdict(outcome, results, label=point.label, timeout_s=timeout_s, log=folder / "log.txt",
                                workers=point.workers, option="--curve-timeout")
        message = verdict.message
        if isinstance(verdict.result, CurveResult):
            reason = verdict.result.reason
            shown = f"{epochs} epochs, {reason}"
        elif verdict.kind == "timeout" and by_budget:
            reason = "budget"
            shown = f"stopped by --probe-budget after {epochs} epochs; run again with a larger --probe-budget to continue"
        else:
            reason = verdict.kind
            kept = self._keep_log(folder, key)
            message = message.replace(str(folder / "log.txt"), str(kept))
            if str(kept) not in message:
                message = f"{message} (log: {kept})"
            if verdict.kind == "oom":  # an out-of-memory is a fact about this (workers, local batch)
                self._write(failure_record("oom", message, gpu=self.gpu, workers=point.workers,
                                           hosts=self.launcher.hosts, local_batch=point.local_batch))
            shown = f"{verdict.kind}: {message[:120]}"
        if reason != "budget":
            self._write(CurveDoneRecord(global_batch=point.global_batch, seed=point.seed, workers=point.workers,
                                        epochs=epochs, reason=reason, message="" if verdict.ok else message[:500]))
            ckpt.unlink(missing_ok=True)
            progress.unlink(missing_ok=True)
        self._write(ProbeCostRecord(probe="curve", gpu=self.gpu, workers=point.workers, hosts=self.launcher.hosts,
                                    local_batch=point.local_batch, wall_s=outcome.wall_s,
                                    outcome="ok" if verdict.ok else reason))
        shutil.rmtree(folder, ignore_errors=True)
        return shown, verdict.ok or reason == "budget"

    # ----------------------------------------------------------------- loop

    def _skip_reason(self, point: Point) -> str | None:
        hosts = self.launcher.hosts
        if point.workers % hosts:
            return "workers"
        samples = self.state.workload.dataset_size if self.state.workload else None
        global_batch = point.global_batch if isinstance(point, CurvePoint) else point.workers * point.local_batch
        if samples is not None and global_batch > samples:
            return "data"
        if isinstance(point, TimingPoint):
            if self.state.timing_done((self.gpu, point.workers, hosts, point.local_batch)):
                return "done"
            bound = self.state.oom_bound(self.gpu)
            if bound is not None and point.local_batch >= bound:
                return "oom"
            return None
        if (point.global_batch, point.seed) in self.state.curves_done:
            return "done"
        bound = self.state.oom_bound(self.gpu)
        if bound is not None and point.local_batch >= bound:
            return "oom"
        return None

    def _check_plan_fits_devices(self) -> None:
        """On GPU every torch worker of a host takes its own device (``cuda:LOCAL_RANK``): a
        plan with more workers per host than this host has GPUs would crash every such probe
        on an invalid device — our input's fault, not the workload's — so it is refused."""
        if self.probe.device == "cpu" or self.worker_module != "profiler._worker":
            return
        from profiler._gpu import local_device_count

        count = local_device_count()
        if count <= 0:
            return  # no CUDA here: the workers run on CPU (auto) or --device cuda is refused elsewhere
        plan, hosts = self.plan, self.launcher.hosts
        if isinstance(plan, GridPlan):
            asked = max([*plan.workers, plan.curve_workers])
            option = "--workers" if max(plan.workers) >= plan.curve_workers else "--curve-workers"
        else:
            asked = max(getattr(plan, "max_workers", 1), getattr(plan, "curve_workers", 1))
            option = "--max-workers"
        per_host = -(-asked // hosts)
        if per_host > count:
            raise InputError(f"{option} {asked} puts {per_host} workers on each of {hosts} host(s), which have {count} "
                             f"GPU(s) here (each worker takes its own): ask for at most {count * hosts} workers, or "
                             "probe on CPU (--device cpu)")

    def _remove_stale_runs(self) -> None:
        """Task folders of earlier runs of this profile: their runs are dead (we hold the lock)."""
        if self.scratch.is_dir():
            for old in self.scratch.glob("run-*"):
                if old != self.run_dir:
                    shutil.rmtree(old, ignore_errors=True)

    def _admit(self, point: Point, tally: "_Tally", *, planned_s: float, in_launch: bool = False) -> bool:
        """Whether ``point`` runs now; a skipped one is counted and said (``planned_s``: the
        estimated cost of the points already admitted to the same launch, ``in_launch``:
        there are some)."""
        reason = self._skip_reason(point)
        if reason is not None:
            self.progress.grow(-1)
            if reason == "done":
                tally.skipped_done += 1
                key = ((self.gpu, point.workers, self.launcher.hosts, point.local_batch) if isinstance(point, TimingPoint)
                       else (point.global_batch, point.seed))
                kind = self.state.failed_before(key)
                if kind is not None:
                    tally.skipped_failed[kind] = tally.skipped_failed.get(kind, 0) + 1
            elif reason == "oom":
                tally.skipped_oom += 1
                self.progress.note(f"skip {point.label}: at or above the out-of-memory local batch "
                                   f"{self.state.oom_bound(self.gpu)}")
            elif reason == "data":
                samples = self.state.workload.dataset_size if self.state.workload else 0
                self.progress.note(f"skip {point.label}: a step of {point.workers} × {point.local_batch} samples is "
                                   f"more than the workload's {samples:,} training samples")
            else:
                self.progress.note(f"skip {point.label}: {point.workers} workers do not spread over "
                                   f"{self.launcher.hosts} hosts")
            return False
        left = self._remaining_budget_s()
        if left is not None:
            left -= planned_s
            if self._estimate(point, in_launch=in_launch) > left and not (
                isinstance(point, CurvePoint) and left > self.estimator.timing_s()
            ):
                # Curves may start on a partial budget (they stop at it and resume
                # later); a timing probe that cannot finish is not started.
                tally.skipped_budget += 1
                self.progress.grow(-1)
                return False
        return True

    def _run_points(self, tally: "_Tally") -> None:
        seen: set[Point] = set()
        for item in self.plan.points(self.state, gpu=self.gpu, hosts=self.launcher.hosts):
            if isinstance(item, PlanNote):  # the plan says why it stopped: in the summary, which main prints
                if item.final:
                    tally.plan_note = item.text
                else:  # what a bought measurement did: shown now, and kept for the summary
                    tally.ledger.append(item.text)
                    self.progress.note(item.text)
                continue
            queue = [p for p in (item.points if isinstance(item, TimingGroup) else (item,)) if p not in seen]
            seen.update(queue)
            while queue:
                if not (self.timing_groups and len(queue) > 1):
                    # One launch a point, each admitted after the one before ran (an
                    # out-of-memory there skips the larger batches here).
                    point = queue.pop(0)
                    if self._admit(point, tally, planned_s=0.0):
                        self._run_one(point, tally)
                    continue
                runnable: list[TimingPoint] = []
                planned_s = 0.0
                for point in queue:
                    if self._admit(point, tally, planned_s=planned_s, in_launch=bool(runnable)):
                        planned_s += self._estimate(point, in_launch=bool(runnable))
                        runnable.append(point)  # type: ignore[arg-type] # a group holds timing points only
                queue = []
                if len(runnable) == 1:
                    self._run_one(runnable[0], tally)
                elif runnable:
                    queue = self._run_group(runnable, tally)  # the points after a failure, admitted again

    def _run_group(self, points: list[TimingPoint], tally: "_Tally") -> list[TimingPoint]:
        """One launch for several timing points; the points after a failure come back."""
        self._check_storage()  # a probe that cannot write its files is not started
        while self.progress.done + len(points) > self.progress.total:  # a plan that grows as it learns
            self.progress.grow(1)
        label = (f"timing workers={points[0].workers} local_batch={points[0].local_batch}..{points[-1].local_batch} "
                 f"({len(points)} in one launch)")
        self.progress.start(label, remaining_s=self._remaining_s())
        results, rest = self.run_timing_group(points)
        for point, shown, ok, wall_s in results:
            tally.count(shown, ok)
            self.progress.finish(point.label, shown, remaining_s=self._remaining_s() - self.estimator.timing_s(),
                                 took_s=wall_s)
        return rest

    def _run_one(self, point: Point, tally: "_Tally") -> None:
        self._check_storage()  # a probe that cannot write its files is not started
        if self.progress.done >= self.progress.total:  # a plan that grows as it learns (the value plan)
            self.progress.grow(1)
        self.progress.start(point.label, remaining_s=self._remaining_s())
        if isinstance(point, TimingPoint):
            shown, ok = self.run_timing(point)
        else:
            shown, ok = self.run_curve(point, budget_left_s=self._remaining_budget_s())
        tally.count(shown, ok)
        self.progress.finish(point.label, shown, remaining_s=self._remaining_s() - self.estimator.timing_s())

    def run(self) -> SessionSummary:
        began = time.monotonic()
        tally = _Tally()
        # Before the profile is opened: a workload whose data cannot be counted leaves no file behind.
        with bounded(self.probe.timeout_s, f"counting the training samples of {self.spec} (train_data())"):
            mine = workload_record(self.workload, spec=self.spec)
        _check_plan_fits_data(self.plan, samples=mine.dataset_size)
        self._check_plan_fits_devices()
        cores = os.cpu_count() or 1
        if self.gpu == "cpu" and self.probe.cpu_threads > cores:
            # torch refuses to start that many threads ("Resource temporarily unavailable"),
            # which would read as a crash of the workload at every probe.
            raise InputError(f"--cpu-threads {self.probe.cpu_threads} is more than this host's {cores} cores: use at "
                             f"most {cores} (0 shares the cores among the workers)")
        if isinstance(self.plan, ValuePlan):  # a question this machine cannot measure: refused before any file
            self.plan.check(gpu=self.gpu, hosts=self.launcher.hosts)
        with self.writer:  # the exclusive lock: a second run on this --out stops here
            try:
                self.state = read_state(self.out)
                retried = self.state.forget_failures(self.retry_failed)
                if retried:
                    self.progress.note(f"--retry-failed: {retried} point{'' if retried == 1 else 's'} that failed "
                                       f"before ({', '.join(sorted(self.retry_failed))}) will run again")
                self._remove_stale_runs()
                self._check_storage()
                self._check_or_write_workload(mine)
                self._run_points(tally)
            finally:
                shutil.rmtree(self.run_dir, ignore_errors=True)
        if tally.skipped_budget:
            self.progress.note(f"--probe-budget: {tally.skipped_budget} planned probes did not fit; raise --probe-budget to run them")
        return SessionSummary(
            out=str(self.out), gpu=self.gpu, ran=tally.ran, failed=tally.failed, skipped_done=tally.skipped_done,
            skipped_failed=tuple(sorted(tally.skipped_failed.items())), failed_kinds=tuple(sorted(tally.failed_kinds)),
            skipped_oom=tally.skipped_oom, skipped_budget=tally.skipped_budget, records_written=self.records_written,
            session_wall_s=time.monotonic() - began, probe_wall_s=self.state.probe_wall_s,
            probe_worker_s=self.state.probe_worker_s, plan_note=tally.plan_note, ledger=tuple(tally.ledger),
            launches=self.launches,
        )


def _check_plan_fits_data(plan: Any, *, samples: int) -> None:
    """A step cannot hold more samples than the training set: an explicit grid or curve that
    asks for one, or a plan whose smallest batch is one, is refused before any probe (a
    worker would otherwise build batches of that size, and a curve would have no step in
    an epoch)."""
    if isinstance(plan, GridPlan):
        for w in plan.workers:
            for b in plan.local_batches:
                if w * b > samples:
                    # With more workers than samples no local batch fits: fewer workers is the fix.
                    fix = (f"choose local batches of at most {samples // w:,} for {w} worker(s)" if samples >= w
                           else f"use at most {samples:,} workers (one sample each)")
                    raise InputError(f"--workers {w} × --local-batch {b} is a step of {w * b:,} samples, more than the "
                                     f"workload's {samples:,} training samples: {fix}")
    elif getattr(plan, "min_batch", 0) > samples:  # the automatic and the value plan
        raise InputError(f"--min-batch {plan.min_batch} is more than the workload's {samples:,} training samples: "
                         f"lower it to at most {samples:,}")
    # The grid's curves and the automatic plan's given ones (the plan skipped those, exit 0).
    for b in getattr(plan, "curves", None) or ():
        if b > samples:
            raise InputError(f"--curves {b} is more than the workload's {samples:,} training samples (an epoch "
                             f"would have no step): choose curve batches of at most {samples:,}")


class _BatchTimedOut(Exception):
    """A batch of a timing group had no result within ``--probe-timeout`` of the one before."""


@dataclass
class _Tally:
    ran: int = 0
    failed: int = 0
    skipped_done: int = 0
    skipped_failed: dict[str, int] = field(default_factory=dict)  # of skipped_done: points that failed before, by kind
    failed_kinds: set[str] = field(default_factory=set)  # how this run's failed probes failed
    skipped_oom: int = 0
    skipped_budget: int = 0
    plan_note: str | None = None
    ledger: list[str] = field(default_factory=list)

    def count(self, shown: str, ok: bool) -> None:
        """One probe run; a failed one's line starts with its kind ("crash: IndexError ...")."""
        self.ran += 1
        self.failed += not ok
        if not ok:
            kind = shown.split(":", 1)[0]
            self.failed_kinds.add(kind if kind in RETRY_KINDS else "other")


def run_session(
    workload: str,
    *,
    out: str | os.PathLike[str],
    workers: list[int] | None = None,
    local_batches: list[int] | None = None,
    curves: list[int] | None = None,
    seeds: list[int] | None = None,
    curve_workers: int = 1,
    max_workers: int | None = None,
    min_batch: int = 8,
    max_batch: int = 1024,
    probe: ProbeSettings = ProbeSettings(),
    curve: CurveSettings = CurveSettings(),
    launcher: Launcher | None = None,
    gpu: str | None = None,
    budget_s: float | None = None,
    stream: TextIO | None = None,
    quiet: bool = False,
    question: Mapping[str, Any] | None = None,
    timing_groups: bool = True,
    retry_failed: Iterable[str] | bool = (),
    _workload: Any = None,
    _worker_module: str = "profiler._worker",
) -> SessionSummary:
    """Profile ``workload`` (a ``FILE.py:NAME`` spec) into the profile file ``out``.

    With ``workers`` and ``local_batches`` the timing grid is explicit; otherwise an
    automatic plan (see :mod:`profiler._plan`) is chosen, within ``budget_s`` seconds
    of probing when given. ``curves`` are global batch sizes for learning curves.
    With ``question`` (:class:`cotune.RecommendRequest` fields: ``target``, ``deadline_s``,
    ``prices``, …) the value plan runs instead (:mod:`profiler._value`): after a small seed,
    the measurement cotune's answer to that question names, while it is worth its price.
    Running the same call again continues where an interrupted one stopped.
    ``timing_groups`` (default on): the plan's timing points at one worker count are timed
    in one launch (one start-up for the lot) where the launcher's workers can; ``False``
    starts one launch per point.
    A point that failed before (a ``failure`` record, a curve that ended failed) counts as
    done and is skipped; ``retry_failed`` runs again those of the kinds it names
    (``"crash"``, ``"timeout"``, ``"oom"``; ``True`` is crash and timeout),
    after a fix to the workload or the machine.
    """
    retry = _retry_kinds(retry_failed)
    # The CLI's rule (positive whole numbers) at the Python door: a worker count of 0 failed as
    # the launcher's fault after a start, a local batch of -4 or 8.5 after the workload record
    # was written, a curve batch of 0 as the workload's crash.
    workers, local_batches, curves = (
        None if values is None else [integer(v, where=name, ge=1) for v in values]
        for name, values in (("workers", workers), ("local_batches", local_batches), ("curves", curves)))
    curve_workers = integer(curve_workers, where="curve_workers", ge=1)
    max_workers = None if max_workers is None else integer(max_workers, where="max_workers", ge=1)
    min_batch = integer(min_batch, where="min_batch", ge=1)
    max_batch = integer(max_batch, where="max_batch", ge=1)
    # A seed given twice is one curve, as a batch given twice is one point (the CLI's lists).
    seeds = list(dict.fromkeys(seeds or [0]))
    wild = next((s for s in seeds if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= MAX_SEED), None)
    if wild is not None:  # the CLI's rule: a seed out of range crashed every curve in the worker
        raise InputError(f"seed {excerpt(wild)} is not a whole number from 0 to {MAX_SEED} (2**31 - 1): give seeds in "
                         "that range")
    if not (workers or local_batches) and min_batch > max_batch:
        # The automatic and the value plans' ladder runs min_batch … max_batch: reversed, it
        # was one rung at min_batch, probed and curved as if it were the whole range.
        raise InputError(f"--min-batch {min_batch} is above --max-batch {max_batch}: the plan's ladder runs from "
                         "--min-batch up to --max-batch (default 1024); lower --min-batch or raise --max-batch")
    if _workload is not None:
        loaded = _workload
    else:
        with bounded(probe.timeout_s, f"loading the workload {workload}"):
            loaded = load_workload(workload)
    has_eval = loaded.eval_data is not None
    if curves and not has_eval:
        raise WorkloadError(f"{workload}: learning curves need held-out data: give the Workload an eval_data factory")
    for b in curves or []:
        if b % curve_workers:
            raise InputError(f"curve global batch {b} is not a multiple of --curve-workers {curve_workers}: "
                             "choose batches divisible by it")
    plan: GridPlan | AutoPlan | ValuePlan
    if question is not None:
        if workers or local_batches or curves:
            raise InputError("the value plan chooses its own probes and curves: leave out --workers, --local-batch "
                             "and --curves, or drop --plan value")
        # Its curves also record the gradient noise scale (a few extra gradient norms a step):
        # the evidence the critical-batch law needs at batches beyond the curve's.
        curve = dataclasses.replace(curve, noise=True)
        plan = ValuePlan(question=question, max_workers=max_workers or _default_max_workers(probe.device),
                         min_batch=min_batch, max_batch=max_batch, seed=seeds[0],
                         with_curves=has_eval and curves is None)
    elif workers or local_batches:
        if not (workers and local_batches):
            raise InputError("give both --workers and --local-batch for an explicit grid, or neither for an automatic plan")
        plan = GridPlan(workers=tuple(workers), local_batches=tuple(local_batches), curves=tuple(curves or ()),
                        seeds=tuple(seeds), curve_workers=curve_workers)
    else:
        if max_workers is None:
            max_workers = _default_max_workers(probe.device)
        plan = AutoPlan(max_workers=max_workers, min_batch=min_batch, max_batch=max_batch,
                        curves=tuple(curves) if curves is not None else None, seeds=tuple(seeds),
                        curve_workers=curve_workers, with_curves=bool(curves) or (curves is None and has_eval))
    session = Session(
        workload_spec=workload, out=Path(out), plan=plan, probe=probe, curve=curve,
        launcher=launcher or TorchrunLauncher(), gpu=gpu, budget_s=budget_s, stream=stream, quiet=quiet,
        workload=loaded, worker_module=_worker_module, timing_groups=timing_groups, retry_failed=retry,
    )
    return session.run()


def _retry_kinds(retry_failed: Iterable[str] | bool) -> frozenset[str]:
    """The failure kinds ``retry_failed`` names, checked (``True``: crash and timeout)."""
    if retry_failed is True:
        return DEFAULT_RETRY
    if retry_failed is False:
        return frozenset()
    if isinstance(retry_failed, str):
        retry_failed = [retry_failed]
    kinds = frozenset(str(k).strip().lower() for k in retry_failed)
    unknown = sorted(kinds - set(RETRY_KINDS))
    if unknown:
        raise InputError(f"--retry-failed: unknown failure kind {excerpt(unknown[0])}: name some of "
                         f"{', '.join(RETRY_KINDS)} (bare --retry-failed: crash,timeout)")
    return kinds


def _default_max_workers(device: str) -> int:
    if device != "cpu":
        from profiler._gpu import local_device_count

        count = local_device_count()
        if count:
            return count
    # On CPU every worker competes for the same cores: two show the sync cost.
    return 2 if (os.cpu_count() or 1) >= 2 else 1

