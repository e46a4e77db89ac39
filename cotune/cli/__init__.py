"""The ``cotune`` command. One module per subcommand; heavy imports happen inside
each command's ``run`` so ``cotune --help`` is instant.

Exit codes: 0 success, 1 nothing feasible, 2 bad input (including usage errors),
3 the environment failed, 4 an internal error (a bug in cotune), 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import warnings
from contextvars import ContextVar
from typing import Sequence

from cotune.errors import (
    EXIT_ENVIRONMENT, EXIT_INPUT, EXIT_INTERNAL, CotuneError, InfeasibleError, InputError, StorageError,
)

__all__ = ["main", "build_parser"]

_COMMANDS = ("recommend", "fit", "import", "examples", "profile", "replan", "k8s", "serve")


# The arguments being parsed, for error hints (argparse does not say which token it refused).
_ARGV: ContextVar[list[str]] = ContextVar("cotune_argv", default=[])


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``cotune: …``), the nearest spelling, exit code 2, and
    no abbreviated options (``_args.usage_hint`` says why)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def _command_parser(self) -> argparse.ArgumentParser | None:
        """The subcommand's parser of the arguments being parsed: argparse hands the words a
        subcommand did not know up to the top parser, whose options are not the ones meant."""
        argv = _ARGV.get()
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and argv and argv[0] in action.choices:
                return action.choices[argv[0]]
        return None

    def error(self, message: str) -> None:  # type: ignore[override]
        import re

        from cotune.cli._args import usage_hint
        from cotune.cli._output import error

        parser: argparse.ArgumentParser = self
        if message.startswith("unrecognized arguments:"):
            parser = self._command_parser() or self
        message = usage_hint(parser, message, argv=_ARGV.get())

        m = re.fullmatch(r"argument (--[\w-]+).*: expected one argument", message)
        if m:
            # argparse reads a value starting with '-' ("--deadline -30m") as the next option.
            argv = _ARGV.get()
            given = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == m.group(1)), None)
            if given is not None and given.startswith("-") and given[1:2].isdigit():
                message += f", got {given!r}: write {m.group(1)}={given} for a value that starts with '-'"
        line = f"{message} (see '{parser.prog} --help')"
        error(line)
        _error_json(InputError(line))
        raise SystemExit(EXIT_INPUT)


def _error_json(exc: BaseException, *, message: str | None = None) -> None:
    """With ``--json`` among the arguments, the failure as an ``error.v1`` document on stdout
    too — the body the HTTP service answers with — so a script that parses stdout always gets
    JSON; the one line on stderr and the exit code stay as without it."""
    argv = _ARGV.get()
    if "--json" not in (argv[: argv.index("--")] if "--" in argv else argv) or argv[:1] == ["k8s"]:
        # k8s's stdout goes to kubectl apply: it stays empty on failure (docs/scheduler.md).
        return
    if isinstance(exc, InfeasibleError):  # exit 1 is an answer, not an error: its own document says why
        return
    from cotune.api import error_document
    from cotune.cli._output import emit_json, json_emitted, terminal_safe

    if json_emitted():  # the answer is out: one document on stdout, never two
        return
    doc = error_document(exc, internal_message=message)
    if message is not None:
        # the line stderr shows, character for character: an unprintable one escaped in both
        doc["error"]["message"] = terminal_safe(" ".join(message.split()))
    try:
        emit_json(doc)
    except OSError:  # stdout closed or full: the line on stderr and the exit code still say it
        pass


def build_parser() -> argparse.ArgumentParser:
    from importlib import import_module

    parser = _Parser(
        prog="cotune",
        description="Choose workers, GPU type and batch size of a training job together: "
        "the cheapest configuration that reaches the target metric by the deadline.",
        epilog="Exit codes: 0 ok, 1 nothing feasible, 2 bad input, 3 the environment failed, 4 a bug in cotune. "
        "Docs: docs/cli.md",
    )
    from cotune import __version__

    parser.add_argument("--version", action="version", version=f"cotune {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in _COMMANDS:
        import_module(f"cotune.cli._{name}").add_parser(sub)
    return parser


def _attach_negative_values(argv: list[str]) -> list[str]:
    """``--deadline -5m`` as ``--deadline=-5m``: argparse reads a value that starts with '-'
    and is no plain number as an option and answers "expected one argument", which names
    neither the value nor what is wrong with it; attached, the option's own check does."""
    out: list[str] = []
    for i, tok in enumerate(argv):
        prev = out[-1] if out else ""
        if (re.match(r"^-\d", tok) and prev.startswith("--") and "=" not in prev and prev != "--"
                and (i < 2 or argv[i - 2] != "--")):
            out[-1] = f"{prev}={tok}"
        else:
            out.append(tok)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    from cotune.cli._output import error, flush_stdout, forget_emitted

    forget_emitted()
    if sys.stdout is None and args_list[:1] not in (["serve"], ["profile"]):
        # Started with fd 1 closed (`>&-`): the answer would vanish (text) or crash on None.write
        # (--json), and a scheduler would read exit 0 as an answer given. serve and profile do
        # not answer on stdout (their output is a log on stderr and a profile file).
        error("standard output is closed: the answer has nowhere to go; give the command an open stdout "
              "(a file, a pipe, or >/dev/null to discard it)")
        return EXIT_ENVIRONMENT

    # `cotune profile` forwards its arguments untouched to the profiler's own parser.
    if args_list[:1] == ["profile"]:
        from cotune.cli._profile import forward

        return forward(args_list[1:])
    parser = build_parser()
    # `cotune k8s ... -- torchrun train.py --epochs 90`: the words after `--` are the
    # container's command, word for word (as kubectl run and torchrun take theirs).
    container_argv: list[str] | None = None
    if args_list[:1] == ["k8s"] and "--" in args_list:
        cut = args_list.index("--")
        args_list, container_argv = args_list[:cut], args_list[cut + 1:]
    args_list = _attach_negative_values(args_list)
    _ARGV.set(args_list)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # --help / --version / usage errors
        return _flushed(int(exc.code or 0))
    if container_argv is not None:
        args.container_argv = tuple(container_argv)
    if args.command is None:
        parser.print_help()
        return _flushed(EXIT_INPUT)
    try:
        with warnings.catch_warnings():
            # numpy's RuntimeWarnings (overflow, 0/0 in a column that is then masked) are
            # several lines each, about internals: the results already account for them.
            warnings.simplefilter("ignore", RuntimeWarning)
            code = int(args.run(args))
        # Flushed here, not at the interpreter's exit, so that a full disk behind stdout is one
        # line and exit 3 (a StorageError below), and a reader gone keeps the command's own code.
        flush_stdout()
        return code
    except CotuneError as exc:
        from cotune.cli._question import cli_error

        # A request field judged later, against the profile (a cap for an unprofiled gpu),
        # reads with its option name too (/max_workers/a100 -> --max-workers a100).
        shown = str(cli_error(exc))
        error(shown)
        _error_json(exc, message=shown)
        return exc.exit_code
    except KeyboardInterrupt:
        error("interrupted")
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug in cotune: one line, the traceback kept for the report
        import os

        if os.environ.get("COTUNE_DEBUG"):
            raise
        from cotune.cli._output import internal_error

        line = internal_error(exc, ["cotune", *_ARGV.get()])
        error(line)
        _error_json(exc, message=line)
        return EXIT_INTERNAL
    finally:
        # What an error path printed (an error.v1 document): out now or dropped; the line on
        # stderr and the exit code already say what went wrong.
        with contextlib.suppress(OSError):
            flush_stdout()


def _flushed(code: int) -> int:
    """``code`` once stdout is flushed (help, version, usage errors). A full disk behind it
    fails the help (one line, exit 3); a usage error's own line and code already say what failed."""
    from cotune.cli._output import error, flush_stdout

    try:
        flush_stdout()
    except StorageError as exc:
        if code != 0:
            return code
        error(str(exc))
        return exc.exit_code
    return code
