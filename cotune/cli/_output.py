"""The one place that owns terminal output: tables, errors, JSON.

Names in a profile (workload, GPU, metric) and values in error messages come from
files and requests cotune does not control. A terminal interprets control characters
(ESC sequences set the window title, clear the screen, rewrite earlier lines), so
every line written here passes through :func:`terminal_safe` first: control and other
non-printable characters are shown as Python escapes (``\\x1b``), printable Unicode
(``é``, ``—``) is kept. JSON output is safe as is (``json`` escapes control characters).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import sys
from typing import Any, Sequence, TextIO

__all__ = [
    "table", "error", "info", "warning", "emit", "emit_json", "flush_stdout", "fmt_num", "terminal_safe", "one_line",
    "excerpt", "internal_error",
]

from cotune._checks import excerpt  # noqa: E402  (re-exported: the CLI quotes values with it)
from cotune.errors import StorageError  # noqa: E402


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
    if stream is not None:
        print(terminal_safe(text), file=stream)
        return
    try:
        print(terminal_safe(text), file=sys.stdout)
    except OSError as exc:
        _stdout_failed(exc)


# A full or failing device behind stdout: the answer did not reach its reader, the environment's
# fault (exit 3), not a bug in cotune. EPIPE is not among them: the reader chose to stop reading.
_STDOUT_STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})


def _stdout_failed(exc: OSError) -> None:
    """Handle an ``OSError`` writing stdout: a reader gone (EPIPE) is no failure of the command,
    which goes on to its own exit code; a full or failing device is a :class:`StorageError`.

    Either way fd 1 is pointed at ``/dev/null`` first, so neither the rest of the output nor the
    interpreter's flush at exit reaches the broken stream: that flush would print a two-line
    "Exception ignored … OSError" and exit 120, which no one documents."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if sys.stdout.fileno() == 1:  # a stream a caller put in sys.stdout is theirs to handle
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, 1)
            finally:
                os.close(devnull)
    if exc.errno == errno.EPIPE:
        return
    if exc.errno in _STDOUT_STORAGE_ERRNOS:
        raise StorageError.from_os_error(exc, path="standard output", doing="write the answer") from None
    raise exc


def flush_stdout() -> None:
    """Push the command's buffered output out now, while :func:`cotune.cli.main` can still say
    why it failed (one line, exit 3) — at the interpreter's exit only a traceback-like warning can."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except OSError as exc:
        _stdout_failed(exc)


# Whether this command has printed its JSON answer: a failure after it (a plot that cannot be
# written) must not add a second document to stdout (cotune.cli._error_json).
_EMITTED: list[bool] = []


def emit_json(obj: Any) -> None:
    text = json.dumps(obj, indent=2, allow_nan=False)  # a value JSON cannot hold fails before a byte is out
    _EMITTED.append(True)
    try:
        sys.stdout.write(text + "\n")
    except OSError as exc:
        _stdout_failed(exc)


def json_emitted() -> bool:
    """Whether :func:`emit_json` has printed a document in this command."""
    return bool(_EMITTED)


def forget_emitted() -> None:
    """A new command begins (``cotune.cli.main``; tests call it many times in one process)."""
    _EMITTED.clear()


def _to_stderr(line: str) -> None:
    """Write one line to stderr, or drop it where stderr cannot take it: closed (``2>&-``,
    where ``print`` would fall back to stdout and put the line among the data), full or
    gone — the command's own exit code, not a failed diagnostic, is what a caller reads."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        print(line, file=stream, flush=True)
    except (OSError, ValueError):
        # The unwritten line stays in the stream's buffer, and the interpreter's flush at exit
        # would fail on it again and exit 120: point fd 2 at /dev/null so that flush succeeds.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, stream.fileno())
            os.close(null)


def error(message: str) -> None:
    """One line on stderr, prefixed with the program name; never a traceback."""
    first = " ".join(str(message).split())
    _to_stderr(f"cotune: {terminal_safe(first)}")


def info(message: str) -> None:
    """One line on stderr, ``cotune: …``, for a long-running command's status (stdout stays data)."""
    first = " ".join(str(message).split())
    _to_stderr(f"cotune: {terminal_safe(first)}")


def warning(message: str) -> None:
    """One line on stderr, ``cotune: warning: …``; the command carries on."""
    first = " ".join(str(message).split())
    _to_stderr(f"cotune: warning: {terminal_safe(first)}")


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
