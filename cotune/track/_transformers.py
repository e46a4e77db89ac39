"""Hugging Face Transformers adapter: a ``TrainerCallback`` that feeds a :class:`~cotune.track.Tracker`.

Importing this module imports ``transformers``; ``cotune`` and ``cotune.track`` never do.

    from cotune.track import Tracker
    from cotune.track.transformers import TrackerCallback

    tracker = Tracker("job.jsonl", gpu="a100", workers=8, local_batch=16, accum_steps=4)  # rank: $RANK
    trainer = Trainer(..., callbacks=[TrackerCallback(tracker, monitor="eval_accuracy")])
    with tracker:          # an out-of-memory in train() is recorded (TrainerCallback has no exception hook)
        trainer.train()

Each optimizer step is timed from ``on_step_begin`` to ``on_step_end``: the Trainer fetches a
step's micro-batches before ``on_step_begin``, so data loading is left out, as the profiler
times steps; its micro-batches are counted (``on_substep_end`` + 1), so an epoch's last,
partial step counts the samples it holds, and at each epoch's end the count is trimmed to
the pass (:meth:`~cotune.track.Tracker.end_pass`: the last batch held only the samples
left). After each evaluation *inside* ``train()`` the
``monitor`` entry of its metrics (``eval_<name>``, as ``compute_metrics`` names it with the
Trainer's prefix) is written as an ``eval`` record; a ``trainer.evaluate()`` outside
training writes nothing. A tracker without ``schedule_epochs`` takes
``TrainingArguments.num_train_epochs`` for a run given in epochs, and ``max_steps`` over the
optimizer steps of an epoch for one given in steps (none for an iterable dataset).
Only the world's process zero records (``TrainerState.is_world_process_zero``).
"""

from __future__ import annotations

import math
import time
from typing import Any

from cotune.track._adapt import CallbackGuard, check_callback_args, epochs_at_step
from cotune.track._tracker import Tracker

try:
    from transformers import TrainerCallback as _TrainerCallback
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError("cotune.track.transformers needs Hugging Face Transformers: pip install transformers "
                      "(or use Tracker directly)") from exc

__all__ = ["TrackerCallback"]


def _schedule_epochs(args: Any, loader: Any) -> float | None:
    """The epochs a run's schedule spans, as the tracker counts them: ``num_train_epochs``
    for a run given in epochs; for one given in ``max_steps``, the epoch those steps end at
    (:func:`~cotune.track._adapt.epochs_at_step` on ``len(train_dataloader)``). None where
    the loader has no length (an iterable dataset)."""
    max_steps = getattr(args, "max_steps", -1) or -1
    if isinstance(max_steps, int) and max_steps > 0:
        try:
            batches = len(loader)
        except TypeError:  # None, or an IterableDataset's loader
            return None
        if batches < 1:
            return None
        return epochs_at_step(max_steps, batches=batches,
                              accum=max(int(getattr(args, "gradient_accumulation_steps", 1) or 1), 1))
    epochs = getattr(args, "num_train_epochs", None)
    ok = isinstance(epochs, (int, float)) and not isinstance(epochs, bool) and math.isfinite(epochs) and epochs > 0
    return float(epochs) if ok else None


class TrackerCallback(_TrainerCallback):
    """Trainer callback: optimizer-step times and the ``monitor`` evaluation metric into ``tracker``.

    ``monitor`` names an entry of the evaluation metrics, with the Trainer's ``eval_`` prefix
    (``eval_accuracy``, ``eval_loss``). ``close_at_end`` closes the tracker when training
    ends. What the callback finds wrong mid-training — an evaluation without ``monitor``,
    no evaluation at all, a tracker an earlier ``train()`` closed — follows the tracker's
    ``errors``: a ``RuntimeWarning`` and training goes on (``"warn"``), or an error
    (``"raise"``).
    """

    def __init__(self, tracker: Tracker, *, monitor: str, close_at_end: bool = True) -> None:
        super().__init__()
        self.tracker, self.monitor = check_callback_args(tracker, monitor)
        self.close_at_end = close_at_end
        self._guard = CallbackGuard(tracker, name="TrackerCallback")
        self._began: float | None = None
        self._micro = 0
        self._training = False

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._guard.start()
        self._training = True
        self._began, self._micro = None, 0
        # Where the learning-rate schedule ends; a tracker told otherwise keeps its own.
        if self._guard.tracking and self.tracker.schedule_epochs is None:
            self.tracker.schedule_epochs = _schedule_epochs(args, kwargs.get("train_dataloader"))

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._began, self._micro = time.perf_counter(), 0

    def on_substep_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._micro += 1  # a micro-batch that did not end the optimizer step

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        began, micro = self._began, self._micro + 1
        self._began, self._micro = None, 0
        if began is None or not self._guard.tracking or not state.is_world_process_zero:
            return
        self.tracker.step(step_time_s=max(time.perf_counter() - began, 1e-9), micro_batches=micro)

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # The epoch's last batch held only the samples left (dataloader_drop_last off): the
        # tracker trims its count to the pass. The Trainer calls this before an epoch-end
        # evaluation, so that evaluation is placed at the pass, not past it.
        if self._guard.tracking and state.is_world_process_zero and not self.tracker.closed:
            self.tracker.end_pass()

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: Any = None, **kwargs: Any) -> None:
        if not self._training or not state.is_world_process_zero or not self._guard.tracking or not self._guard.evals:
            return  # trainer.evaluate() outside train(): no point of this job's curve
        metrics = metrics or {}
        value = metrics.get(self.monitor)
        if value is None:
            self._guard.missing_monitor(
                f"no {self.monitor!r} in the evaluation metrics (have: {', '.join(sorted(metrics)) or 'none'}): set "
                "monitor= to one of those (the Trainer prefixes compute_metrics' names with 'eval_'); training goes on "
                "without evaluations"
            )
            return
        self._guard.write_eval(value)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._training = False
        if not self._guard.tracking:
            return
        if state.is_world_process_zero:
            self._guard.never_evaluated(f"no evaluation gave {self.monitor!r}: give the Trainer an eval_dataset and an "
                                        "eval_strategy, or set monitor= to a metric it reports")
        self._guard.finish(close=self.close_at_end)
