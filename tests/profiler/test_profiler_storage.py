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
from collections import Counter
from pathlib import Path

import pytest
from _fsfaults import fill, tmpfs
from _waiting import wait_for
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
        wait_for(lambda: out.exists() and out.stat().st_size > 0 or first.poll() is not None,
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


def _records_of_failure(out: Path) -> list[dict]:
    return [r for r in lines(out) if r["record"] == "failure" or (r["record"] == "curve_done" and r["reason"] != "max_epochs")]


def test_full_scratch_disk_stops_with_exit_3_and_a_rerun_measures_everything(tmp_path):
    out = tmp_path / "p.jsonl"
    with tmpfs(tmp_path / "p.jsonl.cotune", size_kib=4096) as scratch:
        filler = fill(scratch)
        done = _run(_command(out, "--local-batch", "4,8", "--no-curves"))
        err = _one_line_error(done)
        assert "(ENOSPC)" in err and "free space" in err
        assert not out.exists() or _records_of_failure(out) == [] and of(out, "step") == []
        filler.unlink()  # space freed: the same command measures what was not measured
        done = _run(_command(out, "--local-batch", "4,8", "--no-curves"))
        assert done.returncode == 0, done.stderr
    profile = read_profile(out)
    assert Counter(s.local_batch for s in profile.steps) == {4: 1, 8: 1}
    assert profile.failures == () and _records_of_failure(out) == []


def test_disk_full_in_the_middle_of_a_curve_loses_no_epoch_and_records_no_crash(tmp_path):
    out = tmp_path / "p.jsonl"
    argv = _command(out, "--local-batch", "4", "--curves", "32", "--max-epochs", "8", workload="slow")
    with tmpfs(tmp_path / "p.jsonl.cotune", size_kib=8192) as scratch:
        proc = subprocess.Popen(argv, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        try:
            wait_for(lambda: proc.poll() is not None or out.exists() and len(_complete(out, "eval")) >= 2,
                      what="two epochs of the curve in the profile")
            assert proc.poll() is None, proc.stderr.read()
            filler = fill(scratch)  # the worker's next progress line or checkpoint hits ENOSPC
            rc = proc.wait(timeout=300)
            err = proc.stderr.read()
        finally:
            proc.kill()
            proc.wait()
        assert rc == EXIT_ENVIRONMENT, err
        assert err.startswith("cotune: ") and err.count("\n") == 1 and "Traceback" not in err, err
        assert "storage" in err or "ENOSPC" in err, err
        evals_before = len(of(out, "eval"))
        assert 2 <= evals_before < 8
        assert _records_of_failure(out) == [] and of(out, "curve_done") == []
        filler.unlink()
        done = _run(argv)
        assert done.returncode == 0, done.stderr
    profile = read_profile(out)
    assert [e.epoch for e in profile.evals] == [float(k) for k in range(1, 9)]  # every epoch once, in order
    assert len(profile.steps) == 1 and profile.failures == ()
    (curve_done,) = of(out, "curve_done")
    assert curve_done["reason"] == "max_epochs"


def test_read_only_scratch_or_profile_stops_with_exit_3_and_no_traceback(tmp_path):
    out = tmp_path / "p.jsonl"
    with tmpfs(tmp_path / "p.jsonl.cotune", size_kib=1024, read_only=True):
        err = _one_line_error(_run(_command(out, "--local-batch", "4", "--no-curves")))
        assert "read-only" in err and "(EROFS)" in err
    assert not out.exists() or of(out, "failure") == []
    with tmpfs(tmp_path / "ro", size_kib=1024, read_only=True) as ro:
        err = _one_line_error(_run(_command(ro / "p.jsonl", "--local-batch", "4", "--no-curves")))
        assert "(EROFS)" in err and "writable location" in err


def _complete(path: Path, kind: str) -> list[dict]:
    import json

    return [json.loads(raw) for raw in path.read_text(encoding="utf-8").splitlines(keepends=True)
            if raw.endswith("\n") and json.loads(raw)["record"] == kind]


def test_profile_and_scratch_on_a_disk_that_fills_between_probes(tmp_path):
    # The case: one filesystem for everything, full in the middle of a run.
    with tmpfs(tmp_path / "fs", size_kib=8192) as fs:
        out = fs / "p.jsonl"
        argv = _command(out, "--local-batch", "4,8,16", "--no-curves", workload="slow")
        proc = subprocess.Popen(argv, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        try:
            wait_for(lambda: proc.poll() is not None or out.exists() and len(_complete(out, "step")) >= 1,
                     timeout_s=120, what="the first step record")
            assert proc.poll() is None, proc.stderr.read()
            filler = fill(fs)
            rc = proc.wait(timeout=300)
            err = proc.stderr.read()
        finally:
            proc.kill()
            proc.wait()
        assert rc == EXIT_ENVIRONMENT, err
        assert err.startswith("cotune: ") and err.count("\n") == 1 and "(ENOSPC)" in err, err
        profile = read_profile(out)
        assert not profile.warnings  # whole records only
        assert profile.failures == () and 1 <= len(profile.steps) < 3
        filler.unlink()
        done = _run(argv)
        assert done.returncode == 0, done.stderr
        profile = read_profile(out)
        assert Counter(s.local_batch for s in profile.steps) == {4: 1, 8: 1, 16: 1} and profile.failures == ()
