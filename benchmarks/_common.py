"""Helpers shared by the core benchmarks: locating data and printing tables."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
PROFILES = ("cifar10-resnet18", "imagenet-resnet50", "yolov3-voc")


def workload_names(arg: str | None) -> list[str] | None:
    """The traces a ``--workloads a,b`` option names (every registered trace when None), or
    None after printing one line that names the unknown ones and the choices (exit 2)."""
    import sys

    from benchmarks._registry import TRACES

    names = arg.split(",") if arg else list(TRACES)
    unknown = [n for n in names if n not in TRACES]
    if unknown:
        print(f"error: unknown workload(s) {', '.join(unknown)}; choose from {', '.join(TRACES)}", file=sys.stderr)
        return None
    return names


def workloads_only_cli(argv: list[str] | None, *, prog: str, description: str) -> list[str] | None:
    """``prog [--workloads a,b]``: the registry loaded and the workloads named (every trace by
    default), or None after one error line (the caller exits 2)."""
    import argparse

    from benchmarks._registry import load

    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("--workloads", help="comma-separated workloads (default: every trace)")
    args = ap.parse_args(argv)
    load()
    return workload_names(args.workloads)


def markdown_table(headers: list[str], rows: list[list[object]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)
