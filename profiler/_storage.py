"""Is our storage healthy? Checked before every probe and after every failed one.

A probe that fails because *our* files could not be written (a full disk under the
scratch folder, a read-only mount, an I/O error) must stop the session with an error
instead of becoming a ``failure: crash`` record that a rerun would then skip forever.
Workers report such faults themselves when they can (status ``storage``, exit code 5);
when they cannot — the disk is too full even for their result file — the session
finds out here before it writes anything about the probe.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Iterator

from cotune.errors import StorageError

__all__ = ["MIN_FREE_BYTES", "check_storage", "storage_guard"]

# Below this, a probe's task file, log and result may not fit (a checkpoint surely not).
MIN_FREE_BYTES = 1 << 20


@contextlib.contextmanager
def storage_guard(path: Path, doing: str) -> Iterator[None]:
    """Any ``OSError`` inside becomes a one-line :class:`StorageError` about ``path``."""
    try:
        yield
    except StorageError:
        raise
    except OSError as exc:
        raise StorageError.from_os_error(exc, path=path, doing=doing) from None


def _free_bytes(st: os.statvfs_result) -> int:
    # root may write into the blocks reserved for it (ext4's 5 %); others may not.
    blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail
    return int(blocks) * int(st.f_frsize)


def check_storage(*, scratch: Path, profile: Path, after: str | None = None) -> None:
    """Raise :class:`StorageError` unless both folders are writable with room to spare.

    ``scratch`` gets a real write (+ fsync), which is what catches quotas, thin volumes
    and failing disks that ``statvfs`` does not show; the profile's folder only a
    ``statvfs`` (the profile itself is written through its own checked writer).
    ``after`` names the failed probe that prompted the check, for the message.
    """
    why = f" (probe {after} failed: not recorded, it was the storage)" if after else ""
    with storage_guard(scratch, "create the scratch folder"):
        scratch.mkdir(parents=True, exist_ok=True)
    for folder, role in ((scratch, "scratch folder"), (profile.parent, "profile's folder")):
        with storage_guard(folder, "check its filesystem"):
            st = os.statvfs(folder)
        if st.f_flag & os.ST_RDONLY:
            raise StorageError.from_os_error(OSError(errno.EROFS, os.strerror(errno.EROFS)), path=folder,
                                             doing=f"write the {role}{why}")
        free = _free_bytes(st)
        if free < MIN_FREE_BYTES:
            raise StorageError(
                f"{folder}: only {free // 1024} KiB free on the filesystem of the {role} (at least "
                f"{MIN_FREE_BYTES // 1024} KiB needed){why} (ENOSPC): free space or choose another --out, "
                "then rerun: the rerun measures what this run could not", errno=errno.ENOSPC, filename=str(folder))
    check = scratch / ".write-check"
    with storage_guard(scratch, f"write a test file in the scratch folder{why}"):
        try:
            with open(check, "wb", buffering=0) as fh:
                fh.write(b"\0" * 4096)
                os.fsync(fh.fileno())
        finally:
            with contextlib.suppress(OSError):
                check.unlink()
