"""Launchers: how one probe's worker processes are started.

A probe is ``workers`` processes running ``python -m profiler._worker TASK.json``.
:class:`Launcher` is the seam: :class:`TorchrunLauncher` uses torchrun
(``torch.distributed.run``) on this host, or across hosts through torchrun's own
rendezvous (``--nnodes``, ``--rdzv-endpoint``); the scheduler integration can add a
Kubernetes launcher with the same two members. Nothing here invents a cluster
launcher of its own.

Every launch enforces a wall-clock timeout by killing the launcher's whole process
group, and ties the launcher's life to the profiler's (a ``kill -9`` of the profiler
does not leave workers behind). On Linux the processes the workload itself starts (a
helper server, a ``setsid`` daemon) end with the launch too: see :class:`_Descendants`.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ClassVar, Protocol, Sequence, runtime_checkable

from cotune.errors import EXIT_ENVIRONMENT, CotuneError, InputError, StorageError


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
    # each worker in a session of its own, which this never reaches (its own SIGTERM handler
    # and the workers' parent-death signal stop them). Whatever escaped either way is found
    # by its parentage instead (_Descendants). A last SIGKILL to the group costs nothing.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
# Set in the launcher's environment: a process that appears as the profiler's child during a
# launch and carries it was started under the probe (a double-forked daemon seen by no scan).
LAUNCH_TOKEN_ENV = "COTUNE_LAUNCH_TOKEN"
_SCAN_INTERVAL_S = 1.0  # how often a running launch's process tree is recorded
_LEFTOVER_GRACE_S = 2.0  # SIGTERM to SIGKILL, for what the workload left running
_SWEEP_ROUNDS = 5  # killing a process hands its children to us: sweep again, this many times at most
# The subreaper flag is the process's, not the launch's: launches in several threads share it.
_subreaper_lock = threading.Lock()
_subreaper_users = 0
_subreaper_before = 0


def _stat(pid: int) -> tuple[int, int, str] | None:
    """``(ppid, start time in clock ticks, state)`` of ``pid`` from /proc, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()  # the name may hold spaces and parentheses
        return int(fields[1]), int(fields[19]), fields[0].decode("ascii", "replace")
    except (OSError, IndexError, ValueError):
        return None


def _process_table() -> dict[int, tuple[int, int, str]]:
    """Every process's :func:`_stat` ({} where there is no /proc)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {}
    table = {}
    for entry in entries:
        if entry.isdigit() and (found := _stat(int(entry))) is not None:
            table[int(entry)] = found
    return table


def _has_token(pid: int, token: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return token in fh.read().split(b"\0")
    except OSError:
        return False


def _prctl(option: int, value: int | ctypes.c_int) -> bool:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        arg = ctypes.byref(value) if isinstance(value, ctypes.c_int) else ctypes.c_ulong(value)
        return libc.prctl(option, arg, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _acquire_subreaper() -> bool:
    """Make this process a child subreaper (Linux 3.4+): a probe's orphans reparent to it
    instead of to init, where nothing would stop them. False where prctl is not available."""
    global _subreaper_users, _subreaper_before
    with _subreaper_lock:
        if _subreaper_users == 0:
            before = ctypes.c_int(0)
            if not _prctl(_PR_GET_CHILD_SUBREAPER, before) or not _prctl(_PR_SET_CHILD_SUBREAPER, 1):
                return False
            _subreaper_before = before.value
        _subreaper_users += 1
        return True


def _release_subreaper() -> None:
    global _subreaper_users
    with _subreaper_lock:
        _subreaper_users -= 1
        if _subreaper_users == 0:  # as the caller had it (a process may be a subreaper of its own)
            _prctl(_PR_SET_CHILD_SUBREAPER, _subreaper_before)


@dataclass
class _Descendants:
    """The processes one launch started, at every depth, so that none outlives it.

    torchrun puts each worker in a session of its own, and a workload may start processes
    of its own (a helper server, ``setsid``, a double fork): a process group reaches none of
    them. While the launch runs this process is a child subreaper, so an orphan of the probe
    reparents here; the tree under the launcher is recorded as it runs (pid and start time,
    so a reused pid is never taken for one of ours). When the launch ends, what is left of
    it is stopped and reaped. Only processes recorded under the launcher, or children that
    appeared here during the launch with its token in their environment, are ever
    signalled: the caller's own children are not the probe's."""

    token: str
    enabled: bool
    before: frozenset[int] = frozenset()  # this process's children before the launch: the caller's
    launcher_pid: int | None = None
    launcher_start: int | None = None
    seen: dict[int, int] = field(default_factory=dict)  # pid -> start time of every descendant recorded
    scanned_at: float = -math.inf

    @classmethod
    def start(cls) -> "_Descendants":
        token = uuid.uuid4().hex
        if not _acquire_subreaper():
            return cls(token=token, enabled=False)  # not Linux: the process group alone, as before
        me = os.getpid()
        return cls(token=token, enabled=True,
                   before=frozenset(pid for pid, (ppid, _, _) in _process_table().items() if ppid == me))

    def record(self, *, now: bool = False) -> dict[int, tuple[int, int, str]]:
        """Add what now runs under the launcher (and under what was recorded) to ``seen``."""
        if not self.enabled or self.launcher_pid is None or (
                not now and time.monotonic() - self.scanned_at < _SCAN_INTERVAL_S):
            return {}
        self.scanned_at = time.monotonic()
        table = _process_table()
        me, token = os.getpid(), f"{LAUNCH_TOKEN_ENV}={self.token}".encode()
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        roots = [pid for pid, start in self.seen.items() if self._same(table, pid, start)]
        if self._same(table, self.launcher_pid, self.launcher_start):  # not a reused pid
            roots.append(self.launcher_pid)
        roots += [pid for pid in children.get(me, ()) if pid not in self.before and pid != self.launcher_pid
                  and pid not in self.seen and _has_token(pid, token)]
        reached: set[int] = set()
        while roots:
            pid = roots.pop()
            if pid in reached or pid not in table:
                continue
            reached.add(pid)
            if pid != self.launcher_pid:
                self.seen[pid] = table[pid][1]  # under the launch now, whatever held this pid before
            roots.extend(children.get(pid, ()))
        return table

    @staticmethod
    def _same(table: dict[int, tuple[int, int, str]], pid: int | None, start: int | None) -> bool:
        return pid is not None and pid in table and table[pid][1] == start

    def _alive(self) -> list[int]:
        table = self.record(now=True)
        return [pid for pid, start in self.seen.items() if self._same(table, pid, start) and table[pid][2] != "Z"]

    def _reap(self) -> None:
        """Collect the exit of every recorded process that ended as this process's child (an
        orphan reparented here), so no zombie is left; never the launcher (its Popen does)."""
        me = os.getpid()
        for pid, start in list(self.seen.items()):
            found = _stat(pid)
            if found is not None and found[0] == me and found[1] == start and found[2] == "Z":
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)

    def _signal(self, pids: list[int], sig: int) -> None:
        for pid in pids:
            if (found := _stat(pid)) is not None and found[1] == self.seen[pid]:  # not a reused pid
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)

    def _wait_gone(self, pids: list[int], timeout_s: float) -> list[int]:
        deadline = time.monotonic() + timeout_s
        while True:
            self._reap()
            left = [pid for pid in pids if (found := _stat(pid)) is not None and found[1] == self.seen[pid]
                    and found[2] != "Z"]
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.02)

    def finish(self) -> None:
        """Stop what the launch left running (SIGTERM, then SIGKILL), reap it, and give the
        subreaper flag back."""
        if not self.enabled:
            return
        try:
            if self.launcher_pid is not None:
                for _ in range(_SWEEP_ROUNDS):
                    alive = self._alive()
                    if not alive:
                        break
                    self._signal(alive, signal.SIGTERM)
                    left = self._wait_gone(alive, _LEFTOVER_GRACE_S)
                    self._signal(left, signal.SIGKILL)
                    self._wait_gone(left, 5.0)
                self._reap()
        finally:
            _release_subreaper()


def run_group(
    command: Sequence[str],
    *,
    env: dict[str, str],
    timeout_s: float,
    log_path: Path,
    poll: Callable[[], None] | None,
    grace_s: float = 5.0,
) -> LaunchOutcome:
    """Run ``command`` in its own process group with a timeout; output goes to ``log_path``."""
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = log_path.open("ab")
    except OSError as exc:
        raise StorageError.from_os_error(exc, path=log_path, doing="open the probe's log") from None
    began = time.monotonic()
    oom_before = oom_kill_count()
    descendants = _Descendants.start()
    env = {**env, LAUNCH_TOKEN_ENV: descendants.token}
    with log:
        try:
            try:
                proc = subprocess.Popen(
                    list(command),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
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
            descendants.launcher_pid = proc.pid
            descendants.launcher_start = None if (found := _stat(proc.pid)) is None else found[1]
            timed_out = False
            try:
                while proc.poll() is None:
                    descendants.record()
                    if poll is not None:
                        poll()
                    if time.monotonic() - began > timeout_s:
                        timed_out = True
                        descendants.record(now=True)
                        kill_group(proc, grace_s=grace_s)
                        break
                    try:
                        proc.wait(timeout=0.2)
                    except subprocess.TimeoutExpired:
                        pass
            except BaseException:
                descendants.record(now=True)
                kill_group(proc, grace_s=1.0)
                raise
        finally:
            # Normally, by a time-out, a fault or Ctrl-C: what the probe started ends with it.
            descendants.finish()
        if poll is not None:
            poll()
    oom_after = oom_kill_count()
    return LaunchOutcome(
        returncode=proc.returncode,
        timed_out=timed_out,
        wall_s=time.monotonic() - began,
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
