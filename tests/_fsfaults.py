"""Real storage faults for tests: a tiny tmpfs (disk full) and a read-only mount.

Mounting needs root (or CAP_SYS_ADMIN); where it is refused the tests that need it
skip with the reason, and the injected-fault tests still cover the same code paths.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest


def _mount(args: list[str]) -> str | None:
    """Run ``mount ARGS``; the error text if it fails (None on success)."""
    if shutil.which("mount") is None:
        return "no mount command"
    done = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)
    return None if done.returncode == 0 else (done.stderr.strip() or f"mount exited {done.returncode}")


@contextlib.contextmanager
def tmpfs(path: Path, *, size_kib: int, read_only: bool = False) -> Iterator[Path]:
    """Mount a fresh tmpfs of ``size_kib`` KiB at ``path`` (skip the test if mounting is refused)."""
    path.mkdir(parents=True, exist_ok=True)
    opts = f"size={size_kib}k" + (",ro" if read_only else "")
    error = _mount(["-t", "tmpfs", "-o", opts, "tmpfs", str(path)])
    if error is not None:
        pytest.skip(f"cannot mount a tmpfs here ({error}): needs root or CAP_SYS_ADMIN")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30)


def remount_read_only(path: Path) -> None:
    """Turn the tmpfs mounted at ``path`` read-only (open files keep their descriptors)."""
    error = _mount(["-o", "remount,ro", str(path)])
    if error is not None:
        pytest.skip(f"cannot remount {path} read-only ({error})")


def fill(path: Path) -> Path:
    """Fill the filesystem holding ``path`` until a write fails with ENOSPC; the filler file."""
    filler = path / "filler.bin"
    with open(filler, "wb", buffering=0) as fh:
        chunk = b"\0" * 4096
        with contextlib.suppress(OSError):
            while True:
                fh.write(chunk)
    with contextlib.suppress(OSError):
        # The last pages may still take a few small writes: use them up too.
        with open(filler, "ab", buffering=0) as fh:
            while True:
                fh.write(b"\0")
    assert os.statvfs(path).f_bavail == 0
    return filler


class CloseFails:
    """A writer's file object whose ``close()`` closes the descriptor and then reports ``code``,
    as a network filesystem's ``close(2)`` does for data it could not write back (no
    unprivileged way to make a real one fail there). Everything else is the real file's."""

    def __init__(self, real, code: int) -> None:  # noqa: ANN001
        self._real, self._code = real, code

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._real, name)

    def close(self) -> None:
        self._real.close()
        raise OSError(self._code, os.strerror(self._code))
