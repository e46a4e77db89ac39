"""What one probe costs against the job it plans: the floor of regret "with every cost counted".

The closed-loop aim asks for a median regret of at most 5 % with probes, training and
restarts all counted against the oracle, which pays for no probe. A policy that buys even
one probe pays at least the cheapest one (``setup_s`` plus ``probe_steps`` steps on its
workers, :class:`benchmarks.replay.ReplayLauncher`'s bill), so that share of the oracle's
cost is a floor under its regret. This prints, per workload, the cheapest probe of the
space and the cheapest probe *at the oracle's own configuration* (what confirming the
right answer costs) as shares of the oracle's cost, and how many scenarios' floors exceed
the aim. The step time the reference curve's own run logged (its configuration,
:attr:`~benchmarks.replay.ReplayLauncher.known`) needs no probe: the cheapest probe is over
the other configurations, and confirming an optimum that *is* that configuration costs 0::

    python -m benchmarks.probe_floor                       # every trace
    python -m benchmarks.probe_floor --workloads ncf-t4,bert-t4

Nothing is fitted: the shares come from the replay's measured step times and prices.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

__all__ = ["floor_rows", "summary", "main"]

AIM = 0.05  # the closed-loop aim: median regret ≤ 5 % with every cost counted


def floor_rows(workload: str) -> list[dict]:
    """One row per scenario of ``workload``: the oracle's cost and the cheapest probe's, and
    the probe at the oracle's configuration, as shares of the oracle's cost."""
    from benchmarks.replay import probe_price
    from benchmarks.scenarios import scenarios, workloads

    rows = []
    for scn in scenarios(workloads(names=(workload,))):
        o = scn.oracle
        c = o.candidates
        probe = probe_price(c.workers, o.price_per_hour, o.step_time_s)
        known = list(scn.launcher(scn.evidence("one-curve")).known)
        probe[known] = 0.0  # the reference curve's own run logged these step times: no probe needed
        paid = np.delete(probe, known)
        sol = o.solve(scn.target, scn.deadline_s)
        if sol.index is None or not sol.cost > 0:
            continue
        rows.append(dict(
            scenario=scn.key, workload=scn.workload.name, oracle_cost=float(sol.cost),
            cheapest_share=float(np.min(paid) / sol.cost), at_optimum_share=float(probe[sol.index] / sol.cost),
        ))
    return rows


def summary(rows: list[dict], aim: float = AIM) -> dict:
    """Medians of both shares and the fraction of scenarios whose cheapest probe alone exceeds ``aim``."""
    if not rows:
        return dict(n=0, median_cheapest=math.nan, median_at_optimum=math.nan, over_aim=math.nan)
    cheap = np.array([r["cheapest_share"] for r in rows])
    at_opt = np.array([r["at_optimum_share"] for r in rows])
    return dict(n=len(rows), median_cheapest=float(np.median(cheap)), median_at_optimum=float(np.median(at_opt)),
                over_aim=float(np.mean(cheap > aim)))


def main(argv: list[str] | None = None) -> int:
    from benchmarks._common import workloads_only_cli

    names = workloads_only_cli(argv, prog="python -m benchmarks.probe_floor", description=__doc__.split("\n")[0])
    if names is None:
        return 2
    rows = [r for n in names for r in floor_rows(n)]
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by[r["workload"]].append(r)
    print("workload            scenarios  cheapest probe  probe at the optimum  (median shares of the oracle's cost)")
    for name, rs in by.items():
        s = summary(rs)
        print(f"{name:20s} {s['n']:9d}  {s['median_cheapest']:14.2%}  {s['median_at_optimum']:20.2%}")
    s = summary(rows)
    print(f"{'all':20s} {s['n']:9d}  {s['median_cheapest']:14.2%}  {s['median_at_optimum']:20.2%}")
    print(f"scenarios whose cheapest probe alone costs more than {AIM:.0%} of the oracle: {s['over_aim']:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
