"""kill -9 at any moment, run the same command again: nothing repeated, lost or duplicated."""

from __future__ import annotations

import pytest

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from _waiting import wait_for
from profiler_helpers import FAST, lines, of, processes_mentioning, spec

from cotune.profile import read_profile

ROOT = Path(__file__).resolve().parents[2]


def _command(out: Path) -> list[str]:
    return [sys.executable, "-m", "profiler", "--workload", spec("slow"), "--workers", "1",
            "--local-batch", "4,8,16", "--curves", "32", "--max-epochs", "8", "--out", str(out), *FAST]


def _start(out: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(_command(out), cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _kill9_when(proc: subprocess.Popen, out: Path, ready, *, timeout_s: float = 90.0) -> None:
    began = time.monotonic()
    while time.monotonic() - began < timeout_s:
        if out.exists() and ready(lines_safe(out)):
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            return
        if proc.poll() is not None:
            raise AssertionError(f"profiler ended before the kill point: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("kill point never reached")


def lines_safe(path: Path) -> list[dict]:
    import json

    out = []
    for raw in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if raw.endswith("\n"):
            out.append(json.loads(raw))
    return out


@pytest.mark.slow
def test_kill9_during_timing_and_during_curve_then_resume(tmp_path):
    out = tmp_path / "resume.jsonl"

    # 1. Kill while the launch that times all three batches runs, after the first one is on
    #    disk (its record is written as soon as every rank reported it).
    proc = _start(out)
    _kill9_when(proc, out, lambda recs: sum(r["record"] == "step" for r in recs) >= 1)
    # The kernel delivers the parent-death signal; torchrun stops its workers. Wait for
    # that with a generous deadline (a loaded machine takes its time), not a fixed sleep.
    wait_for(lambda: processes_mentioning(str(tmp_path)) == [], timeout_s=60,
             what="probe processes of the killed profiler to exit")

    # 2. Rerun, kill in the middle of the learning curve (two epochs on disk).
    proc = _start(out)
    _kill9_when(proc, out, lambda recs: sum(r["record"] == "eval" for r in recs) >= 2)
    wait_for(lambda: processes_mentioning(str(tmp_path)) == [], timeout_s=60,
             what="probe processes of the killed profiler to exit")
    evals_at_kill = len(of(out, "eval"))
    assert 2 <= evals_at_kill < 8

    # 3. A torn last line, as a kill in the middle of a write would leave.
    with out.open("a", encoding="utf-8") as fh:
        fh.write('{"record": "eval", "global_batch": 32, "ep')

    # 4. Rerun to the end.
    done = subprocess.run(_command(out), cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr

    profile = read_profile(out)  # the file is valid (the torn line was cut off)
    assert not profile.warnings
    keys = Counter((s.workers, s.local_batch) for s in profile.steps)
    assert keys == {(1, 4): 1, (1, 8): 1, (1, 16): 1}, keys
    evals = [e for e in profile.evals if e.global_batch == 32]
    epochs = [round(e.epoch, 6) for e in evals]
    assert len(epochs) == 8 and epochs == sorted(set(epochs)), epochs  # every epoch once, in order
    assert [round(e, 6) for e in epochs] == [float(k) for k in range(1, 9)]  # 512 samples / 32 = 16 steps each
    assert len(of(out, "curve_done")) == 1 and len(of(out, "workload")) == 1
    assert all(r["record"] != "failure" for r in lines(out))

    # 5. Once more: everything is done, nothing is appended.
    before = out.read_bytes()
    again = subprocess.run(_command(out), cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert out.read_bytes() == before
