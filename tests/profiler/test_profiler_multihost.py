"""Two torchrun agents meeting through the c10d rendezvous, as two hosts would.

Both "hosts" run on this machine (each a separate `cotune profile` process with
`--nnodes 2` and the same endpoint), so the real multi-node code path runs: the
rendezvous, one process per node, cross-node all-reduce and the shared records.
"""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from profiler_helpers import FAST, of, spec


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_two_nodes_meet_and_write_the_same_records(tmp_path):
    port = _free_port()
    outs = [tmp_path / "host_a.jsonl", tmp_path / "host_b.jsonl"]
    # Two batches: one launch times both on every host (each host sees its own rank's results).
    cmd = [sys.executable, "-m", "cotune", "profile", "--workload", spec("tiny"), "--workers", "2",
           "--local-batch", "8,16", "--no-curves", "--nnodes", "2", "--rdzv-endpoint", f"127.0.0.1:{port}", *FAST]
    procs = [subprocess.Popen([*cmd, "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for out in outs]
    try:
        logs = [p.communicate(timeout=180)[0] for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0, 0], logs
    steps = [of(out, "step") for out in outs]
    assert [[(r["workers"], r["hosts"], r["local_batch"]) for r in s] for s in steps] == [[(2, 2, 8), (2, 2, 16)]] * 2
    assert all(r["step_time_s"] > 0 for s in steps for r in s)
    # every rank exchanged its measurements: both hosts recorded the same numbers
    assert steps[0] == steps[1]


@pytest.mark.slow
def test_a_second_host_that_never_joins_records_nothing_and_exits_3(tmp_path):
    # the workload never ran: a timeout record would blame it, and a rerun would skip the point for good
    out = tmp_path / "alone.jsonl"
    cmd = [sys.executable, "-m", "cotune", "profile", "--workload", spec("tiny"), "--workers", "2", "--local-batch", "8",
           "--no-curves", "--nnodes", "2", "--rdzv-endpoint", f"127.0.0.1:{_free_port()}", "--probe-timeout", "20s",
           "--out", str(out), *FAST]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "no worker started within" in run.stderr and "nothing was recorded" in run.stderr
    assert not out.exists() or (not of(out, "failure") and not of(out, "step"))
    kept = run.stderr.split("log: ")[-1].split(")")[0]
    assert (tmp_path / "alone.jsonl.cotune" / "logs").is_dir() and kept.startswith(str(tmp_path)), run.stderr
