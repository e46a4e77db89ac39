"""A real uvicorn process on 127.0.0.1 keeps answering correctly while flooded with
malformed requests (bounded: a few hundred requests, loopback only)."""

from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor

import pytest
from sched_helpers import BASE_REQUEST

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
from sched_server import running_server  # noqa: E402

pytestmark = pytest.mark.slow  # starts a real uvicorn server

_GOOD = json.dumps(BASE_REQUEST).encode()


def _malformed(rng: random.Random) -> bytes:
    kind = rng.randrange(8)
    if kind == 0:
        return _GOOD[: rng.randrange(1, len(_GOOD))]  # truncated JSON
    if kind == 1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))  # random bytes
    if kind == 2:
        return b"[" * rng.randrange(100, 20_000)  # deep nesting
    if kind == 3:
        return json.dumps(dict(BASE_REQUEST, target=rng.choice(["x", None, [], {}]))).encode()
    if kind == 4:
        return json.dumps(dict(BASE_REQUEST, profile={"records": [{"record": "step", "gpu": 1}]})).encode()
    if kind == 5:
        return json.dumps(dict(BASE_REQUEST, max_workers=10**9, hosts="any")).encode()
    if kind == 6:
        return b" " * 300_000  # over the 256 kB limit below
    return json.dumps(dict(BASE_REQUEST, profile={"path": "../../etc/passwd"})).encode()


def test_service_survives_a_flood_of_malformed_requests():
    rng = random.Random(7)
    bodies = [_malformed(rng) for _ in range(240)]
    with running_server("--max-body-bytes", "262144", "--concurrency", "2") as url:
        with httpx.Client(base_url=url, timeout=60.0) as first:
            expected = first.post("/v1/recommend", content=_GOOD, headers={"content-type": "application/json"}).json()

        def send(i: int) -> tuple[int, int, dict]:
            body = _GOOD if i % 20 == 0 else bodies[i]
            with httpx.Client(base_url=url, timeout=60.0) as c:
                r = c.post("/v1/recommend", content=body, headers={"content-type": "application/json"})
                return i, r.status_code, r.json()

        with ThreadPoolExecutor(max_workers=16) as pool:
            results = list(pool.map(send, range(len(bodies))))
        with httpx.Client(base_url=url, timeout=10.0) as c:
            assert c.get("/health").json()["status"] == "ok"

    good = [(s, d) for i, s, d in results if i % 20 == 0]
    bad = [(s, d) for i, s, d in results if i % 20 != 0]
    assert len(good) == 12 and all(s == 200 and d["plan"] == expected["plan"] for s, d in good)
    assert all(400 <= s < 500 and d["status"] == "error" and d["error"]["message"] for s, d in bad), [
        (s, d) for s, d in bad if not 400 <= s < 500
    ][:3]
    assert {s for s, _ in bad} >= {400, 403, 413, 422}
