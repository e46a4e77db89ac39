"""What a request body may cost in memory: a body of absurdly many arrays and objects is refused
on its bytes, before parsing, and a refused request's parsed tree is freed at once (by
reference counting), not left for the garbage collector. Measurements: benchmarks/serve_memory.py."""

from __future__ import annotations

import gc
import json
import warnings

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from cotune.api import Limits
from cotune.serve import ServiceSettings, create_app
from cotune.serve import _app as app_module

N_STRINGS = 54_321  # a list length nothing else in the process has


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(ServiceSettings(limits=Limits(max_records=10))))


def test_a_body_of_more_arrays_than_the_record_limit_allows_is_refused_before_parsing(client, error_validator, monkeypatch):
    def parsed(*args, **kwargs):
        raise AssertionError("the body was parsed")

    monkeypatch.setattr(app_module, "load_json", parsed)
    body = b'{"profile": {"records": [' + b",".join([b"[]"] * 20_000) + b"]}}"
    r = client.post("/v1/recommend", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    error_validator.validate(r.json())
    assert r.json()["error"]["code"] == "limit_exceeded" and "20,003 JSON arrays and objects" in r.json()["error"]["message"]


def test_a_refused_request_frees_its_parsed_body_without_the_garbage_collector(client):
    # A question missing its target, with a long list in its profile: refused after parsing.
    body = json.dumps({"profile": {"records": [f"s{i}" for i in range(N_STRINGS)]}}).encode()
    gc.collect()
    gc.disable()  # only reference counting frees memory now, as between the collector's runs
    try:
        r = client.post("/v1/recommend", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 422, r.text
        kept = [o for o in gc.get_objects() if type(o) is list and len(o) == N_STRINGS]
    finally:
        gc.enable()
    assert kept == []
