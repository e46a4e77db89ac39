"""The one place that owns terminal output: tables, errors, JSON."""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Sequence, TextIO

__all__ = ["table", "error", "emit", "emit_json", "fmt_num"]


def fmt_num(x: float | None, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—" if x is None else ("inf" if x > 0 else "-inf")
    return f"{x:.{digits}g}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, right: Sequence[bool] | None = None) -> str:
    """A plain aligned text table (no box drawing: it pastes into issues and logs)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
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
    print(text, file=stream or sys.stdout)


def emit_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def error(message: str) -> None:
    """One line on stderr, prefixed with the program name; never a traceback."""
    first = " ".join(str(message).split())
    print(f"cotune: {first}", file=sys.stderr)
