"""Errors that cotune raises on purpose, and the exit codes the CLI maps them to.

Every message states what was wrong (with the offending value) and ends with what
to change. The CLI prints ``cotune: <message>`` on one line, never a traceback.

Exit codes (documented in ``docs/cli.md``):

* ``0`` — success;
* ``1`` — the question was well formed but nothing is feasible (:class:`InfeasibleError`);
* ``2`` — bad input: a missing or malformed file, an invalid argument or field value
  (:class:`InputError` and its subclasses; argparse usage errors too).
"""

from __future__ import annotations

__all__ = [
    "CotuneError",
    "InputError",
    "ProfileError",
    "ModelError",
    "InfeasibleError",
    "EXIT_OK",
    "EXIT_INFEASIBLE",
    "EXIT_INPUT",
]

EXIT_OK = 0
EXIT_INFEASIBLE = 1
EXIT_INPUT = 2


class CotuneError(Exception):
    """Base of every error cotune raises deliberately."""

    exit_code: int = EXIT_INPUT


class InputError(CotuneError, ValueError):
    """An argument or a value supplied by the user is invalid."""

    exit_code = EXIT_INPUT


class ProfileError(InputError):
    """A profile file is missing, unreadable or malformed.

    ``path`` and ``line`` (1-based) locate the problem when known.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path = path
        self.line = line


class ModelError(InputError):
    """The profile does not hold enough data to fit a model."""


class InfeasibleError(CotuneError):
    """No candidate meets every constraint; the message says what to relax."""

    exit_code = EXIT_INFEASIBLE
