"""Does the bounded live log keep up? Its pipe against a plain file, on the same machine.

Since 2026-12-07 a probe's output goes into a pipe that a thread of the profiler drains
into a bounded ``log.txt`` (``profiler._livelog``); before, the workers wrote the file
directly. A pipe that is not drained fast enough would block the workers and slow their
steps. Two A/B measurements, the two ways interleaved repeat by repeat:

* ``throughput`` — one process writes ``--mib`` MiB to its stdout in writes of
  ``--write-bytes``, through ``profiler._launcher.run_group`` (the pipe) and straight into
  a file; reported: the wall time, the seconds the writer spent inside its writes (what a
  worker would feel), and MiB/s.
* ``probe`` — real torchrun timing probes (gloo, CPU) of a small MLP that prints
  ``--print-bytes`` on every rank at every step (``workload`` below), through the
  profiler's launcher and through one that hands torchrun the log file itself; reported:
  each point's median step time per way and their ratio.

    PYTHONPATH=. python benchmarks/live_log.py throughput --mib 1024 --repeats 3
    PYTHONPATH=. python benchmarks/live_log.py probe --print-bytes 0,4096,262144 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import profiler  # noqa: E402
from profiler import LaunchOutcome, LaunchRequest, ProbeSettings, TorchrunLauncher, Workload  # noqa: E402
from profiler._launcher import log_tail, run_group  # noqa: E402
from profiler._state import read_state  # noqa: E402

PRINT_BYTES_ENV = "COTUNE_BENCH_PRINT_BYTES"

# The writer of the throughput test: its last line says how long its writes took.
_WRITER = r"""
import os, sys, time
total, size = int(sys.argv[1]), int(sys.argv[2])
chunk = (b"x" * (size - 1) + b"\n")
spent = 0.0
for _ in range(total // size):
    began = time.perf_counter()
    view = memoryview(chunk)
    while view:
        view = view[os.write(1, view):]
    spent += time.perf_counter() - began
os.write(1, f"\nwrite_s={spent:.6f}\n".encode())
"""


def _written_s(tail: str) -> float:
    return float(tail.rsplit("write_s=", 1)[1].split()[0])


def _cpu_s() -> float:
    """CPU seconds of this process so far (in the pipe way: the reader thread's, nearly all)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _through_pipe(command: list[str], log: Path) -> tuple[float, float, float]:
    began, cpu = time.monotonic(), _cpu_s()
    outcome = run_group(command, env=dict(os.environ), timeout_s=600, log_path=log, poll=None)
    assert outcome.returncode == 0, outcome.log_tail
    return time.monotonic() - began, _written_s(outcome.log_tail), _cpu_s() - cpu


def _into_file(command: list[str], log: Path) -> tuple[float, float, float]:
    began, cpu = time.monotonic(), _cpu_s()
    with open(log, "ab") as fh:
        subprocess.run(command, stdout=fh, stderr=subprocess.STDOUT, check=True, timeout=600)
    return time.monotonic() - began, _written_s(log_tail(log)), _cpu_s() - cpu


def throughput(args: argparse.Namespace) -> None:
    command = [sys.executable, "-c", _WRITER, str(args.mib * 2**20), str(args.write_bytes)]
    ways: dict[str, Callable[[list[str], Path], tuple[float, float, float]]] = {"pipe": _through_pipe,
                                                                                 "file": _into_file}
    seen: dict[str, list[tuple[float, float, float]]] = {way: [] for way in ways}
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for r in range(args.repeats):
            for way, run in ways.items():
                log = Path(tmp) / f"{way}{r}" / "log.txt"
                log.parent.mkdir()
                seen[way].append(run(command, log))
                size = sum(p.stat().st_size for p in log.parent.iterdir())
                print(f"repeat {r + 1} {way}: {seen[way][-1][0]:.2f} s wall, log {size / 2**20:.1f} MiB on disk",
                      file=sys.stderr)
                for p in log.parent.iterdir():
                    p.unlink()
    print(f"{args.mib} MiB in writes of {args.write_bytes} B, {args.repeats} repeats (medians)")
    print("wall_s: the whole run; write_s: the writer's own time inside its writes (a worker would feel it); "
          "profiler_cpu_s: this process's CPU time (the pipe's reader)")
    print(f"{'way':>5} {'wall_s':>8} {'write_s':>8} {'MiB/s':>8} {'profiler_cpu_s':>14} {'cpu_s/GiB':>9}")
    for way, runs in seen.items():
        wall = statistics.median(r[0] for r in runs)
        write = statistics.median(r[1] for r in runs)
        cpu = statistics.median(r[2] for r in runs)
        print(f"{way:>5} {wall:>8.2f} {write:>8.2f} {args.mib / wall:>8.0f} {cpu:>14.2f} {cpu * 1024 / args.mib:>9.2f}")


# ----------------------------------------------------------------- probes


def _data():
    import torch
    from torch.utils.data import TensorDataset

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4096, 256, generator=gen)
    return TensorDataset(x, (x[:, 0] > 0).long())


def _printing_model():
    """The MLP, printing $COTUNE_BENCH_PRINT_BYTES (one line) at every forward pass."""
    import torch
    from torch import nn

    line = b"x" * max(0, int(os.environ.get(PRINT_BYTES_ENV, "0")) - 1) + b"\n"

    class Printing(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                                     nn.Linear(1024, 2))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if len(line) > 1:
                sys.stdout.buffer.write(line)
                sys.stdout.buffer.flush()
            return self.net(x)

    return Printing()


def _sgd(params, *, lr):  # noqa: ANN001
    import torch

    return torch.optim.SGD(params, lr=lr)


def _loss():
    from torch import nn

    return nn.CrossEntropyLoss()


workload = Workload(name="printing-mlp", model=_printing_model, train_data=_data, loss=_loss, optimizer=_sgd,
                    base_lr=0.01, base_batch=64, dataset_size=4096, metric="accuracy", goal="max")


@dataclass(frozen=True)
class FileLauncher(TorchrunLauncher):
    """torchrun with the log file as its stdout: how the profiler launched before the live log
    (without its poll calls and storage checks, which a timing probe here does not need)."""

    def launch(self, request: LaunchRequest, *, poll=None) -> LaunchOutcome:  # noqa: ANN001
        began = time.monotonic()
        request.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(request.log_path, "ab") as log:
            proc = subprocess.Popen(self.command(request), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, env=self.environment(request), start_new_session=True)
            try:
                proc.wait(timeout=request.timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        return LaunchOutcome(returncode=proc.returncode, timed_out=False, wall_s=time.monotonic() - began,
                             log_tail=log_tail(request.log_path))


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v]


def probe(args: argparse.Namespace) -> None:
    settings = ProbeSettings(device="cpu", rel_precision=0.02)
    launchers = {"pipe": TorchrunLauncher(), "file": FileLauncher()}
    medians: dict[tuple[int, str, int, int], list[float]] = {}
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for r in range(args.repeats):
            for print_bytes in args.print_bytes:
                os.environ[PRINT_BYTES_ENV] = str(print_bytes)
                for way, launcher in launchers.items():
                    out = Path(tmp) / f"{way}-{print_bytes}-{r}.jsonl"
                    profiler.profile(f"{Path(__file__).resolve()}:workload", out=out, workers=args.workers,
                                     local_batches=args.local_batch, curves=[], probe=settings, quiet=True,
                                     launcher=launcher, gpu="cpu")
                    for (_, workers, _, batch), step in read_state(out).steps.items():
                        medians.setdefault((print_bytes, way, workers, batch), []).append(step.step_time_s)
                    print(f"repeat {r + 1}, {print_bytes} B a step, {way}: done", file=sys.stderr)
    print(f"median step time (s), {args.repeats} repeats, pipe (the live log) and file (before) run back to back "
          "in each; pipe/file: the median and range of the repeats' own ratios (0 B printed: the machine's noise)")
    print(f"{'print_B':>8} {'workers':>7} {'batch':>6} {'pipe_s':>9} {'file_s':>9} {'pipe/file':>9} {'range':>13}")
    for print_bytes in args.print_bytes:
        for workers in args.workers:
            for batch in args.local_batch:
                pipe = medians.get((print_bytes, "pipe", workers, batch), [])
                file = medians.get((print_bytes, "file", workers, batch), [])
                ratios = [p / f for p, f in zip(pipe, file)]
                if not ratios:
                    continue
                print(f"{print_bytes:>8} {workers:>7} {batch:>6} {statistics.median(pipe):>9.5f} "
                      f"{statistics.median(file):>9.5f} {statistics.median(ratios):>9.3f} "
                      f"{min(ratios):>6.3f}-{max(ratios):.3f}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("throughput", help="one writer, pipe against file")
    one.add_argument("--mib", type=int, default=1024)
    one.add_argument("--write-bytes", type=int, default=4096)
    two = sub.add_parser("probe", help="torchrun timing probes of a printing workload, pipe against file")
    two.add_argument("--print-bytes", type=_ints, default=[0, 4096, 262144])
    two.add_argument("--workers", type=_ints, default=[1, 2])
    two.add_argument("--local-batch", type=_ints, default=[64])
    for p in (one, two):
        p.add_argument("--repeats", type=int, default=3)
        p.add_argument("--tmp", default=None, help="where the logs go (default: the machine's temp dir)")
    args = parser.parse_args(argv)
    (throughput if args.what == "throughput" else probe)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
