"""How much to probe before a watched job starts: misses against every-cost regret.

Issue 10 asks the closed loop for two things at once: miss rate ≤ 5 % and median regret
≤ 5 % with every cost counted (probes, training, restarts). They pull apart: probes buy
the plan its accuracy (cotune_closed, 16 probes: 6.9 % misses in /tmp/full37) and cost
about as much as the training on short jobs (median regret 115 %); a job that starts
after a probe or two is cheap but misses more (cotune_closed_lean, probes ≤ 10 % of the
plan: 15.3 %, 30.1 %). This sweeps the one knob between them — the share of the plan's expected cost
the probes may take before the job starts (``closed_loop._lean_run``'s ``cap``; ``inf``
is the whole budget) — over the 72 closed-loop scenarios and prints the frontier::

    python -m benchmarks.probe_tradeoff                  # caps 0.01 0.03 0.1 0.3 1 inf (about 15 min)
    python -m benchmarks.probe_tradeoff --caps 0.1,inf --workloads ncf-t4 --json out.json

Each row: miss rate (by cause), median regret with every cost (misses count ∞, the
summary rows' median: the mean of the two middle
runs of an even count), median training regret over the runs that met
(training + restarts, no probes), median probes bought, median probe share, and the
mean and largest number of restarts of a run.

``--first-steps 50`` also asks the controller after the first 50 steps of every start,
before any evaluation there — a scheduler that calls ``cotune replan`` at restarts too.
It checks the hand-over rule (``cotune.solver.job_frame``): a job must not switch back
for want of its own history (benchmarks/README.md § Closed loop).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np

__all__ = ["DEFAULT_CAPS", "run_workload", "frontier", "main"]

DEFAULT_CAPS = (0.01, 0.03, 0.1, 0.3, 1.0, math.inf)


def run_workload(workload: str, caps: tuple[float, ...], budget: int = 16, confidence: float | None = None,
                 sequence: str = "design", first_steps: int = 0) -> list[dict]:
    """Every closed-loop scenario of ``workload`` at every probe-share cap: one dict per run
    (``first_steps`` > 0: the controller also looks after that many steps of every start)."""
    from benchmarks import closed_loop
    from benchmarks._registry import load
    from benchmarks.closed_loop import _lean_run

    closed_loop.FIRST_STEPS = first_steps  # this worker process's replays
    from benchmarks.scenarios import scenarios, workloads

    load()
    out = []
    for scn in scenarios(workloads(names=(workload,))):
        ev = scn.evidence("closed-loop")
        oracle = scn.oracle.solve(scn.target, scn.deadline_s).cost
        for cap in caps:
            run = _lean_run(scn, ev, budget, confidence=confidence, name=f"cap={cap:g}", cap=cap, sequence=sequence)
            o = run.outcome(scn, ev, oracle)
            out.append(dict(
                scenario=scn.key, cap=cap, miss=o.miss, regret=o.regret, probes=run.probes,
                probe_share=o.probe_share, restarts=run.restarts, batch_changes=_batch_changes(scn, run.actions),
                training_regret=(run.train_cost + run.restart_cost) / oracle - 1.0,
            ))
    return out


def _batch_changes(scn, actions: tuple[str, ...]) -> int:
    """Switches among ``actions`` (``"k:switch:i->j"``) that change the global batch."""
    gb = scn.candidates.global_batch
    moves = [a.split(":")[2].split("->") for a in actions if a.split(":")[1] == "switch"]
    return sum(1 for i, j in moves if gb[int(i)] != gb[int(j)])


def frontier(runs: list[dict]) -> list[dict]:
    """One row per cap: miss rate and causes, median every-cost regret, median training
    regret and probe share of the runs that met, median probes."""
    from benchmarks.regret import _pct

    rows = []
    for cap in sorted({r["cap"] for r in runs}):
        rs = [r for r in runs if r["cap"] == cap]
        met = [r for r in rs if not r["miss"]]
        causes: dict[str, int] = {}
        for r in rs:
            if r["miss"]:
                causes[r["miss"]] = causes.get(r["miss"], 0) + 1
        rows.append(dict(
            cap=cap, scenarios=len(rs), miss_rate=sum(causes.values()) / len(rs), misses=causes,
            median_regret=_pct(np.array([r["regret"] for r in rs], float), 50),
            median_training_regret=float(np.median([r["training_regret"] for r in met])) if met else math.nan,
            median_probe_share=float(np.median([r["probe_share"] for r in met])) if met else math.nan,
            median_probes=float(np.median([r["probes"] for r in rs])),
            mean_restarts=float(np.mean([r["restarts"] for r in rs])),
            max_restarts=int(max(r["restarts"] for r in rs)),
        ))
    return rows


def _line(row: dict) -> str:
    return (f"cap {row['cap']:>5g}  miss rate {row['miss_rate']:6.1%} {row['misses']}  median regret "
            f"{row['median_regret']:8.1%}  training regret {row['median_training_regret']:6.1%}  "
            f"probe share {row['median_probe_share']:7.1%}  probes {row['median_probes']:.0f}  restarts "
            f"{row['mean_restarts']:.2f} (max {row['max_restarts']})")


def _caps(text: str) -> tuple[float, ...]:
    try:
        caps = tuple(float(c) for c in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"caps must be comma-separated numbers or inf, got {text!r}") from None
    if not caps or any(not c > 0 for c in caps):
        raise argparse.ArgumentTypeError(f"caps must be positive shares (0.1 = 10 %), got {text!r}")
    return caps


def main(argv: list[str] | None = None) -> int:
    from benchmarks._registry import TRACES, load

    ap = argparse.ArgumentParser(prog="python -m benchmarks.probe_tradeoff", description=__doc__.split("\n\n")[0])
    ap.add_argument("--caps", type=_caps, default=DEFAULT_CAPS, help="probe-share caps, comma-separated (inf: the whole budget)")
    ap.add_argument("--workloads", default=None, help="comma-separated trace names (default: all)")
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--q90", action="store_true", help="plan and re-plan at confidence 0.9")
    ap.add_argument("--sequence", choices=("design", "confirm"), default="design",
                    help="the probes bought: the anytime loop's (seed design first) or confirm-the-choice ones")
    ap.add_argument("--first-steps", type=int, default=0, metavar="N",
                    help="the controller also looks after the first N steps of every start, before any evaluation "
                    "there (a scheduler calling replan at restarts: the churn check)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", default=None, help="write every run and the frontier here")
    args = ap.parse_args(argv)
    if args.first_steps < 0:
        ap.error(f"--first-steps must be >= 0, got {args.first_steps}")
    load()
    caps = args.caps
    names = args.workloads.split(",") if args.workloads else list(TRACES)
    conf = 0.9 if args.q90 else None
    runs: list[dict] = []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        for name, rs in zip(names, ex.map(run_workload, names, [caps] * len(names), [args.budget] * len(names), [conf] * len(names),
                                            [args.sequence] * len(names), [args.first_steps] * len(names))):
            print(f"{name}: {len(rs)} runs", file=sys.stderr)
            runs += rs
    rows = frontier(runs)
    for row in rows:
        print(_line(row))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(runs=runs, frontier=rows), fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
