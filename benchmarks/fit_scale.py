"""How `cotune fit`'s cross-validation scales with the number of distinct global batches.

A pooled profile of public runs (MLPerf-style: many submitters, each its own batch) or a
long history of tracked jobs can hold hundreds or thousands of distinct batches, each
with one short curve. The report fits the accuracy model once per held-out fold (at most
``MAX_HELD_OUT_BATCHES`` of them), and each fit walks every batch at a ladder of target
levels, so the per-batch cost is what matters.

The profile is synthetic and seeded (a saturating curve per batch, 5 evaluations each,
12 step probes); each size runs in a fresh process and reports its CPU seconds
(user + system: steadier than wall time on a loaded machine).

    python -m benchmarks.fit_scale                      # 100, 500, 2000 batches
    python -m benchmarks.fit_scale --sizes 2000 --baseline /tmp/cotune-old   # another checkout, same sizes
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, resource, sys
import numpy as np
import cotune
from cotune.models._validate import validate_profile

n, path = int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(0)
lines = [{"record": "workload", "name": f"many-{n}", "dataset_size": 50000, "metric": "top1", "goal": "max"}]
for w in (1, 2, 4, 8):
    for lb in (32, 64, 128):
        lines.append({"record": "step", "gpu": "t4", "workers": w, "local_batch": lb, "hosts": 1,
                      "step_time_s": 0.01 * lb / 32 * (1 + 0.1 * np.log2(w))})
for B in range(64, 64 + 3 * n, 3):
    for e in range(1, 6):
        acc = 0.9 * (1 - np.exp(-e * 200 / B)) + rng.normal(0, 0.01)
        lines.append({"record": "eval", "global_batch": B, "epoch": e, "metric": float(acc), "seed": 0})
with open(path, "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in lines)
profile = cotune.load_profile(path)
r0 = resource.getrusage(resource.RUSAGE_SELF)
report = validate_profile(profile)
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"batches": len(report.accuracy.batches),
                  "cpu_s": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)}))
"""


def measure(n_batches: int, source: Path) -> dict:
    """CPU seconds of one `validate_profile` (what `cotune fit` runs) on ``n_batches`` batches."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": str(source)}
        # cwd: `python -c` puts the working directory first on sys.path, ahead of PYTHONPATH
        out = subprocess.run([sys.executable, "-c", _CHILD, str(n_batches), str(Path(tmp) / "p.jsonl")],
                             env=env, capture_output=True, text=True, check=True, cwd=tmp)
        return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,500,2000", help="distinct batch counts (comma-separated)")
    ap.add_argument("--baseline", type=Path, default=None, help="another checkout to time beside this one")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| batches | this checkout (CPU s) |" + (" baseline (CPU s) |" if args.baseline else ""))
    print("|---|---|" + ("---|" if args.baseline else ""))
    for n in sizes:
        row = f"| {n} | {measure(n, REPO)['cpu_s']:.1f} |"
        if args.baseline:
            row += f" {measure(n, args.baseline)['cpu_s']:.1f} |"
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
