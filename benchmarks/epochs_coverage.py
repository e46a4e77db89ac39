"""Where the 90 % epochs-to-target interval covers, and where it does not: by workload and distance.

``python -m benchmarks`` reports one coverage number per setting (``coverage_epochs_90``:
held-out measured batches whose true curve reaches the target). This breaks it down:
per workload and per distance (doublings of global batch from the nearest measured one),
with the median |log error| of the median forecast and the median predicted σ, so an
interval that is too wide (coverage near 100 %, errors far below σ) or too narrow (one
workload's off-recipe batch) shows where it comes from::

    python -m benchmarks.epochs_coverage                      # one-curve and free-curves, every trace
    python -m benchmarks.epochs_coverage --settings one-curve --workloads cifar10-t4

The models are the library's (``cotune.fit_models``) on the setting's evidence after the
seed probes; accuracy does not depend on which step-time probes were bought. Each
(workload, setting, target) counts once, as the benchmark's coverage does.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from typing import Iterable

import numpy as np

__all__ = ["coverage_rows", "group", "main"]

SETTINGS = ("one-curve", "free-curves")


def coverage_rows(workload: str, settings: Iterable[str] = SETTINGS) -> list[dict]:
    """One row per held-out batch whose true curve reaches the target: the interval's hit,
    the log error of the median, the predicted σ and the distance in doublings."""
    from benchmarks.policies import library_models, policy_mask, seed_design
    from benchmarks.replay import curve_epochs_to_target
    from benchmarks.scenarios import scenarios, workloads

    rows = []
    seen: set[tuple[str, float]] = set()
    for scn in scenarios(workloads(names=(workload,))):
        w = scn.workload
        for setting in settings:
            if (setting, scn.target) in seen:
                continue
            seen.add((setting, scn.target))
            ev = scn.evidence(setting)
            held = np.array(ev.held_out, float)
            if not held.size:
                continue
            truth = np.array([curve_epochs_to_target(w.curves[int(b)], scn.target, w.goal) for b in held])
            ok = np.isfinite(truth)
            if not ok.any():
                continue
            seed = tuple(seed_design(scn.candidates, policy_mask(scn, "all"), per_gpu=4)[:4])
            pred = library_models(scn, ev, seed).predict_epochs(held[ok], scn.target)
            med = np.asarray(pred.epochs_if_reached, float)
            for b, t, m, s, lo, hi, d in zip(held[ok], truth[ok], med, np.asarray(pred.log_sigma, float),
                                             np.asarray(pred.lower, float), np.asarray(pred.upper, float),
                                             np.asarray(pred.distance_doublings, float)):
                rows.append(dict(workload=w.name, setting=setting, target=scn.target_label, global_batch=float(b),
                                 hit=bool(lo <= t <= hi),
                                 log_error=math.log(t / m) if m > 0 and math.isfinite(m) else math.inf,
                                 sigma=float(s), doublings=float(d)))
    return rows


def group(rows: list[dict], key: str) -> dict[object, dict[str, float]]:
    """Coverage, median |log error| and median σ of ``rows`` grouped by ``key`` (``doublings``
    is rounded to the nearest whole doubling)."""
    by: dict[object, list[dict]] = defaultdict(list)
    for r in rows:
        by[round(r[key]) if key == "doublings" else r[key]].append(r)
    return {
        k: dict(n=len(v), coverage=float(np.mean([r["hit"] for r in v])),
                median_abs_log_error=float(np.median([abs(r["log_error"]) for r in v])),
                median_sigma=float(np.median([r["sigma"] for r in v])))
        for k, v in sorted(by.items(), key=lambda kv: str(kv[0]) if key != "doublings" else kv[0])
    }


def main(argv: list[str] | None = None) -> int:
    from benchmarks._registry import TRACES, load

    ap = argparse.ArgumentParser(prog="python -m benchmarks.epochs_coverage", description=__doc__.split("\n")[0])
    ap.add_argument("--settings", default=",".join(SETTINGS), help="comma-separated (default: one-curve,free-curves)")
    ap.add_argument("--workloads", help="comma-separated workloads (default: every trace)")
    args = ap.parse_args(argv)
    load()
    settings = [s for s in args.settings.split(",") if s]
    bad = [s for s in settings if s not in SETTINGS]
    names = args.workloads.split(",") if args.workloads else list(TRACES)
    unknown = [n for n in names if n not in TRACES]
    if bad or unknown:
        what = f"setting(s) {', '.join(bad)}; choose from {', '.join(SETTINGS)}" if bad else \
            f"workload(s) {', '.join(unknown)}; choose from {', '.join(TRACES)}"
        print(f"error: unknown {what}", file=sys.stderr)
        return 2
    rows = [r for n in names for r in coverage_rows(n, settings)]
    for setting in settings:
        rs = [r for r in rows if r["setting"] == setting]
        if not rs:
            print(f"{setting}: no held-out batch reaches a target")
            continue
        print(f"{setting}: {len(rs)} held-out batches reaching the target, 90 % interval covers "
              f"{np.mean([r['hit'] for r in rs]):.1%}")
        for key, label in (("workload", "workload"), ("doublings", "doublings")):
            for k, g in group(rs, key).items():
                print(f"  {label} {k!s:18s} n={g['n']:3d}  covers {g['coverage']:6.1%}  median |log error| "
                      f"{g['median_abs_log_error']:.3f}  median sigma {g['median_sigma']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
