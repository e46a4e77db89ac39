"""What a planner is given besides its own paid step-time probes.

* ``one-curve`` (the headline: what a user really has) — ONE learning curve, at the
  job's usual batch, from a previous run, with the gradient statistics that run logged
  (``grad_sqr``/``grad_var`` of the Pollux traces) as ``noise`` records. The usual
  batch is chosen the way a user would, from the trace's original recipe: the per-GPU
  batch the recipe starts from, on one GPU (Pollux's initial batch; the batch at which
  AdaptDL measured the gradient statistics) — the measured curve nearest to it in
  log-batch. On every bundled trace this is the smallest measured batch (cifar10 128,
  imagenet 200, deepspeech2 20, yolov3 8, bert 12, ncf 256). It is the oracle's best
  batch in 7 of the 72 scenarios (imagenet loose and tight without deadline, deepspeech2
  tight without deadline, bert loose, all and tight without deadline, cifar10-hetero
  loose at 3×): there the one curve already holds the answer's epochs.
* ``free-curves`` (an upper bound: more than a user has) — the curves at every other
  measured batch from the smallest, plus the largest, handed over for free (the
  benchmark's original setting).

Every curve a planner sees has a cost, reported separately from the probes: the whole
recorded run (its last epoch) at the recipe's configuration of that global batch (the
fewest packed workers, then the lowest price; :func:`curve_cost`),
``epochs × N / B × n × price × step_time``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from benchmarks._registry import setting
from benchmarks.traces import POLLUX_MODELS, Workload
from cotune.profile import EvalRecord, NoiseRecord

__all__ = ["Evidence", "recipe_batch", "recipe_order", "curve_cost", "free_curves", "one_curve", "visible_batches", "evals_of"]


@dataclass(frozen=True)
class Evidence:
    """The learning curves and gradient statistics a setting hands to the planner."""

    setting: str
    curves: tuple[int, ...]  # global batches whose learning curves are seen
    evals: tuple[EvalRecord, ...]
    noise: tuple[NoiseRecord, ...] = ()
    curve_costs: Mapping[int, float] = field(default_factory=dict)  # USD to produce each seen curve
    held_out: tuple[int, ...] = ()  # measured batches whose curves exist only in the truth
    # Global batches whose runs' step times the planner knows (free: paid for in the curve's
    # cost): the reference run's, in every setting, so the settings differ in curves only.
    step_runs: tuple[int, ...] = ()

    @property
    def curve_cost(self) -> float:
        return float(sum(self.curve_costs.values()))


def recipe_batch(workload: Workload) -> int:
    """The job's usual global batch: its recipe's initial per-GPU batch on one GPU,
    snapped to the nearest measured curve (log scale)."""
    spec = POLLUX_MODELS.get(workload.model)
    usual = spec["initial_local_batch"] if spec else workload.initial_local_batch
    batches = np.array(workload.batches, float)
    return int(batches[np.argmin(np.abs(np.log(batches) - math.log(usual)))])


def recipe_order(workers: int, price_per_hour: float, gpu: str) -> tuple[int, float, str]:
    """The order a previous run's configuration is chosen in among those of its batch — the
    fewest workers, then the lowest price per worker-hour, then the GPU type's name — without
    any measurement (one rule for :func:`curve_cost` and :func:`benchmarks.replay.curve_run_index`)."""
    return int(workers), float(price_per_hour), gpu


def curve_cost(workload: Workload, global_batch: int) -> float:
    """USD to record the curve at ``global_batch``: its whole run at the recipe's
    configuration of that batch (the nearest measured global batch if none) — the fewest
    packed workers, then the lowest price per worker-hour, then the GPU type's name, as
    :func:`benchmarks.replay.curve_run_index` picks it."""
    gph = workload.gpus_per_host
    rows = [(g, n, b, t) for (g, n, h, b), t in workload.steps.items() if h == -(-n // gph)]
    gb = np.array([n * b for _, n, b, _ in rows], float)
    near = np.abs(np.log(gb) - math.log(global_batch))
    g, n, b, t = min((r for r, d in zip(rows, near) if d <= near.min() + 1e-9),
                     key=lambda r: recipe_order(r[1], workload.prices[r[0]], r[0]))
    per_epoch = n * workload.prices[g] * workload.dataset_size / (n * b) * t / 3600.0
    epochs = float(np.nanmax(workload.curves[global_batch].epochs))
    return float(per_epoch * epochs)


def evals_of(workload: Workload, batches: tuple[int, ...], *, gradients: bool = True) -> tuple[EvalRecord, ...]:
    """Eval records of the given curves, with the gradient statistics each row logged
    (measured by AdaptDL at the reference batch; ``gradients=False``: without them)."""
    ref = workload.reference_batch
    out = []
    for b in batches:
        c = workload.curves[b]
        for e, m, gs, gv in zip(c.epochs, c.metric, c.grad_sqr, c.grad_var):
            out.append(
                EvalRecord(
                    global_batch=int(b),
                    epoch=float(e),
                    metric=float(m),
                    grad_sqr=float(gs) if gradients and np.isfinite(gs) and gs >= 0 else None,
                    grad_var=float(gv) if gradients and np.isfinite(gv) and gv >= 0 else None,
                    grad_batch=ref if gradients else None,
                )
            )
    return tuple(out)


def noise_of(workload: Workload, global_batch: int) -> tuple[NoiseRecord, ...]:
    """The curve's gradient statistics as noise records, ``b_noise = grad_var / grad_sqr × B_ref``
    (rows without usable statistics are left out)."""
    return tuple(NoiseRecord(b_noise=float(v), global_batch=int(global_batch), epoch=float(e))
                 for _, e, v in workload.noise_rows(global_batch))


def visible_batches(workload: Workload) -> tuple[int, ...]:
    """The free-curves batches: every other one from the smallest, and the largest."""
    b = workload.batches
    return tuple(sorted(set(b[::2]) | {b[-1]}))


def _evidence(name: str, workload: Workload, curves: tuple[int, ...], noise: tuple[NoiseRecord, ...], *,
              gradients: bool = True) -> Evidence:
    return Evidence(
        setting=name,
        curves=curves,
        evals=evals_of(workload, curves, gradients=gradients),
        noise=noise,
        curve_costs={b: curve_cost(workload, b) for b in curves},
        held_out=tuple(b for b in workload.batches if b not in curves),
        step_runs=tuple(b for b in (recipe_batch(workload),) if b in curves),
    )


@setting(
    "one-curve",
    order=0,
    description="paid step-time probes + one learning curve at the job's usual batch (a previous run) "
    "with its gradient statistics as noise records — what a user has",
)
def one_curve(workload: Workload) -> Evidence:
    ref = recipe_batch(workload)
    return _evidence("one-curve", workload, (ref,), noise_of(workload, ref))


@setting(
    "one-curve-no-noise",
    order=1,
    opt_in=True,
    description="one-curve without the reference run's gradient statistics (no noise records, no grad_sqr/grad_var): "
    "a run logged by a plain training loop; opt-in (--settings one-curve-no-noise)",
)
def one_curve_no_noise(workload: Workload) -> Evidence:
    ref = recipe_batch(workload)
    return _evidence("one-curve-no-noise", workload, (ref,), (), gradients=False)


@setting(
    "free-curves",
    order=2,
    upper_bound=True,
    description="paid step-time probes + the curves at every other measured batch and the largest, free "
    "(an upper bound: nobody has these curves before planning)",
)
def free_curves(workload: Workload) -> Evidence:
    return _evidence("free-curves", workload, visible_batches(workload), ())
