"""Errors that cotune raises on purpose, and the exit codes the CLI maps them to.

Every message states what was wrong (with the offending value) and ends with what
to change. The CLI prints ``cotune: <message>`` on one line, never a traceback.

Exit codes (documented in ``docs/cli.md``):

* ``0`` — success;
* ``1`` — the question was well formed but nothing is feasible (:class:`InfeasibleError`);
* ``2`` — bad input: a missing or malformed file, an invalid argument or field value
  (:class:`InputError` and its subclasses; argparse usage errors too);
* ``3`` — the environment failed, not the input: a file cotune writes could not be
  written (disk full, read-only filesystem, an I/O error), is locked by another writer,
  or the profiler's launcher could not start (:class:`StorageError`,
  :class:`ProfileLockedError`). Nothing was recorded wrongly; fix the cause and run the
  same command again;
* ``4`` — an internal error: a bug in cotune, not in the input. The CLI prints one line
  naming the exception and the file that holds its traceback (``COTUNE_DEBUG=1`` raises
  it instead).
"""

from __future__ import annotations

__all__ = [
    "CotuneError",
    "InputError",
    "ProfileError",
    "ProfileNotFoundError",
    "ModelError",
    "InfeasibleError",
    "StorageError",
    "ProfileLockedError",
    "EXIT_OK",
    "EXIT_INFEASIBLE",
    "EXIT_INPUT",
    "EXIT_ENVIRONMENT",
    "EXIT_INTERNAL",
    "is_out_of_memory",
]

EXIT_OK = 0
EXIT_INFEASIBLE = 1
EXIT_INPUT = 2
EXIT_ENVIRONMENT = 3
EXIT_INTERNAL = 4


class CotuneError(Exception):
    """Base of every error cotune raises deliberately."""

    exit_code: int = EXIT_INPUT


class InputError(CotuneError, ValueError):
    """An argument or a value supplied by the user is invalid."""

    exit_code = EXIT_INPUT


class ProfileError(InputError):
    """A profile file is missing, unreadable or malformed.

    ``path`` and ``line`` (1-based) locate the problem when known, and start the message
    (``path:line: ``, or ``line N: `` for text without a file); ``reason`` is the message
    without them.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        elif line is not None:  # text parsed without a file (parse_profile): the line still named
            where = f"line {line}: "
        super().__init__(where + message)
        self.path = path
        self.line = line
        self.reason = message


class ProfileNotFoundError(ProfileError):
    """The profile named is neither a file nor a bundled example (``unknown_profile`` in an
    ``error.v1`` document, as the HTTP service says of a name it does not know)."""


class ModelError(InputError):
    """The profile does not hold enough data to fit a model."""


class InfeasibleError(CotuneError):
    """No candidate meets every constraint; the message says what to relax."""

    exit_code = EXIT_INFEASIBLE


class StorageError(CotuneError, OSError):
    """Writing a file cotune owns failed (``ENOSPC``, ``EROFS``, ``EIO``, ...).

    An ``OSError`` too (``errno`` and ``filename`` kept), so callers that already catch
    ``OSError`` keep working; the message is one line that ends with the fix.
    """

    exit_code = EXIT_ENVIRONMENT

    def __init__(self, message: str, *, errno: int | None = None, filename: str | None = None) -> None:
        super().__init__(message)
        self.errno = errno
        self.filename = filename
        self.message = message

    def __str__(self) -> str:
        return self.message

    @classmethod
    def from_os_error(cls, exc: OSError, *, path: object, doing: str) -> "StorageError":
        """One line for an ``OSError`` while ``doing`` something to ``path``, ending with the fix
        that suits the cause (free space, a writable mount, a healthy disk)."""
        import errno as e

        code = exc.errno
        name = e.errorcode.get(code, "") if code else ""
        reason = exc.strerror or type(exc).__name__
        if code in (e.ENOSPC, e.EDQUOT):
            fix = "free space (or raise the quota), or choose a location on another filesystem, then rerun"
        elif code == e.EROFS:
            fix = "the filesystem is mounted read-only: choose a writable location or remount it read-write, then rerun"
        elif code == e.EFBIG:
            fix = "a file-size limit stops it (ulimit -f, a container's): raise the limit or choose another location, then rerun"
        elif code == e.EIO:
            fix = "the device reported an I/O error: check the disk (dmesg) or choose another location, then rerun"
        elif code in (e.EACCES, e.EPERM):
            fix = "make it writable for this user or choose another location, then rerun"
        else:
            fix = "fix the storage or choose another location, then rerun"
        label = f"{reason} ({name})" if name else reason
        return cls(f"{path}: cannot {doing}: {label}: {fix}", errno=code, filename=str(path))


class ProfileLockedError(StorageError):
    """Another writer holds the profile's exclusive lock; ``holder_pid`` names it when known."""

    def __init__(self, message: str, *, filename: str | None = None, holder_pid: int | None = None) -> None:
        import errno as _errno

        super().__init__(message, errno=_errno.EWOULDBLOCK, filename=filename)
        self.holder_pid = holder_pid


# Exception classes that mean "out of memory", by name so that no framework is imported:
# torch.cuda.OutOfMemoryError (torch.OutOfMemoryError), TensorFlow's ResourceExhaustedError.
_OOM_CLASS_NAMES = frozenset({"OutOfMemoryError", "ResourceExhaustedError"})
# ... and texts of those raised as a plain RuntimeError: CUDA's, the CUDA driver's, Apple
# MPS's ("MPS backend out of memory"), XLA's ("RESOURCE_EXHAUSTED: Out of memory while
# ..."), the host allocator's. Not a bare RESOURCE_EXHAUSTED: gRPC says it of a message
# over its size limit, which no smaller batch on this GPU type fixes.
_OOM_TEXTS = ("out of memory", "cuda_error_out_of_memory", "can't allocate memory")


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an accelerator's or the host's out-of-memory: a fact about the
    local batch it ran at (a ``failure`` record of kind ``oom``), not a crash. One rule for
    the profiler's torch and TensorFlow workers and the tracker of a running job."""
    if isinstance(exc, MemoryError) or any(t.__name__ in _OOM_CLASS_NAMES for t in type(exc).__mro__):
        return True
    text = str(exc).lower()
    return any(t in text for t in _OOM_TEXTS)


def warn_beside(error: BaseException, *, raising: BaseException, stacklevel: int = 2) -> None:
    """Report ``error`` (a storage fault met while cleaning up: a failed close, a last fsync) as
    one ``RuntimeWarning`` beside the exception ``raising`` that is on its way out. Raised, it
    would take that exception's place — the training's own error, a Ctrl-C, the profiler's
    stop — and the caller would see a fault of its storage instead of what ended its work
    (and the profiler an exit code of the wrong cause). A warnings filter that turns the
    warning into an error must not do that either: then it is not said."""
    import warnings

    what = f" (while {type(raising).__name__} was raised, which goes on)"
    try:
        warnings.warn(f"cotune: {error}{what}", RuntimeWarning, stacklevel=stacklevel + 1)
    except Warning:
        pass
