"""The question's options, shared by ``recommend``, ``k8s`` and ``replan``, and the one
function that turns them into a :class:`~cotune.RecommendRequest`.

Argument types here only *read* text (a number, a duration, ``KEY=VALUE``, signs, zero,
``nan`` and ``inf`` kept); ranges and cross-field rules are the request's (validated once,
in :mod:`cotune._request`). Its JSON-Pointer messages (``/deadline_s: …``) are reworded
with the option's name (``--deadline: …``), the pointer kept as ``where`` (a ``--json``
error document's ``path``).
"""

from __future__ import annotations

import argparse
from typing import Any

from cotune._checks import BadValue as _BadValue
from cotune.cli import _args
from cotune.errors import InputError

__all__ = ["OptionError", "add_question_arguments", "request_from_args", "cli_error", "recommend_from_args"]


def add_question_arguments(p: argparse.ArgumentParser, *, replan: bool = False, optional: bool = False) -> None:
    """Every field of the question as an option (``replan``: the subset replan uses, deadline required;
    ``optional``: PROFILE and --target may be left out, for a command that can answer from
    elsewhere — ``cotune k8s --answer`` — and checks them itself)."""
    from cotune._request import (
        DEFAULT_GPUS_PER_HOST,
        DEFAULT_INTERVAL,
        DEFAULT_MAX_CANDIDATES,
        DEFAULT_MAX_WORKERS,
        DEFAULT_PARETO_LIMIT,
        DEFAULT_REPLAN_MAX_WORKERS,
        DEFAULT_TOP,
    )

    workers_default = DEFAULT_REPLAN_MAX_WORKERS if replan else DEFAULT_MAX_WORKERS
    p.add_argument("profile", metavar="PROFILE", nargs="?" if optional else None, default=None,
                   help="profile file (JSON Lines) or a bundled example name (cotune examples)")
    p.add_argument("--target", type=_args.target_value, required=not optional, help="metric to reach (e.g. 0.94 top-1; a loss for goal 'min')")
    p.add_argument("--deadline", type=_args.signed_duration, default=None, required=replan, metavar="DURATION",
                   help="time limit: 90m, 2h, 1h30m or seconds" + (", counted from the job's start" if replan else ""))
    p.add_argument("--max-workers", action="append", type=_args.gpu_count, default=None, metavar="N|GPU=N",
                   help=f"workers available: one number for every gpu type, or GPU=N per type (repeatable); "
                   f"types not named get N, else {workers_default}")
    p.add_argument("--gpus-per-host", action="append", type=_args.gpu_count, default=None, metavar="N|GPU=N",
                   help=f"accelerators per machine: one number for every gpu type, or GPU=N per type (repeatable, "
                   f"e.g. v100=8 --gpus-per-host t4=4); types not named get N, else {DEFAULT_GPUS_PER_HOST}")
    p.add_argument("--cluster", default=None, metavar="FILE",
                   help="cluster file (TOML/YAML): availability, prices and spot risk; considers on-demand, spot and mixed plans (docs/spot.md)"
                   + ("; without it, on-demand servers at --price" if replan else ""))
    p.add_argument("--price", action="append", type=_args.key_value, default=None, metavar="GPU[:MARKET]=USD",
                   help="new price per GPU-hour overriding the cluster file, e.g. t4:spot=0.21 (repeatable)" if replan else
                   "price per worker-hour, e.g. t4=0.53 (repeatable); without prices cost is worker-hours; spot prices go in --cluster")
    p.add_argument("--objective", choices=("cost", "time"), default="cost", help="minimise cost (default) or time")
    p.add_argument("--confidence", type=_args.real_number, default=None, metavar="Q", help="meet the deadline and the budget with probability Q (e.g. 0.9), not just in the median")
    p.add_argument("--gpu", action="append", default=None, help="restrict to this gpu type (repeatable)")
    p.add_argument("--local-batch", type=_args.int_list, default=None, metavar="B,B,...", help="local batches to consider (default: the probed ones)")
    p.add_argument("--hosts", choices=("packed", "any"), default="packed", help="packed: fewest hosts (default); any: every host count")
    p.add_argument("--interval", type=_args.real_number, default=None, metavar="P", help=f"central probability of reported intervals (default {DEFAULT_INTERVAL:g})")
    p.add_argument("--max-candidates", type=_args.whole_number, default=DEFAULT_MAX_CANDIDATES, metavar="N",
                   help=f"enumerate at most N candidates (default {DEFAULT_MAX_CANDIDATES:,}): a larger on-demand space is "
                        "searched with Optuna's TPE sampler, a larger spot/mixed one refused")
    p.add_argument("--budget", type=_args.real_number, default=None,
                   help="upper bound on cost (USD, or worker-hours without prices)" + (" of the whole job: what is left is the budget minus --spent" if replan else ""))
    if replan:
        return
    from cotune.cli._fitcache import add_fit_arguments

    add_fit_arguments(p)
    p.add_argument("--workers", type=_args.int_list, default=None, metavar="N,N,...", help="worker counts to consider (default: 1..max)")
    p.add_argument("--startup", type=_args.signed_duration, default=None, metavar="DURATION", help="fixed start-up overhead added to every run")
    p.add_argument("--global-batch", type=_args.int_range, default=None, metavar="MIN..MAX",
                   help="global batches allowed, e.g. 256..4096 (what the learning-rate rule supports)")
    p.add_argument("--baseline-batch", type=_args.whole_number, default=None, metavar="B", help="local batch the resource-only baseline keeps")
    p.add_argument("--baseline-workers", type=_args.whole_number, default=None, metavar="N", help="workers the batch-only baseline keeps")
    p.add_argument("--top", type=_args.whole_number, default=None, metavar="N", help=f"runner-ups to show (default {DEFAULT_TOP})")
    p.add_argument("--pareto-limit", type=_args.whole_number, default=None, metavar="N", help=f"cost-time frontier points to show (default {DEFAULT_PARETO_LIMIT})")


def _per_gpu(values: list[tuple[str | None, int]] | None, option: str) -> Any:
    """``--max-workers`` / ``--gpus-per-host`` as the request takes them: one number, or
    gpu → number with ``"*"`` for an unnamed ``N``."""
    given = _args.unique_pairs(values, option)
    if given is None:
        return None
    per = {("*" if gpu is None else gpu): n for gpu, n in given.items()}
    return per["*"] if list(per) == ["*"] else per


class OptionError(_BadValue):
    """A request error in an option's words (``--deadline: …``) that keeps the field's
    pointer (``where``: ``/deadline_s``), so a ``--json`` error document says where, as HTTP's."""

    def __init__(self, option: str, detail: str, *, where: str) -> None:
        InputError.__init__(self, f"{option}: {detail}")
        self.option, self.detail, self.where = option, detail, where


def cli_error(exc: Exception) -> Exception:
    """A request error reworded with the CLI's option names (``/deadline_s`` → ``--deadline``)."""
    from cotune._request import CLI_OPTIONS

    if isinstance(exc, OptionError) or not isinstance(exc, _BadValue) or not exc.where.startswith("/"):
        return exc
    head, _, rest = exc.where[1:].partition("/")
    if head == "progress":
        head, _, rest = rest.partition("/")
        option = {"epochs_done": "--epochs-done", "elapsed_s": "--elapsed", "workers_lost": "--workers-lost",
                  "workers_added": "--workers-added", "spent": "--spent",
                  "schedule_epochs": "--schedule-epochs"}.get(head)
        if option is None:  # a part of --current GPU:MARKET:WORKERS:LOCAL_BATCH: name which
            part = {"gpu": "GPU", "market": "MARKET", "workers": "WORKERS", "local_batch": "LOCAL_BATCH"}.get(head)
            option = "--current" + (f" {part}" if part else "")
        return OptionError(option, exc.detail, where=exc.where)
    option = CLI_OPTIONS.get(head, head)
    if rest.isdigit():  # an element of a list-valued option (/gpus/0): which one, counted from 1
        rest = f"(value {int(rest) + 1})"
    return OptionError(f"{option}{' ' + rest if rest else ''}", exc.detail, where=exc.where)


def request_from_args(args: argparse.Namespace, **overrides: Any) -> Any:
    """The :class:`~cotune.RecommendRequest` of parsed options (options not defined by the command are left at their default)."""
    from cotune._request import RecommendRequest

    given = dict(
        profile=args.profile,
        target=args.target,
        deadline_s=args.deadline,
        max_workers=_per_gpu(args.max_workers, "--max-workers"),
        gpus_per_host=_per_gpu(args.gpus_per_host, "--gpus-per-host"),
        prices=_args.unique_pairs(args.price, "--price"),
        cluster=args.cluster,
        objective=args.objective,
        confidence=args.confidence,
        gpus=args.gpu,
        local_batches=args.local_batch,
        hosts=args.hosts,
        interval=args.interval,
        max_candidates=args.max_candidates,
        budget=getattr(args, "budget", None),
        workers=getattr(args, "workers", None),
        startup_s=getattr(args, "startup", None),
        global_batch_range=getattr(args, "global_batch", None),
        baseline_local_batch=getattr(args, "baseline_batch", None),
        baseline_workers=getattr(args, "baseline_workers", None),
        top=getattr(args, "top", None),
        pareto_limit=getattr(args, "pareto_limit", None),
    )
    given.update(overrides)
    # None means "not given": the request's own default applies (defined once, there).
    fields = {k: v for k, v in given.items() if v is not None or k in ("deadline_s", "cluster", "prices")}
    try:
        return RecommendRequest(**fields)
    except Exception as exc:  # noqa: BLE001 - reworded for the CLI, re-raised as is otherwise
        raise cli_error(exc) from None


def recommend_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~cotune.solver.Recommendation` of parsed options (models from the fit cache)."""
    from cotune._pipeline import recommend
    from cotune.cli._fitcache import fitted_models
    from cotune.profile import load_profile

    request = request_from_args(args)
    profile = load_profile(request.profile)
    models = fitted_models(profile, args, interval=request.interval)
    return recommend(request.replace(profile=profile), models=models)
