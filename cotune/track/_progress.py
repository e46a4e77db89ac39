"""What a profile says about a running job: its configuration, epochs done, own curve.

The tracker tags the job's records with ``job``; these pure functions read them back for
re-planning. Nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from cotune.errors import InputError
from cotune.profile import Profile

__all__ = ["JobProgress", "job_progress", "offline_profile"]


@dataclass(frozen=True)
class JobProgress:
    """A running job as its records tell it.

    ``gpu``/``market``/``workers``/``hosts``/``local_batch`` come from its latest step
    record (None when it has none yet); ``global_batch`` from its latest eval (else its
    steps); ``epochs_done`` is the furthest evaluated epoch (0 without evals);
    ``elapsed_s`` the wall time at that evaluation when the tracker recorded it;
    ``curve_epochs``/``curve_metric`` the job's evaluations at ``global_batch``; and
    ``step_time_s`` the median of its step windows at the latest configuration,
    weighted by their step counts.
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


def offline_profile(profile: Profile) -> Profile:
    """The profile without any job's records: the probes and reference curves a plan is
    made from (the prior), so a job's own curve is not counted twice."""
    return replace(
        profile,
        steps=tuple(s for s in profile.steps if s.job is None),
        evals=tuple(e for e in profile.evals if e.job is None),
        noise=tuple(n for n in profile.noise if n.job is None),
    )


def job_progress(profile: Profile, *, job: str | None = None) -> JobProgress | None:
    """The running job's progress from its tagged records (None if the profile has none).

    ``job`` picks one job by name; by default the job of the last tagged record.
    """
    tagged = [r for r in (*profile.steps, *profile.evals) if r.job is not None]
    if not tagged:
        if job is not None:
            raise InputError(f"the profile has no records of job {job!r}: track the job (cotune.track.Tracker) first")
        return None
    names = list(dict.fromkeys(r.job for r in (*profile.evals, *profile.steps) if r.job is not None))
    if job is None:
        job = next((e.job for e in reversed(profile.evals) if e.job is not None), None) or next(
            s.job for s in reversed(profile.steps) if s.job is not None
        )
    elif job not in names:
        raise InputError(f"the profile has no records of job {job!r}; it has {', '.join(map(repr, names))}: pick one")
    steps = [s for s in profile.steps if s.job == job]
    evals = [e for e in profile.evals if e.job == job]
    last_step = steps[-1] if steps else None
    if evals:
        batch = evals[-1].global_batch
    else:
        batch = last_step.workers * last_step.local_batch * last_step.accum_steps  # type: ignore[union-attr]
    curve = [(e.epoch, e.metric) for e in evals if e.global_batch == batch]
    done = max((e.epoch for e in evals), default=0.0)
    elapsed = next((e.elapsed_s for e in reversed(evals) if e.elapsed_s is not None), None)
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
        step_time_s=step_time, step_windows=windows,
    )
