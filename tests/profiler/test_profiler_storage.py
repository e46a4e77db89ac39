"""Faults of ours, never the workload's: a second writer, a full disk, a read-only disk.

Every test runs the real command (torchrun, gloo) against a real filesystem fault: a
tiny tmpfs filled to the last byte, a tmpfs mounted read-only. The promise: the
command stops with one line and exit code 3, the profile holds no ``failure`` or
``curve_done`` record for what was never measured, and a rerun once the fault is gone
measures exactly what is missing — every record once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from profiler_helpers import FAST, lines, of, spec

from cotune.errors import EXIT_ENVIRONMENT
from cotune.profile import read_profile

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _command(out: Path, *extra: str, workload: str = "tiny") -> list[str]:
    return [sys.executable, "-m", "profiler", "--workload", spec(workload), "--workers", "1", "--out", str(out),
            *FAST, *extra]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _run(argv: list[str], *, timeout_s: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout_s)


def _wait_for(condition, *, timeout_s: float = 120.0, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(0.05)


def _one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == EXIT_ENVIRONMENT, (done.returncode, done.stderr)
    err = done.stderr
    assert err.startswith("cotune: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_second_run_on_the_same_out_is_refused_naming_the_first(tmp_path):
    out = tmp_path / "p.jsonl"
    first = subprocess.Popen(_command(out, "--local-batch", "4,8,16", "--curves", "32", "--max-epochs", "3",
                                      workload="slow"),
                             cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: out.exists() and out.stat().st_size > 0 or first.poll() is not None,
                  what="the first run to write its workload record")
        assert first.poll() is None, first.stderr.read()
        second = _run(_command(out, "--local-batch", "4,8,16", "--curves", "32", "--max-epochs", "3",
                               workload="slow"), timeout_s=120)
        err = _one_line_error(second)
        assert f"pid {first.pid}" in err and "being written by" in err
        assert first.wait(timeout=300) == 0, first.stderr.read()
    finally:
        first.kill()
        first.wait()
    profile = read_profile(out)
    assert Counter(s.local_batch for s in profile.steps) == {4: 1, 8: 1, 16: 1}
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0]  # one curve, not two interleaved
    assert len(of(out, "curve_done")) == 1 and len(of(out, "workload")) == 1
