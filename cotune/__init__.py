"""cotune: choose workers, GPU type, market and batch size of a training job together.

Pipeline: profile (measurements) → monotone models (epoch time, accuracy) → solver
(cheapest candidate meeting the target by the deadline) → recommendation.

    >>> import cotune
    >>> rec = cotune.recommend("cifar10-resnet18", target=0.94, deadline_s=3600, max_workers=16)
    >>> rec.chosen.workers, rec.chosen.local_batch            # doctest: +SKIP

``import cotune`` is cheap: names below load on first use (PEP 562), so a scheduler
pays for numpy and scipy only when it fits a model. It never imports torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name → module that defines it
_EXPORTS = {
    "recommend": "cotune._pipeline",
    "replan": "cotune.spot",
    "RecommendRequest": "cotune._request",
    "ReplanRequest": "cotune._request",
    "ProfileRef": "cotune._request",
    "Progress": "cotune._request",
    "recommend_request": "cotune.api",
    "load_profile": "cotune.profile",
    "import_log": "cotune.logs",
    "Profile": "cotune.profile",
    "read_profile": "cotune.profile",
    "parse_profile": "cotune.profile",
    "write_profile": "cotune.profile",
    "append_records": "cotune.profile",
    "ProfileWriter": "cotune.profile",
    "WorkloadRecord": "cotune.profile",
    "StepRecord": "cotune.profile",
    "EvalRecord": "cotune.profile",
    "FailureRecord": "cotune.profile",
    "NoiseRecord": "cotune.profile",
    "FittedModels": "cotune.models",
    "fit_models": "cotune.models",
    "StepTimeModel": "cotune.models",
    "AccuracyModel": "cotune.models",
    "isotonic_grid": "cotune.models",
    "validate_profile": "cotune.models._validate",
    "Recommendation": "cotune.solver",
    "Choice": "cotune.solver",
    "SearchSpace": "cotune.solver",
    "list_examples": "cotune.examples",
    "example_path": "cotune.examples",
    "parse_duration": "cotune.units",
    "format_duration": "cotune.units",
    "Tracker": "cotune.track",
    "CotuneError": "cotune.errors",
    "InputError": "cotune.errors",
    "ProfileError": "cotune.errors",
    "ModelError": "cotune.errors",
    "InfeasibleError": "cotune.errors",
    "ProfileNotFoundError": "cotune.errors",
    "StorageError": "cotune.errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cotune' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from cotune._pipeline import recommend
    from cotune._request import ProfileRef, Progress, RecommendRequest, ReplanRequest
    from cotune.api import recommend_request
    from cotune.errors import (
        CotuneError,
        InfeasibleError,
        InputError,
        ModelError,
        ProfileError,
        ProfileNotFoundError,
        StorageError,
    )
    from cotune.examples import example_path, list_examples
    from cotune.logs import import_log
    from cotune.models import AccuracyModel, FittedModels, StepTimeModel, fit_models, isotonic_grid
    from cotune.models._validate import validate_profile
    from cotune.profile import (
        EvalRecord,
        FailureRecord,
        NoiseRecord,
        Profile,
        ProfileWriter,
        StepRecord,
        WorkloadRecord,
        append_records,
        load_profile,
        parse_profile,
        read_profile,
        write_profile,
    )
    from cotune.solver import Choice, Recommendation, SearchSpace
    from cotune.spot import replan
    from cotune.track import Tracker
    from cotune.units import format_duration, parse_duration
