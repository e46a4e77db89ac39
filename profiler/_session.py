"""A profiling session: run the plan's probes and append their records to the profile.

The session is the only writer of the profile. For each point it prepares a task
file, lets the launcher start the workers, turns their ``rank<N>.json`` results into
records (a ``step`` record, or a ``failure`` record for an out-of-memory, a crash or
a time-out) and moves on. Learning-curve epochs are copied into the profile while the
curve trains, so a kill loses at most the epoch being copied.

Scratch files (task files, logs, curve checkpoints) live next to the profile in
``<out>.cotune/``; failed probes keep their log there for inspection.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

from cotune.errors import InputError
from cotune.profile import EvalRecord, FailureRecord, NoiseRecord, ProfileWriter, StepRecord, WorkloadRecord
from cotune.units import format_duration
from profiler._launcher import Launcher, LaunchOutcome, LaunchRequest, TorchrunLauncher
from profiler._plan import AutoPlan, CurvePoint, GridPlan, Point, TimingPoint
from profiler._progress import Progress
from profiler._stats import summarize
from profiler._state import CurveDoneRecord, ProbeCostRecord, ProfileState, read_state
from profiler._workload import Workload, WorkloadError, load_workload

__all__ = ["ProbeSettings", "CurveSettings", "SessionSummary", "Session", "run_session"]


@dataclass(frozen=True)
class ProbeSettings:
    """How one timing probe measures.

    Timed steps continue in chunks until the median's ~95 % interval is within
    ``rel_precision`` of it, or ``max_timed_steps`` / ``max_timed_s`` is reached.
    ``cpu_threads`` is the intra-op threads of each worker on CPU (0: share the cores).
    """

    warmup_steps: int = 5
    min_timed_steps: int = 10
    max_timed_steps: int = 200
    max_timed_s: float = 30.0
    rel_precision: float = 0.05
    measure_sync: bool = True
    timeout_s: float = 300.0
    device: str = "auto"
    loader_workers: int = 0
    cpu_threads: int = 1
    seed: int = 0


@dataclass(frozen=True)
class CurveSettings:
    """How learning curves train: epoch limit, target (optional), gradient noise."""

    max_epochs: int = 20
    target: float | None = None
    noise: bool = False
    timeout_s: float = 3600.0
    checkpoint: bool = True


@dataclass(frozen=True)
class SessionSummary:
    """What a session did; ``probe_*`` include earlier runs on the same profile."""

    out: str
    gpu: str
    ran: int
    failed: int
    skipped_done: int
    skipped_oom: int
    skipped_budget: int
    records_written: int
    session_wall_s: float
    probe_wall_s: float
    probe_worker_s: float

    @property
    def probe_worker_hours(self) -> float:
        return self.probe_worker_s / 3600.0

    def describe(self) -> str:
        parts = [
            f"{self.out}: {self.ran} probes run ({self.failed} failed), {self.records_written} records written",
            f"{self.skipped_done} already in the profile",
        ]
        if self.skipped_oom:
            parts.append(f"{self.skipped_oom} skipped above an out-of-memory batch")
        if self.skipped_budget:
            parts.append(f"{self.skipped_budget} left out by --budget")
        cost = (
            f"probe cost so far: {self.probe_worker_hours:.4f} worker-hours "
            f"({format_duration(self.probe_wall_s)} of probing)"
        )
        return "; ".join(parts) + "\n" + cost


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]+", "-", text).strip("-").lower() or "workload"


def merge_rank_results(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Rank 0's result; for workers that report only raw per-rank times (TensorFlow),
    the per-step maximum over ranks is summarised here instead."""
    oks = [r for r in results if r.get("status") == "ok"]
    # On the other hosts of a multi-host probe rank 0's file is elsewhere; torch timing
    # results are identical on every rank (all ranks gather all times), so any will do.
    rank0 = next((r for r in oks if r.get("rank") == 0), None) or next((r for r in oks if "step_time_s" in r), None)
    if rank0 is None or "raw_times" not in rank0:
        return rank0
    n = min(len(r["raw_times"]) for r in oks)
    per_step = [max(r["raw_times"][i] for r in oks) for i in range(n)]
    summary = summarize(per_step)
    merged = {**rank0, "step_time_s": summary.median_s, "step_time_spread_s": summary.spread_s,
              "timed_steps": summary.n, "peak_memory_bytes": max(r["peak_memory_bytes"] for r in oks)}
    m = min(len(r.get("raw_nosync", [])) for r in oks)
    if m:
        compute = summarize([max(r["raw_nosync"][i] for r in oks) for i in range(m)]).median_s
        merged["sync_time_s"] = min(summary.median_s, max(0.0, summary.median_s - compute))
    return merged


def _root_cause(outcome: LaunchOutcome) -> str:
    """One line on why the launch failed, from torchrun's failure report if present."""
    lines = [ln.strip() for ln in outcome.log_tail.splitlines() if ln.strip() and not set(ln.strip()) <= set("=-")]
    cause = next((i for i, ln in enumerate(lines) if ln.startswith("Root Cause")), None)
    if cause is not None:
        code = next((ln for ln in lines[cause:] if ln.startswith("exitcode")), None)
        if code is not None:
            return "a worker " + " ".join(code.split())
    return f"exit code {outcome.returncode}: {(lines or ['no output'])[-1][:300]}"


@dataclass
class _Estimator:
    """Rough cost of the next point, for the budget and the time-left display."""

    timing_walls: list[float] = field(default_factory=list)
    curve_epoch_s: list[float] = field(default_factory=list)
    default_timing_s: float = 8.0

    def timing_s(self) -> float:
        if not self.timing_walls:
            return self.default_timing_s
        return sorted(self.timing_walls)[len(self.timing_walls) // 2]

    def curve_s(self, point: CurvePoint, state: ProfileState, *, gpu: str, hosts: int, dataset_size: int,
                max_epochs: int) -> float:
        done = len(state.evals.get((point.global_batch, point.seed), []))
        epochs = max(0, max_epochs - done)
        step = state.steps.get((gpu, point.workers, hosts, point.local_batch))
        if step is not None:
            per_epoch = dataset_size / point.global_batch * step.step_time_s * 1.3
        elif self.curve_epoch_s:
            per_epoch = sorted(self.curve_epoch_s)[len(self.curve_epoch_s) // 2]
        else:
            per_epoch = 2.0
        return self.timing_s() * 0.6 + epochs * per_epoch


class Session:
    """One run of ``cotune profile``: see :func:`run_session` for the arguments."""

    def __init__(
        self,
        *,
        workload_spec: str,
        out: Path,
        plan: GridPlan | AutoPlan,
        probe: ProbeSettings,
        curve: CurveSettings,
        launcher: Launcher,
        gpu: str | None,
        budget_s: float | None,
        stream: TextIO | None,
        quiet: bool,
        workload: Any = None,
        worker_module: str = "profiler._worker",
    ) -> None:
        self.spec = workload_spec
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
        self.gpu = (gpu or self._detect_gpu()).lower()
        # Resolved, so two spellings of one --out (a symlink, a relative path) share the
        # scratch folder that the profile's lock protects.
        resolved = self.out.resolve()
        self.scratch = resolved.with_name(resolved.name + ".cotune")
        # Task folders of this run only: a folder of its own per run, so no other run
        # (an earlier killed one, say) can remove or overwrite a probe's files.
        self.run_dir = self.scratch / f"run-{os.getpid()}-{time.time_ns()}"
        self.progress = Progress(total=plan.size_hint(), stream=stream, quiet=quiet)
        self.estimator = _Estimator()
        # Read once the profile's lock is held (in run): another writer may still be appending.
        self.state = ProfileState()
        self.writer = ProfileWriter(self.out)
        self.records_written = 0

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

    def _workload_record(self) -> WorkloadRecord:
        size = self.workload.count_samples()
        return WorkloadRecord(
            name=self.workload.name, dataset_size=int(size), metric=self.workload.metric,
            goal=self.workload.goal, source=f"cotune profile {self.spec}",
        )

    def _check_or_write_workload(self) -> None:
        mine = self._workload_record()
        have = self.state.workload
        if have is None:
            self._write(mine)
            return
        if (have.name, have.dataset_size) != (mine.name, mine.dataset_size):
            raise InputError(
                f"{self.out} holds workload {have.name!r} ({have.dataset_size} samples), not {mine.name!r} "
                f"({mine.dataset_size} samples): choose another --out, or delete the file to start over"
            )

    # ----------------------------------------------------------------- budget

    def _remaining_budget_s(self) -> float | None:
        if self.budget_s is None:
            return None
        return self.budget_s - self.state.probe_wall_s

    def _estimate(self, point: Point) -> float:
        if isinstance(point, TimingPoint):
            return self.estimator.timing_s()
        return self.estimator.curve_s(point, self.state, gpu=self.gpu, hosts=self.launcher.hosts,
                                      dataset_size=self.state.workload.dataset_size if self.state.workload else 1,
                                      max_epochs=self.curve.max_epochs)

    def _remaining_s(self) -> float:
        left = max(0, self.progress.total - self.progress.done)
        return left * self.estimator.timing_s()

    # ----------------------------------------------------------------- probes

    def _task_dir(self, name: str) -> Path:
        path = self.run_dir / name
        if path.exists():
            shutil.rmtree(path)
        (path / "results").mkdir(parents=True)
        return path

    def _launch(self, *, task: dict[str, Any], name: str, workers: int, timeout_s: float,
                poll: Callable[[], None] | None) -> tuple[LaunchOutcome, list[dict[str, Any]], Path]:
        folder = self._task_dir(name)
        task = {**task, "workload": self.spec, "result_dir": str(folder / "results"), "device": self.probe.device,
                "loader_workers": self.probe.loader_workers, "cpu_threads": self.probe.cpu_threads}
        task_path = folder / "task.json"
        task_path.write_text(json.dumps(task), encoding="utf-8")

        def tick() -> None:
            self.progress.tick()
            if poll is not None:
                poll()

        request = LaunchRequest(
            workers=workers, module=self.worker_module, args=(str(task_path),),
            run_id=f"cotune-{_slug(self.workload.name)}-{name}", timeout_s=timeout_s, log_path=folder / "log.txt",
            env=(("COTUNE_CPU_THREADS", str(self.probe.cpu_threads)),),
        )
        outcome = self.launcher.launch(request, poll=tick)
        results = []
        for path in sorted((folder / "results").glob("rank*.json")):
            try:
                results.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, json.JSONDecodeError):
                continue  # a rank killed while writing: the others (or the exit code) tell
        return outcome, results, folder

    def _classify(
        self, outcome: LaunchOutcome, results: list[dict[str, Any]], *, timeout_s: float, log: Path, workers: int,
        option: str = "--probe-timeout",
    ) -> tuple[str, str, dict[str, Any] | None]:
        """``(failure kind or "ok", message, rank-0 result)`` of one launch."""
        by_status = {r.get("status"): r for r in results}
        if "oom" in by_status:
            return "oom", by_status["oom"].get("message", "out of memory"), None
        if "crash" in by_status:
            return "crash", by_status["crash"].get("message", "crashed"), None
        if outcome.timed_out:
            return "timeout", f"no result within {timeout_s:g}s: raise {option}, or see {log}", None
        ok = merge_rank_results(results)
        if ok is not None and (outcome.returncode == 0 or len(results) == workers):
            # Every rank reported success: a non-zero exit after that is teardown noise.
            return "ok", "", ok
        if "exitcode  : -9" in outcome.log_tail or "Signals.SIGKILL" in outcome.log_tail:
            # A worker killed by SIGKILL that we did not send: the kernel's OOM killer.
            return "oom", "a worker was killed by SIGKILL (the kernel's out-of-memory killer, most likely)", None
        return "crash", f"{_root_cause(outcome)} (full log: {log})", None

    def _keep_log(self, folder: Path, name: str) -> Path:
        """Copy a failed probe's log (and the workers' tracebacks) to ``logs/``."""
        logs = self.scratch / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        kept = logs / f"{name}.log"
        with open(kept, "ab") as dst:
            if (folder / "log.txt").exists():  # a replacement launcher may keep logs elsewhere
                with open(folder / "log.txt", "rb") as src:
                    shutil.copyfileobj(src, dst)
            for path in sorted((folder / "results").glob("rank*.json")):
                with open(path, "rb") as src:
                    tb = json.loads(src.read()).get("traceback")
                if tb:
                    dst.write(f"\n--- {path.stem} traceback ---\n{tb}".encode())
        return kept

    def run_timing(self, point: TimingPoint) -> tuple[str, bool]:
        hosts = self.launcher.hosts
        p = self.probe
        name = f"t-w{point.workers}-b{point.local_batch}"
        task = {
            "kind": "timing", "local_batch": point.local_batch, "warmup_steps": p.warmup_steps,
            "min_timed_steps": p.min_timed_steps, "max_timed_steps": p.max_timed_steps,
            "max_timed_s": p.max_timed_s, "rel_precision": p.rel_precision, "measure_sync": p.measure_sync,
            "seed": p.seed,
        }
        outcome, results, folder = self._launch(task=task, name=name, workers=point.workers,
                                                timeout_s=p.timeout_s, poll=None)
        kind, message, ok = self._classify(outcome, results, timeout_s=p.timeout_s, log=folder / "log.txt",
                                           workers=point.workers)
        if ok is not None:
            sync = ok.get("sync_time_s")
            self._write(StepRecord(
                gpu=self.gpu, workers=point.workers, local_batch=point.local_batch,
                step_time_s=float(ok["step_time_s"]), hosts=hosts,
                sync_time_s=None if sync is None else float(sync),
                peak_memory_bytes=float(ok["peak_memory_bytes"]),
                step_time_spread_s=float(ok["step_time_spread_s"]), timed_steps=int(ok["timed_steps"]),
            ))
            self.estimator.timing_walls.append(outcome.wall_s)
            shown = f"{ok['step_time_s']:.4g} s/step"
        else:
            kept = self._keep_log(folder, name)
            if kind == "crash" and str(kept) not in message:
                message = f"{message} (log: {kept})"
            self._write(FailureRecord(gpu=self.gpu, workers=point.workers, local_batch=point.local_batch,
                                      failure=kind, hosts=hosts, message=message[:500]))
            shown = f"{kind}: {message[:120]}"
        self._write(ProbeCostRecord(probe="timing", gpu=self.gpu, workers=point.workers, hosts=hosts,
                                    local_batch=point.local_batch, wall_s=outcome.wall_s,
                                    outcome="ok" if ok is not None else kind))
        shutil.rmtree(folder, ignore_errors=True)
        return shown, ok is not None

    def _copy_progress(self, point: CurvePoint, path: Path, offset: int) -> int:
        """Append eval (and noise) records for epochs the profile lacks; new byte offset."""
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
            line = json.loads(raw)
            if int(line["epoch_index"]) <= have:
                continue  # already in the profile (a resumed curve replays from its checkpoint)
            metric = float(line["metric"])
            self._write(EvalRecord(global_batch=point.global_batch, epoch=float(line["epoch"]),
                                   metric=metric, seed=point.seed))
            have += 1
            if line.get("b_noise") is not None:
                self._write(NoiseRecord(b_noise=float(line["b_noise"]), global_batch=point.global_batch,
                                        epoch=float(line["epoch"])))
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
        self.scratch.mkdir(parents=True, exist_ok=True)
        # Epochs a killed session left in the progress file but had not copied yet.
        self._copy_progress(point, progress, 0)
        progress.unlink(missing_ok=True)
        have = len(self.state.evals.get((point.global_batch, point.seed), []))
        if self._target_reached(point) or have >= self.curve.max_epochs:
            reason = "target" if self._target_reached(point) else "max_epochs"
            self._write(CurveDoneRecord(global_batch=point.global_batch, seed=point.seed, workers=point.workers,
                                        epochs=have, reason=reason))
            ckpt.unlink(missing_ok=True)
            return f"already complete ({reason})", True
        timeout_s = self.curve.timeout_s
        by_budget = budget_left_s is not None and budget_left_s < timeout_s
        if by_budget:
            timeout_s = max(1.0, budget_left_s)
        task = {
            "kind": "curve", "local_batch": point.local_batch, "seed": point.seed,
            "max_epochs": self.curve.max_epochs, "target": self.curve.target, "noise": self.curve.noise,
            "progress_path": str(progress), "checkpoint_path": str(ckpt) if self.curve.checkpoint else None,
        }
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
        kind, message, ok = self._classify(outcome, results, timeout_s=timeout_s, log=folder / "log.txt",
                                           workers=point.workers, option="--curve-timeout")
        if ok is not None:
            reason = str(ok.get("reason", "max_epochs"))
            shown = f"{epochs} epochs, {reason}"
        elif kind == "timeout" and by_budget:
            reason = "budget"
            shown = f"stopped by --budget after {epochs} epochs; run again with a larger --budget to continue"
        else:
            reason = kind
            kept = self._keep_log(folder, key)
            message = f"{message} (log: {kept})"
            if kind == "oom":  # an out-of-memory is a fact about this (workers, local batch)
                self._write(FailureRecord(gpu=self.gpu, workers=point.workers, local_batch=point.local_batch,
                                          failure="oom", hosts=self.launcher.hosts, message=message[:500]))
            shown = f"{kind}: {message[:120]}"
        if reason != "budget":
            self._write(CurveDoneRecord(global_batch=point.global_batch, seed=point.seed, workers=point.workers,
                                        epochs=epochs, reason=reason, message=message[:500] if ok is None else ""))
            ckpt.unlink(missing_ok=True)
            progress.unlink(missing_ok=True)
        self._write(ProbeCostRecord(probe="curve", gpu=self.gpu, workers=point.workers, hosts=self.launcher.hosts,
                                    local_batch=point.local_batch, wall_s=outcome.wall_s,
                                    outcome="ok" if ok is not None else reason))
        shutil.rmtree(folder, ignore_errors=True)
        return shown, ok is not None or reason == "budget"

    # ----------------------------------------------------------------- loop

    def _skip_reason(self, point: Point) -> str | None:
        hosts = self.launcher.hosts
        if point.workers % hosts:
            return "workers"
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

    def _remove_stale_runs(self) -> None:
        """Task folders of earlier runs of this profile: their runs are dead (we hold the lock)."""
        if self.scratch.is_dir():
            for old in self.scratch.glob("run-*"):
                if old != self.run_dir:
                    shutil.rmtree(old, ignore_errors=True)

    def run(self) -> SessionSummary:
        began = time.monotonic()
        ran = failed = skipped_done = skipped_oom = skipped_budget = 0
        seen: set[Point] = set()
        with self.writer:  # the exclusive lock: a second run on this --out stops here
            self.state = read_state(self.out)
            self._remove_stale_runs()
            self._check_or_write_workload()
            for point in self.plan.points(self.state, gpu=self.gpu, hosts=self.launcher.hosts):
                if point in seen:
                    continue
                seen.add(point)
                reason = self._skip_reason(point)
                if reason is not None:
                    self.progress.grow(-1)
                    if reason == "done":
                        skipped_done += 1
                    elif reason == "oom":
                        skipped_oom += 1
                        self.progress.note(f"skip {point.label}: at or above the out-of-memory local batch "
                                           f"{self.state.oom_bound(self.gpu)}")
                    else:
                        self.progress.note(f"skip {point.label}: {point.workers} workers do not spread over "
                                           f"{self.launcher.hosts} hosts")
                    continue
                left = self._remaining_budget_s()
                if left is not None and self._estimate(point) > left and not (
                    isinstance(point, CurvePoint) and left > self.estimator.timing_s()
                ):
                    # Curves may start on a partial budget (they stop at it and resume
                    # later); a timing probe that cannot finish is not started.
                    skipped_budget += 1
                    self.progress.grow(-1)
                    continue
                self.progress.start(point.label, remaining_s=self._remaining_s())
                if isinstance(point, TimingPoint):
                    shown, ok = self.run_timing(point)
                else:
                    shown, ok = self.run_curve(point, budget_left_s=left)
                ran += 1
                failed += not ok
                self.progress.finish(point.label, shown, remaining_s=self._remaining_s() - self.estimator.timing_s())
            shutil.rmtree(self.run_dir, ignore_errors=True)
        if skipped_budget:
            self.progress.note(f"--budget: {skipped_budget} planned probes did not fit; raise --budget to run them")
        return SessionSummary(
            out=str(self.out), gpu=self.gpu, ran=ran, failed=failed, skipped_done=skipped_done,
            skipped_oom=skipped_oom, skipped_budget=skipped_budget, records_written=self.records_written,
            session_wall_s=time.monotonic() - began, probe_wall_s=self.state.probe_wall_s,
            probe_worker_s=self.state.probe_worker_s,
        )


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
    _workload: Any = None,
    _worker_module: str = "profiler._worker",
) -> SessionSummary:
    """Profile ``workload`` (a ``FILE.py:NAME`` spec) into the profile file ``out``.

    With ``workers`` and ``local_batches`` the timing grid is explicit; otherwise an
    automatic plan (see :mod:`profiler._plan`) is chosen, within ``budget_s`` seconds
    of probing when given. ``curves`` are global batch sizes for learning curves.
    Running the same call again continues where an interrupted one stopped.
    """
    seeds = list(seeds or [0])
    loaded = _workload if _workload is not None else load_workload(workload)
    has_eval = loaded.eval_data is not None
    if curves and not has_eval:
        raise WorkloadError(f"{workload}: learning curves need held-out data: give the Workload an eval_data factory")
    for b in curves or []:
        if b % curve_workers:
            raise InputError(f"curve global batch {b} is not a multiple of --curve-workers {curve_workers}: "
                             "choose batches divisible by it")
    plan: GridPlan | AutoPlan
    if workers or local_batches:
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
        workload=loaded, worker_module=_worker_module,
    )
    return session.run()


def _default_max_workers(device: str) -> int:
    if device != "cpu":
        from profiler._gpu import local_device_count

        count = local_device_count()
        if count:
            return count
    # On CPU every worker competes for the same cores: two show the sync cost.
    return 2 if (os.cpu_count() or 1) >= 2 else 1

