"""The job's own progress into its profile: step-time windows, evaluations, noise.

A training loop calls :meth:`Tracker.step` once per optimizer step (with the step's
wall time) and :meth:`Tracker.eval` after each validation. The tracker appends to the
profile — through :class:`cotune.profile.ProfileWriter`, so one flushed and fsync'ed
line per record, append-only, kill-safe — records tagged with the configuration they
ran at and with the job's name (``job``), which tells them apart from probes:

* ``step`` — the *median* of a window of step times (``window`` steps, or fewer when
  ``flush_every_s`` seconds have passed), with its inter-quartile range as
  ``step_time_spread_s`` and the window length as ``timed_steps``. One record per
  window keeps the profile small and the cost per step a list append; the window (and
  ``flush_every_s``) doubles after every :data:`WINDOW_DOUBLING_RECORDS` step records at
  one configuration, so a long job's records grow with the log of its steps; the first
  ``warmup_steps`` steps after the start or a reconfiguration are left out (compile,
  cache and allocator warm-up are not the steady state a plan is about);
* ``eval`` — one point of the job's own learning curve at its global batch, with the
  epochs since the job's start and the job's wall time ``elapsed_s``;
* ``noise`` — a gradient-noise-scale measurement, when the loop has one.

Only one process of a data-parallel job should write: every rank but 0 does nothing
(``rank``; by default read from the launcher's environment: torchrun's ``RANK``,
Horovod's and MPI's ranks, Lightning's ``LOCAL_RANK``/``NODE_RANK``, srun's
``SLURM_PROCID``, TensorFlow's ``TF_CONFIG``). Nothing here
imports torch: the tracker takes plain numbers.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os
import statistics
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Literal

from cotune._checks import (MAX_GRAD_STAT, MAX_MAGNITUDE, excerpt, integer, line_break_in, number, one_line_name,
                            plain_number)
from cotune.errors import InputError, StorageError, is_out_of_memory, warn_beside
from cotune.profile import (
    MAX_PROFILE_LINES, MIN_STEP_TIME_S, MOVE_CAUSES, EvalRecord, FailureRecord, NoiseRecord,
    ProfileLockedError, ProfileWriter, Record, StepRecord, WorkloadRecord, check_profile_path, read_profile,
)
from cotune.profile._profile import holds_records as _has_records

__all__ = ["Tracker", "TrackedConfig", "window_summary"]

#: Step records the job writes at one configuration before its window (and ``flush_every_s``)
#: doubles, again after each as many more. At a fixed window a 20 ms-step job wrote ~43,000
#: records a day and passed a service's 50,000-record limit (``cotune serve --max-records``)
#: in about a day; doubling, its records grow with the log of its steps: ~5,400 in a day,
#: ~14,000 in a year. ``cotune replan`` reads a configuration's step time as the median of its
#: windows weighted by their steps (``timed_steps``), which longer windows leave as it was.
WINDOW_DOUBLING_RECORDS = 1_000
# Doublings at most: 2**30 windows is far past any job's steps; bounded so the window stays an int of sane size.
_MAX_DOUBLINGS = 30


@dataclass(frozen=True)
class TrackedConfig:
    """The configuration a job runs at; every record it writes is tagged with it."""

    gpu: str
    workers: int
    local_batch: int
    hosts: int = 1
    accum_steps: int = 1
    market: str = "on_demand"

    def __post_init__(self) -> None:
        if not isinstance(self.gpu, str) or not self.gpu.strip():
            raise InputError(f"gpu must be a non-empty name such as 't4' or 'cpu', got {excerpt(self.gpu)}")
        for name in ("workers", "local_batch", "hosts", "accum_steps"):
            # Stored as the plain int: a numpy one (np.int64(8), a 0-d array) passes the check
            # but is no JSON number, and the first record written would fail.
            object.__setattr__(self, name, integer(getattr(self, name), where=name, ge=1))
        if self.hosts > self.workers:
            raise InputError(f"hosts ({self.hosts}) cannot exceed workers ({self.workers}): each host runs at least one worker")
        if not isinstance(self.market, str) or self.market not in ("on_demand", "spot"):
            raise InputError(f"market must be 'on_demand' or 'spot', got {excerpt(self.market)}")

    @property
    def global_batch(self) -> int:
        return self.workers * self.local_batch * self.accum_steps


# What a step record says of the configuration it ran at: (gpu, workers, hosts, local_batch,
# accum_steps, market).
_ConfigKey = tuple[str, int, int, int, int, str]


def _config_key(config: TrackedConfig | StepRecord) -> _ConfigKey:
    return (config.gpu, config.workers, config.hosts, config.local_batch, config.accum_steps, config.market)


def _check_fits(config: TrackedConfig, dataset_size: int) -> None:
    """A step holds at most the training set (every door's rule: the profiler, ``recommend``,
    ``replan``): a configuration above it is a slip in the arguments, and its records would
    make ``cotune replan`` refuse the job later, not now."""
    if config.global_batch > dataset_size:
        raise InputError(
            f"the job runs {config.workers} × {config.local_batch}"
            + (f" × {config.accum_steps} accumulation steps" if config.accum_steps > 1 else "")
            + f" = {config.global_batch:,} samples a step, more than the workload's {dataset_size:,} training samples: "
            "check workers, local_batch and accum_steps (or the workload's dataset_size)"
        )


def window_summary(step_times_s: list[float]) -> tuple[float, float]:
    """Median and inter-quartile range of a window of step times (seconds).

    The median, not the mean: one step stalled by a checkpoint, a garbage collection or
    a noisy neighbour must not move the job's step time.
    """
    if not step_times_s:
        raise InputError("a window needs at least one step time")
    if len(step_times_s) < 4:
        return float(statistics.median(step_times_s)), 0.0
    q1, q2, q3 = statistics.quantiles(step_times_s, n=4, method="inclusive")
    return float(q2), float(q3 - q1)


def _positive(name: str, value: object) -> float:
    return number(value, where=name, gt=0.0)


#: ``rank``'s default: the global rank a launcher sets for each process
#: (:data:`GLOBAL_RANK_VARIABLES`: torchrun's ``RANK``, Horovod's, MPI's); else
#: ``LOCAL_RANK`` and ``NODE_RANK`` (``GROUP_RANK``), which Lightning's launcher sets
#: instead; else srun's ``SLURM_PROCID``; else TensorFlow's ``TF_CONFIG`` (its chief, or
#: worker 0 without one); else 0 (a single process).
RANK_FROM_ENV = "auto"
#: A process's global rank, as its launcher sets it, in the order read: torchrun (and
#: DeepSpeed's, Accelerate's launchers), Horovod's horovodrun, then MPI — Open MPI's mpirun,
#: PMIx (Open MPI 5, srun --mpi=pmix) and MPICH / Intel MPI's Hydra.
GLOBAL_RANK_VARIABLES = ("RANK", "HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")


def _env_rank(name: str) -> int | None:
    env = os.environ.get(name)
    if env is None:
        return None
    if not env.strip().isdigit():
        raise InputError(f"the {name} environment variable is {excerpt(env)}, not a process rank: pass rank= (0 for the "
                         "process that records)")
    return int(env.strip())


def _tf_config_rank(text: str | None) -> int:
    """0 for the process a TensorFlow multi-worker job records from (its ``chief`` task, or
    ``worker`` 0 where the cluster has no chief), 1 for any other task, 0 without ``TF_CONFIG``."""
    if not text or not text.strip():
        return 0
    import json

    try:
        config = json.loads(text)
        task, cluster = config.get("task") or {}, config.get("cluster") or {}
        kind, index = task.get("type"), task.get("index", 0)
    except (ValueError, AttributeError):
        raise InputError(f"the TF_CONFIG environment variable is not the JSON TensorFlow reads ({excerpt(text)}): "
                         "fix it, or pass rank= (0 for the process that records)") from None
    if kind == "chief" or (kind == "worker" and index == 0 and "chief" not in cluster):
        return 0
    return 1


def _rank(rank: object) -> int:
    if rank == RANK_FROM_ENV:
        # Left out in a data-parallel job, every rank wrote (and all but one died of the
        # profile's lock): the launcher's variables say which process this is. Only
        # "rank 0 or not" matters, so a local rank on a node > 0 counts as some other rank.
        for name in GLOBAL_RANK_VARIABLES:
            global_rank = _env_rank(name)
            if global_rank is not None:
                return global_rank
        local = _env_rank("LOCAL_RANK")
        node = _env_rank("NODE_RANK")
        node = _env_rank("GROUP_RANK") if node is None else node
        if local is not None or node is not None:
            return 0 if not local and not node else max(local or 0, 1)
        # srun's task rank, after the per-process variables: a batch script's own step has
        # SLURM_PROCID 0, which every process a framework spawns from it inherits.
        slurm = _env_rank("SLURM_PROCID")
        if slurm is not None:
            return slurm
        return _tf_config_rank(os.environ.get("TF_CONFIG"))
    # os.environ["RANK"] is a string: "0" is rank 0, not "some other rank" that records nothing
    text = rank.strip() if isinstance(rank, str) else None
    if text is not None and text.isdigit():
        return int(text)
    if isinstance(rank, bool) or not isinstance(rank, numbers.Integral) or int(rank) < 0:
        raise InputError(f"rank must be a whole number >= 0 (the process rank, e.g. os.environ['RANK']), got {excerpt(rank)}")
    return int(rank)


MAX_JOB_NAME = 200  # a job name is written into every record


def _job_name(job: object) -> str:
    if not isinstance(job, str) or not job.strip() or len(job) > MAX_JOB_NAME or line_break_in(job):
        raise InputError(f"job must be a non-empty one-line name of at most {MAX_JOB_NAME} characters, got {excerpt(job)}")
    return job.strip()


def _gpu_name(gpu: object) -> str:
    return one_line_name(gpu, what="gpu", example="'t4' or 'cpu'").lower()


def _profile_path(path: object) -> Path:
    """The profile's path, or one line naming what was given instead (``Path(None)`` said
    "expected str, bytes or os.PathLike object, not NoneType", with a traceback)."""
    if not isinstance(path, (str, os.PathLike)):
        if path is None:
            raise InputError("profile_path must be a file path (a str or pathlib.Path), got None: an unset environment "
                             "variable gives None from os.environ.get(...): set it, or pass a path")
        raise InputError(f"profile_path must be a file path (a str or pathlib.Path), got {excerpt(path)}: pass the "
                         "profile's path")
    checked = Path(path)
    if "\0" in str(checked):
        raise InputError(f"profile_path holds a NUL character ({excerpt(str(checked))}), which no file name can: "
                         "pass the profile's path")
    return checked


def _count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def _move_cause(cause: object) -> str:
    if not isinstance(cause, str) or cause not in MOVE_CAUSES:  # an array's == is no answer to "in"
        raise InputError(f"cause must be one of {', '.join(map(repr, MOVE_CAUSES))} (why the job moved); got "
                         f"{excerpt(cause)}")
    return str(cause)


# Every tracker made, weakly: its lock is made anew in a fork() child, where a lock another
# thread of the parent held at the fork stays held (that thread did not come) and the child's
# first call waited on it for ever.
_TRACKERS: "weakref.WeakSet[Tracker]" = weakref.WeakSet()


def _new_locks_in_fork_child() -> None:
    for tracker in list(_TRACKERS):
        tracker._lock = threading.RLock()


os.register_at_fork(after_in_child=_new_locks_in_fork_child)


class Tracker:
    """Append a running job's step, eval and noise records to its profile.

    Parameters
    ----------
    profile_path : the profile to append to. If it does not exist (or is empty),
        ``workload`` must be given and is written first.
    gpu, workers, local_batch, hosts, accum_steps, market : the configuration the
        job runs at (change it with :meth:`reconfigure` after a restart).
    job : name written into every record (default: the workload name); readers use it
        to tell the job's own records from probes.
    window : steps per step record (the median of the window is written), doubled after
        every :data:`WINDOW_DOUBLING_RECORDS` step records of the job at one configuration
        (those the profile held at the start included; :attr:`current_window`).
    flush_every_s : write a step record after this many seconds even if the window is
        not full, so a long step loop still reports (and a kill loses at most this much
        of not-yet-aggregated timing); doubled with the window.
    warmup_steps : steps ignored after the start and after each reconfiguration.
    epochs_done : epochs already trained when the tracker starts (a resumed job).
    elapsed_s_done : the job's wall time when the tracker starts (a resumed job: seconds
        since the job first started, the time it was down included — its deadline counts
        from then). Default: for a resumed job (``epochs_done`` > 0) whose evaluations the
        profile holds, the wall time of its last one (a lower bound: the time down after it
        is not known); else 0.
    cause : why a resumed job runs at this configuration now, when it differs from the
        one it ran at before: ``"revocation"`` (the provider took workers) or
        ``"replan"`` (chosen). Written on the first step record, like
        :meth:`reconfigure`'s.
    schedule_epochs : where the job's learning-rate schedule ends, in epochs from its start
        (its configured epochs; None: not known). Written with every evaluation, so
        ``cotune replan`` counts a target not reached by then as missed. The Lightning and
        Keras callbacks fill it from the trainer's ``max_epochs`` / ``fit(epochs=)`` when
        it is left out, in passes over the data (an epoch of ``steps_per_epoch`` or
        ``limit_train_batches`` batches is part of one).
    rank : process rank (an int, or the string ``os.environ["RANK"]`` holds); every rank but
        0 records nothing. Default ``"auto"``: the ``RANK`` environment variable torchrun
        sets (else ``LOCAL_RANK`` and ``NODE_RANK``, as Lightning's launcher sets them, else
        TensorFlow's ``TF_CONFIG``: its chief, or worker 0 without one), else 0. A profile
        another *process* is writing (two ranks tracking) gives one ``RuntimeWarning`` and
        this tracker records nothing (``errors="raise"``: the
        :class:`~cotune.profile.ProfileLockedError`); one a tracker of this process holds
        (not closed) is that error, whatever ``errors`` says.
    fsync : every record is written and flushed to the operating system before the call
        returns, so it survives a kill of the process at any moment. ``"background"``
        (default) then fsyncs it to the disk from a helper thread, so the training
        thread does not wait on the disk (a few milliseconds per record on a busy
        machine; in a ``fork()`` child that trains with this tracker, where the thread
        did not follow, inline); ``"each"`` fsyncs on the calling thread; ``"none"``
        never (tests).
    errors : what a write the storage refuses (a full disk, a file-size limit, a profile it
        will not open for writing: read-only, immutable) does — or a failed fsync of the
        helper thread (reported at the next record, or by :meth:`close`), or a failed close.
        ``"warn"`` (default): one ``RuntimeWarning``, tracking stops and training goes on —
        the records written so far are intact; ``"raise"``: the ``StorageError`` reaches
        the loop. The same warning stops tracking when the profile reaches the readers'
        cap of lines (:data:`cotune.profile.MAX_PROFILE_LINES`).
    clock : seconds since an arbitrary origin (``time.monotonic``); injectable for tests.

    Use as a context manager, or call :meth:`close` (it writes the last partial window).
    :meth:`close` waits for the last fsync and reports its failure, or a failure to close
    the profile, by ``errors`` (the records may not be on disk); a ``with`` block that ends
    in an exception keeps that exception, and such a failure is a ``RuntimeWarning`` beside
    it.

    One tracker may be called from several threads (a training loop and a framework's
    callback thread): each call runs whole under the tracker's lock, so no step is lost
    from a window or the epochs counted, and no record is torn or written twice. The
    background fsync runs outside it: no call waits on the disk. Calls after :meth:`close`
    (from any thread) are refused as after a close from the same one.
    """

    def __init__(
        self,
        profile_path: str | os.PathLike[str],
        *,
        gpu: str,
        workers: int,
        local_batch: int,
        hosts: int = 1,
        accum_steps: int = 1,
        market: Literal["on_demand", "spot"] = "on_demand",
        workload: WorkloadRecord | None = None,
        job: str | None = None,
        window: int = 100,
        flush_every_s: float = 60.0,
        warmup_steps: int = 5,
        epochs_done: float = 0.0,
        elapsed_s_done: float | None = None,
        schedule_epochs: float | None = None,
        cause: Literal["replan", "revocation"] | None = None,
        rank: int | str = RANK_FROM_ENV,
        fsync: Literal["background", "each", "none"] = "background",
        errors: Literal["warn", "raise"] = "warn",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # One thread at a time in the tracker's calls (a training loop and a framework's
        # callback thread, or the user's own threads): a step's counters and window, and a
        # record's write, are one step each. Reentrant: eval() flushes, close() flushes.
        self._lock = threading.RLock()
        _TRACKERS.add(self)
        self.config = TrackedConfig(
            gpu=_gpu_name(gpu), workers=workers, local_batch=local_batch,
            hosts=hosts, accum_steps=accum_steps, market=market,
        )
        window = integer(window, where="window", ge=1)
        warmup_steps = integer(warmup_steps, where="warmup_steps", ge=0)
        self._flush_every_s = _positive("flush_every_s", flush_every_s)
        epochs_done = number(epochs_done, where="epochs_done", ge=0.0)
        self._elapsed_at_start = 0.0 if elapsed_s_done is None else number(
            elapsed_s_done, where="elapsed_s_done", ge=0.0, what="a number of seconds")
        self.schedule_epochs = schedule_epochs
        self.path = _profile_path(profile_path)
        self.window = window
        self.warmup_steps = warmup_steps
        self.enabled = _rank(rank) == 0
        # A fork() child that trains with this tracker (multiprocessing's "fork", Lightning's
        # "ddp_fork") inherits rank 0's verdict: it reads its own rank at its first record.
        self._rank_given: int | str = rank
        self._pid = os.getpid()
        self._clock = clock
        self._started = clock()
        self._window: list[float] = []
        self._window_began = self._started
        # Step records of the job at each configuration (the profile's at the start, then
        # those written here): the window doubles with them (WINDOW_DOUBLING_RECORDS).
        self._records_at: dict[_ConfigKey, int] = {}
        # 2 ** doublings at the configuration ``_scale_for`` (the TrackedConfig object it was
        # read for; None: read it again), so a step does not rebuild the configuration's key.
        self._scale = 1
        self._scale_for: TrackedConfig | None = None
        self._skip = warmup_steps
        # The warm-up steps' times at the current configuration, kept until warm-up ends: an
        # evaluation before then has no other timing to put the configuration on record with.
        self._warmup_times_s: list[float] = []
        self._cause = None if cause is None else _move_cause(cause)
        self._samples = 0.0
        self._pass_began = 0.0  # samples counted when the current pass over the data began
        # Whether a step record at the current configuration is written: an evaluation
        # before the first one (a full window is 100 steps; an epoch may be fewer) left the
        # records naming the configuration the job ran at before, which `cotune replan` read.
        self._config_recorded = False
        # The configuration of the job's last step record (in the profile, or written here):
        # an evaluation at another one before any step there is timed is held in
        # _held_evals and written after the first step record there (see eval()).
        self._recorded_config: _ConfigKey | None = None
        self._held_evals: list[EvalRecord] = []
        # Whether this tracker runs a restart (the profile already holds the job's records) or
        # has moved (reconfigure()): its first steps at a configuration are then the restart's
        # cold ones, never written as a step time — not only once a step record exists.
        self._restarted = cause is not None or float(epochs_done) > 0
        self._epochs_at_start = float(epochs_done)
        self._last_eval_epoch = -math.inf
        self._warned_back = False
        self.records_written = 0
        self._writer: ProfileWriter | None = None
        self._syncer: _BackgroundSync | None = None
        if not isinstance(fsync, str) or fsync not in ("background", "each", "none"):
            raise InputError(f"fsync must be 'background', 'each' or 'none', got {excerpt(fsync)}")
        if not isinstance(errors, str) or errors not in ("warn", "raise"):
            raise InputError(f"errors must be 'warn' or 'raise', got {excerpt(errors)}")
        self.errors = errors
        if workload is not None and not isinstance(workload, WorkloadRecord):
            raise InputError(f"workload must be a cotune.profile.WorkloadRecord (name=..., dataset_size=...), got "
                             f"{excerpt(workload)}")
        self.dataset_size: int | None = None
        # the profile reader's own rule for the field: a record it refuses would make the
        # whole profile unreadable, probes included
        self.job = None if job is None else _job_name(job)
        self._lines = 0  # lines in the profile, kept under the reader's cap
        if not self.enabled:
            return
        check_profile_path(self.path)  # a directory or a device: named, not an IsADirectoryError from open()
        existing = _has_records(self.path)
        held_epochs: list[float] = []
        if existing:
            # Read once: the workload must match, and its dataset size turns samples into epochs.
            profile = read_profile(self.path)
            tracked = self.job or profile.workload.name
            held_evals = [e for e in profile.evals if e.job is not None and e.job == tracked]
            held_epochs = [e.epoch for e in held_evals]
            own_steps = [s for s in profile.steps if s.job is not None and s.job == tracked]
            self._recorded_config = _config_key(own_steps[-1]) if own_steps else None
            for s in own_steps:
                key = _config_key(s)
                self._records_at[key] = self._records_at.get(key, 0) + 1
            # A failure record names no job: a restart after an out-of-memory in the first steps
            # says so by its cause= or epochs_done= (below).
            self._restarted = self._restarted or bool(own_steps or held_evals)
            if elapsed_s_done is None and self._epochs_at_start > 0:
                # A resumed job: its clock goes on from its last evaluation's (at least), or a
                # re-plan would think almost the whole deadline is left.
                self._elapsed_at_start = max((e.elapsed_s for e in held_evals if e.elapsed_s is not None), default=0.0)
            differs = None if workload is None else profile.workload.differs_from(workload)
            if differs is not None:
                # By its identity (name, dataset size, metric, goal): a record written without the
                # profile's provenance (its source) is the same workload. It used to compare every
                # field and say "holds workload 'x', not 'x'".
                held = f"workload {profile.workload.name!r}" + (
                    "" if differs == "name" else f" with {differs} {getattr(profile.workload, differs)!r}")
                raise InputError(f"{self.path}: holds {held}, not {getattr(workload, differs)!r}: track into that "
                                 "workload's profile or a new file")
            workload = profile.workload
        elif workload is None:
            raise InputError(
                f"{self.path}: no profile yet, so the tracker cannot know the workload: pass "
                "workload=WorkloadRecord(name=..., dataset_size=...) or track into an existing profile"
            )
        self.dataset_size = workload.dataset_size
        _check_fits(self.config, self.dataset_size)
        if self.job is None:
            self.job = workload.name
        if held_epochs and max(held_epochs) > self._epochs_at_start + 1e-9:
            # A resumed job that did not say how far it had come (or a new run under the old
            # job's name): its evaluations would go back in epochs, and a re-plan would read
            # one curve that jumps back.
            warnings.warn(
                f"cotune tracker: {self.path} already holds the evaluations of job {self.job!r} up to epoch "
                f"{max(held_epochs):.4g}, and this tracker counts from epoch {self._epochs_at_start:g}: pass "
                "epochs_done= to resume that job (its epochs count from the job's start), or job= to track a new one",
                RuntimeWarning, stacklevel=2)
        writer = ProfileWriter(self.path, fsync=fsync == "each")
        try:
            writer.open()
        except ProfileLockedError as exc:
            # A writer of this process holds it: a Tracker not closed, as a notebook cell run
            # again leaves. A bug to fix here and now (the error says close the first one):
            # a warning scrolled away while the new tracker recorded nothing.
            if errors == "raise" or exc.holder_pid == os.getpid():
                raise
            # Another process tracks this job (another rank): the training goes on untracked
            # here, as after any refused write.
            warnings.warn(f"cotune tracker: {exc}; this process records nothing (in a data-parallel job only rank 0 "
                          "should track: pass rank=)", RuntimeWarning, stacklevel=2)
            self.enabled = False
            return
        except StorageError as exc:
            if errors == "raise":
                raise
            # A profile the storage will not open for writing (a read-only mount or ConfigMap,
            # an immutable file) is a refused write like a full disk: the training goes on
            # untracked, said once.
            warnings.warn(f"cotune tracker: {exc}: this job is not tracked and training goes on", RuntimeWarning,
                          stacklevel=2)
            self.enabled = False
            return
        self._writer = writer
        self._lines = _count_lines(self.path)
        if fsync == "background":
            self._syncer = _BackgroundSync(self.path)
        if not existing:
            self._write(workload)

    # -- context manager -------------------------------------------------------------
    def __enter__(self) -> "Tracker":
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            self.close()
        else:
            self._end_with(exc)

    @property
    def schedule_epochs(self) -> float | None:
        """Where the job's learning-rate schedule ends (epochs from its start), or None."""
        return self._schedule_epochs

    @schedule_epochs.setter
    def schedule_epochs(self, value: float | None) -> None:
        self._schedule_epochs = None if value is None else number(
            value, where="schedule_epochs", gt=0.0, what="a number of epochs")

    # -- what the loop calls -----------------------------------------------------------
    @property
    def epoch(self) -> float:
        """Epochs since the job's start: epochs_done at start + samples stepped / dataset size."""
        if self.dataset_size is None:
            return self._epochs_at_start
        return self._epochs_at_start + self._samples / self.dataset_size

    @property
    def current_window(self) -> int:
        """Steps per step record now: ``window``, doubled after every
        :data:`WINDOW_DOUBLING_RECORDS` step records of the job at its configuration."""
        return self.window * 2 ** self._doublings()

    def _doublings(self) -> int:
        written = self._records_at.get(_config_key(self.config), 0)
        return min(written // WINDOW_DOUBLING_RECORDS, _MAX_DOUBLINGS)

    @property
    def elapsed_s(self) -> float:
        """The job's wall time: ``elapsed_s_done`` at the start plus the time since."""
        return self._elapsed_at_start + self._clock() - self._started

    def end_pass(self) -> None:
        """The loop finished a pass over the training data (a framework's epoch end).

        Frameworks give an epoch's last micro-batch only the samples left (``drop_last``
        off), but a step is counted as ``workers × local_batch`` per micro-batch: the count
        overshoots the pass by less than one micro-batch of every worker. Such an overshoot
        is trimmed here, so the epochs counted stay the passes; a longer one (an epoch of
        more steps than a pass, a repeated dataset) is kept as counted. The Lightning, Keras
        and Transformers callbacks call it at each epoch's end.
        """
        with self._lock:
            if not self.enabled or self.dataset_size is None:
                return
            c = self.config
            over = self._samples - self._pass_began - self.dataset_size
            if 0.0 < over < c.workers * c.local_batch:
                self._samples -= over
            self._pass_began = self._samples

    def __getstate__(self) -> object:
        # Lightning's ddp_spawn (and any multiprocessing spawn) pickles the callbacks: the
        # open profile and its sync thread cannot travel, and a copy writing beside this one
        # would break the one-writer rule. Said in one line instead of "cannot pickle FileIO".
        raise InputError("a cotune Tracker cannot be sent to another process (it holds the open profile): with "
                         "Lightning use strategy='ddp' (it launches the ranks as scripts), not 'ddp_spawn'; elsewhere "
                         "create the Tracker in the process that trains")

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run (or tracking stopped): nothing more is recorded."""
        return self._writer is None

    def step(self, *, step_time_s: float, micro_batches: int | None = None) -> None:
        """Record one optimizer step of ``step_time_s`` seconds (written per window).

        ``micro_batches``: the micro-batches this step accumulated when it is not
        ``accum_steps`` — the partial step a framework takes at the end of an epoch — so
        the epochs counted stay the passes over the data.
        """
        # `with`, never acquire() then try: a KeyboardInterrupt (or any signal handler's exception)
        # raised as acquire() returns, before the try, left the lock held for good, and every
        # other thread's next call (a callback thread's eval, a close) waited for ever.
        with self._lock:
            if not self.enabled:
                return
            if self._writer is None:
                raise InputError("the tracker is closed: create a new Tracker to record more")
            # The common case — a plain float in range — in two comparisons (NaN fails both); the
            # general check, which reads numpy scalars and tensors and words the error, costs as
            # much as the rest of a step's bookkeeping together.
            if not (type(step_time_s) is float and MIN_STEP_TIME_S <= step_time_s <= MAX_MAGNITUDE):
                step_time_s = number(step_time_s, where="step_time_s", ge=MIN_STEP_TIME_S)  # the profile's own floor
            c = self.config
            if micro_batches is None:
                self._samples += c.global_batch
            else:
                self._samples += c.workers * c.local_batch * integer(micro_batches, where="micro_batches", ge=1)
            if self._skip > 0:
                self._skip -= 1
                self._warmup_times_s.append(step_time_s)
                if self._skip == 0:
                    self._window_began = self._clock()
                    self._warmup_times_s = []
                return
            self._window.append(step_time_s)
            if self._scale_for is not c:  # a new configuration, or a record written since
                self._scale, self._scale_for = 2 ** self._doublings(), c
            scale = self._scale
            if (len(self._window) >= self.window * scale
                    or self._clock() - self._window_began >= self._flush_every_s * scale):
                self.flush()

    def eval(self, *, metric: float, epoch: float | None = None, grad_sqr: float | None = None,
             grad_var: float | None = None) -> EvalRecord | None:
        """Record one evaluation of the job at ``epoch`` (default: the epochs counted from steps).

        ``metric`` may be NaN or infinite for a diverged run (the profile keeps it). At a
        configuration other than the job's last step record's, with no step there timed
        past warm-up yet (a checkpoint evaluated before training resumes, an evaluation
        during the warm-up after a restart or move), the record is held and written after
        the first step record there (the first window after warm-up); one still held
        when :meth:`close`, :meth:`reconfigure` or :meth:`out_of_memory` comes is left out,
        with one ``RuntimeWarning`` (the warm-up steps' times are never written for it: they
        are a restart's cold steps). Returns the record.
        """
        with self._lock:
            if not self.enabled:
                return None
            if type(metric) is not float:  # a plain float, the common case, is one already (its magnitude: below)
                metric = plain_number(metric)  # a 0-d tensor or array, as a loop's mean accuracy is, as step_time_s takes it
                if isinstance(metric, bool) or not isinstance(metric, numbers.Real):
                    raise InputError(f"metric: must be a number (NaN allowed for a diverged run), got {excerpt(metric)}")
                try:
                    metric = float(metric)
                except OverflowError:  # an int beyond float range
                    metric = MAX_MAGNITUDE * 10
            if math.isfinite(metric) and abs(metric) > MAX_MAGNITUDE:
                raise InputError(
                    f"metric: must be a finite number of at most {MAX_MAGNITUDE:g} in magnitude (NaN or ±inf for a "
                    f"diverged run), got {excerpt(metric)}"
                )
            epoch = self.epoch if epoch is None else number(epoch, where="epoch", ge=0.0, what="a number of passes over the data")
            if epoch < self._last_eval_epoch - 1e-9 and not self._warned_back:
                # Said once, and still written: the loop's epoch counter may have restarted.
                self._warned_back = True
                warnings.warn(f"cotune tracker: an evaluation at epoch {epoch:.4g} after one at {self._last_eval_epoch:.4g}: "
                              "a job's epochs count from its start (pass the epochs since the start, or leave epoch= out "
                              "to count them from the steps)", RuntimeWarning, stacklevel=2)
            self._last_eval_epoch = max(self._last_eval_epoch, epoch)
            # Moved (a restart or reconfigure() to another configuration) with no step record here
            # yet: the steps so far are the move's cold ones (CUDA and NCCL start-up,
            # torch.compile), and written as the evaluation's step record they were the job's
            # step time for a re-plan. Only a window past warm-up is written; else it is held.
            # After a restart or a move the cold steps' times are never written, not only where an
            # earlier step record exists (an out-of-memory in the first steps, then a smaller
            # batch, wrote 20 s a step). At the configuration of the job's last step record (the
            # most common restart), or with no step record of the job at all, the evaluation names
            # no other configuration: it is written at once, after a window past warm-up if any.
            restarted = self._restarted and not self._config_recorded
            moved = (restarted and self._recorded_config is not None
                     and self._recorded_config != _config_key(self.config))
            if restarted:
                self.flush()
            elif not self._config_recorded:
                self._flush_even_warmup()  # a new job's first configuration, on record before its evaluation
            grad_sqr = None if grad_sqr is None else number(grad_sqr, where="grad_sqr", ge=0.0, magnitude=MAX_GRAD_STAT)
            grad_var = None if grad_var is None else number(grad_var, where="grad_var", ge=0.0, magnitude=MAX_GRAD_STAT)
            rec = EvalRecord(
                global_batch=self.config.global_batch, epoch=float(epoch), metric=float(metric), grad_sqr=grad_sqr,
                grad_var=grad_var, job=self.job, elapsed_s=round(self.elapsed_s, 3), schedule_epochs=self._schedule_epochs,
            )
            if moved and not self._config_recorded:
                # No step timed here past warm-up yet (a checkpoint evaluated before training
                # resumes at a new configuration, or an evaluation during the warm-up): written
                # now, the evaluation would follow step records of the configuration the job ran
                # at before, and a re-plan read a move that never happened. Held until the first
                # step record here, the first window after warm-up (flush()): the first steps
                # after a restart are what warm-up leaves out, and one written as the step time
                # had a re-plan see the job a hundred times slower. A job with no step record
                # yet names no configuration: its evaluation is written at once.
                self._held_evals.append(rec)
                return rec
            self._write(rec)
            return rec

    def noise(self, *, b_noise: float, epoch: float | None = None) -> NoiseRecord | None:
        """Record a gradient-noise-scale measurement (samples) at the job's global batch."""
        with self._lock:
            if not self.enabled:
                return None
            rec = NoiseRecord(
                b_noise=_positive("b_noise", b_noise), global_batch=self.config.global_batch,
                epoch=self.epoch if epoch is None else number(epoch, where="epoch", ge=0.0), job=self.job,
            )
            self._write(rec)
            return rec

    def out_of_memory(self, message: str = "") -> FailureRecord | None:
        """Record that the job ran out of memory at its configuration: a ``failure`` record
        of kind ``oom`` at its GPU type, workers, hosts and local batch (the micro-batch a
        step holds), written after the step window it ends. Local batches from it up are
        then out of the search on that GPU type — ``cotune recommend`` caps them, and
        ``cotune replan`` moves the job off its configuration instead of staying — until a
        step at it or above is recorded later (:func:`cotune.profile.oom_superseded`).

        ``with Tracker(...)`` calls it when the block ends in an out-of-memory
        (:func:`cotune.errors.is_out_of_memory`: torch's ``OutOfMemoryError``, TensorFlow's
        ``ResourceExhaustedError``, ``MemoryError``, "out of memory" texts), and so does the
        Lightning callback; a loop that catches the error itself calls it.
        """
        with self._lock:
            if not self.enabled:
                return None
            if self._writer is None:
                raise InputError("the tracker is closed: create a new Tracker to record more")
            if not isinstance(message, str):
                raise InputError(f"message: must be text, got {excerpt(message)}")
            self.flush()  # the steps before it first: they ran, and do not supersede it
            # Everything at this configuration that was waiting goes now, before the failure:
            # written after it (by close(), an eval()), a step record at its batch superseded
            # it, and a re-plan kept the job where it runs out of memory. The warm-up steps'
            # times are never written (see close()), so held evaluations are left out.
            self._warmup_times_s = []
            self._drop_held_evals(why="the job ran out of memory")
            text = " ".join(message.split())  # one line: a CUDA message spans several
            c = self.config
            rec = FailureRecord(gpu=c.gpu, workers=c.workers, local_batch=c.local_batch, failure="oom", hosts=c.hosts,
                                message=text[:500])
            self._write(rec)
            return rec

    def reconfigure(self, *, gpu: str | None = None, workers: int | None = None, local_batch: int | None = None,
                    hosts: int | None = None, accum_steps: int | None = None, market: str | None = None,
                    cause: Literal["replan", "revocation"] = "replan") -> None:
        """The job now runs at another configuration (after a restart or a revocation).

        The window so far is written at the old configuration; warm-up is skipped again.
        ``cause`` says why it moved — ``"replan"`` (chosen) or ``"revocation"`` (the
        provider took workers) — and is written on the first step record at the new
        configuration: ``cotune replan`` backs its margins off after the job moves back
        to a configuration it left by choice, not after it recovers from a revocation
        (:func:`cotune.solver.count_returns`). Moved twice with no record between, a
        revocation among the moves is what is written (the job left its last recorded
        configuration by force).
        """
        with self._lock:
            cause = _move_cause(cause)
            if self.enabled and self._writer is None:  # as step() and eval(): a closed tracker records nothing more
                raise InputError("the tracker is closed: create a new Tracker to record more")
            c = self.config
            moved = TrackedConfig(
                gpu=(c.gpu if gpu is None else _gpu_name(gpu)), workers=c.workers if workers is None else workers,
                local_batch=c.local_batch if local_batch is None else local_batch, hosts=c.hosts if hosts is None else hosts,
                accum_steps=c.accum_steps if accum_steps is None else accum_steps,
                market=c.market if market is None else market,
            )
            if self.dataset_size is not None:
                _check_fits(moved, self.dataset_size)  # refused before anything is written: the old window stays open
            self.flush()  # never the warm-up steps' times: see close()
            self._drop_held_evals(why="the job moved on")
            self.config = moved
            self._config_recorded = False
            self._restarted = True
            self._skip = self.warmup_steps
            self._warmup_times_s = []
            self._cause = "revocation" if "revocation" in (cause, self._cause) else cause

    def _correct_accum_steps(self, accum_steps: int) -> None:
        """``accum_steps`` as the framework runs it, found by a callback at the start of a
        ``fit()`` (the tracker was told another): a correction of what the records say, not
        a move — no ``cause``, no second warm-up. Refused (:class:`InputError`, the tracker
        unchanged) where the step would hold more than the training set."""
        with self._lock:
            moved = replace(self.config, accum_steps=accum_steps)
            if self.dataset_size is not None:
                _check_fits(moved, self.dataset_size)
            self.flush()  # a window of an earlier fit() ran at the value it had
            self.config = moved
            # Evaluations waiting for this configuration's first step ran at the corrected batch too.
            self._held_evals = [replace(e, global_batch=moved.global_batch) for e in self._held_evals]
            self._config_recorded = False

    def _flush_even_warmup(self) -> None:
        """For an evaluation at a new job's first configuration: write the window, or, where
        every step there so far was warm-up (an epoch or validation interval shorter than
        ``warmup_steps``), the warm-up steps' times: the only ones there are. Never after a
        restart or a move, whose first steps are cold ones (see eval())."""
        if not self._window and self._warmup_times_s:
            self._window, self._warmup_times_s = self._warmup_times_s, []
        self.flush()

    def flush(self) -> StepRecord | None:
        """Write the current window as one step record (nothing if it is empty)."""
        with self._lock:
            if not self.enabled or not self._window:
                return None
            median, spread = window_summary(self._window)
            c = self.config
            rec = StepRecord(
                gpu=c.gpu, workers=c.workers, local_batch=c.local_batch, step_time_s=median, hosts=c.hosts,
                accum_steps=c.accum_steps, market=c.market, step_time_spread_s=spread, timed_steps=len(self._window),
                job=self.job, cause=self._cause,
            )
            self._cause = None
            self._window = []
            self._window_began = self._clock()
            self._write(rec)
            self._config_recorded = True
            self._recorded_config = _config_key(c)
            self._records_at[self._recorded_config] = self._records_at.get(self._recorded_config, 0) + 1
            self._scale_for = None  # the window's doubling is read again at the next step
            held, self._held_evals = self._held_evals, []
            for evaluation in held:  # evaluations that waited for this configuration's first step record
                self._write(evaluation)
            return rec

    def close(self) -> None:
        """Write the last partial window, wait for the last background fsync, and close the profile.

        A failure of that fsync or of closing the profile (``EIO``, ``ENOSPC``: the records
        may not be on disk) follows ``errors``: ``"raise"``, a
        :class:`~cotune.errors.StorageError`; ``"warn"``, one ``RuntimeWarning``. Either
        comes once the profile is closed, its lock released and the helper thread ended:
        nothing is left open, and a second ``close()`` does nothing. A fault already
        reported (by the write or the step that met it) is not reported again."""
        self._close(raising=None)

    def _close(self, *, raising: BaseException | None) -> None:
        """:meth:`close`; ``raising``: the exception the caller is ending with, which a storage
        fault met while closing never replaces (it is a warning beside it)."""
        with self._lock:
            if self._writer is None:
                return
            try:
                # The window only, never the warm-up steps' times: closed (or moved) during the
                # warm-up after a restart, those are its cold steps (CUDA and NCCL start-up,
                # torch.compile), and written they were the job's step time for a re-plan, a
                # hundred times too slow. Evaluations held for this configuration's first window
                # then have no step record to follow, and are left out with a warning.
                self.flush()
                self._drop_held_evals(why="the tracker closed")
            except BaseException as exc:
                self._release_handles(raising=exc)  # the flush's own error is the one raised
                raise
            self._release_handles(raising=raising)

    def _release_handles(self, *, raising: BaseException | None) -> None:
        """Close the profile and end the fsync thread, each whatever the other raised; then
        report the first storage fault met, by ``errors`` (or beside ``raising``)."""
        # Taken before closing: a write the storage refused inside flush() has already
        # stopped tracking and closed them (_stop), and the training must not die of
        # closing them twice.
        writer, self._writer = self._writer, None
        syncer, self._syncer = self._syncer, None
        failed: StorageError | None = None
        for handle in (writer, syncer):
            if handle is None:
                continue
            try:
                handle.close()
            except StorageError as exc:
                failed = failed or exc
        if failed is None:
            return
        if raising is not None:
            warn_beside(failed, raising=raising, stacklevel=4)
        elif self.errors == "raise":
            raise failed
        else:
            warnings.warn(f"cotune tracker: {failed}", RuntimeWarning, stacklevel=4)

    def _end_with(self, exc: BaseException, *, close: bool = True) -> None:
        """The training ends in ``exc``: an out-of-memory is recorded (a fact the next plan
        must know: cotune replan moves the job off its configuration), then the tracker is
        closed (``close=False``: its window flushed). Nothing raised here takes the place of
        ``exc``: a storage fault meanwhile is a ``RuntimeWarning`` beside it, whatever
        ``errors`` says. ``with Tracker`` and the Lightning callback's ``on_exception``."""
        if is_out_of_memory(exc):
            try:
                self.out_of_memory(f"{type(exc).__name__}: {exc}")
            except StorageError as failed:
                warn_beside(failed, raising=exc, stacklevel=3)
            except Exception:  # noqa: BLE001 - a closed tracker, say: never in the way of exc itself
                pass
        try:
            if close:
                self._close(raising=exc)
            else:
                self.flush()
        except StorageError as failed:
            warn_beside(failed, raising=exc, stacklevel=3)

    def _drop_held_evals(self, *, why: str) -> None:
        """Evaluations held for a configuration at which no step was then recorded: not
        written (one warning), as the records would name the configuration before as the
        one they ran at. Such an evaluation is of the checkpoint the job ran on before."""
        self._check_rank_in_fork_child()
        if not self._held_evals or not self.enabled:
            return
        held, self._held_evals = self._held_evals, []
        c = self.config
        warnings.warn(
            f"cotune tracker: {len(held)} evaluation(s) at global batch {c.global_batch:,} (epoch "
            f"{held[-1].epoch:.4g}) not written: {why} before any step at {c.workers} × {c.local_batch} on {c.gpu} was "
            "timed past warm-up, and without one the records would name the configuration the job ran at before as "
            "its current one; "
            "evaluate after the first step at a new configuration", RuntimeWarning, stacklevel=3)

    def _check_rank_in_fork_child(self) -> None:
        """In a fork() child's first record (or warning): its own rank, by the rule the
        tracker was made with. Every rank a "fork" launcher starts inherits the parent's
        tracker, and each wrote its records into the one profile; a rank other than 0 now
        records nothing, silently, as one that made its own tracker."""
        if self._pid == os.getpid():
            return
        self._pid = os.getpid()
        if self.enabled and _rank(self._rank_given) != 0:
            self.enabled = False
            self._window = []
            self._warmup_times_s = []
            self._held_evals = []

    def _write(self, record: Record) -> None:
        self._check_rank_in_fork_child()
        if not self.enabled:
            # Tracking stopped earlier in this call (an eval's or an out-of-memory's flush()
            # the storage refused): said once already, and the training goes on.
            return
        if self._writer is None:
            raise InputError("the tracker is closed: create a new Tracker to record more")
        if self._lines >= MAX_PROFILE_LINES:
            self._stop(f"{self.path} holds {MAX_PROFILE_LINES:,} lines, as many as a profile may (every reader refuses "
                       "more): tracking stops; track into a new profile, or raise window= so fewer step records are written")
            return
        try:
            self._writer.write(record)
            self._lines += 1
            self.records_written += 1
            if self._syncer is not None:
                # A sync that failed in the background (EIO, a late ENOSPC) is reported here:
                # under errors="warn" it stops tracking like a failed write, never the training.
                self._syncer.request()
        except StorageError as exc:
            if self.errors == "raise":
                raise
            self._stop(f"{exc}: tracking stops and training goes on; the records written so far are intact")
            return

    def _stop(self, why: str) -> None:
        """Stop tracking for good, said once: the job's training must not die of its tracker."""
        warnings.warn(f"cotune tracker: {why}", RuntimeWarning, stacklevel=3)
        self.enabled = False
        self._window = []
        self._held_evals = []
        # Nothing is left to write (tracking stopped): closing only releases the handles, and
        # a fault there not yet reported (the last sync's) follows `errors` as close()'s does.
        self.close()


def _never_preempting() -> None:
    """Run the calling thread under Linux's SCHED_BATCH where it can: a thread woken under
    the default policy may preempt the one that woke it, and on a busy machine the training
    thread that asked for a sync then lost the CPU for milliseconds inside its tracker call
    (``benchmarks/tracker_breakdown.py --wake`` measures it). A SCHED_BATCH thread gets its
    fair share of the CPU but never preempts on waking: the sync runs when a core is free
    or at the next tick. Elsewhere, or where the call is refused (a seccomp profile), the
    default policy stays."""
    set_policy, batch = getattr(os, "sched_setscheduler", None), getattr(os, "SCHED_BATCH", None)
    if set_policy is None or batch is None:
        return
    with contextlib.suppress(OSError):
        set_policy(0, batch, os.sched_param(0))  # 0: the calling thread


class _BackgroundSync:
    """fsync a file from a helper thread whenever asked (requests made while a sync runs
    coalesce into one more). Linux fsync flushes the file, whichever descriptor names it,
    so the thread uses its own read-only descriptor and never touches the writer's (nor
    its lock: a sync never holds up a write).

    A failed sync ends the thread and is raised, as :class:`~cotune.errors.StorageError`,
    by the next :meth:`request` on the caller's thread, or else by :meth:`close` (the last
    sync's failure included): never a traceback of the helper thread, never unsaid. Each
    failure is raised once."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd = os.open(path, os.O_RDONLY)
        self._pid = os.getpid()  # the process the helper thread runs in
        # A request is this lock released: the helper waits to acquire it, and a request while
        # one is pending finds it released already (coalesced). A Lock's release is one C call
        # on the training thread, where threading.Event.set() ran a Condition's Python code
        # (its lock, its waiters' list) for every record written.
        self._wake = threading.Lock()
        self._wake.acquire()
        self._stop = False
        self._closed = False
        self.error: OSError | None = None
        self._reported = False  # whether `error` has been raised to a caller
        self._thread = threading.Thread(target=self._run, name="cotune-tracker-fsync", daemon=True)
        self._thread.start()

    def request(self) -> None:
        if self.error is not None:
            self._reported = True
            raise StorageError.from_os_error(self.error, path=self._path, doing="sync it to disk")
        if os.getpid() != self._pid:
            # A fork() child (one that trains with its parent's tracker): the helper thread did
            # not come with it, and a request it never answers left the child's records
            # unsynced. Synced here, inline.
            try:
                os.fsync(self._fd)
            except OSError as exc:
                raise StorageError.from_os_error(exc, path=self._path, doing="sync it to disk") from None
            return
        self._release()

    def _release(self) -> None:
        try:
            self._wake.release()
        except RuntimeError:  # released already: a sync is pending, and covers this record too
            pass

    def _run(self) -> None:
        _never_preempting()
        while True:
            self._wake.acquire()
            # Read before the sync, not after it: a close() that came while a sync ran finds a
            # request of a record written during that sync pending (the lock released
            # already), so its own release wakes nothing more, and a stop read after that sync
            # ended the thread with the record unsynced. Read here, a stop is always followed
            # by one more sync, which begins after close() was called.
            stop = self._stop
            try:
                os.fsync(self._fd)
            except OSError as exc:  # reported on the next write, on the training thread
                self.error = exc
                return
            if stop:
                return

    def close(self) -> None:
        """Wait for the last sync (one that covers every record written before this call),
        end the thread and close the descriptor; then raise a failed sync not yet raised."""
        if self._closed:
            return
        self._closed = True
        self._stop = True
        self._release()
        self._thread.join()  # in a fork() child the thread is not there: join returns at once
        # A read-only descriptor holds no data of ours: an error closing it loses nothing.
        with contextlib.suppress(OSError):
            os.close(self._fd)
        if self.error is not None and not self._reported:
            self._reported = True
            raise StorageError.from_os_error(
                self.error, path=self._path, doing="sync its last records to disk (they may not be on disk)") from None
