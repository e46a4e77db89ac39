"""What a running job's progress says about the rest of its work, at every configuration.

The accuracy model ``M`` predicts, at any global batch ``B``, the epochs to the target
given it is reached — log-normal with median ``E_M(B)`` and log-spread ``σ_M(B)`` — and
the probability ``p_M(B)`` that it is reached at all. A job that has run ``e`` epochs at
batch ``B₀`` (configuration ``c₀``) and reached the best metric ``m`` knows more:

* **its own curve** at ``B₀``, extrapolated and pooled with ``M``'s prior there
  (:func:`cotune.models._curve.extrapolate_curve`): total epochs ``(Ê₀, σ₀)``, reached
  with probability ``p₀``;
* **its shift** ``δ = ln Ê₀ − ln E_M(B₀)``, clipped to ``±ln MAX_SHIFT`` — how far this
  run is from the model — carried to every other batch, ``Ê(B) = E_M(B)·e^δ`` with the
  model's spread there (the model errs by about the same factor at neighbouring batches:
  the scale-invariant progress of AdaScale and Pollux);
* **reach** ``p(B) = p_M(B)``, but no higher than ``p₀`` for ``B ≥ B₀`` (a larger batch
  does not reach a level the job's batch plateaus below);
* **the hand-over epoch** ``d(B)`` where a switch resumes: ``e`` on the running
  configuration; elsewhere the epoch where ``B`` reaches the level ``m`` already reached,
  ``E_M(B, m)·e^δ``; without a level (no curve at ``B₀``), the same share of the work,
  ``(e / E_M(B₀))·E_M(B)``.

Without a usable curve (too short, no finite forecast) the model answers alone
(``δ = 0``) and only the hand-over epochs carry the progress. :func:`job_outlook` is the
one definition of this belief: ``cotune replan`` and the closed-loop replay
(``benchmarks/closed_loop.py``) both feed it to :func:`cotune.solver.remaining_work`,
which conditions it on the target not being reached yet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Sequence

import numpy as np

__all__ = ["MAX_SHIFT", "JobOutlook", "job_outlook"]

# The job's shift from the model is believed up to this factor either way: a few early
# evaluations far off the model say more about a noisy start than about the whole run.
MAX_SHIFT = 4.0


@dataclass(frozen=True)
class JobOutlook:
    """Per option (aligned with the global batches given): the belief about the *total*
    epochs at that option's batch and where a switch resumes there.

    ``epochs``: median total epochs given the target is reached; ``log_sigma``: the
    spread of their log (epochs only: add the step-time spread for time); ``p_reach``:
    probability of reaching the target at all; ``done_epochs``: the hand-over epoch;
    ``shift``: ``δ`` (0 when the job's curve said nothing); ``forecast``: the job's own
    :class:`~cotune.models._curve.CurveForecast` at its batch, or None.
    """

    epochs: np.ndarray
    log_sigma: np.ndarray
    p_reach: np.ndarray
    done_epochs: np.ndarray
    shift: float
    forecast: Any = None


def job_outlook(
    models: Any,
    *,
    global_batch: np.ndarray,
    target: float,
    goal: Literal["max", "min"],
    running: np.ndarray | None = None,
    running_batch: float | None = None,
    epochs_done: float = 0.0,
    level: float | None = None,
    curve_epochs: Sequence[float] = (),
    curve_metric: Sequence[float] = (),
    interval: float = 0.9,
    forecast: Any = None,
) -> JobOutlook:
    """The belief of the module doc at every option.

    ``global_batch``: each option's global batch; ``running``: which options are the
    running configuration (they resume at ``epochs_done`` with the job's own forecast;
    None or all False: the job has not started, nothing is done); ``running_batch``: the
    job's batch (default: the first running option's); ``level``: the best metric so far
    (None: unknown); ``curve_epochs``/``curve_metric``: the job's own evaluations at its
    batch (epochs counted at that batch); ``forecast``: that curve's forecast when the
    caller already has it (a :attr:`JobOutlook.forecast` of the same job, target and
    interval) — the curve is then not fitted again.
    """
    from cotune.models._curve import extrapolate_curve, prior_from_model

    gb = np.asarray(global_batch, float)
    n = gb.size
    here = np.zeros(n, dtype=bool) if running is None else np.asarray(running, bool)
    started = bool(here.any()) or running_batch is not None
    if running_batch is None and here.any():
        running_batch = float(gb[np.flatnonzero(here)[0]])
    ub, inv = np.unique(gb, return_inverse=True)
    to_target = models.predict_epochs(ub, target)
    e_model = np.asarray(to_target.epochs_if_reached, float)[inv]
    s_model = np.asarray(to_target.log_sigma, float)[inv]
    p_model = np.asarray(to_target.p_reach, float)[inv]
    if not started:
        return JobOutlook(epochs=e_model, log_sigma=s_model, p_reach=p_model, done_epochs=np.zeros(n), shift=0.0)

    assert running_batch is not None
    base = float(np.asarray(models.predict_epochs(np.array([float(running_batch)]), target).epochs_if_reached, float)[0])
    if level is not None:
        d_model = np.asarray(models.predict_epochs(ub, level).epochs_if_reached, float)[inv]
        d_model = np.where(np.isfinite(d_model), d_model, 0.0)
    elif math.isfinite(base) and base > 0:
        d_model = np.where(np.isfinite(e_model), (epochs_done / base) * e_model, 0.0)
    else:
        d_model = np.zeros(n)

    if forecast is None and len(curve_epochs):
        prior = prior_from_model(models.accuracy, global_batch=float(running_batch), target=target, interval=interval)
        try:
            forecast = extrapolate_curve(list(curve_epochs), list(curve_metric), target=target, goal=goal,
                                         interval=interval, prior=prior)
        except (OverflowError, ValueError):  # a curve the families cannot fit: the model answers
            forecast = None
    e_hat, s_hat, p_hat, done = e_model.copy(), s_model.copy(), p_model.copy(), d_model.copy()
    shift = 0.0
    if forecast is not None and math.isfinite(forecast.epochs_if_reached) and forecast.epochs_if_reached > 0:
        raw = math.log(forecast.epochs_if_reached / base) if math.isfinite(base) and base > 0 else 0.0
        shift = float(np.clip(raw, -math.log(MAX_SHIFT), math.log(MAX_SHIFT)))
        e_hat = e_model * math.exp(shift)
        done = d_model * math.exp(shift)
        p_hat = np.where(gb >= running_batch, np.minimum(p_model, forecast.p_reach), p_model)
        e_hat[here], s_hat[here], p_hat[here] = forecast.epochs_if_reached, forecast.log_sigma, forecast.p_reach
    done[here] = epochs_done
    return JobOutlook(epochs=e_hat, log_sigma=s_hat, p_reach=p_hat, done_epochs=done, shift=shift, forecast=forecast)
