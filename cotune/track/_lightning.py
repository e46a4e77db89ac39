"""PyTorch Lightning adapter: a callback that feeds a :class:`~cotune.track.Tracker`.

Importing this module imports Lightning (``lightning`` or, failing that, the older
``pytorch_lightning``); ``cotune`` and ``cotune.track`` never do.

    from cotune.track import Tracker
    from cotune.track.lightning import TrackerCallback

    tracker = Tracker("job.jsonl", gpu="t4", workers=8, local_batch=128)   # rank: $RANK, as torchrun sets it
    trainer = L.Trainer(callbacks=[TrackerCallback(tracker, monitor="val_acc")])

Each optimizer step is timed from the start of its first micro-batch to the end of its
last (``accumulate_grad_batches``; the epoch's last batch ends a partial step, counted
with its own micro-batches), data loading between batches left out, as the profiler
times steps. After each validation inside ``fit()`` (not the sanity check; a
``trainer.validate()`` of its own writes nothing) the logged ``monitor`` value is
written as an ``eval`` record at the epochs the tracker counted.
A tracker without ``schedule_epochs`` takes where the trainer stops: ``max_epochs``, or the
epoch its ``max_steps`` end at, whichever comes first, in passes over the data (an epoch
cut by ``limit_train_batches`` is part of one). A trainer's ``accumulate_grad_batches``
other than the tracker's ``accum_steps`` is taken by the tracker, with a warning
(``errors="raise"``: an error).
"""

from __future__ import annotations

import math
import time
from typing import Any

from cotune.track._adapt import CallbackGuard, StepTimer, check_callback_args, epochs_at_step, passes_per_epoch
from cotune.track._tracker import Tracker

try:  # the unified package first; the standalone one is the same API
    from lightning.pytorch import Callback as _Callback
except ImportError:  # pragma: no cover - depends on what is installed
    try:
        from pytorch_lightning import Callback as _Callback
    except ImportError as exc:
        raise ImportError(
            "cotune.track.lightning needs PyTorch Lightning: pip install lightning (or use Tracker directly)"
        ) from exc

__all__ = ["TrackerCallback"]


def _schedule_epochs(trainer: Any, tracker: Tracker) -> float | None:
    """Where training stops, in the tracker's epochs (passes over the data): ``max_epochs``,
    or where ``max_steps`` ends (:func:`~cotune.track._adapt.epochs_at_step` on
    ``num_training_batches``), whichever comes first, in trainer epochs, times the passes
    an epoch of ``num_training_batches`` makes (:func:`~cotune.track._adapt.passes_per_epoch`:
    ``limit_train_batches=0.5`` stops ``max_epochs=4`` at 2 passes); None when neither is
    known (an iterable dataset's epoch has no length)."""
    ends = []
    max_epochs = getattr(trainer, "max_epochs", None)
    if isinstance(max_epochs, int) and max_epochs > 0:
        ends.append(float(max_epochs))
    max_steps, batches = getattr(trainer, "max_steps", -1), getattr(trainer, "num_training_batches", math.inf)
    known = isinstance(batches, int) and batches > 0
    if isinstance(max_steps, int) and max_steps > 0 and known:
        accum = getattr(trainer, "accumulate_grad_batches", 1)
        ends.append(epochs_at_step(max_steps, batches=batches, accum=accum if isinstance(accum, int) and accum > 0 else 1))
    if not ends:
        return None
    passes = passes_per_epoch(tracker, batches=batches) if known else None
    return min(ends) * (1.0 if passes is None else passes)


def _fitting(trainer: Any) -> bool:
    """Whether the trainer runs ``fit()`` (its validations are the job's curve), not a
    ``validate()``/``test()`` of its own; a trainer without a state counts as fitting."""
    fn = getattr(getattr(trainer, "state", None), "fn", None)
    return fn is None or fn == "fit"


class TrackerCallback(_Callback):
    """Lightning callback: step times and validation metrics into ``tracker``.

    ``monitor`` names a value logged during validation (``self.log("val_acc", ...)``).
    ``close_at_end`` closes the tracker when training ends (writing the last window).
    What the callback finds wrong mid-training — a ``monitor`` validation does not log, a
    tracker an earlier ``fit()`` closed — follows the tracker's ``errors``: a
    ``RuntimeWarning`` and training goes on (``"warn"``), or an error (``"raise"``).
    """

    def __init__(self, tracker: Tracker, *, monitor: str, close_at_end: bool = True) -> None:
        super().__init__()
        self.tracker, self.monitor = check_callback_args(tracker, monitor)
        self.close_at_end = close_at_end
        self._timer = StepTimer()
        self._guard = CallbackGuard(tracker, name="TrackerCallback")

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._guard.start()
        accum = getattr(trainer, "accumulate_grad_batches", 1)
        if (self._guard.tracking and self.tracker.enabled and not self.tracker.closed and isinstance(accum, int)
                and accum >= 1 and accum != self.tracker.config.accum_steps):
            # The timer closes a step every `accum` micro-batches: records tagged with another
            # accum_steps gave the job's global batch and per-sample step time `accum` times off.
            self._guard.take_accum_steps(accum, source=f"accumulate_grad_batches={accum}")
        # The trainer knows where the schedule ends; a tracker told otherwise keeps its own.
        if self._guard.tracking and self.tracker.schedule_epochs is None:
            self.tracker.schedule_epochs = _schedule_epochs(trainer, self.tracker)

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        self._timer.batch_start(time.perf_counter())

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        # Lightning steps the optimizer every accumulate_grad_batches micro-batches and at
        # the epoch's last batch (num_training_batches; inf for an iterable dataset).
        n = getattr(trainer, "num_training_batches", math.inf)
        last = isinstance(n, int) and batch_idx + 1 >= n
        done = self._timer.batch_end(time.perf_counter(), accum=getattr(trainer, "accumulate_grad_batches", 1) or 1,
                                     last_of_epoch=last)
        self._record(trainer, done)
        if last:
            self._end_pass(trainer)  # before validation places its evaluation at the epoch counted

    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        # An iterable dataset's last partial step is over once validation starts at the
        # epoch's end: count it before the evaluation is placed.
        if not trainer.sanity_checking and not math.isfinite(getattr(trainer, "num_training_batches", math.inf)):
            self._record(trainer, self._timer.epoch_end())

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._record(trainer, self._timer.epoch_end())
        self._end_pass(trainer)

    def _record(self, trainer: Any, done: tuple[float, int] | None) -> None:
        if done is not None and self._guard.tracking and trainer.is_global_zero:
            self.tracker.step(step_time_s=done[0], micro_batches=done[1])

    def _end_pass(self, trainer: Any) -> None:
        # The epoch's last batch held only the samples left: the tracker trims its count to the pass.
        if self._guard.tracking and trainer.is_global_zero and not self.tracker.closed:
            self.tracker.end_pass()

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero or not self._guard.evals:
            return
        if not _fitting(trainer) or self.tracker.closed:
            # trainer.validate() outside fit() (after it closed the tracker, typically) is no
            # point of the training run's curve: nothing is written, and it must not raise.
            return
        value = trainer.callback_metrics.get(self.monitor)
        if value is None:
            logged = ", ".join(sorted(trainer.callback_metrics)) or "none"
            self._guard.missing_monitor(
                f"no logged value {self.monitor!r} after validation (logged: {logged}): log it with self.log(...) in "
                "validation_step, or set monitor= to one of those; training goes on without evaluations"
            )
            return
        self._guard.write_eval(value.item() if hasattr(value, "item") else value)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        # Training died: an out-of-memory is recorded at the job's configuration (cotune
        # replan moves it off), and the tracker is closed as at the end of training.
        if not self._guard.tracking or not trainer.is_global_zero:
            return
        # Lightning raises `exception` once the callbacks return: a storage fault met here
        # (errors="raise") is a warning beside it, never raised in its place.
        self.tracker._end_with(exception, close=self.close_at_end)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if not self._guard.tracking:
            return
        if trainer.is_global_zero:
            self._guard.never_evaluated(f"no validation logged {self.monitor!r}: give fit() validation data and log it "
                                        "with self.log(...) in validation_step, or set monitor= to a value it logs")
        self._guard.finish(close=self.close_at_end)
