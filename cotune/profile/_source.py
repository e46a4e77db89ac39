"""Where a profile comes from: a :class:`Profile`, a file, or a bundled example's name."""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

from cotune._checks import PROFILE_NAMED, path_text_problem
from cotune.errors import InputError, ProfileError
from cotune.profile import _profile
from cotune.profile._profile import Profile, checked_profile, file_lines, read_profile

__all__ = ["load_profile", "workload_name"]


def load_profile(source: Any) -> Profile:
    """A :class:`Profile` from itself, a file path, a bundled example's name, or a
    :class:`~cotune.ProfileRef` (as ``recommend`` and ``replan`` take one)."""
    if isinstance(source, Profile):
        return checked_profile(source)  # built in Python, its records are judged as a file's lines are
    from cotune.examples import resolve_profile_path

    # A ProfileRef (cotune._request) is read by its own load(); it is recognised by that
    # method rather than imported, since cotune._request sits above cotune.profile.
    load = getattr(source, "load", None)
    if callable(load) and not isinstance(source, (str, bytes, os.PathLike)):
        loaded = load()
        if isinstance(loaded, Profile):
            return loaded
    if source is None:
        raise InputError("no profile given: pass a profile file, a bundled example name (cotune examples), a Profile "
                         "or a ProfileRef")
    if not isinstance(source, (str, os.PathLike)):
        raise InputError(f"a profile is a file path, a bundled example name, a Profile or a ProfileRef, got a "
                         f"{type(source).__name__}")
    text = os.fspath(source)
    problem = path_text_problem(text, what=PROFILE_NAMED) if isinstance(text, str) else ""
    if problem:  # the request's rule for its 'profile' (cotune._request): '' read as '.', "is a directory"
        raise ProfileError(f"the profile path {problem}")
    return read_profile(resolve_profile_path(text))


def workload_name(source: Any) -> str | None:
    """The workload a profile source names, read cheaply: a :class:`Profile`'s own, inline
    records' first workload record's, a file's (or bundled example's) first record's.

    For models given with a profile that is otherwise not read (``recommend(..., models=)``):
    another workload's models answered under its label. None where it cannot tell without
    reading the profile (no such file, a first record that is no workload record, none
    within :data:`MAX_PROFILE_LINES` lines and :data:`MAX_PROFILE_CHARS` characters, a line
    over :data:`MAX_LINE_CHARS`): a
    fitted-models question never read the profile, and a missing file stays no error there.
    """
    if isinstance(source, Profile):
        return source.workload.name
    records = getattr(source, "records", None)  # a ProfileRef (cotune._request sits above this module)
    if records is not None:
        return next((n for n in map(_workload_name_of, records) if n is not None), None)
    if not isinstance(source, (str, os.PathLike)) and source is not None:
        source = getattr(source, "example", None) or getattr(source, "path", None)
    if not isinstance(source, (str, os.PathLike)):
        return None
    from cotune.examples import resolve_profile_path

    try:
        lines = file_lines(resolve_profile_path(os.fspath(source)))
        first = ""
        read_chars = 0
        try:
            # The first record only: a profile of millions of records is not parsed for its
            # name. Within the parser's own limits: 300 Mi blank lines ahead of a record took
            # 120 s to skip, where read_profile refuses the file after a million lines.
            for number, line in enumerate(lines, start=1):
                read_chars += len(line)
                if (number > _profile.MAX_PROFILE_LINES or read_chars > _profile.MAX_PROFILE_CHARS
                        or len(line) > _profile.MAX_LINE_CHARS):  # pieces of one over-long line: refused there
                    break  # no profile the parser reads: its name is not told
                if line.strip():
                    first = line
                    break
        finally:
            lines.close()
        return _workload_name_of(json.loads(first)) if first else None
    except (ProfileError, ValueError, RecursionError):  # unreadable, or no JSON: the fit would say why
        return None


def _workload_name_of(record: Any) -> str | None:
    """The name of a workload record (spelt as :meth:`WorkloadRecord.from_dict` reads it), else None."""
    if not isinstance(record, Mapping):
        return None
    kind, name = record.get("record"), record.get("name")
    if not (isinstance(kind, str) and kind.strip() == "workload" and isinstance(name, str) and name.strip()):
        return None
    return name.strip()
