"""Cost regret against the oracle, per policy and probe budget, and co-tuning savings.

For a plan choosing candidate ``c`` in scenario ``s`` (open-loop settings)::

    regret(c)   = cost*(c) / cost*(oracle optimum) − 1        (≥ 0 when c is truly feasible)
    miss        = no plan, or the target is never reached at c, or time*(c) > deadline
    probe_share = probe cost / cost*(c)                         (probes against the training they plan)
    curve_share = cost of the curves the setting showed / cost*(c)   (reported apart)

In the closed-loop setting the plan is run against the truth and every cost counts:
``regret = (probes + training + restarts) / cost*(oracle) − 1``; a run the controller
gives up is a miss of its own cause (``gave_up``).

Percentiles of regret count a miss as infinite regret and follow numpy's default (linear
interpolation between order statistics, ``_pct``): the median of an even count is the
mean of its two middle values, ∞ if either is; p90 of ``n`` scenarios is ∞ once the
misses reach ``n − ceil(0.9 (n − 1))`` (8 of 72, 1 of 10). Savings compare costs under the same target and
deadline: ``1 − cost*(cotune plan) / cost*(best independent baseline)``.
"""

from __future__ import annotations

import math
import sys
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

import numpy as np

from benchmarks.policies import Plan, policy_mask, run_policy
from benchmarks.reliability import brier, ece
from benchmarks.reliability import merge as merge_counts
from benchmarks.scenarios import Scenario
from benchmarks.settings import Evidence

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
    miss: str | None  # None, "no_plan", "target", "deadline", "gave_up"
    probe_share: float
    setting: str = "free-curves"
    curve_cost: float = 0.0  # USD of every learning curve the setting showed the planner
    curve_share: float = math.inf  # curve_cost / true training cost of the plan
    confidence: float | None = None
    p_success: float | None = None  # the plan's promised probability of success (None: not given)
    step_hits: int = 0
    step_n: int = 0
    epochs_hits: int = 0
    epochs_n: int = 0
    train_cost: float = math.nan  # closed loop: training, restarts (probes are in probe_cost)
    restart_cost: float = 0.0
    restarts: int = 0
    revocations: int = 0  # closed loop on spot: revocations suffered (benchmarks/closed_loop_spot.py)
    market: str = "on_demand"  # closed loop: the market the run finished on
    expected_gain: float = 0.0  # value-of-information planner: expected vs realised gain of what it bought
    realised_gain: float = 0.0
    accuracy_runs: int = 0
    accuracy_cost: float = 0.0
    reliability: dict | None = None  # P(success)/P(reach) counts over every candidate (benchmarks/reliability.py)
    epochs_reached_hits: int = 0
    epochs_reached_n: int = 0


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
    errors: tuple[str, ...] = ()  # policies that raised on this scenario (counted as misses by the summary)
    # (setting, budgets) run in each setting: the rows a raise stands in for, even where a
    # policy raised on every scenario and left no outcome to read its budgets from
    budgets: tuple[tuple[str, tuple[int, ...]], ...] = ()


def evaluate_plan(scn: Scenario, plan: Plan, oracle_cost: float, evidence: Evidence | None = None) -> Outcome:
    ev = evidence or scn.evidence()
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
        setting=ev.setting,
        curve_cost=ev.curve_cost,
        curve_share=ev.curve_cost / t_cost if math.isfinite(t_cost) and t_cost > 0 else math.inf,
        confidence=plan.confidence,
        p_success=plan.p_success,
        step_hits=plan.step_hits,
        step_n=plan.step_n,
        epochs_hits=plan.epochs_hits,
        epochs_n=plan.epochs_n,
        train_cost=t_cost,
        expected_gain=plan.expected_gain,
        realised_gain=plan.realised_gain,
        accuracy_runs=plan.accuracy_runs,
        accuracy_cost=plan.accuracy_cost,
        reliability=None if plan.reliability is None else dict(plan.reliability),
        epochs_reached_hits=plan.epochs_reached_hits,
        epochs_reached_n=plan.epochs_reached_n,
    )


def _restricted_optimum(scn: Scenario, subspace: str) -> float:
    _, time_s, cost = scn.oracle.evaluate(scn.target)
    ok = policy_mask(scn, subspace) & np.isfinite(cost)
    if scn.deadline_s is not None:
        ok &= time_s <= scn.deadline_s
    return float(cost[ok].min()) if np.any(ok) else math.inf


def run_scenario(
    scn: Scenario,
    *,
    budgets: Sequence[int],
    settings: Sequence[str] = ("free-curves",),
    policies: Sequence[str] | None = None,
    closed_loop_budgets: Sequence[int] | None = None,
) -> ScenarioResult:
    """Every default policy of every setting on one scenario (``policies``: exactly these, by name,
    optional ones included)."""
    from benchmarks._registry import POLICIES, SETTINGS, load, policies_for

    load()
    sol = scn.oracle.solve(scn.target, scn.deadline_s)
    outcomes = []
    errors: list[str] = []
    run_budgets: list[tuple[str, tuple[int, ...]]] = []
    for setting_name in settings:
        ev = scn.evidence(setting_name)
        closed = SETTINGS[setting_name].closed_loop
        run_budgets.append((setting_name, tuple(int(b) for b in (closed_loop_budgets or (max(budgets),)))
                            if closed else tuple(int(b) for b in budgets)))
        for name in policies_for(setting_name, include_optional=policies is not None):
            if policies is not None and name not in policies:
                continue
            try:
                if closed:
                    got = [POLICIES[name].run(scn, ev, int(b)).outcome(scn, ev, sol.cost) for b in closed_loop_budgets or (max(budgets),)]
                else:
                    got = [evaluate_plan(scn, plan, sol.cost, ev) for plan in run_policy(name, scn, tuple(budgets), setting=setting_name)]
            except Exception as exc:  # one broken policy must not lose a whole campaign: record it, report it
                errors.append(f"{setting_name}/{name}: {type(exc).__name__}: {exc}")
                print(f"[benchmarks] ERROR {scn.key} {setting_name}/{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            outcomes.extend(got)
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
        errors=tuple(errors),
        budgets=tuple(run_budgets),
    )


def _pct(values: np.ndarray, q: float) -> float:
    """The ``q``-th percentile by numpy's default (linear interpolation between the two
    nearest order statistics), letting infinities through: numpy would give NaN where it
    weighs a finite value against ∞. An ∞ with a nonzero weight makes the percentile ∞.
    So ``q = 50`` of an even count is the mean of the two middle values (∞ if either is),
    not the lower one: a lower-middle median would flatter every row of 72 scenarios."""
    if values.size == 0:
        return math.nan
    v = np.sort(np.asarray(values, dtype=float))
    pos = q / 100.0 * (v.size - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, v.size - 1)
    frac = pos - lo
    if frac == 0.0 or lo == hi:
        return float(v[lo])
    if math.isinf(v[hi]) or math.isinf(v[lo]):
        return float(v[hi]) if math.isinf(v[hi]) else float(v[lo])
    return float(v[lo] + frac * (v[hi] - v[lo]))


def _num(x: float | None) -> float:
    return 0.0 if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _median(values: Sequence[float]) -> float:
    """np.median without its warning on a row that has no outcome (a policy that raised everywhere)."""
    return float(np.median(values)) if len(values) else math.nan


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def _share(values: list[bool]) -> float | None:
    return float(np.mean(values)) if values else None


def _delivered(os_: list[Outcome]) -> tuple[float | None, float | None]:
    """(delivered, promised): share of the plans made that reached the target by the deadline,
    and the mean probability the models promised them (the confidence where none is given)."""
    made = [o for o in os_ if o.miss != "no_plan"]
    delivered = _share([o.miss is None for o in made])
    ps = [o.p_success for o in made if o.p_success is not None]
    if ps:
        promised: float | None = float(np.mean(ps))
    else:
        conf = {o.confidence for o in made}
        promised = conf.pop() if len(conf) == 1 else None
    return delivered, promised


def summarize(results: Iterable[ScenarioResult]) -> list[dict]:
    """One row per (setting, policy, probe budget): regret (misses = inf), misses by cause,
    probe and curve cost shares, calibration (delivered vs promised) and interval coverage."""
    from benchmarks._registry import POLICIES, SETTINGS, load

    load()
    results = list(results)
    rows: dict[tuple[str, str, int], list[Outcome]] = {}
    for r in results:
        for o in r.outcomes:
            rows.setdefault((o.setting, o.policy, o.budget), []).append(o)
    # Scenarios on which a policy raised: left out of its outcomes, so counted here as misses —
    # a crash must not shrink its own denominator (and read as a lower miss rate).
    raised: dict[tuple[str, str], int] = {}
    raised_budgets: dict[tuple[str, str], set[int]] = {}
    seen_budgets: dict[str, set[int]] = {}
    for o in (o for os_ in rows.values() for o in os_):
        seen_budgets.setdefault(o.setting, set()).add(o.budget)
    for r in results:
        recorded = {s_name: set(bs) for s_name, bs in r.budgets}
        for e in r.errors:
            where = e.split(":", 1)[0]
            if "/" in where:
                s_name, p_name = where.split("/", 1)
                raised[(s_name, p_name)] = raised.get((s_name, p_name), 0) + 1
                # older results.json files record no budgets: those the setting's other policies ran
                raised_budgets.setdefault((s_name, p_name), set()).update(recorded.get(s_name) or seen_budgets.get(s_name, ()))
    # A policy that raised everywhere has no outcome, but it still gets its rows (all misses):
    # a policy must not vanish from the table by failing completely.
    for (s_name, p_name), bs in raised_budgets.items():
        for b in bs:
            rows.setdefault((s_name, p_name, b), [])
    order = {name: (spec.order, i) for i, (name, spec) in enumerate(SETTINGS.items())}
    pol_order = {name: i for i, name in enumerate(POLICIES)}
    keys = sorted(rows, key=lambda k: (order.get(k[0], (99, 0)), pol_order.get(k[1], 999), k[2]))
    delivered = {k: _delivered(rows[k]) for k in keys}
    out = []
    for key in keys:
        setting_name, policy_name, budget = key
        os_ = rows[key]
        spec = POLICIES.get(policy_name)
        family = spec.family if spec else policy_name
        failed = [math.inf] * raised.get((setting_name, policy_name), 0)  # a raise is a miss: infinitely dear
        reg = np.array([o.regret for o in os_] + failed)
        # Regret of the training alone (restarts included, probes not): the closed loop's
        # regret without the probes every cotune variant paid alike.
        reg_train = np.array(
            [math.inf if o.miss else (_num(o.train_cost) + _num(o.restart_cost)) / o.oracle_cost - 1.0 for o in os_] + failed
        )
        share = np.array([o.probe_share for o in os_ if o.miss is None])
        curve = np.array([o.curve_share for o in os_ if o.miss is None])
        by_q: dict[float, tuple[float | None, float | None]] = {}
        for other in keys:
            ospec = POLICIES.get(other[1])
            if other[0] == setting_name and other[2] == budget and ospec and ospec.family == family and ospec.confidence is not None:
                by_q[ospec.confidence] = delivered[other]
        step_n = sum(o.step_n for o in os_)
        epochs_n = sum(o.epochs_n for o in os_)
        reached_n = sum(o.epochs_reached_n for o in os_)
        own_delivered, own_promised = delivered[key]
        if spec is not None and not spec.probabilities:
            # Its "P(success)" is 1 or 0 by construction (zero-width intervals): no promise to score.
            own_promised = None
        rel_s = merge_counts(o.reliability.get("success") for o in os_ if o.reliability)
        rel_r = merge_counts(o.reliability.get("reach") for o in os_ if o.reliability)
        out.append(
            {
                "setting": setting_name,
                "policy": policy_name,
                "probes": budget,
                "scenarios": len(reg),
                "miss_rate": float(np.mean(~np.isfinite(reg))),
                "errors": raised.get((setting_name, policy_name), 0),
                "median_regret": _pct(reg, 50),
                "delivered_q90": by_q.get(0.9, (None, None))[0],
                "coverage_step_90": sum(o.step_hits for o in os_) / step_n if step_n else None,
                # the epochs interval is conditional on reaching the target: checked where the truth reaches it
                # (the older count, every unreached held-out batch a miss, is coverage_epochs_90_unconditional)
                "coverage_epochs_90": sum(o.epochs_reached_hits for o in os_) / reached_n if reached_n else None,
                "probe_share": float(np.median(share)) if share.size else None,
                # P(success) / P(reach) against the truth at every estimated candidate (None: not checked)
                "brier": brier(rel_s),
                "ece": ece(rel_s),
                "brier_reach": brier(rel_r),
                "ece_reach": ece(rel_r),
                # extras
                "budget": budget,
                "family": family,
                "upper_bound": SETTINGS[setting_name].upper_bound if setting_name in SETTINGS else False,
                "p90_regret": _pct(reg, 90),
                "median_regret_training": _pct(reg_train, 50),
                "worst_regret": float(reg.max()) if reg.size else math.nan,
                "worst_regret_when_met": float(reg[np.isfinite(reg)].max()) if np.isfinite(reg).any() else math.nan,
                "misses": {k: sum(1 for o in os_ if o.miss == k) for k in ("no_plan", "target", "deadline", "gave_up")},
                "median_probe_share": float(np.median(share)) if share.size else math.nan,
                "share_probe_le_5pct": float(np.mean(share <= 0.05)) if share.size else math.nan,
                "curve_share": float(np.median(curve)) if curve.size else None,
                "median_curve_cost": _median([o.curve_cost for o in os_]),
                "median_probes": _median([o.probes for o in os_]),
                "delivered": own_delivered,
                "promised": own_promised,
                "delivered_q50": by_q.get(0.5, (None, None))[0],
                "promised_q50": by_q.get(0.5, (None, None))[1],
                "promised_q90": by_q.get(0.9, (None, None))[1],
                "coverage_step_n": step_n,
                "coverage_epochs_n": epochs_n,
                "coverage_epochs_90_unconditional": sum(o.epochs_hits for o in os_) / epochs_n if epochs_n else None,
                "coverage_epochs_reached_n": reached_n,
                "mean_restarts": _mean([o.restarts for o in os_]),
                "mean_revocations": _mean([o.revocations for o in os_]),
                "mean_accuracy_runs": _mean([o.accuracy_runs for o in os_]),
                # value-of-information planner: summed gains as shares of the oracle's cost
                "median_expected_gain_share": _median([o.expected_gain / o.oracle_cost for o in os_]),
                "median_realised_gain_share": _median([o.realised_gain / o.oracle_cost for o in os_]),
            }
        )
    return out


def savings(results: Iterable[ScenarioResult], *, budget: int, threshold: float = 0.05, setting: str = "one-curve") -> dict:
    """Co-tuning savings against the best independent baseline.

    ``optimum``: the true optimum against the better of the two restricted optima (what
    co-tuning can save at best). ``cotune_plan``: cotune's plan (true cost) against the
    better of the baselines' plans at the same budget. "Co-tuning matters" where the
    optimum saving exceeds ``threshold``.
    """
    rows = []
    for r in results:
        best_base = min(r.resource_only_optimum, r.batch_only_optimum)
        plans = {o.policy: o for o in r.outcomes if o.budget == budget and o.setting == setting}
        if "cotune" not in plans:
            continue
        base_plans = [plans[p].true_cost for p in ("resource_only", "batch_only") if p in plans and plans[p].miss is None]
        cot = plans["cotune"]
        rows.append(
            {
                "scenario": r.scenario,
                "optimum_saving": 1 - r.oracle_cost / best_base if math.isfinite(best_base) else None,
                "baselines_infeasible": not math.isfinite(best_base),
                "cotune_met": cot.miss is None,
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
    # The medians above are over the scenarios cotune met: a miss has no cost to compare, so it
    # drops out — and the report must say how many did. Beside them, a miss counted as no saving.
    plan_m_miss0 = np.array([0.0 if not r["cotune_met"] else r["plan_saving"] for r in matters
                             if not r["cotune_met"] or r["plan_saving"] is not None])
    return {
        "budget": budget,
        "setting": setting,
        "threshold": threshold,
        "scenarios": len(rows),
        "baselines_infeasible": sum(r["baselines_infeasible"] for r in rows),
        "matters": len(matters),
        "optimum_saving_median_all": float(np.median(opt)) if opt.size else math.nan,
        "optimum_saving_median_matters": float(np.median([r["optimum_saving"] for r in matters])) if matters else math.nan,
        "optimum_saving_max": float(opt.max()) if opt.size else math.nan,
        "plan_saving_median_matters": float(np.median(plan_m)) if plan_m.size else math.nan,
        "plan_vs_baseline_optimum_median_matters": float(np.median(plan_vs_opt_m)) if plan_vs_opt_m.size else math.nan,
        "cotune_met_matters": sum(r["cotune_met"] for r in matters),
        "plan_saving_n_matters": int(plan_m.size),
        "plan_vs_baseline_optimum_n_matters": int(plan_vs_opt_m.size),
        "plan_saving_median_matters_miss_as_zero": float(np.median(plan_m_miss0)) if plan_m_miss0.size else math.nan,
        "share_matters_ge_26_89pct": float(np.mean(np.array([r["optimum_saving"] for r in matters]) >= 0.2689)) if matters else math.nan,
        "rows": rows,
    }


def by_workload(results: Iterable[ScenarioResult], *, policy: str, budget: int, setting: str = "one-curve") -> list[dict]:
    """Median regret, miss rate and probe share of one policy per workload."""
    groups: dict[str, list[Outcome]] = {}
    for r in results:
        for o in r.outcomes:
            if o.policy == policy and o.budget == budget and o.setting == setting:
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


def summarize_outcome_dicts(outcomes: Iterable[dict], *, scenarios: Iterable[dict] = ()) -> list[dict]:
    """:func:`summarize` from a ``results.json`` (read with ``report.read_json``): ``outcomes``
    its ``regret.outcomes``, ``scenarios`` its ``regret.scenarios`` (their ``errors`` count as
    misses, as in :func:`summarize`; without them a policy's raises are not counted)."""
    from types import SimpleNamespace

    fields = set(Outcome.__dataclass_fields__)
    rows = [Outcome(**{k: (math.nan if v is None and k == "train_cost" else v) for k, v in o.items() if k in fields}) for o in outcomes]
    # One stand-in per scenario for its errors and budgets, one more holding every outcome:
    # summarize reads only these three attributes.
    stand_ins = [
        SimpleNamespace(outcomes=(), errors=tuple(sc.get("errors") or ()),
                        budgets=tuple((s_name, tuple(bs)) for s_name, bs in (sc.get("budgets") or ())))
        for sc in scenarios
    ]
    return summarize([SimpleNamespace(outcomes=rows, errors=(), budgets=()), *stand_ins])  # type: ignore[list-item]
