"""X-Request-ID: every answer carries one (the caller's plain id, else a fresh one), a bug's 500 too."""

from __future__ import annotations

import logging
import re

import pytest
from sched_helpers import BASE_REQUEST

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from cotune.serve import ServiceSettings, create_app  # noqa: E402

TOKEN = "request-id-token"


def test_a_plain_id_from_the_caller_is_echoed_on_answers_and_refusals():
    client = TestClient(create_app(ServiceSettings(token=TOKEN)))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    ok = client.post("/v1/recommend", json=BASE_REQUEST, headers={**auth, "X-Request-ID": "sched-42/job-7"})
    assert ok.status_code == 200 and ok.headers.get_list("x-request-id") == ["sched-42/job-7"]
    refused = client.post("/v1/recommend", json=BASE_REQUEST, headers={"X-Request-ID": "sched-43"})  # no token
    assert refused.status_code == 401 and refused.headers["x-request-id"] == "sched-43"
    assert client.get("/health", headers={"X-Request-ID": "probe"}).headers["x-request-id"] == "probe"


@pytest.mark.parametrize("given", [None, "", "two words", "x" * 129, "line\tbreak", "naïve"])
def test_a_missing_or_unsafe_id_is_replaced_by_a_fresh_one(given):
    client = TestClient(create_app())
    headers = {} if given is None else {"X-Request-ID": given.encode("utf-8")}  # bytes: any octets on the wire
    ids = {client.get("/health", headers=headers).headers["x-request-id"] for _ in range(3)}
    assert len(ids) == 3 and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)


def test_a_bug_is_a_clean_500_with_the_id_in_the_header_and_the_log(monkeypatch, caplog):
    import cotune.serve._app as app_module

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug in the solver")

    monkeypatch.setattr(app_module, "recommend_request", broken)
    client = TestClient(create_app(), raise_server_exceptions=False)
    with caplog.at_level(logging.ERROR, logger="cotune.serve"):
        r = client.post("/v1/recommend", json=BASE_REQUEST, headers={"X-Request-ID": "trace-500"})
    assert r.status_code == 500 and r.headers["x-request-id"] == "trace-500"
    body = r.json()
    assert body["status"] == "error" and body["error"]["code"] == "internal_error"
    assert any("(request trace-500)" in rec.getMessage() for rec in caplog.records)


@pytest.mark.slow  # starts a real server
def test_the_http_example_plans_through_a_real_server_and_reads_its_request_id():
    import subprocess
    import sys

    from sched_server import REPO, running_server

    with running_server() as url:
        done = subprocess.run([sys.executable, str(REPO / "examples" / "scheduler_http.py"), url],
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("ok ") and "x t4, local batch" in done.stdout
    assert done.stdout.rstrip().endswith("(request example-job-1)"), done.stdout
