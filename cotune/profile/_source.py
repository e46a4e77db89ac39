"""Where a profile comes from: a :class:`Profile`, a file, a bundled example, or a :class:`~cotune._request.ProfileRef`."""

from __future__ import annotations

import json
import os
from typing import Any

from cotune.errors import InputError
from cotune.profile._profile import Profile, parse_profile, read_profile

__all__ = ["load_profile"]


def load_profile(source: Any) -> Profile:
    """A :class:`Profile` from itself, a file path, a bundled example's name, or a ``ProfileRef``.

    A ``ProfileRef``'s ``path`` is read as given: callers that must confine paths (the
    HTTP service) resolve them before (:func:`cotune.api.recommend_request`).
    """
    if isinstance(source, Profile):
        return source
    from cotune._request import ProfileRef
    from cotune.examples import resolve_profile_path

    if isinstance(source, ProfileRef):
        if source.records is not None:
            lines = [json.dumps(r, allow_nan=False, separators=(",", ":")) + "\n" for r in source.records]
            return parse_profile(lines)
        source = source.example if source.example is not None else source.path
    if source is None:
        raise InputError("no profile given: pass a profile file, a bundled example name (cotune examples) or a Profile")
    if not isinstance(source, (str, os.PathLike)):
        raise InputError(f"a profile is a file path, a bundled example name or a Profile, got a {type(source).__name__}")
    return read_profile(resolve_profile_path(os.fspath(source)))
