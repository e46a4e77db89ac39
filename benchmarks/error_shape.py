"""The shape of the models' standardised errors, measured: ``STEP_ERROR_SHAPE`` and
``EPOCHS_ERROR_SHAPE`` of :mod:`cotune.models._shape`.

``python -m benchmarks.error_shape`` (about 1 min on 2 cores):

* **step time** — the step-time model fitted as users probe (≤ 2 and ≤ 4 workers, one
  host) on the eleven public clusters of :mod:`benchmarks.public_step_time`, predicting
  every other measured configuration; ``u = ln(truth / median) / σ`` with ``σ`` the
  model's own (its 90 % interval is ``±1.645 σ``);
* **epochs to target** — the accuracy model fitted on the reference curve alone of each
  Pollux workload (with the gradient noise scale that run logged), predicting every other
  batch at targets 50–100 % of the way from the first evaluation to the weakest batch's
  best (the samples of :mod:`benchmarks.accuracy_priors`), ``u`` likewise.

Each set is fitted with :func:`cotune.models._shape.fit_error_shape` (two components,
each cluster or workload weighing one; rescaled so that ±1.645 σ still covers 90 %), and
scored with each cluster or workload left out: the mean log-likelihood per error of the
mixture fitted on the others against the plain normal (``N(0, 1)``: what the σ alone
said before).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from cotune.models._shape import EPOCHS_ERROR_SHAPE, NORMAL_SHAPE, STEP_ERROR_SHAPE, ErrorShape, fit_error_shape

__all__ = ["epochs_errors", "step_errors", "step_error_rows", "standardised_step_errors", "shape_of", "log_likelihood",
           "left_out", "main"]

_Z90 = 1.6448536269514722


def step_error_rows(root: Path, **overrides: Any) -> list[dict]:
    """Every public trace fitted on each probe set and every other row predicted
    (:func:`benchmarks.public_step_time.evaluate`; ``overrides``, e.g. ``kappa_step=``, replace
    the step-time model's priors in every fit)."""
    from benchmarks.public_step_time import evaluate, load_all

    traces, _ = load_all(root)
    rows, _ = evaluate(traces, **overrides)
    return rows


def standardised_step_errors(rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """``u = ln(truth / median) / σ`` of the prediction rows with an interval, and their cluster."""
    u = np.array([r["log_error"] / (r["width"] / 2.0 / _Z90) for r in rows if r["width"] > 0])
    group = np.array([r["dataset"] for r in rows if r["width"] > 0])
    return u, group


def step_errors(root: Path, **overrides: Any) -> tuple[np.ndarray, np.ndarray]:
    """Standardised step-time errors and their cluster, every public trace and probe set."""
    return standardised_step_errors(step_error_rows(root, **overrides))


def epochs_errors(*, models: Iterable[str] | None = None, **priors: Any) -> tuple[np.ndarray, np.ndarray]:
    """Standardised epochs-to-target errors from each Pollux workload's reference curve
    (``models``: these Pollux models, default all six; ``priors``: accuracy-model keywords
    such as ``kappa_beyond=`` in place of the library's defaults)."""
    from benchmarks.accuracy_priors import _reference_noise_scale, level_scores
    from benchmarks.traces import POLLUX_MODELS, load_pollux
    from cotune.models._accuracy import AccuracyModel, crossing_epoch

    us, groups = [], []
    for name in POLLUX_MODELS if models is None else models:
        w = load_pollux(name)
        curves, levels = level_scores(w)
        ref = w.reference_batch
        c = w.curves[ref]
        model = AccuracyModel(goal=w.goal, b_noise=_reference_noise_scale(w), noise_trace=w.noise_rows(), **priors).fit(
            np.full(len(c.epochs), float(ref)), c.epochs, c.metric
        )
        for level in levels:
            target = float(w.score(level))
            for b in w.batches:
                if b == ref:
                    continue
                truth = crossing_epoch(*curves[b], float(w.score(target)))
                if not math.isfinite(truth):
                    continue
                p = model.epochs_to_target(np.array([float(b)]), target)
                if math.isfinite(p.epochs_if_reached[0]) and p.log_sigma[0] > 0:
                    us.append(math.log(truth / p.epochs_if_reached[0]) / float(p.log_sigma[0]))
                    groups.append(name)
    return np.array(us), np.array(groups)


def shape_of(u: np.ndarray, group: np.ndarray) -> ErrorShape:
    """The error shape fitted to ``u``, each group (cluster or workload) weighing one."""
    return fit_error_shape(u, weights=_group_weights(group))


def _group_weights(group: np.ndarray) -> np.ndarray:
    names, counts = np.unique(group, return_counts=True)
    per = dict(zip(names, counts))
    return np.array([1.0 / per[g] for g in group])


def log_likelihood(u: np.ndarray, shape: ErrorShape) -> float:
    """Mean log density of ``u`` under ``shape``."""
    u = np.asarray(u, float)[:, None]
    w, s = np.array(shape.weights), np.array(shape.scales)
    dens = (w * np.exp(-0.5 * (u / s) ** 2) / (s * math.sqrt(2 * math.pi))).sum(axis=1)
    return float(np.mean(np.log(np.maximum(dens, 1e-300))))


def left_out(u: np.ndarray, group: np.ndarray) -> dict[str, dict[str, float]]:
    """Per group: log-likelihood of its errors under the shape fitted on the others, and under N(0, 1)."""
    out = {}
    for g in np.unique(group):
        rest = group != g
        shape = shape_of(u[rest], group[rest])
        out[str(g)] = {"n": int(np.sum(~rest)), "mixture": log_likelihood(u[~rest], shape),
                       "normal": log_likelihood(u[~rest], NORMAL_SHAPE)}
    return out


def _summary(name: str, u: np.ndarray, group: np.ndarray, shipped: ErrorShape) -> dict:
    shape = shape_of(u, group)
    loo = left_out(u, group)
    a = np.abs(u)
    return {
        "errors": int(u.size),
        "groups": int(np.unique(group).size),
        "abs_u_quantiles": {str(q): float(np.quantile(a, q)) for q in (0.25, 0.5, 0.75, 0.9, 0.95, 0.99)},
        "fitted": {"weights": shape.weights, "scales": shape.scales},
        "shipped": {"weights": shipped.weights, "scales": shipped.scales},
        "left_out": loo,
        "left_out_mean": {"mixture": float(np.mean([v["mixture"] for v in loo.values()])),
                          "normal": float(np.mean([v["normal"] for v in loo.values()]))},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.error_shape", description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=None, help="the shared data folder (default: ../shared/data or $COTUNE_SHARED_DATA)")
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args(argv)
    from benchmarks.traces import data_root

    root = data_root(args.data)
    out = {}
    for name, (u, group), shipped in (("step", step_errors(root), STEP_ERROR_SHAPE), ("epochs", epochs_errors(), EPOCHS_ERROR_SHAPE)):
        out[name] = _summary(name, u, group, shipped)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for name, r in out.items():
        q = r["abs_u_quantiles"]
        print(f"{name}: {r['errors']} errors in {r['groups']} groups; |u| quantiles 25/50/75/90/95/99 %: "
              + " / ".join(f"{v:.2f}" for v in q.values()) + "  (normal 0.32 / 0.67 / 1.15 / 1.64 / 1.96 / 2.58)")
        fw, fs = r["fitted"]["weights"], r["fitted"]["scales"]
        print(f"  fitted shape: weights {tuple(round(v, 3) for v in fw)}, scales {tuple(round(v, 3) for v in fs)}"
              f"  (shipped {r['shipped']['weights']}, {r['shipped']['scales']})")
        for g, v in r["left_out"].items():
            print(f"  left out {g:<22} n={v['n']:>6}  log-lik mixture {v['mixture']:7.3f}  normal {v['normal']:7.3f}")
        m = r["left_out_mean"]
        print(f"  mean over groups: mixture {m['mixture']:.3f}, normal {m['normal']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
