"""Recommendation cost against the exhaustive optimum over the measured points.

All probes of each bundled Pollux profile are visible to cotune. The oracle knows
nothing of cotune's models: for every measured configuration (workers, packed hosts,
local batch) it takes the *measured* mean step time, and epochs-to-target from the
*raw* learning curves (first crossing of the best-so-far metric, linear between
evaluations; between measured global batches, linear in log batch — the only
interpolation the oracle makes, as Pollux's simulator does). Global batches outside
the measured curves are excluded from both sides.

regret = oracle_cost(cotune's choice) / oracle_cost(oracle's choice) − 1, where cotune's
choice is priced with the oracle's (measured) numbers, not cotune's predictions.
Deadlines run from loose (no deadline) to tight (1.1 × the fastest feasible time).

    python -m benchmarks.recommend_regret                    # deadline on the mean prediction
    python -m benchmarks.recommend_regret --confidence 0.9   # deadline at 90 % confidence
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from benchmarks._common import markdown_table
from cotune import fit_models, load_profile, recommend

SCENARIOS = {
    "cifar10-resnet18": (0.93, 0.94),
    "imagenet-resnet50": (0.74, 0.75),
    "yolov3-voc": (13.0, 12.5),
}
BATCH_MONOTONE = True
MAX_WORKERS = 16
GPUS_PER_HOST = 4
PRICE = 0.526  # USD per T4-hour (AWS g4dn on-demand per GPU, documented in docs/models.md)


class Oracle:
    """Measured step times and raw-curve epochs for one profile."""

    def __init__(self, name: str) -> None:
        prof = load_profile(name)
        self.dataset_size = prof.workload.dataset_size
        self.goal = prof.workload.goal
        a = prof.step_arrays("t4")
        keys = np.column_stack([a["workers"], a["hosts"], a["local_batch"]])
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
        self.step = {tuple(int(v) for v in k): float(np.mean(a["step_time_s"][inv.ravel() == i])) for i, k in enumerate(uniq)}
        self.curves = {}
        for e in prof.evals:
            self.curves.setdefault(e.global_batch, []).append((e.epoch, e.metric))

    def epochs_measured(self, batch: int, target: float) -> float:
        pts = sorted(self.curves[batch])
        sign = 1.0 if self.goal == "max" else -1.0
        best, prev = -math.inf, None
        for epoch, metric in pts:
            score = sign * metric
            if score >= sign * target:
                if prev is None or best == -math.inf:
                    return epoch
                pe, pb = prev
                frac = (sign * target - pb) / (score - pb) if score != pb else 0.0
                return pe + frac * (epoch - pe)
            best = max(best, score)
            prev = (epoch, best)
        return math.inf

    def epochs(self, global_batch: float, target: float) -> float:
        batches = sorted(self.curves)
        if not batches[0] <= global_batch <= batches[-1]:
            return math.nan
        e = [self.epochs_measured(b, target) for b in batches]
        i = int(np.searchsorted(batches, global_batch))
        if batches[i] == global_batch:
            return e[i]
        lo, hi = batches[i - 1], batches[i]
        if not (math.isfinite(e[i - 1]) and math.isfinite(e[i])):
            return math.inf
        f = (math.log(global_batch) - math.log(lo)) / (math.log(hi) - math.log(lo))
        return math.exp((1 - f) * math.log(e[i - 1]) + f * math.log(e[i]))

    def evaluate(self, workers: int, hosts: int, local_batch: int, target: float) -> tuple[float, float]:
        """(time_s, cost) measured; nan when the configuration was not measured."""
        step = self.step.get((workers, hosts, local_batch))
        if step is None:
            return math.nan, math.nan
        e = self.epochs(workers * local_batch, target)
        t = e * self.dataset_size / (workers * local_batch) * step
        return t, workers * PRICE * t / 3600

    def table(self, target: float) -> list[tuple[int, int, int, float, float]]:
        rows = []
        for (n, h, b) in self.step:
            if n > MAX_WORKERS or h != -(-n // GPUS_PER_HOST):
                continue
            t, c = self.evaluate(n, h, b, target)
            if math.isfinite(t):
                rows.append((n, h, b, t, c))
        return rows


def run(confidence: float | None = None) -> list[dict]:
    results = []
    for name, targets in SCENARIOS.items():
        oracle = Oracle(name)
        models = fit_models(load_profile(name), batch_monotone=BATCH_MONOTONE)
        batches = sorted(oracle.curves)
        for target in targets:
            rows = oracle.table(target)
            fastest = min(r[3] for r in rows)
            for label, factor in (("none", None), ("3.0x", 3.0), ("2.0x", 2.0), ("1.5x", 1.5), ("1.25x", 1.25), ("1.1x", 1.1)):
                deadline = None if factor is None else fastest * factor
                feasible = [r for r in rows if deadline is None or r[3] <= deadline]
                best = min(feasible, key=lambda r: (r[4], r[3]))
                rec = recommend(
                    name, models=models, target=target, deadline_s=deadline, max_workers=MAX_WORKERS,
                    gpus_per_host=GPUS_PER_HOST, prices={"t4": PRICE}, global_batch_range=(batches[0], batches[-1]),
                    confidence=confidence,
                )
                entry = {
                    "profile": name, "target": target, "deadline": label, "deadline_s": deadline,
                    "oracle": {"workers": best[0], "local_batch": best[2], "time_s": best[3], "cost": best[4]},
                }
                if rec.chosen is None:
                    entry.update(status="infeasible", regret=None)
                else:
                    c = rec.chosen
                    t, cost = oracle.evaluate(c.workers, c.hosts, c.local_batch, target)
                    entry.update(
                        status="ok",
                        chosen={"workers": c.workers, "local_batch": c.local_batch, "predicted_time_s": c.time_s,
                                "predicted_cost": c.cost, "measured_time_s": t, "measured_cost": cost},
                        regret=cost / best[4] - 1,
                        misses_deadline=bool(deadline is not None and t > deadline),
                    )
                results.append(entry)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--confidence", type=float, default=None, help="solve with the deadline at this confidence")
    args = parser.parse_args()
    t0 = time.perf_counter()
    results = run(args.confidence)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    rows = []
    for r in results:
        o = r["oracle"]
        if r["status"] != "ok":
            rows.append([r["profile"], r["target"], r["deadline"], f"{o['workers']}x{o['local_batch']}", "—", "infeasible", "—"])
            continue
        c = r["chosen"]
        rows.append([r["profile"], r["target"], r["deadline"], f"{o['workers']}x{o['local_batch']}",
                     f"{c['workers']}x{c['local_batch']}", f"{100 * r['regret']:.1f} %", "yes" if r["misses_deadline"] else "no"])
    print(markdown_table(["profile", "target", "deadline (x fastest)", "oracle", "cotune", "cost regret", "misses deadline"], rows))
    regrets = np.array([r["regret"] for r in results if r["regret"] is not None])
    misses = sum(1 for r in results if r.get("misses_deadline"))
    print(f"\n{len(regrets)} scenarios: median regret {100 * np.median(regrets):.1f} %, mean {100 * regrets.mean():.1f} %, "
          f"p90 {100 * np.quantile(regrets, 0.9):.1f} %, worst {100 * regrets.max():.1f} %; "
          f"within 3 %: {np.mean(regrets <= 0.03):.0%}; measured time over the deadline: {misses}; "
          f"infeasible: {sum(r['status'] != 'ok' for r in results)}  ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
