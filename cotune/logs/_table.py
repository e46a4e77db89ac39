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
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any, Mapping

from cotune._checks import MAX_NAME, excerpt
from cotune.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["RECORD_FIELDS", "check_columns", "check_where", "map_columns", "select_rows", "where_columns"]

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
        key = _text("--column (columns=)", field, "a record field")
        if key not in RECORD_FIELDS:
            near = difflib.get_close_matches(key, RECORD_FIELDS, n=1, cutoff=0.5)
            raise InputError(f"--column {key}=…: {key!r} is no field of a profile record"
                             + (f" (is it {near[0]!r}?)" if near else "")
                             + "; docs/profile-format.md lists them (workers, hosts, local_batch, step_time_s, …)")
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
