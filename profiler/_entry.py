"""The one ``main`` of every worker process, PyTorch or TensorFlow.

A framework supplies a :class:`Backend` (join the process group, run a task, tell an
out-of-memory from other errors, leave); this module does the rest the same way for
both: read the task, tie the process to its parent, turn any exception into a
:class:`~profiler._protocol.FailureResult`, write ``rank<N>.json`` and exit with a code
that says what happened even when no result file could be written.

A failure to write our own files (the result, the progress line, a checkpoint) is a
``storage`` failure: the session stops with an error instead of recording the probe as
a crash of the workload. So is an ``OSError`` meaning disk full, read-only or I/O error
raised anywhere in the worker.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import errno
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn, Protocol

from profiler._protocol import (
    EXIT_CRASH,
    EXIT_OOM,
    EXIT_SETUP,
    EXIT_STORAGE,
    FAULT_MARKER,
    STORAGE_ERRNOS,
    FailureResult,
    Result,
    Task,
    batch_result_dir,
    mark_started,
    read_task,
    write_result,
)

__all__ = ["Backend", "ScratchWriteError", "SetupFault", "scratch_write", "die_with_parent", "failure_of", "worker_main",
           "write_batch_result"]


class SetupFault(Exception):
    """Our own setup failed after the workload's code began (building DistributedDataParallel
    out of memory): the environment's fault, reported as status ``setup``, never as the
    workload's ``oom`` or ``crash`` at that batch."""


class ScratchWriteError(OSError):
    """One of our own files (progress line, checkpoint, result) could not be written."""


@contextlib.contextmanager
def scratch_write(path: Path, what: str) -> Iterator[None]:
    """Any failure inside is a :class:`ScratchWriteError` about ``what`` at ``path``.

    Libraries do not always raise ``OSError`` for a full disk (``torch.save`` raises a
    ``RuntimeError`` "file write failed"), so the boundary, not the exception type,
    decides that this is a fault of the storage.
    """
    try:
        yield
    except ScratchWriteError:
        raise
    except Exception as exc:  # noqa: BLE001 - re-raised as a storage fault, with the cause
        code = getattr(exc, "errno", None) or errno.EIO
        raise ScratchWriteError(code, f"cannot write {what} {path}: {type(exc).__name__}: {exc}") from exc


def write_batch_result(result_dir: str | Path, index: int, result: Result) -> None:
    """This rank's result for the ``index``-th local batch of a timing task that times
    several (``batch_result_dir``), written the moment it is measured; a failure to write it
    is ours (storage), never the workload's."""
    folder = batch_result_dir(result_dir, index)
    with scratch_write(folder, "the timing result"):
        folder.mkdir(exist_ok=True)
        write_result(folder, result)


def die_with_parent() -> None:
    """If the launcher dies (even ``kill -9`` of the profiler), take this worker down too
    instead of leaving an orphan that keeps a port or a GPU busy."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _is_storage(exc: BaseException) -> bool:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:  # the cause chain, in case a library wrapped it
        seen.add(id(cur))
        if isinstance(cur, ScratchWriteError) or (isinstance(cur, OSError) and cur.errno in STORAGE_ERRNOS):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def failure_of(exc: BaseException, *, rank: int, is_oom: Callable[[BaseException], bool]) -> FailureResult:
    """The failure result for ``exc``: storage first (never blamed on the workload), then oom."""
    status = "storage" if _is_storage(exc) else "oom" if is_oom(exc) else "crash"
    # A bare MemoryError() says nothing: the record read "MemoryError: ".
    said = str(exc) or ("out of memory (the error carried no message)" if isinstance(exc, MemoryError)
                        else "(the error carried no message)")
    return FailureResult(status=status, rank=rank, message=f"{type(exc).__name__}: {said}"[:500],  # type: ignore[arg-type]
                         traceback=traceback.format_exc()[-4000:])


class Backend(Protocol):
    """What a framework supplies to :func:`worker_main`."""

    def setup(self, task: Task) -> Any:
        """Join the process group; the returned environment has an integer ``rank``."""

    def run(self, task: Task, env: Any) -> Result:
        """Run the timing probe or the learning curve."""

    def is_oom(self, exc: BaseException) -> bool: ...

    def finish(self, env: Any) -> None:
        """After this rank's result is written (e.g. wait until every rank has written)."""


_EXIT = {"oom": EXIT_OOM, "crash": EXIT_CRASH, "storage": EXIT_STORAGE, "setup": EXIT_SETUP}
_STATUS_OF_EXIT = {EXIT_STORAGE: "storage", EXIT_SETUP: "setup"}


def _exit(code: int, *, why: str) -> NoReturn:
    """Leave with ``code``; for our own failures (storage, setup) say so in the log first
    (``FAULT_MARKER``), so the parent never takes a workload's os._exit(5) for one of ours."""
    if code in _STATUS_OF_EXIT:
        with contextlib.suppress(Exception):
            print(f"{FAULT_MARKER} {_STATUS_OF_EXIT[code]}: {' '.join(why.split())}"[:500], file=sys.stderr, flush=True)
    os._exit(code)


def worker_main(argv: list[str], *, backend: Backend, prog: str) -> int:
    """``python -m PROG TASK.json``: run one task on this rank; exits the process."""
    if len(argv) != 1:
        print(f"usage: python -m {prog} TASK.json (started by the profiler's launcher, not by hand)", file=sys.stderr)
        return 2
    die_with_parent()
    try:
        task = read_task(Path(argv[0]))
    except OSError as exc:
        _exit(EXIT_STORAGE, why=f"cannot read the task file {argv[0]}: {exc}")
    rank = int(os.environ.get("RANK", "0"))
    try:
        mark_started(task.result_dir, rank)
    except OSError as exc:
        _exit(EXIT_STORAGE, why=f"cannot write the start mark under {task.result_dir}: {exc}")
    stage = "setup"
    try:
        env = backend.setup(task)
        rank = int(env.rank)
        stage = "run"
        result = backend.run(task, env)
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the parent
        if isinstance(exc, KeyboardInterrupt):
            # SIGINT from outside (a Ctrl-C in the worker's terminal, a kill -INT): die of it,
            # so the launcher reports the signal, not a crash of the workload's.
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        failure = failure_of(exc, rank=rank, is_oom=backend.is_oom)
        if (stage == "setup" or isinstance(exc, SetupFault)) and failure.status != "storage":
            # No workload code runs in setup (the process group, the device): a failure there
            # (GLOO_SOCKET_IFNAME naming no interface, a rendezvous store gone) is the
            # environment's, and a crash record would make reruns skip the point. So is a
            # SetupFault: our own setup later on (DDP), an oom record would cap the batch.
            failure = dataclasses.replace(failure, status="setup")
        code, why = _EXIT[failure.status], failure.message
        try:
            write_result(task.result_dir, failure)
        except Exception as write_exc:  # noqa: BLE001 - the exit code still tells the parent
            code, why = EXIT_STORAGE, f"cannot write the result under {task.result_dir}: {write_exc}"
        # Skip destroy_process_group: peers may be stuck in a collective; the launcher
        # tears the group down once this process exits non-zero.
        _exit(code, why=why)
    try:
        write_result(task.result_dir, dataclasses.replace(result, rank=rank))
    except Exception as exc:  # noqa: BLE001
        _exit(EXIT_STORAGE, why=f"cannot write the result under {task.result_dir}: {exc}")
    with contextlib.suppress(Exception):
        backend.finish(env)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    # Leave without C++ static destructors: gloo's background threads sometimes abort
    # ("terminate called without an active exception") while tearing down, which
    # would turn a finished probe into a crash.
    os._exit(0)

