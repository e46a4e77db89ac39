"""The bundled example profiles and sweep table are what their recipe makes of the published
traces, byte for byte (examples/make_pollux_profiles.py; cotune/data/profiles/NOTICE.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def traces() -> Path:
    from benchmarks.traces import data_root

    try:
        return data_root() / "pollux-osdi21" / "traces"
    except FileNotFoundError:  # pragma: no cover - CI and dev check shared/ out beside the repo
        pytest.skip("shared/data not found beside the repository")


def _make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "examples" / "make_pollux_profiles.py"), *args],
                          capture_output=True, text=True, timeout=300, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))


def test_the_bundled_profiles_are_rebuilt_byte_for_byte_from_the_traces(traces, tmp_path):
    done = _make(str(traces), str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    bundled = sorted((REPO / "cotune" / "data" / "profiles").glob("*.jsonl"))
    assert [p.name for p in bundled] == sorted(p.name for p in tmp_path.glob("*.jsonl"))
    for path in bundled:
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), f"{path.name} is not what the traces make"


def test_the_bundled_sweep_table_is_rebuilt_byte_for_byte(tmp_path):
    done = _make("--sweep", str(tmp_path / "sweep.csv"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "sweep.csv").read_bytes() == (REPO / "examples" / "logs" / "sweep.csv").read_bytes()
