"""How well the models fit a profile: cross-validated errors, not in-sample ones.

* Step time: K-fold over distinct configurations (interpolation error), and a
  scaling split — fit on the smaller half of worker counts, predict the larger half —
  for extrapolation error. Errors are mean absolute percentage errors (MAPE).
* Accuracy: leave one measured global batch out, refit, and compare predicted with
  measured epochs-to-target for a reference target every batch reaches. At most
  :data:`MAX_HELD_OUT_BATCHES` batches are held out, evenly spread over the sorted
  batches with both ends kept: each hold-out is a whole refit, and a profile may pool
  runs at hundreds of batches (the time stays bounded; the rest read "—").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from cotune._lazy import annotation_module
from cotune.models._accuracy import AccuracyModel, usable_noise_scale
from cotune.models._effects import largest_level_effects
from cotune.models._step_time import StepTimeModel
from cotune.profile import Profile

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
else:  # the *_frame methods' return type only: validating needs no pandas
    pd = annotation_module("pandas")

__all__ = ["TimeFitReport", "AccuracyFitReport", "FitReport", "validate_profile", "MAX_HELD_OUT_BATCHES", "MAX_FOLDS"]

MAX_HELD_OUT_BATCHES = 24

# Cross-validation folds a caller may ask for: each is a refit of every GPU type's model,
# and a profile has fewer configurations than this in practice (more folds than
# configurations is leave-one-out already: 1000 ran past 300 s).
MAX_FOLDS = 100


def held_out_batches(n: int, *, limit: int = MAX_HELD_OUT_BATCHES) -> np.ndarray:
    """Indices of the sorted batches to hold out: all of them up to ``limit``, else
    ``limit`` spread evenly with both ends kept (the ends test extrapolation)."""
    if n <= limit:
        return np.arange(n)
    return np.unique(np.round(np.linspace(0, n - 1, limit)).astype(int))


@dataclass(frozen=True)
class TimeFitReport:
    gpu: str
    n_records: int
    n_configs: int
    workers_range: tuple[int, int]
    hosts_range: tuple[int, int]
    local_batch_range: tuple[int, int]
    cv_mape: float  # K-fold, interpolation
    extrapolation_split: int | None  # fitted on workers <= this
    extrapolation_mape: float | None  # on workers above it
    interval_coverage: float  # share of held-out probes inside the interval
    # Every held-out prediction: (workers, hosts, local_batch, measured_s, predicted_s, kind),
    # kind "interpolated" (K-fold) or "extrapolated" (fitted on fewer workers); for plots and frames.
    held_out: tuple[tuple[int, int, int, float, float, str], ...] = ()
    # Whether the full fit keeps the level effects (the probes depart from the monotone law at
    # some batches or placements: docs/models.md § 1), and the model's own cross-validated mean
    # |log error| without and with them (None with too few configurations to cross-validate).
    level_effects: bool = False
    level_effects_cv: tuple[float, float] | None = None
    # The largest, when kept: (kind, level, measured / law) — "local batch" (b,) or
    # "placement" (workers, hosts); cotune.models._effects.largest_level_effects.
    level_effects_largest: tuple[tuple[str, tuple[float, ...], float], ...] = ()
    # Whether the probes measure sync growth with workers (two distinct log2(n − 1) among the
    # multi-worker probes of one host class); if not, it is a prior with its spread (σ_growth).
    sync_growth_measured: bool = True


@dataclass(frozen=True)
class AccuracyFitReport:
    n_eval: int
    n_runs: int
    n_diverged: int
    batches: tuple[int, ...]
    epochs_range: tuple[float, float]
    reference_target: float
    measured_epochs: tuple[float, ...]
    loo_epochs: tuple[float | None, ...]  # left-one-batch-out prediction per batch
    loo_mape: float | None
    residual_sigma: float
    # The end batches (None in loo_epochs) predicted from the others: extrapolation in batch.
    extrapolated_epochs: tuple[float | None, ...] = ()
    # Measured batches set aside as anchors at the reference target: off the robust law.
    outlier_batches: tuple[int, ...] = ()
    # Batches whose curves ran as long as the others' yet end far below them (a failed or
    # diverged run): left out of the reference target and of the plateau drift τ.
    failed_batches: tuple[int, ...] = ()
    # Batches whose plateau sits off both neighbours' (a lone dip or spike): left out of τ.
    plateau_off_batches: tuple[int, ...] = ()
    # Spread after the profile's own evidence: log-epochs per doubling, inside / beyond.
    kappa_inside: float | None = None
    kappa_beyond: float | None = None
    # The held-out prediction's interval (at the model's interval level, given the target
    # is reached) per batch, None where not held out; and how often it held the measured
    # epochs: the epochs model's calibration on this profile's own data.
    loo_lower: tuple[float | None, ...] = ()
    loo_upper: tuple[float | None, ...] = ()
    interval: float = 0.9
    interval_covered: int = 0
    interval_count: int = 0

    @property
    def interval_coverage(self) -> float | None:
        """Share of held-out batches whose measured epochs fell in the interval (None: none held out)."""
        return self.interval_covered / self.interval_count if self.interval_count else None


@dataclass(frozen=True)
class FitReport:
    workload: str
    time: tuple[TimeFitReport, ...]
    accuracy: AccuracyFitReport | None
    accuracy_error: str | None = None

    def time_frame(self) -> "pd.DataFrame":
        """One row per GPU type: probed ranges and cross-validated errors."""
        import pandas as pd

        rows = []
        for t in self.time:
            rows.append({
                "gpu": t.gpu, "n_records": t.n_records, "n_configs": t.n_configs,
                "workers_min": t.workers_range[0], "workers_max": t.workers_range[1],
                "hosts_min": t.hosts_range[0], "hosts_max": t.hosts_range[1],
                "local_batch_min": t.local_batch_range[0], "local_batch_max": t.local_batch_range[1],
                "cv_mape": t.cv_mape, "extrapolation_split": t.extrapolation_split,
                "extrapolation_mape": t.extrapolation_mape, "interval_coverage": t.interval_coverage,
                "level_effects": t.level_effects,
            })
        return pd.DataFrame(rows)

    def held_out_frame(self) -> "pd.DataFrame":
        """Every held-out step-time prediction: measured vs predicted, interpolated or extrapolated."""
        import pandas as pd

        columns = ["gpu", "workers", "hosts", "local_batch", "measured_s", "predicted_s", "kind"]
        return pd.DataFrame([(t.gpu, *row) for t in self.time for row in t.held_out], columns=columns)

    def accuracy_frame(self) -> "pd.DataFrame":
        """One row per measured global batch: measured and left-one-batch-out predicted
        epochs to the reference target; ``kind`` "extrapolated" for the end batches
        (predicted from batches all on one side), else "interpolated"; ``lower``/``upper``
        the held-out prediction's interval (None where the batch was not held out)."""
        import pandas as pd

        columns = ["global_batch", "measured_epochs", "predicted_epochs", "kind", "lower", "upper"]
        a = self.accuracy
        if a is None:
            return pd.DataFrame(columns=columns)
        none = (None,) * len(a.batches)
        ext = a.extrapolated_epochs or none
        rows = [
            (b, m, loo if x is None else x, "interpolated" if x is None else "extrapolated", lo, hi)
            for b, m, loo, x, lo, hi in zip(a.batches, a.measured_epochs, a.loo_epochs, ext, a.loo_lower or none,
                                            a.loo_upper or none)
        ]
        return pd.DataFrame(rows, columns=columns)
    notes: tuple[str, ...] = ()  # step records left out as outliers
    # (gpu, local batch) where the search stops: the smallest out-of-memory local batch on
    # that GPU type that no later step superseded (cotune.profile.oom_superseded)
    out_of_memory: tuple[tuple[str, int], ...] = ()


def _configurations(a: dict[str, np.ndarray]) -> np.ndarray:
    """Each record's index among the distinct (workers, hosts, local batch) configurations."""
    keys = np.column_stack([a["workers"], a["hosts"], a["local_batch"]])
    return np.unique(keys, axis=0, return_inverse=True)[1].ravel()


def _fold_count(a: dict[str, np.ndarray], *, folds: int) -> int:
    """Folds :func:`_time_report` runs: the folds asked for, at most one per configuration."""
    cfg = _configurations(a)
    if cfg.size == 0:
        return 0
    n_cfg = int(cfg.max()) + 1
    return len(np.unique(np.arange(n_cfg) % max(2, min(folds, n_cfg))))


def _time_report(gpu: str, a: dict[str, np.ndarray], *, folds: int, seed: int, tick=lambda: None) -> TimeFitReport:
    cfg = _configurations(a)
    n_cfg = int(cfg.max()) + 1
    rng = np.random.default_rng(seed)
    fold_of = rng.permutation(n_cfg) % max(2, min(folds, n_cfg))
    errs, inside = [], []
    held: list[tuple[int, int, int, float, float, str]] = []

    def keep(sel: np.ndarray, predicted: np.ndarray, kind: str) -> None:
        for w, h, b, y, q in zip(a["workers"][sel], a["hosts"][sel], a["local_batch"][sel], a["step_time_s"][sel], predicted):
            held.append((int(w), int(h), int(b), float(y), float(q), kind))

    for f in np.unique(fold_of):
        tick()
        test = fold_of[cfg] == f
        if test.all() or not test.any():
            continue
        m = StepTimeModel(n_bootstrap=8, random_state=seed).fit(
            a["workers"][~test], a["hosts"][~test], a["local_batch"][~test], a["step_time_s"][~test]
        )
        p = m.predict(a["workers"][test], a["hosts"][test], a["local_batch"][test])
        y = a["step_time_s"][test]
        errs.append(np.abs(p.step_time_s / y - 1))
        inside.append((y >= p.lower_s) & (y <= p.upper_s))
        keep(test, p.step_time_s, "interpolated")
    cv = float(np.mean(np.concatenate(errs))) if errs else float("nan")
    cov = float(np.mean(np.concatenate(inside))) if inside else float("nan")
    ws = np.unique(a["workers"])
    split, ext = None, None
    if ws.size >= 2:
        split = int(ws[(ws.size - 1) // 2])
        train = a["workers"] <= split
        m = StepTimeModel(n_bootstrap=0).fit(a["workers"][train], a["hosts"][train], a["local_batch"][train], a["step_time_s"][train])
        p = m.predict(a["workers"][~train], a["hosts"][~train], a["local_batch"][~train])
        ext = float(np.mean(np.abs(p.step_time_s / a["step_time_s"][~train] - 1)))
        keep(~train, p.step_time_s, "extrapolated")
    full = StepTimeModel(n_bootstrap=0, random_state=seed).fit(a["workers"], a["hosts"], a["local_batch"], a["step_time_s"])
    tick()
    return TimeFitReport(
        gpu=gpu,
        n_records=int(a["workers"].size),
        n_configs=n_cfg,
        workers_range=(int(a["workers"].min()), int(a["workers"].max())),
        hosts_range=(int(a["hosts"].min()), int(a["hosts"].max())),
        local_batch_range=(int(a["local_batch"].min()), int(a["local_batch"].max())),
        cv_mape=cv,
        extrapolation_split=split,
        extrapolation_mape=ext,
        interval_coverage=cov,
        held_out=tuple(held),
        level_effects=bool(full.level_effects_),
        level_effects_cv=full.effects_cv_,
        level_effects_largest=largest_level_effects(full.effects_, full.points_) if full.level_effects_ else (),
        sync_growth_measured=bool(full.growth_identified_),
    )


def _accuracy_report(profile: Profile, tick, e: dict[str, np.ndarray]) -> AccuracyFitReport:
    goal = profile.workload.goal
    # Read once: every held-out refit below takes the same noise records.
    noise = dict(b_noise=usable_noise_scale(profile.noise_scale()), noise_trace=profile.noise_trace())
    full = AccuracyModel(goal=goal, **noise).fit(e["global_batch"], e["epoch"], e["metric"], e["seed"])
    # Reference target: one that every measured batch reaches, near the top of the
    # weakest batch's final metric (the regime recommendations care about). A failed batch
    # reaches nothing the others do: it would set a target near chance, which every other
    # batch meets in its first epochs, and the check would test nothing.
    ok = ~np.isin(full.batches_, full.failed_batches_)
    if not np.any(ok):
        ok[:] = True
    finals = np.array([row[np.isfinite(row)][-1] for row in full.surface_[ok]])
    starts = np.array([row[np.isfinite(row)][0] for row in full.surface_[ok]])
    weakest = float(finals.min())
    ref_score = float(np.max(starts)) + 0.9 * (weakest - float(np.max(starts)))
    ref = ref_score if goal == "max" else -ref_score
    measured = full.measured_epochs(ref)["epochs"]
    loo: list[float | None] = []
    errs = []
    extrapolated: list[float | None] = []
    lows: list[float | None] = []
    highs: list[float | None] = []
    covered = counted = 0
    chosen = set(held_out_batches(len(full.batches_)).tolist())
    for i, b in enumerate(full.batches_):
        lows.append(None)
        highs.append(None)
        if i not in chosen:
            loo.append(None)
            extrapolated.append(None)
            continue
        tick()
        keep = e["global_batch"] != b
        end = i in (0, len(full.batches_) - 1)
        if len(full.batches_) < 3:
            loo.append(None)
            extrapolated.append(None)
            continue
        m = AccuracyModel(goal=goal, **noise).fit(
            e["global_batch"][keep], e["epoch"][keep], e["metric"][keep], e["seed"][keep]
        )
        held = m.epochs_to_target(np.array([b]), ref)
        pred = float(held.epochs[0])
        pred_or_none = pred if np.isfinite(pred) else None
        lo, hi = float(held.lower[0]), float(held.upper[0])
        if np.isfinite(lo) and np.isfinite(hi) and np.isfinite(measured[i]):
            # Given the target is reached (it is, at the reference target): whether the
            # interval held the measured epochs; an end batch tests extrapolation.
            lows[-1], highs[-1] = lo, hi
            counted += 1
            covered += int(lo <= measured[i] <= hi)
        # An end batch left out tests extrapolation, not this fit: kept apart from the LOO error.
        loo.append(None if end else pred_or_none)
        extrapolated.append(pred_or_none if end else None)
        if end:
            continue
        if np.isfinite(pred) and np.isfinite(measured[i]):
            errs.append(abs(pred / measured[i] - 1))
    ep = e["epoch"][e["epoch"] > 0]
    return AccuracyFitReport(
        n_eval=int(e["epoch"].size),
        n_runs=full.n_runs_,
        n_diverged=full.n_diverged_,
        batches=tuple(int(b) for b in full.batches_),
        epochs_range=(float(ep.min()), float(ep.max())),
        reference_target=float(ref),
        measured_epochs=tuple(float(v) for v in measured),
        loo_epochs=tuple(loo),
        loo_mape=float(np.mean(errs)) if errs else None,
        residual_sigma=full.residual_sigma_,
        extrapolated_epochs=tuple(extrapolated),
        outlier_batches=tuple(int(b) for b in full.outlier_batches(ref)),
        failed_batches=tuple(int(b) for b in full.failed_batches_),
        plateau_off_batches=tuple(int(b) for b in full.plateau_off_),
        kappa_inside=full.kappa_inside_,
        kappa_beyond=full.kappa_beyond_,
        loo_lower=tuple(lows),
        loo_upper=tuple(highs),
        interval=full.interval,
        interval_covered=covered,
        interval_count=counted,
    )


def validate_profile(
    profile: "Profile | str | os.PathLike[str]", *, folds: int = 5, seed: int = 0, progress: Callable[[int, int], None] | None = None
) -> FitReport:
    """Cross-validated fit quality of every model of ``profile``.

    ``progress(done, total)`` is called as refits finish (the CLI draws a bar with it).
    ``profile``: a :class:`Profile`, a profile file or a bundled example's name.
    """
    from cotune._checks import integer
    from cotune.profile import load_profile

    profile = load_profile(profile)
    folds = integer(folds, where="folds", ge=2, le=MAX_FOLDS)
    seed = integer(seed, where="seed", ge=0)
    from cotune.errors import ModelError

    from cotune.models._fitted import check_gpu_types, clean_arrays

    check_gpu_types(profile)  # the fit's own bound, before any fold is fitted
    # The same records as the fit a recommendation uses: outliers left out, and said so.
    clean = clean_arrays(profile)
    # One tick per fold that runs (never more than the GPU type's configurations) and one
    # for its full fit: a total of the folds asked for left the bar short of its end.
    total = sum(_fold_count(a, folds=folds) + 1 for a in clean.steps.values()) + min(
        len({e.global_batch for e in profile.evals}), MAX_HELD_OUT_BATCHES)
    done = [0]

    def tick() -> None:
        done[0] += 1
        if progress is not None:
            progress(min(done[0], total), total)

    times = tuple(_time_report(g, a, folds=folds, seed=seed, tick=tick) for g, a in clean.steps.items())
    try:
        acc, err = _accuracy_report(profile, tick, clean.evals), None
    except ModelError as exc:
        acc, err = None, str(exc)
    # The memory limits the search keeps (out-of-memory failure records no later step superseded).
    limits = tuple((gpu, cap + 1) for gpu in profile.gpus if (cap := profile.max_local_batch(gpu)) is not None)
    return FitReport(workload=profile.workload.name, time=times, accuracy=acc, accuracy_error=err, notes=clean.notes,
                     out_of_memory=limits)
