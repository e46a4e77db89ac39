"""Fuzz POST /v1/replan: a running job's question, its progress and an inline cluster,
with one or two hostile values, get 2xx or 4xx, never 5xx; bounded time and memory."""

from __future__ import annotations

import json
import warnings

import pytest
from fuzz_helpers import FAST, HEAVY, JSON_VALUES, memory_bound, one_line, synthetic_records, time_bound
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from cotune.api import Limits, schema
from cotune.serve import ServiceSettings, create_app

_RECORDS = synthetic_records(seed=12, workers=(1, 2, 4), batches=(16, 32, 64))


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(ServiceSettings(limits=Limits(max_records=5000, max_candidates=200_000))))


@pytest.fixture(scope="module")
def error_schema():
    import jsonschema

    return jsonschema.Draft202012Validator(schema("error.v1"))


_CLUSTER = {
    "version": 1,
    "gpus_per_host": 1,
    "checkpoint": {"write_s": 30, "restart_s": 30},
    "gpu": {"t4": {"on_demand": 8, "spot": 8, "on_demand_price_per_hour": 0.5, "spot_price_per_hour": 0.15,
                   "revocation_rate_per_hour": 0.1, "replacement_delay_s": "3m"}},
}
_PROGRESS = {"epochs_done": 5, "elapsed_s": 300, "gpu": "t4", "market": "spot", "workers": 2, "local_batch": 32}


@st.composite
def replan_requests(draw) -> bytes:
    doc = json.loads(json.dumps({"profile": {"records": _RECORDS}, "target": 0.9, "deadline_s": 3600, "cluster": _CLUSTER,
                                 "progress": _PROGRESS}))
    for _ in range(draw(st.integers(1, 2))):
        table = doc
        for key in draw(st.sampled_from([(), ("progress",), ("cluster",), ("cluster", "checkpoint"), ("cluster", "gpu", "t4")])):
            table = table.get(key) if isinstance(table, dict) else None
        if isinstance(table, dict) and table:  # an earlier change may have replaced it
            table[draw(st.sampled_from(sorted(table)))] = draw(JSON_VALUES)
    return json.dumps(doc, allow_nan=True).encode()


def _check(client, error_schema, body: bytes) -> None:
    with time_bound(body[:300]), memory_bound():
        r = client.post("/v1/replan", content=body, headers={"content-type": "application/json"})
    assert r.status_code < 500, f"{r.status_code} for {body[:300]!r}: {r.text[:500]}"
    if r.status_code >= 400:
        error_schema.validate(r.json())
        assert one_line(r.json()["error"]["message"]), r.json()


@FAST
@given(body=replan_requests())
def test_generated_replan_requests_never_get_a_5xx(client, error_schema, body):
    _check(client, error_schema, body)


@pytest.mark.slow
@HEAVY
@given(body=replan_requests())
def test_many_generated_replan_requests_never_get_a_5xx(client, error_schema, body):
    _check(client, error_schema, body)


def test_a_null_progress_field_is_a_4xx(client, error_schema):
    body = {"profile": {"records": _RECORDS}, "target": 0.9, "deadline_s": 3600, "cluster": _CLUSTER,
            "progress": dict(_PROGRESS, elapsed_s=None)}
    _check(client, error_schema, json.dumps(body).encode())
