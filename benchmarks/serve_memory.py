"""Memory of ``cotune serve`` under concurrent near-limit solves.

Starts a real ``cotune serve`` on 127.0.0.1 and sends ``--clients`` concurrent requests
whose search space is just under the service's candidate limit (10⁶ by default), then
prints the server's resident memory before and its peak (``VmHWM``) after, with the
answers' status codes (200, or 503 + Retry-After when the service is at capacity).
Linux only (reads ``/proc``); loopback only.

    PYTHONPATH=. python benchmarks/serve_memory.py --clients 8
    PYTHONPATH=. python benchmarks/serve_memory.py --clients 8 --candidate-budget 8000000   # no budget, for comparison

``--junk ITEM`` sends, instead, bodies of just under 4 MiB (the default body limit) whose
profile records are ITEM repeated — ``'[]'`` (refused on its count of arrays before
parsing) or ``'"ab"'`` (parsed, then refused): what bodies that are never solved cost.

    PYTHONPATH=. python benchmarks/serve_memory.py --clients 32 --junk '"ab"'
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "scheduler"))  # the shared loopback-server helper

from sched_server import server_process  # noqa: E402

# 90,000 workers x 10 probed local batches = 900,000 candidates, under the 10⁶ limit.
NEAR_LIMIT = {"profile": "cifar10-resnet18", "target": 0.94, "deadline_s": 1800, "max_workers": 90_000, "prices": {"t4": 0.526}}


def _mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def main(argv: list[str] | None = None) -> int:
    import httpx

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=None, help="server --concurrency (default: CPU count)")
    ap.add_argument("--candidate-budget", type=int, default=None, help="server --candidate-budget (default: its --max-candidates)")
    ap.add_argument("--junk", default=None, metavar="ITEM", help="send ~4 MiB bodies of ITEM repeated as the records instead")
    args = ap.parse_args(argv)
    extra = ["--request-timeout", "10m"]
    if args.concurrency:
        extra += ["--concurrency", str(args.concurrency)]
    if args.candidate_budget:
        extra += ["--candidate-budget", str(args.candidate_budget)]
    body = json.dumps(NEAR_LIMIT).encode()
    if args.junk is not None:
        head, item = b'{"profile": {"records": [', args.junk.encode() + b","
        body = head + item * ((4 * 1024 * 1024 - 100 - len(head)) // len(item))
        body = body[:-1] + b"]}}"
    with server_process(*extra) as (url, proc):
        with httpx.Client(base_url=url, timeout=600) as c:  # warm the fitted-model cache with a small solve
            assert c.post("/v1/recommend", json=dict(NEAR_LIMIT, max_workers=16)).status_code == 200
        before = _mib(proc.pid, "VmRSS")

        def send(_: int) -> int:
            with httpx.Client(base_url=url, timeout=600) as c:
                return c.post("/v1/recommend", content=body, headers={"content-type": "application/json"}).status_code

        with ThreadPoolExecutor(max_workers=args.clients) as pool:
            codes = collections.Counter(pool.map(send, range(args.clients)))
        peak = _mib(proc.pid, "VmHWM")
    what = f"bodies of {args.junk}" if args.junk is not None else "near-limit solves"
    print(f"{args.clients} concurrent {what}: RSS before {before:.0f} MiB, peak {peak:.0f} MiB; answers {dict(codes)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
