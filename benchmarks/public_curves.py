"""Out-of-sample check of the learning-curve extrapolation on public curves it was not fitted on.

The curve forecaster's constants (``CURVE_KAPPA``, ``CURVE_MARGIN_OFFSET``,
``CURVE_MARGIN_SCALE`` in ``cotune/models/_curve.py``) were measured on the Pollux
OSDI'21 curves (``python -m benchmarks.curve_calibration``). This module scores the
*shipped* constants, unchanged, on the DAWNBench training submissions
(``../shared/data/dawnbench``: 31 CIFAR-10 and 27 ImageNet curves from many teams,
models, hardware and learning-rate schedules; see its SOURCE.md — no licence stated, so
the data are read in place for validation and never copied into this repository).

The protocol is curve_calibration's: every curve is truncated at 10–90 % of its run;
from the truncated best-so-far curve the forecaster predicts the epochs to each of a
ladder of targets between the curve's first and final best (and two above its final
best, never reached); measured are the coverage of the 90 % interval over the targets
reached after the truncation, the median |log error| of the median, and the Brier score
of the reach probability against the run's end as horizon (with the in-sample base rate
as the naive reference). DAWNBench's own targets (94 % top-1 on CIFAR-10, 93 % top-5 on
ImageNet) are scored as well.

The reach probability is scored three ways: the forecaster's own ``p_reach``; the
running job's chance of reaching the target by its schedule's end given it has not yet,
as the closed loop computes it (:func:`cotune.solver.remaining_work` with the run's last
epoch as ``max_epochs``; its ``p_reach`` is "within the run", so the epochs given
reached are truncated at the end); and, for comparison, the rule that function used
before 2026-12-02, which multiplied by ``P(E ≤ end)`` and so counted the end twice.
``--pollux`` scores the Pollux curves (the forecaster's calibration set, with the
one-curve prior: the reference batch's curve and its gradient noise) the same way.

These curves are schedule-driven (one-cycle, piecewise-linear, step decays that end at
a fixed epoch), unlike most Pollux curves: a saturating family fitted to the first part
of a one-cycle run cannot see the rise that the learning-rate decay produces only at the
end. So this is a hard, honest test of the forecaster, not a tuning set.

    python -m benchmarks.public_curves              # ~20 s on 2 cores
    python -m benchmarks.public_curves --pollux     # also the Pollux curves (~50 s)
    python -m benchmarks.public_curves --json out.json
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.traces import data_root
from benchmarks.curve_calibration import INTERVAL, LEVELS, Item, _crossing, truncated_fits
from cotune.models._curve import CURVE_KAPPA, CURVE_MARGIN_OFFSET, CURVE_MARGIN_SCALE, best_so_far
from cotune.models._normal import norm_cdf

__all__ = ["DATASETS", "TRUNCATIONS", "PublicCurve", "load_dawnbench", "collect", "collect_pollux", "by_horizon",
           "score", "main"]

# (folder, metric column, DAWNBench's target in %)
DATASETS = (("CIFAR10", "top1Accuracy", 94.0), ("ImageNet", "top5Accuracy", 93.0))
TARGET_LEVEL = "dawnbench"  # the label of the competition target among the ladder's levels
# curve_calibration's truncations (10–50 %) and later ones: near the schedule's end is where
# a controller decides whether a job will make it.
TRUNCATIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9)


@dataclass(frozen=True)
class PublicCurve:
    dataset: str
    name: str
    epochs: np.ndarray
    metric: np.ndarray  # percent, higher is better
    target: float  # the competition target, percent


def load_dawnbench(root: Path | str | None = None) -> tuple[list[PublicCurve], list[str]]:
    """Every DAWNBench training curve with at least three finite evaluations under
    ``root/dawnbench`` (default: the shared data folder), and one line per file skipped (and why)."""
    base = (Path(root) if root is not None else data_root()) / "dawnbench"
    curves: list[PublicCurve] = []
    skipped: list[str] = []
    for folder, column, target in DATASETS:
        for path in sorted((base / folder / "train").glob("*.tsv")):
            with path.open(encoding="utf-8-sig", newline="") as fh:
                rows = list(csv.DictReader(fh, delimiter="\t"))
            e, m = [], []
            for r in rows:
                try:
                    ep, v = float(r["epoch"]), float(r[column])
                except (KeyError, TypeError, ValueError):
                    continue
                if math.isfinite(ep) and math.isfinite(v):
                    e.append(ep)
                    m.append(v)
            if len(e) < 3:
                skipped.append(f"{folder}/{path.name}: fewer than 3 evaluations of {column}")
                continue
            order = np.argsort(e, kind="stable")
            curves.append(PublicCurve(folder, path.stem, np.asarray(e)[order], np.asarray(m)[order], target))
    return curves, skipped


def collect(curves: list[PublicCurve], truncations: tuple[float, ...] = TRUNCATIONS) -> list[tuple[Item, str, float]]:
    """(item, level label, the run's last epoch) for every (curve, truncation, target) with
    something left to forecast."""
    out: list[tuple[Item, str, float]] = []
    for c in curves:
        e_full, best_full = best_so_far(c.epochs, c.metric, goal="max")
        if e_full.size < 3 or not best_full[-1] > best_full[0]:
            continue
        first, final = float(best_full[0]), float(best_full[-1])
        targets = [(f"{lv:g}", first + lv * (final - first)) for lv in LEVELS]
        if c.target > first:
            targets.append((TARGET_LEVEL, c.target))
        for frac, e, best, fits, lo, rise, epoch_fit in truncated_fits(
                c.epochs, c.metric, "max", float(e_full[-1]), truncations):
            for label, t in targets:
                if best[-1] >= t:
                    continue  # already reached at the truncation: nothing to forecast
                it = Item(c.dataset, 0, frac, math.nan, "max", t, e, best, fits, lo, rise, epoch_fit,
                          _crossing(e_full, best_full, t), None)
                out.append((it, label, float(e_full[-1])))
    return out


def collect_pollux(truncations: tuple[float, ...] = TRUNCATIONS) -> list[tuple[Item, str, float]]:
    """curve_calibration's Pollux items at ``truncations``, each with the one-curve prior
    (None at the reference batch itself), and the run's last epoch."""
    from benchmarks.curve_calibration import collect as collect_calibration
    from benchmarks.traces import load_pollux

    items = collect_calibration(with_prior=True, truncations=truncations)
    ends: dict[tuple[str, int], float] = {}
    for name in dict.fromkeys(it.workload for it in items):
        w = load_pollux(name)
        for b, c in w.curves.items():
            ends[(name, b)] = float(best_so_far(c.epochs, c.metric, goal=w.goal)[0][-1])
    return [(it, f"{it.level:g}", ends[(it.workload, it.batch)]) for it in items if it.prior_ref is not None]


def by_horizon(forecast, *, seen: float, horizon: float) -> float:
    """What a running job's controller believes: the chance of reaching the target by the
    schedule's last epoch ``horizon`` given it is not reached by ``seen``
    (:func:`cotune.solver.remaining_work`, time measured in epochs, no deadline)."""
    from cotune.solver import remaining_work

    rw = remaining_work(
        epochs=np.array([forecast.epochs_if_reached]), log_sigma=np.array([forecast.log_sigma]),
        p_reach=np.array([forecast.p_reach]), done_epochs=np.array([seen]), epoch_time_s=np.array([1.0]),
        restart_s=np.array([0.0]), rate_per_s=np.array([1.0]), remaining_s=None, max_epochs=np.array([horizon]),
    )
    return float(rw.p_success[0])


def _multiplied(forecast, *, seen: float, horizon: float) -> float:
    """The rule before 2026-12-02, for comparison only: ``p`` updated on ``E > seen`` with the
    untruncated log-normal, times ``P(seen < E ≤ horizon | E > seen)``."""
    mu, sig = math.log(forecast.epochs_if_reached), max(forecast.log_sigma, 1e-6)
    surv = max(1.0 - float(norm_cdf((math.log(seen) - mu) / sig)), 1e-300) if seen > 0 else 1.0
    p = forecast.p_reach
    p_cond = p * surv / max(p * surv + 1.0 - p, 1e-300)
    f_end = float(norm_cdf((math.log(horizon) - mu) / sig))
    return p_cond * min(max((f_end - (1.0 - surv)) / surv, 0.0), 1.0)


RULES = {
    "forecast": lambda f, seen, end: float(f.p_reach),
    "by_end": lambda f, seen, end: by_horizon(f, seen=seen, horizon=end),
    "by_end_multiplied": lambda f, seen, end: _multiplied(f, seen=seen, horizon=end),
}


def _brier(p: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((p - y) ** 2)) if p.size else math.nan


def _reliability(p: np.ndarray, y: np.ndarray) -> list[dict]:
    bins = []
    for lo, hi in ((0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.0001)):
        k = (p >= lo) & (p < hi)
        if k.any():
            bins.append({"p_lo": lo, "p_hi": min(hi, 1.0), "n": int(k.sum()), "mean_p": float(p[k].mean()),
                         "reached": float(y[k].mean())})
    return bins


def score(group: list[tuple[Item, str, float]], *, prior: bool | str = False, kappa: float = CURVE_KAPPA,
          margin: tuple[float, float] = (CURVE_MARGIN_OFFSET, CURVE_MARGIN_SCALE)) -> dict:
    """Coverage of the 90 % interval and median |log error| over the targets reached after the
    truncation; per reach rule (:data:`RULES`) the Brier score and reliability of the chance
    of reaching the target within the run, with the base rate's Brier beside them.
    ``prior``: as :meth:`benchmarks.curve_calibration.Item.forecast` (False: curve alone)."""
    hits, errs, no_forecast = [], [], 0
    probs: dict[str, list[float]] = {k: [] for k in RULES}
    y = []
    for it, _, end in group:
        f = it.forecast(kappa, margin, prior)
        finite = math.isfinite(f.epochs_if_reached) and f.epochs_if_reached > 0
        for k, rule in RULES.items():
            # No finite forecast: every rule falls back on the forecaster's own chance.
            probs[k].append(rule(f, it.seen, end) if finite else float(f.p_reach))
        y.append(float(it.reached))
        if not it.reached or it.true_epochs <= it.seen:
            continue
        if not finite:
            no_forecast += 1
            continue
        hits.append(f.lower <= it.true_epochs <= f.upper)
        errs.append(abs(math.log(it.true_epochs / f.epochs_if_reached)))
    ya = np.asarray(y)
    base = float(ya.mean()) if ya.size else math.nan
    return {
        "scored": len(hits), "coverage_90": float(np.mean(hits)) if hits else math.nan,
        "median_abs_log_error": float(np.median(errs)) if errs else math.nan, "no_forecast": no_forecast,
        "forecasts": int(ya.size), "brier_base_rate": _brier(np.full(ya.size, base), ya),
        "brier": {k: _brier(np.asarray(v), ya) for k, v in probs.items()},
        "reliability": {k: _reliability(np.asarray(v), ya) for k, v in probs.items()},
    }


def _groups(pairs: list[tuple[Item, str, float]], by_dataset: bool) -> dict[str, list[tuple[Item, str, float]]]:
    groups = {"all": pairs}
    if by_dataset:
        for folder, _, _ in DATASETS:
            groups[folder] = [x for x in pairs if x[0].workload == folder]
        groups["dawnbench target"] = [x for x in pairs if x[1] == TARGET_LEVEL]
    for frac in TRUNCATIONS:
        groups[f"truncated at {int(frac * 100)} %"] = [x for x in pairs if x[0].truncation == frac]
    return groups


def _report(title: str, groups: dict[str, list], prior: bool | str) -> dict:
    print(title)
    print(f"{'group':<20} {'n':>5} {'cov90':>6} {'|log err|':>9} {'no fc':>5} {'forecasts':>9} "
          f"{'brier: base':>11} {'forecast':>8} {'by end':>6} {'(old)':>6}")
    rows = {}
    for name, grp in groups.items():
        r = score(grp, prior=prior)
        rows[name] = r
        b = r["brier"]
        print(f"{name:<20} {r['scored']:>5} {r['coverage_90']:>6.1%} {r['median_abs_log_error']:>9.3f} "
              f"{r['no_forecast']:>5} {r['forecasts']:>9} {r['brier_base_rate']:>11.3f} {b['forecast']:>8.3f} "
              f"{b['by_end']:>6.3f} {b['by_end_multiplied']:>6.3f}")
    for key in ("forecast", "by_end"):
        print(f"  reliability ({key}), all: " + ", ".join(
            f"p {b['mean_p']:.2f} → {b['reached']:.2f} (n={b['n']})" for b in rows["all"]["reliability"][key]))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", default=None, help="also write the numbers as JSON here")
    parser.add_argument("--data", default=None, help="the shared data folder (default: ../shared/data)")
    parser.add_argument("--pollux", action="store_true", help="also score the Pollux curves with the one-curve prior")
    args = parser.parse_args(argv)
    began = time.monotonic()
    curves, skipped = load_dawnbench(args.data)
    pairs = collect(curves)
    out: dict = {"curves": len(curves), "skipped": skipped}
    out["dawnbench"] = _report(
        f"{len(curves)} DAWNBench curves ({len(skipped)} skipped), {len(pairs)} forecasts from the curve alone; shipped "
        f"constants kappa = {CURVE_KAPPA}, margin = ({CURVE_MARGIN_OFFSET}, {CURVE_MARGIN_SCALE}); "
        f"{INTERVAL:.0%} intervals; Brier of reaching the target within the run", _groups(pairs, True), False)
    for s in skipped:
        print(f"skipped: {s}")
    if args.pollux:
        pp = collect_pollux()
        out["pollux_one_curve"] = _report(
            f"Pollux curves with the one-curve prior (the forecaster's calibration set): {len(pp)} forecasts",
            _groups(pp, False), "ref")
    print(f"({time.monotonic() - began:.0f} s)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
