"""Why a policy at a confidence finds no plan: the chance of reaching the target at all,
or of doing it by the deadline.

``P(success) = P(reach) · P(time ≤ deadline | reach)`` for every candidate
(:func:`cotune.solver.with_success`). When no candidate clears the confidence, the
scenario is a *no plan* miss. This prints, for each such scenario, the candidate with
the highest ``P(success)`` and its two factors, and counts which factor is under the
confidence — the reach probability (the plateau far from the measured batch) or the
deadline given reach (the epochs and step-time spreads)::

    python -m benchmarks.no_plan                                   # cotune_q90, one-curve, 16 probes
    python -m benchmarks.no_plan --policy cotune_q90 --setting free-curves --workloads bert-t4

The estimates are the benchmark's own (``benchmarks.policies.fitted_estimates`` after
the policy's probes).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

__all__ = ["no_plan_rows", "summary", "main"]


def no_plan_rows(policy: str, setting: str, budget: int, workload_names: tuple[str, ...] | None = None) -> list[dict]:
    """One row per scenario where ``policy`` makes no plan: its best candidate's factors."""
    from benchmarks.policies import fitted_estimates, run_policy
    from benchmarks.scenarios import scenarios, workloads

    rows = []
    for scn in scenarios(workloads(names=workload_names)):
        plan = run_policy(policy, scn, (budget,), setting=setting)[0]
        if plan.index is not None:
            continue
        _, est = fitted_estimates(scn, plan.probed, policy=policy, setting=setting)
        if est.p_success is None or not np.any(np.isfinite(est.p_success)):
            continue
        k = int(np.nanargmax(est.p_success))
        p_s, p_r = float(est.p_success[k]), float(est.p_reach[k])
        rows.append(dict(scenario=scn.key, p_success=p_s, p_reach=p_r,
                         p_time_given_reach=p_s / p_r if p_r > 0 else 0.0))
    return rows


def summary(rows: list[dict], confidence: float) -> dict:
    """Counts of no-plan scenarios whose best candidate is held under ``confidence`` by
    each factor (a scenario can count under both), and the factors' medians."""
    if not rows:
        return dict(n=0, by_reach=0, by_time=0)
    pr = np.array([r["p_reach"] for r in rows])
    pt = np.array([r["p_time_given_reach"] for r in rows])
    return dict(n=len(rows), by_reach=int(np.sum(pr < confidence)), by_time=int(np.sum(pt < confidence)),
                median_p_success=float(np.median([r["p_success"] for r in rows])),
                median_p_reach=float(np.median(pr)), median_p_time_given_reach=float(np.median(pt)))


def main(argv: list[str] | None = None) -> int:
    from benchmarks._common import workload_names
    from benchmarks._registry import POLICIES, SETTINGS, load

    ap = argparse.ArgumentParser(prog="python -m benchmarks.no_plan", description=__doc__.split("\n")[0])
    ap.add_argument("--policy", default="cotune_q90", help="an open-loop policy with a confidence (default cotune_q90)")
    ap.add_argument("--setting", default="one-curve")
    ap.add_argument("--budget", type=int, default=16, help="probe budget (default 16)")
    ap.add_argument("--workloads", help="comma-separated workloads (default: every trace)")
    args = ap.parse_args(argv)
    load()
    spec = POLICIES.get(args.policy)
    if spec is None or spec.closed_loop or spec.confidence is None:
        known = ", ".join(sorted(k for k, v in POLICIES.items() if not v.closed_loop and v.confidence is not None))
        print(f"error: unknown policy {args.policy!r} (or one without a confidence); choose from {known}", file=sys.stderr)
        return 2
    if args.setting not in SETTINGS or SETTINGS[args.setting].closed_loop:
        known = ", ".join(k for k, v in SETTINGS.items() if not v.closed_loop)
        print(f"error: unknown setting {args.setting!r}; choose from {known}", file=sys.stderr)
        return 2
    listed = workload_names(args.workloads)
    if listed is None:
        return 2
    names = tuple(listed) if args.workloads else None
    rows = no_plan_rows(args.policy, args.setting, args.budget, names)
    for r in rows:
        print(f"{r['scenario']:40s} best P(success) {r['p_success']:.3f} = P(reach) {r['p_reach']:.3f} "
              f"x P(deadline | reach) {r['p_time_given_reach']:.3f}")
    s = summary(rows, spec.confidence)
    if not s["n"]:
        print(f"{args.policy} made a plan in every scenario")
        return 0
    print(f"{s['n']} scenarios without a plan at confidence {spec.confidence}: P(reach) under it in {s['by_reach']}, "
          f"P(deadline | reach) under it in {s['by_time']}; medians P(success) {s['median_p_success']:.3f}, "
          f"P(reach) {s['median_p_reach']:.3f}, P(deadline | reach) {s['median_p_time_given_reach']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
