"""The accuracy model's spread priors, measured on the published Pollux curves.

``python -m benchmarks.accuracy_priors`` prints the three constants of
:mod:`cotune.models._accuracy` and how much they vary when one workload is left out:

* ``KAPPA_BEYOND`` — σ of log epochs-to-target per doubling of the global batch when
  the critical-batch law extrapolates from the reference curve (the smallest batch of
  each trace, the job's original recipe) with the gradient noise scale that run logged;
* ``KAPPA_BEYOND_LAW`` — the same beyond a law fitted across three or more measured
  batches: each workload's smallest and largest batch left out in turn and predicted from
  the others (no shape by level);
* ``KAPPA_INSIDE`` — the same per doubling from the nearer neighbour when a measured
  batch is left out and interpolated (log-log) between the others;
* ``PLATEAU_WALK`` — the growth τ (per doubling) of the reach probability's spread,
  ``P(reach) = Φ(margin / √(σ_plateau² + (τ · d · range)²))``, that minimises the log-loss
  of whether each other batch reaches each target, for the model fitted on the
  reference curve alone; targets at seven levels from below the weakest batch's best
  metric to the best batch's; the median over workloads of each one's optimum (the
  pooled optimum is printed beside it); ``PLATEAU_WALK_OPTIMA``, the per-workload optima,
  whose log-normal quantiles are the nodes the library mixes (``PLATEAU_WALK_NODES``,
  :func:`cotune.models._accuracy.walk_prior_nodes`; ``P(reach)`` is the mean of the nodes'
  probabilities), with the log-loss of that prior on each workload when the nodes come
  from the other five, beside the other five's optima as nodes and their median.
* ``NOISE_RATIO_PRIOR`` — the mean and standard deviation over workloads of
  ``ln(B_noise / reference batch)``, ``B_noise`` the law fitted across each workload's
  batches (the median over the target levels): the prior a profile with one curve and no
  gradient statistics extrapolates with; with each workload predicted with the prior of
  the other five from its reference curve alone, the library's 90 % intervals' coverage
  and mean |log error| beside those of the no-benefit bound (E ∝ B) it replaced.

Errors are the model's own (fitted with κ = 0, so each sample carries its anchor σ),
pooled over six workloads and targets from 50 % to 100 % of the way from the first
evaluation to the weakest batch's best (targets every batch reaches). Each κ is the
value at which the model's 90 % interval, ``z₀.₉₅ · √(σ_anchor² + κ² d²)``, covers 90 %
of the pooled errors (the errors have heavy tails; a Gaussian fit of σ would cover
less). These are priors: a profile with three or more measured batches updates them
with its own leave-one-batch-out errors.

It also prints ``KAPPA_STEP`` of :mod:`cotune.models._step_time`: σ of log step time
per doubling beyond the probed box, from the bundled Pollux T4 profiles (CIFAR-10,
ImageNet, YOLOv3) fitted on ≤ 2 and on ≤ 4 workers and predicting the rest up to 64 (calibrated for 90 %
intervals the same way, on top of each fit's cross-validated σ).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from typing import Any

from benchmarks.traces import POLLUX_MODELS, Workload, load_pollux
from cotune.models._accuracy import AccuracyModel, crossing_epoch, fit_noise_scale, target_level, walk_prior_nodes
from cotune.models._isotonic import pava
from cotune.models._step_time import growth_for_coverage

__all__ = ["errors", "priors", "run_scatter_prior", "walk_nodes", "walk_prior", "kappa_step", "walk_nodes_left_out", "main"]

_LEVELS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _best(w: Workload, b: int) -> tuple[np.ndarray, np.ndarray]:
    c = w.curves[b]
    s = w.score(c.metric)
    best = np.maximum.accumulate(np.where(np.isfinite(s), s, -np.inf))
    ok = np.isfinite(best)
    return c.epochs[ok], best[ok]


def level_scores(w: Workload) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], list[float]]:
    """Each batch's best-so-far curve (score space) and the targets the priors are measured
    at, in score space: ``_LEVELS`` of the way from the median first evaluation to the
    weakest batch's best (targets every batch reaches)."""
    curves = {b: _best(w, b) for b in w.batches}
    start = float(np.median([float(c[1][0]) for c in curves.values()]))
    weakest = float(min(float(c[1][-1]) for c in curves.values()))
    return curves, [start + f * (weakest - start) for f in _LEVELS]


def _reference_noise_scale(w: Workload) -> float | None:
    """The reference curve's noise scale, as its noise records say (:meth:`Workload.noise_scale`)."""
    return w.noise_scale()


def _fit(w: Workload, visible: list[int], bn: float, **kw) -> AccuracyModel:
    gb = np.concatenate([np.full(len(w.curves[b].epochs), float(b)) for b in visible])
    ep = np.concatenate([w.curves[b].epochs for b in visible])
    me = np.concatenate([w.curves[b].metric for b in visible])
    # Spreads at zero: the samples measure the anchor σ alone, κ is solved for below.
    return AccuracyModel(goal=w.goal, b_noise=bn, noise_trace=w.noise_rows(), kappa_beyond=0.0, kappa_beyond_law=0.0,
                         kappa_inside=0.0, **kw).fit(gb, ep, me)


def scatter_of(w: Workload) -> float:
    """The workload's own run-to-run scatter (no prior): the median over the target levels
    of :meth:`AccuracyModel.scatter_at` for the model fitted on all its batches."""
    batches = list(w.batches)
    curves = {b: _best(w, b) for b in batches}
    start = float(np.median([float(curves[b][1][0]) for b in batches]))
    weakest = float(min(float(curves[b][1][-1]) for b in batches))
    m = _fit(w, batches, _reference_noise_scale(w), run_scatter=0.0)
    return float(np.median([m.scatter_at(float(w.score(start + f * (weakest - start)))) for f in _LEVELS]))


def run_scatter_prior(scatters: dict[str, float]) -> float:
    """``RUN_SCATTER``: the median over workloads of each one's :func:`scatter_of`."""
    return float(np.median(list(scatters.values())))


def errors(w: Workload, **model_kw: Any) -> dict[str, list]:
    """Samples of one workload: ``(|log error|, σ_anchor, doublings, level)`` of the
    model's own predictions beyond (reference curve only; ``level`` the target's place
    along the reference curve, :func:`cotune.models._accuracy.target_level`) and inside
    (one batch left out), beyond a law fitted across the others (``beyond_law``: the smallest
    and the largest batch left out in turn), and the reach samples (:func:`reach_samples`). ``model_kw``: the
    accuracy model's priors in place of the library's defaults (``run_scatter=`` when refitted)."""
    batches = list(w.batches)
    curves = {b: _best(w, b) for b in batches}
    starts = [float(curves[b][1][0]) for b in batches]
    finals = np.array([float(curves[b][1][-1]) for b in batches])
    start, weakest = float(np.median(starts)), float(finals.min())
    bn = _reference_noise_scale(w)
    ref = w.reference_batch
    one = _fit(w, [ref], bn, **model_kw)
    loo = {b: _fit(w, [c for c in batches if c != b], bn, **model_kw) for b in batches[1:-1]}
    ends = {b: _fit(w, [c for c in batches if c != b], bn, **model_kw) for b in (batches[0], batches[-1])}
    beyond, inside, beyond_law = [], [], []
    for f in _LEVELS:
        t = float(w.score(start + f * (weakest - start)))
        for b in batches:
            truth = crossing_epoch(*curves[b], float(w.score(t)))
            if b != ref and math.isfinite(truth):
                p = one.epochs_to_target(np.array([float(b)]), t)
                if math.isfinite(p.epochs_if_reached[0]):
                    level = float(target_level(float(w.score(t)), one.curve_start_[0], one.curve_plateau_[0]))
                    beyond.append((abs(math.log(truth / p.epochs_if_reached[0])), float(p.log_sigma[0]),
                                   float(p.distance_doublings[0]), level))
            if b in loo and math.isfinite(truth):
                p = loo[b].epochs_to_target(np.array([float(b)]), t)
                if math.isfinite(p.epochs_if_reached[0]):
                    inside.append((abs(math.log(truth / p.epochs_if_reached[0])), float(p.log_sigma[0]), float(p.distance_doublings[0])))
            if b in ends and math.isfinite(truth) and ends[b].anchor_batches(float(w.score(t))).size >= 3:
                p = ends[b].epochs_to_target(np.array([float(b)]), t)
                if math.isfinite(p.epochs_if_reached[0]):
                    beyond_law.append((abs(math.log(truth / p.epochs_if_reached[0])), float(p.log_sigma[0]),
                                       float(p.distance_doublings[0])))
    return {"beyond": beyond, "inside": inside, "beyond_law": beyond_law, "reach": reach_samples(w, **model_kw)}


def reach_samples(w: Workload, **model_kw: Any) -> list[tuple[float, float, bool]]:
    """``(margin / σ_plateau-free parts…)`` for the reach probability: for the model fitted on
    the reference curve, every other batch and target level, ``(margin, d·range², reached)``
    plus the model's σ_plateau, so that any τ can be scored without refitting."""
    batches = list(w.batches)
    curves = {b: _best(w, b) for b in batches}
    finals = np.array([float(curves[b][1][-1]) for b in batches])
    starts = [float(curves[b][1][0]) for b in batches]
    start = float(np.median(starts))
    bn = _reference_noise_scale(w)
    one = _fit(w, [w.reference_batch], bn, **model_kw)
    out = []
    # Levels across the plateaus: from below the weakest batch's best to above the best's.
    lo, hi = float(finals.min()), float(finals.max())
    levels = [start + 0.9 * (lo - start)] + list(np.linspace(lo - 0.25 * (hi - lo), hi, 6))
    for level in levels:
        ev = one._evidence(level)
        for b in batches:
            if b == w.reference_batch:
                continue
            reached = math.isfinite(crossing_epoch(*curves[b], level))
            d = abs(math.log2(b / w.reference_batch))
            out.append((float(ev.margin_beyond[0]), float(ev.plateau_sigma[0]), (d * one.metric_range_) ** 2, reached))
    return out


def _calibrated_walk(samples: list) -> float:
    """τ minimising the log-loss of ``P(reach) = Φ(margin / √(σ² + (τ d range)²))``."""
    from cotune.models._normal import norm_cdf

    m, s, dr, hit = (np.array(v, float) for v in zip(*samples))
    grid = np.geomspace(1e-4, 0.5, 400)
    loss = []
    for tau in grid:
        p = np.clip(norm_cdf(m / np.sqrt(s**2 + tau**2 * dr)), 1e-6, 1 - 1e-6)
        loss.append(-np.mean(hit * np.log(p) + (1 - hit) * np.log(1 - p)))
    return float(grid[int(np.argmin(loss))])


def _reach_scores(samples: list, nodes: list[float]) -> tuple[float, float]:
    """(log-loss, Brier) of ``P(reach)`` as the mixture over ``nodes`` (one node: a plain normal)."""
    from cotune.models._accuracy import reach_probability

    m, s, dr, hit = (np.array(v, float) for v in zip(*samples))
    p = np.clip(reach_probability(m, s, np.sqrt(dr), np.array(nodes)), 1e-6, 1 - 1e-6)
    return float(-np.mean(hit * np.log(p) + (1 - hit) * np.log(1 - p))), float(np.mean((p - hit) ** 2))


def walk_nodes(per: dict[str, dict[str, list]]) -> tuple[float, ...]:
    """``PLATEAU_WALK_OPTIMA``: each workload's log-loss optimum τ, in the order of ``per``."""
    return tuple(_calibrated_walk(e["reach"]) for e in per.values())


def walk_prior(per: dict[str, dict[str, list]]) -> tuple[float, ...]:
    """``PLATEAU_WALK_NODES``: the log-normal quantile nodes of these workloads' optima."""
    return walk_prior_nodes(walk_nodes(per))


def walk_nodes_left_out(per: dict[str, dict[str, list]]) -> dict[str, dict[str, float]]:
    """Each workload scored with the reach spread learnt on the *other* workloads: the
    log-normal nodes of their optima (the shipped form, ``PLATEAU_WALK_NODES``), their optima
    themselves as nodes (the form shipped until 2026-12-07) and their median as one value."""
    opt = dict(zip(per, walk_nodes(per)))
    out = {}
    for m, e in per.items():
        rest = [opt[n] for n in per if n != m]
        row: dict[str, float] = {"tau": opt[m]}
        for label, nodes in (("lognormal", list(walk_prior_nodes(rest))), ("mixture", rest),
                             ("median", [float(np.median(rest))])):
            row[f"logloss_{label}"], row[f"brier_{label}"] = _reach_scores(e["reach"], nodes)
        out[m] = row
    return out


def _calibrated_kappa(samples: list) -> float:
    """κ at which ``|e| ≤ z₀.₉₅ · √(σ_anchor² + κ² d²)`` holds for 90 % of the samples."""
    e, s, d = (np.array(v, float) for v in list(zip(*samples))[:3])
    return growth_for_coverage(e, s, d, level=0.9)


SHAPE_LEVELS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def beyond_shape(samples: list) -> tuple[tuple[float, float], ...]:
    """``KAPPA_BEYOND_SHAPE``: κ calibrated (90 % coverage) in each bin of target level
    along the reference curve — bins of width 0.1 around ``SHAPE_LEVELS``, the ends
    open — made non-increasing in the level (pool adjacent violators, weighted by the
    bin's samples), over the pooled κ."""
    pooled = _calibrated_kappa(samples)
    level = np.array([x[3] for x in samples])
    edges = np.array([-np.inf] + [0.5 * (a + b) for a, b in zip(SHAPE_LEVELS[:-1], SHAPE_LEVELS[1:])] + [np.inf])
    kappas, counts = [], []
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = [x for x, f in zip(samples, level) if lo <= f < hi]
        kappas.append(_calibrated_kappa(sel) if len(sel) >= 5 else pooled)
        counts.append(max(len(sel), 1))
    smooth = pava(np.array(kappas), np.array(counts, float), increasing=False)
    return tuple((float(f), round(float(k / pooled), 3)) for f, k in zip(SHAPE_LEVELS, smooth))


def priors(per: dict[str, dict[str, list]]) -> dict[str, float]:
    """The constants from the samples of these workloads (κ pooled; τ the median over
    workloads of each one's log-loss optimum: pooled, BERT alone — two evaluations a
    curve, so the metric's rise is tiny against batch-to-batch plateau differences —
    would set it for all)."""
    pooled = {k: [x for e in per.values() for x in e[k]] for k in ("beyond", "inside", "beyond_law")}
    return {
        "KAPPA_BEYOND": _calibrated_kappa(pooled["beyond"]),
        "KAPPA_BEYOND_LAW": _calibrated_kappa(pooled["beyond_law"]),
        "KAPPA_BEYOND_SHAPE": beyond_shape(pooled["beyond"]),
        "KAPPA_INSIDE": _calibrated_kappa(pooled["inside"]),
        "PLATEAU_WALK": float(np.median([_calibrated_walk(e["reach"]) for e in per.values()])),
        "PLATEAU_WALK_POOLED": _calibrated_walk([x for e in per.values() for x in e["reach"]]),
    }


def noise_ratio_of(w: Workload) -> float:
    """``ln(B_noise / reference batch)`` of one workload: the law fitted across all its
    batches' crossings at each of the target levels, the median over the levels."""
    batches = list(w.batches)
    curves, levels = level_scores(w)
    ratios = []
    for t in levels:
        e = np.array([crossing_epoch(*curves[b], t) for b in batches])
        ok = np.isfinite(e)
        law = fit_noise_scale(np.array(batches, float)[ok], e[ok]) if np.count_nonzero(ok) >= 3 else None
        if law is not None:
            ratios.append(math.log(law[1] / w.reference_batch))
    return float(np.median(ratios))


def noise_ratio_prior(ratios: dict[str, float]) -> tuple[float, float]:
    """``NOISE_RATIO_PRIOR``: the mean and standard deviation of the workloads' :func:`noise_ratio_of`."""
    v = np.array(list(ratios.values()), float)
    return float(v.mean()), float(v.std(ddof=1))


def no_noise_samples(w: Workload, prior: tuple[float, float] | None) -> list[tuple[float, bool]]:
    """``(log error, covered by the 90 % interval)`` of the library model fitted on the
    reference curve alone *without* its gradient statistics, at every other batch and
    target level (``prior``: its ``noise_ratio_prior``; None, the no-benefit bound)."""
    curves, levels = level_scores(w)
    ref = w.reference_batch
    c = w.curves[ref]
    model = AccuracyModel(goal=w.goal, noise_ratio_prior=prior).fit(np.full(len(c.epochs), float(ref)), c.epochs, c.metric)
    out = []
    for t in levels:
        for b in w.batches:
            truth = crossing_epoch(*curves[b], t)
            if b == ref or not math.isfinite(truth):
                continue
            p = model.epochs_to_target(np.array([float(b)]), float(w.score(t)))
            med = float(p.epochs_if_reached[0])
            if math.isfinite(med):
                out.append((math.log(truth / med), bool(p.lower[0] <= truth <= p.upper[0])))
    return out


def kappa_step(samples: dict[str, list]) -> float:
    """``KAPPA_STEP`` from :func:`step_samples` of each bundled profile, pooled."""
    return _calibrated_kappa([x for v in samples.values() for x in v])


def step_samples(name: str, *, cuts: tuple[int, ...] = (2, 4)) -> list:
    """``(|log error|, σ, doublings)`` of step-time predictions beyond ``cut`` workers, for
    each cut; κ is left out of σ (fitted with ``calibrate=False``: the prior is what a profile
    too narrow to estimate its own growth falls back on)."""
    from cotune import load_profile
    from cotune.models import StepTimeModel

    a = load_profile(name).step_arrays("t4")
    out = []
    for cut in cuts:
        train = a["workers"] <= cut
        m = StepTimeModel(n_bootstrap=0, kappa_step=0.0).fit(
            a["workers"][train], a["hosts"][train], a["local_batch"][train], a["step_time_s"][train]
        )
        w, h, b = a["workers"][~train], a["hosts"][~train], a["local_batch"][~train]
        p = m.predict(w, h, b)
        err = np.abs(np.log(a["step_time_s"][~train] / p.step_time_s))
        out += list(zip(err, np.full(err.shape, m.cv_sigma_), m._distance(w, h, b)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.accuracy_priors", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    loaded = {m: load_pollux(m) for m in POLLUX_MODELS}
    per = {m: errors(w) for m, w in loaded.items()}
    out = {"all": priors(per)}
    scatter = {m: scatter_of(w) for m, w in loaded.items()}
    out["all"]["RUN_SCATTER"] = run_scatter_prior(scatter)
    for m in per:
        out[f"without {m}"] = priors({n: e for n, e in per.items() if n != m})
    from benchmarks._common import PROFILES

    steps = {n: step_samples(n) for n in PROFILES}
    out["all"]["KAPPA_STEP"] = kappa_step(steps)
    for n in steps:
        out[f"step without {n}"] = {"KAPPA_STEP": kappa_step({k: v for k, v in steps.items() if k != n})}
    walk = walk_nodes_left_out(per)
    out["PLATEAU_WALK_OPTIMA"] = {m: v["tau"] for m, v in walk.items()}
    # The optima are walk_nodes_left_out's own: walk_prior(per) would fit them all again.
    out["PLATEAU_WALK_NODES"] = list(walk_prior_nodes(list(out["PLATEAU_WALK_OPTIMA"].values())))
    out["reach, one workload left out"] = walk
    ratios = {m: noise_ratio_of(w) for m, w in loaded.items()}
    out["NOISE_RATIO_PRIOR"] = noise_ratio_prior(ratios)
    out["no noise, one workload left out"] = {}
    for m, w in loaded.items():
        left = noise_ratio_prior({n: r for n, r in ratios.items() if n != m})
        samples = {"prior": no_noise_samples(w, left), "bound": no_noise_samples(w, None)}
        out["no noise, one workload left out"][m] = {
            "ratio": ratios[m], "prior_left_out": left,
            **{f"{k}_{what}": v for k, smp in samples.items() for what, v in (
                ("n", len(smp)), ("coverage", float(np.mean([c for _, c in smp]))),
                ("mean_abs_log_error", float(np.mean([abs(e) for e, _ in smp]))))},
        }
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    cols = ("KAPPA_BEYOND", "KAPPA_BEYOND_LAW", "KAPPA_INSIDE", "PLATEAU_WALK", "PLATEAU_WALK_POOLED", "KAPPA_STEP")
    print(f"{'workloads':34s} " + " ".join(f"{c:>13s}" for c in cols))
    for name, p in out.items():
        if name in ("PLATEAU_WALK_OPTIMA", "PLATEAU_WALK_NODES", "reach, one workload left out", "NOISE_RATIO_PRIOR",
                    "no noise, one workload left out"):
            continue
        print(f"{name:34s} " + " ".join(f"{p[c]:13.4f}" if c in p else f"{'':13s}" for c in cols))
    print("\nRUN_SCATTER (median over workloads; KAPPA_INSIDE above is with the library's RUN_SCATTER in the model): "
          f"{out['all']['RUN_SCATTER']:.4f}; per workload " + ", ".join(f"{m} {v:.4f}" for m, v in scatter.items()))
    print("\nKAPPA_BEYOND_SHAPE (level along the reference curve, factor on KAPPA_BEYOND): "
          + ", ".join(f"{f:.1f} {k:.3f}" for f, k in out["all"]["KAPPA_BEYOND_SHAPE"]))
    for name, p in out.items():
        if name.startswith("without"):
            print(f"  {name:26s} " + ", ".join(f"{k:.3f}" for _, k in p["KAPPA_BEYOND_SHAPE"]))
    print("\nPLATEAU_WALK_OPTIMA (each workload's log-loss optimum): "
          + ", ".join(f"{m} {v['tau']:.6g}" for m, v in walk.items()))
    print("PLATEAU_WALK_NODES (their log-normal quantiles): " + ", ".join(f"{t:.4f}" for t in out["PLATEAU_WALK_NODES"]))
    print("P(reach) on the workload left out, spread learnt on the other five: log-loss (Brier)")
    labels = (("lognormal", "log-normal of their optima"), ("mixture", "their optima as nodes"),
              ("median", "their median, one value"))
    print(f"{'workload':14s} " + " ".join(f"{t:>27s}" for _, t in labels))
    for m, v in walk.items():
        print(f"{m:14s} " + " ".join(f"{v['logloss_' + k]:18.3f} ({v['brier_' + k]:.3f})" for k, _ in labels))
    mean = lambda k: float(np.mean([v[k] for v in walk.values()]))  # noqa: E731
    print(f"{'mean':14s} " + " ".join(f"{mean('logloss_' + k):18.3f} ({mean('brier_' + k):.3f})" for k, _ in labels))
    print_no_noise(out["NOISE_RATIO_PRIOR"], out["no noise, one workload left out"])
    return 0


def print_no_noise(prior: tuple[float, float], rows: dict[str, dict]) -> None:
    """The ``NOISE_RATIO_PRIOR`` section of the report: the prior, and on each workload left
    out the 90 % intervals of the reference curve alone without gradient statistics."""
    print(f"\nNOISE_RATIO_PRIOR (ln(B_noise / reference batch): mean, sd over workloads): {prior[0]:.3f}, {prior[1]:.3f}")
    print("reference curve alone, no gradient statistics; each workload with the prior of the other five:")
    print(f"{'workload':14s} {'ln ratio':>8s} {'n':>4s} {'prior: cover':>12s} {'|log err|':>9s} {'bound: cover':>12s} {'|log err|':>9s}")
    for m, v in rows.items():
        print(f"{m:14s} {v['ratio']:8.2f} {v['prior_n']:4d} {v['prior_coverage']:12.1%} {v['prior_mean_abs_log_error']:9.3f} "
              f"{v['bound_coverage']:12.1%} {v['bound_mean_abs_log_error']:9.3f}")
    n = {k: sum(v[f"{k}_n"] for v in rows.values()) for k in ("prior", "bound")}
    pooled = {k: (sum(v[f"{k}_coverage"] * v[f"{k}_n"] for v in rows.values()) / n[k],
                  sum(v[f"{k}_mean_abs_log_error"] * v[f"{k}_n"] for v in rows.values()) / n[k]) for k in n}
    print(f"{'pooled':14s} {'':8s} {n['prior']:4d} {pooled['prior'][0]:12.1%} {pooled['prior'][1]:9.3f} "
          f"{pooled['bound'][0]:12.1%} {pooled['bound'][1]:9.3f}")


if __name__ == "__main__":
    raise SystemExit(main())
