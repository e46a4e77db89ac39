"""Absurd numbers over HTTP are a 4xx naming the field, never a 500 (issue 11 item 3)."""

from __future__ import annotations

import warnings

import pytest
from sched_helpers import BASE_REQUEST

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from cotune.serve import create_app

HUGE = "1" + "0" * 400  # 10**400, written as a JSON integer literal


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


@pytest.mark.parametrize(
    ("field", "literal", "path"),
    [
        ("target", HUGE, "/target"),
        ("target", "1e400", "/target"),
        ("deadline_s", HUGE, "/deadline_s"),
        ("deadline_s", "1e30", "/deadline_s"),
        ("gpus_per_host", "1" + "0" * 30, "/gpus_per_host"),
        ("max_workers", HUGE, "/max_workers"),
        ("prices", '{"t4": ' + HUGE + "}", "/prices/t4"),
        ("workers", "[1, " + HUGE + "]", "/workers/1"),
        ("top", "-1", "/top"),
        ("interval", "1.5", "/interval"),
        ("max_workers", "true", "/max_workers"),
        ("deadline_s", '"30m"', "/deadline_s"),
    ],
)
def test_absurd_numbers_are_422_at_their_pointer(client, field, literal, path):
    body = {k: v for k, v in BASE_REQUEST.items() if k != field}
    import json

    text = json.dumps(body)[:-1] + f', "{field}": {literal}}}'
    r = client.post("/v1/recommend", content=text.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["path"] == path and len(err["message"]) < 300 and "\n" not in err["message"]


def test_a_huge_number_in_an_inline_record_is_a_4xx(client):
    from sched_helpers import example_records

    records = example_records()
    text = __import__("json").dumps(dict(BASE_REQUEST, profile={"records": records}))
    text, n = __import__("re").subn(r'"step_time_s": [0-9.eE+-]+', '"step_time_s": ' + HUGE, text, count=1)
    assert n == 1
    r = client.post("/v1/recommend", content=text.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["path"].startswith("/profile/records/") and "step_time_s" in r.json()["error"]["message"]
