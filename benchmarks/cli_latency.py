"""CLI latency: ``cotune recommend`` on a bundled example, cold, warm and against a baseline.

* cold — an empty cache directory every run: imports, fit, solve, render;
* warm — the fit cached by an earlier call (cotune/_cache.py);
* baseline — the same command from another checkout (``--baseline DIR``, e.g. a
  ``git archive`` of an older commit), which has whatever that version had.

Each run is a fresh process (what a user's what-if loop pays); the median of
``--repeats`` runs is reported. ``--profile`` adds where the cold run spends its time
(cProfile, top functions by cumulative time).

    python -m benchmarks.cli_latency --repeats 5
    git archive 8b25980 | tar -x -C /tmp/cotune-old && python -m benchmarks.cli_latency --baseline /tmp/cotune-old
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMAND = ["recommend", "cifar10-resnet18", "--target", "0.94", "--deadline", "2h"]
REPO = Path(__file__).resolve().parents[1]


def _run(pythonpath: Path, cache: Path | None, extra: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds user + system) of one call in a fresh process.

    On a loaded machine wall time mostly measures the other processes; the child's CPU
    time is the steadier figure of what the call itself costs."""
    import resource

    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    if cache is not None:
        env["COTUNE_CACHE_DIR"] = str(cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # cwd: `python -m` puts the working directory first on sys.path, ahead of PYTHONPATH.
    subprocess.run([sys.executable, "-m", "cotune", *COMMAND, *extra], env=env, cwd=pythonpath, check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(*, repeats: int, baseline: Path | None, progress=None) -> dict:
    """Median wall and CPU seconds per call for each variant (and every run's times)."""
    runs: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
    if baseline is not None:
        runs["baseline"] = []
    with tempfile.TemporaryDirectory() as tmp:
        warm_dir = Path(tmp) / "warm"
        _run(REPO, warm_dir, [])  # prime
        for i in range(repeats):
            runs["cold"].append(_run(REPO, Path(tmp) / f"cold-{i}", []))
            runs["warm"].append(_run(REPO, warm_dir, []))
            if baseline is not None:
                runs["baseline"].append(_run(baseline, None, []))
            if progress is not None:
                progress(i + 1, repeats)
    wall = {k: statistics.median(w for w, _ in v) for k, v in runs.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in runs.items()}
    out = {"command": "cotune " + " ".join(COMMAND), "repeats": repeats, "median_wall_s": wall, "median_cpu_s": cpu,
           "runs_wall_cpu_s": runs, "load_average": os.getloadavg()}
    if baseline is not None:
        out["speedup_vs_baseline"] = {
            k: {"wall": wall["baseline"] / wall[k], "cpu": cpu["baseline"] / cpu[k]} for k in ("cold", "warm")
        }
    return out


def profile_cold(top: int = 15) -> str:
    """Where a cold call spends its time: cProfile of one in-process run."""
    import cProfile
    import io
    import pstats

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["COTUNE_CACHE_DIR"] = tmp
        from cotune.cli import main

        prof = cProfile.Profile()
        stdout = sys.stdout
        sys.stdout = io.StringIO()
        try:
            prof.runcall(main, COMMAND)
        finally:
            sys.stdout = stdout
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(top)
    return text.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", type=Path, default=None, metavar="DIR", help="another checkout to compare with")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of one cold call")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from cotune.cli._progress import progress_bar

    with progress_bar("cli latency", total=args.repeats) as advance:
        result = measure(repeats=args.repeats, baseline=args.baseline, progress=lambda done, total: advance(done))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(result["command"], f"(median of {args.repeats}; load average {result['load_average'][0]:.1f})")
        for name, value in result["median_wall_s"].items():
            print(f"  {name:8s} wall {value:6.3f} s   cpu {result['median_cpu_s'][name]:6.3f} s")
        for name, value in result.get("speedup_vs_baseline", {}).items():
            print(f"  {name}: {value['wall']:.1f}x (wall), {value['cpu']:.1f}x (cpu) faster than the baseline")
    if args.profile:
        print(profile_cold())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
