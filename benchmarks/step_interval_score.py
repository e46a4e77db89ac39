"""How good the step-time intervals are, not only how often they cover: proper scores.

Coverage alone rewards an interval for being wide. This scores the step-time model's
predictive distribution at every *unprobed* candidate of the one-curve replay, after the
16 probes cotune buys in each scenario (each distinct probe set once), with two proper
scoring rules on log step time ``y``:

* the **interval (Winkler) score** of the central 90 % interval ``[l, u]``:
  ``(u − l) + (2/α)·(l − y)⁺ + (2/α)·(y − u)⁺`` with ``α = 0.1`` — width, plus a penalty
  for every miss (lower is better);
* the **log score** of the normal ``N(μ, σ²)`` the model states: ``½((y − μ)/σ)² + ln σ``
  (lower is better; the constant ``½ ln 2π`` left out).

Each workload weighs one in the overall means::

    python -m benchmarks.step_interval_score                 # every T4/hetero trace, ~1 min
    python -m benchmarks.step_interval_score --workloads bert-t4
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

__all__ = ["ALPHA", "interval_score", "log_score", "score_rows", "main"]

ALPHA = 0.1  # the central 90 % interval


def interval_score(y: np.ndarray, lower: np.ndarray, upper: np.ndarray, *, alpha: float = ALPHA) -> np.ndarray:
    """Winkler's interval score of ``[lower, upper]`` for truths ``y`` (all in the same units)."""
    y, lo, hi = (np.asarray(a, float) for a in (y, lower, upper))
    return (hi - lo) + (2.0 / alpha) * np.maximum(lo - y, 0.0) + (2.0 / alpha) * np.maximum(y - hi, 0.0)


def log_score(y: np.ndarray, mean: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Negative normal log density of ``y`` without its constant ``½ ln 2π``."""
    y, mu, s = (np.asarray(a, float) for a in (y, mean, sigma))
    return 0.5 * ((y - mu) / s) ** 2 + np.log(s)


def score_rows(workload: str, budget: int = 16) -> list[dict]:
    """One row per unprobed candidate of each distinct probe set cotune buys for ``workload``."""
    from benchmarks.policies import library_models, run_policy, unprobed_step_predictions
    from benchmarks.scenarios import scenarios, workloads

    rows: list[dict] = []
    seen: set[tuple[int, ...]] = set()
    for scn in scenarios(workloads(names=(workload,))):
        plan = run_policy("cotune", scn, (budget,), setting="one-curve")[0]
        if plan.probed in seen:
            continue
        seen.add(plan.probed)
        models = library_models(scn, scn.evidence("one-curve"), plan.probed)
        for p, true in unprobed_step_predictions(scn, models, plan.probed, scn.evidence("one-curve")):
            y = np.log(true)
            lo, hi = np.log(p.lower_s), np.log(p.upper_s)
            wink = interval_score(y, lo, hi)
            ls = log_score(y, np.log(p.step_time_s), np.asarray(p.log_sigma, float))
            rows += [dict(workload=workload, winkler=float(w), log_score=float(s), covered=bool(a <= v <= b))
                     for w, s, a, v, b in zip(wink, ls, lo, y, hi)]
    return rows


def main(argv: list[str] | None = None) -> int:
    from benchmarks._common import workloads_only_cli

    names = workloads_only_cli(argv, prog="python -m benchmarks.step_interval_score", description=__doc__.split("\n")[0])
    if names is None:
        return 2
    by: dict[str, list[dict]] = defaultdict(list)
    for n in names:
        for r in score_rows(n):
            by[n].append(r)
    print("workload             unprobed  interval score  log score  90 % coverage")
    means = []
    for name, rs in by.items():
        m = (float(np.mean([r["winkler"] for r in rs])), float(np.mean([r["log_score"] for r in rs])),
             float(np.mean([r["covered"] for r in rs])))
        means.append(m)
        print(f"{name:20s} {len(rs):9d}  {m[0]:14.3f}  {m[1]:9.3f}  {m[2]:13.1%}")
    if means:
        a = np.mean(np.array(means), axis=0)
        print(f"{'all (each weighs one)':20s} {'':9s}  {a[0]:14.3f}  {a[1]:9.3f}  {a[2]:13.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
