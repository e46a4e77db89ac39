"""All the models of one profile, fitted together: one step-time model per GPU type and
one accuracy model. This is the small interface the solver sees.

Step and eval records that cannot be right (:mod:`cotune.models._outliers`) are left out
before fitting; :attr:`FittedModels.notes` says which, so a recommendation and ``cotune fit``
report them instead of silently following them."""

from __future__ import annotations

import dataclasses
import math

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

import numpy as np

from cotune._checks import _is_bool, excerpt, integer
from cotune._checks import interval as check_interval
from cotune.errors import InputError, ModelError
from cotune.models._accuracy import AccuracyModel, EpochsPrediction, usable_noise_scale
from cotune.models._effects import describe_level_effect, largest_level_effects
from cotune.models._outliers import find_eval_outliers, find_step_outliers
from cotune.models._step_time import MAX_BOOTSTRAP, StepTimeModel, StepTimePrediction
from cotune.profile import Profile, load_profile
from cotune.profile._source import workload_name
from cotune.profile._profile import distinct_evals, repeated_evals_note
from cotune.units import count_of

_R = TypeVar("_R")  # a row of a recommendation or a re-plan (or None)

__all__ = ["MAX_GPU_TYPES", "MAX_BOOTSTRAP", "FittedModels", "check_gpu_types", "fit_models", "clean_arrays", "curve_columns", "CleanArrays",
           "check_fitted", "check_workload"]


# How far the models' interval may sit from the request's and still be the same level: a
# level given as a float32 (np.float32(0.9) is 0.9 + 2.4e-8) is the level the caller meant.
INTERVAL_TOLERANCE = 1e-6


def check_fitted(models: object, *, interval: float | None = None) -> "FittedModels | None":
    """``models=`` of ``recommend`` and ``replan``: None (fit the profile) or the result of
    :func:`fit_models` — anything else was an ``AttributeError`` deep in the search — fitted
    at the request's ``interval``: the level is part of the fit (the models draw their
    interval ends at it; σ and every chance are the same at any level), so models fitted at
    another level would answer at theirs under the request's label."""
    if models is None:
        return models
    if not isinstance(models, FittedModels):
        raise InputError(f"models: must be the result of cotune.fit_models(profile) (or left out to fit the profile), "
                         f"got {excerpt(models)}")
    fitted = float(models.accuracy.interval_)
    if interval is not None and not math.isclose(fitted, float(interval), rel_tol=0.0, abs_tol=INTERVAL_TOLERANCE):
        # repr, not :g: two levels that differ below :g's six digits printed the same number twice.
        asked = float(interval)
        raise InputError(f"/interval: the models given were fitted at interval {fitted!r}, the request asks for "
                         f"{asked!r}: fit them with cotune.fit_models(profile, interval={asked!r}), or ask "
                         f"with interval={fitted!r}")
    return models


def check_workload(models: "FittedModels", profile: Any) -> None:
    """Models given with a profile must be that profile's: another workload's models answer
    for it under this profile's name, with this profile's notes and probes beside them.

    ``profile``: a :class:`Profile`, or what names one (a file, a bundled example's name, a
    ProfileRef), of which only the first record is read (:func:`cotune.profile._source.workload_name`):
    a question with models is not worth a parse of the whole file. One whose workload cannot be
    told that way (None, no such file, a first record that is no workload record) is not checked."""
    name = workload_name(profile)
    if name is not None and models.workload_name != name:
        raise InputError(f"models: fitted on workload {excerpt(models.workload_name)}, but the profile is workload "
                         f"{excerpt(name)}: fit them with cotune.fit_models(profile), or pass the "
                         f"profile of {excerpt(models.workload_name)}")


@dataclass(frozen=True)
class FittedModels:
    """Fitted models of one workload; ``predict_*`` are what the solver calls."""

    # Compared by value (==), never hashed: it holds mappings and tables, which have no hash.
    __hash__ = None  # type: ignore[assignment]

    workload_name: str
    dataset_size: int
    goal: str
    metric_name: str
    time_models: Mapping[str, StepTimeModel]
    accuracy: AccuracyModel
    max_local_batch: Mapping[str, int | None] = field(default_factory=dict)
    # Per GPU type, the local batches (per optimizer step, as the step-time model reads
    # them) its probes measured with gradient accumulation only, and how many steps: the
    # memory limit above is one micro-batch's, and a plan at such a batch must accumulate.
    accum_steps: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    # What the fit left out and why (outlier records), for the user to read: about the
    # workload's curves here, about one GPU type's step times in gpu_notes.
    notes: tuple[str, ...] = ()
    gpu_notes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def notes_for(self, gpus: Iterable[str] | None = None) -> tuple[str, ...]:
        """The notes about each of ``gpus`` (every GPU type when None), then those about the
        workload: a question that searches T4s only has nothing to learn from the K80 probes'."""
        chosen = self.gpu_notes if gpus is None else {g: self.gpu_notes.get(g, ()) for g in dict.fromkeys(gpus)}
        return tuple(n for these in chosen.values() for n in these) + self.notes

    @property
    def gpus(self) -> tuple[str, ...]:
        return tuple(self.time_models)

    def accum_steps_for(self, gpu: str, local_batch: int) -> int:
        """Gradient-accumulation steps a plan at ``local_batch`` (per optimizer step) on ``gpu``
        runs with: those its probes measured it with, 1 for a batch probed without (or not
        probed at all: it would run as one micro-batch)."""
        return int(self.accum_steps.get(gpu, {}).get(int(local_batch), 1))

    def with_accumulation(self, row: _R) -> _R:
        """``row`` (a frozen dataclass with ``gpu``, ``local_batch`` and ``accum_steps``: a
        recommendation's or a re-plan's row; None passes) with the accumulation its probes ran
        with (:meth:`accum_steps_for`): a row launched without it would hold the whole local
        batch at once and run out of memory where the memory cap admitted it only as micro-batches."""
        if row is None:
            return row
        r: Any = row
        return dataclasses.replace(r, accum_steps=self.accum_steps_for(r.gpu, int(r.local_batch)))

    def predict_step(self, gpu: str, workers: np.ndarray, hosts: np.ndarray, local_batch: np.ndarray) -> StepTimePrediction:
        try:
            model = self.time_models[gpu]
        except KeyError:
            raise ModelError(
                f"no timing probes for gpu {excerpt(gpu)}: profiled gpus are {', '.join(self.gpus)}; probe it or drop it"
            ) from None
        return model.predict(workers, hosts, local_batch)

    def predict_epochs(self, global_batch: np.ndarray, target: float) -> EpochsPrediction:
        return self.accuracy.epochs_to_target(global_batch, target)


# GPU types one profile may name (every cloud offers fewer): a step-time model each, fitted
# in about half a second with its bootstrap refits, so a question's fit stays under ~20 s.
MAX_GPU_TYPES = 32


def check_gpu_types(profile: Profile) -> None:
    """At most :data:`MAX_GPU_TYPES` GPU types, or a :class:`ModelError` before anything is
    fitted: one rule for ``fit_models`` and ``validate_profile`` (``cotune fit`` fitted 40
    types, with five folds each, in 77 s where ``recommend`` refused them at once)."""
    if len(profile.gpus) > MAX_GPU_TYPES:
        # A step-time model a GPU type, each fitted with its bootstrap: the time a question
        # takes grows with their number, which the record caps do not bound.
        raise ModelError(
            f"profile {excerpt(profile.workload.name)} names {len(profile.gpus)} GPU types; cotune fits at most "
            f"{MAX_GPU_TYPES} per profile: keep the step records of the GPU types to plan on"
        )


def fit_models(
    profile: "Profile | str | os.PathLike[str]",
    *,
    interval: float = 0.9,
    n_bootstrap: int = 16,
    batch_monotone: bool = True,
    random_state: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> FittedModels:
    """Fit every model a recommendation needs from one profile.

    ``progress(done, total)`` is called after each model (one per GPU type, then the
    accuracy model): the CLI draws a bar with it. ``profile``: a :class:`Profile`, a
    profile file or a bundled example's name, as :func:`cotune.recommend` takes it.
    """
    profile = load_profile(profile)
    # The checked value goes on: a Python float, never the caller's numpy scalar.
    interval = check_interval(interval, where="interval")
    n_bootstrap = integer(n_bootstrap, where="n_bootstrap", ge=0, le=MAX_BOOTSTRAP)
    integer(random_state, where="random_state", ge=0)
    if not _is_bool(batch_monotone):
        raise InputError(f"batch_monotone: must be true or false, got {excerpt(batch_monotone)}")
    if not profile.steps:
        raise ModelError(
            f"profile {excerpt(profile.workload.name)} has no step records: run timing probes (cotune profile) first"
        )
    check_gpu_types(profile)
    clean = clean_arrays(profile)
    time_models = {}
    total = len(profile.gpus) + 1
    for done, (gpu, a) in enumerate(clean.steps.items(), start=1):
        time_models[gpu] = StepTimeModel(interval=interval, n_bootstrap=n_bootstrap, random_state=random_state).fit(
            a["workers"], a["hosts"], a["local_batch"], a["step_time_s"], sync_time_s=a["sync_time_s"]
        )
        if progress is not None:
            progress(done, total)
    gpu_notes = {gpu: list(clean.gpu_notes.get(gpu, ())) for gpu in time_models}
    for gpu, m in time_models.items():
        gpu_notes[gpu] += [departure_note(gpu=gpu, workers=w, where=where, ratio=ratio)
                           for (w, where), ratio in zip(m.departures_, m.departure_ratios_)]
    for gpu, m in time_models.items():
        largest = largest_level_effects(m.effects_, m.points_, limit=2) if m.level_effects_ else ()
        if largest:
            gpu_notes[gpu].append(f"step time on {gpu} follows the probes where they depart from the monotone law "
                                  f"(largest: {', '.join(map(describe_level_effect, largest))}; cotune fit names them)")
    e = clean.evals
    accuracy = AccuracyModel(
        goal=profile.workload.goal, interval=interval, batch_monotone=batch_monotone, b_noise=usable_noise_scale(profile.noise_scale()),
        noise_trace=profile.noise_trace(),
    ).fit(e["global_batch"], e["epoch"], e["metric"], e["seed"])
    if progress is not None:
        progress(total, total)
    return FittedModels(
        workload_name=profile.workload.name,
        dataset_size=profile.workload.dataset_size,
        goal=profile.workload.goal,
        metric_name=profile.workload.metric,
        time_models=time_models,
        accuracy=accuracy,
        max_local_batch={gpu: profile.max_local_batch(gpu) for gpu in profile.gpus},
        accum_steps={gpu: accum for gpu in profile.gpus if (accum := profile.accum_steps_by_batch(gpu))},
        notes=clean.workload_notes,
        gpu_notes={gpu: tuple(these) for gpu, these in gpu_notes.items() if these},
    )


@dataclass(frozen=True)
class CleanArrays:
    """A profile's step columns (per GPU type) and eval columns without outlier records."""

    steps: Mapping[str, dict[str, np.ndarray]]
    evals: dict[str, np.ndarray]
    notes: tuple[str, ...]  # one per GPU type or for the curves that had records left out
    gpu_notes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # those of notes about one GPU type
    workload_notes: tuple[str, ...] = ()  # the rest: about the curves


def departure_note(*, gpu: str, workers: int, where: str, ratio: float) -> str:
    """The note for a worker count whose probes depart from the monotone prior, in the
    direction measured (``ratio``, :attr:`StepTimeModel.departure_ratios_`): below 1 it runs
    faster than the other worker counts' monotone law (super-linear), above 1 slower — the
    side left out when it is the fewer workers that run slower per step than more."""
    side = f"{1.0 - ratio:.0%} faster" if ratio < 1.0 else f"{ratio - 1.0:.0%} slower"
    why = "" if ratio < 1.0 else " (more workers ran faster per step)"
    return (f"step time on {gpu} at {count_of(workers, 'worker')} ({where}) is {side} in the probes than the monotone "
            f"law of the other worker counts{why}: followed as measured, not forced monotone")


def _note(what: str, count: int, total: int, reasons: tuple[str, ...]) -> str:
    shown = "; ".join(reasons[:3]) + (f"; and {count - 3} more" if count > 3 else "")
    many = count > 1
    return (
        f"{what}: {count:,} of {total:,} records left out as {'outliers' if many else 'an outlier'} "
        f"({shown}): check or re-measure {'them' if many else 'it'}"
    )


def curve_columns(profile: Profile) -> tuple[dict[str, np.ndarray], tuple[str, ...]]:
    """The eval columns the accuracy model reads, one learning curve per run, with notes.

    Probe curves are read as written: a run is a (global batch, seed). A tracked job's
    evaluations (``job`` set) are a run of their own — a seed no probe uses — so they
    never interleave with a probe curve at the same batch and seed. Only the job's first
    segment counts: after it changes its global batch its epochs keep counting from the
    job's start, not from where the new batch would start, so those evaluations are no
    curve at the new batch and are left out (with a note).
    """
    evals, dropped = distinct_evals(profile.evals)
    offline = [e for e in evals if e.job is None]
    jobs = list(dict.fromkeys(e.job for e in evals if e.job is not None))
    used = {int(e.seed) for e in offline}
    taken: list = []
    seeds: list[int] = []
    notes: list[str] = []
    fresh = min(used | {0}) - 1
    for name in jobs:
        own = [e for e in evals if e.job == name]
        first = own[0].global_batch
        change = next((i for i, e in enumerate(own) if e.global_batch != first), len(own))
        for e in own[:change]:
            taken.append(e)
            seeds.append(fresh)
        if change < len(own):
            notes.append(
                f"job {name!r}: {len(own) - change} evaluation(s) after its change of global batch "
                f"({first} -> {own[change].global_batch}) left out of the accuracy fit: their epochs count from the "
                "job's start, not from the new batch's; the job's curve at its first batch is kept"
            )
        fresh -= 1
    if dropped:
        notes.append(repeated_evals_note(dropped=dropped, total=len(profile.evals)))
    rows = offline + taken
    seed = [int(e.seed) for e in offline] + seeds
    cols = {
        "global_batch": np.array([e.global_batch for e in rows], dtype=float),
        "epoch": np.array([e.epoch for e in rows], dtype=float),
        "metric": np.array([e.metric for e in rows], dtype=float),
        "seed": np.array(seed, dtype=int),
    }
    return cols, tuple(notes)


def clean_arrays(profile: Profile) -> CleanArrays:
    """The columns the models are fitted on: outlier records (:mod:`cotune.models._outliers`) left out, with notes."""
    steps: dict[str, dict[str, np.ndarray]] = {}
    notes: list[str] = []
    gpu_notes: dict[str, tuple[str, ...]] = {}
    for gpu in profile.gpus:
        a = profile.step_arrays(gpu)
        found = find_step_outliers(
            workers=a["workers"], hosts=a["hosts"], local_batch=a["local_batch"], step_time_s=a["step_time_s"]
        )
        if found.count:
            a = {k: v[~found.mask] for k, v in a.items()}
            notes.append(_note(f"{gpu} step", found.count, found.mask.size, found.reasons))
            gpu_notes[gpu] = (notes[-1],)
        steps[gpu] = a
    e, job_notes = curve_columns(profile)
    first = len(notes)
    notes.extend(job_notes)
    found_e = find_eval_outliers(
        global_batch=e["global_batch"], epoch=e["epoch"], metric=e["metric"], seed=e["seed"], goal=profile.workload.goal
    )
    if found_e.count:
        e = {k: v[~found_e.mask] for k, v in e.items()}
        notes.append(_note("eval", found_e.count, found_e.mask.size, found_e.reasons))
    return CleanArrays(steps=steps, evals=e, notes=tuple(notes), gpu_notes=gpu_notes, workload_notes=tuple(notes[first:]))
