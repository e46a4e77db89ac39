"""``cotune replan``: the best configuration for the remaining work of a running job."""

from __future__ import annotations

import argparse

from cotune.cli import _args

__all__ = ["add_parser", "run"]


def _current(text: str) -> tuple[str, str, int, int]:
    parts = text.split(":")
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(f"expected GPU:MARKET:WORKERS:LOCAL_BATCH such as t4:spot:8:128, got {text!r}")
    gpu, market, workers, batch = parts
    market = market.strip().lower().replace("-", "_")
    if market not in ("on_demand", "spot", "mixed"):
        raise argparse.ArgumentTypeError(f"market in --current must be on_demand, spot or mixed, got {market!r}")
    try:
        n, b = int(workers), int(batch)
    except ValueError:
        raise argparse.ArgumentTypeError(f"workers and local batch in --current must be whole numbers, got {text!r}") from None
    if n < 1 or b < 1:
        raise argparse.ArgumentTypeError(f"workers and local batch in --current must be >= 1, got {text!r}")
    return gpu.strip().lower(), market, n, b


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replan",
        help="best configuration for the remaining work of a running job (spot-aware, with hysteresis)",
        description="Given a running job's progress (epochs done, time used, workers lost or added, new prices), "
        "find the best configuration for the remaining work; switch only when the gain beats the restart cost plus "
        "a margin, or when the current configuration would miss the deadline. See docs/spot.md.",
        epilog="Exit codes: 0 ok (stay or switch), 1 nothing can meet the remaining deadline, 2 bad input.",
    )
    p.add_argument("profile", metavar="PROFILE", help="profile file (JSON Lines) or a bundled example name")
    p.add_argument("--cluster", required=True, metavar="FILE", help="cluster file (TOML/YAML; docs/spot.md)")
    p.add_argument("--target", type=_args.finite_float, required=True, help="metric to reach")
    p.add_argument("--deadline", type=_args.duration, required=True, metavar="DURATION", help="the job's deadline, counted from its start")
    p.add_argument("--elapsed", type=_args.duration, required=True, metavar="DURATION", help="wall time used so far")
    p.add_argument("--epochs-done", type=_args.non_negative_float, required=True, metavar="E", help="epochs trained so far")
    p.add_argument("--current", type=_current, required=True, metavar="GPU:MARKET:WORKERS:LOCAL_BATCH",
                   help="the configuration the job started with, e.g. t4:spot:8:128")
    p.add_argument("--workers-lost", type=_args.non_negative_int, default=0, metavar="N", help="workers revoked and not replaced")
    p.add_argument("--workers-added", type=_args.non_negative_int, default=0, metavar="N", help="workers added since the start")
    p.add_argument("--price", action="append", type=_args.key_value, default=None, metavar="GPU[:MARKET]=USD",
                   help="new price per GPU-hour overriding the cluster file, e.g. t4:spot=0.21 (repeatable)")
    p.add_argument("--confidence", type=_args.probability, default=None, metavar="Q", help="meet the deadline with probability Q")
    p.add_argument("--objective", choices=("cost", "time"), default="cost", help="minimise cost (default) or time")
    p.add_argument("--margin", type=_args.fraction, default=0.05, metavar="F",
                   help="switch only if the gain, after the restart, exceeds this fraction of staying (default 0.05)")
    p.add_argument("--restart", type=_args.duration, default=None, metavar="DURATION",
                   help="time a configuration change costs (default: checkpoint write + reload + slowest replacement delay)")
    p.add_argument("--max-workers", type=_args.positive_int, default=64, metavar="N", help="cap on workers per gpu type (default 64)")
    p.add_argument("--gpus-per-host", type=_args.positive_int, default=4, metavar="N", help="accelerators per machine unless the cluster file says")
    p.add_argument("--local-batch", type=_args.int_list, default=None, metavar="B,B,...", help="local batches to consider")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def render(result) -> str:  # ReplanResult; untyped to keep imports lazy
    from cotune.cli._output import table
    from cotune.units import format_duration, format_money

    rows = []
    for label, c in (("STAY", result.stay), ("BEST", result.best)):
        if c is None:
            rows.append([label, "—", "—", "—", "—", "—", "—", "—"])
            continue
        rows.append([
            label, c.gpu, c.market, str(c.workers), str(c.local_batch), f"{c.epochs:.1f}",
            format_duration(c.time_at_confidence_s if result.confidence else c.time_s), format_money(c.cost, priced=True),
        ])
    head = ["", "GPU", "MARKET", "WORKERS", "LOCAL_B", "EPOCHS_LEFT", "TIME_Q" if result.confidence else "TIME", "COST"]
    status = "ahead of" if result.ahead else "behind"
    out = [
        f"cotune replan · {result.progress_fraction:.0%} of the work done, {result.schedule_fraction:.0%} of the time used "
        f"({status} the straight-line schedule) · {format_duration(result.remaining_deadline_s)} left",
        "",
        table(head, rows, right=[False, False, False, True, True, True, True, True]),
        "",
        f"Decision: {result.decision.upper()} — {result.reason}.",
    ]
    if result.notes:
        out += ["", "Notes:"] + [f"  - {n}" for n in result.notes]
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    from cotune.cli._output import emit, emit_json
    from cotune.errors import EXIT_INFEASIBLE, EXIT_OK
    from cotune.spot import Progress, replan

    gpu, market, workers, batch = args.current
    progress = Progress(
        epochs_done=args.epochs_done, elapsed_s=args.elapsed, gpu=gpu, market=market, workers=workers,
        local_batch=batch, workers_lost=args.workers_lost, workers_added=args.workers_added,
    )
    result = replan(
        args.profile, progress=progress, target=args.target, deadline_s=args.deadline, cluster=args.cluster,
        confidence=args.confidence, objective=args.objective, margin=args.margin, restart_s=args.restart,
        max_workers=args.max_workers, gpus_per_host=args.gpus_per_host, local_batches=args.local_batch,
        prices=dict(args.price) if args.price else None,
    )
    if args.json:
        emit_json(result.to_dict())
    else:
        emit(render(result))
    return EXIT_INFEASIBLE if result.decision == "infeasible" else EXIT_OK
