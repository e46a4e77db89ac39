"""Profiler tests: make the worktree's packages win, here and in the probe processes."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _repo_on_path(monkeypatch):
    # torchrun workers import `profiler` and `cotune` from PYTHONPATH: point it at this
    # checkout so an installed copy elsewhere is never the one measured.
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    yield
