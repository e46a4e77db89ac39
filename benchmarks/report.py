"""Write the results: one JSON file, one Markdown report, and PNG figures (matplotlib, Agg)."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

__all__ = ["write_json", "write_text", "read_json", "markdown", "plot_all", "aims", "rewrite"]

AIM_MEDIAN_REGRET = 0.05
AIM_PROBE_SHARE = 0.05
AIM_SAVING = 0.2689
AIM_MAPE_INSIDE = 0.05
AIM_MAPE_4X = 0.15


def _clean(x: Any) -> Any:
    """JSON has no infinity or NaN: write them as strings a reader can parse back."""
    if isinstance(x, float):
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (np.floating, np.integer)):
        return _clean(x.item())
    return x


def write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` all at once: written to a temporary file beside it,
    then renamed over it, so a failed or interrupted write (a full disk, an unencodable
    value, a kill) leaves the previous file whole instead of truncated."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: dict) -> None:
    write_text(path, json.dumps(_clean(data), indent=1, sort_keys=False) + "\n")


def _unclean(x: Any) -> Any:
    if x == "inf":
        return math.inf
    if x == "-inf":
        return -math.inf
    if isinstance(x, dict):
        return {k: _unclean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_unclean(v) for v in x]
    return x


def read_json(path: Path) -> dict:
    """``results.json`` back as written (infinities restored; NaN comes back as None)."""
    return _unclean(json.loads(Path(path).read_text(encoding="utf-8")))


def rewrite(out: Path) -> None:
    """Re-render ``report.md`` from ``results.json`` in ``out`` (after a change to this module)."""
    data = read_json(Path(out) / "results.json")
    write_text(Path(out) / "report.md", markdown(data))


def _pct(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if math.isinf(x):
        return "∞"
    return f"{100 * x:.1f} %"


def _time_summary(rows: list[dict]) -> dict[tuple[str, str], float]:
    """Median over workloads/GPUs of the MAPE, per (model, range)."""
    acc: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        acc.setdefault((r["model"], r["range"]), []).append(r["mape"])
    return {k: float(np.median(v)) for k, v in acc.items()}


def _acc_summary(rows: list[dict]) -> dict[tuple[str, str], dict]:
    acc: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        acc.setdefault((r["model"], r["range"]), []).append(r)
    out = {}
    for k, rs in acc.items():
        apes = [r["ape"] for r in rs if r["ape"] is not None]
        out[k] = {
            "n": len(rs),
            "median_ape": float(np.median(apes)) if apes else math.nan,
            "mean_ape": float(np.mean(apes)) if apes else math.nan,
            "false_reach": sum(r["outcome"] == "false_reach" for r in rs),
            "false_miss": sum(r["outcome"] == "false_miss" for r in rs),
        }
    return out


def _row(data: dict, setting: str, policy: str, budget: int | None = None) -> dict | None:
    rows = [r for r in data.get("summary", data["regret"]["summary"]) if r["setting"] == setting and r["policy"] == policy]
    if budget is not None:
        rows = [r for r in rows if r["probes"] == budget]
    elif rows:
        head = data["regret"]["headline_budget"]
        rows = [r for r in rows if r["probes"] == head] or rows[-1:]
    return rows[0] if rows else None


def _fixed(x: float | None, *, digits: int) -> str:
    """A plain number; "–" where there is none (a row of a policy that raised on every scenario
    has no runs to average: NaN in memory, None once through results.json)."""
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _frac(x: float | None) -> str:
    return "–" if x is None else _pct(float(x))


def _labelled(setting: str) -> str:
    """A setting's name as a table shows it: free-curves carries its label wherever it appears
    (it gets every curve for free, which no user has), not only in its section's heading."""
    from benchmarks._registry import SETTINGS, load

    load()  # the registry fills as the settings' modules are imported
    spec = SETTINGS.get(setting)
    return f"{setting} (upper bound)" if spec is not None and getattr(spec, "upper_bound", False) else setting


def _met_only(s: dict) -> str:
    """Whose median the plan savings are: a scenario cotune missed has no cost to compare and
    drops out, so the medians are over the scenarios it met (results.json files from before
    these counts were kept say nothing)."""
    if "cotune_met_matters" not in s:
        return ""
    text = f" (over the {s['cotune_met_matters']} of {s['matters']} where cotune met the target and deadline"
    if s["plan_saving_n_matters"] != s["cotune_met_matters"]:
        text += f", against the baselines' plans the {s['plan_saving_n_matters']} of them where one of those met too"
    if s.get("plan_saving_median_matters_miss_as_zero") is not None:
        text += f"; {_pct(s['plan_saving_median_matters_miss_as_zero'])} vs the baselines' plans with a miss counted as no saving"
    return text + ")"


def aims(data: dict) -> list[tuple[str, str, bool | None]]:
    """(aim, where we stand, met?) for the issues' stated aims."""
    out: list[tuple[str, str, bool | None]] = []
    head = data["regret"]["headline_budget"]
    r = _row(data, "one-curve", "cotune", head)
    if r:
        p = _row(data, "one-curve", "pollux", head)
        out.append(
            (
                f"one-curve, {head} probes: miss rate ≤ 10 %, median regret ≤ 5 %",
                f"cotune miss rate {_pct(r['miss_rate'])}, median regret {_pct(r['median_regret'])}"
                + (f" (Pollux-style: {_pct(p['miss_rate'])}, {_pct(p['median_regret'])})" if p else ""),
                r["miss_rate"] <= 0.10 and r["median_regret"] <= 0.05,
            )
        )
    for setting in ("one-curve", "free-curves"):
        q = _row(data, setting, "cotune_q90", head)
        if q and q["delivered_q90"] is not None:
            out.append(
                (
                    f"{_labelled(setting)}: delivered probability at q = 0.9 ≥ 0.88",
                    f"cotune_q90 at {head} probes: {_frac(q['delivered_q90'])} of its plans reach the target by the deadline "
                    f"(promised {_frac(q['promised_q90'])})",
                    q["delivered_q90"] >= 0.88,
                )
            )
    for setting in ("one-curve", "free-curves"):
        c = _row(data, setting, "cotune", head)
        if c:
            vals = [v for v in (c["coverage_step_90"], c["coverage_epochs_90"]) if v is not None]
            out.append(
                (
                    f"{_labelled(setting)}: 90 % intervals cover 85–95 % (step time, epochs)",
                    f"step time {_frac(c['coverage_step_90'])} (unprobed candidates), epochs {_frac(c['coverage_epochs_90'])} (held-out batches)",
                    bool(vals) and all(0.85 <= v <= 0.95 for v in vals),
                )
            )
    # On demand only: the spot rows' regret is against the on-demand oracle (a spot run can beat it),
    # so they are reported beside the aim (§ Spot revocations), not scored against it.
    cl = [x for x in data.get("summary", []) if x["setting"] == "closed-loop" and x["family"].startswith("cotune_closed")
          and x["family"] != "cotune_closed_spot"]
    if cl:
        # The best variant is picked after the run, on the scenarios it is judged on: the row says so.
        best = min(cl, key=lambda x: (x["miss_rate"], x["median_regret"]))
        q90 = next((x for x in cl if x["family"] == best["family"] and x["delivered_q90"] is not None), best)
        out.append(
            (
                "closed-loop: miss rate ≤ 5 %, median regret ≤ 5 % (every cost counted), delivered at q = 0.9 ≥ 0.90",
                f"best of {len(cl)} closed-loop variants, chosen on these scenarios: "
                f"{best['policy']} at {best['probes']} probes: miss rate {_pct(best['miss_rate'])}, median regret {_pct(best['median_regret'])}; "
                f"delivered at q = 0.9 {_frac(q90['delivered_q90'])}",
                best["miss_rate"] <= 0.05 and best["median_regret"] <= 0.05 and (q90["delivered_q90"] or 0) >= 0.90,
            )
        )
    s = data["regret"].get("savings")
    if s:
        out.append(
            (
                "saving vs best independent baseline ≥ 26.89 % where co-tuning matters",
                f"{s['matters']} of {s['scenarios']} scenarios have an optimum saving > {_pct(s['threshold'])}; "
                f"there the median optimum saving is {_pct(s['optimum_saving_median_matters'])}, cotune's plan saves "
                f"{_pct(s['plan_saving_median_matters'])} vs the baselines' plans and {_pct(s['plan_vs_baseline_optimum_median_matters'])} "
                f"vs their optimum{_met_only(s)}; max optimum saving {_pct(s['optimum_saving_max'])}; baselines infeasible in {s['baselines_infeasible']}",
                None if math.isnan(s["optimum_saving_median_matters"]) else s["optimum_saving_median_matters"] >= AIM_SAVING,
            )
        )
    t = _time_summary(data["model_error"]["time"])
    if ("cotune", "inside") in t:
        out.append(("time MAPE ≤ 5 % inside", f"cotune median over workloads {_pct(t[('cotune', 'inside')])}", t[("cotune", "inside")] <= AIM_MAPE_INSIDE))
    if ("cotune", "4x") in t:
        out.append(("time MAPE ≤ 15 % at 4× extrapolation", f"cotune median over workloads {_pct(t[('cotune', '4x')])}", t[("cotune", "4x")] <= AIM_MAPE_4X))
    return out


def markdown(data: dict) -> str:
    priors = data.get("priors") or {"set": "shipped"}  # results.json written before --priors had none: the shipped ones
    lines = [f"# cotune benchmarks ({data['mode']} mode)", "", f"Command: `{data['command']}` · date {data['date']} · "
             f"wall time {data['wall_s']:.0f} s · {data['cpu_count']} CPUs · priors: {priors['set']}"
             + (f" ({priors['description']})" if priors.get("description") else ""), ""]
    lines += ["## Aims", "", "| aim | measured | met |", "|---|---|---|"]
    for aim, where, met in aims(data):
        lines.append(f"| {aim} | {where} | {'–' if met is None else ('yes' if met else '**no**')} |")
    reg = data["regret"]
    lines += ["", f"## Cost regret against the oracle ({reg['n_scenarios']} scenarios per setting)", "",
              "Misses (no plan, target never reached, deadline missed, gave up) count as ∞ regret. Probe share and "
              "curve share: cost of the paid probes / of the learning curves the setting showed, over the true cost "
              "of the planned training (medians over met plans). Delivered: share of the plans made that reach the "
              "target by the deadline (promised: the models' mean P(success), else the confidence q). Coverage: "
              "share of truths inside the 90 % intervals (step time of unprobed candidates; epochs to target of "
              "held-out batches whose true curve reaches the target — the interval is conditional on reaching it, "
              "whether it is reached is P(reach)'s to say; `coverage_epochs_90_unconditional` in results.json "
              "counts every unreached held-out batch as a miss)."]
    for doc in data.get("settings", []):
        setting = doc["setting"]
        rows = [r for r in reg["summary"] if r["setting"] == setting]
        if not rows:
            continue
        tag = " — an upper bound" if doc["upper_bound"] else (" — the headline" if setting == reg.get("headline_setting") else "")
        if doc.get("closed_loop"):
            doc = dict(doc, description=doc["description"] + ". Regret here counts every cost (probes, training, "
                       "restarts); \"training regret\" leaves the probes out")
        lines += ["", f"### {setting}{tag}", "", doc["description"] + ".", "",
                  "| policy | probes | median | p90 | worst when met | miss rate | misses: no plan / target / deadline / gave up "
                  "| probe share | curve share | delivered (promised) | delivered at q=0.9 | cov. step 90 | cov. epochs 90 | training regret |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            m = r["misses"]
            lines.append(
                f"| {r['policy']} | {r['probes']} | {_pct(r['median_regret'])} | {_pct(r['p90_regret'])} | "
                f"{_pct(r['worst_regret_when_met'])} | {_pct(r['miss_rate'])} | {m['no_plan']} / {m['target']} / {m['deadline']} / {m['gave_up']} | "
                f"{_frac(r['probe_share'])} | {_frac(r['curve_share'])} | {_frac(r['delivered'])} ({_frac(r['promised'])}) | "
                f"{_frac(r['delivered_q90'])} | {_frac(r['coverage_step_90'])} | {_frac(r['coverage_epochs_90'])} | "
                f"{_pct(r.get('median_regret_training', math.nan))} |"
            )
    cal = [r for r in reg["summary"] if r["policy"] in ("cotune", "cotune_voi", "cotune_open", "cotune_closed", "cotune_closed_voi")]
    if cal:
        lines += ["", "### Calibration: promised vs delivered probability of reaching the target by the deadline", "",
                  "| setting | family | probes | q = 0.5: promised | delivered | q = 0.9: promised | delivered |",
                  "|---|---|---|---|---|---|---|"]
        for r in cal:
            lines.append(f"| {_labelled(r['setting'])} | {r['family']} | {r['probes']} | {_frac(r['promised_q50'])} | {_frac(r['delivered_q50'])} | "
                         f"{_frac(r['promised_q90'])} | {_frac(r['delivered_q90'])} |")
    spot = [r for r in reg["summary"] if r["setting"] == "closed-loop" and r["family"] in ("cotune_closed_spot", "cotune_open_spot")]
    if spot:
        cluster = (data.get("config") or {}).get("cluster") or "benchmarks/clusters/spot_replay.toml"
        lines += ["", "### Spot revocations in the closed loop", "",
                  f"Spot policies planned and replayed with the cluster file `{cluster}` (revocations Poisson, seeded "
                  "per scenario; see benchmarks/README.md § Spot revocations). Regret counts every cost, against the "
                  "on-demand oracle.", "",
                  "| policy | probes | miss rate | misses: no plan / target / deadline / gave up | median regret | "
                  "training regret | delivered at q=0.9 | revocations per run | restarts per run |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in spot:
            m = r["misses"]
            lines.append(
                f"| {r['policy']} | {r['probes']} | {_pct(r['miss_rate'])} | {m['no_plan']} / {m['target']} / {m['deadline']} / "
                f"{m['gave_up']} | {_pct(r['median_regret'])} | {_pct(r.get('median_regret_training', math.nan))} | "
                f"{_frac(r['delivered_q90'])} | {_fixed(r.get('mean_revocations', 0.0), digits=2)} | {_fixed(r['mean_restarts'], digits=2)} |"
            )
    from benchmarks.reliability import markdown as reliability_markdown

    families = {r["policy"]: r["family"] for r in reg["summary"]}
    lines += reliability_markdown(data.get("reliability", []), families=families)
    voi = [r for r in reg["summary"] if r["family"] == "cotune_voi"]
    if voi:
        lines += _voi_table(voi, reg.get("outcomes", []))
    errs = [(sc["scenario"], e) for sc in reg["scenarios"] for e in sc.get("errors", [])]
    if errs:
        lines += ["", f"**{len(errs)} policy runs raised**; each counts in the rows above as a miss (∞ regret) of its scenario:", ""]
        lines += [f"- {k}: {e}" for k, e in errs]
    fam = reg.get("by_family")
    if fam:
        lines += ["", f"By workload at {reg['headline_budget']} probes (cotune, {reg.get('headline_setting', 'free-curves')}): median regret, miss rate, median probe share", "",
                  "| workload | median regret | miss rate | median probe share |", "|---|---|---|---|"]
        for r in fam:
            lines.append(f"| {r['workload']} | {_pct(r['median_regret'])} | {_pct(r['miss_rate'])} | {_pct(r['median_probe_share'])} |")
    s = reg.get("savings")
    if s:
        lines += ["", f"### Savings against the best independent baseline ({s['budget']} probes, {s.get('setting', 'free-curves')})", "",
                  f"- scenarios: {s['scenarios']}; baselines infeasible (no resource-only or batch-only configuration meets the deadline): {s['baselines_infeasible']}",
                  f"- true optimum vs best restricted optimum: median {_pct(s['optimum_saving_median_all'])} over all, "
                  f"{_pct(s['optimum_saving_median_matters'])} over the {s['matters']} where it exceeds {_pct(s['threshold'])}, max {_pct(s['optimum_saving_max'])}",
                  f"- share of those ≥ 26.89 %: {_pct(s['share_matters_ge_26_89pct'])}",
                  f"- cotune's plan vs the baselines' plans (same probes), median where co-tuning matters: {_pct(s['plan_saving_median_matters'])}"
                  + _met_only(s),
                  f"- cotune's plan vs the baselines' true optimum, same scenarios: {_pct(s['plan_vs_baseline_optimum_median_matters'])}"]
    me = data["model_error"]
    t = _time_summary(me["time"])
    models = sorted({k[0] for k in t})
    lines += ["", "## Step-time model error (MAPE, median over workloads and GPU types)", "",
              "| range | " + " | ".join(models) + " |", "|---" * (len(models) + 1) + "|"]
    for rng in ("inside", "2x", "4x"):
        lines.append(f"| {rng} | " + " | ".join(_pct(t.get((m, rng), math.nan)) for m in models) + " |")
    lines += ["", "<details><summary>per workload</summary>", "", "| workload | gpu | fit ≤ W | range | n | " + " | ".join(models) + " |",
              "|---" * (5 + len(models)) + "|"]
    by: dict[tuple, dict[str, dict]] = {}
    for r in me["time"]:
        by.setdefault((r["workload"], r["gpu"], r["fit_max_workers"], r["range"]), {})[r["model"]] = r
    for (wl, gpu, W, rng), rs in by.items():
        n = next(iter(rs.values()))["n"]
        lines.append(f"| {wl} | {gpu} | {W} | {rng} | {n} | " + " | ".join(_pct(rs[m]["mape"]) if m in rs else "–" for m in models) + " |")
    lines += ["", "</details>"]
    if "noise_floor" in me:
        lines += ["", f"Measurement noise floor: placements of the same (workers, hosts, local batch) differ from their median by "
                  f"{_pct(me['noise_floor']['median_ape'])} (median) — no model of (workers, hosts, batch) can do better on these traces."]
    a = _acc_summary(me["accuracy"])
    lines += ["", "## Epochs-to-target error on a held-out global batch", "",
              "| model | range | cases | median APE | mean APE | predicted reach, truly unreached | predicted unreached, truly reached |",
              "|---|---|---|---|---|---|---|"]
    for (m, rng), v in sorted(a.items()):
        lines.append(f"| {m} | {rng} | {v['n']} | {_pct(v['median_ape'])} | {_pct(v['mean_ape'])} | {v['false_reach']} | {v['false_miss']} |")
    lat = data["latency"]
    lines += ["", "## Solver latency (enumerate → estimate → feasibility → rank → Pareto)", "", "| candidates | median seconds |", "|---|---|"]
    for r in lat["solver"]:
        lines.append(f"| {r['candidates']:,} | {r['median_s']:.3f} |")
    for o in lat["optuna"]:
        lines += ["", f"Optuna TPE on the same predicted objective ({o['candidates']:,} candidates): "
                  + (f"{o['optuna_trials']} trials, {o['optuna_s']:.2f} s to come within {_pct(o['tolerance'])} of the optimum"
                     if o["optuna_trials"] else f"not within {_pct(o['tolerance'])} after {o['optuna_max_trials']} trials ({o['optuna_s']:.2f} s)")
                  + f"; the exhaustive solve took {o['exhaustive_s']:.3f} s and is exact."]
    return "\n".join(lines) + "\n"


def _voi_table(rows: list[dict], outcomes: list[dict]) -> list[str]:
    """The value-of-information rows: summed gains per plan, means with 90 % intervals from
    resampling scenarios (a plan's realised gain is usually 0 and now and then most of a
    job either way, so its median says nothing and its mean needs the interval)."""
    from benchmarks.voi_calibration import scenario_bootstrap

    def ci(x: float, lo_hi: list[float]) -> str:
        return f"{_pct(x)} [{_pct(lo_hi[0])}, {_pct(lo_hi[1])}]"

    out = ["", "### Value-of-information probe planner: expected vs realised gain", "",
           "Summed over the measurements each plan bought, as shares of the oracle's cost: means over scenarios with "
           "90 % intervals from resampling them; realised = the drop of the plan's true loss (see benchmarks/voi.py; "
           "per measurement: `python -m benchmarks.voi_calibration`).", "",
           "| setting | policy | budget | median probes used | mean short runs | expected gain | realised gain | "
           "expected − realised | miss rate | median regret |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        mine = [dict(scenario=o["scenario"], expected=o["expected_gain"] / o["oracle_cost"],
                     realised=o["realised_gain"] / o["oracle_cost"])
                for o in outcomes if (o["setting"], o["policy"], o["budget"]) == (r["setting"], r["policy"], r["probes"])]
        s = scenario_bootstrap(mine)
        gains = ("– | – | –" if not s.get("n") else
                 f"{ci(s['expected'], s['expected_ci'])} | {ci(s['realised'], s['realised_ci'])} | {ci(s['gap'], s['gap_ci'])}")
        out.append(f"| {r['setting']} | {r['policy']} | {r['probes']} | {_fixed(r['median_probes'], digits=0)} | "
                   f"{_fixed(r['mean_accuracy_runs'], digits=2)} | {gains} | {_pct(r['miss_rate'])} | {_pct(r['median_regret'])} |")
    return out


def _plain_log_ticks(*axes) -> None:
    """Label only decades on log axes (minor labels overlap on narrow ranges)."""
    from matplotlib.ticker import NullFormatter

    for ax in axes:
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())


def plot_all(out: Path, data: dict, pareto_cases: Sequence[dict]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    # 1. regret distribution at the headline budget + median regret vs budget
    headline = data["regret"].get("headline_setting")
    outs = [o for o in data["regret"]["outcomes"] if headline is None or o.get("setting") == headline]
    budget = data["regret"]["headline_budget"]
    policies = sorted({o["policy"] for o in outs})
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for p in policies:
        reg = np.array([o["regret"] for o in outs if o["policy"] == p and o["budget"] == budget], float)
        if reg.size == 0:
            continue
        v = np.sort(np.where(np.isfinite(reg), np.maximum(reg, 1e-4), 1e3))
        ax1.step(v, np.arange(1, v.size + 1) / v.size, where="post", label=p)
        meds = []
        budgets = sorted({o["budget"] for o in outs if o["policy"] == p})
        for b in budgets:
            r = np.array([o["regret"] for o in outs if o["policy"] == p and o["budget"] == b], float)
            meds.append(min(float(np.median(r)), 10.0))
        ax2.plot(budgets, meds, marker="o", label=p)
    ax1.set_xscale("log")
    ax1.set_xlim(1e-4, 2e3)
    ax1.set_xlabel("cost regret vs oracle (misses plotted at 1000)")
    ax1.set_ylabel("share of scenarios ≤ x")
    ax1.set_title(f"regret distribution, {budget} probes ({headline})")
    ax1.axvline(AIM_MEDIAN_REGRET, color="grey", ls=":")
    ax1.legend(fontsize=7)
    ax2.set_yscale("symlog", linthresh=0.01)
    ax2.set_xlabel("probe budget (probes)")
    ax2.set_ylabel("median regret (capped at 10)")
    ax2.set_title("median regret vs probe budget")
    fig.tight_layout()
    path = out / "regret_distribution.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path.name)

    # 2. cost–time Pareto fronts with the chosen points
    if pareto_cases:
        cols = min(4, len(pareto_cases))
        rows = int(math.ceil(len(pareto_cases) / cols))
        fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows), squeeze=False)
        for ax, case in zip(axes.ravel(), pareto_cases):
            t, c = np.array(case["all_time_h"]), np.array(case["all_cost"])
            ax.scatter(t, c, s=6, color="0.8", label="every candidate (true)")
            ax.plot(case["front_time_h"], case["front_cost"], color="0.3", lw=1, label="true Pareto front")
            ax.plot(case["pred_front_time_h"], case["pred_front_cost"], color="tab:blue", lw=1, ls="--", label="cotune predicted front")
            ax.scatter([case["oracle"][0]], [case["oracle"][1]], marker="*", s=140, color="gold", edgecolor="k", zorder=5, label="oracle optimum")
            for name, (pt, style) in case["chosen"].items():
                ax.scatter([pt[0]], [pt[1]], **style, zorder=6, label=name)
            if case["deadline_h"]:
                ax.axvline(case["deadline_h"], color="red", ls=":", lw=1)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(case["title"], fontsize=8)
            ax.set_xlabel("time to target (h)")
            ax.set_ylabel("cost (USD)")
        for ax in axes.ravel()[len(pareto_cases):]:
            ax.axis("off")
        handles, labels = axes.ravel()[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=7)
        _plain_log_ticks(*axes.ravel())
        fig.tight_layout(rect=(0, 0.07, 1, 1))
        path = out / "pareto_fronts.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path.name)

    # 3. predicted vs measured: step time (cotune) and held-out epochs
    pairs = data["model_error"]["time_pairs"]
    acc = data["model_error"]["accuracy"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    colours = {"inside": "tab:green", "2x": "tab:orange", "4x": "tab:red"}
    for rng, col in colours.items():
        pts = [(p["measured_s"], p["predicted_s"]) for p in pairs if p["model"] == "cotune" and p["range"] == rng]
        if pts:
            m, pr = np.array(pts).T
            ax1.scatter(m, pr, s=5, alpha=0.5, color=col, label=f"{rng} ({len(pts)})")
    lims = [min(p["measured_s"] for p in pairs) / 1.5, max(p["measured_s"] for p in pairs) * 1.5]
    for ax in (ax1,):
        ax.plot(lims, lims, color="k", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax1.set_xlabel("measured step time (s)")
    ax1.set_ylabel("cotune predicted (s)")
    ax1.set_title("step time: inside, 2× and 4× extrapolation")
    ax1.legend(fontsize=8)
    markers = {"cotune": "o", "pollux": "s", "isotonic": "x"}
    allv = []
    for m, mk in markers.items():
        pts = [(r["measured_epochs"], r["predicted_epochs"]) for r in acc if r["model"] == m and r["outcome"] == "both_reach"]
        if pts:
            x, y = np.array(pts).T
            allv += list(x) + list(y)
            ax2.scatter(x, y, marker=mk, s=18, alpha=0.7, label=f"{m} ({len(pts)})")
    if allv:
        lo, hi = min(allv) / 1.5, max(allv) * 1.5
        ax2.plot([lo, hi], [lo, hi], color="k", lw=0.8)
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("measured epochs to target (held-out batch)")
    ax2.set_ylabel("predicted")
    ax2.set_title("epochs to target on a held-out global batch")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    _plain_log_ticks(ax1, ax2)
    path = out / "predicted_vs_measured.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path.name)
    return written
