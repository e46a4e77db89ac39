"""How far the accuracy model is from monotone in the target: a harder target must never
take fewer epochs, nor a candidate's chance of success rise.

Epochs-to-target is non-decreasing in the target in truth (a run's best-so-far curve
crosses a higher level later). The model's median is not, because each target is fitted
from the batches that reach it: a batch flagged off the law at one target and not at the
next, or one that stops reaching a harder target, changes the anchors and the law fitted
through them. This prints, for each bundled example profile, over a fine ladder of
targets (300 levels from half to all of the rise of its curves) and its measured batches
with 40 more spread from half the smallest to twice the largest:

* the adjacent target pairs at which some batch's median epochs *fall* as the target
  hardens, and the largest fall (against the running maximum over easier targets);
* the pairs at which ``P(epochs ≤ x)`` rises for a fixed ``x`` (1.5 × the easiest target's
  epochs) — what a candidate's chance of success does when its time budget is held::

    python -m benchmarks.target_monotonicity          # the three bundled profiles (~15 s)

Nothing is replayed: it reads the fitted models only. The figures are quoted in
docs/models.md (§ 2, "Known limitation"); the test checks that the measurement runs and
that a model made monotone by hand reads as monotone.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

__all__ = ["measure", "main"]

EXAMPLES = ("cifar10-resnet18", "imagenet-resnet50", "yolov3-voc")
LEVELS = 300


def measure(accuracy, *, levels: int = LEVELS) -> dict[str, float]:
    """The non-monotonicity of ``accuracy`` (a fitted :class:`cotune.models.AccuracyModel`,
    or anything with its ``epochs_to_target``, ``batches_``, ``curve_start_``,
    ``curve_plateau_`` and ``goal``) in the target."""
    top = float(np.max(accuracy.curve_plateau_))
    lo = float(np.median(accuracy.curve_start_))
    scores = np.linspace(lo + 0.5 * (top - lo), top, levels)
    targets = scores if accuracy.goal == "max" else -scores
    b = np.asarray(accuracy.batches_, float)
    batches = np.unique(np.concatenate([b, np.geomspace(b[0] / 2, b[-1] * 2, 40)]))
    preds = [accuracy.epochs_to_target(batches, float(t)) for t in targets]
    med = np.array([p.epochs_if_reached for p in preds])
    sig = np.array([p.log_sigma for p in preds])
    reach = np.array([p.p_reach for p in preds])
    with np.errstate(divide="ignore", invalid="ignore"):
        step = np.diff(np.log(med), axis=0)
        fall = float(np.nanmin(med / np.maximum.accumulate(med, axis=0))) - 1.0
    x = np.log(med[0] * 1.5)
    cdf = np.vectorize(NormalDist().cdf)
    chance = reach * cdf((x - np.log(med)) / np.maximum(sig, 1e-12))
    rise = np.diff(chance, axis=0)
    return {
        "pairs": float(step.size),
        "falls": float(np.count_nonzero(step < -1e-9)),
        "largest_fall": max(-fall, 0.0),
        "chance_rises": float(np.count_nonzero(rise > 1e-3)),
        "largest_chance_rise": float(max(np.nanmax(rise), 0.0)),
    }


def main(argv: list[str] | None = None) -> int:
    import argparse

    import cotune

    # No options, but a parser all the same: without one ``--help`` (or a mistyped option)
    # silently ran the whole measurement instead of printing help or exiting 2.
    argparse.ArgumentParser(
        prog="python -m benchmarks.target_monotonicity", description=" ".join(__doc__.split("\n\n")[0].split())
    ).parse_args(argv)
    print("epochs-to-target against the target, on a ladder of "
          f"{LEVELS} targets (adjacent pairs x batches):")
    for name in EXAMPLES:
        acc = cotune.fit_models(name, n_bootstrap=0).accuracy
        m = measure(acc)
        print(f"  {name:18s} epochs fall at {int(m['falls']):4d} of {int(m['pairs']):5d} pairs "
              f"(largest {m['largest_fall']:.1%} below the easier targets'); P(epochs <= x) rises at "
              f"{int(m['chance_rises']):3d} (largest +{m['largest_chance_rise']:.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
