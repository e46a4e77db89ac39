"""``cotune recommend``: the cheapest configuration meeting target and deadline."""

from __future__ import annotations

import argparse
from typing import Any

from cotune.cli import _args, _fitcache

__all__ = ["add_parser", "run", "add_problem_arguments", "request_from_args"]


def add_problem_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments that define the question; shared with commands built on recommend."""
    p.add_argument("profile", metavar="PROFILE", help="profile file (JSON Lines) or a bundled example name (cotune examples)")
    p.add_argument("--target", type=_args.finite_float, required=True, help="metric to reach (e.g. 0.94 top-1; a loss for goal 'min')")
    p.add_argument("--deadline", type=_args.duration, default=None, metavar="DURATION", help="time limit: 90m, 2h, 1h30m or seconds")
    p.add_argument(
        "--max-workers",
        action="append",
        default=None,
        metavar="N|GPU=N",
        help="workers available: one number for every gpu type, or GPU=N per type (repeatable); default 16",
    )
    p.add_argument("--gpus-per-host", type=_args.positive_int, default=4, metavar="N", help="accelerators per machine (default 4)")
    p.add_argument(
        "--price",
        action="append",
        type=_args.key_value,
        default=None,
        metavar="GPU=USD",
        help="price per worker-hour, e.g. t4=0.53 or t4:spot=0.16 (repeatable); without prices cost is worker-hours",
    )
    p.add_argument("--objective", choices=("cost", "time"), default="cost", help="minimise cost (default) or time")
    p.add_argument("--budget", type=_args.positive_float, default=None, help="upper bound on cost (USD, or worker-hours without prices)")
    p.add_argument("--confidence", type=_args.probability, default=None, metavar="Q", help="meet the deadline with probability Q (e.g. 0.9), not just on average")
    p.add_argument("--gpu", action="append", default=None, help="restrict to this gpu type (repeatable)")
    p.add_argument("--local-batch", type=_args.int_list, default=None, metavar="B,B,...", help="local batches to consider (default: the probed ones)")
    p.add_argument("--workers", type=_args.int_list, default=None, metavar="N,N,...", help="worker counts to consider (default: 1..max)")
    p.add_argument("--hosts", choices=("packed", "any"), default="packed", help="packed: fewest hosts (default); any: every host count")
    p.add_argument("--startup", type=_args.duration, default=0.0, metavar="DURATION", help="fixed start-up overhead added to every run")
    p.add_argument("--baseline-batch", type=_args.positive_int, default=None, metavar="B", help="local batch the resource-only baseline keeps")
    p.add_argument("--baseline-workers", type=_args.positive_int, default=None, metavar="N", help="workers the batch-only baseline keeps")


def _max_workers(values: list[str] | None) -> Any:
    from cotune.errors import InputError

    if not values:
        return 16
    per: dict[str, int] = {}
    default = None
    for v in values:
        key, sep, num = v.partition("=")
        text = num if sep else key
        try:
            n = int(text)
        except ValueError:
            raise InputError(f"--max-workers expects N or GPU=N, got {v!r}") from None
        if n < 1:
            raise InputError(f"--max-workers must be >= 1, got {v!r}")
        if sep:
            per[key.strip().lower()] = n
        else:
            default = n
    if not per:
        return default
    return _PerGpu(per, default or 16)


class _PerGpu(dict):
    """Per-gpu caps with a default for gpu types not named."""

    def __init__(self, per: dict[str, int], default: int) -> None:
        super().__init__(per)
        self.default = default

    def __missing__(self, key: str) -> int:
        return self.default

    def __contains__(self, key: object) -> bool:  # every gpu has a cap
        return True


def request_from_args(args: argparse.Namespace) -> dict[str, Any]:
    return dict(
        target=args.target,
        deadline_s=args.deadline,
        max_workers=_max_workers(args.max_workers),
        gpus_per_host=args.gpus_per_host,
        prices=dict(args.price) if args.price else None,
        objective=args.objective,
        budget=args.budget,
        confidence=args.confidence,
        gpus=args.gpu,
        local_batches=args.local_batch,
        workers=args.workers,
        hosts=args.hosts,
        startup_s=args.startup,
        baseline_local_batch=args.baseline_batch,
        baseline_workers=args.baseline_workers,
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "recommend",
        help="cheapest gpu/workers/batch that reaches the target by the deadline",
        description="Fit monotone models to PROFILE and search every (gpu, workers, hosts, local batch) "
        "for the cheapest configuration that reaches --target by --deadline.",
        epilog="Exit codes: 0 ok, 1 nothing feasible (the output says what to relax), 2 bad input.",
    )
    add_problem_arguments(p)
    p.add_argument("--cluster", default=None, metavar="FILE", help="cluster file (TOML/YAML): availability, prices and spot risk; "
                   "considers on-demand, spot and mixed plans (docs/spot.md)")
    p.add_argument("--top", type=_args.positive_int, default=5, help="runner-ups to show (default 5)")
    p.add_argument("--json", action="store_true", help="print one JSON object (schema: docs/cli.md)")
    p.add_argument("--plot", default=None, metavar="FILE.png", help="also draw the cost-time frontier (chosen, baselines, "
                   "intervals, deadline) into this PNG; needs matplotlib (cotune[plot])")
    _fitcache.add_fit_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cotune._recommend import load_profile, recommend
    from cotune.cli._output import emit, emit_json
    from cotune.cli._render import render_recommendation
    from cotune.errors import EXIT_INFEASIBLE, EXIT_OK

    profile = load_profile(args.profile)
    models = _fitcache.fitted_models(profile, args)
    rec = recommend(profile, models=models, top=args.top, cluster=args.cluster, **request_from_args(args))
    if args.plot:
        rec.plot(args.plot)
    if args.json:
        emit_json(rec.to_dict())
    else:
        emit(render_recommendation(rec))
    return EXIT_OK if rec.feasible else EXIT_INFEASIBLE
