"""What a profile says about a running job: its configuration, epochs done, own curve.

The tracker tags the job's records with ``job``; these pure functions read them back for
re-planning. Nothing here writes.
"""

from __future__ import annotations

import math
import numbers

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

import numpy as np

from cotune._checks import BadValue
from cotune._lazy import annotation_module
from cotune.errors import InputError
from cotune.profile import EvalRecord, Profile, StepRecord

if TYPE_CHECKING:  # annotations only
    import cotune
else:
    # progress_from_records returns a cotune.Progress; imported here, cotune._request would add
    # 6 to 21 ms to a training script's `import cotune.track` (python -X importtime, 9 runs),
    # for a function the tracker never calls.
    cotune = annotation_module("cotune")

__all__ = ["JobProgress", "job_progress", "offline_profile", "planning_profile", "progress_from_records"]

# A collapse: the job's last COLLAPSE_EVALS evaluations have each given back more than
# COLLAPSE_SHARE of everything its curve had gained, |best − m| > COLLAPSE_SHARE · |best −
# first| in the metric's goal direction. A learning rate blown up or corrupted weights give
# back nearly all of it and stay there (top-1 back to chance, a loss back above its start).
# Healthy runs dip too: a single evaluation gave back 24 % of the way to the target on a
# DAWNBench CIFAR-10 run (64.1 → 48.6 → 64.8, then 94 %) and more than half of the rise on
# two MLPerf ResNet-50 runs (0.353 → 0.146 → 0.340); a large-batch DAWNBench ImageNet run
# gave back 71 % and then 50 % on two evaluations in a row during its warm-up. On every
# prefix of the public curves (DAWNBench, MLPerf ResNet-50, the Pollux traces) these
# constants flag none (scanned with job_setback, the target the run reached).
COLLAPSE_SHARE = 0.75
# A first, a best and a latest evaluation: with fewer there is no rise to have lost.
COLLAPSE_MIN_EVALS = 3
# Evaluations in a row that must each have lost the share: one is a dip.
COLLAPSE_EVALS = 2
# With the target known, a collapse is judged only once the curve's best has come at least
# this share of the way from its first evaluation to the target: before that the "rise" can
# be evaluation noise on an early plateau (a loss of 2.30, 2.25, 2.31, 2.32 has "lost" more
# than three quarters of a 0.05 rise), and staying would be written off for a job that has
# not yet started to learn.
COLLAPSE_MIN_GAIN = 0.25


@dataclass(frozen=True, kw_only=True)
class Setback:
    """Why a running job cannot go on where it runs, from its own evaluations.

    ``kind``: ``"diverged"`` (its latest metric is NaN or infinite) or ``"collapsed"``
    (its last :data:`COLLAPSE_EVALS` evaluations have each lost more than :data:`COLLAPSE_SHARE`
    of its curve's rise);
    ``epoch``/``metric``: that latest evaluation; ``resume_epoch``: the progress kept — the
    furthest finite evaluation of a diverged job, the best evaluation of a collapsed one
    (the checkpoint it restarts from); ``best_metric``/``first_metric``: the collapsed
    curve's best and first metrics (None for a divergence); ``kept``: how many of the job's
    evaluations, in the order written, still count (those after its best are the collapse).
    """

    kind: Literal["diverged", "collapsed"]
    epoch: float
    metric: float
    resume_epoch: float
    kept: int
    best_metric: float | None = None
    first_metric: float | None = None


def job_setback(evals: Sequence[EvalRecord], *, goal: Literal["max", "min"],
                target: float | None = None) -> Setback | None:
    """The :class:`Setback` of a job whose evaluations (``evals``, in the order written) end
    in a divergence or a collapse, else None — the one rule :func:`job_progress` counts
    progress by and ``cotune replan`` decides by. With ``target``, a collapse also needs the
    best to have come :data:`COLLAPSE_MIN_GAIN` of the way from the first evaluation to it."""
    if not evals:
        return None
    latest = evals[-1]
    if not math.isfinite(latest.metric):
        resume = max((e.epoch for e in evals if math.isfinite(e.metric)), default=0.0)
        return Setback(kind="diverged", epoch=float(latest.epoch), metric=float(latest.metric),
                       resume_epoch=float(resume), kept=len(evals))
    finite = [(k, e) for k, e in enumerate(evals) if math.isfinite(e.metric)]
    if len(finite) < COLLAPSE_MIN_EVALS:
        return None
    sign = 1.0 if goal == "max" else -1.0
    first = finite[0][1].metric
    k_best, best = max(finite, key=lambda ke: (sign * ke[1].metric, -ke[0]))  # the earliest of equal bests
    rise = sign * (best.metric - first)
    # The last COLLAPSE_EVALS evaluations, all after the best, have each lost the share.
    tail = finite[-COLLAPSE_EVALS:]
    if rise <= 0.0 or tail[0][0] <= k_best:
        return None
    if not all(sign * (best.metric - e.metric) > COLLAPSE_SHARE * rise for _, e in tail):
        return None
    if target is not None and math.isfinite(target) and rise < COLLAPSE_MIN_GAIN * sign * (target - first):
        return None
    return Setback(kind="collapsed", epoch=float(latest.epoch), metric=float(latest.metric),
                   resume_epoch=float(best.epoch), kept=k_best + 1, best_metric=float(best.metric),
                   first_metric=float(first))


@dataclass(frozen=True)
class JobProgress:
    """A running job as its records tell it.

    ``gpu``/``market``/``workers``/``hosts``/``local_batch`` come from its latest step
    record (None when it has none yet); ``global_batch`` from its latest eval (else its
    steps); ``epochs_done`` is the furthest evaluated epoch (0 without evals; for a job whose
    latest evaluation diverged, NaN or infinite, its furthest finite one);
    ``elapsed_s`` the wall time at that evaluation when the tracker recorded it;
    ``curve_epochs``/``curve_metric`` the job's evaluations at ``global_batch``; and
    ``step_time_s`` the median of its step windows at the latest configuration,
    weighted by their step counts; ``schedule_epochs`` where its learning-rate schedule
    ends, from its latest evaluation that says (None when none does); ``first_step`` its
    first step record — the configuration it started at (what a miss redoes,
    :func:`cotune.solver.miss_cost`); ``returns`` how many times its step records move
    back to a configuration it had left by choice (:func:`cotune.solver.count_returns`:
    the switching margin backs off with them; a move whose first record says
    ``cause: "revocation"`` was forced, and coming back from it is not counted).
    """

    job: str
    global_batch: int
    epochs_done: float
    curve_epochs: tuple[float, ...]
    curve_metric: tuple[float, ...]
    elapsed_s: float | None = None
    gpu: str | None = None
    market: str | None = None
    workers: int | None = None
    hosts: int | None = None
    local_batch: int | None = None
    step_time_s: float | None = None
    step_windows: int = 0
    schedule_epochs: float | None = None
    jobs: tuple[str, ...] = ()  # every tracked job in the profile, in first-seen order
    first_step: StepRecord | None = None
    returns: int = 0
    setback: Setback | None = None


def offline_profile(profile: Profile) -> Profile:
    """The profile without any job's records: the probes and reference curves a plan is
    made from (the prior), so a job's own curve is not counted twice."""
    return replace(
        profile,
        steps=tuple(s for s in profile.steps if s.job is None),
        evals=tuple(e for e in profile.evals if e.job is None),
        noise=tuple(n for n in profile.noise if n.job is None),
    )


def planning_profile(profile: Profile) -> Profile:
    """What models of a running job are fitted on: every step record (the job's own step
    windows are real timings at its configuration) but only offline learning curves (the
    job's curve is evidence of its own, pooled with the model's prior by the curve module,
    and its epochs run on across restarts, which a curve at one batch never does).

    A profile whose only evaluations are a running job's has no such curve: that is said
    here, by name, rather than as "no eval records" from the fit of a profile that holds
    some."""
    offline = tuple(e for e in profile.evals if e.job is None)
    if not offline and profile.evals:
        jobs = ", ".join(repr(j) for j in dict.fromkeys(e.job for e in profile.evals))
        raise InputError(
            f"the profile's evaluations are all the running job's ({jobs}): re-planning fits its accuracy model on an "
            "offline learning curve and pools the job's own curve with it; add one — a previous run's log (cotune "
            "import FORMAT LOG --out PROFILE --append) or profiled curves (cotune profile --curves ...)"
        )
    return replace(profile, evals=offline, noise=tuple(n for n in profile.noise if n.job is None))


def _unrecorded_batch(steps: Sequence[StepRecord], evals: Sequence[EvalRecord]) -> int | None:
    """The global batch of the job's latest evaluation when none of its step records ran at
    it and its latest step ran at another (None: the records agree). A tracker before the
    fix wrote a checkpoint's evaluation at a new configuration before any step there: the
    records then name the configuration the job ran at before as its current one."""
    if not steps or not evals:
        return None
    batch = evals[-1].global_batch
    if any(s.workers * s.local_batch * s.accum_steps == batch for s in steps):
        return None
    return batch


def job_progress(profile: Profile, *, job: str | None = None, target: float | None = None,
                 check_configuration: bool = True) -> JobProgress | None:
    """The running job's progress from its tagged records (None if the profile has none).

    ``job`` picks one job by name; by default the job of the last tagged record. ``target``
    (the question's, when known) guards the collapse rule (:func:`job_setback`).
    ``check_configuration``: refuse records whose latest evaluation ran at a global batch
    none of the job's step records ran at (its latest step's configuration is then not
    where the job runs); False where the caller was told the configuration.
    """
    from cotune.solver._decide import count_returns  # here: the tracker itself stays free of the solver

    tagged = [r for r in (*profile.steps, *profile.evals) if r.job is not None]
    if not tagged:
        if job is not None:
            raise BadValue(f"the profile has no records of job {job!r}: track the job (cotune.track.Tracker) first",
                           where="/job")
        return None
    names = list(dict.fromkeys(r.job for r in (*profile.evals, *profile.steps) if r.job is not None))
    if job is None:
        # The job of the last tagged record in the file: a new job's steps come after the
        # previous job's last evaluation, and preferring evaluations read the finished job.
        # A profile not read from records (built in code) has no file order: its last
        # evaluation's job, else its last step's.
        job = profile.last_job if profile.last_job in names else (
            next((e.job for e in reversed(profile.evals) if e.job is not None), None)
            or next(s.job for s in reversed(profile.steps) if s.job is not None))
    elif job not in names:
        raise BadValue(f"the profile has no records of job {job!r}; it has {', '.join(map(repr, names))}: pick one",
                       where="/job")
    steps = [s for s in profile.steps if s.job == job]
    evals = [e for e in profile.evals if e.job == job]
    setback = job_setback(evals, goal=profile.workload.goal, target=target)
    last_step = steps[-1] if steps else None
    unrecorded = _unrecorded_batch(steps, evals) if check_configuration else None
    if unrecorded is not None and last_step is not None:
        at = f"{last_step.workers} × {last_step.local_batch}" + (
            f" × {last_step.accum_steps}" if last_step.accum_steps > 1 else "")
        raise BadValue(
            f"the latest evaluation of job {job!r} ran at global batch {unrecorded:,}, and its step records only at "
            f"others (the latest on {last_step.gpu} at {at}), so they do not say where it runs now: give the "
            "configuration it runs at (progress gpu, market, workers and local_batch; on the command line --current "
            "GPU:MARKET:WORKERS:LOCAL_BATCH)", where="/progress/workers")
    if evals:
        batch = evals[-1].global_batch
    else:
        batch = last_step.workers * last_step.local_batch * last_step.accum_steps  # type: ignore[union-attr]
    curve = [(e.epoch, e.metric) for e in evals if e.global_batch == batch]
    done = max((e.epoch for e in evals), default=0.0)
    if setback is not None:
        # Diverged or collapsed: the progress left is where the checkpoint it restarts from
        # was (its last finite evaluation; its best one), not the epochs after.
        done = setback.resume_epoch
    # The furthest wall time written, not the last: a restarted tracker that was not told how
    # far the job had come writes small elapsed_s (117 s after 15 epochs), and the largest is
    # a lower bound on the job's time since its start either way.
    elapsed = max((e.elapsed_s for e in evals if e.elapsed_s is not None), default=None)
    schedule = next((e.schedule_epochs for e in reversed(evals) if e.schedule_epochs is not None), None)
    step_time = None
    windows = 0
    if last_step is not None:
        same = [s for s in steps if (s.gpu, s.workers, s.hosts, s.local_batch, s.accum_steps, s.market)
                == (last_step.gpu, last_step.workers, last_step.hosts, last_step.local_batch, last_step.accum_steps,
                    last_step.market)]
        t = np.array([s.step_time_s for s in same])
        w = np.array([float(s.timed_steps or 1) for s in same])
        order = np.argsort(t)
        c = np.cumsum(w[order])
        step_time = float(t[order][int(np.searchsorted(c, 0.5 * c[-1]))])
        windows = len(same)
    return JobProgress(
        job=job, global_batch=int(batch), epochs_done=float(done), curve_epochs=tuple(float(e) for e, _ in curve),
        curve_metric=tuple(float(m) for _, m in curve), elapsed_s=elapsed,
        gpu=None if last_step is None else last_step.gpu, market=None if last_step is None else last_step.market,
        workers=None if last_step is None else last_step.workers, hosts=None if last_step is None else last_step.hosts,
        local_batch=None if last_step is None else last_step.local_batch * last_step.accum_steps,
        step_time_s=step_time, step_windows=windows, schedule_epochs=schedule, jobs=tuple(names),
        first_step=steps[0] if steps else None,
        returns=count_returns([(s.gpu, s.market, s.workers, s.hosts, s.local_batch * s.accum_steps) for s in steps],
                              forced=[s.cause == "revocation" for s in steps]),
        setback=setback,
    )




#: Values no check refuses, for the fields a progress leaves to the records.
_STAND_INS: dict[str, object] = dict(epochs_done=0.0, elapsed_s=0.0, gpu="gpu", market="on_demand", local_batch=1)


def progress_from_records(profile: Profile, *, job: str | None = None, default_market: str | None = None,
                          target: float | None = None, **given: object) -> "cotune.Progress":
    """A :class:`cotune.Progress` of the running job: each field given wins, the others come
    from the job's tracked records (:func:`job_progress`).

    ``epochs_done``: the furthest evaluated epoch (the progress kept, after a divergence or
    a collapse: :func:`job_setback`); ``elapsed_s``: the largest wall time the job's
    evaluations recorded (give the real elapsed time when re-planning later); ``gpu``,
    ``market``, ``workers``, ``local_batch``: its latest step record; ``schedule_epochs``:
    its latest evaluation that tells it (None: no known end). ``spent`` defaults to 0;
    ``market``, neither given nor in the records, to ``default_market`` where the caller
    has one (:attr:`cotune.RecommendRequest.implied_market`: on demand without a cluster file). A
    required field neither given nor in the records is an error naming it. A progress
    given in full (every required field) is taken as given, as the CLI and HTTP doors
    take it: the records are not read, so its schedule end is the one given or none.
    """
    from cotune._checks import BadValue
    from cotune._request import PROGRESS_FIELDS, Progress

    unknown = sorted(set(given) - set(PROGRESS_FIELDS))
    if unknown:
        raise InputError(f"unknown progress field(s) {', '.join(unknown)}: use {', '.join(PROGRESS_FIELDS)}")
    fields = {k: v for k, v in given.items() if v is not None}
    needed = [k for k in ("epochs_done", "elapsed_s", "gpu", "market", "workers", "local_batch") if k not in fields]
    if needed:
        # Each value given is checked first, by Progress's own rule, with harmless stand-ins
        # for the rest: {"epochs_done": -1} was told "'elapsed_s' is not given", and the -1
        # was named only once every other field was given.
        lost = fields.get("workers_lost", 0)
        # A workers count left to the records stands in as one more than the loss given: the
        # loss is judged against the records' count below (a stand-in named in the message
        # read "lost 3000000000 of 2147483648 workers").
        whole = isinstance(lost, numbers.Integral) and not isinstance(lost, bool) and lost >= 0
        stand = dict(_STAND_INS, workers=int(lost) + 1 if whole else 1)
        Progress(**{**stand, **fields})
        # The configuration read from the records only where it is not given: told where the
        # job runs, records that do not say it are no obstacle. The market alone does not
        # decide the batch the check is about (--current GPU:WORKERS:LOCAL_BATCH leaves it out,
        # for the records or default_market), and was not applied before the check either.
        jp = job_progress(profile, job=job, target=target,
                          check_configuration=any(k in needed for k in ("gpu", "workers", "local_batch")))
        if "schedule_epochs" not in fields and jp is not None and jp.schedule_epochs is not None:
            fields["schedule_epochs"] = jp.schedule_epochs
        found = {} if jp is None else {
            "epochs_done": jp.epochs_done if jp.curve_epochs or jp.epochs_done else None, "elapsed_s": jp.elapsed_s,
            "gpu": jp.gpu, "market": jp.market, "workers": jp.workers, "local_batch": jp.local_batch,
        }
        if found.get("market") is None and default_market is not None:
            found["market"] = default_market
        for k in needed:
            if found.get(k) is None:
                why = ("the profile has no tracked records of a running job" if jp is None
                       else f"the records of job {jp.job!r} do not tell it")
                which = " (on_demand, spot or mixed: with a cluster file the market is not implied)" if k == "market" else ""
                raise BadValue(f"'{k}' is not given, and {why}: give it{which} (or track the job with "
                               "cotune.track.Tracker)", where=f"/progress/{k}")
            fields[k] = found[k]
    return Progress(**fields)  # type: ignore[arg-type]
