"""Test helpers importable as `_helpers` (a unique name: several test folders have a conftest)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def synthetic_records(
    *,
    seed: int = 0,
    gpus: tuple[str, ...] = ("t4",),
    workers: tuple[int, ...] = (1, 2, 4, 8),
    batches: tuple[int, ...] = (16, 32, 64, 128),
    global_batches: tuple[int, ...] = (64, 256, 1024),
    seeds: int = 1,
    dataset_size: int = 20_000,
    noise: float = 0.02,
) -> list[dict]:
    """A physically plausible profile: step time from a known law, learning curves that
    saturate more slowly for bigger batches (critical-batch law with B_noise = 512)."""
    rng = np.random.default_rng(seed)
    recs: list[dict] = [{"record": "workload", "name": f"synthetic-{seed}", "dataset_size": dataset_size, "metric": "acc", "goal": "max"}]
    for gi, gpu in enumerate(gpus):
        speed = 1.0 + gi
        for n in workers:
            hosts = -(-n // 4)
            for b in batches:
                compute = (0.01 + 0.0005 * b) / speed
                sync = 0.0 if n == 1 else 0.004 + 0.002 * np.log2(n) + (0.01 if hosts > 1 else 0.0)
                step = (compute**2 + sync**2) ** 0.5 * float(np.exp(rng.normal(0, noise)))
                recs.append({"record": "step", "gpu": gpu, "workers": n, "hosts": hosts, "local_batch": b, "step_time_s": step})
    for B in global_batches:
        e_scale = 10.0 * (1 + B / 512)
        for s in range(seeds):
            for k in range(1, 41):
                epoch = k * e_scale / 10.0
                acc = 0.95 * (1 - np.exp(-epoch / (e_scale / 3))) + rng.normal(0, 0.003)
                recs.append({"record": "eval", "global_batch": B, "epoch": round(epoch, 4), "metric": float(acc), "seed": s})
    return recs


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def shared_data(*parts: str) -> Path:
    """A file of the published data beside the repository (``../shared/data``); the test is
    skipped where that folder is not checked out (CI and development have it)."""
    import pytest

    from benchmarks.traces import data_root

    try:
        return data_root().joinpath(*parts)
    except FileNotFoundError:  # pragma: no cover - CI and dev check shared/ out beside the repo
        pytest.skip("shared/data not found beside the repository")


def fork_while_a_thread_holds_a_lock(monkeypatch, *, hold, child) -> int:  # noqa: ANN001
    """Fork while a thread named ``holding`` runs ``hold()`` and sits in ``os.fsync`` (so
    inside whatever lock that call holds); in the child run ``child()``. Returns the
    child's exit code (0: ``child()`` returned; 1: it raised). The thread then finishes."""
    import os
    import threading

    real_fsync = os.fsync
    inside, may_go = threading.Event(), threading.Event()

    def fsync(fd: int) -> None:
        if threading.current_thread().name == "holding":
            inside.set()
            may_go.wait()
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    holding = threading.Thread(target=hold, name="holding")
    holding.start()
    inside.wait()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            child()
            code = 0
        finally:
            os._exit(code)
    may_go.set()
    holding.join()
    _, status = os.waitpid(pid, 0)
    monkeypatch.undo()
    return os.waitstatus_to_exitcode(status)
