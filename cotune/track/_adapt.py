"""What the Lightning, Keras and Transformers callbacks share (no framework import here).

* :class:`StepTimer` turns micro-batch hooks into optimizer steps: a step is
  ``accum_steps`` micro-batches, timed from the start of its first to the end of its
  last; the epoch's last batch closes a partial step, because both frameworks step the
  optimizer there (Lightning with ``accumulate_grad_batches``, Keras with an optimizer's
  ``gradient_accumulation_steps``). Counting the partial step with its own micro-batches
  keeps the epochs the tracker counts equal to the passes over the data.
* :class:`CallbackGuard` applies the tracker's ``errors`` policy to what a callback
  finds wrong mid-training — a ``monitor`` never logged, a tracker closed by an earlier
  ``fit()`` — so that, by default, training goes on untracked (one ``RuntimeWarning``)
  instead of dying of its tracker after an epoch's work; ``errors="raise"`` raises.
"""

from __future__ import annotations

import math
import warnings

from cotune._checks import MAX_MAGNITUDE, excerpt
from cotune.errors import InputError
from cotune.track._tracker import Tracker

__all__ = ["StepTimer", "CallbackGuard", "check_callback_args", "epochs_at_step", "passes_per_epoch"]


def epochs_at_step(steps: int, *, batches: int, accum: int) -> float:
    """The epoch, as the tracker counts it (passes over the data), at which a run given in
    optimizer ``steps`` ends: whole epochs of ``⌈batches / accum⌉`` steps (the last one
    partial, as both frameworks step there), then the rest at ``accum`` of the epoch's
    ``batches`` micro-batches each — 5 steps of 3 on 8 batches an epoch end at 1 + 6/8, not 5/3."""
    if steps < 1 or batches < 1 or accum < 1:
        raise ValueError(f"steps, batches and accum must be >= 1, got {steps}, {batches}, {accum}")
    whole, rest = divmod(steps, -(-batches // accum))
    return whole + min(rest * accum, batches) / batches


def passes_per_epoch(tracker: Tracker, *, batches: int) -> float | None:
    """The passes over the data a framework epoch of ``batches`` micro-batches makes, as the
    tracker counts them: ``batches × workers × local_batch / dataset_size``, or exactly one
    where that overshoots a pass by less than a micro-batch of every worker (the last batch
    held only the samples left: :meth:`Tracker.end_pass` trims it). An epoch is not a pass
    when it is given in steps (Keras's ``steps_per_epoch`` on a repeated dataset,
    Lightning's ``limit_train_batches``): a schedule of ``max_epochs`` epochs then ends at
    another number of passes. None when the tracker does not know its dataset size."""
    if tracker.dataset_size is None or batches < 1:
        return None
    c = tracker.config
    samples = float(batches * c.workers * c.local_batch)
    over = samples - tracker.dataset_size
    if 0.0 < over < c.workers * c.local_batch:
        return 1.0
    return samples / tracker.dataset_size


def check_callback_args(tracker: object, monitor: object) -> tuple[Tracker, str]:
    """The two arguments both callbacks take, checked when the callback is made: a wrong
    ``monitor`` (``None``, a number) failed with an AttributeError at the first epoch's
    end, after an epoch of training."""
    if not isinstance(tracker, Tracker):
        raise InputError(f"tracker must be a cotune.track.Tracker, got {type(tracker).__name__}")
    if not isinstance(monitor, str) or not monitor.strip():
        raise InputError(f"monitor must name a logged validation value such as 'val_acc', got {excerpt(monitor)}")
    return tracker, monitor.strip()


class StepTimer:
    """Optimizer steps from micro-batch hooks (see the module docstring)."""

    def __init__(self) -> None:
        self._began: float | None = None
        self._micro = 0
        self._last_end: float | None = None

    def batch_start(self, now: float) -> None:
        if self._began is None:
            self._began = now

    def batch_end(self, now: float, *, accum: int, last_of_epoch: bool) -> tuple[float, int] | None:
        """``(step time, micro-batches)`` when this micro-batch ends an optimizer step, else None."""
        self._micro += 1
        self._last_end = now
        if self._micro < max(int(accum), 1) and not last_of_epoch:
            return None
        return self._close(now)

    def epoch_end(self) -> tuple[float, int] | None:
        """The partial step left open when the epoch's length was not known (an iterable
        dataset): the framework stepped the optimizer after its last batch."""
        return None if self._micro == 0 else self._close(self._last_end)

    def _close(self, now: float | None) -> tuple[float, int] | None:
        began, micro = self._began, self._micro
        self._began, self._micro = None, 0
        if began is None or now is None:
            return None
        return max(now - began, 1e-9), micro


class CallbackGuard:
    """The tracker's ``errors`` policy for a callback's own findings (module docstring)."""

    def __init__(self, tracker: Tracker, *, name: str) -> None:
        self.tracker = tracker
        self.name = name
        self.tracking = True  # steps and evals this fit()
        self.evals = True  # evals only (a monitor that is not logged)
        self.written_evals = 0

    def start(self) -> None:
        """At the start of a fit(): a tracker an earlier fit() closed records nothing more."""
        self.tracking = True
        if self.tracker.enabled and self.tracker.closed:
            self._refuse(f"{self.name}: the tracker was closed when an earlier fit() ended (close_at_end=True), so this "
                         "fit() is not tracked: pass close_at_end=False to track several fit() calls with one tracker, "
                         "or give this fit() a new Tracker", stop="tracking")

    def missing_monitor(self, message: str) -> None:
        """Validation ran and the monitor is not among its values: no evals from here on."""
        self._refuse(f"{self.name}: {message}", stop="evals")

    def never_evaluated(self, message: str) -> None:
        """Training ended and no evaluation gave the monitor."""
        if self.tracking and self.evals and self.written_evals == 0:
            self._refuse(f"{self.name}: {message}", stop="evals")

    def write_eval(self, value: float) -> None:
        """An evaluation the framework reported, as the tracker's ``eval`` (a diverged run's
        infinity, or a finite value beyond the profile's 1e15 on its way there, written as
        NaN, as the profile keeps a diverged point)."""
        metric = float(value)
        diverged = not math.isfinite(metric) or abs(metric) > MAX_MAGNITUDE
        self.tracker.eval(metric=math.nan if diverged else metric)
        self.written_evals += 1

    def take_accum_steps(self, accum_steps: int, *, source: str) -> None:
        """The framework accumulates ``accum_steps`` micro-batches a step (``source`` names
        its setting) and the tracker was told otherwise: its records would give the job's
        global batch and per-sample step time that many times off. ``errors="raise"``:
        an error; else one warning, and the tracker takes the framework's value."""
        told = self.tracker.config.accum_steps
        message = (f"{self.name}: the trainer accumulates {accum_steps} batches a step ({source}), and the tracker "
                   f"was given accum_steps={told}")
        if self.tracker.errors == "raise":
            raise InputError(f"{message}: pass Tracker(..., accum_steps={accum_steps})")
        try:
            self.tracker._correct_accum_steps(accum_steps)
        except InputError as exc:  # the step it gives holds more than the training set
            self._refuse(f"{message}; {exc}; this fit() is not tracked", stop="tracking")
            return
        warnings.warn(f"cotune tracker: {message}: the records take the trainer's {accum_steps} (pass "
                      f"Tracker(..., accum_steps={accum_steps}) to say so)", RuntimeWarning, stacklevel=3)

    def finish(self, *, close: bool) -> None:
        """Training ended (or died): the tracker closed (its last window written), or, to
        track another ``fit()``/``train()`` with it, only flushed."""
        if close:
            self.tracker.close()
        else:
            self.tracker.flush()

    def _refuse(self, message: str, *, stop: str) -> None:
        if self.tracker.errors == "raise":
            raise InputError(message)
        warnings.warn(f"cotune tracker: {message}", RuntimeWarning, stacklevel=3)
        if stop == "tracking":
            self.tracking = False
        self.evals = False
