"""Where a profile comes from: a :class:`Profile`, a file, or a bundled example's name."""

from __future__ import annotations

import os
from typing import Any

from cotune.errors import InputError
from cotune.profile._profile import Profile, read_profile

__all__ = ["load_profile"]


def load_profile(source: Any) -> Profile:
    """A :class:`Profile` from itself, a file path, a bundled example's name, or a
    :class:`~cotune.ProfileRef` (as ``recommend`` and ``replan`` take one)."""
    if isinstance(source, Profile):
        return source
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
    return read_profile(resolve_profile_path(os.fspath(source)))
