"""From a read log (:class:`~cotune.logs._readers.LogData`) to profile records.

A pure function of the log and the user's :class:`ImportOptions`: which series is the
validation metric, what a step is in epochs, which series times the steps. Whatever
the log does not say and cannot be inferred without guessing is an
:class:`~cotune.errors.InputError` naming the flag that supplies it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from cotune._checks import excerpt
from cotune.errors import InputError, ProfileError
from cotune.logs._readers import EPOCH_PARAMS, LogData, Series, clock_like
from cotune.profile import EvalRecord, NoiseRecord, Record, StepRecord, WorkloadRecord, record_from_dict, record_to_dict

__all__ = ["ImportOptions", "log_to_records"]


@dataclass(frozen=True)
class ImportOptions:
    """What the user supplies. ``None`` means "from the log, or an error naming the flag"."""

    global_batch: int | None = None
    dataset_size: int | None = None
    metric: str | None = None
    goal: Literal["max", "min"] | None = None
    name: str | None = None
    seed: int = 0
    gpu: str | None = None
    workers: int | None = None
    hosts: int = 1
    local_batch: int | None = None
    accum_steps: int = 1
    # tensorboard, mlflow: the metric's steps are epoch indices (add_scalar(tag, v, epoch))
    steps_are_epochs: bool = False


_EVAL_TOKENS = {"val", "valid", "validation", "eval", "evaluation", "test", "dev"}
# Words of series that step by a counter of their own stage (no metric names these alone).
_OTHER_STAGES = _EVAL_TOKENS | {"validate", "predict"}
_NOT_METRICS = re.compile(r"(runtime|per_sec|per_second|samples_per|steps_per|step_time|learning_rate|^lr$|/lr$|_lr$"
                          r"|grad_norm|grad_sqr|grad_var|noise_scale|b_noise|total_flos|^epoch$|^step$)")
_MIN_TOKENS = {"loss", "error", "err", "perplexity", "ppl", "wer", "cer", "mse", "mae", "rmse", "nll"}
_MAX_TOKENS = {"acc", "accuracy", "top1", "top5", "f1", "precision", "recall", "auc", "auroc", "map", "bleu", "rouge",
               "iou", "miou", "dice", "r2", "exact", "match", "em", "score", "matthews", "mcc", "pearson", "spearman",
               "correlation", "meteor", "ndcg", "mrr", "chrf", "sacrebleu", "hr", "hit", "hits", "hitrate"}


def _tokens(name: str) -> set[str]:
    """Lower-case words of a series name: split at punctuation, at a lower-to-upper case
    change (``ValAcc``) and between letters and digits (``rouge1``, ``top1`` kept whole too)."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name) if w]
    out: set[str] = set()
    for w in words:
        out.add(w.lower())
        out.update(p.lower() for p in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+", w))
    return out


def _is_eval(name: str) -> bool:
    return bool(_tokens(name) & _EVAL_TOKENS) and not _NOT_METRICS.search(name.lower())


def _choose_metric(log: LogData, wanted: str | None, notes: list[str]) -> Series:
    names = list(log.series)
    if wanted is not None:
        # 'accuracy' finds 'eval_accuracy' or 'val/accuracy' when that is the only match.
        near = [n for n in names if n != wanted and n.lower().endswith(wanted.lower()) and _is_eval(n)]
        if wanted in log.series:
            if near and not _is_eval(wanted):
                # Trainer's 'loss' is the training loss; a plan wants the validation curve.
                notes.append(f"{wanted!r} is a training series; the log's validation series {', '.join(map(repr, near))} "
                             f"{'is' if len(near) == 1 else 'are'} what a target is usually measured on: pass --metric "
                             f"{near[0]} for it")
            return log.series[wanted]
        if len(near) == 1:
            return log.series[near[0]]
        if near:
            raise InputError(f"{log.source}: --metric {wanted!r} matches several validation series ({', '.join(near)}): "
                             "pass the full name of one")
        shown = [repr(n) if not n.strip() else n for n in names]  # an empty header cell is a column too: ''
        has = f"the log has {', '.join(shown)}" if names else "the log has no series with a step at all"
        raise InputError(f"{log.source}: " + log.text_columns.get(wanted, f"no series {wanted!r} (--metric); {has}")
                         + _sub_runs_hint(log, wanted))
    candidates = [n for n in names if _is_eval(n)]
    if len(candidates) == 1:
        return log.series[candidates[0]]
    if not candidates:
        # A metric column without a single number (decimal commas): that is the fix, not --metric.
        metricish = [note for k, note in log.text_columns.items() if _is_eval(k)]
        if metricish:
            raise InputError(f"{log.source}: {metricish[0]}")
        # TensorBoard's CSV download of one tag has the columns Wall time, Step and Value: the
        # tag's name is not in the file, so the metric and its direction are the user's to say.
        download = (" (a TensorBoard CSV download holds one tag's values as 'Value': pass --metric Value and --goal "
                    "max or min)" if list(names) == ["Value"] else "")
        raise InputError(
            f"{log.source}: no validation metric recognised (series: {', '.join(names) or 'none'}"
            + "".join(f"; {n}" for n in log.text_columns.values()) + f"): pass --metric NAME{download}"
            + _sub_runs_hint(log, None)
        )
    raise InputError(f"{log.source}: several validation metrics ({', '.join(candidates)}): pass --metric NAME to pick one")


def _sub_runs_hint(log: LogData, wanted: str | None) -> str:
    """Where a TensorBoard run's other series are: SummaryWriter.add_scalars('accuracy',
    {'val': ...}) writes each into a directory of its own (run/accuracy_val), which a reader of
    the run's own event files never sees; "" where there is none."""
    if not log.sub_runs:
        return ""
    named = [d for d in log.sub_runs if wanted is not None and Path(d).name.lower().endswith(wanted.lower())]
    if len(named) == 1:
        return f"; its series {wanted!r} is in {named[0]} (add_scalars writes one there): give that directory"
    listed = ", ".join(log.sub_runs[:5]) + (f" and {len(log.sub_runs) - 5:,} more" if len(log.sub_runs) > 5 else "")
    return (f"; directories below it hold event files of their own ({listed}: add_scalars writes each series into "
            "one): give the one of the validation metric")


def _goal(metric: str, given: str | None) -> Literal["max", "min"]:
    if given is not None:
        if given not in ("max", "min"):
            raise InputError(f"--goal must be 'max' or 'min', got {excerpt(given)}")
        return given  # type: ignore[return-value]
    tokens = _tokens(metric)
    is_min, is_max = bool(tokens & _MIN_TOKENS), bool(tokens & _MAX_TOKENS)
    if is_min != is_max:
        return "min" if is_min else "max"
    raise InputError(f"cannot tell whether {excerpt(metric)} should go up or down: pass --goal max (accuracy-like) or "
                     "--goal min (loss-like)")


def _global_batch(log: LogData, opts: ImportOptions) -> int:
    if opts.global_batch is not None:
        return int(opts.global_batch)
    if opts.workers is not None and opts.local_batch is not None:
        return int(opts.workers * opts.local_batch * opts.accum_steps)
    said = ""
    if "train_batch_size" in log.facts:
        said = f" ({log.source} says train_batch_size {int(log.facts['train_batch_size'])} per process, before gradient accumulation)"
        if opts.workers is not None:  # the per-process batch is the local batch the flags lack
            per_process = int(log.facts["train_batch_size"])
            raise InputError(f"--workers {opts.workers} needs --local-batch too{said}: pass --local-batch {per_process} "
                             f"(and --accum-steps K if the run accumulated gradients), or --global-batch B")
    raise InputError(f"the log does not state the run's global batch{said}: pass --global-batch B (or --workers N --local-batch b)"
                     + _implied_global_batch(log, opts.dataset_size))


def _implied_global_batch(log: LogData, dataset_size: int | None) -> str:
    """A hint, not a guess acted on: the global batch the log's own epoch counter implies
    (its steps per epoch, read at the point furthest into training or, for an epoch index,
    from the steps between epoch ends, against ``dataset_size``),
    a multiple of the per-process batch the log states when it states one; "" when the log
    counts no epochs or the numbers do not agree on a whole multiple."""
    if not dataset_size:
        return ""
    far: tuple[float, float] | None = None
    for s in log.series.values():
        if s.epoch is None:
            continue
        ok = np.isfinite(s.step) & np.isfinite(s.epoch) & (s.step > 0) & (s.epoch > 0)
        if np.any(ok):
            i = int(np.argmax(np.where(ok, s.epoch, -np.inf)))
            if far is None or s.epoch[i] > far[0]:
                far = (float(s.epoch[i]), float(s.step[i]))
    if far is not None and far[0] >= 0.5:  # a fraction of an epoch rounds too coarsely to read a batch from
        steps_per_epoch = far[1] / far[0]
    elif log.facts.get("steps_per_epoch"):  # Lightning's epoch index: the steps between epoch ends
        steps_per_epoch = float(log.facts["steps_per_epoch"])
    else:
        return ""
    per_process = log.facts.get("train_batch_size")
    raw = dataset_size / steps_per_epoch
    if per_process:
        k = max(1, round(raw / per_process))
        batch = int(per_process) * k
    else:
        batch, k = max(1, round(raw)), 0
    # The batch must give back the log's steps per epoch (⌈N/B⌉, within a step or 2 %).
    if abs(math.ceil(dataset_size / batch) - steps_per_epoch) > max(1.0, 0.02 * steps_per_epoch):
        return ""
    why = (f" ({int(per_process)} per process × {k} processes or accumulation steps)" if per_process and k > 1 else "")
    return (f"; the log counts {steps_per_epoch:.4g} steps an epoch, which with --dataset-size {dataset_size:,} is "
            f"{batch:,} samples a step{why}: --global-batch {batch} if that was the run's")


def _batches_per_step(log: LogData) -> int | None:
    """Micro-batches a step by the log's own count: Lightning's ThroughputMonitor logs
    ``train/batches`` (batches so far) at each optimizer step, so with gradient accumulation
    it climbs ``K`` a step. None where the log has no such count or it is no whole number."""
    s = next((s for n, s in log.series.items() if n.lower().endswith("train/batches") and s.value.size >= 2), None)
    if s is None:
        return None
    d_step, d_batches = np.diff(s.step), np.diff(s.value)
    ok = (d_step > 0) & np.isfinite(d_step) & np.isfinite(d_batches) & (d_batches > 0)
    if not np.any(ok):
        return None
    k = float(np.median(d_batches[ok] / d_step[ok]))
    return int(round(k)) if k >= 1 and abs(k - round(k)) < 1e-6 else None


def _median_step_time(log: LogData, *, global_batch: int, steps_per_epoch: int, accum_steps: int,
                      epoch_indexed: frozenset[str] = frozenset()) -> tuple[float, float | None, int | None, str] | None:
    """(seconds per step, spread, how many measurements, where from) or None. The clocks of
    the ``epoch_indexed`` series are not read: they time epochs, not steps."""
    # A rate logged once is a run summary (Trainer's train_steps_per_second through
    # TensorBoard: evaluation pauses included); series over training come first.
    every = {n: s for n, s in log.series.items() if not (_tokens(n) & _EVAL_TOKENS) and s.value.size}
    train = {n: s for n, s in every.items() if s.value.size > 1}
    for name, s in train.items():
        # Megatron-LM's 'iteration-time' is seconds an iteration (an optimizer step)
        if re.search(r"(step_time(_s)?|iteration[-_ ]time(_s)?)$", name.lower()) and np.all(s.value > 0):
            return _summarise(s.value, f"series {name!r}")
    rates = [n for n, s in train.items()
             if re.search(r"(steps|batches|it)_per_sec(ond)?$", n.lower()) and np.all(s.value > 0)]
    # Lightning's ThroughputMonitor logs 'train/device/batches_per_sec' (one device's
    # batches: steps per second) and, on several devices, 'train/batches_per_sec' (that
    # times the world size), which sorts first: with 2 GPUs it halved the step time.
    device = [n for n in rates if re.search(r"device\W?batches_per_sec(ond)?$", n.lower())]
    lightning_global = [n for n in rates if n.lower().endswith("batches_per_sec") and n not in device]
    # ThroughputMonitor counts micro-batches: with gradient accumulation a step is
    # accum_steps of them (a rate 4 times the steps a second gave a step time 4 times short).
    def per_step(name: str) -> tuple[float, str]:
        if re.search(r"batches_per_sec(ond)?$", name.lower()) and accum_steps > 1:
            return float(accum_steps), f"series {name!r} (batches per second, {accum_steps} batches a step)"
        return 1.0, f"series {name!r} (steps per second)"

    if device:
        k, where = per_step(device[0])
        return _summarise(k / log.series[device[0]].value, where)
    for name in rates:
        if name in lightning_global and log.format == "lightning-csv":
            continue  # all devices' batches a second: not the steps, and the world size is not in the log
        k, where = per_step(name)
        return _summarise(k / log.series[name].value, where)
    # A bare 'throughput' has no unit (Megatron-LM's is TFLOP/s a GPU; others tokens/s): not read.
    for name, s in train.items():
        if re.search(r"samples_per_sec(ond)?$", name.lower()) and np.all(s.value > 0):
            return _summarise(global_batch / s.value, f"series {name!r} (samples per second)")
    # Wall-clock stamps: the densest training series; the median of Δt/Δstep ignores the
    # gaps where the run evaluated or checkpointed.
    timed = [s for s in train.values() if s.wall_time_s is not None and np.isfinite(s.step).all() and s.step.size >= 3
             and s.name not in epoch_indexed]
    if timed:
        s = max(timed, key=lambda x: x.step.size)
        d_step, d_t = np.diff(s.step), np.diff(s.wall_time_s)
        ok = (d_step > 0) & (d_t > 0)
        if np.count_nonzero(ok) >= 2:
            return _summarise(d_t[ok] / d_step[ok], f"wall-clock times of {s.name!r}")
    # A table indexed by epoch alone (DAWNBench's TSVs: epoch, hours, accuracy): its clock
    # times whole epochs of ⌈N/B⌉ steps, each with its evaluation in it — no pause to skip.
    def clocked(pool):
        return [s for s in pool if s.wall_time_s is not None and s.epoch is not None and np.isfinite(s.epoch).all()
                and s.epoch.size >= 3]

    # the evaluations' own rows where no training series has a clock (MLPerf's eval table:
    # run_id, epoch_num, eval_accuracy, elapsed_s) — their clock times the epochs all the same
    by_epoch = clocked(every.values()) or clocked(log.series.values())
    if by_epoch:
        s = max(by_epoch, key=lambda x: x.epoch.size)
        epochs, clock_s = _epoch_ends(s.epoch, s.wall_time_s)
        d_epoch, d_t = np.diff(epochs), np.diff(clock_s)
        ok = (d_epoch > 0) & (d_t > 0)
        if np.count_nonzero(ok) >= 2:
            return _summarise(d_t[ok] / (d_epoch[ok] * steps_per_epoch),
                              f"the wall clock of each epoch of {s.name!r} over {steps_per_epoch:,} steps an epoch "
                              "(its evaluations and checkpoints included: an upper bound)")
    steps_per_s = log.summary.get("train_steps_per_second")
    if steps_per_s and steps_per_s > 0:
        runtime, paused = log.summary.get("train_runtime"), log.summary.get("eval_runtime_in_train_s", 0.0)
        if runtime and 0.0 < paused < runtime:
            # the summary's rate counts the evaluations' time as training: take it out
            n = int(log.summary.get("evaluations_in_train", 0))
            return (1.0 / steps_per_s) * (1.0 - paused / runtime), None, None, (
                f"train_steps_per_second of the run summary less the {paused:.4g} s its {n} evaluation(s) took "
                "(checkpoint saving still included)")
        return 1.0 / steps_per_s, None, None, "train_steps_per_second of the run summary (includes evaluation pauses)"
    for name, s in every.items():
        if s.value.size == 1 and re.search(r"steps_per_sec(ond)?$", name.lower()) and s.value[0] > 0:
            return 1.0 / float(s.value[0]), None, None, f"series {name!r}, logged once (a run summary: includes evaluation pauses)"
    return None


def _epoch_ends(epoch: np.ndarray, clock_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each epoch's last clock stamp, where several rows share an epoch: a per-step table
    with an epoch index (a W&B history export: epoch 0 on its first 391 rows, 1 on the next)
    differenced row by row gave the one-step gap between epochs as a whole epoch's time, a
    step time 391 times short. Epochs that go back (several runs in one table) or a table of
    one row an epoch are returned as they are."""
    d_epoch = np.diff(epoch)
    if not (np.any(d_epoch == 0) and np.all(d_epoch >= 0)):
        return epoch, clock_s
    # Non-decreasing: the last row of each run of equal epochs is where that epoch ended.
    last = np.append(d_epoch > 0, True)
    return epoch[last], clock_s[last]


def _epoch_index_offset(log: LogData, metric: Series, steps_per_epoch: int) -> tuple[str, float, float, int, int] | None:
    """Where ``metric``'s steps are an epoch index: (the other series that ran furthest, its
    last step, its median gap between logged steps, the epochs run, what to add to the
    index to give passes done: 1 for a 0-based index, 0 for one that counts passes). The
    other series reached the metric's last step, or one past it, times ⌈N/B⌉ (to within
    half an epoch), and went at least twice as far as the metric (a metric at real steps
    ends near them)."""
    steps = metric.step[np.isfinite(metric.step)]
    if steps.size == 0 or steps_per_epoch < 2 or np.any(steps < 0) or np.any(steps != np.round(steps)):
        return None
    others = [(s, float(np.max(s.step[np.isfinite(s.step)]))) for s in log.series.values()
              if s.name != metric.name and np.any(np.isfinite(s.step))]
    if not others:
        return None
    series, far = max(others, key=lambda x: x[1])
    logged = np.unique(series.step[np.isfinite(series.step)])
    gap = float(np.median(np.diff(logged))) if logged.size >= 2 else 1.0
    last = float(np.max(steps))
    # `far` is the last step *logged*, not the last trained: a series logged every `gap`
    # steps stops up to `gap` short of the end. Take the middle of that window — from
    # `far` alone, 5 epochs of 20 steps logged every 10 (last log at 90) rounded to 4.
    epochs = round((far + gap / 2.0) / steps_per_epoch)
    if not (epochs >= 1 and epochs - last in (0.0, 1.0) and far >= 2.0 * max(last, 1.0)):
        return None
    offset = int(epochs - last)
    if gap >= steps_per_epoch and float(np.min(steps)) == 0.0:
        # Logged an epoch or more apart, the end is known to within half an epoch or
        # worse, so the count can be one off; an index that starts at 0 is the 0-based one
        # (`for epoch in range(n)`), the common loop.
        offset = 1
    return series.name, far, gap, int(last) + offset, offset


# A series that counts the run's epochs: Trainer's 'train/epoch', Lightning's and Keras's 'epoch'.
_EPOCH_SERIES = re.compile(r"(^|[^a-z0-9])epoch$")


@dataclass(frozen=True)
class _IndexVerdict:
    """What :func:`_epoch_index_alone` found: ``refuse`` where the log points to the epoch
    index and nothing to optimizer steps (else a note); ``why``: what the other series
    show, said after the metric's steps."""

    refuse: bool
    why: str


def _epoch_series_says(log: LogData, metric: Series) -> tuple[str, bool] | None:
    """(the epoch-counting series, whether its values show the steps are optimizer steps)
    where one decides it: a value that is not whole (Trainer's 'train/epoch' reads 0.0128
    at step 40) or that lags the step by more than one (Lightning's 0-based 'epoch' stays 0
    over a pass's steps) means steps; whole values that keep step with the step, 0, 1, 2 at
    0, 1, 2 (or one apart), at two points or more, mean the steps are the epoch index.
    None where the log has no such series or it says neither."""
    for name, s in log.series.items():
        if name == metric.name or not _EPOCH_SERIES.search(name.lower()):
            continue
        ok = np.isfinite(s.step) & np.isfinite(s.value)
        step, value = s.step[ok], s.value[ok]
        if step.size == 0:
            continue
        if np.any(np.abs(value - np.round(value)) > 1e-9) or np.any(np.abs(value - step) > 1.0):
            return name, True
        lead = np.unique(value - step)
        if step.size >= 2 and lead.size == 1:
            return name, False
    return None


def _epoch_index_alone(log: LogData, metric: Series, *, steps_per_epoch: int) -> _IndexVerdict | None:
    """Whether ``metric``'s steps may be an epoch index with no series that ran further to
    say so (:func:`_epoch_index_offset` decides where one did): whole steps from 0 or 1
    that go up by one and end inside the first epoch of ``steps_per_epoch`` (read as steps,
    ``add_scalar("Accuracy/test", acc, epoch)`` for 10 epochs became 0.1 with no note).
    None where the log's epoch series shows real optimizer steps (a Hugging Face Trainer
    run evaluated every step of a short fine-tune: 'train/epoch' reads fractions). Else
    refused where the log points to the index: its epoch series counts one a step with
    them, the run's params say it was set to train as many epochs as the metric has
    steps, or every series logged at two steps or more is at the metric's steps (the
    metric alone, or a whole run logged at the epoch: mlflow.tensorflow.autolog(), the
    tutorial's Loss/train beside Accuracy/test, read as 0.09 of an epoch with only a note).
    A note where other series ran at other steps, none further: nothing tells the two
    readings apart, and the wall clock does not (an epoch of a small model takes what a
    large model's step does, and an evaluation every step lengthens the steps)."""
    steps = np.sort(metric.step[np.isfinite(metric.step)])
    if steps.size < 2 or np.any(steps != np.round(steps)) or float(steps[0]) not in (0.0, 1.0):
        return None
    first, last = float(steps[0]), float(steps[-1])
    if not (np.all(np.diff(steps) == 1.0) and last < steps_per_epoch):
        return None
    others = {s.name: s.step[np.isfinite(s.step)] for s in log.series.values() if s.name != metric.name}
    if any(np.any(o > last) for o in others.values()):
        return None
    said = _epoch_series_says(log, metric)
    if said is not None:
        name, real_steps = said
        if real_steps:
            return None
        return _IndexVerdict(refuse=True, why=f"and the log's epoch series {name!r} counts one a step with them")
    # Keras's mlflow autolog logs fit(epochs=10) as param 'epochs': 10 steps 0..9 are those epochs
    epochs_if_index = last + (1.0 if first == 0.0 else 0.0)
    planned = next(((k, v) for k, v in log.facts.items() if k in EPOCH_PARAMS and v == epochs_if_index), None)
    if planned is not None:
        return _IndexVerdict(refuse=True, why=f"and the run's param {planned[0]!r} is {planned[1]:g}, as many "
                             "epochs as it has steps")
    # a series logged once (a run summary, hyper-parameters at step 0) says nothing of the axis
    multi = {n: np.unique(o) for n, o in others.items() if np.unique(o).size >= 2}
    if not multi:
        return _IndexVerdict(refuse=True, why="and no other series was logged at two steps" if others
                             else "and it is the log's only series")
    if all(np.array_equal(o, steps) for o in multi.values()):
        listed = ", ".join(map(repr, list(multi)[:4])) + (f" and {len(multi) - 4} more" if len(multi) > 4 else "")
        return _IndexVerdict(refuse=True, why=f"as do those of every other series ({listed}), and no epoch series "
                             "shows optimizer steps")
    return _IndexVerdict(refuse=False, why="and the other series ran no further, at other steps, none counting "
                         "the epochs")


def _epochs_of_index(log: LogData, metric: Series, steps_per_epoch: int, notes: list[str]) -> np.ndarray:
    """``metric``'s steps read as epoch indices (``--steps-are-epochs``): passes done."""
    if log.format not in ("tensorboard", "mlflow"):
        raise InputError("--steps-are-epochs applies to formats tensorboard and mlflow only (a csv names its epoch "
                         "column with --epoch-column)")
    if metric.epoch is not None:
        raise InputError(f"{log.source}: {metric.name!r} states its epochs already (an epoch_* series of a Keras "
                         "log): leave --steps-are-epochs out")
    found = _epoch_index_offset(log, metric, steps_per_epoch)
    finite = metric.step[np.isfinite(metric.step)]
    if found is not None:
        name, far, gap, epochs, offset = found
        every = "every step" if gap == 1.0 else f"every {gap:g} steps"
        why = (f"{name!r} was logged to step {far:g} {every}, about {epochs} epochs of "
               f"{steps_per_epoch:,} steps")
        if gap >= steps_per_epoch and finite.size and float(np.min(finite)) == 0.0:
            why += ": too coarse to count the last epoch, so its first step 0 decides"
    else:
        # Nothing to compare with: a loop `for epoch in range(n)` logs 0 first, after one pass.
        offset = 1 if finite.size and float(np.min(finite)) == 0.0 else 0
        why = "its first step is 0" if offset else "its first step is 1 or more"
    notes.append(f"the steps of {metric.name!r} read as epochs (--steps-are-epochs): "
                 + (f"a 0-based index, so one is added ({why})" if offset else f"passes done ({why})"))
    return metric.step + float(offset)


def _summarise(values: np.ndarray, where: str) -> tuple[float, float | None, int | None, str]:
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    return float(med), float(q3 - q1) if values.size > 1 else None, int(values.size), where


def _noise_records(log: LogData, global_batch: int, to_epoch) -> list[NoiseRecord]:
    out: list[NoiseRecord] = []
    for name, s in log.series.items():
        if re.search(r"(b_noise|noise_scale|gns)$", name.lower()):
            for step, value in zip(s.step, s.value):
                if math.isfinite(value) and value > 0:
                    out.append(NoiseRecord(b_noise=float(value), global_batch=global_batch, epoch=to_epoch(step)))
    sqr = next((s for n, s in log.series.items() if n.lower().endswith("grad_sqr")), None)
    var = next((s for n, s in log.series.items() if n.lower().endswith("grad_var")), None)
    if sqr is not None and var is not None:
        # Gradient noise scale tr(Σ)/|G|² from the two statistics at the same step (docs/profile-format.md).
        by_step = dict(zip(var.step.tolist(), var.value.tolist()))
        for step, g2 in zip(sqr.step.tolist(), sqr.value.tolist()):
            v = by_step.get(step)
            if v is not None and g2 > 0 and v > 0 and math.isfinite(g2) and math.isfinite(v):
                out.append(NoiseRecord(b_noise=v / g2 * global_batch, global_batch=global_batch, epoch=to_epoch(step)))
    return out


def _readable(records) -> tuple[list, list[str]]:
    """The records the profile reader accepts (its own rule, :func:`record_from_dict`),
    and why each other one is not: what ``cotune import`` writes, every door reads."""
    kept, why = [], []
    for rec in records:
        try:
            record_from_dict(record_to_dict(rec))
        except ProfileError as exc:
            why.append(str(exc))
            continue
        kept.append(rec)
    return kept, why


def log_to_records(log: LogData, opts: ImportOptions) -> tuple[list[Record], list[str]]:
    """Profile records of one run, and notes for the user (what was found, what was not)."""
    notes: list[str] = list(log.notes)
    if opts.dataset_size is None:
        raise InputError("logs do not state the number of training samples per epoch: pass --dataset-size N")
    dataset_size = int(opts.dataset_size)
    global_batch = _global_batch(log, opts)
    metric = _choose_metric(log, opts.metric, notes)
    goal = _goal(metric.name, opts.goal)
    # A partial last batch is still a step, so an epoch is ⌈N/B⌉ steps.
    steps_per_epoch = math.ceil(dataset_size / global_batch)

    def to_epoch(step: float) -> float | None:
        return None if not math.isfinite(step) else float(step) / steps_per_epoch

    def check(implied: float) -> None:
        if abs(implied - steps_per_epoch) > max(1.0, 0.1 * steps_per_epoch):
            notes.append(
                f"the log implies {implied:.4g} steps per epoch, but --dataset-size {dataset_size} / global batch "
                f"{global_batch} gives {steps_per_epoch}: check both"
            )

    from_steps = np.array([to_epoch(s) if to_epoch(s) is not None else math.nan for s in metric.step])
    if opts.steps_are_epochs:
        epochs = _epochs_of_index(log, metric, steps_per_epoch, notes)
    elif metric.epoch is not None:
        epochs = metric.epoch
        finite = np.isfinite(metric.step) & np.isfinite(metric.epoch) & (metric.epoch > 0)
        if np.any(finite):
            check(float(np.median(metric.step[finite] / metric.epoch[finite])))
            # Older Trainers wrote epoch rounded to 2 decimals (0.03 for step 100 of 3137 a
            # pass: 6 % off). Where every epoch is a multiple of 0.01 and the steps, at the
            # flags' steps per epoch, agree with each to within that unit (a real log of
            # 3,137 steps a pass strays 0.0051 from step / 3137), the steps give them.
            shown = epochs[np.isfinite(epochs)]  # an infinite epoch (a corrupted cell) has no decimals
            rounded = np.all(np.abs(shown * 100.0 - np.round(shown * 100.0)) <= 1e-6)
            if rounded and np.all(np.isfinite(from_steps)) and np.all(np.abs(from_steps - epochs) <= 0.01 + 1e-9):
                epochs = from_steps
    else:
        epochs = from_steps
        if "steps_per_epoch" in log.facts:
            check(float(log.facts["steps_per_epoch"]))
        index = _epoch_index_offset(log, metric, steps_per_epoch) if log.format in ("tensorboard", "mlflow") else None
        if index is not None:
            # add_scalar(tag, v, epoch), the PyTorch tutorial's pattern: read as steps, 20 epochs became 0.05
            name, far, _, epochs_run, _ = index
            last = float(np.nanmax(metric.step))
            raise InputError(
                f"{log.source}: the steps of {metric.name!r} end at {last:g}, those of {name!r} at {far:g}, about "
                f"{epochs_run} epochs of {steps_per_epoch:,} steps (--dataset-size {dataset_size} / global batch "
                f"{global_batch}): {metric.name!r} looks logged against the epoch index (add_scalar(tag, value, epoch), "
                f"log_metric(key, value, step=epoch)), which as steps is {last / steps_per_epoch:.3g} epochs; pass "
                "--steps-are-epochs to read its steps as epochs, or check --dataset-size and --global-batch")
        alone = (_epoch_index_alone(log, metric, steps_per_epoch=steps_per_epoch)
                 if log.format in ("tensorboard", "mlflow") else None)
        if alone is not None:
            # add_scalar(tag, v, epoch) with no series that ran further to compare: 10 epochs became 0.09
            steps = metric.step[np.isfinite(metric.step)]
            first, last = float(np.min(steps)), float(np.max(steps))
            seen = (f"the steps of {metric.name!r} go {first:g}, {first + 1:g}, ... {last:g} by one {alone.why}: as "
                    f"steps that is {last / steps_per_epoch:.3g} epochs of {steps_per_epoch:,} steps (--dataset-size "
                    f"{dataset_size} / global batch {global_batch}), a validation curve that ends inside its first "
                    "epoch")
            if alone.refuse:
                raise InputError(
                    f"{log.source}: {seen}; it looks logged against the epoch index (add_scalar(tag, value, epoch), "
                    "log_metric(key, value, step=epoch)): pass --steps-are-epochs to read its steps as epochs; if "
                    "they are optimizer steps, check --dataset-size and --global-batch, or log the run's epoch "
                    "(steps done / steps an epoch) as a series beside it, or write the points as eval records for "
                    "'cotune import records'")
            notes.append(f"{seen}, read as optimizer steps; if they are epoch indices (add_scalar(tag, value, "
                         "epoch), log_metric(key, value, step=epoch)), pass --steps-are-epochs")
    infinite = int(np.count_nonzero(np.isinf(epochs)))
    if infinite:  # '1e400' in a text log, 10**400 in a JSON one: no place on the curve
        notes.append(f"left out {infinite} point(s) of {metric.name!r} at an infinite step or epoch (a corrupted log?)")
    finite_x = epochs[np.isfinite(epochs)]
    if finite_x.size and np.all(finite_x == 0.0):
        raise InputError(f"{log.source}: every point of {metric.name!r} is at epoch 0 (before any training, or logged "
                         "without a step): log it with its step (mlflow.log_metric(key, value, step=...)) or import a "
                         "log of the run's evaluations")
    if metric.unreadable:
        notes.append(f"left out {len(metric.unreadable)} cell(s) of {metric.name!r} that are not numbers "
                     f"({', '.join(map(repr, metric.unreadable[:3]))}): check the log if that is unexpected")
    gaps = np.diff(finite_x)
    # a point a sliver of the usual spacing after another: not training progress
    close = np.flatnonzero((gaps >= 0) & (gaps < 0.05 * np.median(gaps))) if gaps.size >= 2 else np.array([], int)
    # A restart shows in the training series' steps (a run resumed from a checkpoint logs its
    # training steps again; its evaluations may only repeat one step): the metric's own first.
    # Series of other stages are left out: Lightning's ThroughputMonitor logs 'validate/*' at
    # the validation batch count (1, 2, 1, 2, ...), which goes back at every validation.
    training = [s for s in log.series.values() if not (_tokens(s.name) & _OTHER_STAGES)]
    restarted = metric if metric.steps_back or not training else max(training, key=lambda x: x.steps_back)
    if close.size and not restarted.steps_back:  # a rerun's points sit on the first run's: said below
        k = int(close[-1])
        notes.append(f"two points of {metric.name!r} at nearly one epoch ({finite_x[k]:.6g} and {finite_x[k + 1]:.6g}): the "
                     "later may be a separate validation run (trainer.validate() after fit, often of the best checkpoint), "
                     "not training progress; drop it from the log if so")
    back = int(np.count_nonzero(gaps < 0))
    if back:
        notes.append(f"the epochs of {metric.name!r} go back {back} time(s): a log of several runs (or a restart that "
                     "counted from 0 again) is read as one curve; split it and import each run with --append")
    elif restarted.steps_back:
        # Step-keyed series are sorted by step as they are read: the order the log wrote them
        # is where a rerun shows (steps 100, 200, 300, 100, ...).
        files = log.files.get(restarted.name, ())
        where = f" (event files {', '.join(files)})" if files else ""
        notes.append(f"the steps of {restarted.name!r} go back {restarted.steps_back} time(s) in the order the log wrote "
                     f"them{where}: a log of several runs (or a run restarted from an earlier step) is read as one "
                     "curve; split it and import each run with --append")
    evals, dropped = _readable(
        EvalRecord(global_batch=global_batch, epoch=float(e), metric=float(v), seed=opts.seed)
        for e, v in zip(epochs, metric.value)
        if math.isfinite(e)  # no x at all: counted by the reader's note; infinite: above
    )
    if dropped:
        notes.append(f"left out {len(dropped)} point(s) of {metric.name!r} a profile cannot hold ({dropped[0]}): "
                     "check the log if that is unexpected")
    if not evals:
        why = f"none a profile can hold ({dropped[0]})" if dropped else "no point with a step or epoch"
        raise InputError(f"{log.source}: the series {metric.name!r} has {why}: nothing to import")
    name = opts.name or log.run_name
    records: list[Record] = [
        WorkloadRecord(name=name, dataset_size=dataset_size, metric=metric.name, goal=goal, source=f"{log.format} log {log.source}")
    ]
    records.extend(evals)
    notes.append(f"{len(evals)} point{'' if len(evals) == 1 else 's'} of {metric.name!r} ({goal}) at global batch "
                 f"{global_batch}, seed {opts.seed}")

    # --steps-are-epochs: a series that ran no further than the metric's index is logged at
    # it too, once an epoch; its clock read as steps' gave a Keras autolog run's 30 s an epoch
    # as 30 s a step (a series that ran further, at the steps, still times them)
    epoch_indexed: frozenset[str] = frozenset()
    if opts.steps_are_epochs:
        index_end = float(np.max(metric.step[np.isfinite(metric.step)], initial=-math.inf))
        epoch_indexed = frozenset(n for n, s in log.series.items()
                                  if np.any(np.isfinite(s.step)) and np.max(s.step[np.isfinite(s.step)]) <= index_end)
    timing = _median_step_time(log, global_batch=global_batch, steps_per_epoch=steps_per_epoch,
                               accum_steps=opts.accum_steps, epoch_indexed=epoch_indexed)
    counted = _batches_per_step(log) if timing is not None and "batches_per_sec" in timing[3] else None
    if counted is not None and counted != opts.accum_steps:
        # The rate counts micro-batches: with the wrong K the step time is K times off.
        notes.append(f"step time {timing[0]:.4g} s from {timing[3]} not written: the log counts {counted} batches a "
                     f"step ('train/batches'), the flags {opts.accum_steps}: pass --accum-steps {counted} if the run "
                     "accumulated gradients over that many")
    elif timing is None:
        clocks = [n for n in log.series if clock_like(n)] if log.format in ("csv", "keras-csv") else []
        hint = (f" (if column {clocks[0]!r} is a wall clock, name it: --time-column {clocks[0]})" if clocks else "")
        # A rate column whose cells are no numbers ('1,234' samples a second) is why: say so.
        unread = [note for k, note in log.text_columns.items() if any(w in k.lower() for w in ("per_s", "per_sec", "time"))]
        if unread and not clocks:
            hint = f" ({unread[0]})"
        clocked = [n for n in epoch_indexed if log.series[n].wall_time_s is not None and not (_tokens(n) & _EVAL_TOKENS)]
        if clocked and not hint:
            hint = (f" (the clock of {sorted(clocked)[0]!r}, logged at the epoch index like the metric, times epochs, "
                    "not steps)")
        notes.append(f"the log has no step times{hint}: time the steps with 'cotune profile' (its timing probes) to fit "
                     "the time model")
    elif opts.gpu is None:
        notes.append(f"step times found ({timing[0]:.4g} s/step, from {timing[3]}) but not written: pass --gpu G --workers N to record them")
    else:
        if opts.workers is None:
            raise InputError("--gpu needs --workers N: the step time is for that many data-parallel workers")
        per_worker = global_batch / (opts.workers * opts.accum_steps)
        local = opts.local_batch if opts.local_batch is not None else per_worker
        if local != per_worker or local != int(local):
            raise InputError(
                f"global batch {global_batch} is not workers {opts.workers} x local batch {local:g} x accumulation "
                f"{opts.accum_steps}: pass --local-batch b (and --accum-steps k) that multiply to it"
            )
        step_s, spread, count, where = timing
        step, refused = _readable([
            StepRecord(gpu=opts.gpu.lower(), workers=opts.workers, local_batch=int(local), step_time_s=step_s,
                       hosts=opts.hosts, accum_steps=opts.accum_steps, step_time_spread_s=spread, timed_steps=count)
        ])
        if refused:
            notes.append(f"step time {step_s:.4g} s from {where} not written, a profile cannot hold it ({refused[0]})")
        else:
            records.extend(step)
            notes.append(f"step time {step_s:.4g} s on {opts.workers} x {opts.gpu.lower()} from {where}")
    noise, dropped = _readable(_noise_records(log, global_batch, to_epoch))
    if dropped:
        notes.append(f"left out {len(dropped)} gradient-noise measurement(s) a profile cannot hold ({dropped[0]})")
    records.extend(noise)
    if noise:
        notes.append(f"{len(noise)} gradient-noise-scale measurements")
    return records, notes
