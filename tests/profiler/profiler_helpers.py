"""Helpers shared by the profiler tests (imported by file name, not as a package)."""

from __future__ import annotations

import json
import os
from pathlib import Path

WORKLOADS = Path(__file__).resolve().parent / "workloads.py"

# Few, short steps: the tests check that probes measure and record, not precision.
FAST = ["--device", "cpu", "--warmup-steps", "2", "--min-steps", "5", "--max-steps", "15",
        "--max-probe-time", "3s", "--quiet"]


def spec(name: str) -> str:
    return f"{WORKLOADS}:{name}"


def lines(path: Path) -> list[dict]:
    """Every complete JSON line of a profile file."""
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def of(path: Path, kind: str) -> list[dict]:
    return [d for d in lines(path) if d["record"] == kind]


def processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line contains ``text`` (to prove no probe process outlived its probe)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{entry}/stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        if text in cmd and state != "Z":
            pids.append(int(entry))
    return pids


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    from profiler.cli import main

    code = main(argv)
    return code, capsys.readouterr().err
