"""Is the value-of-information planner's expected gain right? Per measurement, with intervals.

``cotune_voi`` buys the measurement with the largest expected gain net of its price
(:func:`cotune.solver.plan_next_probe`); the full run's report sums those gains per plan
and compares them with the realised drop of the plan's true loss
(:func:`benchmarks.voi.true_loss`). A plan's realised gain is one draw of a skewed
variable — usually 0 (the choice does not move), now and then most of the job's cost
either way (a plan that starts or stops meeting its deadline) — so a ratio of two means
over 72 scenarios says little without its interval. This module measures two things,
each as shares of the oracle's cost, with 90 % intervals from a bootstrap over scenarios
(the measurements of one scenario share its truth and are resampled together):

* **bought** — every measurement ``cotune_voi`` bought at a budget of 16 probes
  (one-curve): the expected gain it was bought for against the realised one;
* **alternatives** — at the planner's first decision (after the seed design, the state
  every scenario reaches), the ``--top`` step probes with the largest gain net of price,
  each bought alone in the replay: rank 0 is what the planner buys; the others show
  whether the gains are biased in general or only where the planner chose.

Expected and realised gains agree in the mean when the preposterior is right: the gap's
interval should hold 0.

    python -m benchmarks.voi_calibration              # ~4 min on 2 cores
    python -m benchmarks.voi_calibration --top 3 --workloads cifar10-t4,bert-t4 --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

__all__ = ["bought", "alternatives", "scenario_bootstrap", "main"]

BUDGET = 16
_Z_BINS = (0.0, 0.01, 0.05, 0.2, math.inf)  # expected gain, shares of the oracle's cost


def bought(workload_names: tuple[str, ...] | None = None, *, policy: str = "cotune_voi") -> list[dict]:
    """One row per measurement ``policy`` bought (one-curve, :data:`BUDGET` probes)."""
    from benchmarks.policies import run_policy
    from benchmarks.scenarios import scenarios, workloads

    rows = []
    for scn in scenarios(workloads(names=workload_names)):
        plan = run_policy(policy, scn, (BUDGET,), setting="one-curve")[0]
        oracle = scn.oracle.solve(scn.target, scn.deadline_s).cost
        for k, (kind, exp, real) in enumerate(plan.measurements):
            rows.append(dict(scenario=scn.key, order=k, kind=kind, expected=exp / oracle, realised=real / oracle))
    return rows


def alternatives(workload_names: tuple[str, ...] | None = None, *, top: int = 6) -> list[dict]:
    """At the first decision after the seed design: the ``top`` step probes by net gain,
    each bought alone; one row per (scenario, rank)."""
    from benchmarks.policies import SEED_PER_GPU, policy_mask, seed_design
    from benchmarks.replay import probe_price
    from benchmarks.scenarios import scenarios, workloads
    from benchmarks.voi import LOOP_BOOTSTRAP, _decide, seed_count, true_loss
    from cotune.solver import option_gains, probed_step_floor, standard_options

    def loss_after(scn, mask, probed: list[int]) -> float:
        launcher = scn.launcher(scn.evidence("one-curve"))
        for i in probed:
            launcher.probe(i)
        _, usable, est, _, j = _decide(scn, launcher.profile(), mask, None, LOOP_BOOTSTRAP)
        return true_loss(scn, None if j is None else int(usable[j]))

    rows = []
    for scn in scenarios(workloads(names=workload_names)):
        c = scn.candidates
        mask = policy_mask(scn, "all")
        launcher = scn.launcher(scn.evidence("one-curve"))
        design = seed_design(c, mask, per_gpu=SEED_PER_GPU)
        n_seed = seed_count(c, design)
        # the planner's own seed: design points not yet measured (the reference run's is free)
        while len(launcher.probed) < n_seed:
            launcher.probe(next(i for i in design if i not in launcher.measured))
        _, usable, est, ok, j = _decide(scn, launcher.profile(), mask, None, LOOP_BOOTSTRAP)
        probed = np.isin(usable, launcher.measured)
        price = probe_price(c.workers[usable], scn.oracle.price_per_hour[usable], est.step_time_s)
        opts = standard_options(est, unprobed=~probed, step_price=price)
        if not opts:
            continue
        g = option_gains(est, opts, feasible=ok, deadline_s=scn.deadline_s, interval=0.9,
                         step_floor=probed_step_floor(est, probed))
        net = g.gains - np.array([o.price for o in opts])
        oracle = scn.oracle.solve(scn.target, scn.deadline_s).cost
        before = true_loss(scn, None if j is None else int(usable[j]))
        for rank, n in enumerate(np.argsort(-net, kind="stable")[:top]):
            after = loss_after(scn, mask, [*launcher.probed, int(usable[opts[n].touches[0]])])
            rows.append(dict(scenario=scn.key, rank=rank, worth_buying=bool(net[n] > 0), expected=float(g.gains[n]) / oracle,
                             realised=(before - after) / oracle, price=float(opts[n].price) / oracle))
    return rows


def scenario_bootstrap(rows: list[dict], *, draws: int = 4000, seed: int = 0) -> dict:
    """Means of expected and realised gain and of their gap, with 90 % intervals from
    resampling whole scenarios."""
    if not rows:
        return dict(n=0)
    e = np.array([r["expected"] for r in rows])
    q = np.array([r["realised"] for r in rows])
    keys = sorted({r["scenario"] for r in rows})
    groups = [np.array([i for i, r in enumerate(rows) if r["scenario"] == k]) for k in keys]
    rng = np.random.default_rng(seed)
    stats = np.empty((draws, 2))
    for d in range(draws):
        idx = np.concatenate([groups[g] for g in rng.integers(0, len(groups), len(groups))])
        stats[d] = e[idx].mean(), q[idx].mean()

    def ci(x: np.ndarray) -> list[float]:
        return [float(v) for v in np.quantile(x, [0.05, 0.95])]

    return dict(n=len(rows), scenarios=len(keys), expected=float(e.mean()), realised=float(q.mean()),
                expected_ci=ci(stats[:, 0]), realised_ci=ci(stats[:, 1]), gap=float(e.mean() - q.mean()),
                gap_ci=ci(stats[:, 0] - stats[:, 1]))


def _line(label: str, s: dict) -> str:
    if not s.get("n"):
        return f"{label:34s} no measurements"
    pct = lambda v: f"{100 * v:6.2f} %"  # noqa: E731
    return (f"{label:34s} n={s['n']:4d} ({s['scenarios']:2d} scen.)  expected {pct(s['expected'])} "
            f"[{pct(s['expected_ci'][0])}, {pct(s['expected_ci'][1])}]  realised {pct(s['realised'])} "
            f"[{pct(s['realised_ci'][0])}, {pct(s['realised_ci'][1])}]  gap {pct(s['gap'])} "
            f"[{pct(s['gap_ci'][0])}, {pct(s['gap_ci'][1])}]")


def _by_expected(rows: list[dict]) -> list[tuple[str, dict]]:
    out = []
    for lo, hi in zip(_Z_BINS[:-1], _Z_BINS[1:]):
        sel = [r for r in rows if lo <= r["expected"] < hi]
        out.append((f"  expected in [{100 * lo:g} %, {100 * hi:g} %)", scenario_bootstrap(sel)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.voi_calibration", description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", help="comma-separated trace names (default: all)")
    ap.add_argument("--top", type=int, default=6, help="alternatives scored at the first decision (default 6)")
    ap.add_argument("--json", metavar="FILE", help="also write every row and summary here")
    args = ap.parse_args(argv)
    if args.top < 1:
        ap.error(f"--top must be >= 1, got {args.top}")
    names = tuple(args.workloads.split(",")) if args.workloads else None
    try:
        from benchmarks.scenarios import workloads

        workloads(names=names)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    b = bought(names)
    a = alternatives(names, top=args.top)
    summary = {
        "bought": scenario_bootstrap(b),
        "bought_first": scenario_bootstrap([r for r in b if r["order"] == 0]),
        "alternatives_rank0": scenario_bootstrap([r for r in a if r["rank"] == 0]),
        "alternatives_rest": scenario_bootstrap([r for r in a if r["rank"] > 0]),
    }
    print("Expected vs realised gain per measurement, shares of the oracle's cost (90 % intervals over scenarios):")
    print(_line("bought by cotune_voi (16 probes)", summary["bought"]))
    for label, s in _by_expected(b):
        print(_line(label, s))
    print(_line("  the first one bought", summary["bought_first"]))
    print(_line("first decision: rank 0 (net gain)", summary["alternatives_rank0"]))
    print(_line(f"first decision: ranks 1-{args.top - 1}", summary["alternatives_rest"]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(summary=summary, bought=b, alternatives=a), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
