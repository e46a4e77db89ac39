"""A disk cache for fitted models, so that repeated CLI calls on one profile skip the fit.

An entry is keyed by everything its value depends on: the profile's records (a content
hash, not the path or mtime), the fit options, cotune's version and a hash of the model
code (``cotune/models``, ``cotune/profile``), so a change to any of them misses rather
than serving a stale fit. Entries are written atomically (temporary file + rename); an
unreadable, truncated or foreign entry is a miss and is refitted silently. The directory
is safe to delete at any time.

The entries are pickles, and unpickling runs code: an entry is read only when it and
its directory belong to the current user and neither is writable by group or others
(POSIX); the directory is created private (0700). Anything else is a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import stat
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

__all__ = ["cache_dir", "code_hash", "profile_hash", "cached"]

T = TypeVar("T")
_FORMAT = 1  # bump when the entry layout changes


def cache_dir() -> Path:
    """``$COTUNE_CACHE_DIR``, else the platform's user cache directory + ``cotune``."""
    env = os.environ.get("COTUNE_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "cotune"
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "cotune" / "Cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cotune"


@lru_cache(maxsize=1)
def code_hash() -> str:
    """Hash of cotune's version and the source of the code that produces a fit."""
    import cotune

    root = Path(cotune.__file__).resolve().parent
    h = hashlib.sha256(f"{cotune.__version__}|{sys.version_info[:2]}".encode())
    for sub in ("models", "profile"):
        for file in sorted((root / sub).glob("*.py")):
            h.update(file.name.encode())
            h.update(file.read_bytes())
    return h.hexdigest()


def profile_hash(profile: Any) -> str:
    """Content hash of a profile's records (format-independent: whitespace and key order do not matter)."""
    from cotune.profile import record_to_dict

    text = json.dumps([record_to_dict(r) for r in profile.records()], sort_keys=True, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def cached(kind: str, key: Mapping[str, Any], compute: Callable[[], T], *, enabled: bool = True,
           directory: Path | None = None) -> T:
    """``compute()``, or the value an earlier call with an equal ``key`` stored.

    ``key`` must be JSON-serialisable; the code hash is added to it. Any failure to
    read or write the cache falls back to computing: the cache can only save time.
    """
    if not enabled:
        return compute()
    full = {"format": _FORMAT, "kind": kind, "code": code_hash(), **key}
    blob = json.dumps(full, sort_keys=True, default=str)
    digest = hashlib.sha256(blob.encode()).hexdigest()[:32]
    folder = directory or cache_dir()
    path = folder / f"{kind}-{digest}.pickle"
    try:
        # Non-blocking and not through a link: a FIFO planted at an entry's name blocked
        # every fitting command in open(); anything but a regular file is a miss.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise IsADirectoryError("cache entry is not a regular file")
            if not (_trusted(st) and _trusted(folder.stat())):
                raise PermissionError("cache entry not private to this user")
            stored_key, value = pickle.load(fh)
        if stored_key == blob:
            return value
    except Exception:  # missing, truncated, corrupted, from another version: a miss
        pass
    value = compute()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=f".{kind}-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump((blob, value), fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except Exception:  # read-only or full disk: run uncached
        pass
    return value


def _trusted(st: os.stat_result) -> bool:
    """Owned by this user and not writable by group or others (always true where POSIX
    ownership does not apply)."""
    if not hasattr(os, "getuid"):
        return True
    return st.st_uid == os.getuid() and not (st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))
