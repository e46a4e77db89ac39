"""Solver latency: enumerate → estimate → solve for 10⁴ … 10⁶ candidates.

The space grows by GPU types, worker counts and local batches. Extra GPU types are
copies of the CIFAR-10/T4 timing probes with step times scaled by a constant factor
(they exist only to make the space large: latency does not depend on the values). The
training set is scaled up (``DATASET_SCALE``) and the deadline with it: every door caps a
local batch's workers at ``dataset_size // local_batch`` (no step holds more samples than
the training set), which on CIFAR-10's 50,000 samples would leave the 10⁶ space at about
a quarter of its size; the scaled copy keeps each epoch's steps, and so the feasibility,
in proportion. Model fitting is reported separately (it happens once per profile, not per query).

    python -m benchmarks.solver_latency
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace

from benchmarks._common import markdown_table
from cotune import fit_models, load_profile, recommend
from cotune.profile import Profile

SIZES = {  # candidates ≈ gpus × workers × local batches
    "1e4": (1, 910, None),
    "1e5": (4, 2273, None),
    "1e6": (8, 1953, 64),
}


DATASET_SCALE = 1000  # 5·10⁷ samples: 2,273 workers × 1,024 fit in one step
DEADLINE_S = 3600.0  # at CIFAR-10's own size; scaled with the training set


def multi_gpu_profile(n_gpus: int) -> Profile:
    base = load_profile("cifar10-resnet18")
    steps = []
    for g in range(n_gpus):
        factor = 1.0 / (1 + 0.5 * g)
        steps += [replace(s, gpu=f"gpu{g}", step_time_s=s.step_time_s * factor) for s in base.steps]
    workload = replace(base.workload, dataset_size=base.workload.dataset_size * DATASET_SCALE)
    return replace(base, workload=workload, steps=tuple(steps))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = []
    for label, (n_gpus, max_workers, n_batches) in SIZES.items():
        profile = multi_gpu_profile(n_gpus)
        t0 = time.perf_counter()
        models = fit_models(profile)
        fit_s = time.perf_counter() - t0
        batches = None
        if n_batches:
            from cotune.solver import geometric_batches

            grid = geometric_batches(32, 1024, per_doubling=13)
            batches = list(grid[:n_batches])
        times, walls = [], []
        for _ in range(args.repeats):
            w0 = time.perf_counter()
            rec = recommend(profile, models=models, target=0.94, deadline_s=DEADLINE_S * DATASET_SCALE, max_workers=max_workers,
                            local_batches=batches, gpus_per_host=8)
            walls.append(time.perf_counter() - w0)
            times.append(rec.solve_time_s)
        results.append({"size": label, "candidates": rec.n_candidates, "fit_s": fit_s,
                        "solve_s_median": statistics.median(times), "recommend_s_median": statistics.median(walls)})
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(markdown_table(
        ["space", "candidates", "enumerate+estimate+solve (median)", "whole recommend() call (median)", "model fit (once)"],
        [[r["size"], f"{r['candidates']:,}", f"{r['solve_s_median'] * 1000:.0f} ms", f"{r['recommend_s_median'] * 1000:.0f} ms",
          f"{r['fit_s']:.2f} s"] for r in results],
    ))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
