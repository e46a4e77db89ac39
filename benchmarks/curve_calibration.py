"""Calibration of the learning-curve extrapolation (cotune/models/_curve.py) on the Pollux curves.

Every published Pollux curve (6 workloads, 2–10 batches each) is truncated at 10, 20, 30,
40 and 50 % of its run; from the truncated best-so-far curve the extrapolation predicts
the epochs to each of a ladder of targets (levels between the curve's first and final
best, and two above its final best, which it never reaches). Measured:

* **coverage** of the 90 % interval — the fraction of (curve, truncation, target) with a
  true crossing after the truncation whose true epochs lie inside the interval;
* **median |log error|** of the median forecast, and the **Brier score** and reliability
  of the reach probability (the run's end is the horizon: a target it never reached
  counts as not reached).

The two constants (``κ``: spread per unit of log extrapolation; ``s``: margin scale of the
reach probability) are fitted **leave-one-workload-out**: each workload is scored with
constants fitted on the other five, so no number below is tuned to the curves it is
measured on. The constants shipped in ``_curve.py`` are the fit on all six.

Each setting is measured twice: the curve alone, and combined with the accuracy model's
prior at the batch, fitted on the *other* batches of the same workload (what a job's
plan knows before it starts).

    python -m benchmarks.curve_calibration            # ~1–2 min on 2 cores
    python -m benchmarks.curve_calibration --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from benchmarks.traces import load_pollux
from cotune.models import AccuracyModel
from cotune.models._curve import (
    CURVE_MARGIN_OFFSET,
    CURVE_MARGIN_SCALE,
    EpochsPrior,
    best_so_far,
    fit_curve_families,
    forecast_from_fits,
    prior_from_model,
)

WORKLOADS = ("cifar10", "imagenet", "deepspeech2", "yolov3", "ncf", "bert")
TRUNCATIONS = (0.1, 0.2, 0.3, 0.4, 0.5)
LEVELS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0, 1.03, 1.15)  # of the way from the first best to the final best
INTERVAL = 0.9
Z = NormalDist().inv_cdf(0.5 + INTERVAL / 2)


@dataclass
class Item:
    """One (workload, batch, truncation, target): the fitted families, re-scored for any κ and s."""

    workload: str
    batch: int
    truncation: float
    level: float
    goal: str
    target: float  # metric units
    epochs: np.ndarray  # truncated best-so-far curve
    best: np.ndarray
    fits: list
    lo: float
    rise: float
    epoch_fit: float
    true_epochs: float  # inf if never reached within the run
    prior: EpochsPrior | None
    prior_ref: EpochsPrior | None = None  # from the reference (smallest) batch's curve alone

    @property
    def reached(self) -> bool:
        return math.isfinite(self.true_epochs)

    @property
    def seen(self) -> float:
        return float(self.epochs[-1])

    def forecast(self, kappa: float, s: tuple[float, float], with_prior: bool | str):
        """``with_prior``: False (curve alone), True (curve + prior), "only" (the prior alone),
        "ref" (curve + the one-curve prior), "ref_only" (the one-curve prior alone)."""
        prior = self.prior_ref if with_prior in ("ref", "ref_only") else self.prior if with_prior else None
        return forecast_from_fits(
            [] if with_prior in ("only", "ref_only") else self.fits, self.epochs, self.best, lo=self.lo, rise=self.rise,
            epoch_fit=self.epoch_fit, target=self.target, goal=self.goal, interval=INTERVAL, prior=prior,
            kappa=kappa, margin_offset=s[0], margin_scale=s[1],
        )


def _crossing(e: np.ndarray, best: np.ndarray, t: float) -> float:
    hit = np.flatnonzero(best >= t)
    if hit.size == 0:
        return math.inf
    i = int(hit[0])
    if i == 0:
        return float(e[0])
    frac = (t - best[i - 1]) / (best[i] - best[i - 1])
    return float(e[i - 1] + frac * (e[i] - e[i - 1]))


def _prior_model(w, batch: int, *, reference_only: bool = False):
    """The accuracy model fitted on the workload's *other* batches (None with fewer than two),
    or, ``reference_only``, on the reference (smallest) batch's curve with its gradient noise
    scale — the one-curve setting (None when ``batch`` is the reference)."""
    if reference_only:
        ref = min(w.curves)
        if batch == ref:
            return None
        c = w.curves[ref]
        b_noise = w.noise_scale(ref)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return AccuracyModel(goal=w.goal, interval=INTERVAL, b_noise=b_noise, noise_trace=w.noise_rows(ref)).fit(
                np.full(c.epochs.size, float(ref)), c.epochs, c.metric)
    others = [b for b in w.curves if b != batch]
    if len(others) < 2:
        return None
    ge = np.concatenate([np.full(w.curves[b].epochs.size, float(b)) for b in others])
    ee = np.concatenate([w.curves[b].epochs for b in others])
    mm = np.concatenate([w.curves[b].metric for b in others])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AccuracyModel(goal=w.goal, interval=INTERVAL).fit(ge, ee, mm)


def _prior(model, batch: int, target: float) -> EpochsPrior | None:
    if model is None:
        return None
    try:
        return prior_from_model(model, global_batch=batch, target=target, interval=INTERVAL)
    except Exception:  # noqa: BLE001 - a prior that cannot be formed is simply absent
        return None


def truncated_fits(epochs: np.ndarray, metric: np.ndarray, goal: str, end: float,
                   truncations: tuple[float, ...] = TRUNCATIONS):
    """For each truncation ``frac`` of a run that ends at ``end``: ``(frac, e, best, fits, lo,
    rise, epoch_fit)`` — the best-so-far curve up to ``frac·end`` and the families fitted to
    it (truncations that keep no evaluation are left out)."""
    for frac in truncations:
        keep = epochs <= frac * end
        e, best = best_so_far(epochs[keep], metric[keep], goal=goal)
        if e.size:
            yield (frac, e, best, *fit_curve_families(e, best))


def collect(with_prior: bool = True, truncations: tuple[float, ...] = TRUNCATIONS,
            workloads: tuple[str, ...] = WORKLOADS) -> list[Item]:
    """Every (curve, truncation, target) of ``workloads``; ``with_prior``: also the accuracy
    model's priors at the batch (the constants' fits use the curve alone and need neither)."""
    items: list[Item] = []
    for name in workloads:
        w = load_pollux(name)
        for batch, c in w.curves.items():
            e_full, best_full = best_so_far(c.epochs, c.metric, goal=w.goal)
            if e_full.size < 3 or not best_full[-1] > best_full[0]:
                continue
            first, final = float(best_full[0]), float(best_full[-1])
            model = _prior_model(w, batch) if with_prior else None
            model_ref = _prior_model(w, batch, reference_only=True) if with_prior else None
            for frac, e, best, fits, lo, rise, epoch_fit in truncated_fits(
                    c.epochs, c.metric, w.goal, float(e_full[-1]), truncations):
                for level in LEVELS:
                    t = first + level * (final - first)  # score units
                    if best[-1] >= t:
                        continue  # already reached at the truncation: nothing to forecast
                    metric_t = t if w.goal == "max" else -t
                    prior, prior_ref = (_prior(m, batch, metric_t) for m in (model, model_ref))
                    items.append(Item(name, batch, frac, level, w.goal, metric_t, e, best, fits, lo, rise, epoch_fit,
                                      _crossing(e_full, best_full, t), prior, prior_ref))
    return items


def coverage(items: list[Item], kappa: float, s: tuple[float, float] = (CURVE_MARGIN_OFFSET, CURVE_MARGIN_SCALE),
             with_prior: bool = False) -> tuple[float, float, int, int]:
    """(coverage, median |log error|, scored, without a forecast) over the targets reached
    after the truncation. Without a forecast: the curve is too short to fit (curve alone)
    or neither the curve nor the prior gives a finite epochs (with the prior); those are
    counted apart, not as covered."""
    hits, errs, missing = [], [], 0
    for it in items:
        if not it.reached or it.true_epochs <= it.seen:
            continue
        f = it.forecast(kappa, s, with_prior)
        if not math.isfinite(f.epochs_if_reached):
            missing += 1
            continue
        hits.append(f.lower <= it.true_epochs <= f.upper)
        errs.append(abs(math.log(it.true_epochs / f.epochs_if_reached)))
    if not hits:
        return math.nan, math.nan, 0, missing
    return float(np.mean(hits)), float(np.median(errs)) if errs else math.nan, len(hits), missing


def fit_kappa(items: list[Item]) -> float:
    """κ whose curve-only 90 % interval covers 90 % of the reached targets (bisection)."""
    lo, hi = 0.0, 4.0
    for _ in range(22):
        mid = 0.5 * (lo + hi)
        if coverage(items, mid)[0] < INTERVAL:
            lo = mid
        else:
            hi = mid
    return hi


def brier(items: list[Item], kappa: float, s: tuple[float, float], with_prior: bool = False) -> tuple[float, int]:
    sq = [(it.forecast(kappa, s, with_prior).p_reach - float(it.reached)) ** 2 for it in items]
    return (float(np.mean(sq)) if sq else math.nan), len(sq)


def fit_margin_scale(items: list[Item]) -> tuple[float, float]:
    """(m₀, s) maximising the likelihood of 'reached within the run' under the curve's
    Φ((margin + m₀) / s), on a grid."""
    fitted = [it for it in items if it.fits]
    margins = np.array([it.forecast(0.0, (0.0, 1.0), False).p_reach for it in fitted])  # Φ(margin)
    m = np.array([NormalDist().inv_cdf(min(max(p, 1e-12), 1 - 1e-12)) for p in margins])
    y = np.array([it.reached for it in fitted], dtype=float)
    best, arg = -math.inf, (CURVE_MARGIN_OFFSET, CURVE_MARGIN_SCALE)
    for m0 in np.linspace(-1.0, 2.0, 31):
        for s in np.geomspace(0.05, 10.0, 40):
            p = np.clip(np.array([NormalDist().cdf(v) for v in (m + m0) / s]), 1e-6, 1 - 1e-6)
            ll = float(np.sum(y * np.log(p) + (1 - y) * np.log(1 - p)))
            if ll > best:
                best, arg = ll, (float(m0), float(s))
    return arg


LATE_TRUNCATIONS = ((0.6,), (0.7,), (0.8,), (0.9,))


def _late(groups: tuple[tuple[float, ...], ...]) -> int:
    """Coverage and median |log error| of the shipped forecast at each later truncation: the
    curve alone, with the prior from the other batches, and with the one-curve prior."""
    from cotune.models._curve import CURVE_KAPPA

    s = (CURVE_MARGIN_OFFSET, CURVE_MARGIN_SCALE)
    print(f"shipped constants (kappa {CURVE_KAPPA}, margin {s}); 90 % intervals; targets reached after the truncation")
    print(f"{'truncation':<11} {'n':>4} {'curve':>7} {'|err|':>6} {'+prior':>7} {'|err|':>6} {'+ref':>7} {'|err|':>6}")
    for fr in groups:
        items = collect(with_prior=True, truncations=fr)
        cells = [coverage(items, CURVE_KAPPA, s, with_prior=mode) for mode in (False, True, "ref")]
        print(f"{', '.join(f'{f:.0%}' for f in fr):<11} {cells[0][2]:>4} "
              + " ".join(f"{c[0]:>7.1%} {c[1]:>6.3f}" for c in cells))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", default=None, help="also write the numbers as JSON here")
    parser.add_argument("--late", action="store_true",
                        help="instead: coverage at later truncations (60-90 %% of a run, where a closed-loop job near its "
                        "end forecasts), with the shipped constants (fitted on all the curves: not held out)")
    args = parser.parse_args(argv)
    if args.late:
        return _late(LATE_TRUNCATIONS)
    began = time.monotonic()
    items = collect(with_prior=True)
    rows = []
    print(f"{len(items)} forecasts (curve, truncation, target) from {len(WORKLOADS)} Pollux workloads; "
          f"90 % intervals; constants leave-one-workload-out")
    print(f"{'held out':<12} {'kappa':>6} {'s':>5} {'n':>5} {'cov':>6} {'|log err|':>9} {'no fit':>6} "
          f"{'cov+prior':>9} {'|log err|':>9} {'n':>5} {'prior':>8} {'|log err|':>9} {'brier':>6} {'brier+prior':>11} {'brier base':>10}")
    pooled = {"curve": [], "prior": [], "only": []}
    for name in WORKLOADS:
        train = [i for i in items if i.workload != name]
        test = [i for i in items if i.workload == name]
        if not test:
            continue
        k, s = fit_kappa(train), fit_margin_scale(train)
        cov, err, n, miss = coverage(test, k, s)
        covp, errp, np_, _ = coverage(test, k, s, with_prior=True)
        covo, erro, no_, _ = coverage(test, k, s, with_prior="only")
        br, _ = brier(test, k, s)
        brp, _ = brier(test, k, s, with_prior=True)
        base_rate = float(np.mean([i.reached for i in train]))
        brb = float(np.mean([(base_rate - float(i.reached)) ** 2 for i in test]))
        rows.append({"held_out": name, "kappa": k, "margin_scale": s, "scored": n, "coverage": cov,
                     "median_abs_log_error": err, "no_forecast": miss, "coverage_with_prior": covp, "median_abs_log_error_with_prior": errp,
                     "coverage_prior_only": covo, "median_abs_log_error_prior_only": erro, "scored_prior_only": no_,
                     "scored_with_prior": np_, "brier": br, "brier_with_prior": brp, "brier_base_rate": brb})
        pooled["curve"].append((cov, n))
        pooled["prior"].append((covp, np_))
        pooled["only"].append((covo, no_))
        print(f"{name:<12} {k:>6.3f} {s[1]:>5.2f} {n:>5} {cov:>6.1%} {err:>9.3f} {miss:>6} {covp:>9.1%} {errp:>9.3f} {np_:>5} {covo:>8.1%} {erro:>9.3f} "
              f"{br:>6.3f} {brp:>11.3f} {brb:>10.3f}")

    def pool(pairs):
        tot = sum(n for _, n in pairs if n)
        return sum(c * n for c, n in pairs if n and math.isfinite(c)) / tot if tot else math.nan

    print("one-curve setting (prior from the reference batch's curve + its gradient noise scale):")
    print(f"{'held out':<12} {'n':>5} {'curve+ref':>9} {'|log err|':>9} {'ref alone':>9} {'|log err|':>9} "
          f"{'brier':>6} {'brier ref':>9}")
    for name in WORKLOADS:
        train = [i for i in items if i.workload != name]
        test = [i for i in items if i.workload == name and i.prior_ref is not None]
        if not test:
            continue
        k, s = fit_kappa(train), fit_margin_scale(train)
        covr, errr, nr, _ = coverage(test, k, s, with_prior="ref")
        covro, erro, nro, _ = coverage(test, k, s, with_prior="ref_only")
        brr, _ = brier(test, k, s, with_prior="ref")
        brro, _ = brier(test, k, s, with_prior="ref_only")
        rows.append({"held_out": name, "setting": "one-curve", "coverage_with_ref_prior": covr,
                     "median_abs_log_error_with_ref_prior": errr, "scored": nr, "coverage_ref_prior_only": covro,
                     "median_abs_log_error_ref_prior_only": erro, "scored_ref_only": nro, "brier_with_ref_prior": brr,
                     "brier_ref_prior_only": brro})
        pooled.setdefault("ref", []).append((covr, nr))
        pooled.setdefault("ref_only", []).append((covro, nro))
        print(f"{name:<12} {nr:>5} {covr:>9.1%} {errr:>9.3f} {covro:>9.1%} {erro:>9.3f} {brr:>6.3f} {brro:>9.3f}")
    k_all, s_all = fit_kappa(items), fit_margin_scale(items)
    summary = {
        "coverage_lowo": pool(pooled["curve"]), "coverage_with_prior_lowo": pool(pooled["prior"]),
        "coverage_prior_only_lowo": pool(pooled["only"]),
        "coverage_with_ref_prior_lowo": pool(pooled.get("ref", [])),
        "coverage_ref_prior_only_lowo": pool(pooled.get("ref_only", [])),
        "kappa_all": k_all, "margin_scale_all": s_all, "forecasts": len(items),
    }
    by_trunc = {}
    for frac in TRUNCATIONS:
        sub = [i for i in items if i.truncation == frac]
        by_trunc[frac] = coverage(sub, k_all, s_all)[0]
    print(f"pooled held-out coverage: curve {summary['coverage_lowo']:.1%}, curve+prior "
          f"{summary['coverage_with_prior_lowo']:.1%}, prior alone {summary['coverage_prior_only_lowo']:.1%}; "
          f"one-curve: curve+ref {summary['coverage_with_ref_prior_lowo']:.1%}, ref alone "
          f"{summary['coverage_ref_prior_only_lowo']:.1%} (target 90 %)")
    print(f"constants fitted on all workloads: kappa = {k_all:.3f}, margin offset = {s_all[0]:.3f}, "
          f"margin scale = {s_all[1]:.3f}")
    print("coverage by truncation (all-workload constants): "
          + ", ".join(f"{int(f * 100)} %: {c:.1%}" for f, c in by_trunc.items()))
    print(f"({time.monotonic() - began:.0f} s)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "summary": summary, "coverage_by_truncation": by_trunc}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
