"""How `cotune fit` and the fit behind every recommendation scale with the measured batches.

A pooled profile of public runs (MLPerf-style: many submitters, each its own batch) or a
long history of tracked jobs can hold hundreds or thousands of distinct global batches.
The accuracy model reads every batch's runs at a ladder of target levels per fit, and
`cotune fit` (:func:`cotune.models._validate.validate_profile`) refits it once per held-out
batch (at most ``MAX_HELD_OUT_BATCHES`` of them), so the cost per batch is what matters.

The profile is synthetic and seeded (:func:`profile_lines`): at each of N global batches,
``--seeds`` runs of a saturating curve with ``--evals`` evaluations each, plus 12 step
probes. Each size runs in a fresh process, one at a time, and reports its CPU seconds
(user + system: steadier than wall time on a loaded machine) for ``fit_models`` (what a
recommendation fits) and for ``validate_profile`` (what `cotune fit` runs).

    python -m benchmarks.fit_scale                                   # N = 100, 200, 400, 800, 1600
    python -m benchmarks.fit_scale --baseline /tmp/cotune-old        # another checkout on the same profiles
    python -m benchmarks.fit_scale --sizes 2000 --seeds 1 --evals 5  # the one-curve-per-batch profile of 2026-12-04
    python -m benchmarks.fit_scale --http 3000                       # one inline-profile POST /v1/recommend to `cotune serve`
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, resource, sys
import cotune
from cotune.models._validate import validate_profile

path, what = sys.argv[1], sys.argv[2].split(",")
profile = cotune.load_profile(path)
out = {"records": len(profile.evals) + len(profile.steps)}

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

if "fit" in what:
    t = cpu()
    models = cotune.fit_models(profile)
    out["fit_cpu_s"] = cpu() - t
    out["batches"] = len(models.accuracy.batches_)
if "report" in what:
    t = cpu()
    report = validate_profile(profile)
    out["report_cpu_s"] = cpu() - t
    out["batches"] = len(report.accuracy.batches)
print(json.dumps(out))
"""


def profile_lines(n_batches: int, *, seeds: int = 3, evals: int = 5, seed: int = 0) -> list[str]:
    """A profile's JSON lines: ``seeds`` runs of ``evals`` evaluations at each of ``n_batches``
    global batches (64, 67, 70, …), curves ``0.9 (1 − e^(−400 e / B)) + N(0, 0.01)``, and 12
    step probes on one GPU type."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lines = [{"record": "workload", "name": f"many-{n_batches}", "dataset_size": 50000, "metric": "top1", "goal": "max"}]
    for w in (1, 2, 4, 8):
        for lb in (32, 64, 128):
            lines.append({"record": "step", "gpu": "t4", "workers": w, "local_batch": lb, "hosts": 1,
                          "step_time_s": 0.01 * lb / 32 * (1 + 0.1 * np.log2(w))})
    for b in range(64, 64 + 3 * n_batches, 3):
        for s in range(seeds):
            for e in range(1, evals + 1):
                acc = 0.9 * (1 - np.exp(-e * 400 / b)) + rng.normal(0, 0.01)
                lines.append({"record": "eval", "global_batch": b, "epoch": e, "metric": round(float(acc), 5), "seed": s})
    return [json.dumps(r, separators=(",", ":")) for r in lines]


def measure(n_batches: int, source: Path, *, seeds: int = 3, evals: int = 5, what: str = "fit,report") -> dict:
    """CPU seconds of `fit_models` (``what`` holds "fit") and of `validate_profile` — what
    `cotune fit` runs — (``what`` holds "report") on an ``n_batches`` profile, in a fresh
    process importing cotune from ``source``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.jsonl"
        path.write_text("\n".join(profile_lines(n_batches, seeds=seeds, evals=evals)) + "\n")
        env = {**os.environ, "PYTHONPATH": str(source)}
        # cwd: `python -c` puts the working directory first on sys.path, ahead of PYTHONPATH
        out = subprocess.run([sys.executable, "-c", _CHILD, str(path), what],
                             env=env, capture_output=True, text=True, check=True, cwd=tmp)
        return json.loads(out.stdout.strip().splitlines()[-1])


def http_seconds(n_batches: int, *, seeds: int, evals: int) -> tuple[float, int, int]:
    """Wall seconds of one ``POST /v1/recommend`` with the profile inline, to a fresh ``cotune
    serve`` on loopback (its fit cache cold), and the body's size in bytes and the HTTP status."""
    import httpx

    sys.path.insert(0, str(REPO / "tests" / "scheduler"))  # the shared loopback-server helper
    from sched_server import running_server

    records = [json.loads(line) for line in profile_lines(n_batches, seeds=seeds, evals=evals)]
    request = {"profile": {"records": records}, "target": 0.85, "deadline_s": 86400, "max_workers": 8,
               "gpus_per_host": 4, "prices": {"t4": 0.526}}
    body = json.dumps(request, separators=(",", ":")).encode()
    with running_server() as url, httpx.Client(base_url=url, timeout=600) as client:
        t0 = time.perf_counter()
        answer = client.post("/v1/recommend", content=body, headers={"content-type": "application/json"})
        return time.perf_counter() - t0, len(body), answer.status_code


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,200,400,800,1600", help="distinct batch counts (comma-separated)")
    ap.add_argument("--seeds", type=int, default=3, help="runs per batch (default 3)")
    ap.add_argument("--evals", type=int, default=5, help="evaluations per run (default 5)")
    ap.add_argument("--what", default="fit,report", help="fit (fit_models), report (cotune fit's validate_profile) or both")
    ap.add_argument("--baseline", type=Path, default=None, help="another checkout to time beside this one")
    ap.add_argument("--http", type=int, default=None, metavar="N",
                    help="instead: time one inline-profile POST /v1/recommend of an N-batch profile to cotune serve")
    args = ap.parse_args(argv)
    if args.http is not None:
        seconds, size, status = http_seconds(args.http, seeds=args.seeds, evals=args.evals)
        print(f"POST /v1/recommend, {args.http} batches × {args.seeds} runs × {args.evals} evaluations inline "
              f"({size / 2**20:.2f} MiB): HTTP {status} in {seconds:.1f} s wall")
        return 0 if status == 200 else 1
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        ap.error(f"--sizes {args.sizes!r}: give batch counts separated by commas, e.g. 100,200,400")
    what = [w for w in ("fit", "report") if w in args.what.split(",")]
    if not what or min(sizes) < 1 or min(args.seeds, args.evals) < 1:
        ap.error("--what names fit, report or both; --sizes, --seeds and --evals are at least 1")
    sources = [("this checkout", REPO)] + ([("baseline", args.baseline)] if args.baseline else [])
    head = [f"{name}: {w} (CPU s)" for name, _ in sources for w in what]
    print("| batches | records | " + " | ".join(head) + " |")
    print("|---|---|" + "---|" * len(head))
    for n in sizes:
        cells, records = [], 0
        for _, source in sources:
            out = measure(n, source, seeds=args.seeds, evals=args.evals, what=",".join(what))
            records = out["records"]
            cells += [f"{out[f'{w}_cpu_s']:.1f}" for w in what]
        print(f"| {n} | {records} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
