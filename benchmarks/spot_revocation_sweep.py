"""When do spot, on-demand or mixed plans win, and do their deadline promises hold?

Workload: the bundled ``cifar10-resnet18`` profile (Pollux T4 traces), target 94 %
top-1, deadline 45 min at confidence 0.9, one T4 per server, 16 on-demand and 16 spot
T4s at $0.526 / $0.158 per GPU-hour, checkpoint 30 s, reload 30 s, replacement 3 min.
For each revocation rate (per server-hour) the best plan of each market is chosen as
``recommend(..., cluster=...)`` would, then simulated with a fresh seed (4000 runs):

* ``miss@W``: share of simulated runs finishing after the deadline when training needs
  exactly the model's mean time ``W`` (only revocations are random);
* ``miss@Wq``: the same at the model's 0.9-quantile ``W_q``, the work the promise was
  made for (revocations on top of the model's pessimistic case).

The promise is ``P(finish ≤ deadline) ≥ 0.9``, i.e. a miss rate of at most 10 %.
On-demand plans have no revocations: their miss rate is 0 at both ``W`` and ``W_q``.

Run: ``python benchmarks/spot_revocation_sweep.py`` (prints its table).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cotune.profile import load_profile  # noqa: E402
from cotune.solver import build_space  # noqa: E402
from cotune.models import fit_models  # noqa: E402
from cotune.solver import enumerate_candidates, estimate, feasibility, ranked  # noqa: E402
from cotune.spot import SpotMarket, simulate  # noqa: E402

DEADLINE_S, Q, STARTUP_S, RUNS, SEED = 45 * 60.0, 0.9, 0.0, 4000, 12345
RATES = (0.0, 0.1, 0.5, 1.0, 2.0, 4.0, 8.0)
CLUSTER = """
version = 1
gpus_per_host = 1
[checkpoint]
write_s = 30
restart_s = 30
[gpu.t4]
on_demand = 16
spot = 16
on_demand_price_per_hour = 0.526
spot_price_per_hour = 0.158
revocation_rate_per_hour = {rate}
replacement_delay_s = 180
"""


def best_per_market(models, path):
    plan = SpotMarket.create(path, profiled_gpus=models.gpus, gpus=None, max_workers=16, gpus_per_host=None)
    space, _ = build_space(models, gpus=plan.gpus, max_workers=plan.max_workers, gpus_per_host=plan.gpus_per_host,
                           local_batches=None, markets=plan.space_markets)
    cands = plan.candidates(enumerate_candidates(space), mixed=True)
    base = estimate(cands, models, target=0.94, price_per_hour=plan.price_table(space.gpus), startup_s=STARTUP_S, confidence=Q)
    est, details = plan.adjust(base, startup_s=STARTUP_S, confidence=Q, deadline_s=DEADLINE_S)
    ok = feasibility(est, deadline_s=DEADLINE_S, budget=None).all
    c = est.candidates
    # base rows keyed by configuration, to recover W and W_q of any adjusted row
    bkey = {(int(base.candidates.gpu[i]), int(base.candidates.workers[i]), int(base.candidates.local_batch[i]), int(base.candidates.market[i])): i
            for i in range(len(base.candidates))}
    out = {}
    for mi, market in enumerate(c.markets):
        order = ranked(est, ok & (c.market == mi), "cost", limit=1)
        if not order.size:
            out[market] = None
            continue
        i = int(order[0])
        b = bkey[(int(c.gpu[i]), int(c.workers[i]), int(c.local_batch[i]), mi)]
        out[market] = dict(
            i=i, workers=int(c.workers[i]), batch=int(c.local_batch[i]), cost=float(est.cost[i]),
            time=float(est.time_s[i]), promised=float(est.time_at_confidence_s[i]),
            w=float(base.time_s[b] - STARTUP_S), wq=float(base.time_at_confidence_s[b] - STARTUP_S),
            lam=float(details.job_revocations_per_hour[i]) / 3600 if np.isfinite(details.job_revocations_per_hour[i]) else 0.0,
            tau=float(details.checkpoint_interval_s[i]), schedule=float(details.schedule_s[i]) - STARTUP_S,
        )
    return out, plan


def miss_rate(p, market, plan) -> tuple[float, float]:
    if market == "on_demand":
        return 0.0, 0.0
    ck = plan.cluster.checkpoint
    restart = plan.cluster.gpus["t4"].replacement_delay_s + ck.restart_s
    out = []
    for work in (p["w"], p["wq"]):
        kw = dict(work_s=work, rate_per_s=p["lam"], checkpoint_interval_s=p["tau"], checkpoint_write_s=ck.write_s,
                  restart_s=restart, runs=RUNS, seed=SEED)
        if market == "mixed":
            kw.update(policy="mixed", schedule_s=p["schedule"], switch_s=restart)
        sim = simulate(**kw)
        out.append(float((STARTUP_S + sim.time_s > DEADLINE_S).mean()))
    return out[0], out[1]


def main() -> None:
    t0 = time.perf_counter()
    models = fit_models(load_profile("cifar10-resnet18"))
    print(f"cifar10-resnet18 → 94% top-1 within {DEADLINE_S / 60:.0f} min at confidence {Q}; promise: miss ≤ {1 - Q:.0%}\n")
    head = (f"{'rate/h':>6}  {'market':<9} {'n':>2} {'b':>4} {'cost $':>7} {'E[T] min':>8} {'T_q min':>7} "
            f"{'miss@W':>7} {'miss@Wq':>7}  winner")
    print(head)
    print("-" * len(head))
    with tempfile.TemporaryDirectory() as tmp:
        for rate in RATES:
            path = Path(tmp) / f"c{rate}.toml"
            path.write_text(CLUSTER.format(rate=rate), encoding="utf-8")
            best, plan = best_per_market(models, path)
            feasible = {m: p for m, p in best.items() if p is not None}
            winner = min(feasible, key=lambda m: feasible[m]["cost"]) if feasible else "none"
            for market in ("on_demand", "spot", "mixed"):
                p = best.get(market)
                if p is None:
                    print(f"{rate:>6.1f}  {market:<9} {'—':>2} {'—':>4} {'—':>7} {'—':>8} {'—':>7} {'—':>7} {'—':>7}  "
                          f"{'(no feasible plan)' if market != 'mixed' else '(not needed or impossible)'}")
                    continue
                m_w, m_wq = miss_rate(p, market, plan)
                print(f"{rate:>6.1f}  {market:<9} {p['workers']:>2} {p['batch']:>4} {p['cost']:>7.3f} {p['time'] / 60:>8.1f} "
                      f"{p['promised'] / 60:>7.1f} {m_w:>7.1%} {m_wq:>7.1%}  {'<- wins' if market == winner else ''}")
            print()
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
