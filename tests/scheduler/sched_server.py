"""Start ``cotune serve`` as a real process on loopback (tests and benchmarks share it)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parent.parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_server(*extra: str, startup_timeout_s: float = 60.0) -> Iterator[str]:
    """Yield the base URL of a fresh ``cotune serve`` on 127.0.0.1; stop it afterwards."""
    with server_process(*extra, startup_timeout_s=startup_timeout_s) as (url, _):
        yield url


@contextmanager
def server_process(*extra: str, startup_timeout_s: float = 60.0) -> Iterator[tuple[str, subprocess.Popen]]:
    """Like :func:`running_server`, yielding ``(url, process)`` (benchmarks read its memory)."""
    import httpx

    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-c", "import sys; from cotune.cli import main; sys.exit(main())", "serve",
           "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", *extra]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"cotune serve exited early: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
            try:
                if httpx.get(url + "/health", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("cotune serve did not answer /health in time")
            time.sleep(0.1)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
