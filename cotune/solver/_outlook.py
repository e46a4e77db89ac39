"""What a running job's progress says about the rest of its work, at every configuration.

The accuracy model ``M`` predicts, at any global batch ``B``, the epochs to the target
given it is reached — log-normal with median ``E_M(B)`` and log-spread ``σ_M(B)`` — and
the probability ``p_M(B)`` that it is reached at all. A job that has run ``e`` epochs at
batch ``B₀`` (configuration ``c₀``) and reached the best metric ``m`` knows more:

* **its own curve** at ``B₀``, extrapolated and pooled with ``M``'s prior there
  (:func:`cotune.models._curve.extrapolate_curve`): total epochs ``(Ê₀, σ₀)``, reached
  with probability ``p₀``;
* **its shift** ``δ = ln Ê₀ − ln E_M(B₀)``, clipped to ``±ln MAX_SHIFT`` — how far this
  run is from the model — carried to every other batch in the share the model's error
  there has in common with its error at ``B₀`` (:func:`shift_carry`):
  ``Ê(B) = E_M(B)·exp(c(B)·δ)`` with the model's spread there. The error at ``B₀`` is
  the run's own scatter ``s`` (this job's, so it goes everywhere) plus the model's
  extrapolation, which is pinned at the anchors (the measured batches that reach the
  target) and grows with the log distance from them. With ``λ = 1 − s²/σ_M(B₀)²`` the
  extrapolation's part, ``c = 1 − λ·(1 − w)``, ``w`` the tent that is 0 at every anchor,
  1 at ``B₀``, linear in ``log B`` between and flat beyond. A job at an anchor, or a
  model without anchors, carries the whole shift. On the published curves
  (``python -m benchmarks.shift_carry``: one reference curve, the true error at one
  batch carried to the others) this leaves a smaller error at the other batches than
  carrying the whole shift or none (numbers in benchmarks/README.md);
* **reach** ``p(B) = min(p_M(B), p₀)`` for ``B ≥ B₀`` (a larger batch does not reach a
  level the job's batch plateaus below); for ``B < B₀`` the job's chance carries in the
  same share as its shift, ``logit p(B) = (1 − c(B))·logit p_M(B) + c(B)·logit p₀``
  (:func:`carry_reach`);
* **the same batch on other hardware** (any option whose global batch is ``B₀``) is the
  same training trajectory: the job's own belief ``(Ê₀, σ₀, p₀)`` and its own epoch ``e``;
* **the hand-over epoch** ``d(B)`` where a switch resumes: ``e`` at the running batch;
  elsewhere the earlier of the epoch where ``B`` reaches the level ``m`` already
  reached, ``E_M(B, m)·e^{c(B)δ}``, and the same share of the work,
  ``(e / E_M(B₀))·E_M(B)·e^{(c(B) − 1)δ}`` (the job's share of its own total ``Ê₀``
  carried to ``Ê(B)``); without a level (no evaluation yet), the share alone. The share
  is the phase of the learning-rate schedule when recipes end in proportion to their
  epochs to the target (Pollux's progress clock with constant gradient statistics,
  benchmarks/README.md § Open question): a level that a larger batch reaches only late
  in its recipe, after its decay, is not a place a switch can jump to — the level alone
  over-rated switches to larger batches (in the closed-loop replay, whose truth hands
  over by the same ``min``, delivered at ``q = 0.9`` was 87.5 %). (Normalising the level
  rule by the job's own pace at ``B₀``, ``e / (E_M(B₀, m)·e^δ)``, was measured and not
  kept: in the replay, then handing over by level, misses rose from 5 to 16 of 72.)

After a change of batch the job's own count of epochs (data passes since its start) is
not an epoch count at the new batch: :func:`job_frame` places it there by the hand-over
above, and :func:`frame_outlook` judges every option as it was just before the change
until the job has evaluated at the new batch (the belief the new batch had as an
alternative is its prior; each batch the job ran keeps what its own curve said there,
and a job that returns to such a batch resumes with that belief).

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

__all__ = [
    "MAX_SHIFT", "HandOver", "JobFrame", "JobOutlook", "carry_for", "carry_reach", "frame_outlook", "job_frame", "job_outlook",
    "shift_carry",
]

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
    :class:`~cotune.models._curve.CurveForecast` at its batch, or None; ``carry``: the
    share ``1 − λ·(1 − w)`` of ``δ`` each option's belief takes (:func:`shift_carry`; 1 on
    the running configuration, None before the job starts).
    """

    epochs: np.ndarray
    log_sigma: np.ndarray
    p_reach: np.ndarray
    done_epochs: np.ndarray
    shift: float
    forecast: Any = None
    carry: np.ndarray | None = None


def shift_carry(global_batch: np.ndarray, *, running_batch: float, anchors: np.ndarray, share: float = 1.0) -> np.ndarray:
    """The share of the job's shift at ``running_batch`` believed at each global batch.

    ``1 − λ·(1 − w)``: ``w`` is the tent in ``log B`` that is 0 at every anchor, 1 at the
    running batch, linear between and flat beyond the outermost point; ``λ`` (``share``)
    is the part of the error at the running batch that is the model's extrapolation
    (pinned at the anchors) rather than the run's own scatter (the job's, everywhere).
    A running batch at an anchor, or no anchors: the whole shift carries.
    """
    gb = np.asarray(global_batch, float)
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be in [0, 1], got {share!r}")
    a = np.unique(np.asarray(anchors, float))
    if a.size == 0 or np.any(np.isclose(a, running_batch)):
        return np.ones(gb.shape)
    x = np.log(np.append(a, running_batch))
    v = np.append(np.zeros(a.size), 1.0)
    order = np.argsort(x)
    return 1.0 - share * (1.0 - np.interp(np.log(gb), x[order], v[order]))


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
    prior: Any = None,
) -> JobOutlook:
    """The belief of the module doc at every option.

    ``global_batch``: each option's global batch; ``running``: which options are the
    running configuration (they resume at ``epochs_done`` with the job's own forecast;
    None or all False: the job has not started, nothing is done); ``running_batch``: the
    job's batch (default: the first running option's); ``level``: the best metric so far
    (None: unknown); ``curve_epochs``/``curve_metric``: the job's own evaluations at its
    batch (epochs counted at that batch); ``forecast``: that curve's forecast when the
    caller already has it (a :attr:`JobOutlook.forecast` of the same job, target and
    interval) — the curve is then not fitted again; ``prior``: the belief at the running
    batch before its own curve (an :class:`~cotune.models._curve.EpochsPrior`; None: the
    model's there) — after a batch change, the belief that option had as an alternative
    (:func:`job_frame`): the curve is pooled with it, and it answers alone while the curve
    is empty or says nothing.
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
    at_running = models.predict_epochs(np.array([float(running_batch)]), target)
    base = float(np.asarray(at_running.epochs_if_reached, float)[0])
    # Two hand-over epochs per option (module doc): the same level, and the same share of the
    # work; a switch resumes at the earlier. Both are scaled by the shift below.
    has_share = math.isfinite(base) and base > 0
    d_share = np.where(np.isfinite(e_model), (epochs_done / base) * e_model, 0.0) if has_share else None
    if level is not None:
        d_level = np.asarray(models.predict_epochs(ub, level).epochs_if_reached, float)[inv]
        d_level = np.where(np.isfinite(d_level), d_level, 0.0)
    else:
        d_level = None

    if forecast is None and len(curve_epochs):
        curve_prior = prior if prior is not None else prior_from_model(
            models.accuracy, global_batch=float(running_batch), target=target, interval=interval)
        try:
            forecast = extrapolate_curve(list(curve_epochs), list(curve_metric), target=target, goal=goal,
                                         interval=interval, prior=curve_prior)
        except (OverflowError, ValueError):  # a curve the families cannot fit: the model answers
            forecast = None
    e_hat, s_hat, p_hat = e_model.copy(), s_model.copy(), p_model.copy()
    # Every option at the running global batch is the same training trajectory on other
    # hardware: it resumes at the job's own epoch with the job's own belief.
    same = here | np.isclose(gb, float(running_batch))
    shift = 0.0
    carry = np.zeros(n)

    # Without a forecast of its own curve, a prior handed over from the previous batch is
    # the running batch's belief (the same numbers that option had as an alternative).
    def usable(b: Any) -> bool:
        return b is not None and math.isfinite(b.epochs_if_reached) and b.epochs_if_reached > 0

    belief = forecast if usable(forecast) else (
        None if prior is None else _Belief(prior.median_epochs, prior.log_sigma, prior.p_reach)
    )
    if usable(belief):
        raw = math.log(belief.epochs_if_reached / base) if math.isfinite(base) and base > 0 else 0.0
        shift = float(np.clip(raw, -math.log(MAX_SHIFT), math.log(MAX_SHIFT)))
        carry = carry_for(models, global_batch=gb, running_batch=float(running_batch), target=target,
                          log_sigma_at_running=float(np.asarray(at_running.log_sigma, float)[0]))
        e_hat = e_model * np.exp(carry * shift)
        p_hat = carry_reach(p_model, p_running=float(belief.p_reach), carry=carry, larger=gb >= running_batch)
        e_hat[same], s_hat[same], p_hat[same] = belief.epochs_if_reached, belief.log_sigma, belief.p_reach
    done = _hand_over(d_level=d_level, d_share=d_share, carry=carry, shift=shift)
    done[same] = epochs_done
    carry[same] = 1.0
    return JobOutlook(epochs=e_hat, log_sigma=s_hat, p_reach=p_hat, done_epochs=done, shift=shift, forecast=forecast,
                      carry=carry)


def _hand_over(*, d_level: np.ndarray | None, d_share: np.ndarray | None, carry: np.ndarray, shift: float) -> np.ndarray:
    """Where a switch to each option resumes, in epochs at its batch (module doc).

    ``d_level``: ``E_M(B, m)``, where ``B`` reaches the level already reached (None without
    a level); ``d_share``: ``(e / E_M(B₀))·E_M(B)``, the same share of the work (None when
    the running batch has no finite prediction). The level reading takes the share ``c``
    of the job's shift the option's belief takes, ``·e^{cδ}``; the share reading is a
    share of that belief over the job's own at ``B₀`` (``e^{δ}``): ``·e^{(c − 1)δ}``. A
    reading that is absent counts as ∞; with neither, nothing is carried (0).
    """
    absent = np.full(np.shape(carry), np.inf)
    lv = absent if d_level is None else d_level * np.exp(carry * shift)
    sh = absent if d_share is None else d_share * np.exp((carry - 1.0) * shift)
    done = np.minimum(lv, sh)
    return np.where(np.isinf(done), 0.0, done)


@dataclass(frozen=True)
class _Belief:
    """A handed-over prior in the shape of a curve forecast (epochs given reached, spread, reach)."""

    epochs_if_reached: float
    log_sigma: float
    p_reach: float


def carry_reach(p_model: np.ndarray, *, p_running: float, carry: np.ndarray, larger: np.ndarray) -> np.ndarray:
    """The chance of reaching the target at each option, the job's own chance ``p₀`` carried.

    At a larger batch, ``min(p_M, p₀)`` (it does not reach a level the job's batch plateaus
    below). At a smaller one, the job's evidence carries in the same share ``c`` as its
    epochs shift: ``logit p = (1 − c)·logit p_M + c·logit p₀`` — a job that stalls below
    its target is believed to stall at a batch a few percent smaller too (``c ≈ 1``),
    while a batch pinned by a measured run keeps the model's chance (``c ≈ 0``). Without
    it a neighbouring batch keeps the model's untested optimism and looks better than
    the running one only because it has not been tried: measured in the closed-loop
    replay, that optimism made restarts near the deadline that missed it.
    """
    if not math.isfinite(p_running):  # the job's forecast says nothing about reaching: the model's
        return np.asarray(p_model, float).copy()
    lo = 1e-9
    pm = np.clip(np.nan_to_num(np.asarray(p_model, float), nan=0.0), lo, 1.0 - lo)
    p0 = min(max(float(p_running), lo), 1.0 - lo)
    c = np.clip(np.asarray(carry, float), 0.0, 1.0)
    big = np.asarray(larger, bool)
    blended = 1.0 / (1.0 + np.exp(-((1.0 - c) * np.log(pm / (1.0 - pm)) + c * math.log(p0 / (1.0 - p0)))))
    out = np.where(big, np.minimum(p_model, p_running), blended)
    # The model's exact 0 and 1 stay exact where nothing is carried.
    return np.where(big | (c > 0.0), out, p_model)


def carry_for(
    models: Any, *, global_batch: np.ndarray, running_batch: float, target: float, log_sigma_at_running: float | None = None
) -> np.ndarray:
    """:func:`shift_carry` with the fitted accuracy model's anchors at ``target`` and
    ``λ = 1 − s²/σ_M(B₀)²`` from its run-to-run scatter ``s`` and its spread at the
    running batch (``log_sigma_at_running`` when the caller has it; an accuracy model
    without anchors or scatter: the whole shift carries)."""
    gb = np.asarray(global_batch, float)
    acc = getattr(models, "accuracy", None)
    if acc is None or not hasattr(acc, "anchor_batches") or not hasattr(acc, "scatter_at"):
        return np.ones(gb.shape)
    sigma = log_sigma_at_running
    if sigma is None:
        sigma = float(np.asarray(models.predict_epochs(np.array([running_batch]), target).log_sigma, float)[0])
    scatter = float(acc.scatter_at(target))
    share = 1.0 - scatter**2 / sigma**2 if math.isfinite(sigma) and sigma > 0 else 0.0
    return shift_carry(gb, running_batch=running_batch, anchors=acc.anchor_batches(target), share=min(max(share, 0.0), 1.0))


@dataclass(frozen=True)
class HandOver:
    """A change of global batch: at the job's own epoch ``at_epoch`` (epochs run since its
    start, as the tracker counts them) it left ``from_batch`` and resumed at ``to_batch``'s
    epoch ``epoch`` (:func:`job_outlook`'s hand-over: the earlier of where that batch
    reaches the level already reached and the same share of the work)."""

    from_batch: float
    to_batch: float
    at_epoch: float
    epoch: float


@dataclass(frozen=True)
class JobFrame:
    """A job's progress counted in epochs of the batch it runs now (:func:`job_frame`).

    ``epochs_done``: where it is at ``global_batch``; ``curve_epochs``/``curve_metric``:
    its evaluations since it last moved to that batch, on the same count; ``level``: the
    best metric it has reached (None before any evaluation); ``prior``: the belief at
    ``global_batch`` handed over from the previous batch (an
    :class:`~cotune.models._curve.EpochsPrior`; None without a batch change: the model's);
    ``handovers``: every batch change, oldest first; ``source``: the frame at the end of
    the previous batch while the job has no evaluation at this one yet (None otherwise);
    ``beliefs``: ``(batch, EpochsPrior)`` — what the job's own curve said at each other
    batch it ran, when it left it (the latest stay at each).
    """

    global_batch: float
    epochs_done: float
    curve_epochs: tuple[float, ...]
    curve_metric: tuple[float, ...]
    level: float | None
    prior: Any
    handovers: tuple[HandOver, ...]
    source: "JobFrame | None" = None
    beliefs: tuple[tuple[float, Any], ...] = ()


def job_frame(
    models: Any,
    *,
    evals: Sequence[Any],
    global_batch: float,
    epochs_done: float,
    target: float,
    goal: Literal["max", "min"],
    interval: float = 0.9,
) -> JobFrame:
    """The job's evaluations and epochs done, counted at the batch it runs now.

    A job counts its epochs from its start, across every change of batch (the tracker's
    ``epoch``: data passes). Epochs at one batch are not epochs at another, so at each
    change (``evals``, each with ``global_batch``, ``epoch``, ``metric``, in the order
    written; the change is placed at the previous batch's last evaluation, where a
    checkpoint is written) the job is handed over by the **same rule an alternative is
    judged by before the change** — :func:`job_outlook`'s hand-over epoch ``d`` at the new
    batch, given everything the job had shown at the old one — and its epochs there count
    on from ``d``. The belief about the new batch's total epochs that option had as an
    alternative (the job's shift carried there) becomes its ``prior``, and what the job's
    curve said at the batch it left is kept (``beliefs``). :func:`frame_outlook` reads
    the frame: until the job has evaluated at the new batch, every option is judged as it
    was just before the switch. Without the handed-over belief and the kept ones (the
    frame alone, each new batch's short curve pooled with the bare model), the option
    that won a switch read differently the moment it ran and jobs switched back more:
    in the closed-loop replay asked after the first 50 steps of every start too, mean
    restarts 0.75 against 0.67 and at most 10 in a run against 6
    (benchmarks/README.md § Closed loop).

    ``global_batch``: the batch the job runs now (a change not evaluated yet is placed at
    the last evaluation); ``epochs_done``: its own count now. Without a change the frame is
    the job's own count, unchanged.
    """
    from cotune.models._curve import EpochsPrior

    sign = 1.0 if goal == "max" else -1.0
    segments: list[tuple[float, list[tuple[float, float]]]] = []
    for r in evals:
        e, m, b = float(r.epoch), float(r.metric), float(r.global_batch)
        if not (math.isfinite(e) and math.isfinite(m)):
            continue
        if not segments or not math.isclose(segments[-1][0], b):
            segments.append((b, []))
        segments[-1][1].append((e, m))
    if not segments or not math.isclose(segments[-1][0], float(global_batch)):
        segments.append((float(global_batch), []))  # moved, and not evaluated at the new batch yet

    def as_prior(b: Any) -> Any:
        if b is None:
            return None
        med, sig, p = (float(b.epochs_if_reached), float(b.log_sigma), float(b.p_reach)) if hasattr(
            b, "epochs_if_reached") else (float(b.median_epochs), float(b.log_sigma), float(b.p_reach))
        ok = math.isfinite(med) and med > 0 and math.isfinite(sig) and sig > 0 and 0.0 <= p <= 1.0
        return EpochsPrior(median_epochs=med, log_sigma=max(sig, 0.02), p_reach=p) if ok else None

    offset, start = 0.0, 0.0  # the frame: offset + (own epoch − start)
    prior: Any = None
    best: float | None = None
    handovers: list[HandOver] = []
    beliefs: dict[float, Any] = {}
    previous: JobFrame | None = None
    for k, (batch, points) in enumerate(segments):
        if k:
            prev_batch, prev = segments[k - 1]
            at = prev[-1][0] if prev else start
            x = offset + max(at - start, 0.0)
            level = None if best is None else sign * best
            curve_e = tuple(offset + max(e - start, 0.0) for e, _ in prev)
            curve_m = tuple(m for _, m in prev)
            o = job_outlook(
                models, global_batch=np.array([batch]), target=target, goal=goal, running=np.array([False]),
                running_batch=prev_batch, epochs_done=x, level=level, curve_epochs=curve_e, curve_metric=curve_m,
                interval=interval, prior=prior,
            )
            left = as_prior(o.forecast) if o.forecast is not None and math.isfinite(o.forecast.epochs_if_reached) else prior
            if left is not None:
                beliefs[prev_batch] = left
            previous = JobFrame(global_batch=prev_batch, epochs_done=x, curve_epochs=curve_e, curve_metric=curve_m,
                                level=level, prior=prior, handovers=tuple(handovers))
            d = float(o.done_epochs[0])
            d = d if math.isfinite(d) and d > 0 else 0.0
            # A batch the job ran before is judged by what its own curve said there when it
            # left (frame_outlook keeps it), so the job resumes there with that belief, not
            # with the shift carried from the batch it leaves: the option that won the switch
            # must read the same once it runs (a BERT job judged 0.78 as an alternative
            # read 0.22 a checkpoint after moving back, and moved again).
            kept = next((v for b, v in beliefs.items() if math.isclose(b, batch)), None)
            prior = kept if kept is not None else as_prior(
                _Belief(float(o.epochs[0]), float(o.log_sigma[0]), float(o.p_reach[0])))
            handovers.append(HandOver(from_batch=prev_batch, to_batch=batch, at_epoch=at, epoch=d))
            offset, start = d, at
        for _, m in points:
            best = sign * m if best is None else max(best, sign * m)
    batch, points = segments[-1]
    beliefs.pop(batch, None)  # the batch it runs now: its own curve there speaks
    return JobFrame(
        global_batch=batch, epochs_done=offset + max(float(epochs_done) - start, 0.0),
        curve_epochs=tuple(offset + max(e - start, 0.0) for e, _ in points), curve_metric=tuple(m for _, m in points),
        level=None if best is None else sign * best, prior=prior, handovers=tuple(handovers),
        source=previous if (not points and previous is not None) else None, beliefs=tuple(beliefs.items()),
    )


def frame_outlook(
    models: Any,
    frame: JobFrame,
    *,
    global_batch: np.ndarray,
    running: np.ndarray | None,
    target: float,
    goal: Literal["max", "min"],
    interval: float = 0.9,
    level: float | None = None,
    forecast: Any = None,
) -> JobOutlook:
    """:func:`job_outlook` of a job read through its :func:`job_frame`.

    At a batch it has evaluated at, the job's curve there (pooled with the belief handed
    over) speaks, as in :func:`job_outlook`. Before its first evaluation at a new batch,
    every option is judged as it was just before the switch — from the previous batch's
    curve — except that the running configuration resumes where the job is now. Every
    other batch the job ran keeps what its own curve said there when it left (a belief
    carried back from a batch it has barely run would forget it). ``level``: the best
    metric so far (default: the frame's); ``forecast``: the curve's forecast when the
    caller has it (only read at an evaluated batch).
    """
    gb = np.asarray(global_batch, float)
    src = frame if (frame.curve_epochs or frame.source is None) else frame.source
    o = job_outlook(
        models, global_batch=gb, target=target, goal=goal, running=running if src is frame else None,
        running_batch=src.global_batch, epochs_done=src.epochs_done, level=frame.level if level is None else level,
        curve_epochs=src.curve_epochs, curve_metric=src.curve_metric, interval=interval, prior=src.prior,
        forecast=forecast if src is frame else None,
    )
    epochs, sigma, p_reach, done = o.epochs.copy(), o.log_sigma.copy(), o.p_reach.copy(), o.done_epochs.copy()
    carry = None if o.carry is None else o.carry.copy()
    for b, belief in frame.beliefs:
        at = np.isclose(gb, b)
        if math.isclose(b, src.global_batch) or not at.any():
            continue
        epochs[at], sigma[at], p_reach[at] = belief.median_epochs, belief.log_sigma, belief.p_reach
    if src is not frame:
        now = np.isclose(gb, frame.global_batch)
        done[now] = frame.epochs_done
        if frame.prior is not None:  # the belief it was switched on (a batch run before: what it said there)
            epochs[now], sigma[now], p_reach[now] = frame.prior.median_epochs, frame.prior.log_sigma, frame.prior.p_reach
    return JobOutlook(epochs=epochs, log_sigma=sigma, p_reach=p_reach, done_epochs=done, shift=o.shift,
                      forecast=o.forecast, carry=carry)
