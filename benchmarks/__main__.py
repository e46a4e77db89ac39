"""``python -m benchmarks [--quick]``: every benchmark, from the published traces.

Writes ``results.json``, ``report.md`` and PNG figures into ``benchmarks/results/``
(or ``--out``). Every setting registered in :mod:`benchmarks._registry` runs, in the
order registered (today the headline ``one-curve``, the upper bound ``free-curves``, the
``closed-loop`` replay), each with every policy registered for it: a new setting or
policy is its registry entry, with no list here to edit. Progress goes to stderr. The full run aims at
under 20 minutes on 2 CPU cores, ``--quick`` at under 3 (a slice: fewer workloads,
scenarios and budgets).

``--priors`` names where the models' priors come from (a registered prior set,
:mod:`benchmarks.priors`): ``shipped`` (the default) plans with the constants cotune ships,
fitted on these same workloads; ``held-out`` plans every scenario of a workload with every
such prior refitted without that workload's data (computed once per run: 739 s on 2 shared
cores, 2026-12-07); ``refit`` with every prior refitted on all of them by today's fitting
code. Every summary row carries the choice as ``priors``.

Exit status: 0 when the run finished; 2, with one line on stderr and nothing run, for an
unknown policy, setting or prior set, a ``--policies`` name that none of the chosen ``--settings``
runs, a bad ``--cluster`` file, an ``--out`` that cannot be written into (an existing
file, a read-only folder) or a missing trace. Results replace an existing
``results.json``/``report.md`` only once written whole.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

__all__ = ["Config", "FULL", "QUICK", "run", "main"]


@dataclass(frozen=True)
class Config:
    mode: str
    workloads: tuple[str, ...] | None  # None: all eight
    target_labels: tuple[str, ...]
    deadline_factors: tuple[float | None, ...]
    budgets: tuple[int, ...]
    headline_budget: int
    time_workloads: tuple[str, ...] | None
    latency_sizes: tuple[int, ...]
    latency_repeats: int
    optuna_sizes: tuple[int, ...]
    optuna_max_trials: int
    # None: every registered setting, in the order registered (benchmarks._registry.SETTINGS).
    settings: tuple[str, ...] | None = None
    closed_loop_budgets: tuple[int, ...] = ()
    policies: tuple[str, ...] | None = None  # None: every default policy of each setting
    cluster: str | None = None  # the spot policies' cluster file (None: benchmarks/clusters/spot_replay.toml)
    priors: str = "shipped"  # a registered prior set (benchmarks._registry.PRIOR_SETS): where the models' priors come from


FULL = Config(
    mode="full",
    workloads=None,
    target_labels=("loose", "all", "tight"),
    deadline_factors=(None, 3.0, 1.5),
    budgets=(6, 10, 16),
    headline_budget=16,
    time_workloads=None,
    latency_sizes=(1_000, 10_000, 100_000, 1_000_000),
    latency_repeats=3,
    optuna_sizes=(10_000, 100_000),
    optuna_max_trials=2000,
    closed_loop_budgets=(16,),
)
QUICK = Config(
    mode="quick",
    workloads=("cifar10-t4", "yolov3-t4", "cifar10-hetero"),
    target_labels=("all", "tight"),
    deadline_factors=(None, 1.5),
    budgets=(6, 12),
    headline_budget=12,
    time_workloads=("cifar10-t4", "cifar10-hetero"),
    latency_sizes=(1_000, 10_000, 100_000),
    latency_repeats=1,
    optuna_sizes=(10_000,),
    optuna_max_trials=500,
    closed_loop_budgets=(12,),
)

_SCENARIOS: dict[tuple, list] = {}
_HEADLINE = "one-curve"


def _registered_settings() -> tuple[str, ...]:
    """Every registered setting's name, in the order registered, but the opt-in ones
    (they run where ``--settings`` names them)."""
    from benchmarks._registry import SETTINGS, load

    load()
    return tuple(name for name, spec in SETTINGS.items() if not spec.opt_in)


def _registered_prior_sets() -> tuple[str, ...]:
    """Every registered prior set's name (``--priors``)."""
    from benchmarks._registry import PRIOR_SETS, load

    load()
    return tuple(PRIOR_SETS)


def _with_settings(cfg: Config) -> Config:
    """``cfg`` with its settings named (None: every registered one)."""
    return cfg if cfg.settings is not None else dataclasses.replace(cfg, settings=_registered_settings())


def _log(msg: str) -> None:
    print(f"[benchmarks] {msg}", file=sys.stderr, flush=True)


def _scenario_list(cfg: Config) -> list:
    from benchmarks.scenarios import scenarios, workloads

    key = (cfg.workloads, cfg.target_labels, cfg.deadline_factors)
    if key not in _SCENARIOS:
        _SCENARIOS[key] = list(
            scenarios(workloads(names=cfg.workloads), target_labels=cfg.target_labels, deadline_factors=cfg.deadline_factors)
        )
    return _SCENARIOS[key]


def _run_one(args: tuple):
    """One scenario, every setting and policy (runs in a worker process), planned with the
    scenario's workload's priors (None: the shipped ones)."""
    from benchmarks.closed_loop_spot import use_cluster
    from benchmarks.priors import use_priors
    from benchmarks.regret import run_scenario

    cfg, i, priors = args
    use_cluster(cfg.cluster)
    t0 = time.perf_counter()
    scn = _scenario_list(cfg)[i]
    with use_priors(priors):
        out = run_scenario(
            scn, budgets=cfg.budgets, settings=cfg.settings, policies=cfg.policies, closed_loop_budgets=cfg.closed_loop_budgets or None
        )
    return out, scn.key, time.perf_counter() - t0


def _pareto_cases(cfg: Config, results: list, priors: dict) -> list[dict]:
    """One scenario per workload (tightest target, a deadline when there is one) for the front plot
    (planned with the workload's ``priors``, as its scenarios were)."""
    from benchmarks._registry import POLICIES, load
    from benchmarks.policies import fitted_estimates
    from benchmarks.priors import use_priors
    from cotune.solver import pareto_indices

    load()

    scns = _scenario_list(cfg)
    by_key = {r.scenario: r for r in results}
    cases = []
    seen = set()
    preferred = [s for s in scns if s.target_label == "tight" and s.deadline_label != "none"] + list(scns)
    for scn in preferred:
        if scn.workload.name in seen:
            continue
        seen.add(scn.workload.name)
        r = by_key[scn.key]
        _, time_s, cost = scn.oracle.evaluate(scn.target)
        fin = np.isfinite(cost)
        front = scn.oracle.pareto(scn.target)
        plans = {o.policy: o for o in r.outcomes if o.budget == cfg.headline_budget and o.setting == _HEADLINE}
        chosen = {}
        styles = {
            "cotune (true)": dict(marker="o", s=60, color="tab:blue", edgecolor="k"),
            "cotune (predicted)": dict(marker="o", s=60, facecolor="none", edgecolor="tab:blue"),
        }
        # The baselines drawn beside cotune: every policy registered with a plot_style, in
        # the order registered (a new one is drawn by its entry alone).
        for name, spec in POLICIES.items():
            o = plans.get(name)
            if "plot_style" in spec.extra and o is not None and math.isfinite(o.true_cost):
                chosen[name] = ((o.true_time_s / 3600, o.true_cost), dict(spec.extra["plot_style"]))
        cot = plans.get("cotune")
        pred_t, pred_c = [], []
        if cot is not None:
            if math.isfinite(cot.true_cost):
                chosen["cotune (true)"] = ((cot.true_time_s / 3600, cot.true_cost), styles["cotune (true)"])
            if math.isfinite(cot.predicted_cost):
                chosen["cotune (predicted)"] = ((cot.predicted_time_s / 3600, cot.predicted_cost), styles["cotune (predicted)"])
            with use_priors(priors.get(scn.workload.name)):
                plan = _cotune_plan(scn, cfg)
                if plan is not None:
                    _, est = fitted_estimates(scn, plan.probed, setting=_HEADLINE)
                    pf = pareto_indices(est, np.isfinite(est.epochs))
                    pred_t, pred_c = list(est.time_s[pf] / 3600), list(est.cost[pf])
        cases.append(
            {
                "title": f"{scn.key} (target {scn.target:.4g})",
                "all_time_h": list(time_s[fin] / 3600),
                "all_cost": list(cost[fin]),
                "front_time_h": list(time_s[front] / 3600),
                "front_cost": list(cost[front]),
                "pred_front_time_h": pred_t,
                "pred_front_cost": pred_c,
                "oracle": (r.oracle_time_s / 3600, r.oracle_cost),
                "deadline_h": None if scn.deadline_s is None else scn.deadline_s / 3600,
                "chosen": chosen,
            }
        )
    return cases


def _setting_docs(cfg: Config) -> list[dict]:
    from benchmarks._registry import POLICIES, SETTINGS, load, policies_for

    load()
    return [
        {
            "setting": name,
            "description": SETTINGS[name].description,
            "upper_bound": SETTINGS[name].upper_bound,
            "closed_loop": SETTINGS[name].closed_loop,
            "policies": {p: POLICIES[p].description for p in policies_for(name)},
        }
        for name in sorted(cfg.settings, key=lambda n: SETTINGS[n].order)
    ]


def _cotune_plan(scn, cfg: Config):
    from benchmarks.policies import run_policy

    plans = run_policy("cotune", scn, (cfg.headline_budget,), setting=_HEADLINE)
    return plans[0] if plans else None


def run(cfg: Config, out: Path, *, jobs: int = 2, command: str = "") -> dict:
    """Run every section of ``cfg``; write JSON, Markdown and figures into ``out``."""
    from benchmarks import latency, model_error, regret, report
    from benchmarks._registry import PRIOR_SETS, load
    from benchmarks.priors import as_dict, use_priors
    from benchmarks.scenarios import workloads

    t0 = time.perf_counter()
    cfg = _with_settings(cfg)
    out.mkdir(parents=True, exist_ok=True)
    ws = workloads(names=cfg.workloads)
    load()

    # the priors each workload is planned with, once per run (None: the shipped constants)
    priors = dict(PRIOR_SETS[cfg.priors].table(ws, jobs=jobs))
    t_priors = time.perf_counter() - t0
    _log(f"{cfg.mode}: settings {', '.join(cfg.settings)}; budgets {cfg.budgets}; priors {cfg.priors} "
         f"({t_priors:.0f} s); model errors first")
    # model errors
    time_rows, pairs, acc_rows = [], [], []
    for w in ws:
        if cfg.time_workloads is None or w.name in cfg.time_workloads:
            with use_priors(priors[w.name]):
                rows, ps = model_error.time_model_errors(w)
            time_rows += rows
            pairs += ps
    for w in ws:
        if w.family == "pollux-t4":
            with use_priors(priors[w.name]):
                acc_rows += model_error.accuracy_errors(w)
    t_models = time.perf_counter() - t0 - t_priors

    # regret
    scns = _scenario_list(cfg)
    tasks = [(cfg, i, priors[scns[i].workload.name]) for i in range(len(scns))]
    _log(f"model errors done in {t_models:.0f} s; {len(scns)} scenarios on {jobs} process(es)")
    results = []

    def done(item) -> None:
        r, key, secs = item
        results.append(r)
        _log(f"{len(results)}/{len(scns)} {key} ({secs:.1f} s; {time.perf_counter() - t0:.0f} s so far)")

    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for item in pool.map(_run_one, tasks):
                done(item)
    else:
        for t in tasks:
            done(_run_one(t))
    t_regret = time.perf_counter() - t0 - t_priors - t_models
    _log(f"scenarios done in {t_regret:.0f} s; latency and figures next")

    # latency
    lat = {
        "solver": latency.solver_latency(sizes=cfg.latency_sizes, repeats=cfg.latency_repeats),
        "optuna": [latency.optuna_equal_regret(n=n, max_trials=cfg.optuna_max_trials) for n in cfg.optuna_sizes],
    }

    # every row says which priors it was planned with (the replay is in-sample with the shipped ones)
    summary = [dict(row, priors=cfg.priors) for row in regret.summarize(results)]
    from benchmarks.reliability import reliability_rows

    outcomes = [o for r in results for o in r.outcomes]
    data = {
        "mode": cfg.mode,
        "command": command,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "cpu_count": os.cpu_count(),
        "config": {k: v for k, v in cfg.__dict__.items()},
        "settings": _setting_docs(cfg),
        "priors": {
            "set": cfg.priors,
            "description": PRIOR_SETS[cfg.priors].description,
            # per workload, the values it was planned with (None: the shipped constants)
            "values": {name: None if p is None else as_dict(p) for name, p in priors.items()},
        },
        "summary": summary,
        # P(success) / P(reach) against the truth at every candidate, per (setting, policy, probes)
        "reliability": reliability_rows(outcomes),
        "model_error": {"time": time_rows, "time_pairs": pairs, "accuracy": acc_rows, "noise_floor": model_error.placement_noise()},
        "regret": {
            "n_scenarios": len(results),
            "headline_budget": cfg.headline_budget,
            "headline_setting": _HEADLINE,
            "summary": summary,
            "savings": regret.savings(results, budget=cfg.headline_budget, setting=_HEADLINE),
            "by_family": regret.by_workload(results, policy="cotune", budget=cfg.headline_budget, setting=_HEADLINE),
            "scenarios": [
                {k: v for k, v in r.__dict__.items() if k != "outcomes"} for r in results
            ],
            "outcomes": regret.outcome_dicts(results),
        },
        "latency": lat,
    }
    figures = report.plot_all(out, data, _pareto_cases(cfg, results, priors))
    data["figures"] = figures
    data["section_s"] = {"priors": t_priors, "model_error": t_models, "regret": t_regret, "total": time.perf_counter() - t0}
    data["wall_s"] = time.perf_counter() - t0
    report.write_json(out / "results.json", data)
    report.write_text(out / "report.md", report.markdown(data))
    return data


def _unwritable(out: Path) -> str | None:
    """Why results cannot be written into ``out`` (None: they can). Checked before the run,
    so a bad ``--out`` costs seconds, not a finished 15-minute run."""
    import tempfile

    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a slice for CI: under 3 minutes on 2 cores")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results", help="output folder")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes for scenarios")
    parser.add_argument(
        "--policies", default=None, help="comma-separated policy names to run instead of the defaults (e.g. add optuna_gp)"
    )
    parser.add_argument("--settings", default=None,
                        help=f"comma-separated settings (default: all of {', '.join(_registered_settings())}; "
                        "opt-in ones, such as one-curve-no-noise, only when named)")
    parser.add_argument(
        "--priors", default="shipped",
        help=f"where the models' priors come from, one of {', '.join(_registered_prior_sets())} (default: shipped; "
        "held-out refits them without each replayed workload's data: benchmarks/priors.py)",
    )
    parser.add_argument(
        "--cluster", default=None,
        help="cluster file (cotune's format, docs/spot.md) of the closed-loop spot policies "
        "(default: benchmarks/clusters/spot_replay.toml)",
    )
    args = parser.parse_args(argv)
    from benchmarks._registry import POLICIES, PRIOR_SETS, SETTINGS, load

    load()
    cfg = _with_settings(QUICK if args.quick else FULL)
    if args.priors not in PRIOR_SETS:
        print(f"benchmarks: unknown prior set {args.priors}: use one of {', '.join(PRIOR_SETS)}", file=sys.stderr)
        return 2
    cfg = dataclasses.replace(cfg, priors=args.priors)
    if args.policies:
        names = tuple(n.strip() for n in args.policies.split(",") if n.strip())
        unknown = [n for n in names if n not in POLICIES]
        if unknown:
            print(f"benchmarks: unknown policy {', '.join(unknown)}: use some of {', '.join(POLICIES)}", file=sys.stderr)
            return 2
        cfg = dataclasses.replace(cfg, policies=names)
    if args.settings:
        names = tuple(n.strip() for n in args.settings.split(",") if n.strip())
        unknown = [n for n in names if n not in SETTINGS]
        if unknown:
            print(f"benchmarks: unknown setting {', '.join(unknown)}: use some of {', '.join(SETTINGS)}", file=sys.stderr)
            return 2
        cfg = dataclasses.replace(cfg, settings=names)
    if cfg.policies is not None:
        # A named policy that no chosen setting runs would leave an empty run reading as a success.
        idle = [n for n in cfg.policies if not any(POLICIES[n].runs_in(s) for s in cfg.settings)]
        if idle:
            where = "; ".join(f"{n} runs in {', '.join(s for s in SETTINGS if POLICIES[n].runs_in(s))}" for n in idle)
            print(f"benchmarks: policy {', '.join(idle)} runs in none of the settings {', '.join(cfg.settings)} ({where}): "
                  "add one of its settings to --settings", file=sys.stderr)
            return 2
    if args.cluster:
        from benchmarks.closed_loop_spot import use_cluster
        from cotune.errors import InputError

        try:
            use_cluster(args.cluster)
        except InputError as exc:
            print(f"benchmarks: {exc}", file=sys.stderr)
            return 2
        cfg = dataclasses.replace(cfg, cluster=str(args.cluster))
    command = "python -m benchmarks" + " ".join([""] + [a for a in (argv if argv is not None else sys.argv[1:])])
    bad_out = _unwritable(args.out)
    if bad_out:
        print(f"benchmarks: --out {args.out}: {bad_out}: name a folder you can write to", file=sys.stderr)
        return 2
    try:
        data = run(cfg, args.out, jobs=max(1, args.jobs), command=command)
    except OSError as exc:  # a missing trace, or the folder lost or full at the end: one line, not a traceback
        print(f"benchmarks: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}/results.json, report.md, {', '.join(data['figures'])} in {data['wall_s']:.0f} s")
    for aim, where, met in __import__("benchmarks.report", fromlist=["aims"]).aims(data):
        print(f"[{'met' if met else ('n/a' if met is None else 'MISSED')}] {aim}: {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
