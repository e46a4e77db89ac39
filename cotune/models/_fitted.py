"""All the models of one profile, fitted together: one step-time model per GPU type and
one accuracy model. This is the small interface the solver sees.

Step records that cannot be right (:mod:`cotune.models._outliers`) are left out before
fitting; :attr:`FittedModels.notes` says which, so a recommendation and ``cotune fit``
report them instead of silently following them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from cotune._checks import excerpt
from cotune.errors import ModelError
from cotune.models._accuracy import AccuracyModel, EpochsPrediction
from cotune.models._outliers import find_step_outliers
from cotune.models._step_time import StepTimeModel, StepTimePrediction
from cotune.profile import Profile

__all__ = ["FittedModels", "fit_models", "clean_step_arrays"]


@dataclass(frozen=True)
class FittedModels:
    """Fitted models of one workload; ``predict_*`` are what the solver calls."""

    workload_name: str
    dataset_size: int
    goal: str
    metric_name: str
    time_models: Mapping[str, StepTimeModel]
    accuracy: AccuracyModel
    max_local_batch: Mapping[str, int | None] = field(default_factory=dict)
    # What the fit left out and why (outlier records), for the user to read.
    notes: tuple[str, ...] = ()

    @property
    def gpus(self) -> tuple[str, ...]:
        return tuple(self.time_models)

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


def fit_models(
    profile: Profile,
    *,
    interval: float = 0.9,
    n_bootstrap: int = 16,
    batch_monotone: bool = True,
    random_state: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> FittedModels:
    """Fit every model a recommendation needs from one profile.

    ``progress(done, total)`` is called after each model (one per GPU type, then the
    accuracy model): the CLI draws a bar with it.
    """
    if not profile.steps:
        raise ModelError(
            f"profile {excerpt(profile.workload.name)} has no step records: run timing probes (cotune profile) first"
        )
    arrays, notes = clean_step_arrays(profile)
    time_models = {}
    total = len(profile.gpus) + 1
    for done, (gpu, a) in enumerate(arrays.items(), start=1):
        time_models[gpu] = StepTimeModel(interval=interval, n_bootstrap=n_bootstrap, random_state=random_state).fit(
            a["workers"], a["hosts"], a["local_batch"], a["step_time_s"]
        )
        if progress is not None:
            progress(done, total)
    e = profile.eval_arrays()
    accuracy = AccuracyModel(
        goal=profile.workload.goal, interval=interval, batch_monotone=batch_monotone, b_noise=profile.noise_scale()
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
        notes=notes,
    )


def clean_step_arrays(profile: Profile) -> tuple[dict[str, dict[str, np.ndarray]], tuple[str, ...]]:
    """Step columns per GPU type without outlier records, and a note per GPU that had some."""
    arrays: dict[str, dict[str, np.ndarray]] = {}
    notes: list[str] = []
    for gpu in profile.gpus:
        a = profile.step_arrays(gpu)
        found = find_step_outliers(
            workers=a["workers"], hosts=a["hosts"], local_batch=a["local_batch"], step_time_s=a["step_time_s"]
        )
        if found.count:
            keep = ~found.mask
            a = {k: v[keep] for k, v in a.items()}
            shown = "; ".join(found.reasons[:3]) + (f"; and {found.count - 3} more" if found.count > 3 else "")
            notes.append(
                f"{gpu}: {found.count} of {found.mask.size:,} step record{'s' if found.count > 1 else ''} left out as "
                f"outlier{'s' if found.count > 1 else ''} ({shown}): check or re-measure "
                f"{'them' if found.count > 1 else 'it'}"
            )
        arrays[gpu] = a
    return arrays, tuple(notes)
