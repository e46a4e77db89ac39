"""``cotune import``: a profile from the logs of a training run that already happened."""

from __future__ import annotations

import argparse

from cotune.cli import _args

__all__ = ["add_parser", "run"]

# cotune.logs.FORMATS, spelt out so that building the parser imports no reader (a test keeps them equal)
_FORMATS = ("hf-trainer", "lightning-csv", "tensorboard", "mlflow", "csv", "keras-csv")
# Not a log: a table of profile records (cotune.logs.import_table)
_TABLE = "records"
# Not a log either: an AdaptDL trace (Pollux, Sia artifacts: cotune.logs.import_adaptdl)
_TRACE = "adaptdl"
# Flags that describe one run's log: a table of records states its own fields
_RUN_FLAGS = ("global_batch", "seed", "gpu", "workers", "local_batch", "step_column", "epoch_column", "mlflow_run",
              "run_column", "time_column", "time_unit")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import",
        help="turn an existing run's training log into a profile (eval curve, step time)",
        description="Read one training run's log and write profile records: the validation curve (metric vs epoch at "
        "the run's global batch), the step time where the log has one, gradient-noise scales where it logged "
        "gradient statistics. Give what the log does not say as flags. Formats: hf-trainer (trainer_state.json), "
        "lightning-csv (CSVLogger metrics.csv), tensorboard (event files; needs cotune[logs]), mlflow (a run of "
        "the local file store or a SQLite store, mlflow.db), csv (named columns), keras-csv (keras.callbacks.CSVLogger: "
        "its epoch column counts from 0); records (a CSV table of profile records, one per row: a sweep's step times at "
        "many configurations); adaptdl (an AdaptDL trace: step times by placement and learning curves by batch, as "
        "the Pollux and Sia artifacts publish them). Docs: docs/logs.md",
        epilog="Exit codes: 0 ok, 2 bad input (the message names the flag to add), 3 the environment failed (the output "
               "cannot be written, the profile is locked), 4 a bug in cotune.",
    )
    p.add_argument("format", choices=_FORMATS + (_TABLE, _TRACE), metavar="FORMAT",
                   help=f"log format: {', '.join(_FORMATS)}; or {_TABLE}: a table of profile records; or {_TRACE}: an "
                        "AdaptDL trace directory (placements.csv, validation-<B>.csv: the Pollux and Sia artifacts)")
    p.add_argument("path", metavar="PATH", help="the log file or run directory")
    p.add_argument("--out", required=True, metavar="PROFILE", help="profile file to write (JSON Lines)")
    p.add_argument("--append", action="store_true", help="add this run to an existing PROFILE (same workload)")
    p.add_argument("--global-batch", type=_args.positive_int, default=None, metavar="B", help="global batch of the run (samples per optimizer step)")
    p.add_argument("--dataset-size", type=_args.positive_int, default=None, metavar="N", help="training samples per epoch")
    p.add_argument("--metric", default=None, metavar="NAME", help="the validation metric's series or column (needed when the log has several)")
    p.add_argument("--goal", choices=("max", "min"), default=None, help="max for accuracy-like, min for loss-like (default: from the name)")
    p.add_argument("--name", default=None, help="workload name (default: the run's name)")
    p.add_argument("--seed", type=_args.non_negative_int, default=None, help="seed that tells repeated runs at one batch apart "
                   "(default 0; with --append the next free one)")
    p.add_argument("--gpu", default=None, metavar="G", help="accelerator the run used; with --workers, records its step time")
    p.add_argument("--workers", type=_args.positive_int, default=None, metavar="N", help="data-parallel workers of the run")
    p.add_argument("--hosts", type=_args.positive_int, default=1, metavar="N", help="machines the workers ran on (default 1)")
    p.add_argument("--local-batch", type=_args.positive_int, default=None, metavar="b", help="samples per worker per micro-step")
    p.add_argument("--accum-steps", type=_args.positive_int, default=1, metavar="K", help="gradient-accumulation micro-steps per step (default 1)")
    p.add_argument("--step-column", default=None, metavar="NAME", help="csv: column of optimizer steps done (default 'step')")
    p.add_argument("--epoch-column", default=None, metavar="NAME", help="csv: column of passes over the data (default 'epoch')")
    p.add_argument("--run", dest="mlflow_run", default=None, metavar="RUN_ID",
                   help="mlflow: the run (id or name) when the store holds several; csv: the run whose rows to read "
                   "when the file pools several (a column run, run_id or run_name, or --run-column)")
    p.add_argument("--run-column", default=None, metavar="NAME", help="csv: the column that names each row's run")
    p.add_argument("--record", default=None, metavar="TYPE", help="records: the type of every row (step, eval, failure, "
                   "noise) when the table has no 'record' column")
    p.add_argument("--where", action="append", type=_args.key_text("model=ResNet-18"), default=None, metavar="COLUMN=VALUE",
                   help="records: keep the rows whose COLUMN holds VALUE, as the file writes it (repeatable: all must "
                   "hold), e.g. --where model=ResNet-18 to read one workload of a pooled table; COLUMN!=VALUE keeps "
                   "the others, COLUMN!= the rows where COLUMN is filled in")
    p.add_argument("--column", action="append", type=_args.key_text("workers=num_gpus"), default=None, metavar="FIELD=COLUMN",
                   help="records: read the record field FIELD from COLUMN (repeatable), e.g. --column workers=num_gpus, "
                   "for a table named its own way")
    p.add_argument("--wide", type=_args.key_text("workers=steps_per_s"), default=None, metavar="FIELD=CELLS",
                   help="records: a wide table, one column per value of FIELD (headers that are numbers: "
                   "'global_batch_size,1,2,4,8', or '1 GPU,2 GPUs'), each cell the field CELLS, e.g. --wide workers=steps_per_s; "
                   "empty cells (and zeros of a time or rate) are no measurement and are left out")
    p.add_argument("--set", dest="constants", action="append", type=_args.key_text("gpu=a100"), default=None,
                   metavar="FIELD=VALUE", help="records: a field the table states once, not in a column, on every "
                   "row (repeatable), e.g. --set gpu=a100")
    p.add_argument("--gpus-per-host", type=_args.positive_int, default=None, metavar="N",
                   help="records: a table of GPU counts without hosts ran on servers of N GPUs: hosts = "
                   "ceil(workers / N)")
    p.add_argument("--time-column", default=None, metavar="NAME",
                   help="csv, keras-csv: the column of wall-clock seconds, for the step time (default: _runtime or _timestamp of a "
                   "Weights & Biases export, 'Wall time' of a TensorBoard one)")
    p.add_argument("--time-unit", default=None, choices=("s", "min", "h"),
                   help="csv, keras-csv: what the clock column counts (default: the unit its name says, as in 'hours', else s)")
    p.add_argument("--steps-are-epochs", action="store_true",
                   help="tensorboard, mlflow: the metric's steps are epoch indices (add_scalar(tag, value, epoch), "
                   "log_metric(key, value, step=epoch)), not optimizer steps")
    p.set_defaults(run=run)


def _refuse_run_flags(args: argparse.Namespace, fmt: str, fix: str, *, allow: tuple[str, ...] = ()) -> None:
    """Refuse the one-run flags given to a format whose files state those fields themselves."""
    from cotune.errors import InputError

    given = [f"--{k.replace('_', '-')}" for k in _RUN_FLAGS if k not in allow and getattr(args, k) is not None]
    given += (["--hosts"] * (args.hosts != 1) + ["--accum-steps"] * (args.accum_steps != 1)
              + ["--steps-are-epochs"] * args.steps_are_epochs)
    if given:
        raise InputError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to the log formats, not to "
                         f"{fmt}: {fix}")


def _run_table(args: argparse.Namespace) -> int:
    from cotune.cli._output import emit
    from cotune.logs import import_table

    # They describe one run's log; a table of records states these fields in its columns.
    _refuse_run_flags(args, _TABLE, "the table states those fields in its columns, or give one for every row with "
                      "--set FIELD=VALUE (--set gpu=a100; docs/profile-format.md names the fields)")
    profile = import_table(args.path, out=args.out, append=args.append, record=args.record, name=args.name,
                           dataset_size=args.dataset_size, metric=args.metric, goal=args.goal,
                           where=_args.unique_pairs(args.where, "--where"),
                           columns=_args.unique_pairs(args.column, "--column"), wide=args.wide,
                           constants=_args.unique_pairs(args.constants, "--set"), gpus_per_host=args.gpus_per_host)
    verb = "appended to" if args.append else "wrote"
    counts = {"step": len(profile.steps), "eval": len(profile.evals), "failure": len(profile.failures),
              "noise": len(profile.noise)}
    said = ", ".join(f"{n:,} {k}{'' if n == 1 else 's'}" for k, n in counts.items() if n) or "no records"
    emit(f"{verb} {args.out}: workload {profile.workload.name!r}, {said}")
    for note in profile.warnings:
        emit(f"  {note}")
    return 0


def _run_trace(args: argparse.Namespace) -> int:
    from cotune.cli._output import emit
    from cotune.logs import import_adaptdl

    # The trace's files state these: the placement, the batch of each curve.
    _refuse_run_flags(args, _TRACE, "its files state them (--gpu names a GPU type no file does)", allow=("gpu",))
    profile = import_adaptdl(args.path, out=args.out, append=args.append, gpu=args.gpu, name=args.name,
                             dataset_size=args.dataset_size, metric=args.metric, goal=args.goal)
    verb = "appended to" if args.append else "wrote"
    emit(f"{verb} {args.out}: workload {profile.workload.name!r}, {len(profile.steps):,} step and "
         f"{len(profile.evals):,} eval records")
    for note in profile.warnings:
        emit(f"  {note}")
    return 0


def run(args: argparse.Namespace) -> int:
    from cotune.cli._output import emit
    from cotune.errors import InputError
    from cotune.logs import import_log

    if args.format == _TABLE:
        return _run_table(args)
    given = [flag for flag, value in (("--where", args.where), ("--column", args.column), ("--wide", args.wide),
                                      ("--set", args.constants), ("--gpus-per-host", args.gpus_per_host)) if value]
    if given:
        raise InputError(f"{' and '.join(given)} {'applies' if len(given) == 1 else 'apply'} to format {_TABLE} only "
                         "(a table of profile records); a log's own columns are named with --step-column, "
                         "--epoch-column, --time-column and --metric, its run's fields with --gpu, --workers, --hosts, "
                         "--local-batch")
    # Before the trace's own refusals: they name the log formats, which take no --record either.
    if args.record is not None:
        raise InputError(f"--record applies to format {_TABLE} only (a table of profile records)")
    if args.format == _TRACE:
        return _run_trace(args)

    profile = import_log(
        args.format,
        args.path,
        out=args.out,
        append=args.append,
        global_batch=args.global_batch,
        dataset_size=args.dataset_size,
        metric=args.metric,
        goal=args.goal,
        name=args.name,
        seed=args.seed,
        gpu=args.gpu,
        workers=args.workers,
        hosts=args.hosts,
        local_batch=args.local_batch,
        accum_steps=args.accum_steps,
        step_column=args.step_column,
        epoch_column=args.epoch_column,
        run=args.mlflow_run,
        run_column=args.run_column,
        time_column=args.time_column,
        time_unit=args.time_unit,
        steps_are_epochs=args.steps_are_epochs,
    )
    verb = "appended to" if args.append else "wrote"
    n = len(profile.evals) + len(profile.steps) + len(profile.noise)
    emit(f"{verb} {args.out}: workload {profile.workload.name!r}, {n} record{'' if n == 1 else 's'}")
    for note in profile.warnings:
        emit(f"  {note}")
    return 0
