"""A progress line on stderr: what runs now, how many points are done, time left.

On a terminal it redraws one line in place; otherwise (CI logs, files) it prints one
plain line per finished point and nothing in between. ``quiet`` silences it.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from cotune.units import format_duration

__all__ = ["Progress"]


class Progress:
    """Tracks points done/total and prints status; ``remaining_s`` comes from the plan."""

    def __init__(self, *, total: int, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total = total
        self.done = 0
        self.began = time.monotonic()
        self._label = ""
        self._label_began = self.began
        self._remaining_s: float | None = None
        self._last_draw = 0.0

    def _bar(self, width: int = 20) -> str:
        frac = self.done / self.total if self.total else 1.0
        fill = int(round(frac * width))
        return "[" + "#" * fill + "." * (width - fill) + "]"

    def _left(self) -> str:
        if self._remaining_s is None:
            return "time left unknown"
        return f"~{format_duration(self._remaining_s)} left"

    def start(self, label: str, *, remaining_s: float | None) -> None:
        """A point begins; ``remaining_s`` estimates the rest of the plan including it."""
        self._label = label
        self._label_began = time.monotonic()
        self._remaining_s = remaining_s
        self.tick(force=True)

    def tick(self, *, force: bool = False) -> None:
        """Redraw the live line (terminal only, at most 5 times a second)."""
        if self.quiet or not self.tty:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < 0.2:
            return
        self._last_draw = now
        running = format_duration(now - self._label_began)
        line = f"{self._bar()} {self.done}/{self.total} {self._label} ({running}) {self._left()}"
        self.stream.write("\r\x1b[2K" + line[:200])
        self.stream.flush()

    def finish(self, label: str, outcome: str, *, remaining_s: float | None, took_s: float | None = None) -> None:
        """A point ended with ``outcome`` (e.g. ``0.0123 s/step`` or ``oom``); ``took_s``:
        its share of a launch that timed several points (default: since :meth:`start`)."""
        self.done += 1
        self._remaining_s = remaining_s
        if self.quiet:
            return
        took = format_duration(time.monotonic() - self._label_began if took_s is None else took_s)
        line = f"[{self.done}/{self.total}] {label}: {outcome} ({took}), {self._left()}"
        if self.tty:
            self.stream.write("\r\x1b[2K" + line + "\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def note(self, message: str) -> None:
        """A line that is not a point (skips, resume summary, budget stop)."""
        if self.quiet:
            return
        self.stream.write(("\r\x1b[2K" if self.tty else "") + message + "\n")
        self.stream.flush()

    def grow(self, extra: int) -> None:
        """The plan gained (or lost, if negative) points while running."""
        self.total = max(self.done, self.total + extra)
