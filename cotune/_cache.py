"""A disk cache for fitted models, so that repeated CLI calls on one profile skip the fit.

An entry is keyed by everything its value depends on: the profile's records (a content
hash, not the path or mtime), the fit options, cotune's version and a hash of the model
code (``cotune/models``, ``cotune/profile``), so a change to any of them misses rather
than serving a stale fit. Entries are written atomically (temporary file + rename) and
carry a SHA-256 of their payload, checked before unpickling: an unreadable, truncated,
bit-flipped or foreign entry is a miss, refitted silently and overwritten. The directory
is safe to delete at any time, and a directory that cannot be found or written only
costs speed.

The directory is bounded: after each write the least recently used entries (by mtime; a
hit touches its entry) are deleted down to ``COTUNE_CACHE_MAX_ENTRIES`` entries (default
256) and ``COTUNE_CACHE_MAX_MIB`` MiB (default 256), and temporary files left by a
killed writer are deleted once they are older than ten minutes. An entry larger than the
MiB cap on its own is not stored (storing it would only evict everything else). Only files
named exactly like the cache's own (its kinds, its temporary-file shape) are touched.

The entries are pickles, and unpickling runs code: an entry is read only when it and
its directory belong to the current user and neither is writable by group or others
(POSIX); the directory is created private (0700). Anything else is a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import stat
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

__all__ = ["KINDS", "cache_dir", "code_hash", "profile_hash", "cached", "prune"]

T = TypeVar("T")
_FORMAT = 2  # bump when the entry layout changes (2: a payload checksum ahead of the pickle)
# An entry is _MAGIC, the payload's SHA-256 (raw bytes), then the payload: pickle((key, value)).
# The checksum catches disk and copy damage; a flipped bit inside a pickle often still loads
# and then serves wrong numbers, so the pickle alone cannot be trusted to fail loudly.
_MAGIC = b"cotune-cache-2\n"
_DIGEST_BYTES = 32
DEFAULT_MAX_ENTRIES = 256
DEFAULT_MAX_MIB = 256
# A writer holds its temporary file only while it writes one entry (a few hundred KB at
# most); one this old belongs to a process that was killed mid-write.
_STALE_TMP_S = 600.0
# The kinds cotune stores (cotune/cli/_fitcache.py). Pruning deletes only names built from
# these, exactly as written below: a pattern open to any kind deleted a user's
# "dataset-<md5>.pickle" and another program's ".report-draft.tmp" kept in the folder.
KINDS = ("models", "fit-report")
_KIND_ALTERNATIVES = "|".join(re.escape(kind) for kind in KINDS)
_ENTRY_NAME = re.compile(rf"(?:{_KIND_ALTERNATIVES})-[0-9a-f]{{32}}\.pickle")
# tempfile.mkstemp(prefix=".<kind>-", suffix=".tmp") inserts 8 characters drawn from
# tempfile's name alphabet (lower-case letters, digits, "_").
_TMP_NAME = re.compile(rf"\.(?:{_KIND_ALTERNATIVES})-[a-z0-9_]{{8}}\.tmp")


def cache_dir() -> Path:
    """``$COTUNE_CACHE_DIR``, else the platform's user cache directory + ``cotune``."""
    env = os.environ.get("COTUNE_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "cotune"
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "cotune" / "Cache"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    # The XDG spec: a relative path is invalid and must be ignored (it would put the
    # cache in whatever directory the command happens to run from).
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "cotune"


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
    After a write the folder is pruned to its caps (``prune``).
    """
    if kind not in KINDS:
        # A kind pruning does not know would grow the folder without bound.
        raise ValueError(f"unknown cache kind {kind!r}: add it to cotune._cache.KINDS")
    if not enabled:
        return compute()
    full = {"format": _FORMAT, "kind": kind, "code": code_hash(), **key}
    blob = json.dumps(full, sort_keys=True, default=str)
    digest = hashlib.sha256(blob.encode()).hexdigest()[:32]
    try:
        # Inside the try: with no HOME and no passwd entry (a container run as an arbitrary
        # uid) or "~user" naming an unknown user there is no directory, only a slower answer.
        folder = directory or cache_dir()
    except (RuntimeError, OSError, KeyError):
        return compute()
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
            data = fh.read()
            stored_key, value = pickle.loads(_verified_payload(memoryview(data)))
            if stored_key == blob:
                _touch(fh.fileno(), path)
                return value
    except Exception:  # missing, truncated, corrupted, from another version: a miss
        pass
    value = compute()
    try:
        payload = pickle.dumps((blob, value), protocol=pickle.HIGHEST_PROTOCOL)
        if len(_MAGIC) + _DIGEST_BYTES + len(payload) > _max_bytes():
            return value  # it could never be kept; writing it would first evict every entry that fits
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=f".{kind}-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                # Three writes, not one concatenation: no second copy of a large payload.
                fh.write(_MAGIC)
                fh.write(hashlib.sha256(payload).digest())
                fh.write(payload)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except Exception:  # read-only or full disk: run uncached
        return value
    prune(folder=folder)
    return value


def prune(*, folder: Path, max_entries: int | None = None, max_bytes: int | None = None,
          now_s: float | None = None) -> None:
    """Keep the most recently used entries of ``folder`` that fit within ``max_entries``
    entries and ``max_bytes`` bytes together (defaults: ``COTUNE_CACHE_MAX_ENTRIES``,
    ``COTUNE_CACHE_MAX_MIB``), delete the others, and delete the cache's temporary files
    older than ten minutes. Never raises: a file that vanished or cannot be deleted is
    left to the next call."""
    if max_entries is None:
        max_entries = _env_limit("COTUNE_CACHE_MAX_ENTRIES", DEFAULT_MAX_ENTRIES)
    if max_bytes is None:
        max_bytes = _max_bytes()
    now_s = time.time() if now_s is None else now_s
    try:
        names = os.listdir(folder)
    except OSError:
        return
    entries: list[tuple[float, str, int]] = []
    for name in names:
        try:
            if _ENTRY_NAME.fullmatch(name):
                st = os.lstat(folder / name)
                if stat.S_ISREG(st.st_mode):
                    entries.append((st.st_mtime, name, st.st_size))
            elif _TMP_NAME.fullmatch(name):
                st = os.lstat(folder / name)
                if stat.S_ISREG(st.st_mode) and now_s - st.st_mtime > _STALE_TMP_S:
                    os.unlink(folder / name)
        except OSError:  # gone meanwhile (another process pruned it) or not ours to delete
            continue
    kept_count, kept_bytes = 0, 0
    for _, name, size_bytes in sorted(entries, reverse=True):  # most recently used first
        # Decided entry by entry: one entry too large for the byte cap goes alone, rather
        # than taking every older entry with it (a sticky "over" wiped the folder).
        if kept_count < max_entries and kept_bytes + size_bytes <= max_bytes:
            kept_count, kept_bytes = kept_count + 1, kept_bytes + size_bytes
            continue
        try:
            os.unlink(folder / name)
        except OSError:
            continue


def _verified_payload(data: memoryview) -> memoryview:
    """The pickle inside an entry (a view: no copy of a large entry), or ValueError when its
    header or checksum is wrong."""
    head = len(_MAGIC) + _DIGEST_BYTES
    if len(data) < head or data[:len(_MAGIC)] != _MAGIC:
        raise ValueError("not a cotune cache entry of this format")
    payload = data[head:]
    if hashlib.sha256(payload).digest() != data[len(_MAGIC):head]:
        raise ValueError("cache entry damaged: checksum mismatch")
    return payload


def _touch(fd: int, path: Path) -> None:
    """Mark an entry as just used (pruning keeps the most recently used); best effort."""
    try:
        os.utime(fd if os.utime in os.supports_fd else path)
    except OSError:
        pass


def _max_bytes() -> int:
    """The byte cap, from ``COTUNE_CACHE_MAX_MIB``."""
    return _env_limit("COTUNE_CACHE_MAX_MIB", DEFAULT_MAX_MIB) * 1024 * 1024


def _env_limit(name: str, default: int) -> int:
    """A non-negative integer from the environment; anything else is the default, since a
    limit on a cache must not fail the command it only speeds up."""
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value >= 0 else default


def _trusted(st: os.stat_result) -> bool:
    """Owned by this user and not writable by group or others (always true where POSIX
    ownership does not apply)."""
    if not hasattr(os, "getuid"):
        return True
    return st.st_uid == os.getuid() and not (st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))
