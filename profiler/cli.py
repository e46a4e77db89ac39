"""``cotune profile`` (also ``python -m profiler``): probe a workload into a profile file.

``main(argv)`` returns an exit code: 0 on success, 2 on bad input, 3 when the environment
failed us — the profile or its scratch folder could not be written (disk full, read-only,
an I/O error), another run holds the profile's lock, or the launcher could not start —
always one line ``cotune: <problem and fix>`` on stderr, no traceback. A probe that fails
is not an error of the command: it becomes a failure record and profiling goes on; a
fault of ours is never recorded as one (a rerun measures what was not measured).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Iterator, Sequence

from cotune._checks import parse_key_number, parse_number, unique_pairs
from cotune.errors import EXIT_INFEASIBLE, EXIT_INPUT, CotuneError, InputError, StorageError
from cotune.units import parse_duration
from profiler._workload import MAX_DURATION_S, MAX_SEED

__all__ = ["main", "build_parser"]


class _ArgError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    #: The words being parsed (set by main): the hint names an abbreviated required option.
    words: Sequence[str] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)  # as cotune's own commands: cotune.cli._args.usage_hint
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        from cotune.cli._args import usage_hint

        raise _ArgError(usage_hint(self, message, argv=self.words))


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of whole numbers (e.g. 16,32,64)") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: give positive whole numbers, e.g. 16,32,64")
    return sorted(set(values), key=values.index)


def _seed_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers (e.g. 0,1)") from None
    if not values:
        raise argparse.ArgumentTypeError("give at least one seed, e.g. --seeds 0")
    wild = next((v for v in values if not 0 <= v <= MAX_SEED), None)
    if wild is not None:
        # Accepted, it crashed every curve in the worker (torch.manual_seed overflowed), each
        # recorded as the workload's crash.
        raise argparse.ArgumentTypeError(f"seed {wild} is outside 0 … {MAX_SEED} (2**31 - 1): give seeds in that range")
    return list(dict.fromkeys(values))  # a seed given twice is one curve


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def _typed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse ``type=`` from one of cotune's parsers: its one-line error, verbatim."""
    def inner(text: str) -> Any:
        try:
            return parse(text)
        except CotuneError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return inner


def _bounded_duration(text: str) -> float:
    """A duration no longer than :data:`MAX_DURATION_S`, the one rule of every duration option."""
    seconds = parse_duration(text)
    if seconds > MAX_DURATION_S:
        # --probe-timeout 1e12 overflowed the time-out alarm (an internal error, exit 4).
        raise InputError(f"duration {text[:40]!r} is longer than the most any option takes, "
                         f"{MAX_DURATION_S / 86400:g} days ({MAX_DURATION_S:.0f} s): give a shorter one")
    return seconds


_duration = _typed(_bounded_duration)
_price = _typed(parse_key_number)  # the same rule as cotune recommend's --price
_number = _typed(lambda text: parse_number(text, where=""))


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1 (e.g. 0.05 for ±5 %)")
    return value


def build_parser(prog: str = "cotune profile") -> argparse.ArgumentParser:
    p = _Parser(
        prog=prog,
        description="Run timing probes (torchrun + DDP) and learning curves of a workload; append the results "
        "to a profile file. Run the same command again to continue an interrupted run.",
        epilog="Exit codes: 0 ok (failed probes are records), 1 every probe of this run failed, 2 bad input, "
        "3 the environment failed, 4 a bug in cotune, 130 interrupted. Docs: docs/profiler.md",
    )
    p.add_argument("--workload", required=True, metavar="FILE.py:NAME",
                   help="the workload: FILE.py:NAME or MODULE:NAME of a profiler.Workload (or profiler.tf.TFWorkload)")
    p.add_argument("--out", required=True, metavar="FILE.jsonl", help="profile file to append to (created if missing)")
    g = p.add_argument_group("what to probe (omit --workers/--local-batch for an automatic plan)")
    g.add_argument("--workers", type=_int_list, metavar="N,N", help="worker counts of the timing grid, e.g. 1,2")
    g.add_argument("--local-batch", type=_int_list, metavar="B,B", help="per-worker batches of the timing grid")
    g.add_argument("--curves", type=_int_list, metavar="B,B",
                   help="global batches for learning curves, e.g. 32,128,512 (automatic plan: three are chosen)")
    g.add_argument("--no-curves", action="store_true", help="automatic plan without learning curves")
    g.add_argument("--seeds", type=_seed_list, default=[0], metavar="S,S", help="seeds per learning curve (default 0)")
    g.add_argument("--curve-workers", type=_positive_int, default=1, metavar="N",
                   help="workers per learning curve (default 1: curves depend on the global batch, not on workers)")
    g.add_argument("--max-epochs", type=_positive_int, default=20, metavar="E", help="epoch limit per curve (20)")
    g.add_argument("--target", type=float, metavar="METRIC", help="stop a curve once the metric reaches this")
    g.add_argument("--noise", action="store_true", help="also measure the gradient noise scale during curves")
    g.add_argument("--probe-budget", dest="budget", type=_duration, metavar="DURATION",
                   help="time to spend probing (90m, 2h, 600): later probes that do not fit are left out")
    # The old spelling: `cotune recommend --budget` is money, so here it reads as a probe
    # budget in seconds only with a warning (`--budget 5` meant $5 and got 5 s of probing).
    g.add_argument("--budget", dest="budget_old", type=_duration, help=argparse.SUPPRESS)
    g.add_argument("--max-workers", type=_positive_int, metavar="N",
                   help="automatic plan: largest worker count (default: GPUs here, 2 on CPU)")
    g.add_argument("--min-batch", type=_positive_int, default=8, metavar="B", help="automatic plan: first local batch (8)")
    g.add_argument("--max-batch", type=_positive_int, default=1024, metavar="B",
                   help="automatic plan: largest local batch tried if no out-of-memory comes first (1024)")
    q = p.add_argument_group("--plan value: probe what the question needs (docs/profiler.md)")
    q.add_argument("--plan", choices=("auto", "value"), default="auto",
                   help="auto (default: the fixed automatic plan, or the grid of --workers/--local-batch) or value: "
                   "after a small seed, run the measurement cotune's answer to the question below names, while its "
                   "expected saving beats its price")
    q.add_argument("--deadline", type=_duration, metavar="DURATION", help="the job's deadline (30m, 2h)")
    q.add_argument("--price", action="append", type=_price, default=None, metavar="GPU=USD",
                   help="USD per worker-hour of this machine's accelerator, e.g. cpu=0.05 (default: worker-hours)")
    q.add_argument("--confidence", type=_number, default=None, metavar="Q",
                   help="the plan must meet the deadline with probability Q (e.g. 0.9)")
    q.add_argument("--objective", choices=("cost", "time"), default="cost", help="minimise cost (default) or time")
    t = p.add_argument_group("how a timing probe measures")
    t.add_argument("--warmup-steps", type=_positive_int, default=5, metavar="N", help="untimed steps first (5)")
    t.add_argument("--min-steps", type=_positive_int, default=10, metavar="N", help="fewest timed steps (10)")
    t.add_argument("--max-steps", type=_positive_int, default=200, metavar="N", help="most timed steps (200)")
    t.add_argument("--max-probe-time", type=_duration, default=30.0, metavar="DURATION",
                   help="stop timing after this long even if the median is not yet precise (30s)")
    t.add_argument("--precision", type=_fraction, default=0.05, metavar="FRACTION",
                   help="time until the median's 95%% interval is within this fraction of it (0.05)")
    t.add_argument("--no-sync-time", action="store_true", help="skip the no_sync steps that measure sync time")
    t.add_argument("--launch-per-point", action="store_true",
                   help="start every timing point in its own launch (default: the batches of one worker count share one)")
    t.add_argument("--probe-timeout", type=_duration, default=300.0, metavar="DURATION",
                   help="a timing probe still running after this is killed and recorded as a timeout (5m)")
    t.add_argument("--curve-timeout", type=_duration, default=3600.0, metavar="DURATION",
                   help="same for one learning curve (1h)")
    t.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="where workers run (auto)")
    t.add_argument("--cpu-threads", type=int, default=1, metavar="N",
                   help="threads per worker on CPU, the same for every worker count (1; 0 shares the cores)")
    t.add_argument("--gpu", metavar="NAME", help="accelerator name for the records (default: detected, 'cpu' on CPU)")
    t.add_argument("--no-checkpoint", action="store_true", help="do not checkpoint curves (a resumed curve restarts)")
    m = p.add_argument_group("several hosts (torchrun rendezvous; run the same command on every host)")
    m.add_argument("--nnodes", type=_positive_int, default=1, metavar="N", help="hosts per probe (1)")
    m.add_argument("--rdzv-endpoint", metavar="HOST:PORT", help="shared rendezvous address (required with --nnodes > 1)")
    m.add_argument("--rdzv-backend", default="c10d", metavar="NAME", help="torchrun rendezvous backend (c10d)")
    p.add_argument("--retry-failed", nargs="?", const="crash,timeout", default=None, metavar="KINDS",
                   help="run again the points that failed before (a rerun skips them as done): bare, crash and "
                        "timeout; or a list of crash,timeout,oom — after fixing the workload or the machine")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    return p


def _check_endpoint(endpoint: str) -> None:
    """HOST:PORT with a port torchrun can bind (it refuses others only at launch, as its own fault)."""
    host, sep, port = endpoint.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise _ArgError(f"--rdzv-endpoint {endpoint[:80]!r}: give HOST:PORT with a port from 1 to 65535, e.g. head:29400")


def _old_budget(args: argparse.Namespace) -> None:
    """``--budget``, the old spelling of ``--probe-budget``: taken, with a warning."""
    if args.budget_old is None:
        return
    if args.budget is not None:
        raise _ArgError("--budget is the old spelling of --probe-budget: give one of them")
    args.budget = args.budget_old
    print(f"cotune: warning: --budget here is the time spent probing ({args.budget_old:g} s), not money as in "
          "'cotune recommend --budget': write --probe-budget", file=sys.stderr)


def _retry_list(text: str | None) -> list[str]:
    """``--retry-failed KINDS`` as a list (empty when the option is absent)."""
    if text is None:
        return []
    kinds = [k for k in text.split(",") if k.strip()]
    if not kinds:
        raise _ArgError("--retry-failed: name the failure kinds to run again (crash,timeout,oom), or give it bare for "
                        "crash,timeout")
    return kinds


def _is_tf_workload(obj: object) -> bool:
    """Whether ``obj`` is a :class:`profiler.tf.TFWorkload` (its module imports no TensorFlow)."""
    from profiler.tf import TFWorkload

    return isinstance(obj, TFWorkload)


def _run(args: argparse.Namespace) -> int:
    from profiler._launcher import TorchrunLauncher
    from profiler._session import CurveSettings, ProbeSettings, run_session
    from profiler._workload import Workload, bounded, load_object, not_a_workload

    if args.nnodes > 1 and not args.rdzv_endpoint:
        raise _ArgError(f"--nnodes {args.nnodes} needs --rdzv-endpoint HOST:PORT, the same on every host")
    if args.rdzv_endpoint:
        _check_endpoint(args.rdzv_endpoint)
    uneven = sorted({w for w in (args.workers or []) if w % args.nnodes})
    if args.nnodes > 1 and uneven:
        # Every one of them would be skipped (a probe spreads its workers evenly over the
        # hosts): the run measured nothing and ended with exit 0.
        raise _ArgError(f"--workers {','.join(map(str, uneven))} cannot be spread evenly over --nnodes {args.nnodes} hosts: "
                        f"give multiples of {args.nnodes}")
    out_dir = Path(args.out).parent
    while not out_dir.exists() and out_dir != out_dir.parent:
        out_dir = out_dir.parent
    if not out_dir.is_dir():  # a file where --out's folder should be: bad input, not a storage fault
        raise _ArgError(f"--out {args.out}: {out_dir} is a file, not a folder: give a path inside a folder")
    if args.curves is not None and args.no_curves:
        raise _ArgError("--curves and --no-curves contradict each other: keep one")
    if args.cpu_threads < 0:
        raise _ArgError(f"--cpu-threads must be 0 (share the cores) or more, got {args.cpu_threads}")
    if args.min_steps > args.max_steps:
        raise _ArgError(f"--min-steps {args.min_steps} exceeds --max-steps {args.max_steps}: raise --max-steps")
    probe = ProbeSettings(
        warmup_steps=args.warmup_steps, min_timed_steps=args.min_steps, max_timed_steps=args.max_steps,
        max_timed_s=args.max_probe_time, rel_precision=args.precision, measure_sync=not args.no_sync_time,
        timeout_s=args.probe_timeout, device=args.device, cpu_threads=args.cpu_threads,
    )
    curve = CurveSettings(max_epochs=args.max_epochs, target=args.target, noise=args.noise,
                          timeout_s=args.curve_timeout, checkpoint=not args.no_checkpoint)
    # Loaded once, whichever framework it is for: loading again to tell PyTorch from
    # TensorFlow ran a script's top-level code three times, and a sys.exit in it escaped.
    with bounded(args.probe_timeout, f"loading the workload {args.workload}"):
        workload = load_object(args.workload)
    tensorflow = not isinstance(workload, Workload) and _is_tf_workload(workload)
    if not tensorflow and not isinstance(workload, Workload):
        raise not_a_workload(args.workload, workload)
    curves = [] if args.no_curves else args.curves
    question = None
    if args.plan == "value":
        if args.target is None:
            raise _ArgError("--plan value needs --target: the metric the job must reach")
        question = {"target": args.target, "deadline_s": args.deadline, "confidence": args.confidence,
                    "prices": unique_pairs(args.price, "--price"), "objective": args.objective}
    elif args.deadline is not None or args.price or args.confidence is not None or args.objective != "cost":
        raise _ArgError("--deadline, --price, --confidence and --objective ask the value plan's question: add --plan value")
    common = dict(
        out=args.out, workers=args.workers, local_batches=args.local_batch, curves=curves, seeds=args.seeds,
        curve_workers=args.curve_workers, max_workers=args.max_workers, min_batch=args.min_batch,
        max_batch=args.max_batch, probe=probe, curve=curve, gpu=args.gpu, budget_s=args.budget,
        quiet=args.quiet, question=question, timing_groups=not args.launch_per_point,
        retry_failed=_retry_list(args.retry_failed),
    )
    if tensorflow:
        from profiler.tf import run_tf_session

        if args.nnodes > 1:
            raise _ArgError("--nnodes applies to torchrun probes; for TensorFlow on several hosts let the cluster "
                            "manager set TF_CONFIG and use a launcher of your own (docs/profiler.md §8)")
        summary = run_tf_session(args.workload, _workload=workload, **common)
    else:
        launcher = TorchrunLauncher(nnodes=args.nnodes, rdzv_endpoint=args.rdzv_endpoint,
                                    rdzv_backend=args.rdzv_backend)
        summary = run_session(args.workload, launcher=launcher, _workload=workload, **common)
    if not args.quiet:
        print(summary.describe(), file=sys.stderr)
    elif summary.all_failed:  # the one line --quiet keeps: the exit code alone would not say why, nor how to rerun
        print(f"cotune: {summary.all_failed_line()}", file=sys.stderr)
    # Failed probes are records, not errors; a run that measured nothing at all is not a success.
    return EXIT_INFEASIBLE if summary.all_failed else 0


class _Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP to the profiler, taken down Ctrl-C's path."""

    def __init__(self, signal_no: int) -> None:
        super().__init__(signal_no)
        self.signal_name = signal.Signals(signal_no).name


@contextlib.contextmanager
def _stop_signals_interrupt() -> Iterator[None]:
    """Within the block SIGTERM (how Kubernetes, systemd and a batch scheduler stop a job) and
    SIGHUP (its terminal closed) interrupt the run as Ctrl-C does: the probe's processes are
    stopped, this run's scratch folder removed, one line said, exit 130. Their default action
    ended the profiler at once (exit 143 or 129, nothing said, a run-* folder left behind).
    A signal someone set to be ignored (``nohup``) stays ignored; only the main thread can
    hold handlers, so a call from another thread keeps the defaults."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signal_no: int, frame: FrameType | None) -> None:
        raise _Stopped(signal_no)

    previous: dict[int, Any] = {}
    for signal_no in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signal_no) is signal.SIG_DFL:
            previous[signal_no] = signal.signal(signal_no, stop)
    try:
        yield
    finally:
        for signal_no, handler in previous.items():
            signal.signal(signal_no, handler)


def main(argv: Sequence[str] | None = None, *, prog: str = "cotune profile") -> int:
    """Entry point of ``cotune profile``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(prog)
    if isinstance(parser, _Parser):
        parser.words = argv
    try:
        with _stop_signals_interrupt():
            return _main(parser, argv, prog=prog)
    except KeyboardInterrupt as exc:  # a signal after _main returned, before the handlers were restored
        return _interrupted(exc)


def _interrupted(exc: KeyboardInterrupt) -> int:
    """The one line of an interrupted run, and its exit code."""
    how = f"stopped by {exc.signal_name}" if isinstance(exc, _Stopped) else "interrupted"
    # SIGHUP's usual cause is a closed terminal, and a stopped job's log reader may be gone too:
    # a stderr that cannot be written (EPIPE, EIO) must not turn the stop into exit 1.
    with contextlib.suppress(OSError):
        print(f"cotune: {how}; run the same command again to continue where it stopped", file=sys.stderr)
    return 130


def _main(parser: argparse.ArgumentParser, argv: list[str], *, prog: str) -> int:
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, or argparse's own usage error: only the parser's exits
            return int(exc.code or 0)
        _old_budget(args)
        return _run(args)
    except _ArgError as exc:
        print(f"cotune: {exc} (see '{prog} --help')", file=sys.stderr)
        return EXIT_INPUT
    except (CotuneError, FileNotFoundError) as exc:
        # WorkloadError is an InputError, with the fix in its message. A bare ValueError is
        # not caught here: it is a bug of ours (exit 4 below), not a fault of the user's input.
        print(f"cotune: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", EXIT_INPUT)
    except OSError as exc:
        # Storage faults are wrapped where they happen; this catches any that were not,
        # so the promise (one line, exit 3) holds for every OSError.
        error = StorageError.from_os_error(exc, path=exc.filename or "a file of this run", doing="read or write it")
        print(f"cotune: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    except Exception as exc:  # noqa: BLE001 - a bug in cotune's profiler: one line, the traceback kept (exit 4)
        import os

        from cotune.cli._output import error, internal_error
        from cotune.errors import EXIT_INTERNAL

        if os.environ.get("COTUNE_DEBUG"):
            raise
        error(internal_error(exc, [*prog.split(), *argv]))
        return EXIT_INTERNAL
