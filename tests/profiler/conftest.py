"""Profiler tests: make the worktree's packages win, here and in the probe processes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# profiler_helpers.py sits next to the tests; make it importable in any import mode.
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True)
def _repo_on_path(monkeypatch):
    # torchrun workers import `profiler` and `cotune` from PYTHONPATH: point it at this
    # checkout so an installed copy elsewhere is never the one measured.
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    yield
