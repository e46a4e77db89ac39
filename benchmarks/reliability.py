"""Reliability of cotune's probabilities over the whole candidate space.

A plan is only as good as ``P(success)`` is honest *everywhere*: too low on candidates
that truly succeed and the solver says "no plan"; too high on the candidate it picks
and the plan misses. This module checks both probabilities the models give every
candidate against the replay oracle's truth at that candidate:

* ``P(success)`` — the target reached by the deadline; truth: the oracle's true
  epochs are finite and its true time ``E*(B) · N / B · step_time*`` is within the
  deadline (no deadline: the target is reached);
* ``P(reach)`` — the target reached at all; truth: ``E*(B)`` is finite.

For a set of (predicted probability ``p_i``, outcome ``y_i ∈ {0, 1}``) pairs:

    reliability table   bins of p (width 1/10): count, mean p, fraction y = 1
    Brier score         (1/N) Σ (p_i − y_i)²
    ECE                 Σ_bins (n_bin / N) · |mean p − fraction y|

The counts are additive (a plan's counts merge with another's by summing), so a plan
carries its own and the summary adds them up. ``python -m benchmarks.reliability``
runs the cotune family alone and prints the tables, optionally split by a candidate
attribute (``--by distance`` etc.), which is how the causes in ``docs/models.md`` were
found.
"""

from __future__ import annotations

import argparse
import sys
from typing import Iterable, Mapping, Sequence

import numpy as np

from benchmarks.report import _labelled  # free-curves reads "(upper bound)" in every table

__all__ = [
    "BINS",
    "counts",
    "merge",
    "table",
    "brier",
    "ece",
    "candidate_truth",
    "plan_reliability",
    "choice_counts",
    "merge_choices",
    "epochs_coverage_reached",
    "reliability_rows",
    "main",
]

BINS = 10


def counts(pred: np.ndarray, truth: np.ndarray, *, bins: int = BINS) -> dict:
    """Additive reliability counts of predicted probabilities against 0/1 outcomes.

    Bin ``k`` holds ``k/bins ≤ p < (k+1)/bins`` (``p = 1`` in the last bin). NaN
    predictions are left out.
    """
    p = np.asarray(pred, float).ravel()
    y = np.asarray(truth, float).ravel()
    if p.shape != y.shape:
        raise ValueError(f"pred and truth must have one value per candidate: got {p.size} and {y.size}")
    ok = np.isfinite(p)
    p, y = np.clip(p[ok], 0.0, 1.0), y[ok]
    k = np.minimum((p * bins).astype(int), bins - 1)
    return {
        "count": np.bincount(k, minlength=bins).astype(int).tolist(),
        "sum_pred": np.bincount(k, weights=p, minlength=bins).tolist(),
        "sum_true": np.bincount(k, weights=y, minlength=bins).tolist(),
        "sum_sq": float(np.sum((p - y) ** 2)),
    }


def merge(parts: Iterable[Mapping | None]) -> dict | None:
    """The counts of several sets together (None where none is given)."""
    out: dict | None = None
    for c in parts:
        if not c:
            continue
        if out is None:
            out = {k: (list(v) if isinstance(v, list) else float(v)) for k, v in c.items()}
            continue
        for key in ("count", "sum_pred", "sum_true"):
            out[key] = [a + b for a, b in zip(out[key], c[key])]
        out["sum_sq"] += float(c["sum_sq"])
    return out


def _n(c: Mapping) -> int:
    return int(sum(c["count"]))


def table(c: Mapping) -> list[dict]:
    """Rows of the reliability table: bin edges, count, mean predicted, fraction true (empty bins left out)."""
    bins = len(c["count"])
    rows = []
    for k, (n, sp, st) in enumerate(zip(c["count"], c["sum_pred"], c["sum_true"])):
        if n:
            rows.append({"lo": k / bins, "hi": (k + 1) / bins, "count": int(n), "mean_pred": sp / n, "frac_true": st / n})
    return rows


def brier(c: Mapping | None) -> float | None:
    """Mean squared difference between predicted probability and outcome."""
    if not c or not _n(c):
        return None
    return float(c["sum_sq"]) / _n(c)


def ece(c: Mapping | None) -> float | None:
    """Expected calibration error: count-weighted mean |mean predicted − fraction true| over bins."""
    if not c or not _n(c):
        return None
    n = _n(c)
    return float(sum(abs(sp - st) for cnt, sp, st in zip(c["count"], c["sum_pred"], c["sum_true"]) if cnt)) / n


def candidate_truth(scn, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(truly succeeds, truly reaches) at the scenario's candidates ``index`` (the oracle's replay truth)."""
    epochs, time_s, _ = scn.oracle.evaluate(scn.target)
    idx = np.asarray(index, int)
    reach = np.isfinite(epochs[idx])
    success = reach & ((time_s[idx] <= scn.deadline_s) if scn.deadline_s is not None else True)
    return success, reach


# Confidences at which the solver's own choice is replayed to measure the selection effect.
CHOICE_CONFIDENCES = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def choice_counts(scn, est, usable: np.ndarray, *, confidences: Sequence[float] = CHOICE_CONFIDENCES) -> dict:
    """What the solver would choose at each confidence ``q`` on these estimates, and whether it
    truly succeeds: ``{q: [plans, Σ promised P(success), Σ truly succeeded]}``.

    The table over every candidate says whether ``P(success)`` is honest on average; this
    says whether it is honest *on the candidate the solver picks* — the cheapest one that
    clears ``q``, whose prediction is among the most optimistic (a winner's curse).
    """
    from cotune.solver import prefer_safer, ranked, with_success

    success, _ = candidate_truth(scn, usable)
    est = with_success(est, deadline_s=scn.deadline_s)
    out = {}
    for q in confidences:
        # time_q ≤ deadline ⇔ P(success) ≥ q: the solver's feasibility at q, read off P(success)
        # (the estimates' time_at_confidence_s is for the confidence they were made at).
        ok = np.isfinite(est.epochs) & (est.p_reach >= q) & (est.p_success >= q)
        top = ranked(est, ok, "cost")
        if top.size:
            top, _ = prefer_safer(est, top, "cost", feasible=ok)
            j = int(top[0])
            out[f"{q:g}"] = [1, float(est.p_success[j]) if est.p_success is not None else q, float(success[j])]
        else:
            out[f"{q:g}"] = [0, 0.0, 0.0]
    return out


def plan_reliability(scn, est, usable: np.ndarray) -> dict:
    """Counts of ``P(success)`` and ``P(reach)`` at every candidate the models estimated, and of
    the solver's choices at a ladder of confidences (:func:`choice_counts`).

    ``est`` holds the estimates of candidates ``usable`` (indices into the scenario's
    candidates), with ``p_success`` filled in for the scenario's deadline.
    """
    success, reach = candidate_truth(scn, usable)
    p_success = est.p_success if est.p_success is not None else est.p_reach
    return {
        "success": counts(p_success, success),
        "reach": counts(est.p_reach, reach),
        "choices": choice_counts(scn, est, usable),
    }


def merge_choices(parts: Iterable[Mapping | None]) -> list[dict]:
    """Promised vs delivered ``P(success)`` of the solver's choices, per confidence."""
    tot: dict[str, list[float]] = {}
    for c in parts:
        for q, (n, sp, st) in (c or {}).items():
            acc = tot.setdefault(q, [0, 0.0, 0.0])
            acc[0] += n
            acc[1] += sp
            acc[2] += st
    return [
        {"q": float(q), "plans": int(n), "promised": sp / n if n else None, "delivered": st / n if n else None}
        for q, (n, sp, st) in sorted(tot.items(), key=lambda kv: float(kv[0]))
    ]


def epochs_coverage_reached(scn, evidence, models) -> tuple[int, int]:
    """(hits, n) of the 90 % epochs interval at the held-out measured batches whose true
    curve reaches the target.

    The interval is the distribution of epochs *given the target is reached*
    (:class:`cotune.models.EpochsPrediction`), so it is checked where the truth is
    reached; whether it is reached at all is ``P(reach)``'s to answer (its reliability
    table). ``coverage_epochs_90_unconditional`` keeps the older count, in which every
    unreached held-out batch is a miss of the interval.
    """
    from benchmarks.replay import curve_epochs_to_target

    w = scn.workload
    held = np.array(evidence.held_out, float)
    if not held.size:
        return 0, 0
    true_e = np.array([curve_epochs_to_target(w.curves[int(b)], scn.target, w.goal) for b in held])
    ok = np.isfinite(true_e)
    if not np.any(ok):
        return 0, 0
    pred = models.predict_epochs(held[ok], scn.target)
    lo, hi = np.asarray(pred.lower, float), np.asarray(pred.upper, float)
    return int(np.sum((lo <= true_e[ok]) & (true_e[ok] <= hi))), int(ok.sum())


def _summary_of(c_success: Mapping | None, c_reach: Mapping | None) -> dict:
    return {
        "candidates": _n(c_success) if c_success else 0,
        "brier": brier(c_success),
        "ece": ece(c_success),
        "brier_reach": brier(c_reach),
        "ece_reach": ece(c_reach),
    }


def reliability_rows(outcomes: Iterable) -> list[dict]:
    """One entry per (setting, policy, probe budget) with reliability counts: the two tables,
    Brier and ECE (the ``reliability`` list of ``results.json``)."""
    groups: dict[tuple, list] = {}
    for o in outcomes:
        rel = o.get("reliability") if isinstance(o, Mapping) else getattr(o, "reliability", None)
        if not rel:
            continue
        key = tuple(o[k] if isinstance(o, Mapping) else getattr(o, k) for k in ("setting", "policy", "budget"))
        groups.setdefault(key, []).append(rel)
    rows = []
    for (setting, policy, budget), rels in groups.items():
        cs = merge(r.get("success") for r in rels)
        cr = merge(r.get("reach") for r in rels)
        rows.append(
            {
                "setting": setting,
                "policy": policy,
                "probes": budget,
                "plans": len(rels),
                **_summary_of(cs, cr),
                "success": table(cs) if cs else [],
                "reach": table(cr) if cr else [],
                "choices": merge_choices(r.get("choices") for r in rels),
            }
        )
    return rows


def markdown(rows: Sequence[dict], *, families: Mapping[str, str] | None = None) -> list[str]:
    """Report lines: a Brier/ECE table, then the reliability tables of the first policy of each
    family (the family's members share models and probabilities)."""
    if not rows:
        return []
    f = lambda x: "–" if x is None else f"{x:.3f}"  # noqa: E731
    lines = [
        "", "### Reliability of P(success) and P(reach) over every candidate", "",
        "Every candidate the models estimated (not only the chosen plans), against the replay truth at that "
        "candidate (`python -m benchmarks.reliability` runs this alone). Brier = mean (p − outcome)²; "
        "ECE = count-weighted mean |mean predicted − fraction true| over ten bins. The members of a family "
        "share models and probabilities: each family is listed once, under its first member.", "",
        "| setting | policy | probes | candidates | Brier P(success) | ECE P(success) | Brier P(reach) | ECE P(reach) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    listed = set()
    for r in rows:
        key = (r["setting"], (families or {}).get(r["policy"], r["policy"]), r["probes"])
        if key in listed:
            continue
        listed.add(key)
        lines.append(f"| {_labelled(r['setting'])} | {r['policy']} | {r['probes']} | {r['candidates']} | {f(r['brier'])} | "
                     f"{f(r['ece'])} | {f(r['brier_reach'])} | {f(r['ece_reach'])} |")
    seen = set()
    for r in rows:
        fam = (families or {}).get(r["policy"], r["policy"])
        key = (r["setting"], fam, r["probes"])
        if key in seen:
            continue
        seen.add(key)
        lines += ["", f"{_labelled(r['setting'])}, {fam} family, {r['probes']} probes:", "",
                  "| predicted | P(success): n | mean predicted | truly succeed | P(reach): n | mean predicted | truly reach |",
                  "|---|---|---|---|---|---|---|"]
        by_s = {(x["lo"], x["hi"]): x for x in r["success"]}
        by_r = {(x["lo"], x["hi"]): x for x in r["reach"]}
        for lo, hi in sorted(set(by_s) | set(by_r)):
            s, a = by_s.get((lo, hi)), by_r.get((lo, hi))
            cell = lambda x: f"{x['count']} | {x['mean_pred']:.3f} | {x['frac_true']:.3f}" if x else "0 | – | –"  # noqa: E731
            lines.append(f"| {lo:.1f}–{hi:.1f} | {cell(s)} | {cell(a)} |")
        ch = [c for c in r.get("choices", []) if c["plans"]]
        if ch:
            lines += ["", "The solver's own choice on the same estimates at confidence q (the selection effect: "
                      "promised = mean P(success) of the chosen candidates, delivered = share truly succeeding):", "",
                      "| q | plans | promised | delivered |", "|---|---|---|---|"]
            lines += [f"| {c['q']:g} | {c['plans']} | {c['promised']:.3f} | {c['delivered']:.3f} |" for c in ch]
    return lines


# -- standalone: the cotune family alone, with splits by candidate attribute --------------------
_SPLITS = ("none", "distance", "target", "deadline", "workload", "extrapolated")


def _split_key(by: str, scn, est, j: np.ndarray) -> np.ndarray:
    if by == "distance":
        d = np.asarray(est.epochs_distance, float)[j]
        return np.where(d < 0.5, "d<0.5", np.where(d < 1.5, "0.5≤d<1.5", np.where(d < 2.5, "1.5≤d<2.5", "d≥2.5")))
    if by == "target":
        return np.full(j.shape, scn.target_label)
    if by == "deadline":
        return np.full(j.shape, scn.deadline_label)
    if by == "workload":
        return np.full(j.shape, scn.workload.name)
    if by == "extrapolated":
        return np.where(np.asarray(est.time_extrapolated)[j], "step extrapolated", "step inside")
    return np.full(j.shape, "all")


def collect(scns, *, settings: Sequence[str], budget: int, by: str = "none") -> dict[tuple[str, str], dict]:
    """Reliability counts of the cotune family's models after ``budget`` probes, per (setting, split value)."""
    from benchmarks.policies import fitted_estimates, run_policy

    out: dict[tuple[str, str], dict] = {}
    for scn in scns:
        for setting in settings:
            (plan,) = run_policy("cotune", scn, (budget,), setting=setting)
            usable, est = fitted_estimates(scn, plan.probed, setting=setting)
            success, reach = candidate_truth(scn, usable)
            keys = _split_key(by, scn, est, np.arange(len(usable)))
            # the solver's choices are per scenario: kept where the split is too
            choices = choice_counts(scn, est, usable) if by in ("none", "target", "deadline", "workload") else {}
            for k in np.unique(keys):
                sel = keys == k
                c = {"success": counts(est.p_success[sel], success[sel]), "reach": counts(est.p_reach[sel], reach[sel]),
                     "choices": [choices]}
                prev = out.get((setting, str(k)))
                out[(setting, str(k))] = c if prev is None else {
                    "success": merge([prev["success"], c["success"]]), "reach": merge([prev["reach"], c["reach"]]),
                    "choices": prev["choices"] + [choices],
                }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reliability", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the --quick slice of python -m benchmarks")
    parser.add_argument("--settings", default="one-curve,free-curves", help="comma-separated open-loop settings")
    parser.add_argument("--budget", type=int, default=None, help="probes (default: the headline budget, 16; quick: 12)")
    parser.add_argument("--by", choices=_SPLITS, default="none", help="split the tables by a candidate attribute")
    parser.add_argument("--workloads", default=None, help="comma-separated trace names (default: the mode's)")
    args = parser.parse_args(argv)
    from benchmarks.__main__ import FULL, QUICK
    from benchmarks.scenarios import scenarios, workloads

    cfg = QUICK if args.quick else FULL
    names = tuple(args.workloads.split(",")) if args.workloads else cfg.workloads
    try:
        scns = list(scenarios(workloads(names=names), target_labels=cfg.target_labels, deadline_factors=cfg.deadline_factors))
    except (FileNotFoundError, ValueError) as exc:
        print(f"benchmarks.reliability: {exc}", file=sys.stderr)
        return 2
    budget = args.budget or cfg.headline_budget
    settings = tuple(s.strip() for s in args.settings.split(",") if s.strip())
    got = collect(scns, settings=settings, budget=budget, by=args.by)
    f = lambda x: "–" if x is None else f"{x:.3f}"  # noqa: E731
    print(f"cotune family, {budget} probes, {len(scns)} scenarios; every estimated candidate against the replay truth")
    for (setting, k), c in sorted(got.items()):
        s = _summary_of(c["success"], c["reach"])
        print(f"\n{_labelled(setting)} [{k}]: {s['candidates']} candidates; P(success) Brier {f(s['brier'])} ECE {f(s['ece'])}; "
              f"P(reach) Brier {f(s['brier_reach'])} ECE {f(s['ece_reach'])}")
        print(f"  {'bin':9s} {'n':>6s} {'P(s) pred':>9s} {'true':>6s}   {'n':>6s} {'P(r) pred':>9s} {'true':>6s}")
        ts = {(x['lo']): x for x in table(c["success"])}
        tr = {(x['lo']): x for x in table(c["reach"])}
        for lo in sorted(set(ts) | set(tr)):
            a, b = ts.get(lo), tr.get(lo)
            fa = f"{a['count']:6d} {a['mean_pred']:9.3f} {a['frac_true']:6.3f}" if a else f"{0:6d} {'–':>9s} {'–':>6s}"
            fb = f"{b['count']:6d} {b['mean_pred']:9.3f} {b['frac_true']:6.3f}" if b else f"{0:6d} {'–':>9s} {'–':>6s}"
            print(f"  {lo:.1f}–{lo + 1 / BINS:.1f}   {fa}   {fb}")
        ch = [x for x in merge_choices(c["choices"]) if x["plans"]]
        if ch:
            print("  solver's choice at q: " + "; ".join(
                f"q={x['q']:g}: {x['plans']} plans, promised {x['promised']:.3f}, delivered {x['delivered']:.3f}" for x in ch))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
