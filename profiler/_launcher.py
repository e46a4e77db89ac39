"""Launchers: how one probe's worker processes are started.

A probe is ``workers`` processes running ``python -m profiler._worker TASK.json``.
:class:`Launcher` is the seam: :class:`TorchrunLauncher` uses torchrun
(``torch.distributed.run``) on this host, or across hosts through torchrun's own
rendezvous (``--nnodes``, ``--rdzv-endpoint``); the scheduler integration can add a
Kubernetes launcher with the same two members. Nothing here invents a cluster
launcher of its own.

Every launch enforces a wall-clock timeout by killing the launcher's whole process
group, and ties the launcher's life to the profiler's (a ``kill -9`` of the profiler
does not leave workers behind).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ClassVar, Protocol, Sequence, runtime_checkable

from cotune.errors import EXIT_ENVIRONMENT, CotuneError, InputError, StorageError
from profiler._livelog import LiveLog


class LauncherError(CotuneError):
    """The probe's processes could not be started at all (a fault of ours, not the workload's)."""

    exit_code = EXIT_ENVIRONMENT

__all__ = ["LaunchRequest", "LaunchOutcome", "Launcher", "LauncherError", "TorchrunLauncher", "free_port", "log_tail",
           "package_root"]


@dataclass(frozen=True)
class LaunchRequest:
    """One probe to start: ``workers`` processes of ``module`` with ``args``.

    ``run_id`` names the probe; it must be the same on every host of a multi-host
    probe (it becomes torchrun's ``--rdzv-id``).
    """

    workers: int
    module: str
    args: tuple[str, ...]
    run_id: str
    timeout_s: float
    log_path: Path
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class LaunchOutcome:
    """How the probe's processes ended."""

    returncode: int | None
    timed_out: bool
    wall_s: float
    log_tail: str = ""
    # OOM kills the kernel counted while the probe ran (/proc/vmstat's oom_kill; None where
    # it keeps no count): a SIGKILL with none counted came from someone else.
    oom_kills: int | None = None


@runtime_checkable
class Launcher(Protocol):
    """Starts the worker processes of one probe and waits for them.

    ``hosts`` is the number of machines each probe spans (it goes into the records);
    ``launch`` must return within ``request.timeout_s`` (plus a grace period), calling
    ``poll`` every fraction of a second while the probe runs.
    """

    @property
    def hosts(self) -> int: ...

    def launch(self, request: LaunchRequest, *, poll: Callable[[], None] | None = None) -> LaunchOutcome: ...


def free_port() -> int:
    """A TCP port that is free right now on 127.0.0.1 (for one probe's rendezvous)."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def package_root() -> Path:
    """The folder that holds the ``profiler`` package (workers must import it)."""
    return Path(__file__).resolve().parent.parent


def _set_parent_death_signal() -> None:
    # Runs in the child between fork and exec: if the profiler dies (even kill -9),
    # the kernel sends SIGTERM to torchrun, which stops its workers.
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def log_tail(path: Path, limit: int = 4000) -> str:
    """The last ``limit`` bytes of a probe's log, as text ("" if it cannot be read)."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def kill_group(proc: subprocess.Popen, *, grace_s: float) -> None:
    """SIGTERM the process group, then SIGKILL what is left after ``grace_s``."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait_s)
            break
        except subprocess.TimeoutExpired:
            continue
    # The TensorFlow spawner's workers share its process group; torchrun (torch 2.x) starts
    # each worker in a session of its own, which this never reaches (torchrun's own SIGTERM
    # handler and the workers' parent-death signal stop them; what a worker started in a
    # session of its own runs on: docs/profiler.md). A last SIGKILL to the group costs nothing.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_group(
    command: Sequence[str],
    *,
    env: dict[str, str],
    timeout_s: float,
    log_path: Path,
    poll: Callable[[], None] | None,
    grace_s: float = 5.0,
) -> LaunchOutcome:
    """Run ``command`` in its own process group with a timeout; its output goes to ``log_path``,
    bounded (:class:`profiler._livelog.LiveLog`: the first 1 MiB and the last 4 MiB)."""
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        live = LiveLog(log_path)
    except OSError as exc:
        raise StorageError.from_os_error(exc, path=log_path, doing="open the probe's log") from None
    try:
        began = time.monotonic()
        oom_before = oom_kill_count()
        try:
            proc = subprocess.Popen(
                list(command),
                stdin=subprocess.DEVNULL,
                stdout=live.write_fd,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=_set_parent_death_signal,
            )
        except OSError as exc:
            raise LauncherError(
                f"cannot start the probe launcher {command[0]!r}: {exc.strerror or exc}: check that it exists "
                "and that the machine has free processes and memory, then rerun (nothing was recorded)"
            ) from None
        timed_out = False
        try:
            # Inside the try: a stop signal (Ctrl-C, SIGTERM, SIGHUP) that lands while the reader
            # starts must still stop the probe's processes, not leave them running unread.
            live.started()
            while proc.poll() is None:
                # The log cannot be written (a full disk): the storage's fault, not the workload's,
                # raised as a StorageError. The workers never see it (the reader drains on).
                live.check()
                if poll is not None:
                    poll()
                if time.monotonic() - began > timeout_s:
                    timed_out = True
                    kill_group(proc, grace_s=grace_s)
                    break
                try:
                    proc.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    pass
        except BaseException:
            kill_group(proc, grace_s=1.0)
            raise
        if poll is not None:
            poll()
        wall_s = time.monotonic() - began
        oom_after = oom_kill_count()
    except BaseException:
        with contextlib.suppress(Exception):  # the error on its way out says more than the log's
            live.close()
        raise
    live.close()
    return LaunchOutcome(
        returncode=proc.returncode,
        timed_out=timed_out,
        wall_s=wall_s,
        log_tail=log_tail(log_path),
        oom_kills=None if oom_before is None or oom_after is None else oom_after - oom_before,
    )


def oom_kill_count() -> int | None:
    """The kernel's count of out-of-memory kills (``oom_kill`` in /proc/vmstat, Linux 4.13+;
    it counts a container's memory-limit kills too), or None where there is none."""
    try:
        with open("/proc/vmstat", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


@dataclass(frozen=True)
class TorchrunLauncher:
    """Start probes with torchrun (``python -m torch.distributed.run``).

    One host (default): each probe gets a fresh c10d rendezvous on a free local port.
    Several hosts: run the *same* ``cotune profile`` command on every host with
    ``nnodes`` and a shared ``rdzv_endpoint`` (``HOST:PORT`` of one of them); each
    probe then spans ``nnodes`` hosts with ``workers / nnodes`` processes per host,
    and every host joins rendezvous ``run_id`` for it.
    """

    # Its workers (profiler._worker) time several local batches in one launch.
    timing_groups: ClassVar[bool] = True

    nnodes: int = 1
    rdzv_endpoint: str | None = None
    rdzv_backend: str = "c10d"
    python: str = field(default_factory=lambda: sys.executable)
    extra_args: tuple[str, ...] = ()
    grace_s: float = 5.0

    def __post_init__(self) -> None:
        if self.nnodes < 1:
            raise InputError(f"nnodes must be >= 1, got {self.nnodes}")
        if self.nnodes > 1 and not self.rdzv_endpoint:
            raise InputError(
                f"{self.nnodes} hosts need a shared rendezvous: pass rdzv_endpoint='HOST:PORT' (the same on every host)"
            )

    @property
    def hosts(self) -> int:
        return self.nnodes

    def command(self, request: LaunchRequest) -> list[str]:
        """The torchrun command line of one probe (public for docs and tests)."""
        if request.workers % self.nnodes:
            raise InputError(
                f"{request.workers} workers cannot be spread evenly over {self.nnodes} hosts: "
                f"use worker counts that are multiples of {self.nnodes}"
            )
        endpoint = self.rdzv_endpoint or f"127.0.0.1:{free_port()}"
        return [
            self.python, "-m", "torch.distributed.run",
            "--nnodes", str(self.nnodes),
            "--nproc-per-node", str(request.workers // self.nnodes),
            "--rdzv-backend", self.rdzv_backend,
            "--rdzv-endpoint", endpoint,
            "--rdzv-id", request.run_id,
            "--max-restarts", "0",
            "--monitor-interval", "0.2",
            # torchrun's agent otherwise makes a torchelastic_* folder in the machine's temp
            # dir for every probe and leaves it there; the probe's own folder goes with it.
            "--log-dir", str(Path(request.log_path).parent / "torchrun"),
            *self.extra_args,
            "-m", request.module, *request.args,
        ]  # fmt: skip

    def environment(self, request: LaunchRequest) -> dict[str, str]:
        env = dict(os.environ)
        root = str(package_root())
        env["PYTHONPATH"] = os.pathsep.join([root, os.getcwd()] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        per_host = max(1, request.workers // self.nnodes)
        # Set explicitly so torchrun does not force 1 thread (and print a banner about it).
        env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // per_host)))
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.update(dict(request.env))
        return env

    def launch(self, request: LaunchRequest, *, poll: Callable[[], None] | None = None) -> LaunchOutcome:
        return run_group(
            self.command(request),
            env=self.environment(request),
            timeout_s=request.timeout_s,
            log_path=request.log_path,
            poll=poll,
            grace_s=self.grace_s,
        )
