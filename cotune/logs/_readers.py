"""Readers: one training log in, :class:`LogData` (named scalar series) out.

Each reader knows one tool's file layout and nothing about profiles. Steps are
normalised to *optimizer steps completed* (Lightning's CSVLogger writes the 0-based
index of the step just taken, so it adds one); epochs are kept only where the log
states real passes over the data (Hugging Face's fractional ``epoch``; Keras
CSVLogger's 0-based epoch index plus one).
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import re
import struct
import sys
import types
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping

import numpy as np

from cotune._checks import excerpt, not_text_reason
from cotune.errors import InputError

if TYPE_CHECKING:
    import sqlite3

__all__ = ["FORMATS", "Series", "LogData", "read_log"]


@dataclass(frozen=True)
class Series:
    """One scalar over training: ``step`` (optimizer steps done), optional real epochs
    and wall-clock seconds (from any origin: only differences are used), and the
    values. Arrays are sorted by step."""

    name: str
    step: np.ndarray
    value: np.ndarray
    epoch: np.ndarray | None = None
    wall_time_s: np.ndarray | None = None
    unreadable: tuple[str, ...] = ()  # cells of a table's column that are not numbers (left out)
    # Times the step went back in the order the log wrote the points (a rerun or a restart
    # that counted from 0 again, in one file): the arrays are sorted, so only this keeps it.
    steps_back: int = 0


@dataclass(frozen=True)
class LogData:
    """What a reader found: series by name, single numbers from a run summary, and facts
    about the run the log states (e.g. the per-process batch), for error messages."""

    format: str
    source: str
    run_name: str
    series: Mapping[str, Series]
    summary: Mapping[str, float] = field(default_factory=dict)
    facts: Mapping[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what the reader left out, and why (shown by `cotune import`)
    # Columns none of whose cells is a number, and why: no series, but named when one was
    # asked for or no metric was found (a decimal comma makes the metric one of them).
    text_columns: Mapping[str, str] = field(default_factory=dict)
    # The files each series was read from where a log is several (TensorBoard writes an event
    # file per writer): named when a series' steps go back, so the user knows where to split.
    files: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Directories below a TensorBoard run that hold event files of their own (SummaryWriter's
    # add_scalars writes each of its series into one): named when no metric is found here.
    sub_runs: tuple[str, ...] = ()


def _series(name: str, rows: list[tuple[float, float, float | None, float | None]]) -> Series:
    # Counted before the sort, which would hide it: a second run's steps 100, 200, ... after
    # the first's read as one curve with two points at every step.
    steps = [r[0] for r in rows if math.isfinite(r[0])]
    back = sum(1 for a, b in zip(steps, steps[1:]) if b < a)
    rows = sorted(rows, key=lambda r: r[0])
    step = np.array([r[0] for r in rows], dtype=float)
    value = np.array([r[1] for r in rows], dtype=float)
    epochs = [r[2] for r in rows]
    walls = [r[3] for r in rows]
    epoch = np.array(epochs, dtype=float) if all(e is not None for e in epochs) else None
    wall = np.array(walls, dtype=float) if all(w is not None for w in walls) else None
    return Series(name=name, step=step, value=value, epoch=epoch, wall_time_s=wall, steps_back=back)


def _number(text: object) -> float | None:
    if isinstance(text, bool):
        return None
    if isinstance(text, int):  # JSON's integers are unbounded: 10**400 is inf, as the text '1e400' reads
        return float(text) if abs(text) < 2**1023 else (math.inf if text > 0 else -math.inf)
    if isinstance(text, float):
        return text
    # float() reads '1_0' as 10 (Python literal syntax), which no logger writes
    if isinstance(text, str) and text.strip() and "_" not in text:
        try:
            value = float(text)
        except ValueError:
            return None
        # A logger writes a float it holds; 'inf' or 'nan' is a diverged value, but digits past
        # float range ('1e309', 100,000 nines) are no number any logger wrote, not a divergence.
        if math.isinf(value) and "inf" not in text.lower():
            return None
        return value
    return None


# Training logs are megabytes; a cap keeps a wrong path (a device, a dataset) from
# filling memory before the error.
MAX_LOG_BYTES = 256 * 2**20
# A JSON log is parsed whole into Python objects, ~9x its size (a 122 MB trainer_state.json
# of 1.7M entries took 1.0 GB): half the cap keeps it near the CSV logs' ~1 GB.
MAX_JSON_LOG_BYTES = 128 * 2**20


def _need_file(path: Path, what: str, fmt: str, *, limit: int | None = None) -> Path:
    if not path.exists():
        raise InputError(f"{path}: no such file or directory: give the path of the {what}")
    from cotune._checks import file_problem

    problem = file_problem(path)
    if problem is not None:
        raise InputError(f"{path} {problem}: give the {what} itself (format {fmt})")
    size, most = path.stat().st_size, MAX_LOG_BYTES if limit is None else limit
    if size > most:
        raise InputError(
            f"{path} is {size / 2**20:.0f} MiB, more than a {fmt} log's {most // 2**20} MiB limit: "
            f"give the {what} (format {fmt})"
        )
    return path


# --- Hugging Face Trainer: trainer_state.json -------------------------------------


def read_hf_trainer(path: Path) -> LogData:
    if path.is_dir():
        path = path / "trainer_state.json"
    _need_file(path, "trainer_state.json that Trainer writes into each checkpoint", "hf-trainer", limit=MAX_JSON_LOG_BYTES)
    from cotune._checks import BadValue, load_json

    try:
        # Trainer writes its state with Python's json, which writes NaN and Infinity (a
        # diverged eval_loss, an fp16 overflow's grad_norm): a real log has them.
        state = load_json(path.read_bytes(), nonfinite=True)
    except BadValue as exc:
        why = not_text_reason(path)
        if why:
            raise InputError(f"{path}: {why}") from None
        raise InputError(f"{path}: {exc}: give the trainer_state.json of a checkpoint") from None
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise InputError(f"{path}: no 'log_history' list: this is not a Hugging Face trainer_state.json")
    rows: dict[str, list] = {}
    summary: dict[str, float] = {}
    skipped = odd = 0  # entries without a step; entries that are not objects at all
    # Evaluations inside train() (before its closing summary) are inside its train_runtime:
    # their own *_runtime is time the summary's steps per second did not spend stepping.
    # (step, seconds) of each, for the summary to keep those of its own session.
    paused: list[tuple[float | None, float]] = []
    bad_epoch = 0
    # Trainer logs an epoch with every entry. Where some entries have one and others not (null,
    # true, text, or no key), those others are left out: one of them dropped every point's
    # logged epoch, and the import then counted epochs from steps. Where none has one, the
    # steps are what there is.
    logged_epochs = any(isinstance(e, dict) and _number(e.get("step")) is not None and _number(e.get("epoch")) is not None
                        for e in history)
    for entry in history:
        if not isinstance(entry, dict):
            odd += 1
            continue
        step, epoch = _number(entry.get("step")), _number(entry.get("epoch"))
        # The closing summary entry (train_runtime, train_steps_per_second, …) is one number per run.
        if "train_runtime" in entry:
            summary.update({k: v for k, v in ((k, _number(v)) for k, v in entry.items()) if v is not None})
            mine = _this_sessions(paused, summary)
            if mine:
                summary.update(eval_runtime_in_train_s=sum(t for _, t in mine), evaluations_in_train=float(len(mine)))
            continue
        if not summary:
            spent = [_number(v) for k, v in entry.items() if k.endswith("_runtime") and k.startswith("eval")]
            if spent and all(x is not None and math.isfinite(x) and x >= 0 for x in spent):
                paused.append((step, sum(spent)))  # type: ignore[arg-type]
        if step is None:
            skipped += 1
            continue
        if logged_epochs and epoch is None:
            bad_epoch += 1
            continue
        for key, raw in entry.items():
            value = _number(raw)
            if key in ("step", "epoch") or value is None:
                continue
            rows.setdefault(key, []).append((step, value, epoch, None))
    facts = {k: float(v) for k, v in state.items() if k in ("train_batch_size", "global_step", "num_train_epochs") and _number(v) is not None}
    return LogData(
        format="hf-trainer",
        source=str(path),
        # Trainer writes the file into output_dir/checkpoint-N: the run is the output_dir.
        run_name=(path.parent.parent if path.parent.name.startswith("checkpoint-") else path.parent).resolve().name or "hf-run",
        series={k: _series(k, v) for k, v in rows.items()},
        summary=summary,
        facts=facts,
        notes=(*_skipped_note(skipped, "log_history entry", "'step'", plural="log_history entries"),
               *_not_objects_note(odd),
               *((f"skipped {bad_epoch} log_history entr{'y' if bad_epoch == 1 else 'ies'} without a numeric 'epoch' "
                  "(the others have one)",) if bad_epoch else ())),
    )


def _this_sessions(evaluations: list[tuple[float | None, float]],
                   summary: Mapping[str, float]) -> list[tuple[float | None, float]]:
    """The evaluations inside the summary's ``train_runtime``. A run resumed from a checkpoint
    keeps the earlier session's log_history, but its summary times this session alone: its
    ``train_steps_per_second`` × ``train_runtime`` steps, ending at its ``step``. Those the
    summary cannot place (no step, or a summary without one) are all kept, as before."""
    rate, runtime, last = (summary.get(k) for k in ("train_steps_per_second", "train_runtime", "step"))
    if rate is None or runtime is None or last is None or not (rate > 0 and runtime > 0):
        return evaluations
    steps = rate * runtime  # two huge numbers (a damaged log) make inf, which round() refuses
    if not (math.isfinite(steps) and math.isfinite(last)):
        return evaluations
    first = last - round(steps)
    # Trainer rounds the rate to 3 decimals: the product is the session's steps to within
    # runtime / 2000; a start closer to 0 than that is a run that was not resumed.
    if first <= 0.0005 * runtime + 1:
        return evaluations
    return [(step, t) for step, t in evaluations if step is None or step > first]


def _skipped_note(n: int, what: str, column: str, *, plural: str | None = None) -> tuple[str, ...]:
    if not n:
        return ()
    many = plural or f"{what}s"
    return (f"skipped {n} {what if n == 1 else many} without a number in {column}: check the log if that is unexpected",)


def _not_objects_note(n: int) -> tuple[str, ...]:
    if not n:
        return ()
    return (f"skipped {n} log_history entr{'y' if n == 1 else 'ies'} that {'is' if n == 1 else 'are'} not a JSON object: "
            "check the log if that is unexpected",)


# --- tables: Lightning CSVLogger metrics.csv and plain CSV ---------------------------


# Separators a header may use when it has no comma: spreadsheets in many locales write ';',
# tab-separated exports write '\t'. One predictable rule instead of csv.Sniffer's guesses.
_SEPARATORS = (";", "\t", "|")


def _separator(first_line: str) -> str:
    if "," in first_line:
        return ","
    return next((sep for sep in _SEPARATORS if sep in first_line), ",")


def _read_table(path: Path, fmt: str, what: str) -> tuple[list[str], list[dict[str, str]], tuple[str, ...]]:
    """The header, the rows (each with the header's columns) and notes on what was left out:
    a torn last row (:func:`cut_short`) is dropped, with a note saying so."""
    _need_file(path, what, fmt)
    notes: list[str] = []
    unended = ends_unended(path)
    try:
        # utf-8-sig: spreadsheet programs start a CSV file with a byte-order mark
        with path.open(newline="", encoding="utf-8-sig") as fh:
            sep = _separator(fh.readline())
            fh.seek(0)
            # skipinitialspace: 'epoch, val_top1' names the column 'val_top1', not ' val_top1'
            reader = csv.DictReader(fh, delimiter=sep, skipinitialspace=True)
            header = list(reader.fieldnames or [])
            # Checked before the rows are read: a dict per row of every column
            check_header(path, header)
            # Each cell becomes a few Python objects (~250 bytes, with its series point): the
            # cells are capped, not only the bytes (a 44 MB log of 10 columns took 2.5 GB).
            most = max(1, MAX_LOG_CELLS // max(len(header), 1))
            rows = list(itertools.islice(_as_long_as_the_header(reader, path, unended=unended, notes=notes), most + 1))
            if len(rows) > most:
                raise InputError(f"{path}: more than {most:,} rows of {len(header)} columns, more than the "
                                 f"{MAX_LOG_CELLS:,} cells a log may hold: keep the columns the import needs (the "
                                 "step or epoch, the metric, the clock), or log every k-th step")
    except (UnicodeDecodeError, csv.Error) as exc:
        why = not_text_reason(path)
        if why:
            raise InputError(f"{path}: {why}") from None
        if isinstance(exc, UnicodeDecodeError):
            raise InputError(f"{path}: {not_utf8(exc)}") from None
        raise InputError(f"{path}: not a readable CSV file ({exc}): give a comma-separated file with a header row") from None
    if not header or not rows:
        raise InputError(f"{path}: no header row or no data rows: give a CSV file with named columns")
    if sep == ";":  # semicolons separate where a comma is the decimal mark: '0,71875'
        grouped = uses_decimal_commas(v for row in rows for v in row.values())
        rows = [{k: dot_decimal(v, grouped=grouped) for k, v in row.items()} for row in rows]
    return header, rows, tuple(notes)


def ends_unended(path: Path) -> bool:
    """Whether a text file's last line has content and no newline. Every log writer (Python's
    csv, pandas, Keras's and Lightning's CSVLogger, W&B's export) ends each row with one, so
    there a killed writer or a full disk may have cut the row short; published tables often
    end without one (DAWNBench's TSVs, ElasticFlow's throughputs), whole."""
    with path.open("rb") as fh:
        size = fh.seek(0, 2)
        fh.seek(max(0, size - 4096))
        tail = fh.read()
    # Blanks after the last newline are no row (a hand-edited file's trailing spaces).
    return bool(tail) and tail[-1:] not in (b"\n", b"\r") and bool(re.split(rb"[\r\n]", tail)[-1].strip())


# A number cut mid-write: at its point, its exponent or its sign ('0.' of '0.75', '1e-' of
# '1e-05'). No writer writes a number so; a row cut after a whole digit reads whole.
_CUT_NUMBER = re.compile(r"[-+]|[-+]?(?:\d+\.|(?:\d+(?:\.\d*)?|\.\d+)[eE][-+]?)")


def cut_short(cells: list[str], *, width: int) -> bool:
    """Whether an unended last row (:func:`ends_unended`) is visibly torn: fewer cells than
    the header's ``width``, or a last cell that is a number cut short. Dropped with a note
    (read, '4,0.' wrote a metric of 0.0 at epoch 4); a row that reads whole is kept."""
    filled = [c.strip() for c in cells[:width]]
    return (len(cells) < width and any(filled)) or bool(filled and _CUT_NUMBER.fullmatch(filled[-1]))


def torn_row_note(line: int) -> str:
    return f"dropped a torn last row (line {line:,}, cut short without its newline: the writer stopped mid-write)"


def _as_long_as_the_header(reader: "csv.DictReader[str]", path: Path, *, unended: bool,
                           notes: list[str]) -> Iterator[dict[str, str]]:
    """The rows of ``reader``, each with the header's columns only. Empty cells past the
    header (a trailing separator on every line, as some exports write) are dropped; a
    filled one is refused with its line: the row's values no longer sit under their
    column's name (a logger that added a column mid-run), and ``DictReader`` would keep
    them apart, uncounted by the cell cap. A row with fewer cells than the header (fewer
    separators: an empty cell written ',,' is a cell) is refused the same way: its values
    would sit under the wrong names just as well. With ``unended`` a last row that is
    :func:`cut_short` is dropped, and a note added to ``notes``."""
    pending: tuple[int, dict[str, str]] | None = None
    for row in reader:
        if pending is not None:
            yield _whole_row(*pending, path)
        pending = (reader.line_num, row)
    if pending is None:
        return
    line, row = pending
    cells = [v for v in row.values() if isinstance(v, str)] + list(row.get(None) or ())  # type: ignore[call-overload]
    if unended and cut_short(cells, width=len([k for k in row if k is not None])):
        notes.append(torn_row_note(line))
        return
    yield _whole_row(line, row, path)


def _cells(n: int) -> str:
    return f"{n:,} cell{'' if n == 1 else 's'}"


def _whole_row(line: int, row: dict[str, str], path: Path) -> dict[str, str]:
    """``row`` (file line ``line``) without its empty cells past the header; an InputError
    where it has filled cells past the header, or fewer cells than the header names."""
    extra = row.pop(None, None)  # type: ignore[call-overload]
    if extra and any(cell.strip() for cell in extra):
        n = len(row) + len(extra)
        raise InputError(f"{path}: line {line} has {n:,} cells, the header names {len(row):,}: give every "
                         "row the header's columns (a log whose columns changed mid-run: split it where they do)")
    missing = sum(1 for v in row.values() if v is None)
    # A line of blanks alone (' ') is no row of values: counted as a row without an x, as before.
    if missing and any(v.strip() for v in row.values() if v is not None):
        raise InputError(f"{path}: line {line} has {_cells(len(row) - missing)}, the header names {len(row):,}: give "
                         "every row the header's columns (an empty cell is written as nothing between two separators)")
    return row


def not_utf8(exc: UnicodeDecodeError) -> str:
    """What a text file that is not UTF-8 needs (Latin-1 or Windows-1252: 'résultat' saved by
    a spreadsheet in a Western locale)."""
    # The byte, not its offset: pandas decodes in chunks, and its offsets count from the chunk.
    return (f"not UTF-8 text (a byte 0x{exc.object[exc.start]:02x}): save it as UTF-8 (a "
            "spreadsheet's 'CSV UTF-8'; iconv -f latin1 -t utf-8), then import it")


# A number written with a decimal comma, and nothing else in the cell ('1,5', '-0,25e-3').
_DECIMAL_COMMA = re.compile(r"^(\s*[-+]?\d+),(\d+(?:[eE][-+]?\d+)?\s*)$")
# ... with its thousands grouped by dots ('1.000', '12.345,5'): a leading group of 1-3 digits
# not starting with 0 ('0.500' is a decimal), then groups of exactly three.
_DOT_GROUPED = re.compile(r"^(\s*[-+]?[1-9]\d{0,2}(?:\.\d{3})+)((?:,\d+)?\s*)$")


def uses_decimal_commas(cells: Iterable[object]) -> bool:
    """Whether a semicolon-separated file writes decimals with a comma ('0,5') anywhere: its
    locale then groups thousands with dots, and '1.000' is a thousand, not 1.0."""
    return any(isinstance(c, str) and _DECIMAL_COMMA.match(c) for c in cells)


def dot_decimal(cell: object, *, grouped: bool) -> object:
    """A cell of a semicolon-separated file as the number readers parse: '0,5' → '0.5'; with
    ``grouped`` (:func:`uses_decimal_commas`) also '1.000' → '1000' and '12.345,5' → '12345.5'
    (the step 1.000 was read as 1.0: epochs 1000 times too small, without a word)."""
    if not isinstance(cell, str):
        return cell
    if grouped:
        hit = _DOT_GROUPED.match(cell)
        if hit:
            cell = hit.group(1).replace(".", "") + hit.group(2)
    return _DECIMAL_COMMA.sub(r"\1.\2", cell)


#: Cells (rows × columns) a CSV log may hold: about 1 GB of memory while it is read.
MAX_LOG_CELLS = 4_000_000

#: Columns a table or log may have: a training log has tens, a published table a few hundred
#: (a wide one, a column per GPU count or epoch); past this a file is no such table, and the
#: readers' time and memory grow with the columns whatever the file's size (200,000 columns
#: of one row, 1.7 MB, took 7.5 minutes and 0.9 GB).
MAX_COLUMNS = 10_000


def check_header(path: Path, header: list[str]) -> None:
    """Refuse a header of more than :data:`MAX_COLUMNS` columns, or one that names a column
    twice: a reader keeps one of the two (``csv.DictReader`` the last; pandas renames the
    second ``name.1``), so the other one would vanish without a word. A header holding a NUL
    is asked about its file's bytes: UTF-16 without a byte order mark decodes as UTF-8, and
    its columns ('g\x00p\x00u\x00') were then named as columns that are no field."""
    if any("\x00" in h for h in header if isinstance(h, str)):
        why = not_text_reason(path)
        if why:
            raise InputError(f"{path}: {why}")
    if len(header) > MAX_COLUMNS:
        raise InputError(f"{path}: the header names {len(header):,} columns, more than a table's {MAX_COLUMNS:,}: "
                         "give a table with a column per field (or per value of one, with --wide)")
    counts = Counter(header)
    twice = sorted(h for h, n in counts.items() if n > 1)
    if twice:
        raise InputError(f"{path}: column {excerpt(twice[0])} appears {counts[twice[0]]} times in the header: "
                         "give each column its own name")


def _table_series(
    header: list[str], rows: list[dict[str, str]], *, step_col: str | None, epoch_col: str | None, step_offset: float,
    epoch_is_passes: bool, epoch_offset: float = 0.0, time_col: str | None = None, clocks: tuple[str, ...] = (),
    seconds_per_unit: float = 1.0, path: Path | str = "the log",
) -> tuple[dict[str, Series], int, dict[str, str]]:
    """The series of every column (with the cells in it that are not numbers), and how many
    rows had no usable x (step, or epoch as passes). ``time_col`` holds each row's
    wall-clock time (any origin) in units of ``seconds_per_unit`` seconds, kept in seconds
    beside every value of the row; ``clocks`` are other clock columns, no series either."""
    out: dict[str, list] = {}
    unreadable: dict[str, list[str]] = {}
    unread_x: dict[str, list[str]] = {}
    skipped = 0
    for row in rows:
        step = _number(row.get(step_col)) if step_col else None
        epoch = _number(row.get(epoch_col)) if epoch_col else None
        wall = _number(row.get(time_col)) if time_col else None
        wall = wall * seconds_per_unit if wall is not None else None
        if step is None and (epoch is None or not epoch_is_passes):
            skipped += 1
            for col in (step_col, epoch_col):
                cell = row.get(col) if col else None
                if isinstance(cell, str) and cell.strip() and _number(cell) is None:
                    unread_x.setdefault(col, []).append(cell.strip())
            continue
        for key in header:
            if key in (step_col, epoch_col, time_col) or key in clocks:
                continue
            value = _number(row.get(key))
            if value is None:
                cell = row.get(key)
                if isinstance(cell, str) and cell.strip():
                    unreadable.setdefault(key, []).append(cell.strip())
                continue
            s = (step + step_offset) if step is not None else math.nan
            e = epoch + epoch_offset if epoch_is_passes and epoch is not None else None
            out.setdefault(key, []).append((s, value, e, wall))
    if rows and skipped == len(rows) and unread_x:
        # No row has an x: every series would be empty, and the error would say "no metric".
        col, cells = next(iter(unread_x.items()))
        raise InputError(f"{path}: no row has a number in column {col!r} (cells like {cells[0]!r}){_comma_hint(cells)}: "
                         "the step or epoch of each row is what the curve is read against")
    series = {k: _series(k, v) for k, v in out.items()}
    for k, cells in unreadable.items():
        if k in series:
            series[k] = replace(series[k], unreadable=tuple(cells))
    return series, skipped, _no_numbers_notes({k: c for k, c in unreadable.items() if k not in series})


def _no_numbers_notes(columns: dict[str, list[str]]) -> dict[str, str]:
    """Why each column none of whose cells is a number is no series, with a look at its cells
    (a decimal comma, '0,5', is the usual cause of a metric column without numbers)."""
    out = {}
    for k, cells in columns.items():
        out[k] = f"column {k!r} holds no numbers (cells like {cells[0]!r}){_comma_hint(cells)}"
    return out


def _comma_hint(cells: list[str]) -> str:
    """Why cells with a comma are no numbers: '1,234' groups thousands (or is a decimal
    comma: no reader can tell), '0,5' is a decimal comma."""
    if any(re.fullmatch(r"[-+]?[1-9]\d{0,2}(?:,\d{3})+", c) for c in cells):
        return ": thousands separators (or decimal commas)? write plain numbers (1234, 0.5)"
    if any(re.fullmatch(r"[-+]?\d+,\d+", c) for c in cells):
        return ": decimal commas? write decimal points (0.5)"
    return ""


def read_lightning_csv(path: Path) -> LogData:
    if path.is_dir():
        found = sorted(path.rglob("metrics.csv"))
        if len(found) != 1:
            listed = ", ".join(str(p) for p in found[:5]) or "none"
            raise InputError(f"{path}: expected one metrics.csv below it, found {len(found)} ({listed}): give one run's metrics.csv")
        path = found[0]
    header, rows, torn = _read_table(path, "lightning-csv", "metrics.csv that CSVLogger writes")
    if "step" not in header:
        raise InputError(f"{path}: no 'step' column: this is not a Lightning CSVLogger metrics.csv (use format csv)")
    # CSVLogger's 'step' is the 0-based index of the step just taken; its 'epoch' is the
    # 0-based epoch index, not passes over the data, so epochs come from steps instead.
    series, skipped, empty = _table_series(header, rows, step_col="step", epoch_col="epoch" if "epoch" in header else None,
                                           step_offset=1.0, epoch_is_passes=False, path=path)
    run = path.parent.parent.name if path.parent.name.startswith("version_") else path.parent.name
    facts = {}
    if "epoch" in header:
        implied = _steps_per_epoch_of_index(rows)
        if implied is not None:
            facts["steps_per_epoch"] = implied
    return LogData(format="lightning-csv", source=str(path), run_name=run or "lightning-run", series=series, facts=facts,
                   notes=torn + _skipped_note(skipped, "row", "'step'"), text_columns=empty)


def _steps_per_epoch_of_index(rows: list[dict[str, str]]) -> float | None:
    """Steps per epoch a CSVLogger log implies: the median gap between the last steps
    logged in consecutive epoch indices (None with fewer than two whole epochs)."""
    last: dict[int, float] = {}
    for row in rows:
        step, epoch = _number(row.get("step")), _number(row.get("epoch"))
        # an index is a finite whole number ('1e400' reads as inf, which has no int)
        if step is not None and epoch is not None and math.isfinite(step) and math.isfinite(epoch) and epoch == int(epoch):
            last[int(epoch)] = max(last.get(int(epoch), -math.inf), step)
    gaps = [last[e + 1] - last[e] for e in sorted(last) if e + 1 in last]
    gaps = [g for g in gaps if g > 0]
    return float(np.median(gaps)) if gaps else None


def read_keras_csv(path: Path, *, time_column: str | None = None, time_unit: str | None = None) -> LogData:
    """Keras ``CSVLogger``: one row per epoch, ``epoch`` the 0-based index of the epoch just
    finished (row ``k`` is measured after ``k + 1`` passes over the data). CSVLogger writes
    no clock, but a log of its layout may hold one (a callback's, DAWNBench's ``hours``)."""
    header, rows, torn = _read_table(path, "keras-csv", "training log that keras.callbacks.CSVLogger writes")
    if "epoch" not in header:
        raise InputError(f"{path}: no 'epoch' column" + (_unnamed_index(header) or
                         ": this is not a Keras CSVLogger log (use format csv and --epoch-column)"))
    time_col, seconds_per, unit_note = _clock(path, header, rows, time_column, time_unit, x=("epoch",))
    clocks = tuple(h for h in header if h.strip().lower() in TIME_COLUMNS) if time_col is not None else ()
    series, skipped, empty = _table_series(header, rows, step_col=None, epoch_col="epoch", step_offset=0.0,
                                           epoch_is_passes=True, epoch_offset=1.0, time_col=time_col, clocks=clocks,
                                           seconds_per_unit=seconds_per, path=path)
    return LogData(format="keras-csv", source=str(path), run_name=path.stem, series=series,
                   notes=torn + _skipped_note(skipped, "row", "'epoch'") + ((unit_note,) if unit_note else ())
                   + _one_based_hint(rows), text_columns=empty)


def _one_based_hint(rows: list[dict[str, str]]) -> tuple[str, ...]:
    # CSVLogger's first row is epoch 0 (unless a fit resumed at initial_epoch): a column
    # that starts at 1 — DAWNBench's TSVs, of the same layout — counts passes already, and
    # with the one added every point would read one epoch late.
    first = next((e for e in (_number(r.get("epoch")) for r in rows) if e is not None), None)
    if first is None or first < 1.0:
        return ()
    return (f"column 'epoch' starts at {first:g}, where Keras's CSVLogger starts at 0 (one is added to each: the "
            "index of the epoch just finished): if it counts passes done (DAWNBench's logs), import the log as format "
            "csv, or every point is one epoch late",)


def _unnamed_index(header: list[str]) -> str:
    """The fix for a table whose x axis is a column without a name (pandas' index, which
    ``DataFrame.to_csv`` writes with an empty header cell: a Keras ``History`` saved so counts
    epochs from 0 there), which no --epoch-column can name; "" where every column has a name."""
    if not any(not h.strip() for h in header):
        return ""
    return ("; a column has no name (pandas writes a DataFrame's index so: a Keras History saved with "
            "pd.DataFrame(history.history).to_csv() holds the 0-based epoch index there): write 'epoch' as its name in "
            "the header, then import the file as format keras-csv")


def _epoch_index_hint(rows: list[dict[str, str]], epoch_col: str, step_col: str) -> tuple[str, ...]:
    # Passes done are 0 only before the first step: a whole-number epoch column that is still 0
    # after steps were taken counts the epoch in progress from 0 (Lightning's CSVLogger, a
    # W&B export of it), and read as passes every point is about one epoch early.
    at_zero = None
    for row in rows:
        epoch = _number(row.get(epoch_col))
        if epoch is None:
            continue
        if not math.isfinite(epoch) or not epoch.is_integer():
            return ()
        step = _number(row.get(step_col))
        if epoch == 0.0 and step is not None and math.isfinite(step) and step > 0 and at_zero is None:
            at_zero = step
    if at_zero is None:
        return ()
    return (f"column {epoch_col!r} is still 0 at step {at_zero:g}, after steps were taken: it counts the epoch in "
            "progress from 0 (Lightning's CSVLogger writes that), not passes done, and every point reads about one "
            "epoch early: import a Lightning log as format lightning-csv (its epochs come from the steps), or rename "
            f"that column in the file's header (to {epoch_col + '_index'!r}, say) so the steps give the epochs",)


def _read_in_progress_index(series: dict[str, Series], rows: list[dict[str, str]], header: list[str], *,
                            epoch_col: str, step_col: str | None) -> tuple[dict[str, Series], tuple[str, ...]]:
    """``series`` with the points of each one logged at the end of an epoch read as passes done,
    where ``epoch_col`` is the index of the epoch in progress, and a note saying so.

    Such an index (a W&B history export of ``wandb.log({"epoch": epoch, ...})`` inside ``for
    epoch in range(n)``; Lightning's ``metrics.csv``) holds whole numbers from 0 that repeat
    over the rows of a pass; a series whose every point sits on the last row of an index's
    rows, after other rows of it, was logged when that pass ended: index ``k`` is ``k + 1``
    passes done. Read as passes, every evaluation was one epoch early (the first at epoch 0,
    before any training), without a word. Series on other rows (the per-step training loss)
    keep the index."""
    at = [(i, e) for i, e in enumerate(_number(r.get(epoch_col)) for r in rows) if e is not None]
    values = [e for _, e in at]
    if (len(values) < 2 or values[0] != 0.0 or not all(math.isfinite(e) and e.is_integer() for e in values)
            or any(b < a for a, b in zip(values, values[1:])) or len(set(values)) == len(values)):
        return series, ()
    # The last row of each run of equal indices that has rows before it: an epoch's end.
    ends = {i for (i, e), after, before in zip(at, values[1:] + [math.nan], [math.nan] + values[:-1])
            if e != after and e == before}
    shifted = []
    for key in header:
        s = series.get(key)
        if s is None or s.epoch is None or key == step_col:
            continue
        on = {i for i, _ in at if _number(rows[i].get(key)) is not None}
        if on and on <= ends:
            series[key] = replace(s, epoch=s.epoch + 1.0)
            shifted.append(key)
    if not shifted:
        return series, ()
    names = ", ".join(map(repr, shifted[:5])) + (f" and {len(shifted) - 5:,} more" if len(shifted) > 5 else "")
    return series, (f"column {epoch_col!r} counts the epoch in progress from 0 (whole numbers repeated over the rows "
                    f"of a pass): the points of {names}, each on the last row of its epoch, are read as at that "
                    "epoch's end (index + 1 passes done)",)


def _zero_based_hint(rows: list[dict[str, str]], epoch_col: str) -> tuple[str, ...]:
    # An epoch column 0, 1, 2, ... is an index (Keras CSVLogger writes the index of the
    # epoch just finished), not passes done: read as passes, every point is one epoch early.
    epochs = [e for e in (_number(r.get(epoch_col)) for r in rows) if e is not None]
    if len(epochs) >= 2 and epochs[0] == 0.0 and epochs == [float(k) for k in range(len(epochs))]:
        return (f"column {epoch_col!r} counts 0, 1, 2, ...: if it is the index of the epoch just finished (Keras "
                "CSVLogger writes that), import the log as format keras-csv, or every point is one epoch early",)
    return ()


RUN_COLUMNS = ("run", "run_id", "run_name")  # a column that names the run of each row, by its name


def _one_run(path: Path, header: list[str], rows: list[dict[str, str]], *, run: str | None,
             run_column: str | None) -> list[dict[str, str]]:
    """The rows of one run of a table that pools several (published results, a sweep's
    export): read as one curve, MLPerf's published ResNet-50 evaluations (1,519 runs) became
    one curve whose epochs went back 1,518 times. Without a run column the rows are one run."""
    if run_column is not None and run_column not in header:
        raise InputError(f"{path}: no column {run_column!r} (--run-column); columns are {', '.join(header)}")
    col = run_column or next((h for h in header if h.strip().lower() in RUN_COLUMNS), None)
    if col is None:
        if run is not None:
            raise InputError(f"{path}: --run {run!r} needs a column that names runs ({', '.join(RUN_COLUMNS)}, or "
                             "--run-column NAME); this file has none")
        return rows
    ids = list(dict.fromkeys((r.get(col) or "").strip() for r in rows))
    if run is None:
        if len(ids) <= 1:
            return rows
        shown = ", ".join(repr(i) for i in ids[:3]) + (", ..." if len(ids) > 3 else "")
        raise InputError(f"{path}: holds {len(ids):,} runs (column {col!r}: {shown}): pick one with --run ID, and "
                         "import the others with --append, one run each")
    keep = [r for r in rows if (r.get(col) or "").strip() == run]
    if not keep:
        near = [i for i in ids if run.lower() in i.lower()][:3]
        raise InputError(f"{path}: no run {run!r} in column {col!r}"
                         + (f"; runs that contain it: {', '.join(map(repr, near))}" if near else f" ({len(ids):,} runs)"))
    return keep


# Columns of wall-clock seconds that trackers' table exports write, by name (any case):
# Weights & Biases (`_runtime`: seconds since the start; `_timestamp`: Unix time) and
# TensorBoard's CSV download ("Wall time", Unix time).
TIME_COLUMNS = ("_runtime", "_timestamp", "wall time", "wall_time", "walltime")

#: Units a table's clock column may count in (``--time-unit``), as seconds per unit.
TIME_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}
# The last word of a clock column's name that says its unit (DAWNBench's TSVs count `hours`).
_UNIT_WORDS = {"h": {"h", "hr", "hrs", "hour", "hours"}, "min": {"min", "mins", "minute", "minutes"},
               "s": {"s", "sec", "secs", "second", "seconds"}}


def clock_like(name: str) -> bool:
    """Whether a column's name reads as a clock a reader did not take as one (``hours``,
    ``elapsed_s``, ``elapsed_min``, ``wall_clock``, ``time``): named in the "no step times"
    note, never taken unasked. A duration of one step or epoch (``step_time``,
    ``epoch_time_s``) is no clock."""
    words = [w.lower() for w in re.split(r"[^A-Za-z]+", name) if w]
    if not words:  # a name of digits or punctuation ('1;2'): nothing says clock
        return False
    if len(words) > 1 and words[-1] in ("s", "sec", "secs", "seconds", "min", "mins", "h", "hr"):
        words = words[:-1]  # a unit suffix: judge the name before it (elapsed_s, time_min)
    clockish = {"elapsed", "walltime", "wallclock", "clock", "timestamp", "runtime"} & set(words)
    unit = words[-1] in set().union(*_UNIT_WORDS.values()) - {"s", "h"}
    bare_time = words[-1] == "time" and not {"step", "epoch", "eval", "batch", "iteration", "iter"} & set(words)
    return bool(clockish or unit or bare_time) and "step" not in words


def _time_unit(column: str, given: str | None) -> tuple[float, str | None]:
    """Seconds per unit of the clock ``column``, and a note when the unit was read off its
    name: ``given`` (``--time-unit``) if set, else the unit the name's last word says
    (``hours``, ``time_min``), else seconds."""
    if given is not None:
        if given not in TIME_UNITS:
            raise InputError(f"--time-unit must be one of {', '.join(TIME_UNITS)}, got {given!r}")
        return TIME_UNITS[given], None
    words = [w.lower() for w in re.split(r"[^A-Za-z]+", column) if w]
    unit = next((u for u, names in _UNIT_WORDS.items() if words and words[-1] in names), "s")
    if unit == "s":
        return 1.0, None
    word = "hours" if unit == "h" else "minutes"
    return TIME_UNITS[unit], (f"column {column!r} read as {word} of wall-clock time (its name says so): pass "
                              "--time-unit s if it holds seconds")


def _time_column(path: Path, header: list[str], rows: list[dict[str, str]], given: str | None) -> str | None:
    """The column of wall-clock seconds: the one named by ``--time-column``, else the first
    of :data:`TIME_COLUMNS` present whose cells are numbers. Named and holding no numbers
    (dates written as text) is an error: the step time would silently go."""
    if given is not None:
        if given not in header:
            raise InputError(f"{path}: no column {given!r} (--time-column); columns are {', '.join(header)}")
        if not any(_number(r.get(given)) is not None for r in rows):
            cell = next((r.get(given) for r in rows if r.get(given)), "")
            raise InputError(f"{path}: column {given!r} (--time-column) holds no numbers (cells like {cell!r}): "
                             "give wall-clock seconds (Unix time, or seconds since the start)")
        return given
    by_name = {h.strip().lower(): h for h in reversed(header)}
    for name in TIME_COLUMNS:
        col = by_name.get(name)
        if col is not None and any(_number(r.get(col)) is not None for r in rows):
            return col
    return None


def _clock(path: Path, header: list[str], rows: list[dict[str, str]], given: str | None, unit: str | None, *,
           x: tuple[str | None, ...]) -> tuple[str | None, float, str | None]:
    """A table's clock column (:func:`_time_column`), seconds per unit of it, and the note on
    a unit read off its name."""
    col = _time_column(path, header, rows, given)
    if col is None:
        if unit is not None:
            raise InputError(f"{path}: --time-unit needs a clock column, and none was found: name it with --time-column NAME")
        return None, 1.0, None
    if col in x:
        raise InputError(f"{path}: column {col!r} is both the x axis and the wall clock: name another "
                         "--time-column, --step-column or --epoch-column")
    seconds_per, note = _time_unit(col, unit)
    return col, seconds_per, note


def read_csv(path: Path, *, step_column: str | None = None, epoch_column: str | None = None, run: str | None = None,
             run_column: str | None = None, time_column: str | None = None, time_unit: str | None = None) -> LogData:
    header, rows, torn = _read_table(path, "csv", "CSV file")
    rows = _one_run(path, header, rows, run=run, run_column=run_column)
    # The x axis by name, whatever its case ('Epoch', 'STEP'), when not named by an option.
    by_name = {h.strip().lower(): h for h in reversed(header)}
    step_col = step_column or by_name.get("step")
    epoch_col = epoch_column or by_name.get("epoch")
    for flag, col in (("--step-column", step_column), ("--epoch-column", epoch_column)):
        if col is not None and col not in header:
            raise InputError(f"{path}: no column {col!r} ({flag}); columns are {', '.join(header)}")
    time_col, seconds_per, unit_note = _clock(path, header, rows, time_column, time_unit, x=(step_col, epoch_col))
    if step_col is None and epoch_col is None:
        # A Weights & Biases export's _step counts wandb.log calls: the optimizer step only
        # where the loop logged once a step, so it is named, not taken.
        wandb = ("; a Weights & Biases export's _step counts wandb.log calls (the optimizer step if the loop logged "
                 "once a step)" if "_step" in header else "")
        unnamed = _unnamed_index(header)
        if unnamed:
            raise InputError(f"{path}: no 'step' or 'epoch' column{unnamed}")
        raise InputError(
            f"{path}: no 'step' or 'epoch' column (columns: {', '.join(header)}): name the x axis with --epoch-column NAME "
            f"(passes over the data) or --step-column NAME (optimizer steps done){wandb}"
        )
    # With a wall clock in use, the export's other clocks (W&B writes _runtime and _timestamp) are no series.
    clocks = tuple(h for h in header if h.strip().lower() in TIME_COLUMNS) if time_col is not None else ()
    download = _tensorboard_download(path, header) if not (step_column or epoch_column) else None
    keras = download is not None and download[2]
    # A Keras download's Step is the 0-based index of the epoch just finished (as in its
    # event files, which the tensorboard format reads the same way).
    series, skipped, empty = _table_series(header, rows, step_col=None if keras else step_col,
                                           epoch_col="Step" if keras else epoch_col, step_offset=0.0,
                                           epoch_is_passes=True, epoch_offset=1.0 if keras else 0.0, time_col=time_col,
                                           clocks=clocks, seconds_per_unit=seconds_per, path=path)
    x = " or ".join(repr(c) for c in (step_col, epoch_col) if c)
    hint: tuple[str, ...] = ()
    if epoch_col is not None and not keras:
        series, hint = _read_in_progress_index(series, rows, header, epoch_col=epoch_col, step_col=step_col)
    if epoch_col is not None and not keras and not hint:
        hint = _zero_based_hint(rows, epoch_col) if step_col is None else _epoch_index_hint(rows, epoch_col, step_col)
    run_name, notes = path.stem, ()
    if download is not None and "Value" in series:
        # The tag's name is in the download's file name only: the series is named after it,
        # so --metric, the goal and the profile's metric read as they did in TensorBoard.
        run_name, name, _ = download
        series = {(name if k == "Value" else k): (replace(v, name=name) if k == "Value" else v) for k, v in series.items()}
        notes = (f"a TensorBoard CSV download: its 'Value' column read as {name!r} of run {run_name!r}, from the file's "
                 "name" + ("; its Step as the index of the epoch just finished (Keras)" if keras else ""),)
    notes += (unit_note,) if unit_note else ()
    return LogData(format="csv", source=str(path), run_name=run_name, series=series,
                   notes=torn + _skipped_note(skipped, "row", x) + hint + notes, text_columns=empty)


#: TensorBoard's scalar dashboard names a download ``run-<run>-tag-<tag>.csv`` (``/`` in the
#: run and the tag written as ``_``), and its columns are ``Wall time,Step,Value``.
_TB_DOWNLOAD = re.compile(r"^run-(?P<run>.*)-tag-(?P<tag>.+)$")


def _tensorboard_download(path: Path, header: list[str]) -> tuple[str, str, bool] | None:
    """(run, series name, Keras?) of a TensorBoard CSV download, from its file name; None
    for another file. Keras's TensorBoard callback writes ``epoch_*`` tags into runs
    ``train`` and ``validation``: the series is named ``validation/epoch_accuracy`` as the
    tensorboard reader names it, and its Step is an epoch index."""
    if [h.strip() for h in header] != ["Wall time", "Step", "Value"]:
        return None
    match = _TB_DOWNLOAD.match(path.stem)
    if match is None or not match["tag"].strip():
        return None
    run, tag = match["run"] or path.stem, match["tag"]
    half = next((h for h in KERAS_RUNS if run == h or run.endswith("_" + h)), None)
    if tag.startswith("epoch_") and half is not None:
        return run, f"{half}/{tag}", True
    return run, tag, False


# --- TensorBoard event files -------------------------------------------------------


def _tensorboard_accumulator():
    # tensorboard's reader imports TensorFlow whenever it is installed (8–20 s) although
    # scalars need none of it. The package's own switch for its pure-Python stub is the
    # presence of the module 'tensorboard.compat.notf' (its no_tensorflow build target);
    # provide it unless TensorFlow is already loaded in this process.
    if "tensorflow" not in sys.modules:
        sys.modules.setdefault("tensorboard.compat.notf", types.ModuleType("tensorboard.compat.notf"))
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        raise InputError("reading TensorBoard event files needs the tensorboard package: pip install 'cotune[logs]'") from None
    return EventAccumulator


# Keras's TensorBoard callback writes a log directory with these two runs in it.
KERAS_RUNS = ("train", "validation")


class _CheckedEventFiles:
    """The events of a run's event files, for tensorboard's ``EventAccumulator`` (its
    ``Load()`` generator), in the accumulator's own order (by file name), each record's
    checksums checked as its loader checks them. Its loader takes a damaged record for the
    end of the file: one bad record mid-file silently cut the curve there. Here that is an
    error naming the file and the byte; only a torn last record (a writer killed mid-write)
    is dropped, with a note. ``tags`` keeps which files each tag came from."""

    def __init__(self, files: list[Path]) -> None:
        self.files = sorted(files, key=lambda f: f.name)
        self.notes: list[str] = []
        self.tags: dict[str, list[str]] = {}

    def Load(self) -> Iterator[object]:  # noqa: N802 - the name the accumulator calls
        from tensorboard.compat.proto import event_pb2
        from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

        for file in self.files:
            data = file.read_bytes()  # the files' total is capped at MAX_JSON_LOG_BYTES
            size, at = len(data), 0
            while at < size:
                torn = size - at < 12  # not even a length and its checksum
                length = 0 if torn else struct.unpack_from("<Q", data, at)[0]
                end = at + 12 + length + 4
                why = None
                if not torn and masked_crc32c(data[at:at + 8]) != struct.unpack_from("<I", data, at + 8)[0]:
                    why = "its length's checksum fails"
                elif not torn and end > size:
                    torn = True
                elif not torn and masked_crc32c(data[at + 12:end - 4]) != struct.unpack_from("<I", data, end - 4)[0]:
                    why = "its checksum fails"
                # The rest of the file is this record alone (cut short, or a tail the file
                # system left zero-filled): what a writer stopped mid-write leaves.
                if torn or (why is not None and (end == size or not data[at:].strip(b"\0"))):
                    self.notes.append(f"dropped a torn last record of {file.name} ({size - at:,} bytes at byte {at:,}: "
                                      "the writer stopped mid-write)")
                    break
                if why is not None and at == 0:
                    raise InputError(f"{file}: not a TensorBoard event file ({why.replace('its', 'its first record', 1)}): "
                                     "give a run directory of the event files a SummaryWriter wrote")
                if why is not None:
                    raise InputError(f"{file}: a damaged record at byte {at:,} of {size:,} ({why}): every event after it "
                                     f"would be lost; restore the file, or keep what precedes it (head -c {at} FILE, in a "
                                     "run directory of its own) and import that")
                try:
                    event = event_pb2.Event.FromString(data[at + 12:end - 4])
                except Exception:  # protobuf's DecodeError: checksums intact, contents not an Event
                    raise InputError(f"{file}: the record at byte {at:,} is no TensorBoard event: give a run directory "
                                     "of event files") from None
                for value in event.summary.value:
                    seen = self.tags.setdefault(value.tag, [])
                    if not seen or seen[-1] != file.name:
                        seen.append(file.name)
                yield event
                at = end


def _scalar_events(
    path: Path,
) -> tuple[dict[str, list[tuple[float, float, float]]], list[str], dict[str, list[str]], set[str]]:
    """``tag -> [(step, value, wall_time)]`` of every scalar summary in a run directory, in
    the order the files hold them: the classic ``simple_value`` scalars (PyTorch's
    SummaryWriter, tensorboardX) and the rank-0 tensors that TF2's ``tf.summary.scalar``
    writes (Keras's TensorBoard callback), which the accumulator files under ``tensors``
    with the ``scalars`` plugin; the reader's notes; the event files of each tag; and the
    tags written as TF2 tensor scalars (Keras's callback writes those; a SummaryWriter never)."""
    # Every event is kept (a sample would be a silently thinner curve): the files' size is
    # bounded instead, as a JSON log's is (each event becomes a few Python objects).
    files = list(path.glob("*tfevents*")) if path.is_dir() else [path]
    odd = next((f for f in files if not f.is_file()), None)
    if odd is not None:
        # TensorBoard's reader opens every event file it lists: a named pipe blocked it for ever.
        raise InputError(f"{odd}: not a regular file (a pipe, a device or a directory where an event file should be): "
                         "give a run directory of event files")
    size = sum(f.stat().st_size for f in files)
    if size > MAX_JSON_LOG_BYTES:
        raise InputError(f"{path}: its event files hold {size / 2**20:.0f} MiB, more than a tensorboard log's "
                         f"{MAX_JSON_LOG_BYTES // 2**20} MiB limit: import a CSV export of the validation metric "
                         "(TensorBoard's 'Download CSV'), or give one run's directory")
    accumulator = _tensorboard_accumulator()(str(path), size_guidance={"scalars": 0, "tensors": 0})
    # The accumulator reads its events from this generator (an attribute it has had since
    # TensorBoard 1.x); its own loader would stop silently at a damaged record.
    checked = _CheckedEventFiles(files)
    accumulator._generator = checked
    tensor_tags: set[str] = set()  # written as TF2 tensor scalars (tf.summary, Keras), not simple values
    try:
        accumulator.Reload()
        tags = accumulator.Tags()
        out = {tag: [(float(e.step), float(e.value), float(e.wall_time)) for e in accumulator.Scalars(tag)]
               for tag in tags.get("scalars", [])}
        from tensorboard.util import tensor_util

        for tag in tags.get("tensors", []):
            if accumulator.SummaryMetadata(tag).plugin_data.plugin_name != "scalars":
                continue  # a model's config, an image, text: not a series
            rows = []
            for e in accumulator.Tensors(tag):
                value = tensor_util.make_ndarray(e.tensor_proto)
                if value.size == 1 and value.dtype.kind in "fiu":
                    rows.append((float(e.step), float(value.reshape(())), float(e.wall_time)))
            if rows and tag not in out:
                out[tag] = rows
                tensor_tags.add(tag)
    except InputError:
        raise
    except Exception as exc:  # the reader raises assorted errors on damaged files
        raise InputError(f"{path}: could not read TensorBoard events ({type(exc).__name__}: {exc}): give an intact event file") from None
    return out, checked.notes, checked.tags, tensor_tags


def read_tensorboard(path: Path) -> LogData:
    if not path.exists():
        raise InputError(f"{path}: no such file or directory: give a TensorBoard run directory (the one holding events.out.tfevents.*)")
    halves: tuple[str, ...] = ()  # the Keras runs read, below ``keras_dir``
    keras_dir = path
    if path.is_dir() and not any(path.glob("*tfevents*")):
        runs = sorted({p.parent for p in path.rglob("*tfevents*")})
        if sorted(r.name for r in runs) == sorted(KERAS_RUNS) and all(r.parent == path for r in runs):
            halves = KERAS_RUNS
        elif len(runs) != 1:
            listed = ", ".join(map(str, runs[:5])) or "none"
            raise InputError(f"{path}: holds event files of {len(runs)} runs ({listed}): give one run's directory")
        else:
            path = runs[0]
    sub_runs: tuple[str, ...] = ()
    if halves:
        events, notes, tag_files = {}, [], {}
    else:
        if path.is_dir():
            sub_runs = tuple(sorted(str(p) for p in {f.parent for f in path.rglob("*tfevents*")} if p != path))
        events, notes, tag_files, tensor_tags = _scalar_events(path)
        # One half of a Keras log given on its own (logs/fit/validation): its epoch_* series
        # step by the epoch index too; read as steps they gave epochs 0, 0.17, ... and a step
        # time from the epochs' clock. Keras writes them as TF2 tensor scalars; a PyTorch
        # SummaryWriter's epoch_* tag in a folder so named is plain values at optimizer steps.
        if path.is_dir() and path.name in KERAS_RUNS and any(
                t.startswith("epoch_") and t in tensor_tags for t in events):
            halves, keras_dir = (path.name,), path.parent
            events = {f"{path.name}/{t}": rows for t, rows in events.items()}
            tag_files = {f"{path.name}/{t}": [f"{path.name}/{f}" for f in fs] for t, fs in tag_files.items()}
    if halves == KERAS_RUNS:
        # One run's two halves: the series are named by their half ('validation/epoch_accuracy'),
        # and Keras's epoch-level series step by the 0-based index of the epoch just finished.
        for half in KERAS_RUNS:
            got, said, files, _ = _scalar_events(path / half)
            events.update({f"{half}/{tag}": rows for tag, rows in got.items()})
            notes += said
            tag_files.update({f"{half}/{tag}": [f"{half}/{f}" for f in fs] for tag, fs in files.items()})
    if not events:
        raise InputError(f"{path}: no scalar summaries in the event files: log the metric with add_scalar "
                         "(tf.summary.scalar, or Keras's TensorBoard callback)")
    # Lightning's TensorBoardLogger (hparams.yaml beside the events, an 'epoch' series of
    # whole epoch indices) writes the 0-based index of the step just taken, as its
    # CSVLogger does: one is added, so both loggers give one run the same epochs.
    run_dir = path if path.is_dir() else path.parent  # an event file given by its path: its run's folder
    lightning = (run_dir / "hparams.yaml").is_file() and "epoch" in events and all(
        v.is_integer() for _, v, _ in events["epoch"])
    offset = 1.0 if lightning else 0.0
    series = {}
    for tag, rows in events.items():
        if halves and tag.split("/", 1)[1].startswith("epoch_"):
            series[tag] = _series(tag, [(math.nan, v, step + 1.0, wall) for step, v, wall in rows])
        else:
            series[tag] = _series(tag, [(step + offset, v, None, wall) for step, v, wall in rows])
    if lightning:
        notes.append("a Lightning TensorBoard log (hparams.yaml, an 'epoch' series): its steps count from 0, so one is added")
    if halves == KERAS_RUNS:
        notes.append("a Keras TensorBoard log (train/ and validation/): its epoch_* series step by the 0-based index of "
                     "the epoch just finished, so one is added")
    elif halves:
        notes.append(f"a Keras TensorBoard log's {halves[0]}/ half: its epoch_* series step by the 0-based index of the "
                     f"epoch just finished, so one is added; give the directory above it ({keras_dir}) to read both "
                     "halves")
    # An event file given by its path is named after its run directory, as the directory is.
    run_name = (keras_dir if halves else path if path.is_dir() else path.resolve().parent).name
    return LogData(format="tensorboard", source=str(path), run_name=run_name or "tensorboard-run", series=series,
                   notes=tuple(notes), files={k: tuple(v) for k, v in tag_files.items()}, sub_runs=sub_runs)


# --- MLflow local file store ---------------------------------------------------------


def _mlflow_meta(run: Path) -> tuple[str, bool]:
    """(name, deleted?) of a file store's run: ``tags/mlflow.runName`` (else ``meta.yaml``'s
    ``run_name``), and whether ``meta.yaml`` says ``lifecycle_stage: deleted`` (MLflow keeps
    a deleted run's directory until ``mlflow gc``)."""
    name, deleted = "", False
    tag = run / "tags" / "mlflow.runName"
    if tag.is_file():
        # Only a label: a damaged tag (bytes that are no UTF-8, a huge file) names the run as far
        # as it reads; its metrics are what the import is for.
        with tag.open("rb") as fh:
            name = fh.read(_MAX_TAG_BYTES).decode("utf-8", errors="replace").strip()
    meta = run / "meta.yaml"
    if meta.is_file():
        with meta.open("rb") as fh:
            text = fh.read(64 * _MAX_TAG_BYTES).decode("utf-8", errors="replace")
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key == "lifecycle_stage":
                deleted = value.strip().strip("'\"") == "deleted"
            elif key == "run_name" and not name:
                name = value.strip().strip("'\"")
    return name, deleted


def _pick_mlflow_run(runs: list[tuple[str, str, bool]], run_id: str | None, *, what: str, fix: str) -> str:
    """The id of the one run among ``runs`` ((id, name, deleted?) each, a file store's or a
    SQLite store's) that ``run_id`` names, or the one live run without it; otherwise an
    error listing the live runs. ``what`` starts the error, ``fix`` ends it."""
    live = [(r, name) for r, name, deleted in runs if not deleted]
    chosen = live if run_id is None else [(r, name) for r, name in live if run_id in (r, name)]
    if run_id is not None and not chosen:
        # A run deleted in MLflow's UI stays in the store until garbage-collected: named by its
        # id, it is what the caller asked for (it imported before deleted runs were left out).
        chosen = [(r, name) for r, name, deleted in runs if deleted and r == run_id]
    if len(chosen) != 1:
        listed = ", ".join(f"{r} ({name})" if name else r for r, name in (chosen or live)[:5]) or "none"
        more = "" if len(chosen or live) <= 5 else f" and {len(chosen or live) - 5:,} more"
        said = f"no run {run_id!r}; the runs are" if run_id is not None and not chosen else (
            f"{len(chosen)} runs named {run_id!r}:" if run_id is not None else f"{len(chosen)} runs:")
        deleted = sum(1 for _, _, d in runs if d)
        skipped = f" ({deleted} deleted run{'' if deleted == 1 else 's'} left out)" if deleted else ""
        raise InputError(f"{what}, found {said} {listed}{more}{skipped}: {fix}")
    return chosen[0][0]


def _mlflow_run_dir(path: Path, run_id: str | None) -> Path:
    if (path / "metrics").is_dir():
        return path
    found = sorted(set(p.parent for pattern in ("*/*/metrics", "*/metrics") for p in path.glob(pattern) if p.is_dir()))
    # MLflow 3 keeps a LoggedModel (log_model, initialize_logged_model) in EXP/models/m-ID,
    # with metrics/ of its own: no run, although an experiment's '*/*/metrics' matches it.
    found = [r for r in found if r.parent.name != "models"]
    runs = [(r.name, *_mlflow_meta(r)) for r in found]
    picked = _pick_mlflow_run(runs, run_id, what=f"{path}: expected one MLflow run (a directory with metrics/)",
                              fix="give the run directory, mlruns/EXPERIMENT_ID/RUN_ID, or pass --run RUN_ID (or the "
                              "run name)")
    return next(r for r in found if r.name == picked)


def _lightning_indexed(rows: Mapping[str, list[tuple[float, ...]]]) -> bool:
    """Whether an MLflow run was logged by Lightning's MLFlowLogger: an ``epoch`` metric of
    whole indices from 0, logged at every step any metric was (Lightning adds the epoch to
    each call). Its steps are the 0-based index of the step just taken, as its CSVLogger's."""
    epoch = rows.get("epoch")
    if not epoch or epoch[0][1] != 0.0 or not all(float(r[1]).is_integer() for r in epoch):
        return False
    at = {r[0] for r in epoch}
    if not (len(rows) > 1 and all(r[0] in at for key, points in rows.items() for r in points)):
        return False
    # A plain loop logging a 0-based epoch beside its metrics once an epoch at "steps done"
    # looks the same but for one step: its epoch k is logged last at (k + 1)·s exactly (s steps
    # an epoch), where Lightning's count gives (k + 1)·s − 1. That exact grid is not Lightning;
    # anything else (Lightning's ends, or its irregular ones with check_val_every_n_epoch) is.
    last: dict[float, float] = {}
    for step, value, *_ in epoch:
        last[value] = max(step, last.get(value, -math.inf))
    ends = [last[k] for k in sorted(last)]
    if len(ends) >= 2:
        spacing = ends[1] - ends[0]
        on_grid = all(b - a == spacing for a, b in zip(ends[:-2], ends[1:-1]))  # the last may stop early
        if spacing >= 1 and on_grid and ends[0] == spacing:
            return False
    return True


_LIGHTNING_MLFLOW_NOTE = ("a Lightning MLFlowLogger run (an 'epoch' metric of whole indices logged with every other): "
                          "its steps count from 0, so one is added")


def _mlflow_series(key: str, rows: list[tuple[float, float, float]], *, step_offset: float = 0.0) -> Series:
    """(step, value, timestamp_ms) rows; times in seconds since the series' first point:
    epoch milliseconds / 1000 in float64 would blur the sub-millisecond gaps a step time is made of."""
    t0 = min(r[2] for r in rows)
    return _series(key, [(step + step_offset, value, None, (ts - t0) / 1000.0) for step, value, ts in rows])


def read_mlflow_db(path: Path, run_id: str | None = None) -> LogData:
    """A run of MLflow's SQL store in a SQLite file (``sqlite:///mlflow.db``, MLflow 3's
    default local store): its ``runs`` and ``metrics`` tables, read-only with sqlite3."""
    import sqlite3

    if not path.is_file():
        # A FIFO or a device would block sqlite's open for ever; a directory is no store.
        what = "no such file" if not path.exists() else "not a regular file"
        raise InputError(f"{path}: {what}: give an MLflow SQLite store (mlflow.db) or an mlruns directory")
    not_a_store = "not an MLflow SQLite store ({}): give mlflow.db or an mlruns directory"
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        # Deleted runs too, as the file store keeps them: one named by its id is still read.
        runs = db.execute("SELECT run_uuid, name, lifecycle_stage FROM runs ORDER BY start_time").fetchall()
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{path}: {not_a_store.format(exc)}") from None
    known = [(str(uuid), "" if name is None else str(name), stage == "deleted") for uuid, name, stage in runs]
    uuid = _pick_mlflow_run(known, run_id, what=f"{path}: expected one MLflow run",
                            fix="pass --run RUN_ID (or the run name)")
    name = next(n for u, n, _ in known if u == uuid)
    rows: dict[str, list[tuple[float, float, float]]] = {}
    # A store holds every run ever logged (gigabytes are usual): the cap is on this run's points.
    try:
        for key, value, ts, step, is_nan in db.execute(
            # In the order logged (a rerun's steps going back show there), as the file store keeps it.
            "SELECT key, value, timestamp, step, is_nan FROM metrics WHERE run_uuid = ? ORDER BY timestamp, step LIMIT ?",
            (uuid, MAX_LOG_POINTS + 1),
        ):
            point = _db_point(step, value, ts, is_nan)
            if point is None:
                raise InputError(f"{path}: run {uuid}: metric {excerpt(key)} has a point that is no number (step "
                                 f"{excerpt(step)}, value {excerpt(value)}, timestamp {excerpt(ts)}): the store is "
                                 "damaged; export the run's metrics as CSV and import that")
            rows.setdefault(str(key), []).append(point)
        params = _planned_epochs(db.execute(
            f"SELECT key, value FROM params WHERE run_uuid = ? AND key IN ({', '.join('?' * len(EPOCH_PARAMS))})",
            (uuid, *EPOCH_PARAMS)).fetchall()) if _has_table(db, "params") else {}
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{path}: {not_a_store.format(exc)}") from None
    finally:
        db.close()
    if sum(map(len, rows.values())) > MAX_LOG_POINTS:
        raise _too_many_points(f"{path} run {uuid}")
    if not rows:
        raise InputError(f"{path}: run {uuid} logged no metrics: log the validation metric with mlflow.log_metric")
    lightning = _lightning_indexed(rows)
    return LogData(format="mlflow", source=f"{path} run {uuid}", run_name=name or uuid,
                   series={k: _mlflow_series(k, v, step_offset=1.0 if lightning else 0.0) for k, v in rows.items()},
                   facts=params, notes=(_LIGHTNING_MLFLOW_NOTE,) if lightning else ())


#: MLflow params that state the epochs a run was set to train (Keras autolog's fit(epochs=),
#: Trainer's TrainingArguments, Lightning's Trainer): read where a metric's steps may be the
#: epoch index, 0..epochs-1 or 1..epochs.
EPOCH_PARAMS = ("epochs", "num_train_epochs", "max_epochs")


def _planned_epochs(pairs: Iterable[tuple[object, object]]) -> dict[str, float]:
    """The whole positive numbers among ``(key, value)`` params named in :data:`EPOCH_PARAMS`
    (a value like '3.0' counts; text, fractions and -1, Lightning's "no limit", do not)."""
    out: dict[str, float] = {}
    for key, value in pairs:
        number = _number(value if isinstance(value, str) else None)
        if key in EPOCH_PARAMS and number is not None and math.isfinite(number) and number >= 1 \
                and number.is_integer():
            out[str(key)] = number
    return out


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    # A store written by something other than MLflow may lack params: they are a hint, not needed.
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def _db_point(step: object, value: object, ts: object, is_nan: object) -> tuple[float, float, float] | None:
    """A metrics row of MLflow's SQL store as (step, value, timestamp), or None where a
    column holds no number (NULL, text: a store written by something else, or damaged)."""
    out = []
    for cell in (step, math.nan if is_nan else value, ts):
        if isinstance(cell, bool) or not isinstance(cell, (int, float)):
            return None
        out.append(float(cell))
    return out[0], out[1], out[2]


#: The most of an MLflow tag file read (a run name is a few dozen characters).
_MAX_TAG_BYTES = 4096
#: Metric points an MLflow run may hold (every metric together; each is a few Python objects
#: while read: about 0.6 GB at the cap), as MAX_LOG_CELLS bounds a CSV log.
MAX_LOG_POINTS = 4_000_000


def _too_many_points(run: object) -> InputError:
    return InputError(f"{run}: the run logged more than {MAX_LOG_POINTS:,} metric points: a profile needs the "
                      "validation metric and the step time; log the others less often, or import a CSV export of those")


def read_mlflow(path: Path, run_id: str | None = None) -> LogData:
    # The file store's documented layout: <run>/metrics/<key> holds one
    # "timestamp_ms value step" line per logged point; <run>/tags/mlflow.runName the name.
    # Keys with '/' are nested directories. A SQLite file is the SQL store.
    if path.is_file():
        return read_mlflow_db(path, run_id)
    if not path.is_dir():
        from cotune._checks import file_problem

        # A device or a pipe exists: "no such file" would send the user looking for a typo.
        problem = file_problem(path) if path.exists() else None
        said = f"{path} {problem}" if problem is not None else f"{path}: no such file or directory"
        raise InputError(f"{said}: give an MLflow run directory (mlruns/EXPERIMENT_ID/RUN_ID), its mlruns root, or a "
                         "SQLite store (mlflow.db)")
    run = _mlflow_run_dir(path, run_id)
    metrics_dir = run / "metrics"
    by_key: dict[str, list[tuple[float, float, float]]] = {}
    points = 0
    notes: list[str] = []
    for file in sorted(p for p in metrics_dir.rglob("*") if p.is_file()):
        key = file.relative_to(metrics_dir).as_posix()
        rows = []
        _need_file(file, "metric file of the MLflow run", "mlflow")
        # Lines without a step: (the first one's number and text, how many), and whether the
        # last line read had no newline — MLflow ends every line it writes with one.
        stepless: tuple[int, str] | None = None
        stepless_lines = with_step = 0
        unended = False
        with file.open(encoding="utf-8", errors="replace") as fh:  # line by line: memory follows the points kept
            for number, raw in enumerate(fh, start=1):
                line = raw.rstrip("\r\n")
                unended = not raw.endswith("\n")
                parts = line.split()
                if not parts:
                    continue
                numbers = [_number(part) for part in parts]
                if unended and (not 2 <= len(parts) <= 3 or None in numbers):
                    notes.append(_torn_metric_line(key, line))
                    break
                if not 2 <= len(parts) <= 3:  # MLflow writes 'timestamp value step' (old stores: no step)
                    raise InputError(f"{file}:{number}: expected 'timestamp value step', got {excerpt(line)}: the run's "
                                     "metric file is damaged")
                ts, value = numbers[0], numbers[1]
                step = numbers[2] if len(parts) > 2 else 0.0
                if ts is None or value is None or step is None:
                    raise InputError(f"{file}:{number}: expected numbers 'timestamp value step', got {excerpt(line)}")
                if len(parts) == 2:
                    stepless_lines += 1
                    stepless = stepless or (number, line)
                else:
                    with_step += 1
                rows.append((step, value, ts))
                points += 1
                if points > MAX_LOG_POINTS:
                    raise _too_many_points(run)
        if stepless is not None and with_step:
            # Only an old store writes no step, and then on every line: one without it among
            # lines with one is a line cut short, whose value was read at step 0 (the run's
            # last value became its first point, at epoch 0).
            if stepless_lines == 1 and unended and stepless[0] == number:
                rows.pop()
                notes.append(_torn_metric_line(key, stepless[1]))
            else:
                raise InputError(f"{file}:{stepless[0]}: expected 'timestamp value step', got {excerpt(stepless[1])} "
                                 "among lines with a step: the run's metric file is damaged")
        if rows:
            by_key[key] = rows
    if not by_key:
        raise InputError(f"{run}: the run logged no metrics: log the validation metric with mlflow.log_metric")
    name, _ = _mlflow_meta(run)
    lightning = _lightning_indexed(by_key)
    series = {k: _mlflow_series(k, v, step_offset=1.0 if lightning else 0.0) for k, v in by_key.items()}
    return LogData(format="mlflow", source=str(run), run_name=name or run.name, series=series,
                   facts=_planned_epochs(_mlflow_params(run)),
                   notes=((_LIGHTNING_MLFLOW_NOTE,) if lightning else ()) + tuple(notes))


def _mlflow_params(run: Path) -> list[tuple[str, str]]:
    """(key, value) of the file store's ``params/KEY`` files named in :data:`EPOCH_PARAMS`,
    each read no further than a tag is (a param is a short string)."""
    out = []
    for key in EPOCH_PARAMS:
        file = run / "params" / key
        if file.is_file():
            with file.open("rb") as fh:
                out.append((key, fh.read(_MAX_TAG_BYTES).decode("utf-8", errors="replace").strip()))
    return out


def _torn_metric_line(key: str, line: str) -> str:
    return (f"dropped a torn last line of metric {key!r} ({excerpt(line)}, without its newline: the writer stopped "
            "mid-write)")


_READERS: dict[str, Callable[..., LogData]] = {
    "hf-trainer": read_hf_trainer,
    "lightning-csv": read_lightning_csv,
    "tensorboard": read_tensorboard,
    "mlflow": read_mlflow,
    "csv": read_csv,
    "keras-csv": read_keras_csv,
}
FORMATS = tuple(_READERS)


def read_log(format: str, path: str | Path, *, step_column: str | None = None, epoch_column: str | None = None,
             run: str | None = None, run_column: str | None = None, time_column: str | None = None,
             time_unit: str | None = None) -> LogData:
    """Read one run's log in ``format`` (one of :data:`FORMATS`); ``run`` picks an MLflow run,
    or the rows of one run in a CSV that pools several (``run_column``, else a column named
    ``run``, ``run_id`` or ``run_name``)."""
    reader = _READERS.get(format)
    if reader is None:
        raise InputError(f"unknown log format {format!r}: use one of {', '.join(FORMATS)}")
    if format != "csv" and (step_column or epoch_column):
        raise InputError("--step-column and --epoch-column apply to format csv only")
    if format not in ("mlflow", "csv") and run is not None:
        raise InputError("--run applies to formats mlflow and csv only")
    if format != "csv" and run_column is not None:
        raise InputError("--run-column applies to format csv only")
    if format not in ("csv", "keras-csv") and (time_column is not None or time_unit is not None):
        raise InputError("--time-column and --time-unit apply to formats csv and keras-csv only")
    if format == "mlflow" and str(path).startswith("sqlite:///"):
        # A tracking URI, as given to mlflow.set_tracking_uri (a Path would fold the '///').
        return read_mlflow_db(Path(str(path)[len("sqlite:///"):]), run)
    p = Path(path)
    if format == "csv":
        return read_csv(p, step_column=step_column, epoch_column=epoch_column, run=run, run_column=run_column,
                        time_column=time_column, time_unit=time_unit)
    if format == "mlflow":
        return read_mlflow(p, run)
    if format == "keras-csv":
        return read_keras_csv(p, time_column=time_column, time_unit=time_unit)
    return reader(p)
