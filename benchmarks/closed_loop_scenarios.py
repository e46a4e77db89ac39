"""Closed-loop policies scenario by scenario: what each run did, and the summary.

``python -m benchmarks`` reports the closed-loop rows as medians and miss rates over the 72
scenarios; comparing two controllers needs the runs themselves — which scenarios miss,
by what cause, which switches each made. This prints one line per scenario and policy
(miss cause, regret with every cost, training regret, probe share, probes, restarts, the
switches taken) and one summary line per policy (miss rate by cause, median regret,
mean restarts, *returns*: switches back to a configuration the run had left)::

    python -m benchmarks.closed_loop_scenarios cotune_closed_q90,cotune_closed
    python -m benchmarks.closed_loop_scenarios cotune_closed_q90@4 --workloads ncf-t4,bert-t4 --json runs.json

``POLICY@N`` runs at a probe budget of ``N`` (16 by default). Workloads run in parallel
processes (``--jobs``, default 2). The runs are the ones ``python -m benchmarks`` makes:
same scenarios, same policies (``benchmarks._registry``), same truth.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np

__all__ = ["run_workload", "summary_line", "main"]


def run_workload(workload: str, policies: list[str]) -> list[dict]:
    """Every scenario of ``workload`` under every ``policy[@budget]``: one dict per run."""
    from benchmarks._registry import POLICIES, load
    from benchmarks.scenarios import scenarios, workloads

    load()
    out = []
    for scn in scenarios(workloads(names=(workload,))):
        ev = scn.evidence("closed-loop")
        sol = scn.oracle.solve(scn.target, scn.deadline_s)
        for spec in policies:
            name, _, budget = spec.partition("@")
            run = POLICIES[name].run(scn, ev, int(budget) if budget else 16)
            o = run.outcome(scn, ev, sol.cost)
            out.append(dict(
                scenario=scn.key, policy=spec, miss=o.miss, regret=o.regret, probe_share=o.probe_share,
                probes=o.probes, restarts=run.restarts, actions=list(run.actions), p_success=run.p_success,
                training_regret=(run.train_cost + run.restart_cost) / sol.cost - 1.0 if sol.cost else math.nan,
            ))
    return out


def _returns(actions: list[str]) -> int:
    """Switches to a configuration the run had already left (``k:switch:i->j``), counted
    as the controller counts them (:func:`cotune.solver.count_returns`)."""
    from cotune.solver import count_returns

    ran: list[str] = []
    for a in actions:
        parts = a.split(":")
        if len(parts) == 3 and parts[1] == "switch":
            i, j = parts[2].split("->")
            ran.extend([i, j] if not ran else [j])
    return count_returns(ran)


def summary_line(policy: str, runs: list[dict]) -> str:
    """Miss rate by cause, median regret (the summary rows' median, ``regret._pct``), mean
    restarts and returns of one policy's runs."""
    from benchmarks.regret import _pct

    misses: dict[str, int] = {}
    for r in runs:
        if r["miss"]:
            misses[r["miss"]] = misses.get(r["miss"], 0) + 1
    regret = np.array([r["regret"] for r in runs], float)
    return (f"{policy:24s} miss rate {sum(misses.values()) / len(runs):6.1%} {misses}  median regret "
            f"{_pct(regret, 50):7.1%}  mean restarts {np.mean([r['restarts'] for r in runs]):.2f}  "
            f"returns {sum(_returns(r['actions']) for r in runs)}")


def main(argv: list[str] | None = None) -> int:
    from benchmarks._common import workload_names
    from benchmarks._registry import POLICIES, load

    ap = argparse.ArgumentParser(prog="python -m benchmarks.closed_loop_scenarios", description=__doc__.split("\n")[0])
    ap.add_argument("policies", help="comma-separated closed-loop policies, each optionally @BUDGET")
    ap.add_argument("--workloads", help="comma-separated workloads (default: every trace)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel processes (default 2)")
    ap.add_argument("--json", metavar="FILE", help="also write every run as JSON")
    args = ap.parse_args(argv)
    load()
    policies = [p for p in args.policies.split(",") if p]
    for p in policies:
        name, at, budget = p.partition("@")
        spec = POLICIES.get(name)
        if spec is None or not spec.closed_loop:
            known = ", ".join(sorted(k for k, v in POLICIES.items() if v.closed_loop))
            print(f"error: {p!r} is not a closed-loop policy; choose from {known}", file=sys.stderr)
            return 2
        if at and not (budget.isdigit() and int(budget) >= 1):
            print(f"error: {p!r}: the probe budget after '@' must be a whole number of at least 1, got {budget!r}; "
                  f"write {name}@16, for example", file=sys.stderr)
            return 2
    names = workload_names(args.workloads)
    if names is None:
        return 2
    if args.json:
        # Checked before the runs (minutes of them), not after: a path that cannot be written
        # would otherwise throw every run away.
        from pathlib import Path

        folder = Path(args.json).parent
        if not folder.is_dir() or Path(args.json).is_dir():
            print(f"error: --json {args.json}: {'is a folder' if Path(args.json).is_dir() else 'its folder does not exist'}; "
                  "name a file in an existing folder", file=sys.stderr)
            return 2
    with ProcessPoolExecutor(max(1, args.jobs)) as ex:
        runs = [r for chunk in ex.map(run_workload, names, [policies] * len(names)) for r in chunk]
    by: dict[str, dict[str, dict]] = {}
    for r in runs:
        by.setdefault(r["scenario"], {})[r["policy"]] = r

    def cell(r: dict) -> str:
        return (f"{(r['miss'] or ''):8.8s} {r['regret']:8.2f} tr={r['training_regret']:6.2f} ps={r['probe_share']:5.2f} "
                f"n={r['probes']:2d} rs={r['restarts']} {' '.join(r['actions'])}")

    for key, row in by.items():
        print(f"{key:38s} " + " | ".join(cell(row[p]) for p in policies))
    for p in policies:
        print(summary_line(p, [r for r in runs if r["policy"] == p]))
    if args.json:
        from benchmarks.report import write_text

        try:
            write_text(args.json, json.dumps(runs, indent=1, default=str))
        except OSError as e:
            print(f"error: --json {args.json}: {e.strerror or e}; the runs above are complete, write them elsewhere",
                  file=sys.stderr)
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
