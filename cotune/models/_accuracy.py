"""Accuracy model: epochs-to-target at any global batch as a predictive distribution.

The quantity planned on is ``E(B)``, the epochs until a run at global batch ``B`` first
reaches the target, and whether it reaches it at all. Fitting is a chain of named pure
steps, each usable on its own:

1. :func:`runs_from_evals` — every run (global batch, seed) becomes its best-so-far
   curve in *score* space (the metric, negated for ``goal="min"``). A NaN or diverged
   evaluation adds no progress instead of poisoning the curve.
2. :func:`batch_evidence` — per measured batch and target: the epoch at which each run
   first reaches the target; runs that end first are *censored* there (a run that
   stopped early says "not yet", not "never"), so the batch's median epochs is a
   Kaplan–Meier median. Pooled runs that all stop right at the target therefore read
   their epoch, not ∞. With one run the spread of a new run is the curve's own
   evaluation noise turned into epochs by the curve's slope,
   ``σ_logE = σ_eval / (d score / d ln epoch)``; with several, the seeds' spread.
   Every batch is read in one numpy pass over all runs (:class:`RunTable`,
   :func:`evidence_at`), so a fit — a dozen such readings — is linear in the evaluations.
3. :func:`fit_noise_scale` — the critical-batch law of McCandlish et al. (2018),

       E(B) = E_min · (1 + B / B_noise)

   fitted with a robust (soft-L1) loss on ``log E`` of the per-batch medians, so one
   off-recipe batch cannot drag it — once per target (cached: ``B_noise`` grows as
   training progresses, so a single value for all targets extrapolates badly), and in
   ``fit`` at a ladder of target levels, whose leave-one-batch-out errors update the
   spread priors. With fewer than three batches reaching a target, ``B_noise`` comes
   from the profile's gradient-noise records taken before their run reached it
   (:func:`noise_scale_until`).
4. :func:`flag_outliers` — a batch whose ``log E`` sits more than ``3·MAD`` (and more
   than 20 %) off the robust law is flagged: it still answers for itself, with its
   disagreement added to its spread, but anchors nothing around it.

Prediction at a query batch, for target ``t``::

    log E(B)  ~ Normal(μ(B), σ(B)²)                  (given the target is reached)
    μ(B)      = log-log interpolation between anchors (measured batches that reach t)
                or, outside them, the law (fitted with ≥ 3 anchors, else anchored at
                the nearest with the gradient B_noise; with no B_noise known, the law's
                shift averaged over NOISE_RATIO_PRIOR, its spread added to σ²)
    σ(B)²     = σ_anchor² + (κ · d)² + c · s_run²,   d = |log2(B / nearest anchor)|

``s_run`` is the run-to-run scatter (:func:`run_scatter`: the anchors' residuals about
the law, pooled with ``RUN_SCATTER``), ``c = 1 + w² + (1 − w)²`` between anchors (``w``
the interpolation weight), 1 beyond them, 0 at a measured batch. An anchor the
batch-monotone pooling moved keeps that move in its ``σ_anchor`` (in quadrature with its own
spread): the pooled value is uncertain by at least how far its runs disagree with it.
Beyond the anchors
``κ = KAPPA_BEYOND_LAW`` where the law is fitted across three or more of them, else
``κ = KAPPA_BEYOND · g(f)``, ``g`` by the target's level ``f`` along the anchor's curve
(:data:`KAPPA_BEYOND_SHAPE`), with ``B_noise`` the gradient noise measured before the
target (:func:`noise_scale_until`).

``κ`` (log-epochs per doubling, separately inside and beyond the anchors) starts from
a prior measured on the published Pollux curves (``python -m benchmarks.accuracy_priors``
prints it) and is updated with the profile's own leave-one-batch-out errors when it has
three or more anchors: ``κ² = (ν₀ κ₀² + Σ (e_i / d_i)²) / (ν₀ + n)``, each error net of
the scatter, ``e_i² − c·s_run²``. Only anchors are left out and predicted from (a batch
:func:`flag_outliers` sets aside anchors nothing), but an outlier between two anchors adds
its own error predicted from them (an unmeasured batch may be as far off the law), and
``d_i``, the distance to the nearest other anchor, is at least ``log2(1.2) ≈ 0.26``
doubling: across that the law moves epochs by at most the 20 % a batch may sit off it, so
a nearer twin's error is scatter.

The probability of reaching the target at all, at a measured batch: where its runs agree
(all that count reached, or none did), each run's own margin ``z_j = (best_j − t)/σ_eval``
and ``P = 1 − Π Φ(−z_j)`` (all reached) or ``Π Φ(z_j)`` (none did), so one more agreeing
run never lowers it; where they disagree the fraction that reached, ``(k + ½)/(n + 1)``.
A run cut short — ended before the batch's longest while still rising,
:func:`still_rising` — that has not reached the target leaves ``n`` ("not yet", not
"never"). The margin carried to other batches is the median plateau minus the target
(held within ``Φ⁻¹(P)·σ_plateau`` where the runs disagree); where most runs that count were
still rising as they ended (they stop once they reach the target), that median is only a
lower bound, and where ``P > ½`` the margin is at least ``Φ⁻¹(P)·σ_plateau`` between two
measured batches; beyond the smallest and the largest at least ``Φ⁻¹(min(P, (k + ½)/(n +
1)))·σ_plateau``, no surer than the count (a product over a few agreeing seeds reads 3–4 σ,
and runs still rising at the end of a long schedule carried that past the largest batch). Failed
batches (curves that end far below the others') and lone plateau dips or spikes answer
only for themselves and leave the plateau drift ``τ`` alone. A batch whose
curve is still rising and stops before half the profile's longest run is *censored*:
whatever the target, its best is a lower bound, so it carries no margin for the others
except as a lower bound (between batches the answer is the larger of the interpolation
without and with the censored batches), and at that batch the answer is the larger of its
own and theirs; every other measured
batch answers with its own. Away from measured batches
the margin is kept and its uncertainty grows with the distance in log batch,
``σ_plateau(B)² = σ_plateau² + (τ · d · range)²`` (``range`` the metric's rise over the
curves), so near a plateau the answer is neither 0 nor 1. ``τ`` is not one number: how
fast the plateau drifts between batches differs by two orders of magnitude between
workloads, so ``P(reach)`` is the mean over mixture nodes ``τ_k``: quantiles of the
log-normal the measured workloads imply for one more (:func:`walk_prior_nodes`,
:func:`reach_probability`).

The best-so-far surface over (batch, epochs) — the paper's isotonic model — is kept
for :meth:`AccuracyModel.metric_at`.
"""

from __future__ import annotations

import contextlib
import math
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from cotune._checks import MAX_MAGNITUDE, BadValue, _is_bool, excerpt, integer, interval, number
from cotune.errors import ModelError
from cotune.models._estimator import EstimatorContract, as_column
from cotune.models._isotonic import _pava_batch, pava
from cotune.models._normal import norm_cdf, norm_ppf
from cotune.models._segments import group_starts, interp_segments, segment_km_median, segment_median, segment_std_of_two
from cotune.models._step_time import z_for

__all__ = [
    "AccuracyModel",
    "ANCHOR_CACHE_TARGETS",
    "MAX_GRID_SIZE",
    "BatchEvidence",
    "EpochsPrediction",
    "Run",
    "RunTable",
    "batch_evidence",
    "evidence_at",
    "run_table",
    "crossing_epoch",
    "fit_noise_scale",
    "NOISE_RATIO_PRIOR",
    "noise_prior_shift",
    "flag_outliers",
    "noise_scale_until",
    "kappa_shape",
    "run_scatter",
    "still_rising",
    "usable_noise_scale",
    "target_level",
    "runs_from_evals",
    "KAPPA_INSIDE",
    "KAPPA_BEYOND",
    "KAPPA_BEYOND_LAW",
    "KAPPA_BEYOND_SHAPE",
    "RUN_SCATTER",
    "PLATEAU_WALK",
    "PLATEAU_WALK_NODES",
    "PLATEAU_WALK_OPTIMA",
    "WALK_PRIOR_SIZE",
    "walk_prior_nodes",
    "reach_probability",
]

# Priors, measured on the published Pollux OSDI'21 curves (six workloads, 6–8 global
# batches each): ``python -m benchmarks.accuracy_priors`` recomputes them all.
# σ of log epochs-to-target per doubling of the global batch away from the nearest
# measured batch, for batches beyond the measured ones (law extrapolation from a
# reference curve and the gradient noise scale it logged before reaching the target,
# noise_scale_until) and between them (interpolation). 0.181 until 2026-12-07, when the
# law took the whole run's median noise scale: a late-training value, so the reference
# curve's errors beyond it were larger (mean |log error| 0.315 against 0.241 now).
KAPPA_BEYOND = 0.105
# Where the profile has no gradient-noise scale at all (no noise records, no gradient
# statistics, fewer than three batches reaching the target): ln(B_noise / B_anchor) ~
# Normal(mean, sd), B_anchor the measured batch extrapolated from. Measured on the six
# Pollux workloads: the law fitted across each one's batches at six target levels, the
# median over the levels of ln(B_noise / reference batch) — 1.59 (CIFAR-10), 3.80
# (ImageNet), 1.84 (DeepSpeech2), 4.42 (YOLOv3), 4.62 (BERT), 6.69 (NCF); their mean and
# standard deviation (``python -m benchmarks.accuracy_priors`` prints them). With each
# workload left out in turn, the library's 90 % intervals at the other batches from the
# reference curve alone covered 91.2 % of 204 measured epochs-to-target (mean |log error|
# 0.498), against 2.9 % (1.989) for the no-benefit bound E ∝ B used before 2026-12-08.
NOISE_RATIO_PRIOR = (3.827, 1.907)
# The same beyond a law fitted across three or more measured batches (no noise records:
# the law's B_noise is the batches' own), calibrated on the six Pollux workloads with their
# smallest and their largest batch left out in turn and predicted from the others (the
# profile's own leave-one-batch-out update on top, as in use). Until 2026-12-07 one κ served
# both; calibrated on the one-curve path alone (0.105) it covered 69 % of these errors.
KAPPA_BEYOND_LAW = 0.262
# accuracy_priors prints 0.0275 since a6472e4 (an error counts at least log2(1.2) doubling
# away, as in the profile's own update); 0.039 is kept because the two are not told apart
# on what was measured (2026-12-07): free-curves epochs coverage 94.1 % with either
# (median sigma 0.119 vs 0.117), curve_calibration 88.5 / 88.1 % and public_accuracy's
# leave-one-batch-out 98 % unchanged. docs/models.md section 2 has the figures.
KAPPA_INSIDE = 0.039
# Beyond the anchors κ is not one number: the law carries a late target (near the
# anchor curve's best) better than an early one, whose epochs rest on the few noise
# measurements of the training's first stretch (and, before they were matched to the
# target, on a late-training value that overstated what a large batch gains). The factor
# on KAPPA_BEYOND at the target's level along the anchor's curve, f = (t − first) /
# (best − first), calibrated per level on the same samples (90 % coverage in each bin,
# made non-increasing in f), linear between the nodes and flat beyond them.
KAPPA_BEYOND_SHAPE = ((0.5, 1.404), (0.6, 1.404), (0.7, 0.787), (0.8, 0.621), (0.9, 0.565), (1.0, 0.565))
# σ of a rerun's log epochs-to-target about the law fitted through the measured batches
# (one run per batch, outliers set aside): the median over the Pollux workloads of each
# one's median over six target levels, fitted on all its batches with no prior. Between
# measured batches it replaces most of KAPPA_INSIDE: with it in the model, the κ that
# covers 90 % of the leave-one-batch-out errors falls from 0.091 to KAPPA_INSIDE above.
RUN_SCATTER = 0.049
# Growth of the reach margin's uncertainty between batches, as a fraction of the metric's
# rise over a curve, per doubling. Each Pollux workload's own value, minimising the log-loss
# of "reached or not" at its other batches for a model fitted on the reference curve alone
# (``python -m benchmarks.accuracy_priors``; points of its τ grid, hence the digits):
PLATEAU_WALK_OPTIMA = (0.00273491, 0.000400488, 0.0144561, 0.0135593, 0.0780598, 0.0190795)
# cifar10 imagenet deepspeech2 yolov3 bert ncf — two orders of magnitude apart, so the prior
# for an unseen workload is a mixture (P(reach) is the mean of its nodes' probabilities):
# equal-weight quantiles of the log-normal those six imply for one more workload
# (:func:`walk_prior_nodes`). The six values themselves as nodes (the form shipped before,
# 2026-12-07) put no mass beyond the fastest-drifting workload measured: left out one at a
# time, BERT's plans were promised ≥ 0.998 where four of them missed. Left out one workload
# at a time, the log-normal of the other five scores a mean log-loss of 0.580 on the one
# left out against 0.650 for their optima themselves as nodes and 0.672 for their median as one value.
WALK_PRIOR_SIZE = 9


def walk_prior_nodes(optima: "tuple[float, ...] | list[float]", *, size: int = WALK_PRIOR_SIZE) -> tuple[float, ...]:
    """Mixture nodes of the plateau-walk prior for a workload not yet measured.

    ``log τ ~ N(m, s² (1 + 1/n))`` with ``m`` and ``s`` the mean and sample standard
    deviation of ``log optima`` over the ``n`` measured workloads — the plug-in predictive
    of one more draw (the ``1/n`` is the uncertainty of ``m``) — represented by its
    ``size`` quantiles at ``(j − ½) / size``, each with weight ``1/size``. One optimum: that
    value alone (no spread can be estimated from one workload).
    """
    size = integer(size, where="size", ge=1)
    t = np.asarray(optima, float).ravel()
    if t.size == 0 or not np.all(np.isfinite(t) & (t > 0)):
        raise BadValue(f"must be one or more numbers > 0, got {excerpt(optima)}", where="plateau walk optima")
    x = np.log(t)
    if x.size == 1:
        return (float(math.exp(x[0])),)
    spread = float(np.std(x, ddof=1)) * math.sqrt(1.0 + 1.0 / x.size)
    z = norm_ppf((np.arange(size) + 0.5) / size)
    return tuple(float(v) for v in np.exp(float(np.mean(x)) + spread * z))


PLATEAU_WALK_NODES = walk_prior_nodes(PLATEAU_WALK_OPTIMA)
PLATEAU_WALK = float(np.median(PLATEAU_WALK_OPTIMA))  # one value, kept for callers that pass one

# Weight of the priors in pseudo-observations once the profile has its own evidence.
PRIOR_WEIGHT = 2.0

_SIGMA_FLOOR = 0.02  # log epochs: evaluation grids quantise crossings at about this scale
_SIGMA_CAP = 1.5  # log epochs: beyond this the slope is flat and the epoch is unknowable
_OUTLIER_MAD = 3.0
_OUTLIER_MIN = math.log(1.2)
# The shortest distance (doublings) a leave-one-batch-out error is spread over when it
# updates κ: the law's epochs grow at most in proportion to the batch (E ∝ B, its
# B_noise → 0 limit), so across log2(1.2) ≈ 0.26 doubling the trend moves epochs by at
# most the 20 % (_OUTLIER_MIN) a batch may sit off the law without being set aside. A
# batch nearer its neighbour than that measures batch-to-batch scatter, not how fast
# epochs change with the batch; divided by its own tiny distance (MLPerf's 3200 beside
# 3264 is 0.03 doubling) such errors made κ_inside 5.4 and between-batch intervals ~100× wide.
_KAPPA_MIN_DOUBLINGS = _OUTLIER_MIN / math.log(2.0)
_CENSOR_FRACTION = 0.5
_FAILED_SHORTFALL = 0.5  # of the metric's rise over a curve: a batch ending this far below the others failed


# -- values ---------------------------------------------------------------------------
# eq=False: equality of arrays has no one truth value; two predictions are equal only as one object.
@dataclass(frozen=True, eq=False)
class EpochsPrediction:
    """Epochs (passes over the data) until the metric first reaches the target.

    ``epochs`` is the point prediction: the median given the target is reached, and
    ∞ where reaching is less likely than not (``p_reach < 0.5``). ``epochs_if_reached``,
    ``lower``, ``upper`` and ``log_sigma`` describe the distribution *given* the target
    is reached and are finite wherever a median exists, so ``P(success)`` can combine
    them with ``p_reach``.
    """

    epochs: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    extrapolated: np.ndarray  # bool: global batch outside the measured batches
    # Left out (None), they describe a deterministic prediction: reached where
    # ``epochs`` is finite, σ from the interval, no distance.
    epochs_if_reached: np.ndarray | None = None
    log_sigma: np.ndarray | None = None
    p_reach: np.ndarray | None = None
    distance_doublings: np.ndarray | None = None  # |log2(B / nearest measured batch)|

    def __post_init__(self) -> None:
        e = np.asarray(self.epochs, float)
        fill = {
            "epochs_if_reached": e,
            "p_reach": np.isfinite(e).astype(float),
            "distance_doublings": np.zeros(e.shape),
        }
        if self.log_sigma is None:
            with np.errstate(all="ignore"):
                s = (np.log(np.asarray(self.upper, float)) - np.log(np.asarray(self.lower, float))) / (2 * z_for(0.9))
            fill["log_sigma"] = np.where(np.isfinite(s), s, 0.0)
        for name, value in fill.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)


@dataclass(frozen=True)
class Run:
    """One learning curve: best-so-far score (higher is better) against epochs."""

    global_batch: float
    seed: int
    epochs: np.ndarray
    best: np.ndarray
    diverged: bool


@dataclass(frozen=True)
class BatchEvidence:
    """What the measured batches say about one target (arrays aligned with ``batches``).

    ``epochs`` is NaN where no run reached the target; ``margin`` is the reach margin
    in score units (positive: reached with room to spare) carried *between* two measured
    batches: the median plateau minus the target where the runs agree, and where they
    disagree ``Φ⁻¹(p_reach) · plateau_sigma`` held within that distance (0 where the two
    differ in sign); where most runs were still rising as they ended and ``p_reach > ½``,
    at least ``Φ⁻¹(p_reach) · plateau_sigma`` (the median plateau is then a lower bound).
    ``margin_beyond`` is carried beyond the smallest and the largest measured batch: the
    same, except that the lower bound there is ``Φ⁻¹(min(p_reach, (k + ½)/(n + 1))) ·
    plateau_sigma``, no surer than the count of runs that reached
    (:meth:`AccuracyModel._p_reach`). ``p_reach`` is the batch's own chance
    (:func:`batch_evidence`).
    """

    batches: np.ndarray
    epochs: np.ndarray
    log_sigma: np.ndarray
    p_reach: np.ndarray
    plateau_sigma: np.ndarray
    n_runs: np.ndarray
    n_reached: np.ndarray
    horizon: np.ndarray  # last measured epoch of the batch's longest run
    margin: np.ndarray
    # The batch's runs stop before half the longest run of the profile while its curve is
    # still rising (:func:`still_rising`): a job still running, or a short probe, says
    # "not yet", not "never". A property of the curves, not of the target, so a harder
    # target never turns a batch's own low margin into its neighbours' higher one.
    censored: np.ndarray | None = None
    # Left out (None): the same as ``margin``.
    margin_beyond: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.margin_beyond is None:
            object.__setattr__(self, "margin_beyond", self.margin)


# -- step 1: runs -----------------------------------------------------------------------
def runs_from_evals(global_batch: np.ndarray, epoch: np.ndarray, score: np.ndarray, seed: np.ndarray) -> list[Run]:
    """Best-so-far curves, one per (global batch, seed), in score space."""
    runs = []
    keep = np.flatnonzero(epoch > 0)
    # One sort by (batch, seed, epoch), then contiguous slices: linear in the records
    # whatever the number of runs (a profile may pool thousands).
    order = keep[np.lexsort((epoch[keep], seed[keep], global_batch[keep]))]
    b_sorted, s_sorted = global_batch[order], seed[order]
    cut = np.flatnonzero((np.diff(b_sorted) != 0) | (np.diff(s_sorted) != 0)) + 1
    for sel in np.split(order, cut) if order.size else []:
        e, s = epoch[sel], score[sel]
        diverged = not bool(np.all(np.isfinite(s)))
        best = np.maximum.accumulate(np.where(np.isfinite(s), s, -np.inf))
        ok = np.isfinite(best)
        if np.any(ok):
            runs.append(Run(float(global_batch[sel[0]]), int(seed[sel[0]]), e[ok], best[ok], diverged))
    return runs


def runs_by_batch(runs: list[Run]) -> tuple[np.ndarray, list[list[Run]]]:
    """The sorted distinct batches and, for each, its runs (one pass over ``runs``)."""
    groups: dict[float, list[Run]] = {}
    for r in runs:
        groups.setdefault(r.global_batch, []).append(r)
    batches = sorted(groups)
    return np.array(batches), [groups[b] for b in batches]


def crossing_epoch(epochs: np.ndarray, best: np.ndarray, threshold: float) -> float:
    """First epoch at which a non-decreasing curve reaches ``threshold`` (linear between
    evaluations; ∞ if it never does)."""
    hit = np.flatnonzero(best >= threshold)
    if hit.size == 0:
        return math.inf
    i = int(hit[0])
    if i == 0:
        return float(epochs[0])
    r0, r1 = best[i - 1], best[i]
    frac = 0.0 if r1 == r0 else (threshold - r0) / (r1 - r0)
    return float(epochs[i - 1] + frac * (epochs[i] - epochs[i - 1]))


def _slope_log_epochs(run: Run, at: float) -> float:
    """d score / d ln epoch of a run's best-so-far curve around epoch ``at`` (a ±25 % window)."""
    lo, hi = at / 1.25, min(at * 1.25, float(run.epochs[-1]))
    if hi <= lo:
        lo = max(float(run.epochs[0]), at / 1.5)
        hi = at
    if hi <= lo:
        return 0.0
    s_lo, s_hi = np.interp([lo, hi], run.epochs, run.best)
    return float((s_hi - s_lo) / math.log(hi / lo))


def still_rising(run: Run, *, noise: float) -> bool:
    """Whether a best-so-far curve is still rising at its end: over the window the slope
    is read on (its last ``ln 1.25`` of log epochs) it gained more than one evaluation
    noise. A curve with a single evaluation shows no trend, so nothing says it stopped."""
    if run.epochs.size < 2:
        return True
    end = float(run.epochs[-1])
    return _slope_log_epochs(run, end) * math.log(1.25) > noise


# -- step 2: evidence per batch -------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class RunTable:
    """Every run as flat arrays, grouped by batch, with what does not depend on the target.

    :func:`batch_evidence` asks the same questions of every run at every target level (and a
    fit asks at a dozen levels, the service at each new target): the answers that do not
    depend on the target are read once here, and the rest in one numpy pass over all runs
    (:mod:`cotune.models._segments`), so the cost grows with the evaluations, not with a
    numpy call per batch and level. Runs are in :func:`runs_by_batch` order.
    """

    batches: np.ndarray  # sorted distinct global batches
    run_batch: np.ndarray  # index into ``batches`` of each run
    run_starts: np.ndarray  # first run of each batch, then the number of runs
    starts: np.ndarray  # first point of each run in ``epochs``/``best``, then the number of points
    epochs: np.ndarray  # every run's epochs, run after run
    best: np.ndarray  # every run's best-so-far score, aligned with ``epochs``
    last: np.ndarray  # per run: its last epoch
    plateau: np.ndarray  # per run: its best at its end
    rising: np.ndarray  # per run: still rising at its end (:func:`still_rising`)
    cut: np.ndarray  # per run: ended before its batch's longest while still rising
    horizon: np.ndarray  # per batch: the last epoch of its longest run
    batch_rising: np.ndarray  # per batch: one of its longest runs is still rising
    plateau_median: np.ndarray  # per batch: median plateau of the runs not cut
    plateau_sigma: np.ndarray  # per batch: plateau spread of a new run
    eval_noise: float
    noise: float  # max(eval_noise, plateau_floor): the unit of a run's reach margin


def _log_each(values: np.ndarray) -> np.ndarray:
    # math.log, value by value, where the per-run code took math.log of a Python float: numpy's
    # vectorized log may differ from it in the last bit, and results must not move.
    return np.array([math.log(v) for v in values.tolist()], float)


def _slopes(epochs: np.ndarray, best: np.ndarray, starts: np.ndarray, last: np.ndarray, run: np.ndarray,
            at: np.ndarray) -> np.ndarray:
    """:func:`_slope_log_epochs` of each ``run`` around epoch ``at``, the runs concatenated
    (``starts``: each run's first point, then the total; ``last``: each run's last epoch)."""
    first, end = epochs[starts[run]], last[run]
    lo, hi = at / 1.25, np.minimum(at * 1.25, end)
    back = hi <= lo
    lo = np.where(back, np.maximum(first, at / 1.5), lo)
    hi = np.where(back, at, hi)
    out = np.zeros(run.shape)
    ok = hi > lo
    if np.any(ok):
        r = run[ok]
        s_lo = interp_segments(lo[ok], r, starts, epochs, best)
        s_hi = interp_segments(hi[ok], r, starts, epochs, best)
        out[ok] = (s_hi - s_lo) / _log_each(hi[ok] / lo[ok])
    return out


def run_table(runs: list[Run], *, eval_noise: float, plateau_floor: float) -> RunTable:
    """The runs as a :class:`RunTable` (one pass over the runs)."""
    if not runs:
        raise BadValue("must hold at least one run", where="runs")
    gb = np.array([r.global_batch for r in runs], float)
    order = np.argsort(gb, kind="stable")  # runs_by_batch: batches ascending, runs in their order
    runs = [runs[i] for i in order]
    batches, run_batch = np.unique(gb[order], return_inverse=True)
    n = batches.size
    sizes = np.array([r.epochs.size for r in runs], np.int64)
    starts = group_starts(sizes)
    epochs = np.concatenate([np.asarray(r.epochs, float) for r in runs])
    best = np.concatenate([np.asarray(r.best, float) for r in runs])
    last = epochs[starts[1:] - 1]
    plateau = best[starts[1:] - 1]
    run_starts = group_starts(np.bincount(run_batch, minlength=n))
    noise = max(eval_noise, plateau_floor)
    idx = np.arange(len(runs))
    # still_rising: a curve with one evaluation shows no trend, so nothing says it stopped.
    rising = np.ones(len(runs), bool)
    more = sizes >= 2
    rising[more] = _slopes(epochs, best, starts, last, idx[more], last[more]) * math.log(1.25) > noise
    horizon = np.maximum.reduceat(last, run_starts[:-1])
    longest = last == horizon[run_batch]
    batch_rising = np.bincount(run_batch[rising & longest], minlength=n) > 0
    cut = rising & ~longest  # ended before the batch's longest while still rising
    kept = ~cut  # the longest run is never cut
    mid = segment_median(plateau[kept], run_batch[kept], n)
    # Plateau spread of a new run: the curve's evaluation noise, and the seeds' spread of best
    # scores when there are several.
    dev = segment_median(np.abs(plateau[kept] - mid[run_batch[kept]]), run_batch[kept], n)
    several = np.bincount(run_batch[kept], minlength=n) >= 2
    spread = np.where(several, np.maximum(eval_noise, 1.4826 * dev), eval_noise)
    return RunTable(
        batches=batches, run_batch=run_batch, run_starts=run_starts, starts=starts, epochs=epochs, best=best,
        last=last, plateau=plateau, rising=rising, cut=cut, horizon=horizon, batch_rising=batch_rising,
        plateau_median=mid, plateau_sigma=np.maximum(spread, plateau_floor), eval_noise=float(eval_noise),
        noise=float(noise),
    )


def evidence_at(table: RunTable, threshold: float) -> BatchEvidence:
    """:func:`batch_evidence` of the runs in ``table`` at ``threshold``."""
    g, n = table.run_batch, table.batches.size
    n_runs = np.diff(table.run_starts)
    # The first point of each run at or above the threshold (the run's end where none is).
    pos = np.where(table.best >= threshold, np.arange(table.best.size), table.best.size)
    at = np.minimum.reduceat(pos, table.starts[:-1])
    reached = at < table.starts[1:]
    cross = np.full(g.size, np.inf)
    first = reached & (at == table.starts[:-1])
    cross[first] = table.epochs[at[first]]
    inner = reached & ~first
    j = at[inner]
    r0, r1 = table.best[j - 1], table.best[j]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(r1 == r0, 0.0, (threshold - r0) / (r1 - r0))
    cross[inner] = table.epochs[j - 1] + frac * (table.epochs[j] - table.epochs[j - 1])
    n_reached = np.bincount(g[reached], minlength=n)
    # A run cut short that has not reached the target says "not yet": it leaves the count.
    decided = reached | ~table.cut
    n_decided = np.bincount(g[decided], minlength=n)
    k = n_reached
    p_sigma = table.plateau_sigma
    # Where the plateau lies: the median of the runs that ran their course. Its set does
    # not depend on the target, so a harder target only lowers it.
    location = table.plateau_median - threshold
    agree = (k == 0) | (k == n_decided)
    # The runs agree: each one's own margin in evaluation-noise units says how surely a run
    # like it lands on that side, and each agreeing run is one more such run — a new run
    # misses only where every one of them could have missed, 1 − P = Π Φ(−z_j) (all
    # reached) or P = Π Φ(z_j) (none did). One more agreeing run multiplies by a factor
    # ≤ ½, so it never moves the chance back towards ½; a count would cap 3 of 3 at 0.875
    # however far above the target they end.
    z = (table.plateau - threshold) / table.noise
    all_reached = k[g] > 0
    factor = np.ones(g.size)
    use = decided & agree[g]
    factor[use & all_reached] = norm_cdf(-z[use & all_reached])
    factor[use & ~all_reached] = norm_cdf(z[use & ~all_reached])
    product = np.multiply.reduceat(factor, table.run_starts[:-1])  # left to right, as np.prod
    # The runs disagree: the fraction that reached, with a Jeffreys prior (1 of 2: ½).
    count = (k + 0.5) / (n_decided + 1.0)
    p_reach = np.where(agree, np.where(k > 0, 1.0 - product, product), count)
    margin = location.copy()
    split = ~agree
    if np.any(split):
        implied = norm_ppf(p_reach[split]) * p_sigma[split]
        loc = location[split]
        # Away from the batch the margin is the plateau's distance, never surer than the
        # count says here (and 0 where the count and the median plateau disagree in sign),
        # so it falls with the target as both do.
        margin[split] = np.where((implied > 0) & (loc > 0), np.minimum(implied, loc),
                                 np.where((implied < 0) & (loc < 0), np.maximum(implied, loc), 0.0))
    margin_beyond = margin.copy()
    # Most runs that count were still rising as they ended — they stop once they reach the
    # target, as MLPerf's and early-stopped jobs do — so the median plateau is only a lower
    # bound, the last evaluation's overshoot, and must not cap the margin: where the count
    # favours reaching, the margin carried is never less sure than it (a batch between two
    # whose runs all reached read P ≈ 0.6). A run that levelled off just above the target is
    # not rising, and its small margin stands. The set of rising runs does not depend on
    # the target, so the margin still falls with it.
    lower_bound = (k > 0) & (2 * np.bincount(g[table.rising & decided], minlength=n) >= n_decided)
    if np.any(lower_bound):
        p, s = p_reach[lower_bound], p_sigma[lower_bound]
        implied = norm_ppf(np.minimum(p, 1.0 - 1e-6)) * s
        margin[lower_bound] = np.where(implied > 0, np.maximum(location[lower_bound], implied), margin[lower_bound])
        # Beyond the measured batches (margin_beyond) no more than the count says, the
        # Jeffreys (k + ½)/(n + 1): Φ⁻¹ of a product over a few agreeing seeds reads 3–4 σ,
        # and runs that trained their whole schedule and were still rising at its end (long
        # schedules, late LR decay) carried that past the largest batch, P(reach) 0.81 where
        # the truth was 0.13. Runs that stop at the target keep the count's margin there
        # (MLPerf fitted on B ≤ 4096: least chance beyond 0.88, not 0.59).
        counted = norm_ppf(np.minimum(p, count[lower_bound])) * s
        margin_beyond[lower_bound] = np.where(counted > 0, np.maximum(margin_beyond[lower_bound], counted),
                                              margin_beyond[lower_bound])
    # Epochs to the threshold: the Kaplan–Meier median with three runs or more (a run that
    # ended first is censored there), else — and where it is ∞ — the median crossing.
    gr, hit = g[reached], cross[reached]
    median_hit = segment_median(hit, gr, n)
    three = n_runs[g] >= 3
    km = segment_km_median(np.where(reached, cross, table.last)[three], reached[three], g[three], n)
    med = np.where(n_runs >= 3, km, median_hit)
    epochs = np.where(n_reached > 0, np.where(np.isfinite(med), med, median_hit), np.nan)
    # σ of a new run's log epochs: sensitivity of the crossing to evaluation noise, and the
    # runs' own spread when several reached.
    slope = segment_median(_slopes(table.epochs, table.best, table.starts, table.last, np.flatnonzero(reached), hit),
                           gr, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(slope > 0, table.eval_noise / slope, _SIGMA_CAP)
    lc = np.log(hit)
    mad = 1.4826 * segment_median(np.abs(lc - segment_median(lc, gr, n)[gr]), gr, n)
    s = np.where(n_reached >= 3, np.maximum(s, mad), np.where(n_reached == 2, np.maximum(s, segment_std_of_two(lc, gr, n)), s))
    sigma = np.where(n_reached > 0, np.minimum(np.maximum(s, _SIGMA_FLOOR), _SIGMA_CAP), np.nan)
    censored = table.batch_rising & (table.horizon < _CENSOR_FRACTION * float(table.horizon.max()))
    return BatchEvidence(
        table.batches, epochs, sigma, np.clip(p_reach, 1e-6, 1 - 1e-6), p_sigma, n_runs, n_reached, table.horizon,
        margin, censored, margin_beyond,
    )


def batch_evidence(runs: list[Run], threshold: float, *, eval_noise: float, plateau_floor: float) -> BatchEvidence:
    """Epochs to ``threshold`` and the chance of reaching it, at every measured batch.

    Per batch: each run's first crossing of ``threshold``; a run cut short — it ended
    before the batch's longest while still rising (:func:`still_rising`) — that has not
    reached it leaves the reach count ("not yet", not "never"), and its best is no plateau.
    Judged on the curve alone, not the target, so a harder target only moves a run from
    reached to left out or to failed, never back. The rest is :class:`BatchEvidence`'s.
    A model asks at many thresholds of one :class:`RunTable` (:func:`evidence_at`).
    """
    return evidence_at(run_table(runs, eval_noise=eval_noise, plateau_floor=plateau_floor), threshold)


# -- reach probability ---------------------------------------------------------------------
def reach_probability(margin: np.ndarray, sigma: np.ndarray, walk_scale: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """``P(reach) = (1/K) Σ_k Φ(margin / √(σ² + (τ_k · walk_scale)²))``.

    ``margin`` and ``sigma`` are in score units at the query batch (the margin
    interpolated between measured batches, σ the plateau noise); ``walk_scale`` is the
    distance to the nearest measured batch in doublings times the metric's rise over a
    curve; ``τ_k`` are the mixture nodes (one value: a plain normal). The mixture is the
    prior predictive for a workload whose own τ is unknown: the plateau drifts between
    batches as slowly as on ImageNet or as fast as on BERT or faster
    (:func:`walk_prior_nodes`).
    """
    m, s0, ws = (np.asarray(a, float) for a in (margin, sigma, walk_scale))
    taus = np.asarray(nodes, float).reshape(-1, *([1] * m.ndim))
    return np.mean(norm_cdf(m / np.sqrt(s0**2 + (taus * ws) ** 2)), axis=0)


# -- step 3: the critical-batch law ------------------------------------------------------------
def target_level(target: float, start: np.ndarray, plateau: np.ndarray) -> np.ndarray:
    """How far along a curve a target lies, ``(t − start) / (plateau − start)`` in score
    space (1 at the curve's best, above 1 beyond it; 1 where the curve does not rise)."""
    start, plateau = np.asarray(start, float), np.asarray(plateau, float)
    rise = plateau - start
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(rise > 0, (target - start) / rise, 1.0)
    return f


def kappa_shape(level: np.ndarray, shape: tuple[tuple[float, float], ...] | None) -> np.ndarray:
    """The factor on κ_beyond at each target level (1 everywhere when ``shape`` is None)."""
    level = np.asarray(level, float)
    if shape is None:
        return np.ones(level.shape)
    xs, ys = (np.array(v, float) for v in zip(*shape))
    return np.interp(level, xs, ys)


def law_log_epochs(global_batch: np.ndarray, log_e_min: float, b_noise: float) -> np.ndarray:
    """``log E(B) = log E_min + log(1 + B / B_noise)``."""
    return log_e_min + np.log1p(np.asarray(global_batch, float) / b_noise)


# Gauss–Hermite nodes and weights of a standard normal for the mixture over an unknown
# noise scale: the shift is smooth in ln B_noise, and 16 nodes give its mean within 0.003 %
# and its variance within 0.06 % of 200,000 quantile points, at batch ratios 0.01–1,024
# under NOISE_RATIO_PRIOR (equal-weight quantile midpoints were 17 % off the variance at 64).
_GH_NODES, _GH_WEIGHTS = np.polynomial.hermite_e.hermegauss(16)
_GH_WEIGHTS = _GH_WEIGHTS / _GH_WEIGHTS.sum()


def noise_prior_shift(query_batch: np.ndarray, anchor_batch: np.ndarray, *, mean: float, sd: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of the law's log-epoch shift from an anchor batch to each query
    batch, when ``ln(B_noise / anchor) ~ Normal(mean, sd²)`` is all that is known::

        shift(B_noise) = log(1 + q / B_noise) − log(1 + a / B_noise)

    averaged over ``ln B_noise`` by 16-node Gauss–Hermite quadrature. The shift lies
    between 0 (B_noise → ∞: every batch needs the anchor's epochs) and ``log(q / a)``
    (B_noise → 0: a fixed number of steps, E ∝ B), and so does its mean.
    """
    q = np.asarray(query_batch, float)[..., None]
    a = np.asarray(anchor_batch, float)[..., None]
    bn = a * np.exp(float(mean) + float(sd) * _GH_NODES)
    shift = np.log1p(q / bn) - np.log1p(a / bn)
    m = shift @ _GH_WEIGHTS
    return m, np.maximum((shift - m[..., None]) ** 2 @ _GH_WEIGHTS, 0.0)


_SOFT_L1_SCALE = 0.1  # the soft-L1 loss's scale in log epochs: 10 %
_REWEIGHT_PASSES = 30  # reweighting passes of the soft-L1 location, from the median


def _soft_l1_location(x: np.ndarray) -> np.ndarray:
    """Per row of ``x``: ``_REWEIGHT_PASSES`` reweighted-mean passes from the row's median,
    ``a ← Σ w x / Σ w`` with ``w = 1 / √(1 + ((x − a) / f)²)`` — the value after the last
    pass, bit for bit, however early a row settles.

    :func:`fit_noise_scale` asked this of 322 rows per call (a 241-point grid, 40
    golden-section steps of two, the answer), 13 calls per accuracy fit and 25 fits per
    `cotune fit`: 23.0 of its 35.0 s at 400 batches (cProfile). The passes stay the same
    floating-point operations in the same order — each row's sum is its own pairwise sum,
    whatever rows sit beside it — written into one scratch array instead of seven fresh
    ones. A row whose value repeats the one two passes back (a fixed point, or a
    last-digit flip-flop between two values) repeats that pattern for every remaining
    pass, each pass being a function of the previous value alone, so its last pass's value
    is known there and the row leaves the loop; rows near the loss's minimum, the ones the
    golden-section search asks about, often settle after 15 to 25 passes.
    """
    f = _SOFT_L1_SCALE
    a = np.median(x, axis=1)
    out = np.empty_like(a)
    rows = np.arange(a.size)
    before: np.ndarray | None = None  # the value two passes back
    # weights and weighted values side by side: one reduction sums both
    scratch = np.empty((2, *x.shape))
    for done_passes in range(1, _REWEIGHT_PASSES + 1):
        weight, product = scratch
        np.subtract(x, a[:, None], out=weight)
        np.divide(weight, f, out=weight)
        np.square(weight, out=weight)
        np.add(1.0, weight, out=weight)
        np.sqrt(weight, out=weight)
        np.divide(1.0, weight, out=weight)
        np.multiply(weight, x, out=product)
        total_weight, total = np.add.reduce(scratch, axis=2)
        new = total / total_weight
        if before is not None:
            settled = new == before  # NaN never equals: such a row runs every pass
            if np.count_nonzero(settled):
                # From here the row alternates new, a, new, … (one value where they agree).
                last = new if (_REWEIGHT_PASSES - done_passes) % 2 == 0 else a
                out[rows[settled]] = last[settled]
                keep = ~settled
                if not np.count_nonzero(keep):
                    return out
                rows, x, new, a = rows[keep], x[keep], new[keep], a[keep]
                scratch = np.empty((2, *x.shape))
        before, a = a, new
    out[rows] = a
    return out


def _soft_l1_loss(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``Σ 2f²(√(1 + (r/f)²) − 1)`` per row of ``x``, ``r = x − a``."""
    f = _SOFT_L1_SCALE
    r = (x - a[:, None]) / f
    return np.sum(2 * f * f * (np.sqrt(1.0 + r * r) - 1.0), axis=1)


def _soft_l1_floor(x: np.ndarray) -> np.ndarray:
    """A lower bound on every row's soft-L1 loss, whatever its location ``a``.

    The loss is convex and even in each residual, so two residuals cost at least what
    they cost with ``a`` halfway between their points: ``ρ(x_i − a) + ρ(x_j − a) ≥
    2ρ((x_i − x_j)/2)``. Summed over disjoint pairs — the row's smallest with its
    largest, second smallest with second largest, … — that bounds the whole row.
    """
    f = _SOFT_L1_SCALE
    ordered = np.sort(x, axis=1)
    half = x.shape[1] // 2
    r = (ordered[:, ::-1][:, :half] - ordered[:, :half]) / (2 * f)
    return np.sum(4 * f * f * (np.sqrt(1.0 + r * r) - 1.0), axis=1)


# Rounding slack when a floor is compared with a computed loss: both are sums of n terms,
# each off by at most ~2e-18 in absolute terms where √(1 + u) − 1 cancels (2f² × one unit
# in the last place of 1) and the sums by at most n × 1.1e-16 relative (less for numpy's
# pairwise sum): the slack is at least 500 times both for n up to 10,000 batches.
_FLOOR_RELATIVE_SLACK = 1e-9
_FLOOR_ABSOLUTE_SLACK_PER_TERM = 1e-15


def fit_noise_scale(batches: np.ndarray, epochs: np.ndarray, *, robust: bool = True) -> tuple[float, float] | None:
    """``(log E_min, B_noise)`` of the law fitted to ``log E`` (None if degenerate).

    ``robust`` minimises a soft-L1 loss with a 10 % scale, ``Σ 2f²(√(1 + (r/f)²) − 1)``,
    so a single off-recipe batch is down-weighted instead of bending the law;
    ``robust=False`` is plain least squares. The two-parameter problem is solved by
    profiling: for a given ``B_noise`` the best ``log E_min`` is a location estimate
    (the mean, or reweighted least squares for soft-L1, :func:`_soft_l1_location`), so
    the fit is a 1-D search over ``log B_noise`` — a 241-point grid, then 40
    golden-section steps. Pure numpy: no SciPy import on the prediction path.

    A fit asks this at a dozen target levels, and `cotune fit` refits 25 times, mostly
    with the same anchors at a level (a held-out batch that does not reach it changes
    nothing there): the answer for the last ``_LAW_CACHE`` inputs is kept.
    """
    batches, epochs = np.asarray(batches, float), np.asarray(epochs, float)
    if batches.size < 2:
        return None
    return _fit_noise_scale(batches.tobytes(), epochs.tobytes(), batches.shape, epochs.shape, robust)


# Values (rows × batches) a look-ahead call of the golden-section search may profile at
# once. Measured on the 2-core machine (about 20 passes each): 2 rows of 400 values 0.64 ms,
# 6 rows 0.83 ms, 14 rows 1.35 ms; of 100 values 0.61, 0.74 and 0.81 ms; of 1,600 values
# 0.98, 1.77 and 3.48 ms — so two steps at a time at 400 batches (0.41 ms a step), three at
# 100 (0.27 ms), one at 1,600.
_GOLDEN_ROW_VALUES = 2500
_LAW_CACHE = 64  # inputs: 13 fits of the law per accuracy fit, so the last few fits' worth


@lru_cache(maxsize=_LAW_CACHE)
def _fit_noise_scale(
    batch_bytes: bytes, epoch_bytes: bytes, batch_shape: tuple[int, ...], epoch_shape: tuple[int, ...], robust: bool
) -> tuple[float, float] | None:
    """:func:`fit_noise_scale` on its inputs' bytes (hashable, so its answers can be kept)."""
    batches = np.frombuffer(batch_bytes, float).reshape(batch_shape)
    epochs = np.frombuffer(epoch_bytes, float).reshape(epoch_shape)
    logb, loge = np.log(batches), np.log(epochs)
    seen: dict[float, tuple[float, float]] = {}

    def rows(log_bn: np.ndarray) -> np.ndarray:
        return loge[None, :] - np.log1p(batches[None, :] / np.exp(log_bn)[:, None])  # log E_min per batch

    def profile(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not robust:
            a = x.mean(axis=1)
            return a, np.sum((x - a[:, None]) ** 2, axis=1)
        a = _soft_l1_location(x)
        return a, _soft_l1_loss(x, a)

    def profile_once(points: list[float]) -> list[tuple[float, float]]:
        # A golden-section point that lands on an earlier one bit for bit (it does in exact
        # arithmetic, one per step; in floating point now and then) is not profiled again.
        new = [p for p in dict.fromkeys(points) if p not in seen]
        if new:
            a, loss = profile(rows(np.array(new)))
            seen.update(zip(new, zip(a.tolist(), loss.tolist())))
        return [seen[p] for p in points]

    lo, hi = float(logb.min()) - 10.0, float(logb.max()) + 10.0
    grid = np.linspace(lo, hi, 241)
    x = rows(grid)
    # A row's loss is finite exactly where its values are: a value of ±∞ or NaN gets
    # weight 0 and makes 0·∞ = NaN in the weighted sum; finite logs keep every weight in
    # (0, 1] and the loss finite.
    if not np.all(np.isfinite(x)):
        return None
    if robust:
        # Only the grid's argmin is used, and most rows cannot be it: profile the rows
        # whose floor is lowest, then only those whose floor does not exceed the best
        # loss found; the others' losses (never smaller than their floor) stay +∞. The
        # argmin is the same row, with its loss computed by the same operations.
        floor = _soft_l1_floor(x)
        loss = np.full(grid.size, np.inf)
        first = np.argsort(floor, kind="stable")[:4]
        loss[first] = profile(x[first])[1]
        slack = _FLOOR_RELATIVE_SLACK * floor + _FLOOR_ABSOLUTE_SLACK_PER_TERM * x.shape[1]
        rest = np.flatnonzero((floor - slack <= loss.min()) & np.isinf(loss))
        if rest.size:
            loss[rest] = profile(x[rest])[1]
        if not np.all(np.isfinite(loss[first])) or not np.all(np.isfinite(loss[rest])):
            return None  # cannot happen with finite rows; kept as the original guard
    else:
        loss = profile(x)[1]
        if not np.all(np.isfinite(loss)):
            return None
    k = int(np.argmin(loss))
    left, right = float(grid[max(k - 1, 0)]), float(grid[min(k + 1, grid.size - 1)])
    g = (math.sqrt(5) - 1) / 2

    def inner(left: float, right: float) -> tuple[float, float]:
        return right - g * (right - left), left + g * (right - left)

    # Each step's two points are profiled together; a step is a few dozen passes over two
    # rows, where numpy's per-call overhead outweighs the arithmetic. So the points of the
    # next `ahead` steps, along every path the comparisons may take (2^ahead − 1 brackets),
    # are profiled in one call first: the same rows, the same values, fewer calls.
    ahead = max(1, int(math.log2(_GOLDEN_ROW_VALUES / (2 * batches.size) + 1)))
    steps = 40
    while steps:
        brackets, level = [], [(left, right)]
        for _ in range(min(ahead, steps)):
            brackets += level
            level = [side for l_, r_ in level for m1, m2 in [inner(l_, r_)] for side in ((l_, m2), (m1, r_))]
        profile_once([p for l_, r_ in brackets for p in inner(l_, r_)])
        for _ in range(min(ahead, steps)):
            m1, m2 = inner(left, right)
            (_, l1), (_, l2) = profile_once([m1, m2])
            left, right = (left, m2) if l1 <= l2 else (m1, right)
        steps -= min(ahead, steps)
    best = 0.5 * (left + right)
    ((a, _),) = profile_once([best])
    return float(a), float(math.exp(best))


def flag_outliers(batches: np.ndarray, epochs: np.ndarray, b_noise: float) -> np.ndarray:
    """Batches whose ``log E`` is far off the robust law: ``|r| > 3·MAD`` and > 20 %."""
    loge = np.log(epochs)
    base = loge - np.log1p(batches / b_noise)
    r = base - np.median(base)
    mad = 1.4826 * float(np.median(np.abs(r - np.median(r))))
    return (np.abs(r) > _OUTLIER_MAD * max(mad, 0.05)) & (np.abs(r) > _OUTLIER_MIN)


def run_scatter(
    batches: np.ndarray, epochs: np.ndarray, log_sigma: np.ndarray, law: tuple[float, float] | None, *, prior: float = 0.0
) -> float:
    """σ of one run's log epochs about the law beyond what the anchors' own spreads explain.

    With one run per batch the anchors' σ comes from evaluation noise, not from how much
    a rerun (another seed, another day) lands elsewhere; their scatter about the fitted
    law shows it. The residuals ``r_i = log E_i − law(B_i)`` of the anchors (outliers set
    aside) give ``s² = Σ r² / (n − 2)`` (two parameters fitted); the excess over the
    anchors' mean own variance, ``max(s² − mean σ_i², 0)``, is the run-to-run variance,
    pooled with ``prior`` as ``ν₀ = PRIOR_WEIGHT`` pseudo-observations:
    ``(ν₀ prior² + (n − 2) excess) / (ν₀ + n − 2)``. The prior alone with fewer than
    three anchors (or no law).
    """
    b, e, sg = (np.asarray(a, float) for a in (batches, epochs, log_sigma))
    if b.size < 3 or law is None:
        return float(prior)
    r = np.log(e) - law_log_epochs(b, *law)
    dof = b.size - 2
    excess = max(float(np.sum(r * r)) / dof - float(np.mean(sg * sg)), 0.0)
    return math.sqrt((PRIOR_WEIGHT * prior**2 + dof * excess) / (PRIOR_WEIGHT + dof))


def usable_noise_scale(value: float | None) -> float | None:
    """A profile's gradient-noise scale as the law takes it: None (unknown) where it is not a
    positive finite number — ``grad_var = 0`` measures no gradient noise, the law's limit
    ``B_noise → 0``, where epochs grow in proportion to the batch, which is the rule for an
    unknown scale above the measured batches — and at most ``MAX_MAGNITUDE`` samples (a
    larger one says the same: no batch in any cluster comes near it)."""
    if value is None or not math.isfinite(value) or value <= 0.0:
        return None
    return min(float(value), MAX_MAGNITUDE)


def noise_scale_until(
    noise_batch: np.ndarray,
    noise_epoch: np.ndarray,
    b_noise: np.ndarray,
    *,
    batches: np.ndarray,
    epochs_to_target: np.ndarray,
) -> float | None:
    """``B_noise`` for one target: the median of the gradient-noise measurements taken
    before their run reached it (None where no measurement can be placed so).

    The noise scale grows as training progresses (tenfold to ten-thousandfold over a
    Pollux run), and the epochs a larger batch costs are set by the noise while the
    training to *this* target happens: a median over the whole run is mostly a
    late-training value and overstates what a large batch gains on an early target. A
    measurement ``(B_j, e_j, b_j)`` counts where ``B_j`` is a measured batch whose runs
    reach the target, at ``E(B_j)`` epochs (``epochs_to_target``, NaN or ∞ where not
    reached), and ``e_j ≤ E(B_j)``; a batch whose first measurement comes later
    contributes its first ones (those at its earliest epoch: the nearest to the training
    in question). None where no
    measurement sits on a batch that reaches the target — a target beyond the measured
    run's best, whose training would run past the end of every measurement, takes the
    whole run's median (the caller's fallback).

    On the published Pollux curves (six workloads, the model fitted on each reference
    curve with its own measurements, 204 predictions of epochs-to-target at the other
    batches, targets 50–100 % of the way to the weakest batch's best): mean ``|log
    error|`` 0.315 with the whole run's median, 0.241 with this (90th percentile 0.963 →
    0.597); docs/models.md § 2, "Which gradient noise scale".
    """
    nb, ne, bn = (np.asarray(a, float).ravel() for a in (noise_batch, noise_epoch, b_noise))
    bs, et = np.asarray(batches, float).ravel(), np.asarray(epochs_to_target, float).ravel()
    # Sorted by (batch, epoch) once, each batch's measurements are a slice and those before
    # its crossing a prefix of it: O((n + m) log n), whatever the number of batches.
    order = np.lexsort((ne, nb))
    nb, ne, bn = nb[order], ne[order], bn[order]
    kept: list[np.ndarray] = []
    for b, e in zip(bs, et):
        if not math.isfinite(e):
            continue
        lo, hi = int(np.searchsorted(nb, b, "left")), int(np.searchsorted(nb, b, "right"))
        if lo == hi:
            continue
        k = int(np.searchsorted(ne[lo:hi], e, "right"))
        if k == 0:  # every measurement at the earliest epoch (ties: not whichever came first)
            k = int(np.searchsorted(ne[lo:hi], ne[lo], "right"))
        kept.append(bn[lo : lo + k])
    if not kept:
        return None
    return float(np.median(np.concatenate(kept)))


def _interp_loglog(q: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    return np.exp(np.interp(np.log(q), np.log(xs), np.log(ys)))


def _off_neighbours(plateaus: np.ndarray, *, noise: float) -> np.ndarray:
    """Which plateaus (in batch order) sit off both neighbours': a lone dip or spike.

    A plateau that drifts with the batch, however fast, is monotone there and equals the
    running median of three; one off-recipe batch is a local extremum that departs from it
    by its own depth. It is flagged where that depth exceeds ``_OUTLIER_MAD`` robust
    scales of the steps it takes no part in (1.4826 × their median |step|, at least
    ``noise``, the step two plateaus' evaluation noise makes): its own two steps would
    hide it. End batches have one neighbour, so a drop there may be the trend: never flagged.
    """
    fin = np.asarray(plateaus, float)
    flags = np.zeros(fin.size, bool)
    if fin.size < 4:  # an inner plateau needs steps besides its own two to be judged against
        return flags
    steps = np.abs(np.diff(fin))
    j = np.arange(1, fin.size - 1)
    depth = np.abs(fin[j] - np.sort(np.stack([fin[j - 1], fin[j], fin[j + 1]], axis=1), axis=1)[:, 1])
    # The median of the steps other than plateau j's own two (j − 1 and j), read off the
    # steps sorted once: linear after the sort where a median per plateau was quadratic.
    ranked = np.sort(steps)
    rank = np.empty(steps.size, np.int64)
    rank[np.argsort(steps, kind="stable")] = np.arange(steps.size)
    r1, r2 = np.minimum(rank[j - 1], rank[j]), np.maximum(rank[j - 1], rank[j])
    left = steps.size - 2

    def kth_of_others(k: int) -> np.ndarray:
        at = np.full(j.shape, k)
        at = at + (at >= r1)
        return ranked[at + (at >= r2)]

    upper = kth_of_others(left // 2)
    median = (kth_of_others(left // 2 - 1) + upper) / 2 if left % 2 == 0 else upper
    flags[j] = depth > _OUTLIER_MAD * np.maximum(1.4826 * median, noise)
    return flags


def _carried_margin(
    log_query: np.ndarray, log_batches: np.ndarray, *, between: np.ndarray, beyond: np.ndarray
) -> np.ndarray:
    """The reach margin at the query batches: ``between`` interpolated in log batch between
    two measured batches, the end's ``beyond`` past them (one batch: everywhere but at it).

    Between two measured batches both ends bound the plateau; beyond the largest only the
    end's own word does, and np.interp's edge clamp carried the lower bound of a few
    agreeing seeds (``Φ⁻¹`` of their product, 3–4 σ) to every batch past it."""
    if len(log_batches) == 1:
        return np.where(log_query == log_batches[0], between[0], beyond[0])
    inner = np.interp(log_query, log_batches, between)
    return np.where(log_query < log_batches[0], beyond[0], np.where(log_query > log_batches[-1], beyond[-1], inner))


def _nearest_distance(q: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """|log2(q / nearest of xs)| for each query: the two neighbours in sorted log2(xs),
    O((q + n) log n) where a (q, n) table of distances was quadratic in time and memory."""
    if xs.size == 0:
        return np.full(q.shape, np.inf)
    lx, lq = np.sort(np.log2(xs)), np.log2(q)
    i = np.searchsorted(lx, lq)
    below, above = lx[np.maximum(i - 1, 0)], lx[np.minimum(i, lx.size - 1)]
    return np.minimum(np.abs(lq - below), np.abs(lq - above))


# Points of the surface's epoch grid a fit may ask for: the surface is batches × points
# floats (10**6 took 8.4 s and 300 MB, more ran out of memory); 10,000 is 60 times the
# default and finer than any profile's evaluations.
MAX_GRID_SIZE = 10_000

# Values of the surface's (batches, runs, grid) stack built at once: 2**22 floats (32 MiB) is
# thousands of batches at the default grid, and bounds the memory whatever the grid size.
_SURFACE_CELLS = 1 << 22


def _nan_median_over_runs(stack: np.ndarray) -> np.ndarray:
    """``np.nanmedian(stack, axis=1)`` of a (batches, runs, grid) stack without its warning
    on all-NaN columns (they stay NaN): the middle value of the non-NaN ones, or ``(a + b) / 2``
    of the two middle ones — the same operations as nanmedian's."""
    if stack.shape[1] == 1:
        return stack[:, 0, :].copy()
    v = np.sort(stack, axis=1)  # NaN sorts last
    c = np.sum(~np.isnan(stack), axis=1)
    half = (c // 2)[:, None, :]
    upper = np.take_along_axis(v, np.minimum(half, stack.shape[1] - 1), axis=1)[:, 0, :]
    lower = np.take_along_axis(v, np.maximum(half - 1, 0), axis=1)[:, 0, :]
    out = np.where(c % 2 == 0, (lower + upper) / 2, upper)
    return np.where(c > 0, out, np.nan)


# Targets whose anchors a fitted model keeps (least recently used go first): a scheduler
# that keeps models for days asks for new targets without end (an infeasible question's
# relaxation alone asks ~11), and an unbounded cache grew with each and was pickled along.
ANCHOR_CACHE_TARGETS = 64


# -- the estimator ---------------------------------------------------------------------------
class AccuracyModel(EstimatorContract):
    """Epochs-to-target as a distribution, and the monotone best-so-far surface.

    Parameters
    ----------
    goal : ``"max"`` (accuracy-like) or ``"min"`` (loss-like).
    interval : central probability of reported intervals.
    grid_size : points of the geometric epoch grid of the surface.
    batch_monotone : make epochs-to-target non-decreasing in global batch across the
        measured batches (after outliers are set aside) — the law's shape as a prior.
    b_noise : gradient noise scale in samples (from the profile's noise records), used
        where fewer than three measured batches reach a target and ``noise_trace`` places
        no measurement before the target (:func:`noise_scale_until`).
    noise_trace : the gradient-noise measurements themselves, rows ``(global_batch,
        epoch, b_noise)``: where fewer than three measured batches reach a target, the
        law takes the median of those taken before their run reached it
        (:func:`noise_scale_until`), as the noise scale grows with training.
    kappa_beyond_law : the κ prior beyond the measured batches where a law is fitted across
        three or more of them (default :data:`KAPPA_BEYOND_LAW`; ``kappa_beyond`` and its
        shape answer where fewer reach the target and the noise records set the law).
    kappa_beyond, kappa_inside, plateau_walk : priors of the spread (defaults: the
        measured constants of this module); ``plateau_walk`` is one value or a tuple of
        mixture nodes (default :data:`PLATEAU_WALK_NODES`).
    run_scatter : prior σ of a rerun's log epochs about the smooth curve between batches
        (default :data:`RUN_SCATTER`), pooled with the anchors' own scatter
        (:func:`run_scatter`); it widens interpolated predictions.
    kappa_beyond_shape : ``((level, factor), …)`` — κ_beyond's factor by the target's
        level along the anchor's curve (default :data:`KAPPA_BEYOND_SHAPE`; None: one κ
        for every target).
    noise_ratio_prior : ``(mean, sd)`` of ``ln(B_noise / B_anchor)`` where no noise scale is
        known and no law is fitted across batches (default :data:`NOISE_RATIO_PRIOR`): the
        law's shift beyond the anchors is averaged over it and its spread joins σ. None: the
        no-benefit bound instead (E ∝ B above the largest anchor, flat below the smallest).

    Attributes (after ``fit``)
    --------------------------
    batches_ : measured global batches, ascending
    runs_ : list of :class:`Run`
    epoch_grid_, surface_ : the best-so-far surface (score space; NaN past a batch's runs)
    max_epochs_ : last measured epoch of each batch
    curve_start_, curve_plateau_ : median first and final best-so-far score of each batch's runs
    eval_noise_ : evaluation-to-evaluation noise, in metric units
    residual_sigma_ : plateau noise used for the reach probability, in metric units
    metric_range_ : typical rise of the metric over a curve
    noise_levels_, log_noise_scales_ : the law's B_noise fitted at a ladder of score levels
    noise_trace_ : ``noise_trace`` as a checked ``(n, 3)`` array (no rows when None)
    kappa_beyond_, kappa_beyond_law_, kappa_inside_ : the spreads after the profile's own evidence
    plateau_walk_ : the reach spread's mixture nodes after the profile's own evidence (array)
    failed_batches_ : batches whose curves ran long, rose less than half a curve's rise, and end more than half a
        curve's rise below the others'
    plateau_off_ : batches whose plateau sits off both neighbours' (left out of ``plateau_walk_``)
    n_runs_, n_diverged_ : runs seen and runs with a non-finite evaluation
    """

    _fitted_attribute = "runs_"

    def __init__(
        self,
        *,
        goal: str = "max",
        interval: float = 0.9,
        grid_size: int = 160,
        batch_monotone: bool = True,
        b_noise: float | None = None,
        noise_trace: Any = None,
        kappa_beyond: float = KAPPA_BEYOND,
        kappa_beyond_law: float = KAPPA_BEYOND_LAW,
        kappa_inside: float = KAPPA_INSIDE,
        plateau_walk: float | tuple[float, ...] = PLATEAU_WALK_NODES,
        kappa_beyond_shape: tuple[tuple[float, float], ...] | None = KAPPA_BEYOND_SHAPE,
        run_scatter: float = RUN_SCATTER,
        noise_ratio_prior: tuple[float, float] | None = NOISE_RATIO_PRIOR,
    ) -> None:
        self.goal = goal
        self.interval = interval
        self.grid_size = grid_size
        self.batch_monotone = batch_monotone
        self.b_noise = b_noise
        self.noise_trace = noise_trace
        self.kappa_beyond = kappa_beyond
        self.kappa_beyond_law = kappa_beyond_law
        self.kappa_inside = kappa_inside
        self.plateau_walk = plateau_walk
        self.kappa_beyond_shape = kappa_beyond_shape
        self.run_scatter = run_scatter
        self.noise_ratio_prior = noise_ratio_prior

    def _target_score(self, target: float) -> float:
        """A target in score space (higher is better), checked like a request's ``target``."""
        return float(self._score(number(target, where="target")))

    def _score(self, metric: np.ndarray | float) -> np.ndarray:
        m = np.asarray(metric, float)
        # The goal fitted with, not the parameter: set_params(goal=...) on a fitted model
        # would flip the sign of every target against the surface learnt.
        return m if self.goal_ == "max" else -m

    # -- fitting ------------------------------------------------------------------------
    def fit(
        self,
        global_batch: np.ndarray,
        epoch: np.ndarray,
        metric: np.ndarray,
        seed: np.ndarray | None = None,
    ) -> "AccuracyModel":
        """Fit to evaluation records: one (global batch, epoch, metric, seed) per evaluation.

        A non-finite metric is a diverged evaluation (counted, not an error). Every
        parameter and value is checked before anything is learned, and a fit that fails
        leaves the model as it was.
        """
        return self._fit_fresh(global_batch, epoch, metric, seed)

    def _check_params(self) -> None:
        where = type(self).__name__
        if self.goal not in ("max", "min"):
            raise BadValue(f"must be 'max' or 'min', got {excerpt(self.goal)}", where=f"{where}.goal")
        interval(self.interval, where=f"{where}.interval")
        integer(self.grid_size, where=f"{where}.grid_size", ge=2, le=MAX_GRID_SIZE)
        if not _is_bool(self.batch_monotone):
            raise BadValue(f"must be true or false, got {excerpt(self.batch_monotone)}", where=f"{where}.batch_monotone")
        if self.b_noise is not None:
            number(self.b_noise, where=f"{where}.b_noise", gt=0.0)
        self._noise_rows(where=f"{where}.noise_trace")
        for name in ("kappa_beyond", "kappa_beyond_law", "kappa_inside", "run_scatter"):
            number(getattr(self, name), where=f"{where}.{name}", ge=0.0)
        nodes = np.atleast_1d(np.asarray(self.plateau_walk, dtype=object)).ravel()
        if nodes.size == 0:  # no mixture node: the reach probability would average nothing (NaN)
            raise BadValue(f"must be one number >= 0 or a tuple of at least one, got {excerpt(self.plateau_walk)}",
                           where=f"{where}.plateau_walk")
        for t in nodes:
            number(t, where=f"{where}.plateau_walk", ge=0.0)
        if self.kappa_beyond_shape is not None:
            self._check_kappa_shape(where=f"{where}.kappa_beyond_shape")
        self._check_ratio_prior(where=f"{where}.noise_ratio_prior")

    def _check_ratio_prior(self, *, where: str) -> tuple[float, float] | None:
        """``noise_ratio_prior``: None or ``(mean, sd)`` of ``ln(B_noise / B_anchor)``,
        both finite, ``sd >= 0``."""
        prior = self.noise_ratio_prior
        if prior is None:
            return None
        if isinstance(prior, (str, bytes, dict)) or not hasattr(prior, "__len__") or len(prior) != 2:
            raise BadValue(f"must be None or a (mean, sd) pair of ln(B_noise / batch), got {excerpt(prior)}", where=where)
        return (number(prior[0], where=where, what="a finite mean"), number(prior[1], where=where, ge=0.0, what="a finite sd"))

    def _check_kappa_shape(self, *, where: str) -> None:
        """``kappa_beyond_shape``: (level, factor) pairs, levels finite and ascending (they are
        interpolated between), factors finite and >= 0 (they multiply a spread)."""
        shape = self.kappa_beyond_shape
        want = "None or a tuple of at least one (level, factor) pair"
        if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__") or len(shape) == 0:
            raise BadValue(f"must be {want}, got {excerpt(shape)}", where=where)
        levels: list[float] = []
        for pair in shape:
            if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
                raise BadValue(f"each entry must be a (level, factor) pair, got {excerpt(pair)}", where=where)
            levels.append(number(pair[0], where=where, what="a finite level"))
            number(pair[1], where=where, ge=0.0, what="a finite factor")
        if any(b <= a for a, b in zip(levels, levels[1:])):
            raise BadValue(f"levels must be strictly ascending, got {', '.join(f'{v:g}' for v in levels)}: sort the pairs by level",
                           where=where)

    def _noise_rows(self, *, where: str) -> np.ndarray:
        """``noise_trace`` as an ``(n, 3)`` float array: rows of a positive global batch, an
        epoch >= 0 and a positive noise scale, all finite."""
        trace = self.noise_trace
        if trace is None:
            return np.empty((0, 3))
        want = "None or rows of (global_batch, epoch, b_noise)"
        if isinstance(trace, (str, bytes, dict)):
            raise BadValue(f"must be {want}, got {excerpt(trace)}", where=where)
        try:
            rows = np.array(trace, dtype=float)
        except (TypeError, ValueError):
            raise BadValue(f"must be {want}, numbers only, got {excerpt(trace)}", where=where) from None
        if rows.size == 0:
            return np.empty((0, 3))
        if rows.ndim != 2 or rows.shape[1] != 3:
            raise BadValue(f"must be {want}, got an array of shape {rows.shape}", where=where)
        for j, (name, low) in enumerate((("global_batch", "> 0"), ("epoch", ">= 0"), ("b_noise", "> 0"))):
            col = rows[:, j]
            bad = ~np.isfinite(col) | ((col < 0) if low == ">= 0" else (col <= 0))
            if np.any(bad):
                i = int(np.flatnonzero(bad)[0])
                raise BadValue(f"row {i}: {name} must be finite and {low}, got {col[i]!r}", where=where)
        return rows

    def _fit(self, global_batch: Any, epoch: Any, metric: Any, seed: Any) -> None:
        self._check_params()
        self.noise_trace_ = self._noise_rows(where=f"{type(self).__name__}.noise_trace")
        # What predictions read, fixed at fit: set_params on a fitted model changes the next
        # fit, not the answers of this one.
        self.goal_ = self.goal
        self.interval_ = interval(self.interval, where=f"{type(self).__name__}.interval")
        self.batch_monotone_ = bool(self.batch_monotone)
        self.run_scatter_ = float(self.run_scatter)
        self.kappa_beyond_shape_ = self.kappa_beyond_shape
        self.noise_ratio_prior_ = self._check_ratio_prior(where=f"{type(self).__name__}.noise_ratio_prior")
        global_batch = as_column(global_batch, where="global_batch", gt=0.0).ravel()
        epoch = as_column(epoch, where="epoch", ge=0.0).ravel()
        score = self._score(as_column(metric, where="metric", finite=False).ravel())
        raw_seed = None if seed is None else np.asarray(seed)
        if raw_seed is None:
            seed = np.zeros(global_batch.shape, np.int64)
        elif raw_seed.dtype.kind in "iu":  # integers as they are: through float, seeds above 2**53 would merge
            seed = raw_seed.astype(np.int64).ravel()
        else:
            seed = as_column(raw_seed, where="seed", whole=True).ravel().astype(np.int64)
        if len({global_batch.size, epoch.size, score.size, seed.size}) > 1:
            raise BadValue(
                f"global_batch, epoch, metric and seed must be one value per evaluation, got "
                f"{global_batch.size}, {epoch.size}, {score.size} and {seed.size} values"
            )
        if global_batch.size == 0:
            raise ModelError(
                "the profile has no eval records, so accuracy cannot be predicted: "
                "import the learning curve of a run you have (cotune import FORMAT LOG --out PROFILE --append), "
                "record curves (cotune profile --curves ...) or add eval records"
            )
        keep = epoch > 0
        if not np.any(keep & np.isfinite(score)):
            raise ModelError("every eval record has epoch 0 or a non-finite metric: nothing to fit")
        runs = runs_from_evals(global_batch, epoch, score, seed)
        if not runs:
            raise ModelError("no run has a finite metric: every learning curve diverged")
        self.runs_ = runs
        self.n_runs_ = len(runs)
        _, group = np.unique(np.column_stack([global_batch[keep], seed[keep]]), axis=0, return_inverse=True)
        self.n_diverged_ = int(np.count_nonzero(np.bincount(group.ravel(), weights=~np.isfinite(score[keep]))))
        self.batches_, self._by_batch = runs_by_batch(runs)
        self.eval_noise_ = _eval_noise(global_batch, epoch, score, seed)
        rises = [float(r.best[-1] - r.best[0]) for r in runs]
        finite = score[np.isfinite(score)]
        span = float(finite.max() - finite.min())
        # The floors below guard divisions, not the data: relative to the metric's own
        # span, so the same curves in other units (a loss in nats or in 1e-12 nats) read
        # the same chances. A constant metric has no span: its magnitude, else 1.
        units = span or float(np.abs(finite).max()) or 1.0
        self.metric_range_ = max(float(np.median(rises)), 1e-12 * units)
        # Curves too short to see their own noise: 1 % of the observed metric range.
        floor = 0.01 * span if self.eval_noise_ == 0 else 0.0
        self.residual_sigma_ = max(self.eval_noise_, floor, 1e-9 * units)
        table = self._table = run_table(runs, eval_noise=self.eval_noise_, plateau_floor=self.residual_sigma_)
        n = len(self.batches_)
        self.max_epochs_ = table.horizon
        self.curve_start_ = segment_median(table.best[table.starts[:-1]], table.run_batch, n)
        self.curve_plateau_ = segment_median(table.plateau, table.run_batch, n)
        long = self.max_epochs_ >= _CENSOR_FRACTION * float(self.max_epochs_.max())
        consensus = float(np.median(self.curve_plateau_[long]))
        # A batch whose curves ran as long as the others' yet end more than half a curve's
        # rise below their median plateau, having themselves risen less than half a curve's
        # rise, failed (stuck at chance, off-recipe from the start): it answers for itself
        # but says nothing about how plateaus drift between batches, and no reference target
        # should be set by it. A curve that learnt and levelled off low is evidence: the
        # plateau falling at the largest batches is the generalisation gap, not a fault
        # (flagged, it stopped bounding the batches beyond it, whose chance rose 15-fold).
        shortfall = _FAILED_SHORTFALL * self.metric_range_
        barely_rose = (self.curve_plateau_ - self.curve_start_) < shortfall
        self.failed_batches_ = self.batches_[long & barely_rose & (self.curve_plateau_ < consensus - shortfall)]
        self._fit_surface()
        self._fit_law_ladder()
        self._fit_spreads()
        self._cache: OrderedDict[float, tuple] = OrderedDict()

    def __getstate__(self) -> dict[str, Any]:
        # The anchor cache is recomputed on demand: a pickle (the fit cache, a scheduler's
        # store) carries the fit, not the targets asked of it since.
        state = self.__dict__.copy()
        state.pop("_cache", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("noise_trace", None)  # pickled before the parameters existed
        self.__dict__.setdefault("kappa_beyond_law", KAPPA_BEYOND_LAW)
        self.__dict__.setdefault("noise_ratio_prior", NOISE_RATIO_PRIOR)
        if hasattr(self, "runs_"):
            self._cache = OrderedDict()
            self._restore_fitted_copies()

    def _restore_fitted_copies(self) -> None:
        """A model pickled before predictions read fitted copies of its parameters (same
        version 0.1.0) predicted from the parameters themselves: copying them now is exactly
        its old behaviour, where a missing copy was an AttributeError on the first predict."""
        fitted = self.__dict__
        fitted.setdefault("goal_", self.goal)
        fitted.setdefault("interval_", float(self.interval))
        fitted.setdefault("batch_monotone_", bool(self.batch_monotone))
        fitted.setdefault("run_scatter_", float(self.run_scatter))
        fitted.setdefault("kappa_beyond_shape_", self.kappa_beyond_shape)
        fitted.setdefault("noise_trace_", np.empty((0, 3)))  # before the trace, the whole run's scale alone
        fitted.setdefault("kappa_beyond_law_", None)  # before it, κ_beyond and its shape answered beyond a fitted law too
        fitted.setdefault("noise_ratio_prior_", None)  # before it, E ∝ B beyond the anchors without a noise scale

    def _fit_surface(self) -> None:
        """The paper's isotonic surface over (batch, epochs), for :meth:`metric_at`.

        Each batch's row is the median over its runs of their best-so-far curves on a
        geometric epoch grid, made non-decreasing (weighted by how many runs each point
        has). Batches with the same number of runs are stacked and done together; only the
        monotone fit goes batch by batch.
        """
        table = self._table
        first = table.epochs[table.starts[:-1]]
        lo, hi = float(first.min()), float(table.last.max())
        grid = np.geomspace(lo, hi, self.grid_size) if hi > lo else np.array([lo])
        width = grid.size
        surface = np.full((len(self.batches_), width), np.nan)
        counts = np.diff(table.run_starts)
        for size in np.unique(counts).tolist():
            # At most _SURFACE_CELLS values of the (batches, runs, grid) stack at once: by
            # batches, and by columns where one batch's runs alone are more.
            per_batch = size * width
            batch_step = max(1, _SURFACE_CELLS // per_batch)
            col_step = width if per_batch <= _SURFACE_CELLS else max(1, _SURFACE_CELLS // size)
            of_size = np.flatnonzero(counts == size)
            for chunk in (of_size[i : i + batch_step] for i in range(0, of_size.size, batch_step)):
                run = table.run_starts[chunk][:, None] + np.arange(size)[None, :]
                med = np.empty((chunk.size, width))
                cnt = np.empty((chunk.size, width))
                for c0 in range(0, width, col_step):
                    cols = slice(c0, c0 + col_step)
                    stack = self._surface_rows(run, grid[cols])
                    cnt[:, cols] = np.sum(np.isfinite(stack), axis=1)
                    valid = grid[None, cols] <= self.max_epochs_[chunk][:, None] + 1e-9
                    med[:, cols] = _nan_median_over_runs(np.where(valid[:, None, :], stack, np.nan))
                for row, i in enumerate(chunk.tolist()):
                    surface[i] = self._monotone_row(med[row], cnt[row], i, grid)
        self.epoch_grid_ = grid
        self.surface_ = surface

    def _surface_rows(self, run: np.ndarray, grid: np.ndarray) -> np.ndarray:
        """Each run's best-so-far on ``grid`` (``run``: (batches, runs) indices into the run
        table), as a (batches, runs, grid) stack: NaN before its first evaluation."""
        table = self._table
        flat = run.ravel()
        rows = np.full((flat.size, grid.size), np.nan)
        first = table.epochs[table.starts[flat]]
        inside = (grid[None, :] >= first[:, None] - 1e-9) & (grid[None, :] <= table.last[flat][:, None] + 1e-9)
        r_in, c_in = np.nonzero(inside)
        rows[r_in, c_in] = interp_segments(grid[c_in], flat[r_in], table.starts, table.epochs, table.best)
        # Past its end a run keeps its best (a lower bound): runs that stop once they reach
        # the target must not leave only the slow ones in the median.
        past = grid[None, :] > table.last[flat][:, None] + 1e-9
        rows[past] = np.broadcast_to(table.plateau[flat][:, None], rows.shape)[past]
        return rows.reshape(run.shape + (grid.size,))

    def _monotone_row(self, med: np.ndarray, cnt: np.ndarray, i: int, grid: np.ndarray) -> np.ndarray:
        """Batch ``i``'s surface row from its runs' median row ``med`` and run counts ``cnt``."""
        med = med.copy()
        if not np.isfinite(med).any():
            # Runs with one evaluation between two grid points (or all ending there) fall in
            # no column: keep their best from the next column on, the same lower bound a run
            # keeps past its end, so every batch has a row.
            after = int(np.searchsorted(grid, self.max_epochs_[i] - 1e-9))
            med[min(after, grid.size - 1)] = self.curve_plateau_[i]
        row = np.full(grid.shape, np.nan)
        ok = np.isfinite(med)
        k = int(np.count_nonzero(ok))
        if k == 1:
            row[ok] = med[ok]
        elif k:
            # What isotonic_grid does on one line — the same compiled PAVA on the same values,
            # weights and zero lift — without its input checks, which cost ten times the fit
            # when repeated per batch of a pooled profile.
            row[ok] = _pava_batch(med[ok], cnt[ok], np.zeros(k), True)
        return row

    def _evidence(self, threshold: float) -> BatchEvidence:
        return evidence_at(self._run_table(), threshold)

    def _run_table(self) -> RunTable:
        """The runs as flat arrays, read once per fit (a model pickled without it builds it on
        first use; two threads that both build it build the same table)."""
        table = self.__dict__.get("_table")
        if table is None:
            table = run_table(self.runs_, eval_noise=self.eval_noise_, plateau_floor=self.residual_sigma_)
            self._table = table
        return table

    def _fit_law_ladder(self) -> None:
        """``B_noise`` of the law at a ladder of score levels, fitted once here."""
        finals = np.array([max(float(r.best[-1]) for r in rs) for rs in self._by_batch])
        firsts = np.array([min(float(r.best[0]) for r in rs) for rs in self._by_batch])
        levels, log_bn = [], []
        if len(self.batches_) >= 3:
            top = float(np.sort(finals)[-3])  # the highest level three batches reach
            start = float(np.median(firsts))
            for f in np.linspace(0.5, 1.0, 11):
                level = start + f * (top - start)
                ev = self._evidence(level)
                ok = np.isfinite(ev.epochs)
                if np.count_nonzero(ok) < 3:
                    continue
                fit = fit_noise_scale(ev.batches[ok], ev.epochs[ok])
                if fit is not None:
                    levels.append(level)
                    log_bn.append(math.log(fit[1]))
        self.noise_levels_ = np.array(levels)
        self.log_noise_scales_ = np.array(log_bn)
        self.b_noise_ = self.b_noise

    def noise_scale(self, target: float) -> float | None:
        """``B_noise`` of the critical-batch law at this target (None if unknown): fitted
        across the measured batches where three reach it (the ladder), else the gradient-noise
        measurements taken before their run reached it (:func:`noise_scale_until`), else the
        whole run's (``b_noise``)."""
        self._check_fitted()
        return self._noise_at(self._target_score(target))

    def _noise_at(self, t: float, ev: BatchEvidence | None = None) -> float | None:
        """:meth:`noise_scale` at score ``t`` (``ev``: the batch evidence at ``t`` where the
        caller has it)."""
        if self.noise_levels_.size:
            return float(math.exp(np.interp(t, self.noise_levels_, self.log_noise_scales_)))
        trace = self.noise_trace_
        if len(trace):
            ev = self._evidence(t) if ev is None else ev
            matched = noise_scale_until(trace[:, 0], trace[:, 1], trace[:, 2], batches=ev.batches,
                                        epochs_to_target=ev.epochs)
            if matched is not None:
                return min(matched, MAX_MAGNITUDE)
        return self.b_noise

    def _fit_spreads(self) -> None:
        """Update the κ and τ priors with the profile's own leave-one-batch-out errors."""
        k_in, k_out, k_law = [], [], []  # k_out: over the shape's factor at the error's level
        walk = []
        if len(self.batches_) >= 3 and self.noise_levels_.size:
            level = float(np.median(self.noise_levels_))
            ev = self._evidence(level)
            ok = np.flatnonzero(np.isfinite(ev.epochs))
            bn = self._noise_at(level, ev)
            # The errors are those of the predictions the model makes, so a batch flag_outliers
            # sets aside predicts nothing (it anchors nothing, see _anchors): its neighbour's
            # error predicted from it is no error the model makes. Its own error predicted
            # from the anchors is one, though — an unmeasured batch is as likely off-recipe as
            # a measured one — so it still counts (below); left out, intervals between batches
            # covered 75 % where a third of the batches were off-recipe (80 % with it).
            outliers = np.array([], int)
            if ok.size >= 3 and bn is not None:
                flagged = flag_outliers(ev.batches[ok], ev.epochs[ok], bn)
                outliers, ok = ok[flagged], ok[~flagged]
            b, e = ev.batches[ok], ev.epochs[ok]
            law = fit_noise_scale(b, e) if b.size >= 3 else None
            s_run = run_scatter(b, e, ev.log_sigma[ok], law, prior=self.run_scatter)

            def per_doubling(err: float, c: float, d: float) -> float:
                # The part of a left-out batch's error the run-to-run scatter does not explain,
                # spread over no less than _KAPPA_MIN_DOUBLINGS: nearer, it is scatter, not growth.
                return math.sqrt(max(err * err - c * s_run * s_run, 0.0)) / max(d, _KAPPA_MIN_DOUBLINGS)

            for j in range(len(b)):
                if 0 < j < len(b) - 1:
                    # Left out, an inner anchor is predicted from its two neighbours (b is
                    # sorted: no other anchor is nearer or brackets it), so nothing here reads
                    # all the anchors per batch — that made the fit quadratic in the batches.
                    side = np.array([j - 1, j + 1])
                    d = float(np.min(np.abs(np.log2(b[j] / b[side]))))
                    pred = float(_interp_loglog(np.array([b[j]]), b[side], e[side])[0])
                    lo, hi = math.log2(b[j] / b[j - 1]), math.log2(b[j + 1] / b[j])
                    w = hi / (lo + hi)
                    k_in.append(per_doubling(abs(math.log(pred / e[j])), 1 + w * w + (1 - w) ** 2, d))
                elif len(b) >= 3 and bn is not None:
                    rest = np.delete(np.arange(len(b)), j)  # an end anchor: two of them
                    d = float(np.min(np.abs(np.log2(b[j] / b[rest]))))
                    near = rest[np.argmin(np.abs(np.log(b[rest] / b[j])))]
                    pred = e[near] * (1 + b[j] / bn) / (1 + b[near] / bn)
                    k_law.append(per_doubling(abs(math.log(pred / e[j])), 1.0, d))
                    k_out.append(k_law[-1] / float(self._shape_at(level, np.array([b[near]]))[0]))
            # An outlier between two anchors, predicted from them as an unmeasured batch there
            # would be (d: to the nearer anchor, as in _log_epochs). Beyond the anchors
            # κ_beyond answers, and an outlier there predicts nothing.
            between = [int(o) for o in outliers if b.size >= 2 and b[0] < float(ev.batches[o]) < b[-1]]
            if between:
                bos = ev.batches[between]
                preds = _interp_loglog(bos, b, e)  # one pass for all of them
                for bo, eo, j, pred in zip(bos.tolist(), ev.epochs[between].tolist(), np.searchsorted(b, bos).tolist(),
                                           preds.tolist()):
                    lo, hi = math.log2(bo / b[j - 1]), math.log2(b[j] / bo)
                    w = hi / (lo + hi)
                    k_in.append(per_doubling(abs(math.log(pred / eo)), 1 + w * w + (1 - w) ** 2, min(lo, hi)))
        long = self.max_epochs_ >= _CENSOR_FRACTION * float(self.max_epochs_.max())
        long &= ~np.isin(self.batches_, self.failed_batches_)
        bs, fin = self.batches_[long], self.curve_plateau_[long]  # batches_ is sorted
        off = _off_neighbours(fin, noise=math.sqrt(2.0) * self.residual_sigma_)
        self.plateau_off_ = bs[off]
        bs, fin = bs[~off], fin[~off]
        for i in range(1, bs.size):
            walk.append(abs(float(fin[i] - fin[i - 1])) / self.metric_range_ / math.log2(bs[i] / bs[i - 1]))
        z = z_for(0.9)

        def pooled(prior: float, own: list[float], calibrate: bool) -> float:
            if not own:
                return prior
            # Own errors are |e|/d samples; their 90 % quantile over z is a σ estimate.
            own_sigma = float(np.quantile(own, 0.9)) / z if calibrate else float(np.sqrt(np.mean(np.square(own))))
            n = len(own)
            return math.sqrt((PRIOR_WEIGHT * prior**2 + n * own_sigma**2) / (PRIOR_WEIGHT + n))

        self.kappa_inside_ = pooled(self.kappa_inside, k_in, True)
        # The own errors beyond update both: κ_beyond_law as they are, κ_beyond (whose shape
        # multiplies it at a target's level) over the shape's factor at theirs.
        self.kappa_beyond_ = pooled(self.kappa_beyond, k_out, True)
        self.kappa_beyond_law_ = pooled(self.kappa_beyond_law, k_law, True)
        nodes = np.atleast_1d(np.asarray(self.plateau_walk, float))
        self.plateau_walk_ = np.array([pooled(float(t), walk, False) for t in nodes])

    def _check_fitted(self) -> None:
        if not hasattr(self, "runs_"):
            raise ModelError("AccuracyModel is not fitted: call fit() first")

    # -- epochs to target ------------------------------------------------------------
    def measured_epochs(self, target: float) -> dict[str, np.ndarray]:
        """Epochs to ``target`` (median, interval ends, reach probability) at each measured batch."""
        self._check_fitted()
        ev = self._evidence(self._target_score(target))
        z = z_for(self.interval_)
        e = np.where(np.isfinite(ev.epochs) & (ev.p_reach >= 0.5), ev.epochs, np.inf)
        lo = np.where(np.isfinite(ev.epochs), ev.epochs * np.exp(-z * ev.log_sigma), np.inf)
        up = np.where(np.isfinite(ev.epochs), ev.epochs * np.exp(z * ev.log_sigma), np.inf)
        return {"batches": ev.batches, "epochs": e, "lower": lo, "upper": up, "p_reach": ev.p_reach}

    def outlier_batches(self, target: float) -> np.ndarray:
        """Measured batches whose epochs to ``target`` disagree with the robust law (set aside as anchors)."""
        self._check_fitted()
        return self._anchors(self._target_score(target))[3]

    def _anchors(self, t: float) -> tuple:
        # One fitted model answers several threads at once (the service): another thread's
        # eviction may take ``t`` between any two steps here, so read once and never assume.
        hit = self._cache.get(t)
        if hit is not None:
            with contextlib.suppress(KeyError):
                self._cache.move_to_end(t)
            return hit
        ev = self._evidence(t)
        reached = np.isfinite(ev.epochs)
        bn = self._noise_at(t, ev)
        flags = np.zeros(len(ev.batches), bool)
        if np.count_nonzero(reached) >= 3 and bn is not None:
            flags[reached] = flag_outliers(ev.batches[reached], ev.epochs[reached], bn)
        use = reached & ~flags
        ab, ae, asg = ev.batches[use], ev.epochs[use], ev.log_sigma[use]
        measured, own_sigma = ae, asg
        if self.batch_monotone_ and ab.size >= 2:
            # Epochs non-decreasing in batch: weighted isotonic fit of log E over the anchors.
            ae = np.exp(pava(np.log(ae), 1.0 / np.maximum(asg, _SIGMA_FLOOR) ** 2))
            # Pooling moves an anchor off its own runs; the pooled value is uncertain by at
            # least how far the data disagree with it (σ kept at the evaluation noise, the
            # interval at a measured DeepSpeech2 batch excluded the measured run: 36.4 epochs
            # against 90 % [31.3, 33.4]).
            asg = np.hypot(asg, np.log(measured) - np.log(ae))
        law = None
        if ab.size >= 3:
            # The law at this very target (cached per target): B_noise grows as training
            # progresses, so the fit-time ladder only serves where too few batches reach.
            law = fit_noise_scale(ab, ae)
        scatter = run_scatter(ab, measured, own_sigma, law, prior=self.run_scatter_)
        out = (ev, ab, ae, ev.batches[flags], asg, bn, law, scatter)
        self._cache[t] = out
        while len(self._cache) > ANCHOR_CACHE_TARGETS:
            with contextlib.suppress(KeyError):  # emptied by another thread's eviction meanwhile
                self._cache.popitem(last=False)
        return out

    def anchor_batches(self, target: float) -> np.ndarray:
        """The measured batches the prediction at ``target`` is pinned to (they reach it
        and agree with the law); empty when no measured batch reaches it."""
        self._check_fitted()
        return np.asarray(self._anchors(self._target_score(target))[1], float).copy()

    def scatter_at(self, target: float) -> float:
        """The run-to-run σ of log epochs used between measured batches at ``target``."""
        self._check_fitted()
        return float(self._anchors(self._target_score(target))[-1])

    def epochs_to_target(self, global_batch: np.ndarray, target: float) -> EpochsPrediction:
        """The distribution of epochs until the metric first reaches ``target`` at each global batch."""
        self._check_fitted()
        gb = as_column(global_batch, where="global_batch", gt=0.0)
        shape = gb.shape
        q = gb.ravel()
        t = self._target_score(target)
        ev, ab, ae, outliers, asg, bn, law, scatter = self._anchors(t)
        mu, sig = self._log_epochs(q, t, ev, ab, ae, asg, bn, law, scatter)
        p = self._p_reach(q, ev)
        z = z_for(self.interval_)
        med = np.exp(mu)
        point = np.where(p >= 0.5, med, np.inf)
        extrap = (q < self.batches_[0]) | (q > self.batches_[-1])
        dist = _nearest_distance(q, ev.batches)
        r = lambda a: a.reshape(shape)  # noqa: E731
        return EpochsPrediction(
            epochs=r(point),
            lower=r(med * np.exp(-z * sig)),
            upper=r(med * np.exp(z * sig)),
            extrapolated=r(extrap),
            epochs_if_reached=r(med),
            log_sigma=r(sig),
            p_reach=r(p),
            distance_doublings=r(dist),
        )

    def _shape_at(self, t: float, anchors: np.ndarray) -> np.ndarray:
        """κ_beyond's factor for target score ``t`` carried from each of ``anchors``."""
        i = np.searchsorted(self.batches_, anchors)
        return kappa_shape(target_level(t, self.curve_start_[i], self.curve_plateau_[i]), self.kappa_beyond_shape_)

    def _log_epochs(self, q, t, ev, ab, ae, asg, bn, law, scatter=0.0) -> tuple[np.ndarray, np.ndarray]:
        """μ and σ of log epochs given the target is reached; ``scatter`` is the run-to-run
        σ (:func:`run_scatter`): a new run lands that far off the smooth curve, and an
        interpolation inherits it from both anchors, ``(1 + w² + (1 − w)²)·scatter²``. A
        measured batch whose runs spread (two or more reached) keeps that spread, a new
        run's; one measured by a single run takes the same formula's limit there, ``2·scatter²``
        (the new run's and the one run's own: its σ is evaluation noise, how well the crossing
        is read, not where a rerun lands)."""
        n = q.size
        mu = np.empty(n)
        sig = np.empty(n)
        if ab.size == 0:
            # No measured batch reaches the target: if it is reached at all, it is late —
            # at the end of the nearest batch's horizon, scaled by the law.
            near = np.argmin(np.abs(np.log(q)[:, None] - np.log(ev.batches)[None, :]), axis=1)
            hb, he = ev.batches[near], ev.horizon[near]
            d = np.abs(np.log2(q / hb))
            kappa = self.kappa_beyond_ * self._shape_at(t, hb)
            if bn:
                return np.log(he * ((1 + q / bn) / (1 + hb / bn))), np.sqrt(0.3**2 + (kappa * d) ** 2)
            shift, var = self._shift_without_noise(q, hb)
            return np.log(he) + shift, np.sqrt(0.3**2 + (kappa * d) ** 2 + var)
        lab, lae = np.log(ab), np.log(ae)
        lq = np.log(q)
        inside = (q >= ab[0]) & (q <= ab[-1])
        # The run-to-run share at a measured batch (the interpolation's at distance 0): a
        # single run's crossing says where that run landed, and a new run lands elsewhere —
        # with no such term a measured batch's 90 % interval covered a new run 43 % of the
        # time on seeded truth whose runs scatter by the prior's 0.049.
        at_measured = np.where(ev.n_reached[np.searchsorted(ev.batches, ab)] == 1, 2.0, 0.0)
        # Inside the anchors: log-log interpolation; σ from the two neighbours.
        if ab.size >= 2:
            mu[inside] = np.interp(lq[inside], lab, lae)
            j = np.clip(np.searchsorted(lab, lq[inside]), 1, ab.size - 1)
            d_lo, d_hi = (lq[inside] - lab[j - 1]) / math.log(2), (lab[j] - lq[inside]) / math.log(2)
            w = np.where(d_lo + d_hi > 0, d_hi / np.maximum(d_lo + d_hi, 1e-12), 1.0)
            s_anchor = w * asg[j - 1] + (1 - w) * asg[j]
            d = np.minimum(d_lo, d_hi)
            # A measured batch answers with its own runs; elsewhere a rerun lands off the
            # smooth curve by the run-to-run scatter, inherited from both anchors too.
            at = np.where(d_lo <= d_hi, at_measured[j - 1], at_measured[j])
            off = np.where(d > 1e-9, 1 + w**2 + (1 - w) ** 2, at)
            sig[inside] = np.sqrt(s_anchor**2 + (self.kappa_inside_ * d) ** 2 + off * scatter**2)
        else:
            mu[inside], sig[inside] = lae[0], math.sqrt(asg[0] ** 2 + at_measured[0] * scatter**2)
        out = ~inside
        if np.any(out):
            qo = q[out]
            below = qo < ab[0]
            k = np.where(below, 0, ab.size - 1)
            d = np.abs(np.log2(qo / ab[k]))
            var = np.zeros(qo.shape)
            if law is not None:
                m = law_log_epochs(qo, *law)
            elif bn is not None:
                m = lae[k] + np.log1p(qo / bn) - np.log1p(ab[k] / bn)
            else:
                shift, var = self._shift_without_noise(qo, ab[k])
                m = lae[k] + shift
            mu[out] = m
            if law is not None and self.kappa_beyond_law_ is not None:
                kappa = np.full(qo.shape, self.kappa_beyond_law_)
            else:
                kappa = self.kappa_beyond_ * self._shape_at(t, ab[k])
            # Never surer than the measured batch next to it (a batch measured by one run
            # carries 2·scatter² there): the floor keeps σ continuous at the end anchors,
            # where 1·scatter² read [81.1, 120.8] epochs just past a batch of [71.1, 124.6].
            at_anchor = np.sqrt(asg[k] ** 2 + at_measured[k] * scatter**2)
            sig[out] = np.maximum(np.sqrt(asg[k] ** 2 + (kappa * d) ** 2 + scatter**2 + var), at_anchor)
        # Measured outliers answer for themselves, with their disagreement as spread. Only
        # the measured batches asked about are visited: a loop over every measured batch,
        # each compared with every query, was quadratic in a pooled profile's batches.
        at = np.minimum(np.searchsorted(ev.batches, q), ev.batches.size - 1)
        own = (ev.batches[at] == q) & np.isfinite(ev.epochs[at]) & ~np.isin(ev.batches[at], ab)
        if np.any(own):
            own_mu, own_sig = {}, {}
            for i in np.unique(at[own]).tolist():
                b, e, s = float(ev.batches[i]), float(ev.epochs[i]), float(ev.log_sigma[i])
                own_mu[i] = math.log(e)
                own_sig[i] = math.hypot(s, abs(math.log(e) - float(np.interp(math.log(b), lab, lae))))
            mu[own] = [own_mu[i] for i in at[own].tolist()]
            sig[own] = [own_sig[i] for i in at[own].tolist()]
        return mu, np.minimum(sig, _SIGMA_CAP)

    def _shift_without_noise(self, q: np.ndarray, anchor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The law's log-epoch shift from ``anchor`` to ``q`` and its variance where neither a
        law across batches nor a noise scale is known: averaged over :data:`NOISE_RATIO_PRIOR`
        (:func:`noise_prior_shift`); a model fitted before that prior existed keeps its rule —
        no worse than the smallest measured batch below, a fixed number of steps (E ∝ B, the
        law's no-benefit bound) above, with no variance of its own."""
        prior = self.noise_ratio_prior_
        if prior is None:
            return np.maximum(np.log(q / anchor), 0.0), np.zeros(q.shape)
        return noise_prior_shift(q, anchor, mean=prior[0], sd=prior[1])

    def _p_reach(self, q: np.ndarray, ev: BatchEvidence) -> np.ndarray:
        """Probability that the target is reached at all, from the measured margins.

        Censored batches (short curves still rising at their end) carry no margin: their
        best is a lower bound on their plateau, so the others answer for them, unless
        every batch is censored; between batches the interpolation with them in may only
        raise the answer (the larger of the two is kept). At a measured batch its own
        ``p_reach`` answers; at a censored one, the larger of its own and the others' (it
        has got at least that far, and a curve still rising need not stop below where the
        others go). Failed batches
        and lone plateau dips or spikes (``failed_batches_``, ``plateau_off_``) answer only
        at their own batch. Between two measured batches the margin interpolated is
        ``ev.margin``; beyond the smallest and the largest it is ``ev.margin_beyond``,
        whose lower bound is no surer than the count of runs that reached
        (:class:`BatchEvidence`).
        """
        censored = ev.censored if ev.censored is not None else np.zeros(len(ev.batches), bool)
        use = ~censored if not np.all(censored) else np.ones(len(ev.batches), bool)
        # A failed batch or a lone dip or spike in the plateau is one off-recipe run's word:
        # it answers for itself and carries no margin to the others (issue: one failed run
        # must not make a target unreachable elsewhere), unless nothing else is left.
        aside = np.isin(ev.batches, np.concatenate([self.failed_batches_, self.plateau_off_]))
        if np.any(use & ~aside):
            use &= ~aside
        b, sig, p_meas = ev.batches[use], ev.plateau_sigma[use], ev.p_reach[use]
        lb, lq = np.log(b), np.log(q)
        m = _carried_margin(lq, lb, between=ev.margin[use], beyond=ev.margin_beyond[use])
        s0 = np.full(q.shape, sig[0]) if len(lb) == 1 else np.interp(lq, lb, sig)
        d = _nearest_distance(q, b)
        nodes = np.atleast_1d(self.plateau_walk_)
        p = reach_probability(m, s0, d * self.metric_range_, nodes)
        # A censored batch's margin is a lower bound (its best is no plateau), so it may only
        # raise the chance: the answer is the larger of the above and the same interpolation
        # with the censored batches in. Which batches count does not depend on the target and
        # every margin falls as it hardens, so P(reach) still never rises with the target.
        # (Runs that stop once they reach the target leave the small batches short and
        # rising: without this a batch between two whose runs all reached read its chance
        # from a far one, P ≈ 0.6.)
        more = ~aside & (use | censored)
        if np.any(more & ~use) and np.count_nonzero(more) >= 2:
            bm = ev.batches[more]
            m_all = _carried_margin(lq, np.log(bm), between=ev.margin[more], beyond=ev.margin_beyond[more])
            s_all = np.interp(lq, np.log(bm), ev.plateau_sigma[more])
            p_all = reach_probability(m_all, s_all, _nearest_distance(q, bm) * self.metric_range_, nodes)
            p = np.maximum(p, p_all)
        exact = np.isin(q, b)
        if np.any(exact):
            p[exact] = p_meas[np.searchsorted(b, q[exact])]
        own_only = np.isin(q, ev.batches[aside & ~use])
        if np.any(own_only):
            p[own_only] = ev.p_reach[np.searchsorted(ev.batches, q[own_only])]
        held = np.isin(q, ev.batches[censored & ~use & ~aside])
        if np.any(held):
            own = ev.p_reach[np.searchsorted(ev.batches, q[held])]
            p[held] = np.maximum(p[held], own)
        return p

    # -- metric -------------------------------------------------------------------
    def metric_at(self, global_batch: np.ndarray, epochs: np.ndarray) -> np.ndarray:
        """Best metric reached within ``epochs`` at ``global_batch`` (NaN before the first evaluation).

        Epochs past a batch's last measurement keep its last value (no extrapolation
        in epochs); batches between measured ones interpolate linearly in log batch,
        batches outside them take the nearest measured row.
        """
        self._check_fitted()
        gb = as_column(global_batch, where="global_batch", gt=0.0)
        ep = as_column(epochs, where="epochs", ge=0.0, allow_inf=True)
        gb, ep = np.broadcast_arrays(gb, ep)
        shape, q, e = gb.shape, gb.ravel(), ep.ravel()
        if len(self.batches_) == 1:
            score = self._row_metric(np.zeros(q.size, np.int64), e)
        else:
            x = np.clip(np.log(q), np.log(self.batches_[0]), np.log(self.batches_[-1]))
            idx = np.clip(np.searchsorted(np.log(self.batches_), x), 1, len(self.batches_) - 1)
            x0, x1 = np.log(self.batches_[idx - 1]), np.log(self.batches_[idx])
            frac = (x - x0) / (x1 - x0)
            lo, hi = self._row_metric(idx - 1, e), self._row_metric(idx, e)
            score = lo + frac * (hi - lo)
        return self._score(score.reshape(shape))

    def _row_metric(self, row: np.ndarray, epochs: np.ndarray) -> np.ndarray:
        """Each query's value on its own surface row (NaN before the row's first point, its
        last value past its end): one interpolation per distinct row asked for, so the work
        grows with the queries and the rows they need, not with queries × measured batches."""
        out = np.empty(epochs.shape)
        order = np.argsort(row, kind="stable")
        for sel in np.split(order, np.flatnonzero(np.diff(row[order])) + 1) if order.size else []:
            surface_row = self.surface_[row[sel[0]]]
            valid = np.isfinite(surface_row)
            g, r = self.epoch_grid_[valid], surface_row[valid]
            e = epochs[sel]
            out[sel] = np.where(e < g[0], np.nan, np.interp(np.minimum(e, g[-1]), g, r))
        return out


def _eval_noise(global_batch: np.ndarray, epoch: np.ndarray, score: np.ndarray, seed: np.ndarray) -> float:
    """Evaluation-to-evaluation noise: robust spread of successive differences late in
    each run (where the trend is flat), median over runs; 0 when every run is short.

    Runs are found by one sort by (batch, seed, epoch), linear in the records whatever the
    number of runs (matching each run against every record made this quadratic)."""
    idx = np.flatnonzero(epoch > 0)
    if idx.size == 0:
        return 0.0
    order = idx[np.lexsort((epoch[idx], seed[idx], global_batch[idx]))]  # stable: ties keep record order
    b, sd = global_batch[order], seed[order]
    run = np.concatenate([[0], np.cumsum((b[1:] != b[:-1]) | (sd[1:] != sd[:-1]))])
    fin = np.isfinite(score[order])
    s, r = score[order][fin], run[fin]
    n_runs = int(run[-1]) + 1
    size = np.bincount(r, minlength=n_runs)
    pos = np.arange(r.size) - group_starts(size)[:-1][r]
    # The late half of each run with six finite evaluations or more: successive differences
    # from its middle evaluation on.
    late = (r[:-1] == r[1:]) & (pos[:-1] >= size[r[:-1]] // 2) & (size[r[:-1]] >= 6)
    tail, tail_run = (s[1:] - s[:-1])[late], r[:-1][late]
    center = segment_median(tail, tail_run, n_runs)
    spread = segment_median(np.abs(tail - center[tail_run]), tail_run, n_runs)
    noise = 1.4826 * spread[size >= 6] / math.sqrt(2.0)
    return float(np.median(noise)) if noise.size else 0.0
