"""``cotune replan``: the best configuration for the remaining work of a running job."""

from __future__ import annotations

import argparse

from cotune._checks import parse_number
from cotune._request import DEFAULT_MARGIN, DEFAULT_RESTART_S
from cotune.cli import _args
from cotune.cli._question import add_question_arguments, cli_error, request_from_args

__all__ = ["add_parser", "run"]


@_args._wrap
def _current(text: str) -> tuple[str, str | None, int, int]:
    parts = text.split(":")
    if len(parts) == 3 and parts[1].strip().isdigit():
        # GPU:WORKERS:LOCAL_BATCH: the market the request implies (on demand without --cluster)
        parts = [parts[0], None, parts[1], parts[2]]
    if len(parts) != 4:
        from cotune.errors import InputError

        raise InputError(f"expected GPU:MARKET:WORKERS:LOCAL_BATCH such as t4:spot:8:128 (or t4:8:128 on demand), "
                         f"got {text[:60]!r}")
    gpu, market, workers, batch = parts
    return gpu, market, parse_number(workers, where="", integer=True), parse_number(batch, where="", integer=True)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replan",
        help="best configuration for the remaining work of a running job (spot-aware, with hysteresis)",
        description="Given a running job's progress (its own tracked curve and step times in the profile, or epochs "
        "done and time used; workers lost or added, new prices, money spent), find the best configuration for the "
        "remaining work: continue, add or remove workers, change the batch, or say the target is not reachable by the "
        "deadline at any configuration and name the nearest; switch only when the gain beats the restart cost plus "
        "a margin, or when the current configuration would miss the deadline. See docs/closed-loop.md and docs/spot.md.",
        epilog="Exit codes: 0 ok (stay or switch), 1 nothing can meet the remaining deadline (a job past its deadline "
               "too: the nearest option and the deadline it needs), 2 bad input, 3 the "
               "environment failed (a locked or unwritable profile), 4 a bug in cotune.",
    )
    add_question_arguments(p, replan=True)
    g = p.add_argument_group("the running job", "read from the profile's tracked records (cotune.track.Tracker) when "
                             "left out; an option given wins over them")
    g.add_argument("--elapsed", type=_args.duration_or_zero, default=None, metavar="DURATION",
                   help="wall time used so far (default: the job's time at its last tracked evaluation)")
    g.add_argument("--epochs-done", type=_args.finite_float, default=None, metavar="E",
                   help="epochs trained so far (default: its last tracked evaluation)")
    g.add_argument("--current", type=_current, default=None, metavar="GPU:MARKET:WORKERS:LOCAL_BATCH",
                   help="the configuration the job runs at, e.g. t4:spot:8:128, or t4:8:128 on demand without --cluster "
                   "(default: its last tracked step record)")
    g.add_argument("--schedule-epochs", type=_args.finite_float, default=None, metavar="E",
                   help="where the job's learning-rate schedule ends (its configured epochs): a target not reached "
                   "by then is missed (default: no known end)")
    g.add_argument("--spent", type=_args.finite_float, default=None, metavar="X",
                   help="money spent so far (USD, or worker-hours without prices; default 0)")
    g.add_argument("--job", default=None, metavar="NAME", help="which tracked job in the profile (default: the latest)")
    g.add_argument("--lr-rule", choices=("sqrt", "linear", "none"), default=None,
                   help="how the job scales its learning rate with the global batch (default sqrt); reported with a batch change")
    g.add_argument("--workers-lost", type=_args.whole_number, default=0, metavar="N", help="workers revoked and not replaced")
    g.add_argument("--workers-added", type=_args.whole_number, default=0, metavar="N", help="workers added since the start")
    g.add_argument("--out-of-memory", action="store_true",
                   help="the job stopped with an out-of-memory at its current configuration that the profile does not "
                        "record (a rank other than 0 ran out, a pod OOMKilled): it cannot go on as it ran, and every "
                        "option runs a smaller micro-batch")
    g.add_argument("--margin", type=_args.finite_float, default=None, metavar="F",
                   help="switch only if the best alternative, after its restart, saves more than this fraction of the whole "
                        "job's cost (--spent plus staying's remaining, a miss counted; of staying's remaining time "
                        f"with --objective time) (default {DEFAULT_MARGIN:g})")
    g.add_argument("--restart", type=_args.duration_or_zero, default=None, metavar="DURATION",
                   help="time a configuration change costs (default: the cluster file's checkpoint write + reload + slowest "
                        f"replacement delay; {DEFAULT_RESTART_S:g} s where it gives none)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)
    # The running job's size is part of --current: "--workers 4" is what people write first.
    current = "the running job's configuration is --current GPU:MARKET:WORKERS:LOCAL_BATCH, e.g. t4:on_demand:4:129"
    p.option_hints = {"--workers": f"{current} (--max-workers caps the search)",  # type: ignore[attr-defined]
                      "--market": current}


def render(result) -> str:  # ReplanResult; untyped to keep imports lazy
    from cotune.cli._output import one_line, table
    from cotune.cli._render import table_chance, time_at_label
    from cotune.units import format_chance, format_duration, format_money

    q = result.confidence if result.confidence is not None else 0.5  # what each chance was judged against
    rows = []
    for label, c in (("STAY", result.stay), ("BEST", result.best)):
        if c is None:
            rows.append([label, "—", "—", "—", "—", "—", "—", "—", "—"])
            continue
        p = getattr(c, "p_success", None)
        rows.append([
            label, c.gpu, c.market, str(c.workers), str(c.local_batch), f"{c.epochs:.1f}",
            format_duration(c.time_at_confidence_s if result.confidence else c.time_s), format_money(c.cost, priced=result.priced),
            table_chance(p, against=q),  # as recommend's table: whole percentages
        ])
    # P(SUCCESS): of the remaining work, within the remaining deadline (restart included).
    head = ["", "GPU", "MARKET", "WORKERS", "LOCAL_B", "EPOCHS_LEFT", time_at_label(result.confidence) if result.confidence else "TIME", "COST",
            "P(SUCCESS)"]
    status = "ahead of" if result.ahead else "behind"
    # Past the deadline nothing is left of it (the reason says by how much it has passed).
    late = not result.remaining_deadline_s > 0
    left = "the deadline has passed" if late else f"{format_duration(result.remaining_deadline_s)} left"
    out = [
        f"cotune replan · {result.progress_fraction:.0%} of the work done, {result.schedule_fraction:.0%} of the time used "
        f"({status} the straight-line schedule) · {left}",
        "",
        table(head, rows, right=[False, False, False, True, True, True, True, True, True]),
        "",
        f"Decision: {result.decision.upper()} — {result.reason}.",
    ]
    if result.decision == "switch" and result.changes:
        out.append(f"Changes: {', '.join(c.replace('_', ' ') for c in result.changes)}"
                   + ("" if result.lr_scale is None else f"; scale the learning rate by {result.lr_scale:.3g} ({result.lr_rule} rule)"))
    if result.nearest is not None:
        c = result.nearest
        t = c.time_at_confidence_s if result.confidence else c.time_s
        p = getattr(c, "p_success", None)
        out.append(f"Nearest: {c.workers} x {c.gpu} {c.market}, local batch {c.local_batch}: {format_duration(t)} left "
                   + ("with the deadline passed" if late else f"for {format_duration(result.remaining_deadline_s)} of deadline")
                   + f", {format_money(c.cost, priced=result.priced)}"
                   + ("" if p is None else f", P(success) {format_chance(p, against=q)}"))
    if result.budget_left is not None:
        out.append(f"Budget left: {format_money(result.budget_left, priced=result.priced)} (spent {format_money(result.spent, priced=result.priced)})")
    if result.notes:
        out += ["", "Notes:"] + [f"  - {one_line(n)}" for n in result.notes]
    return "\n".join(out)


def request_from_replan_args(args: argparse.Namespace):  # -> ReplanRequest
    """The :class:`~cotune.ReplanRequest` of parsed ``replan`` options."""
    from cotune._request import Progress, ReplanRequest

    # Caps not stated (or types not named) get replan's default where ReplanRequest resolves it for every door.
    question = request_from_args(args, prices=None)
    given = dict(epochs_done=args.epochs_done, elapsed_s=args.elapsed, workers_lost=args.workers_lost,
                 workers_added=args.workers_added, spent=args.spent, schedule_epochs=args.schedule_epochs,
                 out_of_memory=args.out_of_memory)
    if args.current is not None:
        given.update(zip(("gpu", "market", "workers", "local_batch"), args.current))
    try:
        if None in (given.get(k) for k in ("epochs_done", "elapsed_s", "market")) or args.current is None:
            from cotune.track import progress_from_records

            loaded = question.load_profile()
            question = question.replace(profile=loaded)
            progress = progress_from_records(loaded, job=args.job, default_market=question.implied_market, target=question.target,
                                             **given)
        else:
            progress = Progress(**{k: v for k, v in given.items() if v is not None})
        rule = {k: v for k, v in (("margin", args.margin), ("restart_s", args.restart), ("lr_rule", args.lr_rule),
                                  ("job", args.job)) if v is not None}
        return ReplanRequest(request=question, progress=progress, prices=_args.unique_pairs(args.price, "--price"), **rule)
    except Exception as exc:  # noqa: BLE001 - reworded for the CLI, re-raised as is otherwise
        raise cli_error(exc) from None


def run(args: argparse.Namespace) -> int:
    from cotune.cli._output import emit, emit_json
    from cotune.errors import EXIT_INFEASIBLE, EXIT_OK
    from cotune.spot import replan

    result = replan(request_from_replan_args(args))
    if args.json:
        emit_json(result.to_dict())
    else:
        emit(render(result))
    return EXIT_INFEASIBLE if result.decision == "infeasible" else EXIT_OK
