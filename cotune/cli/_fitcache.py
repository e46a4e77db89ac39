"""Fitted models and fit reports for CLI commands: cached between calls (cotune/_cache.py),
with a progress bar while a fit runs (cotune/cli/_progress.py).

Every command that fits takes ``--no-cache`` and ``--quiet``. The cache lives in the
user's cache directory (``COTUNE_CACHE_DIR`` overrides it) and is keyed by the profile's
content, the fit options and the model code, so it is never stale.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from cotune.models import FittedModels
    from cotune.models._validate import FitReport
    from cotune.profile import Profile

__all__ = ["add_fit_arguments", "fitted_models", "fit_report"]

# fit_models' defaults the CLI does not expose (interval: the request's); the cache key still names them.
from cotune._request import DEFAULT_INTERVAL  # noqa: E402 - a leaf module, cheap

_FIT_OPTIONS = {"interval": DEFAULT_INTERVAL, "n_bootstrap": 16, "batch_monotone": True, "random_state": 0}


def add_fit_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", action="store_true",
                   help="refit instead of reusing the cached fit of this profile (cache: $COTUNE_CACHE_DIR or the user cache dir)")
    p.add_argument("--quiet", action="store_true", help="no progress bar (there is none off a terminal either)")


def fitted_models(profile: "Profile", args: argparse.Namespace, *, interval: float | None = None) -> "FittedModels":
    from cotune._cache import cached, profile_hash
    from cotune.cli._progress import progress_bar
    from cotune.models import fit_models

    options = dict(_FIT_OPTIONS, **({} if interval is None else {"interval": interval}))

    def fit() -> "FittedModels":
        with progress_bar("fitting models", quiet=args.quiet) as advance:
            return fit_models(profile, **options, progress=advance)

    return cached("models", {"profile": profile_hash(profile), **options}, fit, enabled=not args.no_cache)


def fit_report(profile: "Profile", args: argparse.Namespace) -> "FitReport":
    from cotune._cache import cached, profile_hash
    from cotune.cli._progress import progress_bar
    from cotune.models._validate import validate_profile

    def validate() -> "FitReport":
        with progress_bar("cross-validating", quiet=args.quiet) as advance:
            return validate_profile(profile, progress=advance)

    return cached("fit-report", {"profile": profile_hash(profile)}, validate, enabled=not args.no_cache)
