"""Reading and writing profiles: JSON Lines, append-only, flushed per record.

A process killed while appending can leave a torn last line (no trailing newline, not
valid JSON). Readers skip such a tail and report it in :attr:`Profile.warnings`;
:func:`append_records` cuts it off before writing, so a resumed run never glues a new
record onto half of an old one (a last line that is a whole record without its newline
is kept, and given one). Every other malformed line is an error that names it.

Reading is bounded whatever the file holds (``/dev/zero``, a 10 GB line, a log pasted
by mistake): at most :data:`MAX_LINE_CHARS` characters a line and
:data:`MAX_PROFILE_LINES` lines, read line by line, never the whole file at once.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import json
import math
import os
import re
import threading
import weakref
from collections import Counter
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from cotune._checks import DuplicateKey, excerpt, file_problem, not_text_reason, plain_number, unique_keys
from cotune._lazy import annotation_module
from cotune.errors import InputError, ProfileError, ProfileLockedError, ProfileNotFoundError, StorageError, warn_beside
from cotune.profile import _quick
from cotune.profile._schema import (
    EvalRecord,
    FailureRecord,
    MissingFieldError,
    NoiseRecord,
    Record,
    StepRecord,
    WorkloadRecord,
    checked_record,
    record_from_dict,
    record_to_dict,
)

if TYPE_CHECKING:
    import pandas as pd
else:  # to_frame's and from_frame's annotations only: reading a profile needs no pandas
    pd = annotation_module("pandas")

__all__ = [
    "Profile",
    "read_profile",
    "parse_profile",
    "write_profile",
    "append_records",
    "ProfileWriter",
    "MAX_LINE_CHARS",
    "MAX_PROFILE_LINES",
    "MAX_PROFILE_CHARS",
    "oom_superseded",
]

#: Longest line of a profile: a record is one short JSON object (~200 characters).
MAX_LINE_CHARS = 64 * 1024
#: Most lines in a profile (a day of probes is a few thousand records).
MAX_PROFILE_LINES = 1_000_000
#: Most characters in a profile: a million ordinary records are ~250 MB; without this cap a
#: million lines just under MAX_LINE_CHARS (records padded with unknown fields) would take
#: an hour to parse.
MAX_PROFILE_CHARS = 2**30


#: What published tables call a record's fields, where the nearest spelling misleads
#: (``num_gpus`` reads as ``gpu``, ``per_worker_batch_size`` as ``workers``): Gavel's and
#: Shockwave's throughput tables, AdaptDL's traces, Hugging Face's and torchrun's names.
_ALIASES = {
    "num_gpus": "workers", "gpus": "workers", "num_workers": "workers", "num_replicas": "workers",
    "world_size": "workers", "replicas": "workers", "n_gpus": "workers",
    "per_worker_batch_size": "local_batch", "local_bsz": "local_batch", "batch_size_per_gpu": "local_batch",
    "per_device_train_batch_size": "local_batch", "per_gpu_batch_size": "local_batch", "micro_batch_size": "local_batch",
    "gpu_type": "gpu", "accelerator": "gpu", "device": "gpu", "worker_type": "gpu",
    "num_nodes": "hosts", "nodes": "hosts", "num_hosts": "hosts", "machines": "hosts",
    "step_time": "step_time_s", "iteration_time_s": "step_time_s", "sync_iteration_time_s": "step_time_s",
    "iter_time": "step_time_s", "time_per_step": "step_time_s", "sync_time": "sync_time_s",
    "global_batch_size": "global_batch",
    "iter_time_ms": "step_time_ms", "iteration_time_ms": "step_time_ms", "batch_time_ms": "step_time_ms",
    "time_per_iter_ms": "step_time_ms", "time_per_step_ms": "step_time_ms", "step_ms": "step_time_ms",
    "allreduce_time": "sync_time_s", "allreduce_time_s": "sync_time_s", "comm_time": "sync_time_s",
    "comm_time_s": "sync_time_s", "communication_time_s": "sync_time_s", "allreduce_time_ms": "sync_time_ms",
    "comm_time_ms": "sync_time_ms", "sync_ms": "sync_time_ms",
    "iterations_per_s": "steps_per_s", "iterations_per_sec": "steps_per_s", "iters_per_s": "steps_per_s",
    "it_per_s": "steps_per_s", "steps_per_sec": "steps_per_s", "steps_per_second": "steps_per_s",
    "samples_per_sec": "samples_per_s", "samples_per_second": "samples_per_s", "images_per_sec": "samples_per_s",
    "examples_per_sec": "samples_per_s", "throughput_samples_per_s": "samples_per_s",
    "epoch_num": "epoch", "eval_accuracy": "metric", "accuracy": "metric",
}


class RowError(ProfileError):
    """A row of a table (:meth:`Profile.from_frame`) that is no valid record: ``row`` is its
    index, ``detail`` what is wrong with it; where a field is missing, ``field`` names it and
    ``foreign`` lists the table's columns that are no field of the record, each with the
    field its name is nearest to (or None) — what a caller that maps columns to fields
    (``cotune import records --column``) turns into its own fix."""

    def __init__(self, detail: str, *, row: Any, field: str | None = None,
                 foreign: tuple[tuple[str, str | None], ...] = (), kind: str | None = None) -> None:
        self.row, self.detail, self.field, self.foreign, self.kind = row, detail, field, foreign, kind
        super().__init__(f"row {excerpt(row)}: {detail}" + (f"; {self.foreign_said()}: rename them" if foreign else ""))

    def foreign_said(self) -> str:
        """``foreign`` in words: "the table's columns 'local_bsz' (is it 'local_batch'?) …"."""
        named = ", ".join(f"{c!r} (is it {near!r}?)" if near else repr(c) for c, near in self.foreign)
        return f"the table's columns {named} are no fields of a {self.kind} record"


def _unit_of(name: str) -> str | None:
    """The unit a column's or field's name ends with (``step_time_s``: 's', ``iter_ms``:
    'ms'), or None."""
    m = re.search(r"(?:^|[_\s(\[])(s|ms|us|ns|sec|secs|seconds|min|mins|minutes|h|hr|hrs|hours|bytes)[)\]]?$", name.strip().lower())
    return None if m is None else {"sec": "s", "secs": "s", "seconds": "s", "mins": "min", "minutes": "min", "hr": "h",
                                   "hrs": "h", "hours": "h"}.get(m.group(1), m.group(1))


def _foreign_columns(kind: Any, columns: Sequence[str]) -> tuple[tuple[str, str | None], ...]:
    """For a table whose columns are named its own way (a published trace's ``local_bsz``,
    ``step_time``): the columns that are no field of a ``kind`` record (at most 8), each with
    the field its name is nearest to."""
    import difflib

    from cotune.profile._schema import _TYPES

    cls = _TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return ()
    known = [f.name for f in fields(cls)] + (["global_batch", *STEP_RATES, *MILLISECOND_FIELDS] if kind == "step" else [])
    # A spelling near a rate or a job's tag is no evidence of its meaning: Gavel's
    # 'throughput_worker_steps_per_s' is steps per second × workers, its 'job_type' a model.
    guessable = [k for k in known if k not in _NOT_GUESSED]
    out = []
    for c in [c for c in columns if c not in known and c != "record"][:64]:  # a near spelling per column: bounded
        alias = _ALIASES.get(c.strip().lower())
        # A near spelling in another unit is a wrong answer: 'step_time_ms' is not 'step_time_s'
        # (every step time 1000x), 'time_s' not 'timed_steps'. Only fields of the column's unit.
        unit = _unit_of(c)
        pool = [k for k in guessable if _unit_of(k) == unit] if unit else guessable
        near = [alias] if alias in known else difflib.get_close_matches(c.lower(), pool, n=1, cutoff=0.5)
        out.append((c, near[0] if near else None))
    # Those with a likely field first (the fix names them), then the rest, in the table's order.
    return tuple(sorted(out, key=lambda pair: pair[1] is None)[:8])



def _real(value: Any) -> float | None:
    """A table cell that is a real number (numpy's too, not a bool) as a float — ±inf beyond
    float range — or None: the one test the derived columns below share."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    try:
        return float(value)
    except OverflowError:  # an int of 400 digits in an object column
        return math.inf if value > 0 else -math.inf


def _local_of(global_batch: Any, row: Mapping[str, Any], index: Any) -> Any:
    """The local batch of a step row that gives its global batch instead: ``global / (workers ×
    accum_steps)``, which must be whole (a global batch that does not split evenly was no
    data-parallel step of equal workers). A field that is no number is left to the record's
    own check, which names it."""
    def whole(v: Any) -> bool:
        x = _real(v)
        return x is not None and math.isfinite(x) and 1 <= x <= 1e15 and x == int(x)

    if not whole(global_batch):
        raise RowError(f"field 'global_batch': must be a whole number >= 1, got {excerpt(global_batch)}: fix it, or "
                       "give local_batch", row=index)
    workers, accum = row.get("workers"), row.get("accum_steps", 1)
    if not (whole(workers) and whole(accum)):
        return 1  # a placeholder: the record's own rule names the missing or bad workers / accum_steps
    split = float(global_batch) / (float(workers) * float(accum))
    if split != int(split):
        raise RowError(f"global_batch {excerpt(global_batch)} does not split into {excerpt(workers)} workers × "
                       f"{excerpt(accum)} accumulation steps: give local_batch, the samples per worker per micro-step",
                       row=index)
    return int(split)


#: A step row's rates, read in place of its ``step_time_s`` (a published table gives a
#: throughput far more often than a step time): the step time each one means.
STEP_RATES: dict[str, str] = {
    "steps_per_s": "1 / steps_per_s",
    "samples_per_s": "workers × local_batch × accum_steps / samples_per_s",
}
#: A step row's times in milliseconds, read as the field in seconds each one stands for.
MILLISECOND_FIELDS: dict[str, str] = {"step_time_ms": "step_time_s", "sync_time_ms": "sync_time_s"}
#: Fields a column is matched to by its exact name or a known alias only, never by a near spelling.
_NOT_GUESSED = frozenset({*STEP_RATES, "sync_time_ms", "job", "cause", "placement"})
#: How far a table's rate may be from the step time it gives too: published tables round.
_RATE_TOLERANCE = 1e-3


def _in_seconds(row: dict[str, Any], index: Any) -> None:
    """Each millisecond field of a step row (:data:`MILLISECOND_FIELDS`) as its field in
    seconds, in place: a number >= 0; where the row gives the seconds too, they must agree
    within 0.1 % (a derived column checked, as ``global_batch``)."""
    for name, field_s in MILLISECOND_FIELDS.items():
        if name not in row:
            continue
        ms = row.pop(name)
        x = _real(ms)
        if x is None or not math.isfinite(x) or x < 0:
            raise RowError(f"field {name!r}: must be a finite number >= 0 (milliseconds), got {excerpt(ms)}", row=index)
        seconds = x / 1000.0
        given, g = row.get(field_s), _real(row.get(field_s))
        if given is None:
            row[field_s] = seconds
        elif g is not None and abs(g - seconds) > _RATE_TOLERANCE * max(abs(g), 1e-12):
            raise RowError(f"{name} {excerpt(ms)} is {seconds:.6g} s, not the row's {field_s} {excerpt(given)}: give one "
                           "of them, or fix the other", row=index)


def _step_time_of(rates: Mapping[str, Any], row: Mapping[str, Any], index: Any) -> Any:
    """The step time of a step row that gives rates (:data:`STEP_RATES`), numbers > 0 (a rate
    of 0 is no measurement: published tables mark a configuration that never ran, out of
    memory, with it): its ``step_time_s`` where it has one, else its first rate's; every
    other one given must agree within 0.1 % (a derived column checked, as ``global_batch``).
    A batch field that is no number is left to the record's own check, which names it."""
    times: dict[str, float] = {}
    for name, rate in rates.items():
        x = _real(rate)
        if x is None or not math.isfinite(x) or x <= 0:
            never = " (a rate of 0 is no measurement: a configuration that never ran? leave the row out)" if x == 0 else ""
            raise RowError(f"field {name!r}: must be a finite number > 0, got {excerpt(rate)}{never}", row=index)
        if name == "steps_per_s":
            times[name] = 1.0 / float(rate)
            continue
        sizes = [row.get("workers"), row.get("local_batch"), row.get("accum_steps", 1)]
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 1 <= v <= 10**15 for v in sizes):
            return row.get("step_time_s", 1.0)  # a placeholder: the record's own rule names the bad batch field
        times[name] = float(sizes[0]) * float(sizes[1]) * float(sizes[2]) / float(rate)
    given = row.get("step_time_s")
    (first, time), *others = ([("step_time_s", given)] if given is not None else []) + list(times.items())
    t = _real(time)
    if t is None or not math.isfinite(t) or t <= 0:
        return time  # the record's own rule names a bad step_time_s
    for name, other in others:
        if abs(other - float(time)) > _RATE_TOLERANCE * float(time):
            said = (f"step_time_s {float(time):.6g} s" if first == "step_time_s"
                    else f"{first} {excerpt(rates[first])} ({float(time):.6g} s)")
            raise RowError(f"{name} {excerpt(rates[name])} means a step time of {other:.6g} s, not the row's "
                           f"{said}: give one of step_time_s, {', '.join(STEP_RATES)}, or fix the other", row=index)
    return float(time)


def oom_superseded(records: Sequence[Record]) -> tuple[bool, ...]:
    """For each ``failure`` record of ``records`` (in file order): whether it is an
    out-of-memory that a *later* ``step`` on its GPU type, at its local batch or above,
    supersedes. Memory grows with the local batch, so a step measured at ``b`` or above
    after the out-of-memory at ``b`` means ``b`` fits now (a probe retried after a fix,
    another run's records); a step *before* it does not (a job that ran at ``b`` for a
    while and then ran out of memory there). The profiler's resume reads the same flags."""
    later_max: dict[str, int] = {}
    flags: list[bool] = []
    for rec in reversed(records):
        if isinstance(rec, StepRecord):
            later_max[rec.gpu] = max(later_max.get(rec.gpu, 0), rec.local_batch)
        elif isinstance(rec, FailureRecord):
            flags.append(rec.failure == "oom" and rec.local_batch <= later_max.get(rec.gpu, 0))
    return tuple(reversed(flags))


def distinct_evals(evals: Sequence[EvalRecord]) -> tuple[list[EvalRecord], int]:
    """The eval records with exact repeats left out (same job, global batch, seed, epoch and
    metric as an earlier record), in their order, and how many were left out — the one rule
    by which the models' fit and ``cotune replan``'s job curve count a measurement once.

    A profile concatenated with itself (the format lets the workload record repeat) read
    every evaluation twice: the sorted curve then had a zero difference beside every real
    one, which tripled the evaluation noise and lowered P(reach) at a measured batch from
    0.999999 to 0.911. The same epoch with another metric is another measurement and stays.
    """
    seen: set[tuple[Any, ...]] = set()
    out = []
    for e in evals:
        metric = "nan" if math.isnan(e.metric) else float(e.metric)
        key = (e.job, float(e.global_batch), int(e.seed), float(e.epoch), metric)
        if key in seen:
            continue
        seen.add(key)
        out.append(e)
    return out, len(evals) - len(out)


def repeated_evals_note(*, dropped: int, total: int, whose: str = "eval") -> str:
    """The note that ``dropped`` of ``total`` eval records (``whose``) were exact repeats counted once."""
    return (f"{whose}: {dropped:,} of {total:,} records repeat an earlier one exactly (same global batch, seed, "
            "epoch and metric) and were counted once: one measurement read twice is not a second run")


@dataclass(frozen=True)
class Profile:
    """All measurements of one workload, grouped by record type (order kept)."""

    workload: WorkloadRecord
    steps: tuple[StepRecord, ...] = ()
    evals: tuple[EvalRecord, ...] = ()
    failures: tuple[FailureRecord, ...] = ()
    noise: tuple[NoiseRecord, ...] = ()
    path: str | None = None
    warnings: tuple[str, ...] = field(default=(), compare=False)
    # From the profiler's optional ``probe_cost`` lines: what measuring cost.
    n_probes: int = field(default=0, compare=False)
    probe_worker_hours: float = field(default=0.0, compare=False)
    # Per failure record: an out-of-memory a later step superseded (oom_superseded; the
    # file's order, which the grouping by type loses). () : none is.
    oom_superseded: tuple[bool, ...] = field(default=(), compare=False, repr=False)
    # The ``job`` of the last step or eval record that has one, in the file's order (which
    # the grouping by type loses): the job running now, whose steps may follow the last
    # evaluation of a job before it. None: no tagged record, or not read from records.
    last_job: str | None = field(default=None, compare=False, repr=False)

    @property
    def gpus(self) -> tuple[str, ...]:
        """GPU types with at least one step record, in first-seen order."""
        return tuple(dict.fromkeys(s.gpu for s in self.steps))

    def _failures_by_supersession(self) -> tuple[list[FailureRecord], list[FailureRecord]]:
        """(the out-of-memory failures a later step superseded, every other failure)."""
        flags = self.oom_superseded or (False,) * len(self.failures)
        gone = [f for f, g in zip(self.failures, flags) if g]
        standing = [f for f, g in zip(self.failures, flags) if not g]
        return gone, standing

    def records(self) -> Iterator[Record]:
        """Every record, workload first, in a stable order that keeps what the file's order
        said: an out-of-memory a later step superseded comes before the steps, every other
        failure after them (so :func:`oom_superseded` of a written copy is the same), and the
        last tagged record is one of :attr:`last_job` (so a written copy's is the same)."""
        gone, standing = self._failures_by_supersession()
        # Evaluations go last unless that would put a finished job's evaluation after the
        # running job's steps: then before the steps (their place among steps says nothing).
        last_eval_job = next((e.job for e in reversed(self.evals) if e.job is not None), None)
        last_step_job = next((s.job for s in reversed(self.steps) if s.job is not None), None)
        evals_first = self.last_job is not None and last_eval_job != self.last_job == last_step_job
        yield self.workload
        yield from gone
        if evals_first:
            yield from self.evals
        yield from self.steps
        yield from standing
        if not evals_first:
            yield from self.evals
        yield from self.noise

    def step_arrays(self, gpu: str) -> dict[str, np.ndarray]:
        """Columns of the step records of one GPU type as numpy arrays."""
        rows = [s for s in self.steps if s.gpu == gpu]
        if not rows:
            raise ProfileError(f"no step records for gpu {excerpt(gpu)}; profiled gpus: {', '.join(self.gpus) or 'none'}")
        sync = [math.nan if s.sync_time_s is None else s.sync_time_s for s in rows]
        return {
            "workers": np.array([s.workers for s in rows], dtype=float),
            "hosts": np.array([s.hosts for s in rows], dtype=float),
            "local_batch": np.array([s.local_batch * s.accum_steps for s in rows], dtype=float),
            "step_time_s": np.array([s.step_time_s for s in rows], dtype=float),
            "sync_time_s": np.array(sync, dtype=float),
        }

    def eval_arrays(self) -> dict[str, np.ndarray]:
        """Columns of the eval records as numpy arrays."""
        return {
            "global_batch": np.array([e.global_batch for e in self.evals], dtype=float),
            "epoch": np.array([e.epoch for e in self.evals], dtype=float),
            "metric": np.array([e.metric for e in self.evals], dtype=float),
            "seed": np.array([e.seed for e in self.evals], dtype=int),
        }

    def accum_steps_by_batch(self, gpu: str) -> dict[int, int]:
        """For each local batch of ``gpu``'s step records as the models see it (per optimizer
        step: ``local_batch × accum_steps``, :meth:`step_arrays`) that was measured with
        gradient accumulation only, the fewest accumulation steps it was measured with —
        how a plan at that batch must run to fit memory as its probes did (a batch also
        measured without accumulation is left out: it runs as it is)."""
        fewest: dict[int, int] = {}
        for s in self.steps:
            if s.gpu == gpu:
                b = s.local_batch * s.accum_steps
                fewest[b] = min(fewest.get(b, s.accum_steps), s.accum_steps)
        return {b: k for b, k in fewest.items() if k > 1}

    def max_local_batch(self, gpu: str) -> int | None:
        """Largest local batch below the smallest out-of-memory probe on ``gpu`` that no
        later step supersedes (None if none; :func:`oom_superseded`)."""
        _, standing = self._failures_by_supersession()
        ooms = [f.local_batch for f in standing if f.gpu == gpu and f.failure == "oom"]
        return min(ooms) - 1 if ooms else None

    def to_frame(self, record: str | None = None) -> "pd.DataFrame":
        """The records as a pandas DataFrame, one row per record, one column per field.

        ``record`` picks one type (``"step"``, ``"eval"``, ``"failure"``, ``"noise"``; the
        plural works too); ``None`` stacks them all with a ``record`` column. Derived
        columns: ``global_batch`` for steps (workers × local batch × accumulation).
        """
        import pandas as pd

        groups = {"step": self.steps, "eval": self.evals, "failure": self.failures, "noise": self.noise}
        wanted = None if record is None else record.rstrip("s") if record != "noise" else "noise"
        if wanted is not None and wanted not in groups:
            raise ProfileError(f"unknown record type {record!r} for to_frame: use one of {', '.join(groups)} or None for all")
        order: list[tuple[str, Sequence[Record]]] = list(groups.items())
        if wanted is None and any(self.oom_superseded):
            # Stacked, the rows keep what the file's order said (as records() does): an
            # out-of-memory a later step superseded comes before the steps.
            gone, standing = self._failures_by_supersession()
            order = [("failure", gone), ("step", self.steps), ("eval", self.evals), ("failure", standing),
                     ("noise", self.noise)]
        frames = []
        for kind, recs in order:
            if wanted is not None and kind != wanted:
                continue
            cls = {"step": StepRecord, "eval": EvalRecord, "failure": FailureRecord, "noise": NoiseRecord}[kind]
            columns = [f.name for f in fields(cls)]
            frame = pd.DataFrame([[getattr(r, c) for c in columns] for r in recs], columns=columns)
            if kind == "step":
                frame["global_batch"] = frame["workers"] * frame["local_batch"] * frame["accum_steps"]
            if wanted is None:
                frame.insert(0, "record", kind)
            frames.append(frame)
        if wanted is not None:
            return frames[0]
        return pd.concat([f for f in frames if len(f)] or frames[:1], ignore_index=True)

    @classmethod
    def from_frame(
        cls,
        frame: "pd.DataFrame",
        *,
        workload: WorkloadRecord | Mapping[str, Any],
        record: str | None = None,
    ) -> "Profile":
        """A profile from a table of records: the inverse of :meth:`to_frame`.

        ``frame`` has one row per record and one column per field (the names of
        docs/profile-format.md). Its ``record`` column names each row's type, as
        ``to_frame()`` writes it; without one, ``record`` (``"step"``, ``"eval"``,
        ``"failure"``, ``"noise"``; the plural works too) is the type of every row.
        ``workload`` is the workload record (or its fields as a mapping).

        Every row is checked by the rule that reads a profile file (one definition:
        :func:`~cotune.profile.record_from_dict`), and an error names the row by its
        index. An empty cell (``NaN``, ``None``, ``pd.NA``) is a field left out — a table
        stacking several record types has one in every column another type owns — except
        an ``eval`` row's ``metric``, where ``NaN`` is a diverged evaluation, as in a file.
        A step row may give ``step_time_ms`` / ``sync_time_ms`` for the fields in seconds
        (:data:`MILLISECOND_FIELDS`). A step row's derived ``global_batch`` column
        (``to_frame`` adds it) must equal ``workers × local_batch × accum_steps``; a step row without ``local_batch`` reads it
        from ``global_batch / (workers × accum_steps)``, which must be whole (a sweep that
        names the global batch). A step row may give its throughput instead of
        ``step_time_s``: ``steps_per_s`` or ``samples_per_s`` (:data:`STEP_RATES`, a number
        > 0). At most :data:`MAX_PROFILE_LINES` rows.
        """
        import pandas as pd

        if not isinstance(frame, pd.DataFrame):
            raise ProfileError(f"from_frame reads a pandas DataFrame, got {type(frame).__name__}: "
                               "wrap the rows in pd.DataFrame(...)")
        if len(frame) > MAX_PROFILE_LINES:
            raise ProfileError(f"{len(frame):,} rows: a profile holds at most {MAX_PROFILE_LINES:,} records; "
                               "keep the medians of repeated measurements")
        kinds = {"step", "eval", "failure", "noise"}
        wanted = None
        if "record" not in frame.columns:
            wanted = None if not isinstance(record, str) else (record if record == "noise" else record.rstrip("s"))
            if wanted not in kinds:
                raise ProfileError(f"the table has no 'record' column and no type for its rows"
                                   f"{'' if record is None else ' (got ' + excerpt(record) + ')'}: name it with --record "
                                   f"(record= from Python), one of {', '.join(sorted(kinds))}")
        elif record is not None:
            raise ProfileError("the table has a 'record' column and record= is given too: leave one out")
        if isinstance(workload, WorkloadRecord):
            head = workload
        elif isinstance(workload, Mapping):
            try:
                head = WorkloadRecord.from_dict({**dict(workload), "record": "workload"})
            except ProfileError as exc:
                raise ProfileError(f"workload=: {exc}") from None
        else:
            raise ProfileError(f"workload= must be a WorkloadRecord or a mapping of its fields, got {type(workload).__name__}")
        columns = [str(c) for c in frame.columns]
        if len(set(columns)) != len(columns):
            twice = sorted(c for c, n in Counter(columns).items() if n > 1)
            raise ProfileError(f"column(s) {', '.join(map(repr, twice))} appear twice: keep one of each")
        records: list[Record] = [head]
        for index, values in zip(frame.index, frame.itertuples(index=False, name=None)):
            row = dict(zip(columns, values))
            kind = row.pop("record", None) if "record" in row else wanted
            if isinstance(kind, str) and kind.strip() == "workload":
                raise RowError("a workload row: give the workload as workload= (cotune import: --name, --dataset-size, "
                               "--metric), not as a row", row=index)
            data = {k: _whole(v) if k in _INT_FIELDS.get(kind, ()) else v for k, v in row.items()
                    if not _empty_cell(v) or (kind == "eval" and k == "metric")}
            if _empty_cell(kind):
                raise RowError(f"its 'record' cell is empty: name the row's type ({', '.join(sorted(kinds))})", row=index)
            # A step's global_batch is derived (to_frame adds it): checked against the record, not
            # read — unless the row has no local_batch (a sweep that names its global batch and
            # GPU count): then the local batch is the global one split over workers × accumulation.
            derived = data.pop("global_batch", None) if kind == "step" else None
            if derived is not None and "local_batch" not in data:
                data["local_batch"] = _local_of(derived, data, index)
                derived = None
            if kind == "step":
                _in_seconds(data, index)  # step_time_ms, sync_time_ms: the fields in seconds
            # A step's throughput stands for its step time (STEP_RATES), after the local batch.
            rates = {k: data.pop(k) for k in STEP_RATES if k in data} if kind == "step" else {}
            if rates:
                data["step_time_s"] = _step_time_of(rates, data, index)
            data["record"] = kind
            try:
                rec = record_from_dict(data)
            except ProfileError as exc:
                missing = exc.field if isinstance(exc, MissingFieldError) else None
                raise RowError(str(exc), row=index, field=missing, kind=kind if isinstance(kind, str) else None,
                               foreign=_foreign_columns(kind, columns) if missing else ()) from None
            if derived is not None:
                product = rec.workers * rec.local_batch * rec.accum_steps
                if not isinstance(derived, (int, float, np.integer, np.floating)) or float(derived) != product:
                    raise RowError(f"global_batch {excerpt(derived)} is not workers × local_batch × accum_steps = "
                                   f"{product}: fix it, or drop the derived column", row=index)
            if rec is not None:
                records.append(rec)
        return _build(records, path=None, warnings=())

    def noise_trace(self) -> tuple[tuple[float, float, float], ...]:
        """The gradient-noise measurements placed in training, rows ``(global_batch, epoch,
        b_noise)``: the noise records that name both their batch and their epoch, or, with no
        noise record, the eval records' gradient statistics (``grad_var / grad_sqr ×
        grad_batch``, at the eval's own batch and epoch) — the same sources, in the same order
        of precedence, as :meth:`noise_scale`. Rows whose scale is not a positive finite number
        are left out (``grad_var = 0`` measures no noise; the law reads such a profile as having
        no scale, :func:`cotune.models._accuracy.usable_noise_scale`). The accuracy model takes
        the median of those taken before their run reached a target (the noise grows as
        training progresses)."""
        rows: list[tuple[float, float, float]] = []

        def add(batch: float, epoch: float, value: float) -> None:
            if math.isfinite(value) and value > 0.0:
                rows.append((float(batch), float(epoch), float(value)))

        if self.noise:
            for n in self.noise:
                if n.global_batch is not None and n.epoch is not None:
                    add(n.global_batch, n.epoch, n.b_noise)
            return tuple(rows)
        for e in self.evals:
            if e.grad_sqr and e.grad_var is not None and e.grad_sqr > 0:
                add(e.global_batch, e.epoch, e.grad_var / e.grad_sqr * (e.grad_batch or e.global_batch))
        return tuple(rows)

    def noise_scale(self) -> float | None:
        """A gradient-noise scale in samples, from noise records or eval gradient statistics."""
        if self.noise:
            return float(np.median([n.b_noise for n in self.noise]))
        stats = [
            (e.grad_var / e.grad_sqr) * (e.grad_batch or e.global_batch)
            for e in self.evals
            if e.grad_sqr and e.grad_var is not None and e.grad_sqr > 0
        ]
        if not stats:
            return None
        return float(np.median(stats))


# Whole-number fields of each record type: a table column holding them turns float where
# another type's rows leave it empty (pandas has no integer NaN), so 4.0 comes back as 4.
_INT_FIELDS: dict[str, frozenset[str]] = {
    cls.kind: frozenset(f.name for f in fields(cls) if str(f.type).replace(" ", "") in ("int", "int|None"))
    for cls in (StepRecord, EvalRecord, FailureRecord, NoiseRecord)
}


#: Fields that hold text (names, kinds, messages), and ``record``: a table reader keeps
#: them as strings (a placement "1" read as the number 1.0 would come back "1.0").
TEXT_FIELDS: frozenset[str] = frozenset({"record"} | {
    f.name for cls in (StepRecord, EvalRecord, FailureRecord, NoiseRecord) for f in fields(cls)
    if str(f.type).replace(" ", "") in ("str", "str|None") or str(f.type).startswith("Literal")
})


def _whole(value: Any) -> Any:
    """An integral float of a table's column as an int; anything else as it is (the record
    check refuses 2.5, never truncates it)."""
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    return value.item() if isinstance(value, np.integer) else value


def _empty_cell(value: Any) -> bool:
    """A cell a table left empty: ``None``, a float ``NaN``, ``pd.NA``/``NaT`` (pandas is loaded:
    only :meth:`Profile.from_frame` calls this)."""
    if value is None:
        return True
    if isinstance(value, (str, bytes)):
        return False
    import pandas as pd  # already imported by the caller: a dictionary lookup

    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or another array-like cell: not empty, the record check refuses it
        return False


def _build(
    records: Iterable[Record], *, path: str | None, warnings: Sequence[str], probe_costs: Sequence[float] = ()
) -> Profile:
    workload: WorkloadRecord | None = None
    steps, evals, failures, noise = [], [], [], []
    timing: list[Record] = []  # steps and failures in file order: what supersedes an out-of-memory
    last_job: str | None = None
    for rec in records:
        if isinstance(rec, WorkloadRecord):
            if workload is not None and rec != workload:
                differs = next(f.name for f in fields(rec) if getattr(rec, f.name) != getattr(workload, f.name))
                raise ProfileError(
                    f"two different workload records: {differs} is {excerpt(getattr(workload, differs))} in one and "
                    f"{excerpt(getattr(rec, differs))} in the other; one profile holds one workload: keep one record",
                    path=path,
                )
            workload = rec
        elif isinstance(rec, StepRecord):
            steps.append(rec)
            timing.append(rec)
            last_job = last_job if rec.job is None else rec.job
        elif isinstance(rec, EvalRecord):
            evals.append(rec)
            last_job = last_job if rec.job is None else rec.job
        elif isinstance(rec, FailureRecord):
            failures.append(rec)
            timing.append(rec)
        elif isinstance(rec, NoiseRecord):
            noise.append(rec)
    if workload is None:
        raise ProfileError(
            'no workload record: add a line such as {"record": "workload", "name": "my-job", "dataset_size": 50000}',
            path=path,
        )
    return Profile(
        workload=workload,
        steps=tuple(steps),
        evals=tuple(evals),
        failures=tuple(failures),
        noise=tuple(noise),
        path=path,
        warnings=tuple(warnings),
        oom_superseded=oom_superseded(timing),
        n_probes=len(probe_costs),
        probe_worker_hours=float(sum(probe_costs)),
        last_job=last_job,
    )


# A Profile's record groups and the record type each holds.
_GROUPS: tuple[tuple[str, type], ...] = (
    ("steps", StepRecord), ("evals", EvalRecord), ("failures", FailureRecord), ("noise", NoiseRecord),
)


def checked_profile(profile: Profile) -> Profile:
    """``profile`` with every record judged by the rule that reads a file's line.

    A :class:`Profile` built in Python (``Profile(workload=..., steps=...)``, or
    ``dataclasses.replace`` of one) holds records no reader checked: ``gpu=None`` was an
    ``AttributeError`` deep in the fit, ``metric="x"`` a ``TypeError``, ``step_time_s="0.1"``
    was taken as a number and ``dataset_size=-5`` told to fit local batches of at most -5.
    Every door that takes a Profile (``load_profile``) passes it here: a record the rule
    refuses is a one-line :class:`ProfileError` naming its place (``Profile.steps[3]``) and
    field. Records a reader built are not checked again (:func:`checked_record`), so a
    profile read from a file costs a look-up per record."""

    def checked(record: Any, cls: type, where: str) -> Any:
        if not isinstance(record, cls):
            article = "an" if cls.__name__[0] in "AEIOU" else "a"
            raise ProfileError(f"{where} must be {article} {cls.__name__}, got {excerpt(record)}: build one "
                               f"(cotune.{cls.__name__}(...)) or read a dict with cotune.profile.record_from_dict")
        try:
            return checked_record(record)
        except ProfileError as exc:
            raise ProfileError(f"{where}: {exc.reason}") from None

    changes: dict[str, Any] = {}
    workload = checked(profile.workload, WorkloadRecord, "Profile.workload")
    if workload is not profile.workload:
        changes["workload"] = workload
    for name, cls in _GROUPS:
        group = getattr(profile, name)
        if isinstance(group, (str, bytes, Mapping)) or not isinstance(group, Iterable):
            raise ProfileError(f"Profile.{name} must be a tuple of {cls.__name__} records, got {excerpt(group)}")
        records = tuple(checked(r, cls, f"Profile.{name}[{i}]") for i, r in enumerate(group))
        if type(group) is not tuple or any(a is not b for a, b in zip(records, group)):
            changes[name] = records
    return replace(profile, **changes) if changes else profile


def _probe_cost_worker_hours(data: dict) -> float | None:
    """Worker-hours of one optional ``probe_cost`` line (None if it is not usable)."""
    wall, workers = data.get("wall_s"), data.get("workers", 1)
    ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for v in (wall, workers))
    return wall * workers / 3600.0 if ok else None


# How to turn a JSON array of records into JSON Lines, for the messages that meet one.
_ONE_PER_LINE = "jq -c '.[]' FILE > PROFILE.jsonl, or json.dumps(record) per line"


def parse_profile(lines: Iterable[str], *, path: str | None = None) -> Profile:
    """Parse JSON Lines text into a :class:`Profile`.

    ``lines``: the text (``str``, or UTF-8 ``bytes``) or its lines (a file opened in text or
    binary mode, a list of ``str`` or ``bytes``); a line of another type is a
    :class:`ProfileError` naming it. Blank lines are skipped. A final line that is not valid JSON *and* has no newline
    is a torn write from an interrupted run: it is skipped with a warning. Lines beyond
    :data:`MAX_LINE_CHARS` characters or :data:`MAX_PROFILE_LINES` lines are an error.
    """
    if isinstance(lines, bytes):
        try:
            lines = lines.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("parse_profile: the bytes are not UTF-8 text; a profile is UTF-8 JSON Lines") from None
    if isinstance(lines, str):  # the text itself: its lines, not its characters
        # Split where a file's reader splits (\n, \r, \r\n: open(newline="")), not where
        # str.splitlines does: a U+2028 or NEL inside a record's string is no line end.
        lines = io.StringIO(lines, newline="")
    elif not isinstance(lines, Iterable):
        raise InputError(f"parse_profile reads lines of JSON text (a file object, a list of lines or a string), got {excerpt(lines)}")
    records: list[Record] = []
    warnings: list[str] = []
    probe_costs: list[float] = []
    for number, raw, last in _bounded(lines, path):
        text = raw.strip()
        if not text:
            continue
        try:
            data = json.loads(text, object_pairs_hook=unique_keys)
        except json.JSONDecodeError as exc:
            if last and not raw.endswith("\n"):
                warnings.append(f"line {number}: skipped a torn last line (an interrupted write)")
                continue
            if text in ("[", "{"):
                # json.dump(..., indent=...): one document over many lines, each no record
                how = _ONE_PER_LINE if text == "[" else "jq -c . FILE > PROFILE.jsonl, or json.dumps(record) per line"
                raise ProfileError(f"a line holding only {text!r}: this looks like one JSON document spread over lines "
                                   f"({'an array' if text == '[' else 'an indented object'}), not JSON Lines: write one "
                                   f"compact record per line ({how})", path=path, line=number) from None
            at = "" if exc.msg.endswith(" at") else " at"  # "Unterminated string starting at" ends in it already
            raise ProfileError(f"not valid JSON ({exc.msg}{at} column {exc.colno}): fix or delete this line", path=path,
                               line=number) from None
        except DuplicateKey as exc:
            raise ProfileError(f"{exc}: keep one of them", path=path, line=number) from None
        except RecursionError:
            raise ProfileError("not a record: JSON nested too deeply; a record is one flat object", path=path, line=number) from None
        except ValueError as exc:  # an integer of more than 4300 digits
            what = "a number of more than 4300 digits" if "digits" in str(exc) else " ".join(str(exc).split())[:120]
            raise ProfileError(f"not valid JSON ({what}): fix or delete this line", path=path, line=number) from None
        if isinstance(data, dict) and data.get("record") == "probe_cost":
            cost = _probe_cost_worker_hours(data)
            if cost is not None:
                probe_costs.append(cost)
        try:
            rec = record_from_dict(data)
        except ProfileError as exc:
            raise ProfileError(str(exc), path=path, line=number) from None
        if rec is not None:
            records.append(rec)
    return _build(records, path=path, warnings=warnings, probe_costs=probe_costs)


def _bounded(lines: Iterable[str], path: str | None) -> Iterator[tuple[int, str, bool]]:
    """``(number, line, is_last)`` for each line, refusing overlong lines and files."""
    prev: str | None = None
    number = 0
    total = 0
    for raw in lines:
        if prev is not None:
            yield number, prev, False
        number += 1
        if type(raw) is not str:
            raw = _text_line(raw, path=path, line=number)
        total += len(raw)
        if total > MAX_PROFILE_CHARS:
            raise ProfileError(
                f"more than {MAX_PROFILE_CHARS:,} characters: a profile holds short records; split it, or drop the "
                "fields cotune does not read",
                path=path,
                line=number,
            )
        if len(raw) > MAX_LINE_CHARS:
            array = raw.lstrip().startswith("[")
            raise ProfileError(
                f"line longer than {MAX_LINE_CHARS:,} characters: a record is one short JSON object; "
                + (f"a JSON array of records? a profile is JSON Lines, one record per line ({_ONE_PER_LINE})"
                   if array else "is this a profile (JSON Lines)?"),
                path=path,
                line=number,
            )
        if number > MAX_PROFILE_LINES:
            raise ProfileError(
                f"more than {MAX_PROFILE_LINES:,} lines: split the profile, or thin its learning curves", path=path, line=number
            )
        prev = raw
    if prev is not None:
        yield number, prev, True


def _text_line(raw: Any, *, path: str | None, line: int) -> str:
    """A line handed to :func:`parse_profile` that is not a ``str``: a file opened in binary
    mode yields ``bytes``, read as the UTF-8 a profile is (as parse_profile reads bytes whole);
    anything else is no line of text. Before, both were a TypeError from inside the reader."""
    if isinstance(raw, str):
        return str(raw)
    if isinstance(raw, (bytes, bytearray, memoryview)):
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            why = not_text_reason(bytes(raw)) or "not UTF-8 text"
            raise ProfileError(f"{why}: a profile is UTF-8 JSON Lines", path=path, line=line) from None
    raise ProfileError(f"a line of a profile is text, got {excerpt(raw)}: give parse_profile a file opened in text mode, "
                       "a list of str lines or the text itself (or read_profile(PATH))", path=path, line=line)


_UNDECODED = re.compile("[\udc80-\udcff]")  # bytes that were no UTF-8, kept by errors="surrogateescape"


def _lines_of(fh: IO[str], *, path: str) -> Iterator[str]:
    """Lines of a file opened with ``errors="surrogateescape"``: a line that is not UTF-8 is
    an error, except the last one when it has no newline — a torn write, which may end
    inside a multi-byte character (``"caf\xc3``) and is skipped as any torn line is.
    The first line's is a bare ``UnicodeDecodeError`` (the whole file may be no text: a
    gzip file, UTF-16, which the caller names); a later one's names its line."""
    # readline with a size: a file without newlines (/dev/zero) is read in bounded pieces,
    # each one line as parse_profile counts them.
    number = 0
    while True:
        line = fh.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        number += 1
        if number == 1 and not_text_reason(line.encode("utf-8", "surrogateescape")):
            # A zip or bzip2 header is ASCII up to its clock and checksum bytes, which may
            # hold a newline: its first "line" can decode cleanly. The caller names the format.
            raise UnicodeDecodeError("utf-8", b"", 0, 1, "not UTF-8 text")
        bad = _UNDECODED.search(line)
        if bad and (number == 1 or line.endswith(("\n", "\r")) or len(line) > MAX_LINE_CHARS
                    or not line.lstrip().startswith("{")):
            # A torn record follows whole ones and starts as one; anything else is no text.
            if number == 1:
                raise UnicodeDecodeError("utf-8", b"", 0, 1, "not UTF-8 text")
            byte = ord(bad.group()) - 0xDC00
            raise ProfileError(f"not UTF-8 text (byte 0x{byte:02x} at column {bad.start() + 1}): a profile is UTF-8 JSON "
                               "Lines; fix or delete this line", path=path, line=number)
        yield line


def check_profile_path(path: Path, *, shown: str | None = None) -> None:
    """Refuse a path that exists and is not a regular file (:func:`cotune._checks.file_problem`:
    a directory, or a device, pipe or socket — a FIFO without a writer would block a
    reader forever, ``/dev/zero`` never ends). A path that does not exist passes."""
    problem = file_problem(path)
    where = str(path) if shown is None else shown
    if problem is None and _in_symlink_loop(path):
        # A path mistake, not the storage's: without this the writers said "fix the storage" (exit 3).
        raise ProfileError("is a loop of symbolic links (a link that leads back to itself): point the link at a "
                           "profile file, or give the file's own path", path=where)
    if problem == "is a directory":
        raise ProfileError("is a directory, not a profile file: give a file path", path=where)
    if problem is not None:
        raise ProfileError(f"{problem}: give the path of a profile file", path=where)


def _in_symlink_loop(path: "str | os.PathLike[str]") -> bool:
    """Whether resolving ``path`` goes round a loop of symbolic links (ELOOP)."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    except (ValueError, TypeError):  # a NUL byte: the open that follows names it
        return False
    return False


def read_profile(path: str | os.PathLike[str]) -> Profile:
    """Read a profile file (JSON Lines). Raises :class:`ProfileError` with the line at fault."""
    p, shown = _profile_file(path)
    with _reading(p, shown=shown):
        check_profile_path(p, shown=shown)
        # utf-8-sig: a byte-order mark at the start (a profile saved by a Windows editor or
        # PowerShell) is read past, not reported as line 1's bad JSON.
        with p.open("r", encoding="utf-8-sig", errors="surrogateescape", newline="") as fh:
            return parse_profile(_lines_of(fh, path=shown), path=shown)


def file_lines(path: str | os.PathLike[str]) -> Iterator[str]:
    """The lines of a profile file exactly as :func:`read_profile` reads them (its encoding,
    its line ends, its errors), for a reader that must see the text before parsing it: the
    HTTP service hashes and counts what it read, and parses that same text (``"".join`` of
    the lines is what :func:`parse_profile` takes). Closing the iterator early closes the file."""
    p, shown = _profile_file(path)
    with _reading(p, shown=shown):
        check_profile_path(p, shown=shown)
        with p.open("r", encoding="utf-8-sig", errors="surrogateescape", newline="") as fh:
            yield from _lines_of(fh, path=shown)


def _profile_file(path: object) -> tuple[Path, str]:
    """The path of a profile file, and how messages show it."""
    if not isinstance(path, (str, os.PathLike)):
        raise ProfileError(f"a profile is a path to a JSON Lines file, got {excerpt(path)}")
    p = Path(path)
    text = str(p)
    return p, text if text.isprintable() and len(text) <= 200 else excerpt(text, limit=200)


@contextlib.contextmanager
def _reading(p: Path, *, shown: str) -> Iterator[None]:
    """Turn the errors of opening and reading the profile file ``p`` into one :class:`ProfileError` each."""
    try:
        yield
    except FileNotFoundError:
        from cotune.examples import nearest_example

        text = str(p)
        guess = nearest_example(text)
        if guess == text:  # the name itself: read_profile reads files only
            hint = f"read_profile takes a file path; load_profile('{guess}') reads the bundled example of that name"
        else:
            hint = ("check the path, or run 'cotune examples' for bundled profiles" if guess is None else
                    f"check the path; the bundled example of the nearest name is '{guess}' (cotune examples lists them)")
        raise ProfileNotFoundError(f"no such file: {hint}", path=shown) from None
    except UnicodeDecodeError:
        why = not_text_reason(p)
        raise ProfileError(f"{why}; a profile is JSON Lines" if why else "not UTF-8 text: a profile is JSON Lines",
                           path=shown) from None
    except PermissionError:
        raise ProfileError("permission denied: make the file readable", path=shown) from None
    except ProfileError:
        raise
    except ValueError:  # os functions refuse a path with a NUL byte
        raise ProfileError("not a usable path (it holds a NUL byte): give the profile's file name", path=shown) from None
    except OSError as exc:  # ENAMETOOLONG, ELOOP (a symlink loop), EIO, ...
        raise ProfileError(f"cannot read it ({exc.strerror or exc}): give the path of a profile file", path=shown) from None


def _dump(record: Record) -> str:
    """A record's line, checked by the rule that reads it: a record built by hand
    (``StepRecord(workers=-3, ...)``, a numpy integer) is refused before it is written, where
    written it would make the whole profile unreadable; what is written is the checked
    record's plain values."""
    if not isinstance(record, (WorkloadRecord, StepRecord, EvalRecord, FailureRecord, NoiseRecord)):
        if is_dataclass(record) and isinstance(getattr(record, "kind", None), str) and (
                getattr(record, "optional", False) is True):
            # A tool's own record that readers skip (the profiler's probe costs): as it is.
            data = {k: plain_number(v) for k, v in record_to_dict(record).items()}  # type: ignore[arg-type]
            return json.dumps(data) + "\n"
        raise ProfileError(f"a profile holds records (cotune.profile.StepRecord, EvalRecord, ...), got "
                           f"{type(record).__name__}: build one, or read a dict with record_from_dict")
    # A running job's next record of a shape checked before (cotune/profile/_quick.py): the
    # same line, without building and reading it back again.
    line = _quick.quick_line(record)
    if line is not None and len(line) <= MAX_LINE_CHARS:  # longer: the full check names the field
        return line
    try:
        checked = checked_record(record)
    except ProfileError as exc:
        raise ProfileError(f"{record.kind} record not written: {exc}") from None
    data = record_to_dict(checked)
    # json's defaults are the profile's spelling (", " and ": " between items, NaN and Infinity
    # kept): called with them alone, json.dumps reuses its one module-level encoder, where
    # passing them explicitly built a new JSONEncoder for every record written.
    line = json.dumps(data) + "\n"
    if len(line) > MAX_LINE_CHARS:
        # The reader refuses such a line, and with it the whole profile: an import of a 70,000-
        # character placement or message made a valid profile unreadable for every command.
        field_name = max(data, key=lambda k: len(json.dumps(data[k])))
        raise ProfileError(f"{record.kind} record not written: it would be a line of {len(line):,} characters, over the "
                           f"{MAX_LINE_CHARS:,} a profile line may hold (its field {field_name!r} alone is "
                           f"{len(json.dumps(data[field_name])):,}): shorten that value")
    _quick.remember(record, checked, line)
    return line


def make_folder(path: Path) -> None:
    """Create a profile's folder where it is missing, as :class:`ProfileWriter` does
    (``cotune import … --out runs/p.jsonl`` failed with "cannot write it: No such file or
    directory", exit 3, as if the storage had failed). A file where a folder of the path
    should be is a mistyped path: :class:`InputError` (exit 2)."""
    for folder in (path.parent, *path.parent.parents):
        if folder.exists():
            if not folder.is_dir():
                raise InputError(f"{path}: {folder} is a file, not a folder: give a path inside a folder")
            break
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError.from_os_error(exc, path=path.parent, doing="create the folder") from None


def write_profile(profile: Profile, path: str | os.PathLike[str], *, exclusive: bool = False) -> None:
    """Write a whole profile atomically (a temporary file of its own, then a rename).

    A file already at ``path`` is replaced under the writers' lock
    (:class:`ProfileWriter`'s): while a tracker, the profiler or another writer holds it,
    :class:`~cotune.errors.ProfileLockedError` (exit 3) says so and the file is kept — the
    rename would unlink the file that writer goes on appending to, and its records would be
    lost. A path that is no regular file (a directory, a device, a pipe) is a
    :class:`~cotune.errors.ProfileError` (exit 2), never replaced.

    ``exclusive``: the profile is new — if a file appears at ``path`` meanwhile (a tracker
    or another import started on it), it is kept and :class:`~cotune.errors.InputError`
    says so, instead of replaced.
    """
    import tempfile

    if not isinstance(profile, Profile):  # before any file is touched: its .records() was an AttributeError
        raise InputError(f"write_profile writes a Profile (cotune.load_profile or parse_profile makes one), got "
                         f"{excerpt(profile)}; append_records writes records")
    p = Path(path)
    check_profile_path(p)
    make_folder(p)
    tmp: Path | None = None
    try:
        # A name of its own: two imports to one new --out once wrote into one shared
        # '<out>.tmp' and published the mix of both.
        fd, name = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
        tmp = Path(name)
        # mkstemp makes it 0600; a profile is made as open() makes one (0666 less the umask),
        # as the tracker's and the profiler's are, so others who could read them still can.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for rec in profile.records():
                fh.write(_dump(rec))
            fh.flush()
            os.fsync(fh.fileno())
        if exclusive:
            _publish_new(tmp, p)
        else:
            with _writers_lock(p):
                os.replace(tmp, p)
    except BaseException as exc:
        # A full disk, a record the reader would refuse (ProfileError from the serialiser)
        # or an interrupt: no half-written temporary file is left beside the profile.
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        if isinstance(exc, OSError) and not isinstance(exc, StorageError):  # a lock held (ProfileLockedError): as it is
            raise StorageError.from_os_error(exc, path=p, doing="write it") from None
        raise


@contextlib.contextmanager
def _writers_lock(p: Path) -> Iterator[None]:
    """Hold the writers' exclusive lock on the file at ``p`` (none there: nothing to hold)."""
    flags = os.O_NONBLOCK | os.O_CLOEXEC  # non-blocking: a pipe put there meanwhile never hangs the open
    try:
        try:
            # Read-write where allowed: NFS emulates flock with POSIX locks, whose exclusive
            # lock needs a descriptor open for writing.
            fd = os.open(p, os.O_RDWR | flags)
        except PermissionError:
            fd = os.open(p, os.O_RDONLY | flags)
    except FileNotFoundError:
        yield
        return
    try:
        _lock_exclusive(fd, path=p)
        yield
    finally:
        os.close(fd)  # the lock goes with it, after the rename


def _publish_new(tmp: Path, p: Path) -> None:
    """Give ``tmp`` the name ``p`` only if nothing has it: a hard link fails with EEXIST
    when another process created ``p`` since it was checked (a rename would replace it)."""
    try:
        os.link(tmp, p)
    except FileExistsError:
        if p.is_symlink() and not p.exists():
            # A link to nowhere (or round a loop) is no file that "appeared": name it.
            raise InputError(f"{p} is a symbolic link to {os.readlink(p)!r}, which does not exist: it is left as it "
                             "is; give the target's own path, or remove the link") from None
        raise InputError(f"{p} appeared while this profile was being written (another import, a tracker or a profiler "
                         "started on it): it is left as it is; pass --append to add to it, or choose another --out") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
            raise
        # A filesystem without hard links: the narrower check-then-rename.
        if p.exists():
            raise InputError(f"{p} appeared while this profile was being written: it is left as it is; pass --append "
                             "to add to it, or choose another --out") from None
        os.replace(tmp, p)
        return
    tmp.unlink()


def _repair_tail(fh: IO[bytes], *, path: Path) -> None:
    """End the file on a fresh line before appending: a last line without its line end is
    cut when it is a torn record (not a JSON object), and given its newline when it is a
    whole one — a file saved by an editor that omits the final newline, or a write that
    stopped just before it, loses nothing (readers take such a line as a record too).

    A line ends at ``\\n`` or ``\\r`` (a file saved with classic Mac line ends reads as lines,
    and must not be cut as one torn line). At most one line of a record's length is ever
    cut: a longer tail without a line end is no torn record, and is refused, never cut."""
    fh.seek(0, os.SEEK_END)
    size = fh.tell()
    if size == 0:
        return
    fh.seek(size - 1)
    if fh.read(1) in (b"\n", b"\r"):
        return
    cut = _last_line_end(fh, size)
    if cut is None:
        raise ProfileError(f"its last {_TORN_LIMIT_BYTES:,}+ bytes hold no line end, more than a record's line: no "
                           "torn record that a writer could cut; check the path, or fix the file (one JSON record a line)",
                           path=str(path))
    if _is_record(fh, cut, size):
        fh.write(b"\n")  # "a+b": appends at the end
        return
    fh.truncate(cut)


def holds_records(path: Path) -> bool:
    """Whether the profile at ``path`` holds a record a writer must keep (and check: its
    workload) — a whole line, or a last line without its line end that is a whole record,
    as readers read it. A file killed during its very first write holds only a torn line
    (or blanks), which the writer cuts: it is started afresh. Lines end at ``\\n`` or
    ``\\r``, as readers split them (a file with classic Mac line ends was taken for one
    torn line, and a second workload record written)."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    with open(path, "rb") as fh:
        # A line of MAX_LINE_CHARS characters takes up to four bytes a character in UTF-8.
        head = fh.read(_TORN_LIMIT_BYTES + 1)
        *whole, last = head.replace(b"\r", b"\n").split(b"\n")
        if any(line.strip(b" \t\x00") for line in whole):
            return True
        if not last.strip(b" \t\x00"):
            return False
        # Only a last line is left: a record when it is one, read to the file's end (_is_record
        # bounds it; a line that goes on past a line end is no JSON object, so no record).
        return _is_record(fh, len(head) - len(last), fh.seek(0, os.SEEK_END))


def _is_record(fh: IO[bytes], start: int, end: int) -> bool:
    """Whether bytes ``start:end`` hold one whole JSON object (a record line without its newline)."""
    if end - start > _TORN_LIMIT_BYTES:
        return False
    fh.seek(start)
    try:
        # the first line of a file saved with a byte-order mark: still a record (utf-8-sig)
        return isinstance(json.loads(fh.read(end - start).decode("utf-8-sig" if start == 0 else "utf-8")), dict)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False


#: The longest tail a writer cuts as a torn line: a record's line of MAX_LINE_CHARS
#: characters, at most 4 bytes each in UTF-8.
_TORN_LIMIT_BYTES = 4 * MAX_LINE_CHARS


def _last_line_end(fh: IO[bytes], pos: int) -> int | None:
    """Offset just after the last ``\\n`` or ``\\r`` before ``pos`` (0: the file's start),
    looking back at most :data:`_TORN_LIMIT_BYTES` bytes (None: no line end that near)."""
    floor = max(0, pos - _TORN_LIMIT_BYTES - 1)
    fh.seek(floor)
    block = fh.read(pos - floor)
    idx = max(block.rfind(b"\n"), block.rfind(b"\r"))
    if idx >= 0:
        return floor + idx + 1
    return 0 if pos <= _TORN_LIMIT_BYTES else None


def _lock_exclusive(fd: int, *, path: Path) -> None:
    """Take the writers' exclusive ``flock`` on the file behind ``fd`` without waiting:
    :class:`~cotune.errors.ProfileLockedError` naming the holder when another writer has it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise StorageError.from_os_error(exc, path=path, doing="lock it") from None
        holder = _lock_holder(fd)
        if holder == os.getpid():
            who, stop = f"another writer in this process (pid {holder})", " (close the first Tracker or ProfileWriter)"
        else:
            who = _describe_pid(holder) if holder is not None else "another process"
            stop = f" (kill {holder})" if holder is not None else ""
        raise ProfileLockedError(
            f"{path}: is being written by {who}: two writers would mix their records; wait for it "
            f"to finish, stop it{stop}, or write to another file",
            filename=str(path), holder_pid=holder,
        ) from None


def _names_same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open at ``fd`` (it was not replaced or removed)."""
    try:
        opened, named = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (opened.st_dev, opened.st_ino) == (named.st_dev, named.st_ino)


def _lock_holder(fd: int) -> int | None:
    """PID holding a flock on the file behind ``fd``, from ``/proc/locks`` (None if unknown)."""
    try:
        st = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            table = fh.read().splitlines()
    except OSError:
        return None
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for row in table:
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:56789 0 EOF" (a "->" marks a waiter)
        parts = row.split()
        if "->" in parts or len(parts) < 6 or parts[1] != "FLOCK":
            continue
        try:
            major, minor, inode = parts[5].split(":")
            key = (int(major, 16), int(minor, 16), int(inode))
            pid = int(parts[4])
        except ValueError:
            continue
        if key == want and pid > 0:
            return pid  # this process's own pid: another writer opened here (a second Tracker, say)
    return None


def _describe_pid(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return f"pid {pid}"
    cmd = raw.replace(b"\0", b" ").decode("utf-8", errors="replace").strip()
    cmd = "".join(ch if ch.isprintable() else "?" for ch in cmd)
    return f"pid {pid}: {cmd[:120]}" if cmd else f"pid {pid}"


# The writers with a profile open, weakly (a writer dropped without close() is not kept
# alive by this set). A flock belongs to the open file, which fork() shares with the child:
# a torch DataLoader worker's copy of the descriptor kept the profile locked after the
# parent's close(), and after a kill -9 of the parent, for as long as the worker lived.
_OPEN_WRITERS: weakref.WeakSet[ProfileWriter] = weakref.WeakSet()
# Every writer made, weakly: the thread lock of each is made anew in a fork() child, where a
# lock another thread of the parent held at the fork stays held (that thread did not come),
# and the child's first write (or close) waited on it for ever.
_ALL_WRITERS: weakref.WeakSet[ProfileWriter] = weakref.WeakSet()


def _drop_writers_in_fork_child() -> None:
    for writer in list(_ALL_WRITERS):
        writer._lock = threading.RLock()
    for writer in list(_OPEN_WRITERS):
        writer._drop_inherited()


# Closing the child's descriptor (never flock(LOCK_UN), which would unlock the parent's
# file too) leaves the parent's lock whole and makes it the only holder.
os.register_at_fork(after_in_child=_drop_writers_in_fork_child)


class ProfileWriter:
    """Append records to a profile, one flushed and fsync'ed line each, under an exclusive lock.

    Use as a context manager. A kill at any moment leaves every completed record on
    disk and at most one torn line, which the next writer removes.

    While open, the writer holds an exclusive ``flock`` on the profile itself (released
    by the kernel when the process dies, even on ``kill -9``): a second writer of the
    same file, in this process or another, gets :class:`~cotune.errors.ProfileLockedError`
    naming the holder's PID instead of interleaving records. Readers never lock. A child
    made by ``fork()`` (a DataLoader worker) closes its copy of the open profile at once,
    so it never holds the lock: the lock goes with the writer's ``close()`` or its
    process, whatever children it left running. The child's copy of the writer, if it
    writes (a child that trains with its parent's Tracker), opens the profile again for
    appending; before each write it tries the lock without waiting: while the process it
    was forked from holds it, the child writes beside it (one ``O_APPEND`` write per
    record, so lines never interleave); once the lock is free (that process closed or
    died) the child takes it and is the writer from then on; held by another process, the
    write raises :class:`~cotune.errors.ProfileLockedError`. Its own fork() children drop
    its copy too. No write ever waits on a lock.

    A failed write (disk full, read-only filesystem, I/O error) raises
    :class:`~cotune.errors.StorageError` (an ``OSError``) after cutting the file back to
    where it ended just before the write, and the writer refuses further writes: nothing
    half-written is ever reported as written. A fork() child writing beside the holder
    never cuts back (it could cut the holder's records): part of its line may stay at
    the end, for the next writer's ``open()`` to remove.

    One writer may be shared by threads (a training loop and a framework's callback
    thread): a thread lock is held across each write — the ``write(2)``, with ``fsync=True``
    the ``fsync(2)``, and a failed write's cut-back — so records never interleave, a
    cut-back only ever removes the failed record itself (never one another thread wrote
    meanwhile), and every thread that writes after a failed write gets its
    :class:`~cotune.errors.StorageError`. Threads therefore wait for each other's fsync
    with ``fsync=True``: the tracker's default (``fsync="background"``) writes with
    ``fsync=False`` and syncs from a helper thread outside this lock. :meth:`close` waits
    for a write in progress, then closes. The lock is reentrant, so a signal handler that
    writes while its thread is inside a write does not hang: its record goes after the one
    in progress, and should that one then fail it is not cut back (the cut would take the
    handler's record, reported written); its bytes stay where they are.

    :meth:`close` raises :class:`~cotune.errors.StorageError` when closing the file fails
    (``close(2)``'s ``EIO``, which a network filesystem reports for data it could not
    write back): the records may not be on disk. It raises only after the file is closed
    and the lock released, so nothing is left open, and a second :meth:`close` does nothing.
    A ``with`` block that ends in an exception keeps that exception: a failed close is then
    a ``RuntimeWarning`` beside it, never raised in its place.
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.path = Path(path)
        self._fsync = fsync
        self._fh: IO[bytes] | None = None
        self._broken: StorageError | None = None
        # In a fork() child whose inherited copy was closed: the pid of the process it was
        # forked from (which held the descriptor), until this copy takes the lock itself.
        self._forked_from: int | None = None
        self._owner = False  # holds the flock: only the holder cuts a failed write back
        self._pid = os.getpid()  # the process that opened the descriptor held in _fh
        # Held across a write and its cut-back, an open and a close: threads sharing the writer
        # (see the class docstring). Never around the tracker's background fsync. Reentrant: a
        # signal handler that writes (or closes) while its thread is in a write must not hang.
        self._lock = threading.RLock()
        # Bytes this writer has appended (a count, never reset): a failed write cuts back only
        # where none were appended after its own, see _write_locked.
        self._appended = 0
        _ALL_WRITERS.add(self)

    def __enter__(self) -> "ProfileWriter":
        self.open()
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            self.close()
            return
        try:
            self.close()
        except StorageError as failed:  # the block's own exception is the one the caller sees
            warn_beside(failed, raising=exc)

    @property
    def is_open(self) -> bool:
        return self._fh is not None

    def open(self) -> None:
        with self._lock:
            self._open()

    def _open(self) -> None:
        if self._fh is not None:
            return
        check_profile_path(self.path)
        make_folder(self.path)
        for attempt in range(3):
            try:
                # Unbuffered: every write goes to the kernel at once, so a failed write never
                # leaves bytes in a Python buffer to be flushed (half a line) at close.
                fh = open(self.path, "a+b", buffering=0)
            except OSError as exc:
                raise StorageError.from_os_error(exc, path=self.path, doing="open it for writing") from None
            try:
                _lock_exclusive(fh.fileno(), path=self.path)
                # write_profile replaces a file under this lock: opened just before the rename and
                # locked after it, this handle names the replaced file, and records appended to it
                # would be lost. Open the path again.
                if attempt == 2 or _names_same_file(fh.fileno(), self.path):
                    break
            except BaseException:
                fh.close()
                raise
            fh.close()
        self._adopt_locked(fh)

    def _adopt_locked(self, fh: IO[bytes]) -> None:
        """Make ``fh``, open on the profile and holding its flock, this writer's: its torn
        last line (a writer killed mid-write) repaired first."""
        try:
            _repair_tail(fh, path=self.path)
        except BaseException as exc:
            fh.close()  # a tail it refuses to cut (ProfileError) too: the lock goes with it
            if isinstance(exc, OSError):
                raise StorageError.from_os_error(exc, path=self.path, doing="repair its last line") from None
            raise
        self._fh = fh
        self._broken = None
        self._forked_from = None
        self._owner = True
        self._pid = os.getpid()
        _OPEN_WRITERS.add(self)

    def _drop_inherited(self) -> None:
        """In a fork() child: close this process's copy of the profile (the parent's lock stays)."""
        fh, self._fh = self._fh, None
        if fh is not None:
            self._forked_from = self._pid  # the process that held this descriptor forked this one
            self._owner = False
            with contextlib.suppress(OSError):
                fh.close()
        _OPEN_WRITERS.discard(self)

    def _reopen_in_fork_child(self) -> None:
        """A fork() child's first write (a child that trains with the Tracker its parent made:
        multiprocessing's "fork", Lightning's "ddp_fork"): the fork hook closed its copy, so it
        opens the profile again to append. Registered so that the child's own fork()
        children (DataLoader workers) drop this copy too, and never keep a lock it takes."""
        try:
            self._fh = open(self.path, "a+b", buffering=0)  # O_APPEND, unbuffered as open()'s
        except OSError as exc:
            raise StorageError.from_os_error(exc, path=self.path, doing="open it for writing") from None
        self._pid = os.getpid()
        _OPEN_WRITERS.add(self)

    def _claim_in_fork_child(self, fd: int) -> None:
        """Before each write of a fork() child's copy that does not hold the lock: try it
        without waiting (a blocking lock hung every writer where flock is emulated by POSIX
        locks, NFS and AFS). Taken: nobody holds the profile (the parent closed or died),
        and the child is its writer from then on, so a restarted job is refused rather
        than writing beside an orphan. Held while the process this one was forked from
        still is its parent: the parent holds it, and the child writes beside it. Held
        with the parent gone: another process took the profile, and the write is refused
        (:class:`~cotune.errors.ProfileLockedError` naming it)."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise StorageError.from_os_error(exc, path=self.path, doing="lock it") from None
            if os.getppid() == self._forked_from:
                return
            _lock_exclusive(fd, path=self.path)  # the error naming the holder (or the lock, freed since)
        fh, self._fh = self._fh, None
        if fh is not None and _names_same_file(fd, self.path):
            self._adopt_locked(fh)
            return
        if fh is not None:
            fh.close()  # write_profile replaced the file after the parent closed: open the path anew
        self._open()

    def write(self, record: Record) -> None:
        self._write_bytes(_dump(record).encode("utf-8"), doing="append a record")

    def write_all(self, records: Iterable[Record]) -> None:
        """Append ``records`` as one write and one fsync: all of them or, after a failed
        write, none (the file is cut back to where it was). For a batch that means
        nothing in part — an imported run — where a full disk between per-record writes
        left a curve that seems to end early. (A SIGKILL during the write itself can still
        cut it at a page: the kernel checks for fatal signals between pages.)"""
        data = "".join(_dump(r) for r in records).encode("utf-8")
        if data:
            self._write_bytes(data, doing="append the records")

    def _write_bytes(self, data: bytes, *, doing: str) -> None:
        # One thread at a time from the write(2) to the end of its cut-back: a cut-back reads
        # where its record began from the descriptor's offset, which another thread's append
        # would have moved, and cut that thread's record instead (see the class docstring).
        with self._lock:
            self._write_locked(data, doing=doing)

    def _write_locked(self, data: bytes, *, doing: str) -> None:
        if self._fh is None and self._forked_from is not None:
            self._reopen_in_fork_child()
        if self._fh is None:
            raise RuntimeError("ProfileWriter is not open: use it as a context manager")
        if self._broken is not None:
            raise self._broken
        if not self._owner:
            self._claim_in_fork_child(self._fh.fileno())
            if self._fh is None:  # for the type checker: open() raised where it could not reopen
                raise RuntimeError("ProfileWriter is not open: use it as a context manager")
        fd = self._fh.fileno()
        written = 0  # bytes of this record the kernel took
        before = self._appended
        try:
            while written < len(data):
                # The record itself to the first write(2); a view of the rest only after a short one
                n = self._fh.write(memoryview(data)[written:] if written else data)
                if not n:
                    raise OSError(errno.EIO, "short write")
                written += n
                self._appended += n
            if self._fsync:
                os.fsync(fd)
        except OSError as exc:
            # The lock's holder cuts back to the last whole record, so a rerun (or a reader)
            # never sees a partial one; if even that fails the next writer's tail repair will.
            # A child writing beside the holder never does: its parent may have appended since
            # this write began, and the cut would take those records. Nor does a write inside
            # which this thread appended another record: a signal handler's write, let in by
            # the reentrant lock while this one was in its write(2) or its fsync, lies after
            # this record's bytes, and the cut took it (reported written) and kept these.
            if self._owner and written and self._appended - before == written:
                # Where this record began, read only now that a write failed (an fstat before
                # every write cost the training loop a system call per record): an O_APPEND
                # write(2) leaves the descriptor's offset at the end of the bytes it appended
                # (POSIX), so they began `written` bytes before it: exact even where a fork()
                # child appended beside this writer after the record (one write(2), as a record
                # of a few hundred bytes always is in practice). A write(2) that fails appends
                # nothing, so a record of which no byte was taken needs no cut.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, os.lseek(fd, 0, os.SEEK_CUR) - written)
            self._broken = StorageError.from_os_error(exc, path=self.path, doing=doing)
            raise self._broken from None

    def close(self) -> None:
        """Close the profile and drop its lock (after a write in progress in another thread).

        :class:`~cotune.errors.StorageError` where ``close(2)`` fails — the records may not be
        on disk — raised once the descriptor is closed and the lock gone; closed already, nothing."""
        with self._lock:
            _OPEN_WRITERS.discard(self)
            self._forked_from = None  # closed: a later write is refused, not a reopening
            self._owner = False
            fh, self._fh = self._fh, None
            if fh is None:
                return
            try:
                fh.close()  # closing drops the lock
            except OSError as exc:
                # Linux frees the descriptor (and with it the lock) whatever close(2) returns, so
                # nothing is left open; but an error there (a network filesystem's write-back)
                # means the data may not be on disk, which the caller must hear of.
                raise StorageError.from_os_error(
                    exc, path=self.path, doing="close it (the records written may not be on disk)") from None


def append_records(path: str | os.PathLike[str], records: Iterable[Record], *, fsync: bool = True) -> None:
    """Append records to ``path`` (created if missing) in one write: all of them, or none
    after a failed write (:meth:`ProfileWriter.write_all`). A live writer (the tracker, the
    profiler) writes record by record instead, so a kill keeps what it had measured."""
    with ProfileWriter(path, fsync=fsync) as writer:
        writer.write_all(records)
