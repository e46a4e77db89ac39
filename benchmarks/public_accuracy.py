"""The accuracy model on public pooled runs: MLPerf Training ResNet-50 (v0.7–v3.1).

1,519 runs from many submitters at ~50 global batch sizes, learning-rate recipes
retuned per batch, every run stopping once it reaches 75.9 % top-1 — the data of the
"build for the general case" check. ``python -m benchmarks.public_accuracy`` reports:

* **in-sample**: measured batches whose runs reached the target but whose prediction
  is ∞ or unreachable (p_reach < ½) — must be none;
* **leave-one-batch-out**: interior batches predicted from the others; mean absolute
  error of epochs and the coverage of the 90 % interval;
* **beyond the largest measured batch**: fit on batches ≤ a cut (4096, 8192, 16384),
  predict the measured batches 1.6–8× beyond it; mean absolute error of cotune's
  epochs against a plain two-parameter least-squares fit of ``E(B) = E_min(1 + B/B_noise)``
  to the per-batch medians, and cotune's interval coverage.

Data: ``../shared/data/mlperf-training-resnet50`` (Apache-2.0; see its SOURCE.md).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from benchmarks.traces import data_root
from cotune.models import AccuracyModel
from cotune.models._accuracy import fit_noise_scale

__all__ = ["load_runs", "evaluate", "main"]

TARGET = 0.759


def load_runs(root: Path | None = None) -> dict[str, np.ndarray]:
    """Eval arrays (global batch, epoch, accuracy, seed = run number) of every run."""
    import pandas as pd

    base = data_root(root) / "mlperf-training-resnet50"
    runs = pd.read_csv(base / "mlperf_resnet50_runs.csv")
    evals = pd.read_csv(base / "mlperf_resnet50_evals.csv")
    runs = runs[runs.global_batch_size.notna()].reset_index(drop=True)
    runs["seed"] = np.arange(len(runs))
    df = evals.merge(runs[["run_id", "global_batch_size", "seed"]], on="run_id")
    df = df[df.epoch_num > 0]
    return {
        "global_batch": df.global_batch_size.to_numpy(float),
        "epoch": df.epoch_num.to_numpy(float),
        "metric": df.eval_accuracy.to_numpy(float),
        "seed": df.seed.to_numpy(int),
    }


def _fit(a: dict[str, np.ndarray], keep: np.ndarray) -> AccuracyModel:
    return AccuracyModel().fit(a["global_batch"][keep], a["epoch"][keep], a["metric"][keep], a["seed"][keep])


def _medians(model: AccuracyModel) -> tuple[np.ndarray, np.ndarray]:
    m = model.measured_epochs(TARGET)
    ok = np.isfinite(m["epochs"])
    return m["batches"][ok], m["epochs"][ok]


def evaluate(a: dict[str, np.ndarray], *, cuts: tuple[int, ...] = (4096, 8192, 16384)) -> dict:
    full = _fit(a, np.ones(a["epoch"].shape, bool))
    meas = full.measured_epochs(TARGET)
    reached_any = np.array(
        [np.any(a["metric"][a["global_batch"] == b] >= TARGET) for b in meas["batches"]]
    )
    pred_in = full.epochs_to_target(meas["batches"], TARGET)
    in_sample_inf = int(np.count_nonzero(reached_any & ~np.isfinite(pred_in.epochs)))
    truth_b, truth_e = _medians(full)
    truth = dict(zip(truth_b.tolist(), truth_e.tolist()))

    loo_err, loo_cover = [], []
    for b in truth_b[1:-1]:
        m = _fit(a, a["global_batch"] != b)
        p = m.epochs_to_target(np.array([b]), TARGET)
        e = float(p.epochs_if_reached[0])
        loo_err.append(abs(e / truth[b] - 1))
        loo_cover.append(bool(p.lower[0] <= truth[b] <= p.upper[0]))

    beyond = []
    for cut in cuts:
        keep = a["global_batch"] <= cut
        m = _fit(a, keep)
        tb, te = _medians(m)
        law = fit_noise_scale(tb, te, robust=False)
        far = truth_b[(truth_b >= 1.6 * tb.max()) & (truth_b <= 8 * tb.max())]
        if far.size == 0 or law is None:
            continue
        p = m.epochs_to_target(far, TARGET)
        ours = p.epochs_if_reached
        plain = np.exp(law[0]) * (1 + far / law[1])
        t = np.array([truth[b] for b in far])
        beyond.append(
            {
                "cut": cut,
                "n_batches": int(far.size),
                "cotune_mape": float(np.mean(np.abs(ours / t - 1))),
                "least_squares_mape": float(np.mean(np.abs(plain / t - 1))),
                "cotune_coverage_90": float(np.mean((p.lower <= t) & (t <= p.upper))),
                "cotune_p_reach_min": float(p.p_reach.min()),
            }
        )
    return {
        "n_runs": int(np.unique(a["seed"]).size),
        "n_batches": int(meas["batches"].size),
        "in_sample_unreachable": in_sample_inf,
        "outlier_batches": [int(b) for b in full.outlier_batches(TARGET)],
        "loo_mape": float(np.mean(loo_err)),
        "loo_coverage_90": float(np.mean(loo_cover)),
        "beyond": beyond,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.public_accuracy", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="the shared data folder (default: ../shared/data beside the repo)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    out = evaluate(load_runs(Path(args.data) if args.data else None))
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    print(f"MLPerf ResNet-50: {out['n_runs']} runs at {out['n_batches']} global batches, target {TARGET}")
    print(f"  in-sample: measured batches that reached the target but read unreachable: {out['in_sample_unreachable']}")
    print(f"  outlier batches set aside as anchors: {out['outlier_batches']}")
    print(f"  leave-one-batch-out: mean abs error {out['loo_mape']:.1%}, 90% interval coverage {out['loo_coverage_90']:.0%}")
    print("  beyond the largest measured batch (1.6–8×):")
    for r in out["beyond"]:
        print(
            f"    fit on B ≤ {r['cut']:>6d}: {r['n_batches']:2d} batches · cotune {r['cotune_mape']:.1%} vs "
            f"least squares {r['least_squares_mape']:.1%} · coverage {r['cotune_coverage_90']:.0%} · "
            f"min P(reach) {r['cotune_p_reach_min']:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
