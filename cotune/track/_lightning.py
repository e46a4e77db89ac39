"""PyTorch Lightning adapter: a callback that feeds a :class:`~cotune.track.Tracker`.

Importing this module imports Lightning (``lightning`` or, failing that, the older
``pytorch_lightning``); ``cotune`` and ``cotune.track`` never do.

    from cotune.track import Tracker
    from cotune.track.lightning import TrackerCallback

    tracker = Tracker("job.jsonl", gpu="t4", workers=8, local_batch=128, rank=int(os.environ.get("RANK", 0)))
    trainer = L.Trainer(callbacks=[TrackerCallback(tracker, monitor="val_acc")])

Each optimizer step is timed from the start of its first micro-batch to the end of its
last (``accumulate_grad_batches``), data loading between batches left out, as the
profiler times steps. After each validation (not the sanity check) the logged
``monitor`` value is written as an ``eval`` record at the epochs the tracker counted.
A tracker without ``schedule_epochs`` takes the trainer's ``max_epochs`` (when set).
"""

from __future__ import annotations

import math
import time
from typing import Any

from cotune.errors import InputError
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


class TrackerCallback(_Callback):
    """Lightning callback: step times and validation metrics into ``tracker``.

    ``monitor`` names a value logged during validation (``self.log("val_acc", ...)``).
    ``close_at_end`` closes the tracker when training ends (writing the last window).
    """

    def __init__(self, tracker: Tracker, *, monitor: str, close_at_end: bool = True) -> None:
        super().__init__()
        if not isinstance(tracker, Tracker):
            raise InputError(f"tracker must be a cotune.track.Tracker, got {type(tracker).__name__}")
        self.tracker = tracker
        self.monitor = monitor
        self.close_at_end = close_at_end
        self._began: float | None = None

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        # The trainer knows where the schedule ends; a tracker told otherwise keeps its own.
        max_epochs = getattr(trainer, "max_epochs", None)
        if self.tracker.schedule_epochs is None and isinstance(max_epochs, int) and max_epochs > 0:
            self.tracker.schedule_epochs = max_epochs

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if self._began is None:
            self._began = time.perf_counter()

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        accum = max(int(getattr(trainer, "accumulate_grad_batches", 1) or 1), 1)
        if (batch_idx + 1) % accum:
            return  # the optimizer step is not over yet
        if self._began is not None and trainer.is_global_zero:
            self.tracker.step(step_time_s=max(time.perf_counter() - self._began, 1e-9))
        self._began = None

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero:
            return
        value = trainer.callback_metrics.get(self.monitor)
        if value is None:
            logged = ", ".join(sorted(trainer.callback_metrics)) or "none"
            raise InputError(
                f"TrackerCallback: no logged value {self.monitor!r} after validation (logged: {logged}): "
                "log it with self.log(...) in validation_step, or set monitor= to one of those"
            )
        metric = float(value.item() if hasattr(value, "item") else value)
        self.tracker.eval(metric=metric if math.isfinite(metric) else math.nan)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self.close_at_end:
            self.tracker.close()
        else:
            self.tracker.flush()
