"""Keras adapter: a callback that feeds a :class:`~cotune.track.Tracker`.

Importing this module imports Keras; ``cotune`` and ``cotune.track`` never do.

    from cotune.track import Tracker
    from cotune.track.keras import TrackerCallback

    tracker = Tracker("job.jsonl", gpu="cpu", workers=1, local_batch=32)
    model.fit(x, y, validation_data=(xv, yv), callbacks=[TrackerCallback(tracker, monitor="val_accuracy")])

Each training batch is timed from ``on_train_batch_begin`` to ``on_train_batch_end``;
at each epoch end the ``monitor`` entry of the epoch logs becomes an ``eval`` record.
A tracker without ``schedule_epochs`` takes ``fit(epochs=)``.
"""

from __future__ import annotations

import math
import time
from typing import Any

from cotune.errors import InputError
from cotune.track._tracker import Tracker

try:
    import keras as _keras
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError("cotune.track.keras needs Keras: pip install tensorflow-cpu (or keras)") from exc

__all__ = ["TrackerCallback"]


class TrackerCallback(_keras.callbacks.Callback):
    """Keras callback: step times and the epoch-end ``monitor`` metric into ``tracker``."""

    def __init__(self, tracker: Tracker, *, monitor: str, close_at_end: bool = True) -> None:
        super().__init__()
        if not isinstance(tracker, Tracker):
            raise InputError(f"tracker must be a cotune.track.Tracker, got {type(tracker).__name__}")
        self.tracker = tracker
        self.monitor = monitor
        self.close_at_end = close_at_end
        self._began = 0.0

    def on_train_begin(self, logs: Any = None) -> None:
        # fit(epochs=) is where the schedule ends; a tracker told otherwise keeps its own.
        epochs = (self.params or {}).get("epochs")
        if self.tracker.schedule_epochs is None and isinstance(epochs, int) and epochs > 0:
            self.tracker.schedule_epochs = epochs

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self._began = time.perf_counter()

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.tracker.step(step_time_s=max(time.perf_counter() - self._began, 1e-9))

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        logs = logs or {}
        if self.monitor not in logs:
            raise InputError(
                f"TrackerCallback: no {self.monitor!r} in the epoch logs (have: {', '.join(sorted(logs)) or 'none'}): "
                "pass validation_data to fit() and set monitor= to one of those"
            )
        metric = float(logs[self.monitor])
        self.tracker.eval(metric=metric if math.isfinite(metric) else math.nan)

    def on_train_end(self, logs: Any = None) -> None:
        if self.close_at_end:
            self.tracker.close()
        else:
            self.tracker.flush()
