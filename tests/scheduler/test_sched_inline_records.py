"""Inline profile records hold what a profile file may: an eval metric that overflowed to
infinity (``1e400``) or a diverged run sent as ``"metric": null`` (JSON has no NaN). Any other
non-finite number is the profile's own one-line 422 at its record, never a 500."""

from __future__ import annotations

import json
import math
import re
import warnings

import pytest
from sched_helpers import BASE_REQUEST, example_records

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from cotune import ProfileRef
from cotune.api import RequestError, recommend_request
from cotune.serve import create_app

REPLAN = {**BASE_REQUEST, "progress": {"epochs_done": 1, "elapsed_s": 300, "gpu": "t4", "market": "on_demand",
                                       "workers": 4, "local_batch": 129}}


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def _records_text(question: dict, *, field: str, literal: str) -> bytes:
    """The question with the example's records inline, the first ``field`` replaced by ``literal``
    as written (``1e400`` does not survive json.dumps: it parses to inf, written as Infinity)."""
    text = json.dumps(dict(question, profile={"records": example_records()}))
    text, n = re.subn(rf'"{field}": [0-9.eE+-]+', f'"{field}": {literal}', text, count=1)
    assert n == 1
    return text.encode()


def _index_of_first(kind: str) -> int:
    return next(i for i, r in enumerate(example_records()) if r["record"] == kind)


def _diverged_eval() -> dict:
    return dict(next(r for r in example_records() if r["record"] == "eval"))


@pytest.mark.parametrize("route, question", [("/v1/recommend", BASE_REQUEST), ("/v1/replan", REPLAN)])
def test_an_overflowing_number_in_an_inline_record_is_a_422_at_the_record(client, error_validator, route, question):
    r = client.post(route, content=_records_text(question, field="step_time_s", literal="1e400"),
                    headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    error_validator.validate(r.json())
    err = r.json()["error"]
    assert err["code"] == "invalid_profile" and err["path"] == f"/profile/records/{_index_of_first('step')}"
    assert "step_time_s" in err["message"] and "\n" not in err["message"]


def test_an_eval_metric_that_overflows_to_infinity_is_a_diverged_run_over_http(client):
    r = client.post("/v1/recommend", content=_records_text(BASE_REQUEST, field="metric", literal="1e400"),
                    headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text


def test_an_overflowing_number_in_an_inline_record_is_a_request_error_in_python():
    records = example_records()
    records[_index_of_first("step")]["step_time_s"] = math.inf
    with pytest.raises(RequestError) as info:
        recommend_request(dict(BASE_REQUEST, profile={"records": records}))
    assert info.value.code == "invalid_profile" and info.value.path == f"/profile/records/{_index_of_first('step')}"


def test_an_eval_metric_of_null_is_a_diverged_run_over_http(client):
    records = example_records() + [{**_diverged_eval(), "metric": None, "seed": 7}]
    r = client.post("/v1/recommend", json=dict(BASE_REQUEST, profile={"records": records}))
    assert r.status_code == 200, r.text


def test_an_eval_metric_of_null_is_read_as_nan():
    records = example_records() + [{**_diverged_eval(), "metric": None, "seed": 7}]
    profile = ProfileRef(records=tuple(records)).load()
    assert sum(math.isnan(e.metric) for e in profile.evals) == 1


def test_a_record_json_cannot_hold_is_a_request_error_at_the_record():
    records = example_records()
    records[2] = {**records[2], "note": object()}
    with pytest.raises(RequestError) as info:
        recommend_request(dict(BASE_REQUEST, profile={"records": records}))
    assert info.value.path == "/profile/records/2" and "\n" not in str(info.value)
