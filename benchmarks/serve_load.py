"""Load benchmark of ``cotune serve``: many concurrent clients on loopback.

Starts a real ``cotune serve`` on 127.0.0.1, warms the fitted-model cache with one
request, then sends ``--requests`` recommend requests from ``--clients`` concurrent
keep-alive clients and prints requests per second and p50/p99 latency. Only loopback
traffic; nothing leaves the machine.

    PYTHONPATH=. python benchmarks/serve_load.py --clients 32 --requests 400
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "scheduler"))  # the shared loopback-server helper

from sched_server import running_server  # noqa: E402

REQUEST = {"profile": "cifar10-resnet18", "target": 0.94, "deadline_s": 1800, "max_workers": 16, "gpus_per_host": 4, "prices": {"t4": 0.526}}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    import httpx

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=None, help="server --concurrency (default: CPU count)")
    args = ap.parse_args(argv)
    body = json.dumps(REQUEST).encode()
    extra = ["--concurrency", str(args.concurrency)] if args.concurrency else []
    with running_server(*extra) as url:
        with httpx.Client(base_url=url, timeout=120) as c:
            t0 = time.perf_counter()
            first = c.post("/v1/recommend", content=body, headers={"content-type": "application/json"})
            cold_s = time.perf_counter() - t0
            assert first.status_code == 200, first.text
        latencies: list[float] = []
        errors = 0
        lock = threading.Lock()
        counter = iter(range(args.requests))

        def client() -> None:
            nonlocal errors
            with httpx.Client(base_url=url, timeout=120) as c:
                for _ in counter:
                    t = time.perf_counter()
                    r = c.post("/v1/recommend", content=body, headers={"content-type": "application/json"})
                    dt = time.perf_counter() - t
                    with lock:
                        latencies.append(dt)
                        errors += r.status_code != 200 or r.json()["status"] != "ok"

        threads = [threading.Thread(target=client) for _ in range(args.clients)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall_s = time.perf_counter() - t0
        with httpx.Client(base_url=url, timeout=10) as c:
            t = time.perf_counter()
            c.get("/health")
            health_ms = (time.perf_counter() - t) * 1000
    print(f"cotune serve load: {args.requests} requests, {args.clients} concurrent clients, loopback")
    print(f"  first request (fit + solve, cold cache): {cold_s * 1000:.0f} ms")
    print(f"  throughput: {len(latencies) / wall_s:.1f} requests/s over {wall_s:.1f} s")
    print(f"  latency p50 {_percentile(latencies, 0.5) * 1000:.0f} ms, p99 {_percentile(latencies, 0.99) * 1000:.0f} ms, "
          f"mean {statistics.fmean(latencies) * 1000:.0f} ms")
    print(f"  errors: {errors}; /health after the run: {health_ms:.1f} ms")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
