"""Probe overhead (seconds of probing per point) and stability of medians across repeats.

Runs the same timing grid ``--repeats`` times, each into a fresh profile, with real
torchrun probes, and prints per point:

* ``wall_s`` — mean seconds one probe costs end to end (start-up, warm-up, timed and
  no_sync steps, tear-down): what a point of a profiling plan costs — with timing groups
  (the default) the points of one worker count share one launch, the first carrying its
  start-up;
* ``startup_s`` — the part of it that is not stepping (process start, imports,
  rendezvous, model build): the fixed price of a launch;
* ``median_s`` — mean of the repeated median step times, and ``cv`` their
  coefficient of variation (std / mean) and ``max/min`` their ratio: how stable a
  probe's answer is from run to run.

    PYTHONPATH=. python benchmarks/profiler_overhead.py                 # digits CNN, CPU
    PYTHONPATH=. python benchmarks/profiler_overhead.py --launch-per-point   # the comparison
    PYTHONPATH=. python benchmarks/profiler_overhead.py --workload examples/resnet_synthetic.py:workload \\
        --workers 1,2 --local-batch 32,128 --repeats 3

Results are also written as JSON to ``benchmarks/results/profiler_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import profiler  # noqa: E402
from profiler import ProbeSettings  # noqa: E402
from profiler._state import read_state  # noqa: E402


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="examples/digits_cnn.py:workload")
    parser.add_argument("--workers", type=_ints, default=[1, 2])
    parser.add_argument("--local-batch", type=_ints, default=[32, 128])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--precision", type=float, default=0.05)
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/profiler_overhead.json"))
    parser.add_argument("--launch-per-point", action="store_true",
                        help="start a launch for every point (the profiler before timing groups): the comparison")
    args = parser.parse_args(argv)

    settings = ProbeSettings(device=args.device, rel_precision=args.precision)
    runs: dict[tuple[int, int], list[dict]] = {}
    totals: list[float] = []  # seconds of probing for the whole grid, per repeat
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            out = Path(tmp) / f"repeat{r}.jsonl"
            summary = profiler.profile(args.workload, out=out, workers=args.workers, local_batches=args.local_batch,
                                       curves=[], probe=settings, quiet=True,
                                       timing_groups=not args.launch_per_point)
            totals.append(summary.probe_wall_s)
            state = read_state(out)
            costs = [json.loads(ln) for ln in out.read_text().splitlines() if '"probe_cost"' in ln]
            for c in costs:
                key = (c["workers"], c["local_batch"])
                step = state.steps.get((state_gpu(state), key[0], 1, key[1]))
                if step is None:
                    continue
                # Stepping time: warm-up + timed steps at the median + the no_sync half.
                stepping = (settings.warmup_steps + step.timed_steps * 1.5 + 1) * step.step_time_s
                runs.setdefault(key, []).append({
                    "wall_s": c["wall_s"], "median_s": step.step_time_s, "timed_steps": step.timed_steps,
                    "startup_s": max(0.0, c["wall_s"] - stepping), "sync_time_s": step.sync_time_s,
                })
            print(f"repeat {r + 1}/{args.repeats} done ({time.monotonic() - began:.0f}s)", file=sys.stderr)

    rows = []
    mode = "one launch per point" if args.launch_per_point else "one launch per worker count"
    print(f"workload {args.workload}, device {args.device}, {args.repeats} repeats, precision ±{args.precision:.0%}, "
          f"{mode}")
    print(f"{'workers':>7} {'batch':>6} {'wall_s':>7} {'startup_s':>9} {'steps':>6} {'median_s':>10} {'cv':>6} "
          f"{'max/min':>7}")
    for (w, b), items in sorted(runs.items()):
        medians = [i["median_s"] for i in items]
        mean = statistics.fmean(medians)
        cv = statistics.pstdev(medians) / mean if len(medians) > 1 else 0.0
        row = {
            "workers": w, "local_batch": b, "repeats": len(items),
            "wall_s": statistics.fmean(i["wall_s"] for i in items),
            "startup_s": statistics.fmean(i["startup_s"] for i in items),
            "timed_steps": statistics.fmean(i["timed_steps"] for i in items),
            "median_s": mean, "cv": cv, "max_over_min": max(medians) / min(medians), "medians_s": medians,
        }
        rows.append(row)
        print(f"{w:>7} {b:>6} {row['wall_s']:>7.2f} {row['startup_s']:>9.2f} {row['timed_steps']:>6.0f} "
              f"{mean:>10.5f} {cv:>6.1%} {row['max_over_min']:>7.2f}")
    if rows:
        print(f"mean probe overhead: {statistics.fmean(r['wall_s'] for r in rows):.2f} s per point "
              f"({statistics.fmean(r['startup_s'] for r in rows):.2f} s of it start-up); "
              f"median step time cv across repeats: {statistics.fmean(r['cv'] for r in rows):.1%} on average, "
              f"{max(r['cv'] for r in rows):.1%} at worst")
        print(f"the whole grid ({len(rows)} points): {statistics.fmean(totals):.1f} s of probing per repeat")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"workload": args.workload, "device": args.device, "mode": mode,
                                          "grid_wall_s": totals, "rows": rows}, indent=2))
    return 0


def state_gpu(state) -> str:  # noqa: ANN001
    return next(iter(state.steps))[0] if state.steps else "cpu"


if __name__ == "__main__":
    sys.exit(main())
