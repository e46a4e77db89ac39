"""The one place that owns terminal output: tables, errors, JSON.

Names in a profile (workload, GPU, metric) and values in error messages come from
files and requests cotune does not control. A terminal interprets control characters
(ESC sequences set the window title, clear the screen, rewrite earlier lines), so
every line written here passes through :func:`terminal_safe` first: control and other
non-printable characters are shown as Python escapes (``\\x1b``), printable Unicode
(``é``, ``—``) is kept. JSON output is safe as is (``json`` escapes control characters).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Sequence, TextIO

__all__ = [
    "table", "error", "info", "warning", "emit", "emit_json", "fmt_num", "terminal_safe", "one_line", "excerpt", "internal_error",
]

from cotune._checks import excerpt  # noqa: E402  (re-exported: the CLI quotes values with it)


def terminal_safe(text: str) -> str:
    """``text`` with every non-printable character but newline escaped (no terminal escapes)."""
    text = str(text)
    return text if text.isprintable() else "\n".join(one_line(line) for line in text.split("\n"))


def one_line(text: Any) -> str:
    """A name from a profile, for one line or one table cell: newlines escaped too.

    :func:`terminal_safe` keeps newlines, the lines of the output; a workload called
    ``"a\nCHOSEN …"`` would otherwise print a line of its own choosing."""
    text = str(text)
    return text if text.isprintable() else "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def fmt_num(x: float | None, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—" if x is None else ("inf" if x > 0 else "-inf")
    return f"{x:.{digits}g}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, right: Sequence[bool] | None = None) -> str:
    """A plain aligned text table (no box drawing: it pastes into issues and logs)."""
    cells = [[one_line(h) for h in headers]] + [[one_line(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    right = right or [False] * len(headers)
    lines = []
    for k, row in enumerate(cells):
        parts = [c.rjust(w) if right[i] and k > 0 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(parts).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def emit(text: str = "", *, stream: TextIO | None = None) -> None:
    print(terminal_safe(text), file=stream or sys.stdout)


# Whether this command has printed its JSON answer: a failure after it (a plot that cannot be
# written) must not add a second document to stdout (cotune.cli._error_json).
_EMITTED: list[bool] = []


def emit_json(obj: Any) -> None:
    _EMITTED.append(True)
    json.dump(obj, sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def json_emitted() -> bool:
    """Whether :func:`emit_json` has printed a document in this command."""
    return bool(_EMITTED)


def forget_emitted() -> None:
    """A new command begins (``cotune.cli.main``; tests call it many times in one process)."""
    _EMITTED.clear()


def error(message: str) -> None:
    """One line on stderr, prefixed with the program name; never a traceback."""
    first = " ".join(str(message).split())
    print(f"cotune: {terminal_safe(first)}", file=sys.stderr)


def info(message: str) -> None:
    """One line on stderr, ``cotune: …``, for a long-running command's status (stdout stays data)."""
    first = " ".join(str(message).split())
    print(f"cotune: {terminal_safe(first)}", file=sys.stderr)


def warning(message: str) -> None:
    """One line on stderr, ``cotune: warning: …``; the command carries on."""
    first = " ".join(str(message).split())
    print(f"cotune: warning: {terminal_safe(first)}", file=sys.stderr)


def internal_error(exc: BaseException, argv: Sequence[str]) -> str:
    """The one line of a bug in cotune (exit 4): the exception, and a file that keeps the
    command ``argv`` and the traceback for the report (a user's input never reaches here: it
    is a :class:`~cotune.errors.CotuneError`). Every command's entry point uses it."""
    import tempfile
    import time
    import traceback

    text = " ".join(str(exc).split())  # one line; error() escapes control characters
    what = type(exc).__name__ + (f": {text[:200]}{'…' if len(text) > 200 else ''}" if text else "")
    try:
        fd, path = tempfile.mkstemp(prefix=f"cotune-crash-{time.strftime('%Y%m%dT%H%M%S')}-", suffix=".txt")
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(" ".join(argv) + "\n\n")
            fh.write("".join(traceback.format_exception(exc)))
        kept = f"the traceback is in {path}"
    except OSError:
        kept = "set COTUNE_DEBUG=1 to print the traceback"
    return (f"internal error ({what}): a bug in cotune, not in your input; {kept}: please report it with the command "
            "you ran")
