"""examples/scheduler_http.py against a real server on loopback: an answer without a plan
(infeasible) and the HTTP server's own plain-text 503 end in one line saying why, never a
traceback."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from sched_server import REPO, running_server  # noqa: E402

EXAMPLE = str(REPO / "examples" / "scheduler_http.py")


@pytest.mark.slow  # starts a real server
def test_the_http_example_says_what_to_relax_when_no_plan_meets_the_target():
    with running_server() as url:
        done = subprocess.run([sys.executable, EXAMPLE, url, "0.999"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.startswith("cannot meet it: ") and "lower the target" in done.stderr
    assert done.stderr.rstrip().endswith("(request example-job-1)") and done.stderr.count("\n") == 1


@pytest.mark.slow  # starts a real server
def test_the_http_example_reports_a_plain_text_503_in_one_line():
    # Past --max-connections uvicorn itself answers 503 with a plain-text body. A request's own
    # connection counts, so with a limit of 2 one silent connection fills the server.
    import httpx

    with running_server("--max-connections", "2") as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))):
            # until the server has taken the silent connection in (a probe is refused too)
            assert any(httpx.get(url + "/health").status_code == 503 for _ in range(1000))
            done = subprocess.run([sys.executable, EXAMPLE, url], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.startswith("503 Service Unavailable") and done.stderr.count("\n") == 1, done.stderr
