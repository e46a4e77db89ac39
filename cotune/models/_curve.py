"""Learning-curve extrapolation at the running batch: epochs-to-target from a job's own curve.

A running job has evaluated its metric at a few epochs. This module turns that partial
curve into a forecast of the epochs at which it first reaches a target — a median, a
central interval and the probability of reaching it at all — and combines it with the
accuracy model's prior at the job's batch. Every function is pure (numbers in, frozen
values out); nothing here reads files or prints.

Method
------
1. **Best so far.** The metric becomes a *score* (negated for ``goal="min"``), NaN or
   diverged evaluations add no progress, and the curve is its running maximum — the
   quantity that reaches a target first.
2. **Saturating families.** Three families of Domhan et al. (2015) / Klein et al. (2017)
   are fitted by bounded least squares to the best-so-far curve from the last point of
   its flat head (the evaluations before it first improves), in coordinates scaled
   so the observed rise is 1 and the last seen epoch is 1 (``u = epoch / epoch_seen``):

   * ``pow3`` — ``y = a − b·u^(−c)``;
   * ``exp3`` — ``y = a − b·exp(−c·u)``;
   * ``mmf``  — ``y = a − (a − d) / (1 + (k·u)^δ)`` (Morgan–Mercer–Flodin).

   ``a`` is the family's asymptote. Each family's epochs to the target solve
   ``y(u) = t`` in closed form (∞ when ``a ≤ t``). Families are weighted by Akaike
   weights (AICc), so a family the data contradict stops counting.
3. **Forecast.** The median is the weighted median of the families' log epochs. Its
   spread in log epochs has four parts::

       σ² = σ₀² + (κ · ln(E / epoch_seen))² + disagreement² + Σ_f w_f · g_fᵀ Σ_f g_f

   ``disagreement`` is the weighted standard deviation of the families' log epochs (which
   family); the last term is how loosely the points seen pin each family's parameters
   (the delta method: ``Σ_f = s²·(JᵀJ)⁻¹`` from the least-squares fit, ``g_f`` the
   gradient of the family's log epochs to the target), largest where the target sits
   near the asymptote the curve has barely begun to show; the κ term is what the
   families' shapes miss beyond the data (a learning-rate decay they cannot see).
   The probability of reaching the target is ``Φ((m + m₀) / s)`` with ``m`` the
   weighted margin ``a − t`` in units of the rise seen so far. ``κ``
   (:data:`CURVE_KAPPA`), ``m₀`` (:data:`CURVE_MARGIN_OFFSET`) and ``s``
   (:data:`CURVE_MARGIN_SCALE`) are measured on the published Pollux curves with
   leave-one-workload-out (``python -m benchmarks.curve_calibration``, docs/models.md).
4. **Prior.** The accuracy model predicts, at the job's batch, a log-normal median and
   spread and a reach probability from *other* batches. :func:`combine_with_prior`
   pools the two log-epoch estimates by precision (inverse variance) and the two reach
   probabilities by the same weights, so the job's own curve takes over as it grows
   and a curve too short to fit leaves the prior in charge.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Any, Callable, Literal, Mapping, Sequence

import numpy as np

from cotune.errors import InputError

__all__ = [
    "CURVE_KAPPA",
    "CURVE_MARGIN_OFFSET",
    "CURVE_MARGIN_SCALE",
    "CURVE_PARAM_VAR_CAP",
    "CURVE_SIGMA_FLOOR",
    "HETEROGENEITY_GAP",
    "MIN_CURVE_POINTS",
    "CurveFit",
    "CurveForecast",
    "EpochsPrior",
    "best_so_far",
    "combine_with_prior",
    "extrapolate_curve",
    "fit_curve_families",
    "forecast_epochs",
    "forecast_from_fits",
    "prior_from_model",
]

# Measured by ``python -m benchmarks.curve_calibration`` (docs/models.md): the spread per
# unit of log extrapolation and the margin scale of the reach probability, fitted on all
# Pollux workloads (the per-workload held-out values are in the report).
CURVE_KAPPA = 0.582
CURVE_MARGIN_SCALE = 10.0
CURVE_MARGIN_OFFSET = 2.0
CURVE_SIGMA_FLOOR = 0.05
# The most a family's parameter uncertainty adds to the log-epochs variance (σ = 2, a
# factor e² ≈ 7): a curve that cannot pin its asymptote near the target says "not from
# me" — its precision falls and a prior pooled with it answers — without an interval
# running to 10⁴⁰ epochs.
CURVE_PARAM_VAR_CAP = 4.0
# Pooling with the prior: a squared gap between the two log-epoch estimates counts as
# disagreement only beyond this many times its expected size (χ²₁'s 90 % quantile).
HETEROGENEITY_GAP = 2.706
# Fewer improving points than this and the curve is not fitted: the prior answers alone.
MIN_CURVE_POINTS = 5

_NORMAL = NormalDist()


def _z(interval: float) -> float:
    from cotune._checks import MAX_INTERVAL

    if not 0.0 < interval <= MAX_INTERVAL:
        raise InputError(f"interval must be a central probability > 0 and <= {MAX_INTERVAL:g}, e.g. 0.9; got {interval!r}")
    return _NORMAL.inv_cdf(0.5 + interval / 2.0)


@dataclass(frozen=True)
class EpochsPrior:
    """A batch-level belief about epochs to target: ``log E ~ N(ln median_epochs, log_sigma²)``
    given the target is reached, which happens with probability ``p_reach``."""

    median_epochs: float
    log_sigma: float
    p_reach: float = 1.0

    def __post_init__(self) -> None:
        if not (self.median_epochs > 0):
            raise InputError(f"prior median epochs must be > 0 (∞ allowed), got {self.median_epochs!r}")
        if not (math.isfinite(self.log_sigma) and self.log_sigma > 0):
            raise InputError(f"prior log_sigma must be finite and > 0, got {self.log_sigma!r}")
        if not (0.0 <= self.p_reach <= 1.0):
            raise InputError(f"prior p_reach must be in [0, 1], got {self.p_reach!r}")


@dataclass(frozen=True)
class CurveFit:
    """One saturating family fitted to a best-so-far curve (scaled coordinates)."""

    family: str
    params: tuple[float, ...]
    asymptote: float  # scaled score: 0 = the first best, 1 = the last best seen
    aicc: float
    weight: float = 0.0
    # Covariance of ``params`` from the fit (s²·(JᵀJ)⁻¹, s² the residual variance): how
    # loosely the curve seen so far pins the family (None: not estimated).
    cov: tuple[tuple[float, ...], ...] | None = None

    def predict(self, u: np.ndarray) -> np.ndarray:
        return _FAMILIES[self.family][0](np.asarray(u, dtype=float), *self.params)

    def epochs_to(self, threshold: float) -> float:
        """Scaled epochs ``u`` at which the family reaches ``threshold`` (∞ if never)."""
        return _FAMILIES[self.family][1](threshold, *self.params)


@dataclass(frozen=True)
class CurveForecast:
    """Epochs (since the job's start) until the metric first reaches the target.

    ``epochs`` is the median (∞ when the target is more likely missed than reached by
    the fitted families), ``epochs_if_reached`` the median given it is reached,
    ``lower``/``upper`` the central ``interval`` of the epochs given it is reached,
    ``p_reach`` the probability of reaching it at all. ``source`` says what answered:
    ``"reached"`` (the curve already crossed), ``"curve"``, ``"prior"`` or
    ``"curve+prior"``.
    """

    epochs: float
    epochs_if_reached: float
    lower: float
    upper: float
    log_sigma: float
    p_reach: float
    interval: float
    source: Literal["reached", "curve", "prior", "curve+prior", "none"]
    epochs_seen: float
    n_points: int
    asymptote: float | None = None  # in metric units (best-so-far limit of the weighted families)
    weights: Mapping[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def reached(self) -> bool:
        return self.source == "reached"

    def remaining_epochs(self) -> float:
        """Median epochs still to train (0 once reached)."""
        return max(self.epochs - self.epochs_seen, 0.0)

    def to_dict(self) -> dict[str, Any]:
        num = lambda x: None if x is None or not math.isfinite(x) else float(x)  # noqa: E731
        return {
            "epochs": num(self.epochs), "epochs_if_reached": num(self.epochs_if_reached), "lower": num(self.lower),
            "upper": num(self.upper), "log_sigma": num(self.log_sigma), "p_reach": float(self.p_reach),
            "interval": self.interval, "source": self.source, "epochs_seen": float(self.epochs_seen),
            "n_points": self.n_points, "asymptote": num(self.asymptote),
            "weights": {k: float(v) for k, v in self.weights.items()}, "notes": list(self.notes),
        }


# -- families: value(u, *params) and inverse(threshold, *params) -> u ----------------------

def _pow3(u, a, b, c):
    return a - b * np.power(u, -c)


def _pow3_inv(t, a, b, c):
    if a <= t or b <= 0:
        return math.inf if a <= t else 0.0
    return float((b / (a - t)) ** (1.0 / c))


def _exp3(u, a, b, c):
    return a - b * np.exp(-c * u)


def _exp3_inv(t, a, b, c):
    if a <= t:
        return math.inf
    if b <= a - t:
        return 0.0
    return float(-math.log((a - t) / b) / c)


def _mmf(u, a, d, k, delta):
    return a - (a - d) / (1.0 + np.power(k * u, delta))


def _mmf_inv(t, a, d, k, delta):
    if a <= t:
        return math.inf
    r = (a - d) / (a - t) - 1.0
    if r <= 0:
        return 0.0
    return float(r ** (1.0 / delta) / k)


def _loglin(u, alpha, beta):
    return alpha + beta * np.log(u)


def _loglin_inv(t, alpha, beta):
    if beta <= 0:
        return math.inf
    return float(math.exp(min((t - alpha) / beta, 700.0)))


_FAMILIES: dict[str, tuple[Callable, Callable]] = {
    "pow3": (_pow3, _pow3_inv),
    "exp3": (_exp3, _exp3_inv),
    "mmf": (_mmf, _mmf_inv),
    "loglin": (_loglin, _loglin_inv),
}
_SATURATING = ("pow3", "exp3", "mmf")
_FLAT = 1e-9  # scaled score (the rise seen is 1): a spread this small is no rise

# Bounds in scaled coordinates (rise seen = 1, last seen epoch = 1) and starting points.
_A_MAX = 20.0
_BOUNDS = {
    "pow3": ([1.0, 0.0, 0.02], [_A_MAX, 100.0, 6.0]),
    "exp3": ([1.0, 0.0, 0.05], [_A_MAX, 100.0, 60.0]),
    "mmf": ([1.0, -20.0, 1e-3, 0.1], [_A_MAX, 1.0, 1e3, 8.0]),
}
_STARTS = {
    "pow3": [(1.1, 0.5, 0.5), (1.5, 1.0, 0.3), (1.02, 0.3, 2.0)],
    "exp3": [(1.05, 1.5, 3.0), (1.3, 1.2, 1.0), (1.01, 3.0, 8.0)],
    "mmf": [(1.1, 0.0, 3.0, 1.5), (1.5, -0.5, 1.0, 1.0), (1.02, 0.0, 6.0, 3.0)],
}


def best_so_far(epochs: Sequence[float], metric: Sequence[float], *, goal: Literal["max", "min"] = "max") -> tuple[np.ndarray, np.ndarray]:
    """Epochs (sorted) and the best-so-far *score* (metric, negated for ``goal="min"``).

    A NaN/infinite evaluation (a diverged step) adds no progress; points before the first
    finite one are dropped.
    """
    if goal not in ("max", "min"):
        raise InputError(f"goal must be 'max' or 'min', got {goal!r}")
    e = np.asarray(epochs, dtype=float)
    m = np.asarray(metric, dtype=float)
    if e.shape != m.shape or e.ndim != 1:
        raise InputError(f"epochs and metric must be 1-d and of one length, got {e.shape} and {m.shape}")
    if np.any(~np.isfinite(e)) or np.any(e < 0):
        raise InputError("epochs must be finite and >= 0")
    order = np.argsort(e, kind="stable")
    e, s = e[order], (m if goal == "max" else -m)[order]
    s = np.where(np.isfinite(s), s, -np.inf)
    best = np.maximum.accumulate(s) if s.size else s
    keep = np.isfinite(best)
    return e[keep], best[keep]


def _rise_start(best: np.ndarray) -> int:
    """Index of the last point of a best-so-far curve's flat head (the points equal to its
    first value, before it first improves): where its rise starts."""
    return int(np.flatnonzero(best <= best[0])[-1])


def fit_curve_families(epochs: np.ndarray, best: np.ndarray) -> tuple[list[CurveFit], float, float, float]:
    """Fit the saturating families to a best-so-far curve.

    Returns the fits (with Akaike weights), and the scaling used: ``(fits, lo, rise,
    epoch_seen)`` where scaled score is ``(best − lo) / rise`` and scaled epoch is
    ``epoch / epoch_seen``. Empty fits when the curve has fewer than
    :data:`MIN_CURVE_POINTS` positive-epoch points or has not risen.
    """
    from scipy.optimize import least_squares

    pos = epochs > 0
    x, y = epochs[pos], best[pos]
    if x.size:
        # A curve that sits at its first value before it starts to improve (a warm-up, a
        # WER stuck at 100) is fitted from its last point on that flat head: the
        # saturating families describe the rise, and a head of equal points would pass
        # for evidence of a curve that has barely moved (an asymptote read off two
        # rising points).
        head = _rise_start(y)
        x, y = x[head:], y[head:]
    if x.size < MIN_CURVE_POINTS:
        return [], 0.0, 0.0, float(epochs[-1]) if epochs.size else 0.0
    lo, hi, seen = float(y[0]), float(y[-1]), float(x[-1])
    rise = hi - lo
    if not rise > 0:
        return [], lo, 0.0, seen
    u, yn = x / seen, (y - lo) / rise
    n = u.size
    fits: list[CurveFit] = []
    for name in _SATURATING:
        fun = _FAMILIES[name][0]
        k = len(_STARTS[name][0])
        if n < k + 2:  # AICc needs n > k + 1
            continue
        lb, ub = _BOUNDS[name]
        best_fit = None
        for start in _STARTS[name]:
            x0 = np.clip(np.asarray(start, dtype=float), np.asarray(lb) + 1e-9, np.asarray(ub) - 1e-9)
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                try:
                    res = least_squares(lambda p: fun(u, *p) - yn, x0, bounds=(lb, ub), method="trf", max_nfev=400)
                except (ValueError, FloatingPointError):
                    continue
            if not np.all(np.isfinite(res.fun)):
                continue
            if best_fit is None or res.cost < best_fit.cost:
                best_fit = res
        if best_fit is None:
            continue
        rss = max(float(np.sum(best_fit.fun**2)), n * 1e-6)  # a floor: a perfect fit is no infinite evidence
        aicc = n * math.log(rss / n) + 2 * k + 2 * k * (k + 1) / (n - k - 1)
        jac = np.asarray(best_fit.jac, float)
        # A Jacobian that is not finite pins nothing: an infinite covariance (the cap applies).
        cov = rss / (n - k) * np.linalg.pinv(jac.T @ jac) if np.all(np.isfinite(jac)) else np.full((k, k), np.inf)
        fits.append(CurveFit(family=name, params=tuple(float(v) for v in best_fit.x), asymptote=float(best_fit.x[0]), aicc=aicc,
                             cov=tuple(tuple(float(v) for v in row) for row in cov)))
    if fits:
        a = np.array([f.aicc for f in fits])
        w = np.exp(-(a - a.min()) / 2.0)
        w /= w.sum()
        fits = [replace(f, weight=float(wi)) for f, wi in zip(fits, w)]
        # "If it is reached, when?" when every saturating family stops short of the
        # target: the recent trend, a straight line in log epochs through the last half
        # of the curve (it never saturates, so it always answers). Weight 0: it never
        # votes on the median or on whether the target is reached.
        half = u >= u[0] + 0.5 * (u[-1] - u[0])
        if np.count_nonzero(half) < 2:
            half = np.arange(n) >= n - 2
        if np.ptp(yn[half]) <= _FLAT:
            # A flat recent half has no trend: exactly 0, not the least-squares slope's
            # rounding noise, whose sign flipped a stalled job's forecast between "never"
            # and "some day" from one evaluation to the next.
            beta, alpha = 0.0, float(yn[half][-1])
        else:
            beta, alpha = np.polyfit(np.log(u[half]), yn[half], 1)
        fits.append(CurveFit(family="loglin", params=(float(alpha), float(beta)), asymptote=math.inf, aicc=math.inf))
    return fits, lo, rise, seen


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values)
    v, w = values[order], weights[order]
    c = np.cumsum(w)
    return float(v[int(np.searchsorted(c, 0.5 * c[-1]))])


def _param_log_var(fit: CurveFit, threshold: float) -> float:
    """Delta-method variance of ``ln u`` — the family's scaled epochs to ``threshold`` —
    from the covariance of its parameters: ``gᵀ Σ g`` with ``g = ∂ ln u / ∂θ`` by central
    differences. 0 where the covariance is not estimated (a fit made by hand);
    :data:`CURVE_PARAM_VAR_CAP` where it is not finite, or where a nudge of the parameters
    sends the crossing to never (the target sits at the family's asymptote: the curve
    cannot tell when)."""
    if fit.cov is None:
        return 0.0
    cov = np.asarray(fit.cov, float)
    if not np.all(np.isfinite(cov)):
        return CURVE_PARAM_VAR_CAP
    inv = _FAMILIES[fit.family][1]
    theta = np.asarray(fit.params, float)
    grad = np.zeros(theta.size)
    for j in range(theta.size):
        h = 1e-4 * max(abs(theta[j]), 1e-3)
        up, down = theta.copy(), theta.copy()
        up[j] += h
        down[j] -= h
        hi, lo = inv(threshold, *up), inv(threshold, *down)
        if not (math.isfinite(hi) and math.isfinite(lo) and hi > 0 and lo > 0):
            return CURVE_PARAM_VAR_CAP
        grad[j] = (math.log(hi) - math.log(lo)) / (2.0 * h)
    v = float(grad @ cov @ grad)
    if not math.isfinite(v):
        return CURVE_PARAM_VAR_CAP
    return min(max(v, 0.0), CURVE_PARAM_VAR_CAP)


def forecast_epochs(
    fits: Sequence[CurveFit], *, threshold: float, epoch_seen: float, n_points: int, interval: float = 0.9,
    kappa: float = CURVE_KAPPA, margin_scale: float = CURVE_MARGIN_SCALE, sigma_floor: float = CURVE_SIGMA_FLOOR,
    margin_offset: float = CURVE_MARGIN_OFFSET,
) -> tuple[float, float, float, float, float]:
    """From fitted families and a *scaled* threshold: ``(epochs, epochs_if_reached, log_sigma,
    p_reach, scaled asymptote)`` in real epochs (``u × epoch_seen``)."""
    sat = [f for f in fits if f.family in _SATURATING]
    trend = [f for f in fits if f.family == "loglin"]
    w = np.array([f.weight for f in sat])
    u = np.array([f.epochs_to(threshold) for f in sat])
    a = np.array([f.asymptote for f in sat])
    margin = float(np.sum(w * (a - threshold)))
    p = _NORMAL.cdf((margin + margin_offset) / margin_scale)
    asym = float(np.sum(w * a))
    finite = np.isfinite(u) & (u > 0)
    answering = [f for f, ok in zip(sat, finite) if ok]
    if not answering:
        u_t = trend[0].epochs_to(threshold) if trend else math.inf
        if not math.isfinite(u_t):
            return math.inf, math.inf, math.inf, p, asym
        # The trend line has no parameter covariance: its spread is κ's alone.
        u, w, finite, answering = np.array([u_t]), np.array([1.0]), np.array([True]), []
    logs = np.log(np.maximum(u[finite], 1.0)) + math.log(epoch_seen)  # never before the last seen epoch
    wf = w[finite] / w[finite].sum()
    median = _weighted_median(logs, wf)
    spread = float(np.sqrt(np.sum(wf * (logs - np.sum(wf * logs)) ** 2)))
    reach = max(median - math.log(epoch_seen), 0.0)
    param = float(np.sum(wf * np.array([_param_log_var(f, threshold) for f in answering]))) if answering else 0.0
    sigma = math.sqrt(sigma_floor**2 + (kappa * reach) ** 2 + spread**2 + param)
    e_if = math.exp(median)
    # The median of the mixture "reached at E, or never": E while p ≥ ½, else ∞.
    return (e_if if p >= 0.5 else math.inf), e_if, sigma, p, asym


def extrapolate_curve(
    epochs: Sequence[float], metric: Sequence[float], *, target: float, goal: Literal["max", "min"] = "max",
    interval: float = 0.9, prior: EpochsPrior | None = None, kappa: float = CURVE_KAPPA,
    margin_scale: float = CURVE_MARGIN_SCALE, sigma_floor: float = CURVE_SIGMA_FLOOR,
    margin_offset: float = CURVE_MARGIN_OFFSET,
) -> CurveForecast:
    """Forecast the epochs at which a job's curve first reaches ``target`` (see the module doc).

    ``epochs`` count from the job's start; ``prior`` (optional) is the accuracy model's
    belief at the job's batch (:func:`prior_from_model`).
    """
    if not (isinstance(target, (int, float)) and math.isfinite(target)):
        raise InputError(f"target must be a finite number, got {target!r}")
    _z(interval)
    e, best = best_so_far(epochs, metric, goal=goal)
    fits, lo, rise, seen_pos = fit_curve_families(e, best) if e.size else ([], 0.0, 0.0, 0.0)
    return forecast_from_fits(
        fits, e, best, lo=lo, rise=rise, epoch_fit=seen_pos, target=target, goal=goal, interval=interval,
        prior=prior, kappa=kappa, margin_scale=margin_scale, sigma_floor=sigma_floor, margin_offset=margin_offset,
    )


def forecast_from_fits(
    fits: Sequence[CurveFit], epochs: np.ndarray, best: np.ndarray, *, lo: float, rise: float, epoch_fit: float,
    target: float, goal: Literal["max", "min"] = "max", interval: float = 0.9, prior: EpochsPrior | None = None,
    kappa: float = CURVE_KAPPA, margin_scale: float = CURVE_MARGIN_SCALE, sigma_floor: float = CURVE_SIGMA_FLOOR,
    margin_offset: float = CURVE_MARGIN_OFFSET,
) -> CurveForecast:
    """The forecast of :func:`extrapolate_curve` from families already fitted to the
    best-so-far curve ``(epochs, best)`` by :func:`fit_curve_families` (which returned
    ``lo``, ``rise`` and ``epoch_fit``): one fit serves every target and every constant."""
    z = _z(interval)
    t = float(target) if goal == "max" else -float(target)
    n = int(epochs.size)
    seen = float(epochs[-1]) if n else 0.0
    if n and best[-1] >= t:
        hit = int(np.flatnonzero(best >= t)[0])
        if hit == 0:
            at = float(epochs[0])
        else:  # linear between the evaluation before and the one that crossed
            frac = (t - best[hit - 1]) / (best[hit] - best[hit - 1])
            at = float(epochs[hit - 1] + frac * (epochs[hit] - epochs[hit - 1]))
        return CurveForecast(epochs=at, epochs_if_reached=at, lower=at, upper=at, log_sigma=0.0, p_reach=1.0,
                             interval=interval, source="reached", epochs_seen=seen, n_points=n)
    notes: list[str] = []
    curve = None
    if fits:
        ep, e_if, sigma, p, a_scaled = forecast_epochs(
            fits, threshold=(t - lo) / rise, epoch_seen=epoch_fit, n_points=n, interval=interval, kappa=kappa,
            margin_scale=margin_scale, sigma_floor=sigma_floor, margin_offset=margin_offset,
        )
        asym = lo + a_scaled * rise
        curve = CurveForecast(
            epochs=ep, epochs_if_reached=e_if, lower=_lo(e_if, sigma, z, seen), upper=_hi(e_if, sigma, z),
            log_sigma=sigma, p_reach=p, interval=interval, source="curve", epochs_seen=seen, n_points=n,
            asymptote=asym if goal == "max" else -asym,
            weights={f.family: f.weight for f in fits if f.family in _SATURATING},
        )
    else:
        usable = int(np.count_nonzero(epochs > 0))
        yp = best[epochs > 0]
        rising = int(yp.size - _rise_start(yp)) if yp.size else 0
        if usable < MIN_CURVE_POINTS:
            why = f"has {usable} evaluation(s) after epoch 0"
        elif rising <= 1:
            why = "has not risen"
        else:
            why = f"has risen over only its last {rising} evaluations"
        notes.append(f"the job's curve {why}: too little to fit a saturating curve (needs {MIN_CURVE_POINTS} rising points)")
    if prior is None:
        if curve is None:
            return CurveForecast(epochs=math.inf, epochs_if_reached=math.inf, lower=math.inf, upper=math.inf,
                                 log_sigma=math.inf, p_reach=0.5, interval=interval, source="none", epochs_seen=seen,
                                 n_points=n, notes=tuple(notes))
        return curve
    return combine_with_prior(curve, prior, epochs_seen=seen, n_points=n, interval=interval, notes=notes)


def _lo(e: float, sigma: float, z: float, floor: float) -> float:
    if not math.isfinite(e):
        return math.inf
    # Never above the median: a median at the epochs already seen comes back from exp(log e)
    # one ulp below them (6.999999999999999 against a floor of 7.0, found by hypothesis).
    return min(max(e * math.exp(-z * sigma), floor), e)


def _hi(e: float, sigma: float, z: float) -> float:
    if not (math.isfinite(e) and math.isfinite(sigma)):
        return math.inf
    # A huge spread (a two-point curve) would overflow exp: the bound is then unbounded.
    return e * math.exp(z * sigma) if z * sigma < 700.0 else math.inf


def combine_with_prior(
    curve: CurveForecast | None, prior: EpochsPrior, *, epochs_seen: float, n_points: int, interval: float = 0.9,
    notes: Sequence[str] = (),
) -> CurveForecast:
    """Pool a curve forecast with a batch-level prior by precision in log epochs.

    ``log E = (ln E_c / σ_c² + ln E_p / σ_p²) / (1/σ_c² + 1/σ_p²)``, ``σ⁻² = σ_c⁻² + σ_p⁻²``,
    where a gap ``d`` between the two larger than chance allows first adds
    ``(d² − g·(σ_c² + σ_p²))/2`` to each variance (``g`` = :data:`HETEROGENEITY_GAP`, the
    90 % quantile of χ²₁); the reach probabilities are averaged with the same weights. Epochs the job has
    already trained without reaching the target truncate the prior: its median is moved
    to at least the last seen epoch. Without a curve the prior answers alone.
    """
    z = _z(interval)
    p_mu = math.log(prior.median_epochs) if math.isfinite(prior.median_epochs) else math.inf
    if epochs_seen > 0 and math.isfinite(p_mu):
        p_mu = max(p_mu, math.log(epochs_seen))
    ps = prior.log_sigma
    if curve is None or not math.isfinite(curve.epochs_if_reached) or not math.isfinite(p_mu):
        if curve is not None and math.isfinite(curve.epochs_if_reached):
            base = curve  # the prior has no finite median: the curve alone
            return replace(base, notes=tuple(notes) + ("the prior does not reach the target: the curve answers alone",))
        e_if = math.exp(p_mu) if math.isfinite(p_mu) else math.inf
        p = prior.p_reach if curve is None else 0.5 * (prior.p_reach + curve.p_reach)
        return CurveForecast(
            epochs=e_if if p >= 0.5 else math.inf, epochs_if_reached=e_if, lower=_lo(e_if, ps, z, epochs_seen),
            upper=_hi(e_if, ps, z), log_sigma=ps, p_reach=p, interval=interval, source="prior",
            epochs_seen=epochs_seen, n_points=n_points, asymptote=None if curve is None else curve.asymptote,
            notes=tuple(notes),
        )
    c_mu, cs = math.log(curve.epochs_if_reached), curve.log_sigma
    # Two estimates that disagree by more than their spreads allow are not both right:
    # the squared gap beyond what chance explains is shared out as extra variance on each
    # (a random-effects correction, DerSimonian–Laird with two studies), so the pooled
    # interval widens instead of confidently splitting the difference. "What chance
    # explains" is the 90 % quantile of the gap's χ²₁ (HETEROGENEITY_GAP), not its mean:
    # with the mean, a curve that says almost nothing (σ ≈ 600 in log epochs: one step up
    # and a plateau) wiped out a sharp prior at a measured batch (σ 0.02) and sent a BERT
    # job's forecast to 1e46 epochs. (Scaling both variances by the gap's ratio instead —
    # Birge — keeps a sharp, wrong prior in charge of a job whose own curve shows it 1.6×
    # slower: tests/track/test_replan_progress.py.)
    excess = max((c_mu - p_mu) ** 2 - HETEROGENEITY_GAP * (cs**2 + ps**2), 0.0)
    cs, ps = math.sqrt(cs**2 + excess / 2.0), math.sqrt(ps**2 + excess / 2.0)
    wc, wp = 1.0 / cs**2, 1.0 / ps**2
    mu = (wc * c_mu + wp * p_mu) / (wc + wp)
    sigma = (wc + wp) ** -0.5
    p = (wc * curve.p_reach + wp * prior.p_reach) / (wc + wp)
    e_if = math.exp(mu)
    return CurveForecast(
        epochs=e_if if p >= 0.5 else math.inf, epochs_if_reached=e_if, lower=_lo(e_if, sigma, z, epochs_seen),
        upper=_hi(e_if, sigma, z), log_sigma=sigma, p_reach=p, interval=interval, source="curve+prior",
        epochs_seen=epochs_seen, n_points=n_points, asymptote=curve.asymptote, weights=curve.weights,
        notes=tuple(notes),
    )


def prior_from_model(accuracy_model: Any, *, global_batch: float, target: float, interval: float = 0.9) -> EpochsPrior | None:
    """The accuracy model's belief at one global batch as an :class:`EpochsPrior`.

    Uses the model's predictive distribution (``epochs_if_reached``, ``log_sigma``,
    ``p_reach``) when it has one; otherwise reads the log-normal spread off its interval
    (``(ln upper − ln lower) / 2z``). ``None`` when the model has no finite estimate.
    """
    pred = accuracy_model.epochs_to_target(np.array([float(global_batch)]), float(target))

    def first(name: str) -> float | None:  # a field may be absent, or None for a deterministic prediction
        value = getattr(pred, name, None)
        return None if value is None else float(np.asarray(value)[0])

    med = first("epochs_if_reached")
    if med is None or not (math.isfinite(med) and med > 0):
        med = first("epochs")
    if med is None or not (math.isfinite(med) and med > 0):
        return None
    sigma = first("log_sigma")
    if sigma is None:
        lo, hi = first("lower"), first("upper")
        z = _z(interval)
        ok = lo is not None and hi is not None and math.isfinite(hi) and lo > 0
        sigma = (math.log(hi) - math.log(lo)) / (2 * z) if ok else 1.0
    sigma = sigma if math.isfinite(sigma) and sigma > 0 else 1.0
    p = first("p_reach")
    p = 1.0 if p is None or not math.isfinite(p) else p
    return EpochsPrior(median_epochs=med, log_sigma=max(sigma, 0.02), p_reach=min(max(p, 0.0), 1.0))
