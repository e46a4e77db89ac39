"""How much of a running job's shift from the accuracy model to believe at other batches.

A job running at batch ``B₀`` learns how far its epochs to the target are from the
model there, ``δ = ln E_true(B₀) − ln E_M(B₀)``. ``cotune.solver.job_outlook`` carries a
share of it to every other batch ``B`` (:func:`cotune.solver.carry_for`: the tent that is
0 at the model's anchors and 1 at ``B₀``, times the part of the error that is not
run-to-run scatter). This checks that rule against the published curves: the library's
one-curve models (the reference curve and its gradient noise), the *true* error at each
measured ``B₀`` carried to every other measured batch, against two simpler rules —
carry nothing (``w = 0``) and carry everything (``w = 1``, the rule before 2026-12-01,
late)::

    python -m benchmarks.shift_carry

It prints, per workload and pooled over the distinct sets of curves (the ``-hetero``
traces reuse the T4 curves), the RMS and median |log error| left at the other batch by
each rule, and the least-squares multiplier of each rule's carried shift (1 when the rule
carries the right amount on average).
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

__all__ = ["carry_pairs", "summarise", "main"]

RULES = ("none", "whole", "tent")


def carry_pairs(workload: str) -> list[dict]:
    """One row per (target, running batch, other batch) where both true curves reach the
    target: the true log errors at both and each rule's carried share."""
    from benchmarks.policies import library_models
    from benchmarks.replay import curve_epochs_to_target
    from benchmarks.scenarios import scenarios, workloads
    from cotune.solver import carry_for

    rows = []
    for scn in scenarios(workloads(names=(workload,)), deadline_factors=(None,)):
        w = scn.workload
        models = library_models(scn, scn.evidence("one-curve"), (0,))
        batches = np.array(w.batches, float)
        pred = np.asarray(models.predict_epochs(batches, scn.target).epochs_if_reached, float)
        true = np.array([curve_epochs_to_target(w.curves[int(b)], scn.target, w.goal) for b in batches])
        with np.errstate(divide="ignore", invalid="ignore"):
            err = np.log(true) - np.log(pred)
        for i, b0 in enumerate(batches):
            if b0 == w.reference_batch or not math.isfinite(err[i]):
                continue
            tent = carry_for(models, global_batch=batches, running_batch=float(b0), target=scn.target)
            for j, b in enumerate(batches):
                if j == i or b == w.reference_batch or not math.isfinite(err[j]):
                    continue
                rows.append(dict(workload=w.name, target=scn.target_label, running=float(b0), batch=float(b),
                                 shift=float(err[i]), error=float(err[j]), none=0.0, whole=1.0, tent=float(tent[j])))
    return rows


def summarise(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Per rule: RMS and median |log error| left, and the least-squares multiplier."""
    e = np.array([r["error"] for r in rows])
    d = np.array([r["shift"] for r in rows])
    out = {}
    for rule in RULES:
        x = np.array([r[rule] for r in rows]) * d
        res = e - x
        out[rule] = dict(rms=float(np.sqrt(np.mean(res**2))), median_abs=float(np.median(np.abs(res))),
                         multiplier=float(np.sum(x * e) / np.sum(x * x)) if np.any(x) else math.nan)
    return out


def main(argv: list[str] | None = None) -> int:
    from benchmarks.scenarios import workloads

    ap = argparse.ArgumentParser(prog="python -m benchmarks.shift_carry", description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default=None, help="comma-separated trace names (default: every trace)")
    args = ap.parse_args(argv)
    names = tuple(args.workloads.split(",")) if args.workloads else None
    rows: list[dict] = []
    seen: set[tuple] = set()
    print(f"{'workload':18s} {'pairs':>5s}  " + "  ".join(f"{r + ' rms':>10s} {'|med|':>6s}" for r in RULES))
    pooled: list[dict] = []
    for w in workloads(names=names):
        rs = carry_pairs(w.name)
        rows += rs
        s = summarise(rs)
        print(f"{w.name:18s} {len(rs):5d}  " + "  ".join(f"{s[r]['rms']:10.3f} {s[r]['median_abs']:6.3f}" for r in RULES))
        # Traces that share their curves (the -hetero ones reuse the T4 runs) count once.
        key = tuple(np.round(np.asarray(w.curves[w.reference_batch].metric, float), 9).tolist())
        if key not in seen:
            seen.add(key)
            pooled += rs
    s = summarise(pooled)
    print(f"{'pooled (distinct)':18s} {len(pooled):5d}  " + "  ".join(f"{s[r]['rms']:10.3f} {s[r]['median_abs']:6.3f}" for r in RULES))
    print("least-squares multiplier of the carried shift: " + ", ".join(f"{r} {s[r]['multiplier']:.2f}" for r in RULES[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
