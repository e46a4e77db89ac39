"""Progress bars for the terminal layer (tqdm), for work that may take more than ~2 s.

Algorithms never print: they take a ``progress(done, total)`` callback, and commands
pass the one :func:`progress_bar` yields. The bar appears only on a terminal, only
once the work has run for ``delay_s`` (quick calls stay silent), never with ``quiet``.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator

__all__ = ["progress_bar"]


@contextmanager
def progress_bar(label: str, *, total: int | None = None, quiet: bool = False,
                 delay_s: float = 2.0) -> Iterator[Callable[[int, int | None], None]]:
    """Yield ``advance(done, total=None)``; a no-op when quiet, off a terminal or without tqdm."""
    stream = sys.stderr
    if quiet or not getattr(stream, "isatty", lambda: False)():
        yield lambda done, total=None: None
        return
    try:
        from tqdm import tqdm
    except ImportError:  # progress is a convenience: without tqdm, run silently
        yield lambda done, total=None: None
        return
    bar = tqdm(total=total, desc=label, file=stream, delay=delay_s, leave=False, dynamic_ncols=True)

    def advance(done: int, new_total: int | None = None) -> None:
        if new_total is not None and new_total != bar.total:
            bar.total = new_total
        bar.n = done
        bar.refresh()

    try:
        yield advance
    finally:
        bar.close()
