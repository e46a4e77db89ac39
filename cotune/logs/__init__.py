"""Profiles from the training logs a user already has (``cotune import``).

Formats: ``hf-trainer`` (Hugging Face ``trainer_state.json``), ``lightning-csv``
(Lightning ``CSVLogger`` ``metrics.csv``), ``tensorboard`` (event files, read with the
``tensorboard`` package), ``mlflow`` (a run of the local file store), ``csv`` (named
columns) and ``keras-csv`` (Keras ``CSVLogger``, whose epoch column counts from 0). Only TensorBoard needs a package (``pip install 'cotune[logs]'``),
imported when such a log is read. See ``docs/logs.md``.
"""

from __future__ import annotations

import itertools
import os
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, Mapping

from cotune._checks import MAX_INTEGER, MAX_NAME, excerpt, not_text_reason, path_text_problem
from cotune.errors import InputError
from cotune.logs._adaptdl import read_adaptdl
from cotune.logs._convert import ImportOptions, log_to_records
from cotune.logs._readers import FORMATS, LogData, Series, read_log
from cotune.profile import (
    MAX_PROFILE_LINES, EvalRecord, Profile, ProfileWriter, StepRecord, WorkloadRecord, check_profile_path, read_profile,
    write_profile,
)
from cotune.profile._profile import TEXT_FIELDS, RowError, _build

__all__ = ["FORMATS", "ImportOptions", "LogData", "Series", "import_adaptdl", "import_log", "import_table", "log_to_records",
           "read_adaptdl", "read_log"]


def _name(flag: str, value: object) -> None:
    """A name flag: None (not given), or a non-empty string of at most ``MAX_NAME``
    characters (a 5,000-character --metric or --run was echoed whole by every message
    that names it)."""
    if value is not None and (not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME):
        raise InputError(f"{flag} must be a non-empty name of at most {MAX_NAME} characters, got {excerpt(value)}")


def _paths(path: object, out: object, *, what: str) -> None:
    """The log (``what``: "the log file or run directory") and the profile to write: each a
    ``str`` or ``os.PathLike`` a file can have (the rule of every door, path_text_problem).
    An empty PATH read as '.', the working directory ('. is a directory', or a trace read from
    it), and ``out=True`` was a TypeError from inside ``os.path``."""
    for flag, value, named in (("PATH", path, what), ("--out", out, "the profile file to write (.jsonl)")):
        if value is None and flag == "--out":
            continue
        text = os.fspath(value) if isinstance(value, os.PathLike) else value
        if not isinstance(text, str):
            raise InputError(f"{flag} must be a path (a str or a pathlib.Path), got {excerpt(value)}: give {named}")
        problem = path_text_problem(text, what=named)
        if problem:
            raise InputError(f"{flag} {problem}")


def _whole(flag: str, value: object) -> None:
    """A count flag of the Python door: None (not given), or a whole number from 1 to the
    largest any number may be (10**400 samples an epoch overflowed the epoch arithmetic)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_INTEGER:
        raise InputError(f"{flag} must be a whole number from 1 to {MAX_INTEGER:.0e}, got {excerpt(value)}")


def _check_run_flags(*, global_batch: int | None, dataset_size: int | None, workers: int | None, hosts: int,
                     local_batch: int | None, accum_steps: int, dataset_from: str = "--dataset-size") -> None:
    """Flags that contradict each other, refused before the log is read (they were written
    as given: a step record silently dropped, an eval curve at a batch the run never had)."""
    if workers is not None and hosts > workers:
        raise InputError(f"--hosts {hosts} is more than --workers {workers}: each host runs one worker at least; "
                         "give the machines the run used")
    if global_batch is not None and workers is not None and local_batch is not None:
        product = workers * local_batch * accum_steps
        if product != global_batch:
            raise InputError(f"--global-batch {global_batch} disagrees with --workers {workers} × --local-batch "
                             f"{local_batch} × --accum-steps {accum_steps} = {product}: correct one, or give "
                             "--workers and --local-batch alone")
    batch = global_batch if global_batch is not None else (
        workers * local_batch * accum_steps if workers is not None and local_batch is not None else None)
    if batch is not None and dataset_size is not None and batch > dataset_size:
        raise InputError(f"global batch {batch} is more than {dataset_from} {dataset_size}: a step cannot hold more "
                         "samples than the training set; check both")


def import_log(
    format: str,
    path: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    append: bool = False,
    global_batch: int | None = None,
    dataset_size: int | None = None,
    metric: str | None = None,
    goal: Literal["max", "min"] | None = None,
    name: str | None = None,
    seed: int | None = None,
    gpu: str | None = None,
    workers: int | None = None,
    hosts: int = 1,
    local_batch: int | None = None,
    accum_steps: int = 1,
    step_column: str | None = None,
    epoch_column: str | None = None,
    run: str | None = None,
    run_column: str | None = None,
    time_column: str | None = None,
    time_unit: Literal["s", "min", "h"] | None = None,
    steps_are_epochs: bool = False,
) -> Profile:
    """Turn one run's training log into a profile (and write it to ``out`` if given).

    The returned :class:`~cotune.profile.Profile` holds this run's records; its
    ``warnings`` say what was found and what was not (e.g. step times without
    ``gpu``). With ``append=True`` the records are added to the existing profile ``out``
    (same workload), and an unset ``seed`` becomes the next free seed at that global
    batch, so repeated runs stay apart. ``run`` picks one MLflow run (id or name) from a
    store that holds several, or one run's rows of a CSV that pools several (``run_column``,
    else a column named ``run``, ``run_id`` or ``run_name``). ``time_column`` names a CSV's
    column of wall-clock seconds (else one that Weights & Biases or TensorBoard exports
    write: ``_runtime``, ``_timestamp``, ``Wall time``), from which the step time is read;
    ``time_unit`` says what it counts (``"s"``, ``"min"``, ``"h"``; default: the unit its
    name says, as DAWNBench's ``hours`` does, else seconds). A table indexed by epoch alone
    gives the step time of its whole epochs, evaluations included. ``steps_are_epochs``
    (tensorboard, mlflow) reads the metric's steps as epoch indices, for a metric logged with
    ``add_scalar(tag, value, epoch)`` or ``log_metric(key, value, step=epoch)``.
    """
    _paths(path, out, what="the log file or run directory")
    hosts = 1 if hosts is None else hosts  # None is the default, as for every other keyword
    accum_steps = 1 if accum_steps is None else accum_steps
    for flag, value in (("--global-batch", global_batch), ("--dataset-size", dataset_size), ("--workers", workers),
                        ("--hosts", hosts), ("--local-batch", local_batch), ("--accum-steps", accum_steps)):
        _whole(flag, value)
    for flag, text in (("--metric", metric), ("--name", name), ("--gpu", gpu), ("--step-column", step_column),
                       ("--epoch-column", epoch_column), ("--run", run), ("--run-column", run_column),
                       ("--time-column", time_column)):
        _name(flag, text)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise InputError(f"--seed must be a whole number >= 0, got {excerpt(seed)}")
    if goal is not None and goal not in ("max", "min"):
        raise InputError(f"--goal must be 'max' or 'min', got {excerpt(goal)}")
    if not isinstance(steps_are_epochs, bool):
        raise InputError(f"steps_are_epochs must be True or False, got {excerpt(steps_are_epochs)}")
    if steps_are_epochs and format not in ("tensorboard", "mlflow"):
        raise InputError("--steps-are-epochs applies to formats tensorboard and mlflow only (a csv names its epoch "
                         "column with --epoch-column)")
    _check_run_flags(global_batch=global_batch, dataset_size=dataset_size, workers=workers, hosts=hosts,
                     local_batch=local_batch, accum_steps=accum_steps)
    log = read_log(format, path, step_column=step_column, epoch_column=epoch_column, run=run, run_column=run_column,
                   time_column=time_column, time_unit=time_unit)
    opts = ImportOptions(global_batch=global_batch, dataset_size=dataset_size, metric=metric, goal=goal, name=name,
                         seed=0 if seed is None else seed, gpu=gpu, workers=workers, hosts=hosts, local_batch=local_batch,
                         accum_steps=accum_steps, steps_are_epochs=steps_are_epochs)
    existing = _existing(out, append=append, what="this run")
    if existing is not None:
        if dataset_size is None:
            # The profile states its workload's training set: a run appended to it needs no flag.
            opts = replace(opts, dataset_size=existing.workload.dataset_size)
            _check_run_flags(global_batch=global_batch, dataset_size=opts.dataset_size, workers=workers, hosts=hosts,
                             local_batch=local_batch, accum_steps=accum_steps,
                             dataset_from=f"the dataset size of {out}'s workload,")
        if name is None:
            opts = replace(opts, name=existing.workload.name)
        elif name != existing.workload.name:
            # It was dropped without a word: the run went into the other workload's profile.
            raise InputError(f"{out} is workload {existing.workload.name!r}, not {name!r}: leave --name out to add this "
                             "run to it, or choose another --out for the other workload")
    _points_fit(log, opts.metric, out, existing)
    records, notes = log_to_records(log, opts)
    workload = records[0]
    if existing is not None and seed is None:
        batch = records[1].global_batch if isinstance(records[1], EvalRecord) else None
        taken = {e.seed for e in existing.evals if e.global_batch == batch}
        if opts.seed in taken:
            # the next free seed, and the records (and their notes) made again with it
            fresh = max(taken) + 1
            records, notes = log_to_records(log, replace(opts, seed=fresh))
            notes.append(f"seed {fresh}: global batch {batch} already has runs with seeds {', '.join(map(str, sorted(taken)))}")
    assert isinstance(workload, WorkloadRecord)
    if existing is not None:
        old = existing.workload
        if old.differs_from(workload, fields=("dataset_size", "goal")) is not None:  # the name is the profile's
            raise InputError(
                f"{out} is workload {old.name!r} (dataset {old.dataset_size}, goal {old.goal}); this run has "
                f"dataset {workload.dataset_size}, goal {workload.goal}: use matching flags or another --out"
            )
        if old.metric != workload.metric:
            # Tools name one metric differently (val/accuracy, val_accuracy): the profile keeps its name.
            notes.append(f"metric {workload.metric!r} recorded as the profile's {old.metric!r} (tools name one metric "
                         "their own way; a different quantity — top-5 beside top-1 — belongs in another profile)")
        records = [old] + records[1:]
    _lines_after(out, existing, records,
                 fix="import a validation metric (one point per evaluation, not per step) or thin the log")
    profile = _build(records, path=None if out is None else str(out), warnings=notes)
    # A log under a seed the profile holds at its batch continues that run (a log split at a
    # restart) only past its last evaluation; an unset seed was made the next free one above.
    _save(out, existing, profile, records,
          overlap_fix="Leave --seed out to import it as another run (the next free seed), or give a new seed")
    return profile


def _points_fit(log: LogData, metric: str | None, out: Any, existing: Profile | None) -> None:
    """Refuse a log whose metric has more points than a profile may hold lines, from the
    points the reader found — before records are built and each is checked twice (a 2,000,000
    row CSV took 100 s and 1 GB to be refused by :func:`_lines_after`, which stays the exact
    check). A metric that cannot be chosen is left to :func:`log_to_records` to name."""
    import numpy as np

    from cotune.logs._convert import _choose_metric

    try:
        series = _choose_metric(log, metric, [])
    except InputError:
        return
    x = series.epoch if series.epoch is not None else series.step
    points = int(np.count_nonzero(np.isfinite(x)))
    lines = points + 1 if existing is None else _lines(out) + points
    if lines > MAX_PROFILE_LINES:
        raise InputError(f"{log.source}: the profile would have {lines:,} lines ({points:,} points of {series.name!r}), "
                         f"more than the {MAX_PROFILE_LINES:,} a profile may hold: import a validation metric (one point "
                         "per evaluation, not per step) or thin the log")


def import_table(
    path: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    append: bool = False,
    record: str | None = None,
    name: str | None = None,
    dataset_size: int | None = None,
    metric: str | None = None,
    goal: Literal["max", "min"] | None = None,
    where: Mapping[str, str] | None = None,
    columns: Mapping[str, str] | None = None,
    wide: tuple[str, str] | None = None,
    constants: Mapping[str, Any] | None = None,
    gpus_per_host: int | None = None,
) -> Profile:
    """Profile records from a CSV table of them (``cotune import records``): one row per
    record, one column per field, as :meth:`Profile.from_frame` reads it — a sweep's export of
    step times at many configurations, a spreadsheet of measured curves, a published table.

    ``where`` (column → text) keeps the rows whose cells hold that text (a pooled table's one
    workload: ``{"model": "ResNet-18"}``); ``columns`` (record field → column) reads a field
    from a column named otherwise (``{"workers": "num_gpus"}``): :mod:`cotune.logs._table`.
    ``wide`` (header field, cell field) reads a table with a column per value of a field —
    ElasticFlow's ``global_batch_size,1,2,…,64`` of iterations per second at that many GPUs
    is ``wide=("workers", "steps_per_s")`` — as one record per filled cell (empty cells, and
    zeros of a time or rate, are left out and counted in the profile's ``warnings``).
    ``constants`` (field → value) gives every row a field the table states in its caption
    (``{"gpu": "a100"}``); ``gpus_per_host`` lays each row's workers on servers of that many
    GPUs (``hosts = ⌈workers / gpus_per_host⌉``) where the table gives no hosts.
    ``record`` is the type of every row when the table has no ``record`` column. The
    workload comes from the flags (``name``, default the file's stem; ``dataset_size`` and
    ``metric`` required; ``goal`` from the metric's name when left out), or with
    ``append=True`` from the profile ``out`` (flags given must agree with it). Nothing is
    written unless every row is a valid record; appended rows go in one write.
    """
    import pandas as pd

    from cotune._checks import integer
    from cotune.logs._readers import MAX_COLUMNS, _need_file, _separator, check_header, dot_decimal, uses_decimal_commas
    from cotune.logs._table import (add_constants, add_hosts, check_columns, check_constants, check_where, check_wide,
                                    map_columns, numbers_as_numbers, select_rows, unpivot, where_columns)

    _paths(path, out, what="the CSV table of records")
    wanted, mapped, pivot, fixed = check_where(where), check_columns(columns), check_wide(wide), check_constants(constants)
    per_host = None if gpus_per_host is None else integer(gpus_per_host, where="--gpus-per-host (gpus_per_host=)", ge=1)
    p = _need_file(Path(path), "CSV table of profile records", "records")
    # Text fields are read as the file writes them ('007' stays a name, not 7).
    as_text = {**dict.fromkeys(TEXT_FIELDS, str), **{c: str for f, c in mapped.items() if f in TEXT_FIELDS}}

    def read(nrows: int = MAX_PROFILE_LINES + 1, **kw: Any) -> "pd.DataFrame":
        # One row past the profile's cap is enough to refuse it: memory stays bounded whatever the file.
        # index_col=False: rows one cell longer than the header (a trailing separator) made
        # pandas take the first column as the index and shift every other one a column left
        # — batch 256, epoch 1, metric 0.5 was written as batch 1, epoch 0.5, no metric. A
        # filled cell past the header is an error (pandas warns, and drops it), not a loss.
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return pd.read_csv(p, sep=sep, decimal=decimal, encoding="utf-8-sig", skipinitialspace=True, nrows=nrows,
                               index_col=False, **kw)

    try:
        # The separator as the log readers find it: a spreadsheet's export may use tabs or
        # semicolons (a locale whose decimal mark is a comma), read as one column otherwise.
        with p.open(encoding="utf-8-sig", newline="") as fh:
            first = fh.readline(1 << 20)
        sep = _separator(first)
        # Before pandas reads them all (its time grows with the columns, not the bytes).
        if len(first) >= 1 << 20 and not first.endswith(("\n", "\r")):
            raise InputError(f"{p}: the header line is longer than 1 MiB: give a table with a header row of field names")
        if first.count(sep) >= MAX_COLUMNS:
            check_header(p, first.split(sep))
        # Semicolons separate where a comma is the decimal mark ('0,5'); a cell written '0.5'
        # there is read as text, and numbers_as_numbers reads it as the number it is.
        decimal = "," if sep == ";" else "."
        # pandas renames a header's repeated name ('workers', 'workers.1'): the second column
        # would be read as no field, or a wide table's repeated '1' as 1.1 workers.
        header = read(nrows=1, header=None, dtype=str)
        check_header(p, [str(v).strip() for v in (header.iloc[0] if len(header) else ()) if isinstance(v, str)])
        if sep == ";":
            # Every cell as text, then numbers as the file's locale writes them (dot_decimal:
            # '0,5' and, where decimals take commas, '1.000' a thousand); numbers_as_numbers
            # reads them below. pandas' own decimal=',' left '1.000' to be read as 1.0.
            frame = read(dtype=str)
            texts = set(as_text)
            grouped = uses_decimal_commas(v for c in frame.columns if c not in texts for v in frame[c].tolist())
            frame = frame.apply(lambda col: col if col.name in texts else col.map(lambda v: dot_decimal(v, grouped=grouped)))
        else:
            frame = read(dtype=as_text)
        # The filters compare text as the file writes it ('1' is not '1.0'): their columns
        # are read again as text (a filtered column may be a number field too).
        on = [c for c in dict.fromkeys(where_columns(wanted)) if c in frame.columns]
        text = read(dtype=str, usecols=on) if on else None
        # pandas pads a short row with empty cells and reads a torn last row ('4,0.' for
        # '4,0.75') as a value: the csv module tells both apart from empty cells (',,').
        torn = _rows_of_the_headers_length(p, sep)
        if torn is not None and len(frame):
            frame = frame.iloc[:-1]
            text = text.iloc[:-1] if text is not None else None
    except InputError:
        raise
    except pd.errors.ParserWarning:
        raise InputError(f"{p}: {_longer_row(p, sep)}") from None
    except (UnicodeDecodeError, ValueError, pd.errors.ParserError) as exc:  # EmptyDataError is a ValueError
        why = not_text_reason(p)
        if why:
            raise InputError(f"{p}: {why}") from None
        if isinstance(exc, UnicodeDecodeError):
            from cotune.logs._readers import not_utf8

            raise InputError(f"{p}: {not_utf8(exc)}") from None
        if isinstance(exc, pd.errors.ParserError) and "fields in line" in str(exc):  # "Expected 3 fields in line 3, saw 4"
            raise InputError(f"{p}: {_longer_row(p, sep)}") from None
        raise InputError(f"{p}: not a readable CSV table ({' '.join(str(exc).split())[:160]}): give a comma-separated "
                         "file with a header row of field names") from None
    existing, workload = _workload_of(out, append=append, what="these records", name=name or p.stem,
                                      named=name is not None, dataset_size=dataset_size, metric=metric, goal=goal,
                                      why_size="training samples per epoch",
                                      why_metric="the name of the validation metric the eval rows hold")
    if frame.empty:  # a header alone: nothing to import (the log readers say the same)
        raise InputError(f"{p}: no data rows, only a header: give a table with a row per record")
    frame.index = pd.RangeIndex(2, len(frame) + 2)  # a row's file line (the header is line 1), for the errors
    if text is not None:
        text.index = frame.index
    left_out: tuple[str, ...] = ()
    try:
        frame = select_rows(frame, wanted, text=text)
        if pivot is not None:
            frame, places, left_out = unpivot(frame, pivot, limit=MAX_PROFILE_LINES)
        else:
            places = [f"line {i}" for i in frame.index]
        frame = add_hosts(numbers_as_numbers(add_constants(map_columns(frame, mapped), fixed), TEXT_FIELDS), per_host)
    except InputError as exc:
        raise InputError(f"{p}: {exc}") from None
    frame.index = pd.RangeIndex(len(frame))  # a row's number in ``places``
    try:
        profile = Profile.from_frame(frame, workload=workload, record=record)
    except RowError as exc:
        raise InputError(f"{p}: {places[exc.row]}: {_row_fix(exc, frame, mapped)}") from None
    except InputError as exc:
        raise InputError(f"{p}: {exc}") from None
    if torn is not None:
        from cotune.logs._readers import torn_row_note

        left_out = (torn_row_note(torn),) + left_out
    if left_out:
        profile = replace(profile, warnings=left_out)
    records = list(profile.records())
    _lines_after(out, existing, records, fix="keep the medians of repeated measurements")
    _save(out, existing, profile, records)
    return profile


def _rows_of_the_headers_length(path: Path, sep: str) -> int | None:
    """The line of a torn last row to drop (:func:`~cotune.logs._readers.cut_short`), or None;
    an InputError for a row with fewer cells than the header (fewer separators: an empty
    cell written ',,' is a cell), or more that are filled, naming its line."""
    import csv

    from cotune.logs._readers import cut_short, ends_unended

    pending: tuple[int, list[str]] | None = None
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, delimiter=sep, skipinitialspace=True)
            width = len(next(reader, []))
            # As many rows as pandas reads (one past a profile's cap): past them the table is refused anyway.
            for row in itertools.islice(reader, MAX_PROFILE_LINES + 1):
                if not row:
                    continue  # a blank line: pandas skips it too
                if pending is not None:
                    _check_row_length(path, *pending, width=width)
                pending = (reader.line_num, row)
            last = next(reader, None) is None
    except csv.Error:
        return None  # pandas read it: a cell past the csv module's size limit is no ragged row
    if pending is None:
        return None
    if last and ends_unended(path) and cut_short(pending[1], width=width):
        return pending[0]
    _check_row_length(path, *pending, width=width)
    return None


def _check_row_length(path: Path, line: int, row: list[str], *, width: int) -> None:
    from cotune.logs._readers import _cells

    if len(row) > width and any(cell.strip() for cell in row[width:]):
        raise InputError(f"{path}: line {line} has {_cells(len(row))}, the header names {width:,}: give every row the "
                         "header's columns")
    if len(row) < width and any(cell.strip() for cell in row):  # a line of blanks alone is no row
        raise InputError(f"{path}: line {line} has {_cells(len(row))}, the header names {width:,}: give every row the "
                         "header's columns (an empty cell is written as nothing between two separators)")


def _longer_row(path: Path, sep: str) -> str:
    """Which line of a table holds a filled cell past its header's columns, and the fix."""
    import csv

    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, delimiter=sep, skipinitialspace=True)
        width = len(next(reader, []))
        for row in reader:
            if len(row) > width and any(cell.strip() for cell in row[width:]):
                return (f"line {reader.line_num} has {len(row):,} cells, the header names {width:,}: give every row the "
                        "header's columns")
    return "a row has more cells than the header names: give every row the header's columns"


def _row_fix(exc: RowError, frame: Any, mapped: Mapping[str, str]) -> str:
    """What is wrong with a row of a table, with the fix ``import records`` offers: a field
    missing where the table has its column is an empty cell (a published table's
    configuration that never ran, out of memory), left out with a filter; columns named
    their own way are read with the mapping flags, the first suggestion as the example."""
    if exc.field is not None:
        from cotune.profile._profile import MILLISECOND_FIELDS, STEP_RATES

        # The field's own column, else a column it is read from (a throughput or a time in
        # ms stands for step_time_s): an empty rate cell read as "no step_time_s column",
        # and on a table with other time columns as "read it from its column with --column".
        stand_ins = [*(STEP_RATES if exc.field == "step_time_s" else ()),
                     *(ms for ms, f in MILLISECOND_FIELDS.items() if f == exc.field)]
        for field in (exc.field, *stand_ins):
            column = mapped.get(field, field)
            if column in frame.columns or field in frame.columns:
                whose = (f"its column {column!r}" if field == exc.field else
                         f"column {column!r}{'' if column == field else f' ({field})'}, which it is read from,")
                return (f"missing field {exc.field!r}: {whose} is empty there (a configuration that never "
                        f"ran?): keep the rows that have one with --where '{column}!=' (where={{'{column}!': ''}})")
    if exc.foreign:
        column, field = next(((c, near) for c, near in exc.foreign if near), ("COLUMN", "FIELD"))
        return (f"{exc.detail}; {exc.foreign_said()}: read each from its column with --column {field}={column} "
                "(repeatable; columns= in Python), or rename them")
    return exc.detail


def import_adaptdl(
    path: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    append: bool = False,
    gpu: str | None = None,
    name: str | None = None,
    dataset_size: int | None = None,
    metric: str | None = None,
    goal: Literal["max", "min"] | None = None,
) -> Profile:
    """A profile from an AdaptDL trace (``cotune import adaptdl``): the step-time tables and
    learning curves AdaptDL's profiler records, as the Pollux (OSDI'21) and Sia (SOSP'23)
    artifacts publish them — a directory (``placements*.csv``, ``scalability*.csv``,
    ``validation-<B>.csv``) or one of its files; :mod:`cotune.logs._adaptdl` says how each
    column is read. ``gpu`` names the GPU type where no ``gpu_type`` column or file name
    does. The workload comes from the flags (``name``, default the directory's name;
    ``dataset_size`` and ``metric`` required) or, with ``append=True``, from ``out``.
    Nothing is written unless every row is a valid record."""
    from cotune.logs._convert import _readable

    _paths(path, out, what="the trace directory or one of its files")
    _name("--gpu", gpu)
    from cotune.logs._adaptdl import NO_CURVE_NOTE, trace_name

    existing, fields_ = _workload_of(out, append=append, what="this trace", name=name or trace_name(Path(path)),
                                     named=name is not None, dataset_size=dataset_size, metric=metric, goal=goal,
                                     why_size="training samples per epoch: a curve's steps become epochs with it",
                                     why_metric="what the curves' metric column measures, e.g. top1 or val_loss")
    workload = fields_ if isinstance(fields_, WorkloadRecord) else WorkloadRecord(**fields_, source=f"adaptdl trace {path}")
    records, notes = read_adaptdl(path, dataset_size=workload.dataset_size, gpu=gpu)
    held = 0 if existing is None else len(existing.evals)
    if held and NO_CURVE_NOTE in notes:
        # Appended to a profile with curves: asking for one read as if the profile had none.
        notes[notes.index(NO_CURVE_NOTE)] = (f"no learning curve in this trace: the profile's {held:,} eval "
                                             f"record{'s' if held > 1 else ''} already there are its curves")
    records, dropped = _readable([workload] + records)  # the profile reader's rule, the workload's fields too
    if dropped:
        raise InputError(f"{path}: {dropped[0]}")
    _lines_after(out, existing, records, fix="import one trace file at a time")
    profile = _build(records, path=None if out is None else str(out), warnings=notes)
    _save(out, existing, profile, records)
    return profile


def _workload_of(out: Any, *, append: bool, what: str, name: str, named: bool, dataset_size: int | None,
                 metric: str | None, goal: str | None, why_size: str, why_metric: str) -> tuple[Profile | None, Any]:
    """The profile ``out`` holds (None: a new one) and the workload of what is imported: the
    held one, whose fields given flags must match, or the flags' fields (``dataset_size`` and
    ``metric`` required; the goal from the metric's name when not given) — for a table or a
    trace, which carry no workload of their own. ``named``: ``name`` was given, not derived."""
    from cotune.logs._convert import _goal

    _whole("--dataset-size", dataset_size)
    _name("--name", name if named else None)
    _name("--metric", metric)
    if goal is not None and goal not in ("max", "min"):
        raise InputError(f"--goal must be 'max' or 'min', got {excerpt(goal)}")
    existing = _existing(out, append=append, what=what)
    if existing is not None:
        held = existing.workload
        for flag, given, have in (("--name", name if named else None, held.name),
                                  ("--dataset-size", dataset_size, held.dataset_size),
                                  ("--metric", metric, held.metric), ("--goal", goal, held.goal)):
            if given is not None and given != have:
                raise InputError(f"{out} is workload {held.name!r} with {flag.lstrip('-').replace('-', '_')} {have!r}, "
                                 f"not {given!r}: leave {flag} out to add to it, or choose another --out")
        return existing, held
    for flag, value, why in (("--dataset-size", dataset_size, why_size), ("--metric", metric, why_metric)):
        if value is None:
            raise InputError(f"a new profile needs the workload's {flag.lstrip('-').replace('-', ' ')}: pass {flag} "
                             f"({why})")
    return None, {"name": name, "dataset_size": dataset_size, "metric": metric, "goal": _goal(str(metric), goal)}


def _existing(out: str | os.PathLike[str] | None, *, append: bool, what: str) -> Profile | None:
    """The profile ``out`` already holds (None: none yet, or no ``out``); one that exists
    without ``append`` is refused, as is a path that is no regular file."""
    if out is None or not Path(out).exists():
        return None
    check_profile_path(Path(out))  # a directory or a device: no --append would help
    if not append:
        raise InputError(f"{out} exists: pass --append to add {what} to it, or choose another --out")
    return read_profile(out)


def _lines_after(out: Any, existing: Profile | None, records: list, *, fix: str) -> None:
    """Every door refuses a profile past the reader's cap of lines: do not write one."""
    lines = len(records) if existing is None else _lines(out) + len(records) - 1  # appending adds no workload line
    if lines > MAX_PROFILE_LINES:
        raise InputError(f"the profile would have {lines:,} lines ({len(records) - 1:,} new records), more than the "
                         f"{MAX_PROFILE_LINES:,} a profile may hold: {fix}")


def _save(out: Any, existing: Profile | None, profile: Profile, records: list, *, overlap_fix: str | None = None) -> None:
    """Write the new profile atomically, or append the new records (all but the workload)
    in one write: all of them or none."""
    if out is None:
        return
    if existing is not None:
        # The check and the append under the writer's lock, on the profile as it is then: two
        # imports of one log started together both passed a check made before either wrote.
        with ProfileWriter(out) as writer:
            _check_not_held(read_profile(out), records, out=out, overlap_fix=overlap_fix)
            writer.write_all(records[1:])
    else:
        write_profile(profile, out, exclusive=True)


def _curve_key(points: list[EvalRecord]) -> tuple[tuple[float, str], ...]:
    return tuple((e.epoch, repr(e.metric)) for e in sorted(points, key=lambda e: e.epoch))  # repr: NaN equals NaN


def _check_not_held(existing: Profile, records: list, *, out: Any, overlap_fix: str | None = None) -> None:
    """Refuse an append of what the profile already holds — the same data imported twice
    would count every point twice, and nothing would say so (an AdaptDL trace appended
    again doubled its 600 points and 1,512 step times; a log imported twice became two
    identical "runs"). Held: eval points under a (global batch, seed) the profile already
    has, at or before its last epoch there (a run continues only past its end); a run whose
    points equal a held run's at that batch under any seed; step records that are all in
    the profile already."""
    new_evals: dict[tuple[int, int], list[EvalRecord]] = {}
    for r in records[1:]:
        if isinstance(r, EvalRecord):
            new_evals.setdefault((r.global_batch, r.seed), []).append(r)
    held: dict[tuple[int, int], list[EvalRecord]] = {}
    for e in existing.evals:
        held.setdefault((e.global_batch, e.seed), []).append(e)
    fix = overlap_fix or ("import another run, or give these points another seed (a seed column or --set seed=N for "
                          "a table, --seed for a log), or import them into a new profile")
    for (batch, seed), points in sorted(new_evals.items()):
        last = max((e.epoch for e in held.get((batch, seed), ())), default=None)
        first = min(e.epoch for e in points)
        if last is not None and first <= last:
            raise InputError(f"{out} already holds seed {seed} at global batch {batch} up to epoch {last:.4g}, and these "
                             f"points there start at epoch {first:.4g}: under one seed the two would read as one run "
                             f"(the same run imported twice counts every point twice): {fix}")
        key = _curve_key(points)
        twin = next((s for (b, s), pts in sorted(held.items()) if b == batch and _curve_key(pts) == key), None)
        if twin is not None:
            raise InputError(f"{out} already holds these {len(points):,} points as seed {twin} at global batch {batch}: "
                             "the same run imported twice; it is in the profile already (import another run's log)")
    steps = [r for r in records[1:] if isinstance(r, StepRecord)]
    if steps and set(steps) <= set(existing.steps):
        raise InputError(f"{out} already holds all {len(steps):,} of these step records: the same measurements imported "
                         "twice would weigh every configuration double; leave them out")


def _lines(path: str | os.PathLike[str]) -> int:
    with open(path, "rb") as fh:
        return sum(1 for _ in fh)
