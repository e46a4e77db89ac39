"""Fuzz the HTTP door: generated requests (mostly valid, one or two hostile fields; raw
bodies; hostile inline records) get 2xx or 4xx, never 5xx, and every error is an
error.v1 document with a one-line message; bounded time and memory."""

from __future__ import annotations

import json
import warnings

import pytest
from fuzz_helpers import DEEP, FAST, HEAVY, JSON_VALUES, SANE_QUESTION, SCALARS, memory_bound, one_line, synthetic_records, time_bound
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
_SANE = {**SANE_QUESTION, "interval": 0.9, "schema_version": 1}


@pytest.fixture(scope="module")
def client():
    settings = ServiceSettings(limits=Limits(max_records=5000, max_candidates=200_000), max_body_bytes=1_000_000)
    return TestClient(create_app(settings))


@pytest.fixture(scope="module")
def error_schema():
    import jsonschema

    return jsonschema.Draft202012Validator(schema("error.v1"))


def _hostile_records(draw) -> list:
    records = [dict(r) for r in _RECORDS]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(records) - 1))
        # An earlier draw may have made record i a plain value or an empty object: a field of
        # a record object is changed only where there is one.
        if draw(st.booleans()) and isinstance(records[i], dict) and records[i]:
            records[i] = dict(records[i], **{draw(st.sampled_from(sorted(records[i]))): draw(JSON_VALUES)})
        else:
            records[i] = draw(JSON_VALUES)
    return records


@st.composite
def requests(draw) -> bytes:
    kind = draw(st.integers(0, 9))
    if kind == 0:  # raw bytes
        return draw(st.one_of(st.binary(max_size=200), st.sampled_from([b"", b"{", b"[" * 5000, b"\xff\xfe", b"nul\x00l",
                                                                        b'{"target": NaN}', b'{"target": 1e999}'])))
    if kind == 1:  # any JSON value
        return json.dumps(draw(st.one_of(JSON_VALUES, DEEP)), allow_nan=True).encode()
    profile: object = draw(st.sampled_from(["cifar10-resnet18", "inline", "inline", "inline"]))
    if profile == "inline":
        profile = {"records": _RECORDS if kind > 3 else _hostile_records(draw)}
    elif kind == 2:
        profile = draw(st.one_of(JSON_VALUES, st.sampled_from([{"path": "../../etc/passwd"}, {"example": "\x1b[2J"}, {"records": []}])))
    fields = draw(st.lists(st.sampled_from(sorted(_SANE)), max_size=8, unique=True))
    doc: dict = {"profile": profile, **{f: _SANE[f] for f in fields}}
    doc.setdefault("target", _SANE["target"])
    if kind >= 3:
        for f in draw(st.lists(st.sampled_from(sorted(_SANE) + ["deadline", "\x1b"]), min_size=1, max_size=2, unique=True)):
            doc[f] = draw(st.one_of(SCALARS, JSON_VALUES))
    return json.dumps(doc, allow_nan=True).encode()


def _check(client, error_schema, body: bytes) -> None:
    with time_bound(body[:300]), memory_bound():
        r = client.post("/v1/recommend", content=body, headers={"content-type": "application/json"})
    assert r.status_code < 500, f"{r.status_code} for {body[:300]!r}: {r.text[:500]}"
    doc = r.json()
    if r.status_code >= 400:
        error_schema.validate(doc)
        assert one_line(doc["error"]["message"]) and len(doc["error"]["message"]) < 2000, doc
    else:
        assert doc["status"] in ("ok", "infeasible")


@FAST
@given(body=requests())
def test_generated_requests_never_get_a_5xx(client, error_schema, body):
    _check(client, error_schema, body)


@pytest.mark.slow
@HEAVY
@given(body=requests())
def test_many_generated_requests_never_get_a_5xx(client, error_schema, body):
    _check(client, error_schema, body)


@pytest.mark.parametrize(
    "change",
    [
        {"target": 10**400}, {"target": 10**30}, {"deadline_s": 10**400}, {"prices": {"t4": 10**30}}, {"gpus_per_host": 10**30},
        {"max_workers": 10**9, "hosts": "any"}, {"max_workers": True}, {"workers": [0]}, {"top": -1}, {"workers": [16.7]},
        {"deadline_s": "30m"}, {"prices": [1, 2]}, {"interval": 1.5}, {"profile": {"records": [{"record": "workload", "name": "w",
                                                                                              "dataset_size": 10**400}]}},
    ],
    ids=lambda change: json.dumps(change)[:40],
)
def test_the_issue_campaign_requests_are_4xx(client, error_schema, change):
    _check(client, error_schema, json.dumps({"profile": {"records": _RECORDS}, "target": 0.9, **change}).encode())


def test_health_still_answers_after_the_fuzzing(client):
    assert client.get("/health").json()["status"] == "ok"
