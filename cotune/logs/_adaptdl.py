"""AdaptDL traces: the step-time tables and learning curves AdaptDL's profiler records, in
the layout the Pollux (OSDI'21) and Sia (SOSP'23) artifacts publish (``cotune import adaptdl``).

A trace directory (or one of its files) holds, read by column name (their order differs
between files):

* ``placements*.csv`` — ``placement`` (one digit per node: the replicas on it, so ``22`` is
  4 workers on 2 hosts), ``local_bsz``, ``step_time``, ``sync_time`` (seconds), and in Sia's
  per-job profiles a ``gpu_type`` column;
* ``scalability*.csv`` — the same for larger allocations, with ``num_replicas`` and
  ``num_nodes`` in place of ``placement``;
* ``validation-<B>.csv`` — a learning curve at global batch ``B``: ``iteration`` (optimizer
  steps at ``B``), ``metric``, and ``grad_sqr`` / ``grad_var`` measured at the reference
  (smallest) batch. Its ``progress`` column counts AdaScale's scale-invariant iterations,
  not epochs: the epoch of a row is ``iteration × B / dataset_size``.

A row's GPU type is its ``gpu_type`` cell, else ``gpu`` (``--gpu``), else the cluster the
file's name ends with (``placements-azure.csv``: ``azure``, said in a note). Each step
becomes a ``step`` record (``sync_time`` capped at the step time, as a part of it), each
curve row an ``eval`` record with its gradient statistics.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from cotune._checks import excerpt
from cotune.errors import InputError
from cotune.logs._readers import MAX_LOG_BYTES, _read_table
from cotune.profile import EvalRecord, StepRecord

__all__ = ["NO_CURVE_NOTE", "read_adaptdl", "trace_name"]

#: The note of a trace without a learning curve (an import appending to a profile that has
#: curves replaces it: the advice is about the profile, not the file).
NO_CURVE_NOTE = ("no learning curve (validation-<B>.csv): add one (cotune import --append a run's log) before "
                 "recommending")

_STEP_FILE = re.compile(r"^(placements|scalability)(?:-(?P<cluster>[^.]+))?$")
_CURVE_FILE = re.compile(r"^validation-(?P<batch>\d+)$")


def trace_name(path: Path) -> str:
    """The workload a trace is of, by its path: a directory's name (``traces/cifar10``), a
    trace file's directory (``traces/cifar10/placements.csv``), else a per-job profile's
    own name (Sia's ``profiles/cifar10.csv``)."""
    if path.is_dir():
        return path.resolve().name or "trace"
    named = _STEP_FILE.match(path.stem) or _CURVE_FILE.match(path.stem)
    return (path.resolve().parent.name if named else path.stem) or "trace"


def _cluster_of(path: Path) -> str | None:
    """The cluster a step table's name ends with (``placements-azure.csv``: ``azure``), or None."""
    m = _STEP_FILE.match(path.stem)
    return m.group("cluster").lower() if m and m.group("cluster") else None


def _trace_files(path: Path) -> tuple[list[Path], list[tuple[int, Path]]]:
    """The step tables and the curves (with their global batch) at ``path``."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix == ".csv" and p.is_file())
    elif path.exists():
        files = [path]
    else:
        raise InputError(f"{path}: no such file or directory: give an AdaptDL trace directory (placements.csv, "
                         "validation-<B>.csv) or one of its files")
    steps = [p for p in files if _STEP_FILE.match(p.stem)]
    curves = [(int(m.group("batch")), p) for p in files if (m := _CURVE_FILE.match(p.stem))]
    if not steps and not curves and path.is_file() and path.suffix == ".csv":
        steps = [path]  # a per-job profile of another name (Sia's profiles/<model>.csv): its columns say
    if not steps and not curves:
        raise InputError(f"{path}: no AdaptDL trace files (placements*.csv, scalability*.csv, validation-<B>.csv): give "
                         "a trace directory such as the Pollux artifact's simulator/traces/<model>")
    # Each file is capped as a log is; together they are too (a directory of any number of them).
    size = sum(f.stat().st_size for f in steps + [f for _, f in curves])
    if size > MAX_LOG_BYTES:
        raise InputError(f"{path}: its trace files hold {size / 2**20:.0f} MiB, more than a trace's "
                         f"{MAX_LOG_BYTES // 2**20} MiB limit: import the files you need one at a time (--append)")
    return steps, sorted(curves)


def _number(row: dict[str, str], column: str, where: str, *, positive: bool = True) -> float:
    text = (row.get(column) or "").strip()
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where}: column {column!r} holds {text[:40]!r}, not a number") from None
    if not math.isfinite(value) or (positive and value <= 0) or value < 0:
        need = "a positive number" if positive else "a number >= 0"
        raise InputError(f"{where}: column {column!r} is {text[:40]!r}: need {need}")
    return value


def _whole(row: dict[str, str], column: str, where: str) -> int:
    value = _number(row, column, where)
    if value != int(value):
        raise InputError(f"{where}: column {column!r} is {excerpt(row.get(column))}: need a whole number")
    return int(value)


def _need(path: Path, header: list[str], columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(f"{path}: no column {', '.join(map(repr, missing))} (columns: {', '.join(header)}): not an "
                         "AdaptDL trace file of its name")


def _step_records(path: Path, gpu: str | None, clusters: list[str], notes: list[str]) -> list[StepRecord]:
    header, rows, torn = _read_table(path, "adaptdl", "AdaptDL step-time table")
    notes.extend(f"{path.name}: {n}" for n in torn)
    placed = "placement" in header
    _need(path, header, ("local_bsz", "step_time", "sync_time") + (() if placed else ("num_replicas", "num_nodes")))
    suffix = _cluster_of(path)
    out = []
    for line, row in enumerate(rows, start=2):
        where = f"{path}:{line}"
        kind = (row.get("gpu_type") or "").strip().lower() or gpu or suffix
        if not kind:
            raise InputError(f"{path}: its rows name no GPU type (no gpu_type column, no cluster in the file's name): "
                             "pass --gpu G")
        if placed:
            digits = (row.get("placement") or "").strip()
            if not re.fullmatch(r"[1-9]+", digits):
                raise InputError(f"{where}: placement {digits[:40]!r} is not one digit 1-9 per node (the replicas on "
                                 "each, as AdaptDL writes it: '22' is 4 workers on 2 hosts)")
            workers, hosts, placement = sum(map(int, digits)), len(digits), digits
        else:
            workers, hosts, placement = _whole(row, "num_replicas", where), _whole(row, "num_nodes", where), None
            if hosts > workers:
                raise InputError(f"{where}: num_nodes {hosts} is more than num_replicas {workers}")
        step_s = _number(row, "step_time", where)
        sync_s = min(_number(row, "sync_time", where, positive=False), step_s)
        out.append(StepRecord(gpu=kind, workers=workers, hosts=hosts, local_batch=_whole(row, "local_bsz", where),
                              step_time_s=step_s, sync_time_s=sync_s, placement=placement))
    if suffix and gpu is None and "gpu_type" not in header:
        clusters.append(suffix)
    return out


def _eval_records(curves: list[tuple[int, Path]], dataset_size: int, notes: list[str]) -> list[EvalRecord]:
    reference = curves[0][0]  # the smallest batch: where AdaptDL measured the gradient statistics
    out = []
    for batch, path in curves:
        header, rows, torn = _read_table(path, "adaptdl", "AdaptDL learning curve (validation-<B>.csv)")
        notes.extend(f"{path.name}: {n}" for n in torn)
        _need(path, header, ("iteration", "metric"))
        stats = "grad_sqr" in header and "grad_var" in header
        for line, row in enumerate(rows, start=2):
            where = f"{path}:{line}"
            iteration = _number(row, "iteration", where, positive=False)
            metric_text = (row.get("metric") or "").strip()
            try:
                metric = float(metric_text)
            except ValueError:
                raise InputError(f"{where}: column 'metric' holds {metric_text[:40]!r}, not a number") from None
            if not math.isfinite(metric):
                raise InputError(f"{where}: column 'metric' is {metric_text[:40]!r}: need a finite number")
            grads = {}
            if stats:
                grads = dict(grad_sqr=_number(row, "grad_sqr", where, positive=False),
                             grad_var=_number(row, "grad_var", where, positive=False), grad_batch=reference)
            out.append(EvalRecord(global_batch=batch, epoch=round(iteration * batch / dataset_size, 6), metric=metric,
                                  seed=0, **grads))
    return out


def read_adaptdl(path: str | Path, *, dataset_size: int, gpu: str | None = None) -> tuple[list, list[str]]:
    """The ``step`` and ``eval`` records of the AdaptDL trace at ``path`` (a directory or one
    of its files), and notes on how they were read. ``gpu`` names the GPU type of rows whose
    file names none. ``dataset_size`` (training samples) turns a curve's steps into epochs."""
    p = Path(path)
    steps, curves = _trace_files(p)
    if gpu is not None and len({_cluster_of(f) for f in steps}) > 1:
        raise InputError(f"{p}: its step tables are of several clusters ({', '.join(f.name for f in steps)}): --gpu "
                         "would name them all one GPU type; import one file at a time with --gpu, or leave --gpu out "
                         "to name each by its cluster")
    clusters: list[str] = []  # GPU types read off file names
    records: list = []
    torn: list[str] = []  # rows a killed writer cut short, dropped
    for f in steps:
        records.extend(_step_records(f, gpu.lower() if gpu else None, clusters, torn))
    notes = [f"GPU type{'s' if len(set(clusters)) > 1 else ''} {', '.join(map(repr, dict.fromkeys(clusters)))}: the "
             "cluster each file's name ends with (import one file with --gpu G to name its GPU type)"] if clusters else []
    evals = _eval_records(curves, dataset_size, torn) if curves else []
    notes.extend(torn)
    records.extend(evals)
    if steps:
        notes.append(f"{sum(isinstance(r, StepRecord) for r in records):,} step times from "
                     f"{', '.join(f.name for f in steps)}")
    if curves:
        notes.append(f"{len(evals):,} points of {len(curves)} curve{'s' if len(curves) > 1 else ''} at global batch "
                     f"{', '.join(str(b) for b, _ in curves)} (epochs = iteration × batch / {dataset_size:,}; the "
                     f"gradient statistics at the reference batch {curves[0][0]})")
    else:
        notes.append(NO_CURVE_NOTE)
    return records, notes
