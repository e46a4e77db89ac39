"""Helpers shared by the profiler tests (imported by file name, not as a package)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from profiler import LaunchOutcome, LaunchRequest

WORKLOADS = Path(__file__).resolve().parent / "workloads.py"

# Few, short steps: the tests check that probes measure and record, not precision.
FAST = ["--device", "cpu", "--warmup-steps", "2", "--min-steps", "5", "--max-steps", "15",
        "--max-probe-time", "3s", "--quiet"]


def spec(name: str) -> str:
    return f"{WORKLOADS}:{name}"


def lines(path: Path) -> list[dict]:
    """Every complete JSON line of a profile file."""
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def of(path: Path, kind: str) -> list[dict]:
    return [d for d in lines(path) if d["record"] == kind]


def processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line contains ``text`` (to prove no probe process outlived its probe)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{entry}/stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        if text in cmd and state != "Z":
            pids.append(int(entry))
    return pids


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    from profiler.cli import main

    code = main(argv)
    return code, capsys.readouterr().err


@dataclass
class FormulaLauncher:
    """A launcher that answers probes from formulas, with no processes: out of memory at
    and above ``oom_at`` (local batch), step time and sync time from :meth:`step_time`,
    learning curves (one evaluation per epoch) from :meth:`metric`. It also shows the seam
    a Kubernetes launcher plugs into: start the workers of a request, let them write
    ``rank<N>.json``."""

    wall_s: float = 10.0
    oom_at: int = 10**9
    calls: list = field(default_factory=list)
    tasks: list = field(default_factory=list)  # every task as the session wrote it
    # Answer a timing task's further local batches in the same launch, as the torch worker
    # does: each batch's result in its own folder, the first failure ends the launch.
    timing_groups: bool = False
    crash_at: int | None = None  # a crash (not an out-of-memory) at exactly this local batch

    @property
    def hosts(self) -> int:
        return 1

    def step_time(self, local_batch: int, workers: int) -> tuple[float, float]:
        raise NotImplementedError

    def metric(self, epoch: int, global_batch: int) -> float:
        raise NotImplementedError

    def launch(self, request: LaunchRequest, *, poll=None) -> LaunchOutcome:
        task = json.loads(Path(request.args[0]).read_text())
        results = Path(task["result_dir"])
        b, w = task["local_batch"], request.workers
        self.calls.append((task["kind"], w, b))
        self.tasks.append(task)
        if task["kind"] == "timing" and task.get("more_local_batches"):
            return self._launch_group(task, results, w, poll)
        if b >= self.oom_at:
            (results / "rank0.json").write_text(json.dumps({"rank": 0, "status": "oom", "message": "fake OOM"}))
            return LaunchOutcome(returncode=3, timed_out=False, wall_s=self.wall_s)
        if b == self.crash_at:
            (results / "rank0.json").write_text(json.dumps({"rank": 0, "status": "crash", "message": "fake crash"}))
            return LaunchOutcome(returncode=1, timed_out=False, wall_s=self.wall_s)
        if task["kind"] == "timing":
            result = self._timing(b, w)
        else:
            with Path(task["progress_path"]).open("a") as fh:
                for k in range(1, task["max_epochs"] + 1):
                    fh.write(json.dumps({"epoch_index": k, "epoch": float(k), "metric": self.metric(k, b * w)}) + "\n")
            result = {"rank": 0, "status": "ok", "reason": "max_epochs", "epochs": task["max_epochs"]}
        (results / "rank0.json").write_text(json.dumps(result))
        return LaunchOutcome(returncode=0, timed_out=False, wall_s=self.wall_s)

    def _timing(self, b: int, w: int) -> dict:
        step, sync = self.step_time(b, w)
        return {"rank": 0, "status": "ok", "step_time_s": step, "step_time_spread_s": 0.0,
                "timed_steps": 10, "peak_memory_bytes": 1e6 * b, "sync_time_s": sync}

    def _launch_group(self, task: dict, results: Path, w: int, poll) -> LaunchOutcome:
        for i, b in enumerate([task["local_batch"], *task["more_local_batches"]]):
            failure = "oom" if b >= self.oom_at else "crash" if b == self.crash_at else None
            if failure:
                (results / "rank0.json").write_text(json.dumps({"rank": 0, "status": failure, "message": f"fake {failure}"}))
                return LaunchOutcome(returncode=3 if failure == "oom" else 1, timed_out=False, wall_s=self.wall_s)
            folder = results / f"batch-{i:03d}"
            folder.mkdir()
            result = self._timing(b, w)
            for rank in range(w):  # every rank writes its own, as the torch worker's do
                (folder / f"rank{rank}.json").write_text(json.dumps({**result, "rank": rank}))
            if poll is not None:
                poll()  # the session sees each batch while the launch runs
        (results / "rank0.json").write_text(json.dumps(result))
        return LaunchOutcome(returncode=0, timed_out=False, wall_s=self.wall_s)
