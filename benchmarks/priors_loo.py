"""How much the replay's P(reach) owes to priors fitted on the replayed workloads themselves.

``PLATEAU_WALK_OPTIMA`` (``cotune/models/_accuracy.py``) holds one value per Pollux workload,
each fitted by ``benchmarks/accuracy_priors.py`` on that workload's reference curve scored on
its other batches — the one-curve setting's held-out batches, at the levels
``scenarios.targets_for`` also uses. P(reach) mixes the log-normal quantiles of all six
(``PLATEAU_WALK_NODES``), so a workload's replay is scored with its own value in the prior:
in-sample. This scores the one-curve P(reach) of every T4 workload's candidates (every
target, no deadline: P(reach) does not depend on it) against the replay's truth twice —
with the shipped nodes and with the nodes of the other five workloads' values (the
workload's own left out) — as Brier score and log-loss::

    python -m benchmarks.priors_loo          # six Pollux T4 workloads, a few seconds

Only the workload's own value is left out of the nodes; the κ priors, ``RUN_SCATTER`` and the error shapes were
fitted the same way and stay in here. ``python -m benchmarks --priors held-out`` is the
out-of-sample replay with every one of them refitted without the replayed workload
(:mod:`benchmarks.priors`).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

if TYPE_CHECKING:
    from benchmarks.traces import Workload

__all__ = ["ORDER", "scores", "loo_rows", "main"]

# The order of PLATEAU_WALK_OPTIMA: one value per Pollux workload (accuracy_priors.py).
ORDER = ("cifar10", "imagenet", "deepspeech2", "yolov3", "bert", "ncf")
_P_CLIP = 1e-6  # a P(reach) of exactly 0 or 1 that is wrong would make the log-loss infinite


def scores(*, p: "np.ndarray | list[float]", y: "np.ndarray | list[float]") -> tuple[float, float]:
    """(Brier score, log-loss) of probabilities ``p`` against outcomes ``y`` (1 reached, 0 not)."""
    p = np.clip(np.asarray(p, float), _P_CLIP, 1.0 - _P_CLIP)
    y = np.asarray(y, float)
    return float(np.mean((p - y) ** 2)), float(-np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p)))


def _p_reach_and_truth(workload: "Workload", nodes: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    from benchmarks.priors import SHIPPED, use_priors
    from benchmarks.scenarios import scenarios
    from cotune.models import fit_models

    ps, ys = [], []
    # fit_models takes no accuracy priors: the nodes are swapped in where the library reads
    # them, for these fits only (benchmarks.priors.use_priors restores them on the way out).
    with use_priors(dataclasses.replace(SHIPPED, plateau_walk_nodes=nodes)):
        for scn in scenarios([workload], deadline_factors=(None,)):
            acc = fit_models(scn.launcher("one-curve").profile(), n_bootstrap=0).accuracy
            batches = np.unique(scn.candidates.global_batch).astype(float)
            ps.append(np.asarray(acc.epochs_to_target(batches, scn.target).p_reach, float))
            epochs, _, _ = scn.oracle.evaluate(scn.target)
            ys.append(np.array([np.isfinite(epochs[scn.candidates.global_batch == b]).any() for b in batches], float))
    return np.concatenate(ps), np.concatenate(ys)


def loo_rows(*, models: Iterable[str] = ORDER) -> list[dict[str, Any]]:
    """One row per workload (and a pooled one): Brier and log-loss with the shipped nodes and
    with the workload's own value left out of the nodes."""
    from cotune.models._accuracy import PLATEAU_WALK_NODES, PLATEAU_WALK_OPTIMA, walk_prior_nodes
    from benchmarks.scenarios import workloads

    if len(PLATEAU_WALK_OPTIMA) != len(ORDER):
        raise SystemExit(f"PLATEAU_WALK_OPTIMA has {len(PLATEAU_WALK_OPTIMA)} values, this module knows {len(ORDER)} "
                         "workloads: update ORDER to accuracy_priors.py's order")
    rows, pooled = [], {"shipped": ([], []), "own_left_out": ([], [])}
    for w in workloads(names=tuple(f"{m}-t4" for m in models)):
        k = ORDER.index(w.model)
        row: dict[str, Any] = {"workload": w.name, "own_node": float(PLATEAU_WALK_OPTIMA[k])}
        rest = [n for i, n in enumerate(PLATEAU_WALK_OPTIMA) if i != k]
        for label, nodes in (("shipped", tuple(PLATEAU_WALK_NODES)), ("own_left_out", walk_prior_nodes(rest))):
            p, y = _p_reach_and_truth(w, nodes)
            pooled[label][0].append(p)
            pooled[label][1].append(y)
            row[f"brier_{label}"], row[f"log_loss_{label}"] = scores(p=p, y=y)
        row["n"] = int(p.size)
        rows.append(row)
    row = {"workload": "pooled", "own_node": float("nan")}
    for label, (ps, ys) in pooled.items():
        row[f"brier_{label}"], row[f"log_loss_{label}"] = scores(p=np.concatenate(ps), y=np.concatenate(ys))
    row["n"] = int(sum(p.size for p in pooled["shipped"][0]))
    rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.priors_loo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", choices=ORDER, default=list(ORDER), help="Pollux T4 workloads to score")
    args = ap.parse_args(argv)
    print(f"{'workload':15s} {'own τ':>9s} {'n':>5s}  Brier shipped / own left out   log-loss shipped / own left out")
    for r in loo_rows(models=args.models):
        print(f"{r['workload']:15s} {r['own_node']:9.4f} {r['n']:5d}  {r['brier_shipped']:.3f} / {r['brier_own_left_out']:.3f}"
              f"                  {r['log_loss_shipped']:.3f} / {r['log_loss_own_left_out']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
