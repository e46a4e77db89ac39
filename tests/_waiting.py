"""Waiting in tests: on a condition with a generous deadline, never for a fixed time.

A fixed sleep is either too short on a loaded machine (a red test) or wasted time on an
idle one; polling a condition is right on both.
"""

from __future__ import annotations

import time
from typing import Callable


def wait_for(condition: Callable[[], object], *, timeout_s: float = 60.0, what: str, poll_s: float = 0.02) -> None:
    """Return once ``condition()`` is true; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(poll_s)
