"""GPU path check: one real profiler run on CUDA with nccl, then a tiny recommend on it.

    python -m benchmarks.gpu_check --out gpu_check.json

On a machine with CUDA it profiles ``examples/digits_cnn.py`` (bundled data, no
download) with 2 processes when there are 2 or more GPUs, else 1: timing probes at two
local batches and one short learning curve, all through torchrun with the ``nccl``
backend (the curve with the gradient-noise hook when 2 processes run), and then asks
``cotune.recommend`` for a plan on the profile it wrote. It prints one line per check
and a final ``PASS`` or ``FAIL``, writes the outcome as JSON to ``--out``, and exits 0
on PASS, 1 on FAIL. It is sized to finish in under 5 minutes (``--deadline``).

Without a CUDA device it fails at once with "no CUDA device". ``--rehearse-on-cpu``
runs the same steps on CPU with ``gloo`` to check the script itself; its outcome is
``rehearsal`` (never ``pass``): it says nothing about the GPU path. CI never runs this.
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = f"{ROOT / 'examples' / 'digits_cnn.py'}:workload"

__all__ = ["main", "Check", "Outcome"]


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    seconds: float


@dataclass
class Outcome:
    status: str = "fail"  # "pass", "fail", or "rehearsal" (the CPU dry run passed)
    reason: str = ""
    device: str = "cuda"
    backend: str = "nccl"
    workers: int = 0
    gpu: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    elapsed_s: float = 0.0
    profile: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class CheckFailed(Exception):
    """A check found something wrong; the message says what and what to do."""


def _timed(outcome: Outcome, name: str, fn: Callable[[], str]) -> bool:
    began = time.monotonic()
    try:
        detail, ok = fn(), True
    except CheckFailed as exc:
        detail, ok = str(exc), False
    except Exception as exc:  # noqa: BLE001 - every failure is reported, none is raised
        detail, ok = f"{type(exc).__name__}: {exc}"[:500], False
    check = Check(name=name, ok=ok, detail=detail, seconds=round(time.monotonic() - began, 2))
    outcome.checks.append(check)
    print(f"  {'ok  ' if ok else 'FAIL'} {name}: {detail} ({check.seconds:.1f}s)", flush=True)
    if not ok and not outcome.reason:
        outcome.reason = f"{name}: {detail}"
    return ok


def _device(outcome: Outcome, *, rehearse: bool, workers: int | None) -> str:
    import torch

    outcome.versions = {"python": platform.python_version(), "torch": torch.__version__,
                        "cuda": str(torch.version.cuda), "nccl": ""}
    if rehearse:
        outcome.device, outcome.backend = "cpu", "gloo"
        outcome.workers = workers or 2
        outcome.gpu = "cpu"
        return f"rehearsal on CPU with gloo, {outcome.workers} processes (not a GPU check)"
    if not torch.cuda.is_available():
        raise CheckFailed("no CUDA device: torch.cuda.is_available() is False (run this on a GPU host with a "
                           "CUDA build of torch)")
    count = torch.cuda.device_count()
    if not torch.distributed.is_nccl_available():
        raise CheckFailed("this torch build has no nccl backend: install a CUDA build of torch")
    outcome.versions["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    outcome.workers = workers or min(2, count)
    if outcome.workers > count:
        raise CheckFailed(f"--workers {outcome.workers} but only {count} CUDA devices")
    from profiler._gpu import local_gpu_name

    outcome.gpu = local_gpu_name()
    return f"{count} CUDA device(s), {torch.cuda.get_device_name(0)}; {outcome.workers} process(es) with nccl"


def _profile(outcome: Outcome, out: Path, *, deadline_s: float) -> str:
    import profiler
    from cotune.profile import read_profile

    n = outcome.workers
    probe = profiler.ProbeSettings(device=outcome.device, warmup_steps=3, min_timed_steps=10, max_timed_steps=60,
                                   max_timed_s=10.0, timeout_s=min(120.0, deadline_s / 3))
    curve = profiler.CurveSettings(max_epochs=4, noise=n > 1, timeout_s=min(150.0, deadline_s / 2))
    summary = profiler.profile(WORKLOAD, out=out, workers=[n], local_batches=[32, 64], curves=[64 * n],
                               curve_workers=n, probe=probe, curve=curve, gpu=outcome.gpu, stream=io.StringIO())
    profile = read_profile(out)
    if profile.failures:
        f = profile.failures[0]
        raise CheckFailed(f"probe w={f.workers} b={f.local_batch} failed ({f.failure}): {f.message}")
    if len(profile.steps) != 2:
        raise CheckFailed(f"expected 2 step records, got {len(profile.steps)}")
    if len(profile.evals) < 2:
        raise CheckFailed(f"the learning curve recorded {len(profile.evals)} epochs; expected at least 2")
    steps = ", ".join(f"b={s.local_batch}: {s.step_time_s * 1e3:.2f} ms/step" for s in profile.steps)
    return (f"{summary.ran} probes; {steps}; curve reached {max(e.metric for e in profile.evals):.3f} "
            f"in {len(profile.evals)} epochs")


def _recommend(outcome: Outcome, out: Path) -> str:
    import cotune
    from cotune.profile import read_profile

    profile = read_profile(out)
    best = max(e.metric for e in profile.evals)
    rec = cotune.recommend(profile, target=round(0.9 * best, 4), max_workers=outcome.workers,
                           gpus_per_host=max(1, outcome.workers))
    if rec.chosen is None:
        raise CheckFailed("no feasible plan on the profile just written: " + "; ".join(rec.relax[:2]))
    c = rec.chosen
    return f"target {0.9 * best:.3f}: {c.workers} × {c.gpu}, local batch {c.local_batch}, ~{c.time_s:.0f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="write the outcome as JSON here")
    parser.add_argument("--workers", type=int, help="processes (default: 2 with 2+ GPUs, else 1)")
    parser.add_argument("--deadline", type=float, default=280.0, metavar="SECONDS",
                        help="time limit for the probes (280: the whole check stays under 5 minutes)")
    parser.add_argument("--keep", type=Path, metavar="PROFILE", help="also keep the profile written, at this path")
    parser.add_argument("--rehearse-on-cpu", action="store_true",
                        help="run the same steps on CPU with gloo to test this script (outcome 'rehearsal')")
    args = parser.parse_args(argv)
    began = time.monotonic()
    outcome = Outcome()
    print(f"GPU path check ({'CPU rehearsal' if args.rehearse_on_cpu else 'CUDA + nccl'})", flush=True)
    with tempfile.TemporaryDirectory(prefix="cotune-gpu-check-") as tmp:
        out = args.keep or Path(tmp) / "gpu_check.jsonl"
        ok = _timed(outcome, "device", lambda: _device(outcome, rehearse=args.rehearse_on_cpu, workers=args.workers))
        ok = ok and _timed(outcome, "profile", lambda: _profile(outcome, out, deadline_s=args.deadline))
        ok = ok and _timed(outcome, "recommend", lambda: _recommend(outcome, out))
        outcome.profile = str(args.keep or "")
    outcome.elapsed_s = round(time.monotonic() - began, 2)
    if ok:
        outcome.status = "rehearsal" if args.rehearse_on_cpu else "pass"
    if ok and outcome.elapsed_s > 300:
        outcome.status, outcome.reason = "fail", f"took {outcome.elapsed_s:.0f} s, over the 5-minute budget"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(outcome.to_dict(), indent=2) + "\n", encoding="utf-8")
    word = {"pass": "PASS", "rehearsal": "REHEARSAL PASSED (CPU, gloo: the GPU path is not checked)"}.get(
        outcome.status, "FAIL")
    tail = f": {outcome.reason}" if outcome.status == "fail" else ""
    print(f"{word}{tail} ({outcome.elapsed_s:.0f} s; outcome in {args.out})", flush=True)
    return 0 if outcome.status in ("pass", "rehearsal") else 1


if __name__ == "__main__":
    sys.exit(main())
