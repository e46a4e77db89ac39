"""Keras adapter: a callback that feeds a :class:`~cotune.track.Tracker`.

Importing this module imports Keras; ``cotune`` and ``cotune.track`` never do.

    from cotune.track import Tracker
    from cotune.track.keras import TrackerCallback

    tracker = Tracker("job.jsonl", gpu="cpu", workers=1, local_batch=32)
    model.fit(x, y, validation_data=(xv, yv), callbacks=[TrackerCallback(tracker, monitor="val_accuracy")])

Each optimizer step is timed from ``on_train_batch_begin`` of its first batch to
``on_train_batch_end`` of its last (one batch; ``accum_steps`` batches when the tracker
has them); at each epoch end with validation the ``monitor`` entry of the epoch logs
becomes an ``eval`` record.
A tracker without ``schedule_epochs`` takes ``fit(epochs=)``, in passes over the data (an
epoch of ``steps_per_epoch`` batches on a repeated dataset is not one). An optimizer's
``gradient_accumulation_steps`` other than the tracker's ``accum_steps`` is taken by the
tracker, with a warning (``errors="raise"``: an error).
"""

from __future__ import annotations

import time
from typing import Any

from cotune.track._adapt import CallbackGuard, StepTimer, check_callback_args, passes_per_epoch
from cotune.track._tracker import Tracker

try:
    import keras as _keras
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError("cotune.track.keras needs Keras: pip install tensorflow-cpu (or keras)") from exc

__all__ = ["TrackerCallback"]


class TrackerCallback(_keras.callbacks.Callback):
    """Keras callback: step times and the epoch-end ``monitor`` metric into ``tracker``.

    An epoch whose logs hold no validation values (``validation_freq``) writes no
    evaluation. What the callback finds wrong mid-training — validation ran and does not
    give ``monitor``, no validation ran at all, a tracker an earlier ``fit()`` closed —
    follows the tracker's ``errors``: a ``RuntimeWarning`` and training goes on
    (``"warn"``), or an error (``"raise"``).
    """

    def __init__(self, tracker: Tracker, *, monitor: str, close_at_end: bool = True) -> None:
        super().__init__()
        self.tracker, self.monitor = check_callback_args(tracker, monitor)
        self.close_at_end = close_at_end
        self._timer = StepTimer()
        self._guard = CallbackGuard(tracker, name="TrackerCallback")
        self._prev_batch = -1  # the last batch index this epoch reported (compile(steps_per_execution=N) skips N - 1)

    def on_train_begin(self, logs: Any = None) -> None:
        self._guard.start()
        accum = getattr(getattr(self.model, "optimizer", None), "gradient_accumulation_steps", None)
        if (self._guard.tracking and self.tracker.enabled and not self.tracker.closed and isinstance(accum, int)
                and not isinstance(accum, bool) and accum >= 1 and accum != self.tracker.config.accum_steps):
            # The optimizer steps every `accum` batches: records tagged with another
            # accum_steps gave the job's global batch and per-sample step time `accum` times off.
            self._guard.take_accum_steps(accum, source=f"the optimizer's gradient_accumulation_steps={accum}")
        # fit(epochs=) is where the schedule ends, in passes over the data where an epoch is
        # given in steps (steps_per_epoch on a repeated dataset: 3 epochs of 0.38 passes end
        # at 1.14); a tracker told otherwise keeps its own.
        params = self.params or {}
        epochs, steps = params.get("epochs"), params.get("steps")
        if self._guard.tracking and self.tracker.schedule_epochs is None and isinstance(epochs, int) and epochs > 0:
            passes = passes_per_epoch(self.tracker, batches=steps) if isinstance(steps, int) and steps > 0 else None
            self.tracker.schedule_epochs = epochs * (1.0 if passes is None else passes)

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._prev_batch = -1

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self._timer.batch_start(time.perf_counter())

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        # A tracker with accum_steps > 1 (an optimizer's gradient_accumulation_steps) steps
        # every accum_steps batches and at the epoch's last (params["steps"], when known).
        steps = (self.params or {}).get("steps")
        if isinstance(steps, int) and isinstance(batch, int) and steps > 0:
            # The last execution of an epoch whose steps are not a multiple of N reports the
            # index N would have reached (batch 11 of 10): it ran only the batches left.
            batch = min(batch, steps - 1)
        last = isinstance(steps, int) and batch + 1 >= steps
        # With compile(steps_per_execution=N) Keras calls the hooks once per N batches, the
        # index of the last one: counted as one, the job's epochs and step time were N times off.
        covered = batch - self._prev_batch if isinstance(batch, int) and batch > self._prev_batch else 1
        self._prev_batch = batch if isinstance(batch, int) else self._prev_batch
        if covered > 1:
            self._record_many(self._timer.batch_end(time.perf_counter(), accum=1, last_of_epoch=True), covered)
        else:
            done = self._timer.batch_end(time.perf_counter(), accum=self.tracker.config.accum_steps, last_of_epoch=last)
            self._record(done)
        if last:
            self._end_pass()

    def _record_many(self, done: tuple[float, int] | None, batches: int) -> None:
        """One hook that ran ``batches`` batches: that many optimizer steps (``accum_steps``
        batches each; a remainder is a partial step), the time shared evenly."""
        if done is None or not self._guard.tracking:
            return
        accum = max(int(self.tracker.config.accum_steps), 1)
        per_batch = done[0] / batches
        for _ in range(batches // accum):
            self.tracker.step(step_time_s=per_batch * accum)
        if batches % accum:
            self.tracker.step(step_time_s=per_batch * (batches % accum), micro_batches=batches % accum)

    def _record(self, done: tuple[float, int] | None) -> None:
        if done is not None and self._guard.tracking:
            self.tracker.step(step_time_s=done[0], micro_batches=done[1])

    def _end_pass(self) -> None:
        # The epoch's last batch held only the samples left: the tracker trims its count to the pass.
        if self._guard.tracking and not self.tracker.closed:
            self.tracker.end_pass()

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self._record(self._timer.epoch_end())
        self._end_pass()  # before the evaluation is placed at the epoch counted
        logs = logs or {}
        if not self._guard.evals:
            return
        if self.monitor not in logs:
            if self.monitor.startswith("val_") and not any(k.startswith("val_") for k in logs):
                return  # no validation this epoch (validation_freq)
            self._guard.missing_monitor(
                f"no {self.monitor!r} in the epoch logs (have: {', '.join(sorted(logs)) or 'none'}): set monitor= to "
                "one of those; training goes on without evaluations"
            )
            return
        self._guard.write_eval(logs[self.monitor])

    def on_train_end(self, logs: Any = None) -> None:
        if not self._guard.tracking:
            return
        self._guard.never_evaluated(f"no epoch logged {self.monitor!r}: pass validation_data to fit() for a val_ "
                                    "metric, or set monitor= to a value the logs hold")
        self._guard.finish(close=self.close_at_end)
