"""/health latency of ``cotune serve`` under a flood of malformed and slow requests.

Starts a real ``cotune serve`` on 127.0.0.1, opens ``--slow`` connections that send
half a request head and then nothing (slowloris), floods it with ``--malformed``
malformed recommend requests from ``--clients`` threads, and meanwhile times
``GET /health`` every 50 ms. Prints the /health latency (p50, p99, max) under that load
and the answers the flood got. Loopback only; every loop is bounded.

    PYTHONPATH=. python benchmarks/serve_flood.py --slow 200 --malformed 2000 --clients 16
"""

from __future__ import annotations

import argparse
import collections
import socket
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "scheduler"))  # the shared loopback-server helper

from sched_server import running_server  # noqa: E402

_BODIES = [b"{", b"[" * 20_000, b"\xff\xfe", b'{"target": NaN}', b"{}", b'{"profile": "cifar10-resnet18", "target": "x"}',
           b'{"profile": {"path": "../../etc/passwd"}, "target": 1}', b" " * 300_000]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    import httpx

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--slow", type=int, default=200, help="half-sent connections held open")
    ap.add_argument("--malformed", type=int, default=2000, help="malformed requests sent")
    ap.add_argument("--clients", type=int, default=16, help="threads sending them")
    args = ap.parse_args(argv)
    with running_server("--max-body-bytes", "262144", "--request-timeout", "30s") as url:
        port = int(url.rsplit(":", 1)[1])
        slow = []
        for _ in range(args.slow):
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(b"POST /v1/recommend HTTP/1.1\r\nHost: x\r\nContent-")
            slow.append(s)
        done = threading.Event()
        latencies: list[float] = []

        def probe() -> None:
            with httpx.Client(base_url=url, timeout=30) as c:
                while not done.is_set():
                    t = time.perf_counter()
                    assert c.get("/health").status_code == 200
                    latencies.append(time.perf_counter() - t)
                    done.wait(0.05)

        def send(i: int) -> int:
            with httpx.Client(base_url=url, timeout=60) as c:
                body = _BODIES[i % len(_BODIES)]
                return c.post("/v1/recommend", content=body, headers={"content-type": "application/json"}).status_code

        prober = threading.Thread(target=probe)
        prober.start()
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.clients) as pool:
            codes = collections.Counter(pool.map(send, range(args.malformed)))
        flood_s = time.perf_counter() - t0
        done.set()
        prober.join()
        for s in slow:
            s.close()
    ms = [x * 1000 for x in latencies]
    print(f"{args.slow} slow connections + {args.malformed} malformed requests from {args.clients} threads in {flood_s:.1f} s: "
          f"/health p50 {statistics.median(ms):.1f} ms, p99 {_percentile(ms, 0.99):.1f} ms, max {max(ms):.1f} ms "
          f"({len(ms)} probes); flood answers {dict(sorted(codes.items()))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
