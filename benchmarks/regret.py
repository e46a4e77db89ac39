"""Cost regret against the oracle, per policy and probe budget, and co-tuning savings.

For a plan choosing candidate ``c`` in scenario ``s``::

    regret(c)   = cost*(c) / cost*(oracle optimum) − 1        (≥ 0 when c is truly feasible)
    miss        = no plan, or the target is never reached at c, or time*(c) > deadline
    probe_share = probe cost / cost*(c)                         (probes against the training they plan)

Percentiles of regret count a miss as infinite regret: a policy that misses more than
10 % of scenarios has an infinite p90. Savings compare costs under the same target and
deadline: ``1 − cost*(cotune plan) / cost*(best independent baseline)``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

import numpy as np

from benchmarks.policies import Plan, policy_mask, run_policy
from benchmarks.scenarios import Scenario

__all__ = ["Outcome", "ScenarioResult", "evaluate_plan", "run_scenario", "summarize", "savings", "by_workload", "outcome_dicts"]


@dataclass(frozen=True)
class Outcome:
    scenario: str
    workload: str
    family: str
    target_label: str
    deadline_label: str
    policy: str
    budget: int
    probes: int
    probe_cost: float
    gpu: str | None
    workers: int | None
    local_batch: int | None
    predicted_cost: float
    predicted_time_s: float
    true_cost: float
    true_time_s: float
    oracle_cost: float
    regret: float  # inf when missed
    miss: str | None  # None, "no_plan", "target", "deadline"
    probe_share: float


@dataclass(frozen=True)
class ScenarioResult:
    scenario: str
    workload: str
    family: str
    target: float
    target_label: str
    deadline_s: float | None
    deadline_label: str
    n_candidates: int
    oracle_cost: float
    oracle_time_s: float
    oracle_config: tuple[str, int, int] | None
    resource_only_optimum: float  # best true cost with the batch fixed (inf: none feasible)
    batch_only_optimum: float  # best true cost with the resources fixed
    outcomes: tuple[Outcome, ...]


def evaluate_plan(scn: Scenario, plan: Plan, oracle_cost: float) -> Outcome:
    _, time_s, cost = scn.oracle.evaluate(scn.target)
    c = scn.candidates
    i = plan.index
    if i is None:
        miss, t_cost, t_time = "no_plan", math.inf, math.inf
    else:
        t_cost, t_time = float(cost[i]), float(time_s[i])
        if not math.isfinite(t_cost):
            miss = "target"
        elif scn.deadline_s is not None and t_time > scn.deadline_s:
            miss = "deadline"
        else:
            miss = None
    regret = math.inf if miss else t_cost / oracle_cost - 1.0
    return Outcome(
        scenario=scn.key,
        workload=scn.workload.name,
        family=scn.workload.family,
        target_label=scn.target_label,
        deadline_label=scn.deadline_label,
        policy=plan.policy,
        budget=plan.budget,
        probes=plan.probes,
        probe_cost=plan.probe_cost,
        gpu=None if i is None else c.gpus[int(c.gpu[i])],
        workers=None if i is None else int(c.workers[i]),
        local_batch=None if i is None else int(c.local_batch[i]),
        predicted_cost=plan.predicted_cost,
        predicted_time_s=plan.predicted_time_s,
        true_cost=t_cost,
        true_time_s=t_time,
        oracle_cost=oracle_cost,
        regret=regret,
        miss=miss,
        probe_share=plan.probe_cost / t_cost if math.isfinite(t_cost) and t_cost > 0 else math.inf,
    )


def _restricted_optimum(scn: Scenario, subspace: str) -> float:
    _, time_s, cost = scn.oracle.evaluate(scn.target)
    ok = policy_mask(scn, subspace) & np.isfinite(cost)
    if scn.deadline_s is not None:
        ok &= time_s <= scn.deadline_s
    return float(cost[ok].min()) if np.any(ok) else math.inf


def run_scenario(scn: Scenario, *, policies: Sequence[str], budgets: Sequence[int]) -> ScenarioResult:
    sol = scn.oracle.solve(scn.target, scn.deadline_s)
    outcomes = []
    for name in policies:
        for plan in run_policy(name, scn, tuple(budgets)):
            outcomes.append(evaluate_plan(scn, plan, sol.cost))
    c = scn.candidates
    cfg = None if sol.index is None else (c.gpus[int(c.gpu[sol.index])], int(c.workers[sol.index]), int(c.local_batch[sol.index]))
    return ScenarioResult(
        scenario=scn.key,
        workload=scn.workload.name,
        family=scn.workload.family,
        target=scn.target,
        target_label=scn.target_label,
        deadline_s=scn.deadline_s,
        deadline_label=scn.deadline_label,
        n_candidates=len(c),
        oracle_cost=sol.cost,
        oracle_time_s=sol.time_s,
        oracle_config=cfg,
        resource_only_optimum=_restricted_optimum(scn, "resource_only"),
        batch_only_optimum=_restricted_optimum(scn, "batch_only"),
        outcomes=tuple(outcomes),
    )


def _pct(values: np.ndarray, q: float) -> float:
    """Percentile that lets infinities through (numpy's interpolation would give NaN)."""
    if values.size == 0:
        return math.nan
    v = np.sort(values)
    return float(v[min(int(math.ceil(q / 100 * v.size)) - 1, v.size - 1)] if q > 0 else v[0])


def summarize(results: Iterable[ScenarioResult]) -> list[dict]:
    """Per (policy, budget): regret percentiles (misses = inf), miss rate, probe share."""
    rows: dict[tuple[str, int], list[Outcome]] = {}
    for r in results:
        for o in r.outcomes:
            rows.setdefault((o.policy, o.budget), []).append(o)
    out = []
    for (policy, budget), os_ in sorted(rows.items()):
        reg = np.array([o.regret for o in os_])
        share = np.array([o.probe_share for o in os_ if o.miss is None])
        out.append(
            {
                "policy": policy,
                "budget": budget,
                "scenarios": len(os_),
                "median_regret": _pct(reg, 50),
                "p90_regret": _pct(reg, 90),
                "worst_regret": float(reg.max()),
                "worst_regret_when_met": float(reg[np.isfinite(reg)].max()) if np.isfinite(reg).any() else math.nan,
                "miss_rate": float(np.mean(~np.isfinite(reg))),
                "misses": {k: sum(1 for o in os_ if o.miss == k) for k in ("no_plan", "target", "deadline")},
                "median_probe_share": float(np.median(share)) if share.size else math.nan,
                "share_probe_le_5pct": float(np.mean(share <= 0.05)) if share.size else math.nan,
                "median_probes": float(np.median([o.probes for o in os_])),
            }
        )
    return out


def savings(results: Iterable[ScenarioResult], *, budget: int, threshold: float = 0.05) -> dict:
    """Co-tuning savings against the best independent baseline.

    ``optimum``: the true optimum against the better of the two restricted optima (what
    co-tuning can save at best). ``cotune_plan``: cotune's plan (true cost) against the
    better of the baselines' plans at the same budget. "Co-tuning matters" where the
    optimum saving exceeds ``threshold``.
    """
    rows = []
    for r in results:
        best_base = min(r.resource_only_optimum, r.batch_only_optimum)
        plans = {o.policy: o for o in r.outcomes if o.budget == budget}
        if "cotune" not in plans:
            continue
        base_plans = [plans[p].true_cost for p in ("resource_only", "batch_only") if p in plans and plans[p].miss is None]
        cot = plans["cotune"]
        rows.append(
            {
                "scenario": r.scenario,
                "optimum_saving": 1 - r.oracle_cost / best_base if math.isfinite(best_base) else None,
                "baselines_infeasible": not math.isfinite(best_base),
                "plan_saving": (1 - cot.true_cost / min(base_plans)) if cot.miss is None and base_plans else None,
                "plan_saving_vs_baseline_optimum": (1 - cot.true_cost / best_base)
                if cot.miss is None and math.isfinite(best_base)
                else None,
            }
        )
    opt = np.array([r["optimum_saving"] for r in rows if r["optimum_saving"] is not None])
    matters = [r for r in rows if r["optimum_saving"] is not None and r["optimum_saving"] > threshold]
    plan_m = np.array([r["plan_saving"] for r in matters if r["plan_saving"] is not None])
    plan_vs_opt_m = np.array([r["plan_saving_vs_baseline_optimum"] for r in matters if r["plan_saving_vs_baseline_optimum"] is not None])
    return {
        "budget": budget,
        "threshold": threshold,
        "scenarios": len(rows),
        "baselines_infeasible": sum(r["baselines_infeasible"] for r in rows),
        "matters": len(matters),
        "optimum_saving_median_all": float(np.median(opt)) if opt.size else math.nan,
        "optimum_saving_median_matters": float(np.median([r["optimum_saving"] for r in matters])) if matters else math.nan,
        "optimum_saving_max": float(opt.max()) if opt.size else math.nan,
        "plan_saving_median_matters": float(np.median(plan_m)) if plan_m.size else math.nan,
        "plan_vs_baseline_optimum_median_matters": float(np.median(plan_vs_opt_m)) if plan_vs_opt_m.size else math.nan,
        "share_matters_ge_26_89pct": float(np.mean(np.array([r["optimum_saving"] for r in matters]) >= 0.2689)) if matters else math.nan,
        "rows": rows,
    }


def by_workload(results: Iterable[ScenarioResult], *, policy: str, budget: int) -> list[dict]:
    """Median regret, miss rate and probe share of one policy per workload."""
    groups: dict[str, list[Outcome]] = {}
    for r in results:
        for o in r.outcomes:
            if o.policy == policy and o.budget == budget:
                groups.setdefault(o.workload, []).append(o)
    out = []
    for name, os_ in groups.items():
        reg = np.array([o.regret for o in os_])
        share = np.array([o.probe_share for o in os_ if o.miss is None])
        out.append(
            {
                "workload": name,
                "median_regret": _pct(reg, 50),
                "miss_rate": float(np.mean(~np.isfinite(reg))),
                "median_probe_share": float(np.median(share)) if share.size else math.nan,
            }
        )
    return out


def outcome_dicts(results: Iterable[ScenarioResult]) -> list[dict]:
    return [asdict(o) for r in results for o in r.outcomes]
