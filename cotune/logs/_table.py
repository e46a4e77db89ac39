"""A table of records as published, not as cotune names it: rows picked by value, fields read
from the columns their authors named (``cotune import records --where … --column …``).

Published measurements come as one table pooling many workloads and GPU types, in their
own column names — Gavel's ``gpu_type, model, per_worker_batch_size, num_gpus,
sync_iteration_time_s``, Shockwave's the same, a sweep exported from a spreadsheet. Two pure
steps turn such a table into one :meth:`~cotune.profile.Profile.from_frame` reads, with
nothing renamed on disk:

* :func:`select_rows` keeps the rows whose cells equal the given text (``model=ResNet-18``,
  ``consolidated=1``): the text as the file has it, compared after trimming spaces, so a
  number is matched as written (``1`` is not ``1.0``). A column name ending in ``!``
  (``--where sync_iteration_time_s!=``) keeps the rows whose cell is *not* that text — with
  nothing after the ``=``, the rows where the column is filled in (an empty cell is ``""``):
  published tables mark a configuration that never ran with an empty cell or a zero;
* :func:`map_columns` reads each record field from the named column (``workers=num_gpus``).

Both keep the frame's index (the rows' file lines), so a later error still names the line.
Three more steps read what a table leaves to its caption:

* :func:`unpivot` turns a *wide* table — one column per value of a field, ElasticFlow's
  ``global_batch_size,1,2,4,…,64`` whose cells are iterations per second at that many GPUs —
  into one record per cell (``--wide workers=steps_per_s``; pandas' ``melt``). Headers that
  name their value with one word (``1 GPU, 2 GPUs, 4 GPUs``; ``gpus=4``) are read by their
  number when no header is a plain one (:func:`header_values`). An empty cell,
  and a zero where the cells are times or rates (never a measurement: the table's mark of a
  configuration that never ran), is no record; the caller reports how many were left out;
* :func:`add_constants` gives every row a field the table states once, in its caption
  (``--set gpu=a100``);
* :func:`add_hosts` lays each row's workers on servers of ``gpus_per_host`` GPUs
  (``--gpus-per-host 8``: ``hosts = ⌈workers / 8⌉``), for a table that gives GPU counts only.
"""

from __future__ import annotations

import difflib
import math
import re
from typing import TYPE_CHECKING, Any, Mapping

from cotune._checks import MAX_NAME, excerpt
from cotune.errors import InputError
from cotune.logs._readers import _number

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["RECORD_FIELDS", "TABLE_FIELDS", "add_constants", "add_hosts", "check_constants", "check_columns",
           "check_wide", "check_where", "header_values", "map_columns", "numbers_as_numbers", "select_rows", "unpivot", "where_columns"]

#: Most distinct values an error lists when a filter keeps no row.
_LISTED = 8


def _record_fields() -> tuple[str, ...]:
    from dataclasses import fields

    from cotune.profile._schema import _TYPES

    names = {"record"}
    for kind, cls in _TYPES.items():
        if kind != "workload":
            names.update(f.name for f in fields(cls))
    return tuple(sorted(names))


RECORD_FIELDS: tuple[str, ...] = _record_fields()


def _table_fields() -> tuple[str, ...]:
    from cotune.profile._profile import MILLISECOND_FIELDS, STEP_RATES

    return tuple(sorted({*RECORD_FIELDS, "global_batch", *STEP_RATES, *MILLISECOND_FIELDS}))


#: What a table's column may hold: a record field, or a step's global batch or rate, which
#: :meth:`~cotune.profile.Profile.from_frame` turns into its fields.
TABLE_FIELDS: tuple[str, ...] = _table_fields()

#: Cell fields whose zero is no measurement (a time, a rate): in a wide table, the mark of a
#: configuration that never ran, as an empty cell is.
_NO_ZERO = ("step_time_s", "step_time_ms", "steps_per_s", "samples_per_s")


def _text(flag: str, value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME:
        raise InputError(f"{flag} must name {what} with a non-empty string of at most {MAX_NAME} characters, "
                         f"got {excerpt(value)}")
    return value.strip()


def check_columns(columns: Mapping[str, str] | None) -> dict[str, str]:
    """``columns`` (record field → the table's column) checked: every key a record field
    (docs/profile-format.md), every value a non-empty name."""
    if columns is None:
        return {}
    if not isinstance(columns, Mapping):
        raise InputError(f"--column (columns=) must map record fields to the table's columns, got {excerpt(columns)}")
    out: dict[str, str] = {}
    for field, column in columns.items():
        key = _field("--column {}=…", field, "columns=")
        out[key] = _text(f"--column {key}=COLUMN", column, "the table's column")
    return out


def check_where(where: Mapping[str, str] | None) -> dict[str, str]:
    """``where`` (column → the text its cells must hold) checked: names and values are strings."""
    if where is None:
        return {}
    if not isinstance(where, Mapping):
        raise InputError(f"--where (where=) must map the table's columns to a value, got {excerpt(where)}")
    out: dict[str, str] = {}
    for column, value in where.items():
        key = _text("--where (where=)", column, "a column")
        if not isinstance(value, str) or len(value) > MAX_NAME:  # a number would read as Python writes it (1.0)
            raise InputError(f"--where {key}=…: give the value as the file writes it, as text of at most "
                             f"{MAX_NAME} characters (where={{{key!r}: '1'}}), got {excerpt(value)}")
        out[key] = value.strip()
    return out


def _missing(frame: "pd.DataFrame", column: str, flag: str) -> InputError:
    names = [str(c) for c in frame.columns]
    near = difflib.get_close_matches(column, names, n=1, cutoff=0.6)
    return InputError(f"{flag}: the table has no column {column!r}" + (f" (is it {near[0]!r}?)" if near else "")
                      + f"; its columns are {', '.join(names[:20])}" + (", …" if len(names) > 20 else ""))


def _column_of(key: str) -> tuple[str, bool]:
    """The column a ``where`` key names, and whether it is negated (``"col!"``: not equal)."""
    if key.endswith("!") and key[:-1].strip():
        return key[:-1].strip(), True
    return key, False


def where_columns(where: Mapping[str, str]) -> tuple[str, ...]:
    """The columns ``where`` filters on (read as text)."""
    return tuple(_column_of(k)[0] for k in where)


def select_rows(frame: "pd.DataFrame", where: Mapping[str, str], *,
                text: "pd.DataFrame | None" = None) -> "pd.DataFrame":
    """The rows of ``frame`` whose cell in each ``where`` column equals its text, or does not
    where the key ends in ``!`` (read as text: the caller reads those columns with
    ``dtype=str``, :func:`where_columns`), from ``text`` where given: the same rows, those
    columns read as text while ``frame`` has them as numbers)."""
    keep = None
    for key, value in where.items():
        column, negated = _column_of(key)
        if column not in frame.columns:
            raise _missing(frame, column, f"--where {key}={value}")
        source = frame if text is None or column not in text.columns else text
        cells = source[column].astype("string").str.strip().fillna("")  # an empty cell reads "" (pandas: NA)
        match = (cells != value if negated else cells == value).to_numpy(dtype=bool)
        keep = match if keep is None else keep & match
        if not keep.any():
            if match.any():  # each filter keeps rows, together none
                raise InputError(f"--where {key}={value} keeps no row together with the --where before it: no row "
                                 "matches them all; check the values (or drop one)")
            seen = list(dict.fromkeys(str(v) for v in cells if str(v)))
            listed = ", ".join(repr(v) for v in seen[:_LISTED]) + (f", … ({len(seen)} in all)" if len(seen) > _LISTED else "")
            raise InputError(f"--where {key}={value} keeps no row: column {column!r} holds {listed or 'no value'}"
                             + ("" if negated else "; give one of them"))
    return frame if keep is None else frame[keep]


def map_columns(frame: "pd.DataFrame", columns: Mapping[str, str]) -> "pd.DataFrame":
    """A copy of ``frame`` with each record field read from its mapped column (the mapped
    columns stay: a table's other columns are no fields and are not read)."""
    if not columns:
        return frame
    for field, column in columns.items():
        if column not in frame.columns:
            raise _missing(frame, column, f"--column {field}={column}")
        if field in frame.columns and field != column:
            raise InputError(f"--column {field}={column}: the table has a column {field!r} of its own: drop the "
                             f"mapping to read it, or drop that column to read {column!r}")
    out = frame.copy()
    for field, column in columns.items():
        out[field] = frame[column]
    return out


def _field(said: str, name: Any, keyword: str) -> str:
    """``name`` checked as a field a table's column may hold (:data:`TABLE_FIELDS`); the
    error names it in ``said``'s ``{}`` (``"--column {}=…"``), or the Python ``keyword``."""
    key = _text(f"{said.split(' ')[0]} ({keyword})", name, "a record field")
    if key not in TABLE_FIELDS:
        near = difflib.get_close_matches(key, TABLE_FIELDS, n=1, cutoff=0.5)
        shown = key if key.isprintable() else excerpt(key)
        raise InputError(f"{said.format(shown)}: {key!r} is no field of a profile record"
                         + (f" (is it {near[0]!r}?)" if near else "")
                         + "; docs/profile-format.md lists them (workers, hosts, local_batch, step_time_s, "
                         "steps_per_s, …)")
    return key


def check_wide(wide: Any) -> tuple[str, str] | None:
    """``wide`` (the field the column headers hold, the field the cells hold) checked."""
    if wide is None:
        return None
    if isinstance(wide, (str, bytes)) or not isinstance(wide, (tuple, list)) or len(wide) != 2:
        raise InputError(f"--wide (wide=) names two fields, the one the column headers hold and the one the cells "
                         f"hold: --wide workers=steps_per_s (wide=('workers', 'steps_per_s')), got {excerpt(wide)}")
    head = _field("--wide {}=…", wide[0], "wide=")
    cells = _field(f"--wide {head}={{}}", wide[1], "wide=")
    if head == cells:
        raise InputError(f"--wide {head}={cells}: the headers and the cells hold the same field: name the one each "
                         "holds (--wide workers=steps_per_s)")
    return head, cells


def _header_value(name: Any) -> int | float | None:
    """A column header read as a number (``16``, ``0.5``), or None: the row's own column."""
    text = str(name).strip()
    value = _number(text) if len(text) <= 40 else None  # the log readers' rule: '1_000' is a name
    if value is None or not math.isfinite(value):  # 'nan', 'inf' are names
        return None
    return int(value) if value.is_integer() else value


# A header that names its value with a word: "1 GPU", "8 GPUs", "4gpus", "gpus=4", "GPUs: 4",
# "bs_32". A word and a number glued the other way round ("top1", "fp16", "resnet50") is a
# name, never a value.
_UNIT_AFTER = re.compile(r"^(\d+(?:\.\d+)?)\s*([a-z]+)$")
_UNIT_BEFORE = re.compile(r"^([a-z]+)\s*(?:[=:_-]|\s)\s*(\d+(?:\.\d+)?)$")


def _header_word(name: Any) -> tuple[str, int | float] | None:
    """``(word, value)`` of a header that names its value with one word (the word folded to
    lower case and singular: "1 GPU" and "2 GPUs" share ``gpu``), or None."""
    text = str(name).strip().lower()
    if len(text) > 40:
        return None
    hit = _UNIT_AFTER.match(text)
    number, word = (hit.group(1), hit.group(2)) if hit else (None, None)
    if hit is None:
        hit = _UNIT_BEFORE.match(text)
        if hit is None:
            return None
        word, number = hit.group(1), hit.group(2)
    value = float(number)
    word = word[:-1] if len(word) > 3 and word.endswith("s") else word  # 'gpus' is 'gpu'; 'bs' stays
    return word, int(value) if value.is_integer() else value


def header_values(columns: Any, flag: str) -> tuple[dict[Any, int | float | None], str]:
    """Each column's value of the wide field, or None where the column is the row's own, and
    a note ("" when the headers are plain numbers). Plain numbers (``1,2,4,8``) win: only a
    table with none reads headers that name their value with a word ("1 GPU", "2 GPUs",
    "gpus=4") — one word for all of them, else which columns hold values is no guess to make."""
    plain = {c: _header_value(c) for c in columns}
    if any(v is not None for v in plain.values()):
        return plain, ""
    worded = {c: _header_word(c) for c in columns}
    words = sorted({w[0] for w in worded.values() if w is not None})
    if len(words) > 1:
        examples = "; ".join(f"{w}: " + ", ".join(repr(str(c)) for c, v in worded.items() if v and v[0] == w)
                             for w in words[:4])
        raise InputError(f"{flag}: the column headers name values with {len(words)} different words ({examples}): "
                         "rename the columns whose headers do not hold the wide field (or leave them out of the table)")
    values = {c: (v[1] if v is not None else None) for c, v in worded.items()}
    if not words:
        return values, ""
    named = [(str(c), v) for c, v in values.items() if v is not None]
    shown = ", ".join(f"{c!r} as {v:g}" for c, v in named[:6]) + (", …" if len(named) > 6 else "")
    return values, f"{flag}: read the headers that name a {words[0]!r} count by their number ({shown})"


def unpivot(frame: "pd.DataFrame", wide: tuple[str, str], *,
            limit: int) -> tuple["pd.DataFrame", list[str], tuple[str, ...]]:
    """One row per cell of the columns whose headers are numbers, ``wide[0]`` the header's
    value and ``wide[1]`` the cell's; the other columns are each row's own, repeated. Rows
    come line by line, and each comes with its place (``"line 3, column '16'"``) for the
    errors; the frame's index is a fresh range. Empty cells — and zeros where the cells are a
    time or a rate — are left out: the third value, the notes for the profile's warnings, says how
    many, and which worded headers (:func:`header_values`) were read as numbers. At most
    ``limit`` filled cells."""
    import numpy as np
    import pandas as pd

    head, cells = wide
    flag = f"--wide {head}={cells}"
    numbered, worded = header_values(frame.columns, flag)
    values = [c for c, v in numbered.items() if v is not None]
    if not values:
        names = [str(c) for c in frame.columns]
        raise InputError(f"{flag}: no column of the table is named by a number (its columns are "
                         f"{', '.join(names[:20])}{', …' if len(names) > 20 else ''}): --wide reads a table whose "
                         f"headers are values of {head} (1,2,4,8, or '1 GPU','2 GPUs'); leave it out for a table of "
                         "one record per row")
    for name in (head, cells):
        if name in frame.columns:
            raise InputError(f"{flag}: the table has a column {name!r} of its own: the wide columns cannot hold it too; "
                             "leave out --wide, or name another field")
    block = frame[values]

    def filled_in(column: "pd.Series") -> Any:
        keep = (column.astype("string").str.strip().fillna("") != "").to_numpy(dtype=bool)
        if cells in _NO_ZERO:
            keep &= (pd.to_numeric(column, errors="coerce") != 0).to_numpy(dtype=bool)
        return keep

    filled = np.column_stack([filled_in(block.iloc[:, j]) for j in range(len(values))])
    count = int(filled.sum())
    if count > limit:
        raise InputError(f"{flag}: {count:,} filled cells: a profile holds at most {limit:,} records; "
                         "keep the medians of repeated measurements")
    if count == 0:
        raise InputError(f"{flag}: every cell of the columns {', '.join(map(str, values[:8]))} is empty"
                         + (" or 0" if cells in _NO_ZERO else "") + ": the table holds no measurement")
    rows, cols = filled.nonzero()  # row-major: line by line, each line's columns left to right
    ids = [c for c in frame.columns if c not in values]
    out = frame[ids].iloc[rows].reset_index(drop=True)
    out[head] = [numbered[values[j]] for j in cols]
    out[cells] = [block.iat[i, j] for i, j in zip(rows, cols)]
    places = [f"line {frame.index[i]}, column {str(values[j])!r}" for i, j in zip(rows, cols)]
    gaps = int(block.size - count)
    said = (f"left out {gaps:,} empty{' or zero' if cells in _NO_ZERO else ''} cell{'' if gaps == 1 else 's'} of "
            f"the {len(values)} wide columns (no measurement)") if gaps else ""
    return out, places, tuple(note for note in (worded, said) if note)


def check_constants(constants: Mapping[str, Any] | None) -> dict[str, Any]:
    """``constants`` (record field → the value of every row) checked: a text field keeps its
    text, any other reads a number from text (``--set hosts=1``) or takes one as it is."""
    if constants is None:
        return {}
    if not isinstance(constants, Mapping):
        raise InputError(f"--set (constants=) must map record fields to a value, got {excerpt(constants)}")
    from cotune.profile._profile import TEXT_FIELDS

    out: dict[str, Any] = {}
    for field, value in constants.items():
        key = _field("--set {}=…", field, "constants=")
        if key in TEXT_FIELDS:
            out[key] = _text(f"--set {key}=VALUE", value, "its value")
            continue
        number = (_number(value) if len(value) <= 40 else None) if isinstance(value, str) else value
        if (isinstance(number, bool) or not isinstance(number, (int, float))
                or (isinstance(number, float) and not math.isfinite(number))):
            raise InputError(f"--set {key}=…: {key!r} holds a number, got {excerpt(value)}")
        out[key] = int(number) if isinstance(number, float) and number.is_integer() else number
    return out


def add_constants(frame: "pd.DataFrame", constants: Mapping[str, Any]) -> "pd.DataFrame":
    """A copy of ``frame`` with a column per constant, its value on every row; a field the
    table has a column for is refused (which would win is no guess to make)."""
    if not constants:
        return frame
    for field in constants:
        if field in frame.columns:
            raise InputError(f"--set {field}=…: the table has a column {field!r}: leave out --set to read it, or "
                             f"drop the column")
    out = frame.copy()
    for field, value in constants.items():
        out[field] = [value] * len(out)
    return out


def add_hosts(frame: "pd.DataFrame", gpus_per_host: int | None) -> "pd.DataFrame":
    """A copy of ``frame`` whose rows have ``hosts = ⌈workers / gpus_per_host⌉`` (the table's
    GPUs on as few servers as hold them); a row whose ``workers`` is no whole number is left
    to the record's own check, which names it."""
    if gpus_per_host is None:
        return frame
    if "hosts" in frame.columns:
        raise InputError(f"--gpus-per-host {gpus_per_host}: the table states each row's hosts (a column 'hosts'): leave "
                         "out the flag")
    if "workers" not in frame.columns:
        return frame  # the record's check says the field is missing

    def hosts(w: Any) -> Any:
        ok = isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) and w >= 1 and float(w).is_integer()
        return -(-int(w) // gpus_per_host) if ok and w <= 1e15 else None

    out = frame.copy()
    out["hosts"] = [hosts(w.item() if hasattr(w, "item") else w) for w in frame["workers"]]
    return out


def numbers_as_numbers(frame: "pd.DataFrame", text: "frozenset[str] | set[str]") -> "pd.DataFrame":
    """``frame`` with each cell that reads as a number a number, in every column but the
    ``text`` ones. One cell that is no number (``fast``) makes pandas read its whole column
    as text; the record check would then refuse the column's first cell, a good one, and name
    the wrong line. Cells that are no number stay text, for the check to name."""
    import pandas as pd

    out = None
    for column in frame.columns:
        if column in text or pd.api.types.is_numeric_dtype(frame[column].dtype):
            continue
        cells = frame[column]
        read = pd.to_numeric(cells, errors="coerce")
        if read.notna().any():
            out = frame.copy() if out is None else out
            out[column] = [v if pd.notna(v) else c for v, c in zip(read.tolist(), cells.tolist())]
    return frame if out is None else out
