"""``cotune recommend``: the cheapest configuration meeting target and deadline."""

from __future__ import annotations

import argparse

from cotune.cli._question import add_question_arguments, recommend_from_args

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "recommend",
        help="cheapest gpu/workers/batch that reaches the target by the deadline",
        description="Fit monotone models to PROFILE and search every (gpu, workers, hosts, local batch) "
        "for the cheapest configuration that reaches --target by --deadline.",
        epilog="Exit codes: 0 ok, 1 nothing feasible (the output says what to relax), 2 bad input, 3 the environment "
               "failed (a file that cannot be written), 4 a bug in cotune.",
    )
    add_question_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object (schema: docs/cli.md)")
    p.add_argument("--plot", default=None, metavar="FILE", help="also draw the cost-time frontier (chosen, baselines, "
                   "intervals, deadline) into FILE (.png, .svg or .pdf by its suffix); needs matplotlib (cotune[plot])")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cotune.cli._output import emit, emit_json
    from cotune.cli._render import render_recommendation
    from cotune.errors import EXIT_INFEASIBLE, EXIT_OK

    if args.plot is not None:
        from cotune.plot import plot_format

        plot_format(args.plot)  # a bad suffix fails before the fit, not after it
    rec = recommend_from_args(args)
    if args.plot is not None:
        rec.plot(args.plot)
    if args.json:
        emit_json(rec.to_dict())
    else:
        emit(render_recommendation(rec))
    return EXIT_OK if rec.feasible else EXIT_INFEASIBLE
