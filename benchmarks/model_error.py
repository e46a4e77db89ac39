"""Prediction error of the models against measurements they did not see.

Step time (every measured configuration of a workload, all placements):

* ``inside`` — 5-fold cross-validation over the configurations with at most ``W``
  workers (interpolation);
* ``2x`` / ``4x`` — fit on every configuration with at most ``W`` workers, predict
  those with exactly ``2W`` / ``4W`` workers (extrapolation in workers).

``W`` is 4 and 16 on T4 (1–64 measured) and 2 on K80/P100/V100 (1–8 measured).
Error is the mean absolute percentage error ``mean |pred / measured − 1|``.

Epochs to target (learning curves): leave one measured global batch out, fit on the
rest, predict its epochs to each scenario target. Interior batches test
interpolation; the largest batch tests extrapolation (critical-batch law for cotune,
statistical efficiency for Pollux; the isotonic-only model cannot extrapolate).
"""

from __future__ import annotations

import math

import numpy as np

from benchmarks.peers import IsotonicAccuracy, IsotonicStepTime, PolluxAccuracy, PolluxStepTime
from benchmarks.replay import curve_epochs_to_target
from benchmarks.scenarios import targets_for
from benchmarks.traces import Workload
from cotune.models import AccuracyModel, StepTimeModel

__all__ = ["TIME_MODELS", "time_model_errors", "accuracy_errors"]

TIME_MODELS = ("cotune", "isotonic", "pollux")


def _time_model(kind: str):
    if kind == "cotune":
        return StepTimeModel(n_bootstrap=0)
    if kind == "isotonic":
        return IsotonicStepTime()
    if kind == "pollux":
        return PolluxStepTime()
    raise ValueError(kind)


def _arrays(workload: Workload, gpu: str) -> dict[str, np.ndarray]:
    keys = [k for k in workload.steps if k[0] == gpu]
    return {
        "workers": np.array([k[1] for k in keys], float),
        "hosts": np.array([k[2] for k in keys], float),
        "local_batch": np.array([k[3] for k in keys], float),
        "step_time_s": np.array([workload.steps[k] for k in keys], float),
    }


def _fit_predict(kind: str, a: dict[str, np.ndarray], train: np.ndarray, test: np.ndarray) -> np.ndarray:
    m = _time_model(kind).fit(a["workers"][train], a["hosts"][train], a["local_batch"][train], a["step_time_s"][train])
    return m.predict(a["workers"][test], a["hosts"][test], a["local_batch"][test]).step_time_s


def time_model_errors(workload: Workload, *, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """MAPE rows (workload, gpu, W, model, range, n, mape) and the predicted/measured pairs."""
    splits = (4, 16) if workload.family == "pollux-t4" else (2,)
    rows, pairs = [], []
    rng = np.random.default_rng(seed)
    for gpu in workload.gpus:
        a = _arrays(workload, gpu)
        n = a["workers"]
        for W in splits:
            inside = np.flatnonzero(n <= W)
            folds = rng.permutation(inside.size) % 5
            for kind in TIME_MODELS:
                checks: dict[str, tuple[np.ndarray, np.ndarray]] = {}
                preds, meas = [], []
                for f in range(5):
                    test = inside[folds == f]
                    train = inside[folds != f]
                    if test.size and train.size:
                        preds.append(_fit_predict(kind, a, train, test))
                        meas.append(a["step_time_s"][test])
                checks["inside"] = (np.concatenate(preds), np.concatenate(meas))
                for factor in (2, 4):
                    test = np.flatnonzero(n == factor * W)
                    if test.size:
                        checks[f"{factor}x"] = (_fit_predict(kind, a, inside, test), a["step_time_s"][test])
                for label, (p, y) in checks.items():
                    err = np.abs(p / y - 1)
                    rows.append(
                        {
                            "workload": workload.name,
                            "gpu": gpu,
                            "fit_max_workers": W,
                            "model": kind,
                            "range": label,
                            "n": int(y.size),
                            "mape": float(np.mean(err)),
                            "p90_ape": float(np.quantile(err, 0.9)),
                        }
                    )
                    pairs.extend(
                        {"workload": workload.name, "gpu": gpu, "model": kind, "fit_max_workers": W, "range": label, "predicted_s": float(pi), "measured_s": float(yi)}
                        for pi, yi in zip(p, y)
                    )
    return rows, pairs


def accuracy_errors(workload: Workload) -> list[dict]:
    """Held-out-batch errors of epochs to target, per model, target and batch."""
    rows = []
    batches = workload.batches
    targets = targets_for(workload)
    ref = workload.curves[workload.reference_batch]
    for held in batches[1:]:
        others = [b for b in batches if b != held]
        g, e, m, gs, gv = [], [], [], [], []
        for b in others:
            c = workload.curves[b]
            g.append(np.full(c.epochs.shape, b, float))
            e.append(c.epochs)
            m.append(c.metric)
        g, e, m = np.concatenate(g), np.concatenate(e), np.concatenate(m)
        # Gradient noise scale at the reference batch (the profile's NoiseRecord equivalent).
        b_noise = workload.noise_scale()
        models = {
            "cotune": AccuracyModel(goal=workload.goal, b_noise=b_noise, noise_trace=workload.noise_rows()).fit(g, e, m),
            "isotonic": IsotonicAccuracy(goal=workload.goal).fit(g, e, m),
            "pollux": PolluxAccuracy(reference=ref, goal=workload.goal),
        }
        kind = "extrapolated" if held == batches[-1] else "interpolated"
        for label, target in targets.items():
            truth = curve_epochs_to_target(workload.curves[held], target, workload.goal)
            for name, model in models.items():
                pred = float(model.epochs_to_target(np.array([float(held)]), target).epochs[0])
                rows.append(
                    {
                        "model_family": workload.model,
                        "model": name,
                        "held_out_batch": held,
                        "range": kind,
                        "target_label": label,
                        "target": target,
                        "measured_epochs": truth,
                        "predicted_epochs": pred,
                        "ape": abs(pred / truth - 1) if math.isfinite(truth) and math.isfinite(pred) else None,
                        "outcome": "both_reach"
                        if math.isfinite(truth) and math.isfinite(pred)
                        else ("false_reach" if math.isfinite(pred) else ("false_miss" if math.isfinite(truth) else "both_miss")),
                    }
                )
    return rows


def placement_noise(root=None) -> dict:
    """How far single placements sit from the median of their (workers, hosts, local batch).

    The traces hold several placements per configuration (``13``, ``31``, ``22`` are
    all 4 workers on 2 hosts); their spread is measurement and placement noise that a
    model of (workers, hosts, batch) cannot explain — a floor under any MAPE here.
    """
    from benchmarks.traces import POLLUX_MODELS, _read_csv, data_root

    errs = []
    for model in POLLUX_MODELS:
        p = _read_csv(data_root(root) / "pollux-osdi21" / "traces" / model / "placements.csv")
        groups: dict[tuple[int, int, int], list[float]] = {}
        for placement, b, t in zip(p["placement"], p["local_bsz"], p["step_time"]):
            digits = [int(d) for d in str(placement)]
            groups.setdefault((sum(digits), len(digits), int(b)), []).append(float(t))
        for values in groups.values():
            if len(values) > 1:
                v = np.array(values)
                errs.extend(np.abs(v / np.median(v) - 1))
    e = np.array(errs)
    return {"n": int(e.size), "median_ape": float(np.median(e)), "mean_ape": float(np.mean(e))}
