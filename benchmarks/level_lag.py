"""How much a job's lag on an early level says about its lag on the target.

A job whose metric has not moved at all (a WER stuck at 100, a warm-up) gives its curve
forecaster nothing to fit, but it does say something: it has not reached the next level
by the epochs it has run, where the accuracy model expected it to. The closed loop could
read it as censored evidence on one latent pace, in the share ``ρ`` the early level's error
has in the target's: given ``ln E_ℓ > ln e`` (``α = (ln e − ln Ê_ℓ)/σ_ℓ``) the target's
log epochs move up by ``ρ·σ·λ(α)``, ``λ`` the inverse Mills ratio. This measures ``ρ``
on the published curves, as the planner meets them in the ``one-curve``
setting: the library's accuracy model fitted on the reference curve predicts, at every
held-out measured batch whose curve reaches the target, the epochs to the early level
``ℓ = m₀ + step·(t − m₀)`` (``m₀`` that batch's first evaluation, ``t`` the target,
``step`` a fraction) and to the target; the standardised errors
``z = (ln E_true − ln Ê)/σ̂`` at the two are correlated across (workload, target, batch)::

    python -m benchmarks.level_lag
    python -m benchmarks.level_lag --steps 0.05,0.1,0.2 --workloads deepspeech2-t4,cifar10-t4

It prints the pooled correlation at each step, the leave-one-workload-out range (each
workload dropped in turn) and the rows' count; a step whose correlation is unstable
across workloads is not one to rely on.

Measured at b903e04 (``python -m benchmarks.level_lag``, 4 s): pooled ``ρ`` 0.17 at step
0.05 and 0.1, 0.22 at 0.2 (113 rows, 8 workloads; leaving one workload out 0.11–0.30);
deepspeech2, the one trace whose WER sits at 100 for its first epochs, −0.29 on its own.
Read at that strength, the closed loop's two deepspeech2 deadline misses (a job at batch
640 flat for 20 epochs) stay misses; read at ``ρ = 0.5`` both are rescued and nothing
else changes (closed-loop misses 6.9 % -> 4.2 %), but 0.5 is not what the curves say,
so the closed loop does not read a flat head beyond its truncation at the target
(benchmarks/README.md § Closed loop).
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

__all__ = ["lag_rows", "correlation", "main"]


def lag_rows(workload: str, steps: tuple[float, ...]) -> list[dict]:
    """One row per (target, held-out batch reaching it, step): the standardised errors at
    the early level and at the target."""
    from benchmarks.policies import library_models, policy_mask, seed_design
    from benchmarks.replay import curve_epochs_to_target
    from benchmarks.scenarios import scenarios, workloads

    rows = []
    seen: set[float] = set()
    for scn in scenarios(workloads(names=(workload,))):
        w = scn.workload
        if scn.target in seen:
            continue
        seen.add(scn.target)
        ev = scn.evidence("one-curve")
        seed = tuple(seed_design(scn.candidates, policy_mask(scn, "all"), per_gpu=4)[:4])
        models = library_models(scn, ev, seed)
        for b in ev.held_out:
            curve = w.curves[int(b)]
            true_t = curve_epochs_to_target(curve, scn.target, w.goal)
            finite = np.isfinite(curve.metric)
            if not (math.isfinite(true_t) and finite.any()):
                continue
            m0 = float(curve.metric[finite][0])
            pt = models.predict_epochs(np.array([float(b)]), scn.target)
            mu_t, s_t = float(pt.epochs_if_reached[0]), float(pt.log_sigma[0])
            for step in steps:
                level = m0 + step * (scn.target - m0)
                true_l = curve_epochs_to_target(curve, level, w.goal)
                pl = models.predict_epochs(np.array([float(b)]), level)
                mu_l, s_l = float(pl.epochs_if_reached[0]), float(pl.log_sigma[0])
                if not all(math.isfinite(v) and v > 0 for v in (true_l, mu_l, s_l, mu_t, s_t)):
                    continue
                rows.append(dict(workload=w.name, target=scn.target_label, global_batch=float(b), step=step,
                                 z_level=(math.log(true_l) - math.log(mu_l)) / s_l,
                                 z_target=(math.log(true_t) - math.log(mu_t)) / s_t))
    return rows


def correlation(rows: list[dict]) -> float:
    """Pearson correlation of the two standardised errors (NaN with fewer than 3 rows)."""
    if len(rows) < 3:
        return math.nan
    a = np.array([r["z_level"] for r in rows])
    b = np.array([r["z_target"] for r in rows])
    if a.std() == 0 or b.std() == 0:
        return math.nan
    return float(np.corrcoef(a, b)[0, 1])


def main(argv: list[str] | None = None) -> int:
    from benchmarks._registry import TRACES, load

    ap = argparse.ArgumentParser(prog="python -m benchmarks.level_lag", description=__doc__.split("\n")[0])
    ap.add_argument("--steps", default="0.05,0.1,0.2",
                    help="comma-separated fractions of the way from the first evaluation to the target")
    ap.add_argument("--workloads", help="comma-separated workloads (default: every trace)")
    args = ap.parse_args(argv)
    load()
    names = args.workloads.split(",") if args.workloads else list(TRACES)
    unknown = [n for n in names if n not in TRACES]
    if unknown:
        print(f"error: unknown workload(s) {', '.join(unknown)}; choose from {', '.join(TRACES)}", file=sys.stderr)
        return 2
    try:
        steps = tuple(float(s) for s in args.steps.split(",") if s)
    except ValueError:
        print(f"error: --steps must be comma-separated numbers in (0, 1), got {args.steps!r}", file=sys.stderr)
        return 2
    if not steps or not all(0.0 < s < 1.0 for s in steps):
        print(f"error: --steps must be comma-separated numbers in (0, 1), got {args.steps!r}", file=sys.stderr)
        return 2
    rows = [r for n in names for r in lag_rows(n, steps)]
    for step in steps:
        rs = [r for r in rows if r["step"] == step]
        pooled = correlation(rs)
        held = [correlation([r for r in rs if r["workload"] != n]) for n in sorted({r["workload"] for r in rs})]
        held = [h for h in held if math.isfinite(h)]
        spread = f"{min(held):.2f} .. {max(held):.2f}" if held else "n/a"
        print(f"step {step:.2f}: {len(rs)} rows from {len({r['workload'] for r in rs})} workloads, correlation of "
              f"the early level's and the target's standardised errors {pooled:.2f} (leave one workload out: {spread})")
        for n in sorted({r["workload"] for r in rs}):
            own = [r for r in rs if r["workload"] == n]
            print(f"    {n:18s} n={len(own):3d}  correlation {correlation(own):5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
