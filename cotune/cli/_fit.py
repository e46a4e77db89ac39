"""``cotune fit``: how well the models fit a profile (cross-validated)."""

from __future__ import annotations

import argparse
import dataclasses

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fit",
        help="how well the models fit a profile: cross-validated errors and probed ranges",
        description="Fit the step-time and accuracy models to PROFILE and report cross-validated errors, "
        "the probed ranges (inside: interpolated; outside: extrapolated) and interval coverage.",
    )
    p.add_argument("profile", metavar="PROFILE", help="profile file or bundled example name")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--plot", default=None, metavar="FILE", help="also draw predicted vs measured step time and epochs "
                   "(interpolated vs extrapolated) into FILE (.png, .svg or .pdf by its suffix); needs matplotlib (cotune[plot])")
    from cotune.cli._fitcache import add_fit_arguments

    add_fit_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cotune.profile import load_profile
    from cotune.cli._output import emit, emit_json
    from cotune.cli._render import render_fit_report
    from cotune.errors import ModelError
    from cotune.cli._fitcache import fit_report

    if args.plot is not None:
        from cotune.plot import plot_format

        plot_format(args.plot)  # a bad suffix fails before the cross-validation, not after it
    profile = load_profile(args.profile)
    if not profile.steps and not profile.evals:
        raise ModelError(f"profile {profile.workload.name!r} has no step or eval records: nothing to fit; run timing "
                         "probes (cotune profile) or import a run's log (cotune import) first")
    report = fit_report(profile, args)
    if profile.warnings:
        # What the reader left out (a torn last line a kill left), as recommend and replan say it;
        # added after the cache, which is keyed by the records alone: a report cached before the
        # tail was torn (or after it was cut) must not say (or miss) it.
        report = dataclasses.replace(report, notes=tuple(profile.warnings) + tuple(report.notes))
    if args.plot is not None:
        from cotune.plot import plot_fit

        plot_fit(report, path=args.plot)
    if args.json:
        data = dataclasses.asdict(report)
        for t in data["time"]:
            t.pop("held_out", None)  # one row per probe: in --plot and FitReport.held_out_frame(), not the summary
            t["level_effects_largest"] = [{"kind": k, "level": list(level), "ratio": r} for k, level, r in t["level_effects_largest"]]
        if report.accuracy is not None:
            data["accuracy"]["interval_coverage"] = report.accuracy.interval_coverage
        emit_json(_jsonable(data))
    else:
        emit(render_fit_report(report))
    return 0


def _jsonable(x):
    import math

    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x
