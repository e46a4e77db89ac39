"""The HTTP service through FastAPI's TestClient: answers, precise 4xx, limits, OpenAPI."""

from __future__ import annotations

import copy
import json
import warnings

import pytest
from sched_helpers import BASE_REQUEST, without_timing

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from cotune.api import Limits, recommend_request
from cotune.serve import ServiceSettings, create_app


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(ServiceSettings(max_body_bytes=2_000_000, limits=Limits(max_candidates=200_000))))


def test_health(client):
    r = client.get("/health")
    assert r.status_code == 200 and r.json()["status"] == "ok"
    assert r.json()["schema_versions"] == {"request": 1, "response": 1, "error": 1}


def test_recommend_returns_the_api_document(client, response_validator):
    r = client.post("/v1/recommend", json=BASE_REQUEST)
    assert r.status_code == 200
    response_validator.validate(r.json())
    assert without_timing(r.json()) == without_timing(json.loads(json.dumps(recommend_request(copy.deepcopy(BASE_REQUEST)))))


def test_the_http_answer_names_the_next_measurement(client, response_validator):
    doc = client.post("/v1/recommend", json=BASE_REQUEST).json()
    response_validator.validate(doc)
    nm = doc["next_measurement"]
    assert nm is not None and nm["kind"] in ("step", "short_run") and nm["buy"] == (nm["expected_gain"] > nm["price"])


def test_infeasible_is_200_with_relax(client):
    r = client.post("/v1/recommend", json=dict(BASE_REQUEST, deadline_s=10))
    assert r.status_code == 200 and r.json()["status"] == "infeasible" and r.json()["relax"]


@pytest.mark.parametrize(
    ("body", "headers", "status", "code"),
    [
        (b"", {}, 400, "invalid_json"),
        (b"{bad", {}, 400, "invalid_json"),
        (b'{"profile": "cifar10-resnet18", "target": NaN}', {}, 400, "invalid_json"),
        (b"\xff\xfe\x00garbage", {}, 400, "invalid_json"),
        (b"[" * 50_000, {}, 400, "invalid_json"),
        (b'{"profile": "cifar10-resnet18", "target": 0.9, "target": 0.5}', {}, 400, "invalid_json"),
        (b"[]", {}, 422, "invalid_request"),
        (b'{"profile": "nope", "target": 1}', {}, 422, "unknown_profile"),
        (b'{"profile": {"path": "/etc/passwd"}, "target": 1}', {}, 403, "paths_disabled"),
        (json.dumps(BASE_REQUEST).encode(), {"content-type": "text/plain"}, 415, "unsupported_media_type"),
        # a body labelled compressed is not read as JSON (it was, when it happened to be plain)
        (json.dumps(BASE_REQUEST).encode(), {"content-encoding": "gzip"}, 415, "unsupported_media_type"),
        (json.dumps(dict(BASE_REQUEST, max_workers=100_000, hosts="any")).encode(), {}, 422, "search_space_too_large"),
        (json.dumps(dict(BASE_REQUEST, prices={"v100": 1.0})).encode(), {}, 422, "invalid_request"),
        (b" " * 2_000_001, {}, 413, "request_too_large"),
    ],
    ids=lambda v: v[:24].decode("latin-1") if isinstance(v, bytes) else None,
)
def test_bad_requests_get_precise_4xx(client, error_validator, body, headers, status, code):
    r = client.post("/v1/recommend", content=body, headers={"content-type": "application/json", **headers})
    assert r.status_code == status, r.text
    error_validator.validate(r.json())
    assert r.json()["error"]["code"] == code and r.json()["error"]["message"]


def test_error_points_at_the_field(client):
    r = client.post("/v1/recommend", json=dict(BASE_REQUEST, workers=[4, 0]))
    assert r.status_code == 422 and r.json()["error"]["path"] == "/workers/1"


def test_streamed_body_over_the_limit_is_refused(client):
    def chunks():
        for _ in range(40):
            yield b" " * 100_000

    r = client.post("/v1/recommend", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"


def test_wrong_method_and_route(client, error_validator):
    for r, status in ((client.get("/v1/recommend"), 405), (client.get("/v2/recommend"), 404), (client.get("/v1/schema/nope"), 404)):
        assert r.status_code == status
        error_validator.validate(r.json())


def test_a_wrong_method_names_the_allowed_one_and_a_wrong_route_the_routes(client):
    # "Method Not Allowed" without an Allow header (RFC 9110 requires one), "Not Found" alone.
    r = client.get("/v1/recommend")
    assert r.headers["allow"] == "POST"
    assert r.json()["error"]["message"] == "method 'GET' is not allowed on '/v1/recommend': use POST"
    r = client.post("/v2/recommend", json={})
    assert r.json()["error"]["message"].startswith("no route '/v2/recommend': the service answers POST /v1/recommend, "
                                                   "POST /v1/replan, GET /health")


def test_schemas_are_served(client):
    assert client.get("/v1/schema/recommend-request.v1").json()["title"].startswith("cotune recommend request")
    # as the schema's own $id names it
    assert client.get("/v1/schema/recommend-request.v1.json").json()["$id"].endswith("/recommend-request.v1.json")


def test_a_trailing_slash_is_an_error_document_not_a_bodiless_redirect(client, error_validator):
    for r in (client.post("/v1/recommend/", json=BASE_REQUEST, follow_redirects=False),
              client.get("/health/", follow_redirects=False)):
        assert r.status_code == 404
        error_validator.validate(r.json())


def test_health_answers_head(client):
    r = client.head("/health")
    assert r.status_code == 200 and r.content == b""


def test_openapi_operation_ids_are_unique(client):
    # a GET-and-HEAD route gave both methods one operation id (FastAPI warned; OpenAPI requires them unique)
    ids = [op["operationId"] for path in client.get("/openapi.json").json()["paths"].values() for op in path.values()]
    assert len(ids) == len(set(ids))


def test_openapi_uses_the_published_schemas(client):
    spec = client.get("/openapi.json").json()
    op = spec["paths"]["/v1/recommend"]["post"]
    assert op["requestBody"]["content"]["application/json"]["schema"]["$ref"] == "#/components/schemas/RecommendRequestV1"
    assert op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"] == "#/components/schemas/RecommendResponseV1"
    names = set(spec["components"]["schemas"])
    refs = []

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "$ref":
                    refs.append(v)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(spec)
    assert refs and all(r.startswith("#/components/schemas/") and r.rsplit("/", 1)[1] in names for r in refs)
    assert "$defs" not in json.dumps(spec)


def test_profile_dir_opt_in(tmp_path):
    from sched_helpers import example_records

    (tmp_path / "job.jsonl").write_text("".join(json.dumps(r) + "\n" for r in example_records()))
    c = TestClient(create_app(ServiceSettings(profile_dir=str(tmp_path))))
    ok = c.post("/v1/recommend", json=dict(BASE_REQUEST, profile={"path": "job.jsonl"}))
    assert ok.status_code == 200 and ok.json()["status"] == "ok"
    out = c.post("/v1/recommend", json=dict(BASE_REQUEST, profile={"path": "../job.jsonl"}))
    assert out.status_code == 422 and out.json()["error"]["path"] == "/profile/path"


@pytest.mark.parametrize("route", ["/v1/recommend", "/v1/replan"])
def test_a_field_sent_as_a_query_parameter_is_refused_not_dropped(client, error_validator, route):
    # POST /v1/recommend?confidence=0.99 used to answer 200 at the default confidence.
    r = client.post(f"{route}?confidence=0.99", json=BASE_REQUEST)
    assert r.status_code == 400, r.text
    error_validator.validate(r.json())
    assert r.json()["error"]["code"] == "invalid_request" and "'confidence'" in r.json()["error"]["message"]


@pytest.mark.parametrize("route, schema", [("/v1/recommend", "recommend-request.v1"), ("/v1/replan", "replan-request.v1")])
def test_an_empty_body_names_the_schema_of_its_own_route(client, route, schema):
    r = client.post(route, content=b"  ", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["message"] == f"empty body: send a JSON object (docs/schema/{schema}.json)"


@pytest.mark.parametrize("prices, path", [({"v100": 1.0}, "/prices"), ({"t4": 1.0, "t4:spot": 0.1}, "/prices/t4:spot"),
                                          ({"t4": 1.0, "t4:bogus": 0.1}, "/prices/t4:bogus")])
def test_a_price_error_points_at_the_price(client, prices, path):
    # "path": null — every other field's error points at its value.
    r = client.post("/v1/recommend", json={"profile": "cifar10-resnet18", "target": 0.94, "prices": prices})
    assert r.status_code == 422 and r.json()["error"]["path"] == path, r.json()


@pytest.mark.parametrize("body, status", [
    ('{"profile": "cifar10-resnet18", "target": 0.94, "max_workers": {"\\ud800": 1}}', 422),
    ('{"profile": "cifar10-resnet18", "target": 0.94, "\\ud800": 1}', 422),
    ('{"profile": "cifar10-resnet18", "target": 0.94, "prices": {"t4:\\ud800": 1}}', 422),
])
def test_a_lone_surrogate_in_a_request_is_a_4xx_not_a_500(client, body, status):
    # "\ud800" is valid JSON with no UTF-8 bytes: rendering the error's path with it was a 500
    r = client.post("/v1/recommend", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    assert json.loads(r.content)["error"]["code"] == "invalid_request"


def test_a_lone_surrogate_in_a_profile_is_answered_escaped(client):
    from cotune.examples import example_path

    records = [json.loads(line) for line in open(example_path("yolov3-voc"))]
    records[0]["name"] = "\udfff"
    body = json.dumps({"profile": {"records": records}, "target": 13.0, "deadline_s": 7200})
    r = client.post("/v1/recommend", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text[:300]
    assert json.loads(r.content)["workload"] == "\udfff"


def test_an_unterminated_string_is_named_without_a_doubled_at(client):
    r = client.post("/v1/recommend", content=b'{"target": "abc', headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json()["error"]["message"] == ("not valid JSON: Unterminated string starting at line 1 column 12: "
                                            "send one JSON object (docs/schema/recommend-request.v1.json)")


def test_a_body_that_is_not_utf8_is_told_to_be_sent_as_utf8(client):
    r = client.post("/v1/recommend", content='{"profile": "caf\u00e9"}'.encode("latin-1"),
                    headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
    assert r.json()["error"]["message"] == ("the body is not UTF-8 text (byte 0xe9 at position 16): "
                                            "send the body as UTF-8")


def test_a_reversed_global_batch_range_is_named_as_the_json_value_sent(client):
    r = client.post("/v1/recommend", json=dict(BASE_REQUEST, global_batch_range=[10, 5]))
    assert r.status_code == 422 and r.json()["error"]["path"] == "/global_batch_range"
    assert r.json()["error"]["message"].endswith("got [10, 5]")


def test_a_wrong_method_on_health_names_get_and_head(client):
    r = client.post("/health")
    assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"
    assert r.json()["error"]["message"] == "method 'POST' is not allowed on '/health': use GET, HEAD"


def test_text_that_is_not_json_is_told_what_to_send(client):
    # The json module's own words ("Extra data at line 1 column 9") named no fix.
    r = client.post("/v1/replan", content=b'{"a": 1} {"b": 2}', headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["message"] == (
        "not valid JSON: Extra data at line 1 column 10: send one JSON object (docs/schema/replan-request.v1.json)")


def test_only_a_utf8_body_is_read(client):
    # Read as UTF-16/32 by json's byte sniffing, these were answered (or refused with
    # "Expecting value"), though the docs say a body that is not UTF-8 is a 400.
    for body in (b"\xff\xfe{}", "{}".encode("utf-16-le"), b"\xff\xfe" + "{}".encode("utf-16-le"), "{}".encode("utf-32")):
        r = client.post("/v1/recommend", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json", body
        message = r.json()["error"]["message"]
        assert message.startswith("the body is not UTF-8 text") and message.endswith("send the body as UTF-8"), message
    # UTF-8 with a byte order mark is UTF-8.
    r = client.post("/v1/recommend", content=b"\xef\xbb\xbf" + json.dumps(BASE_REQUEST).encode(),
                    headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("streamed", [False, True], ids=["content-length", "streamed"])
def test_a_body_over_the_limit_is_told_to_shrink_or_raise_the_limit(client, streamed):
    def chunks():
        for _ in range(40):
            yield b" " * 100_000

    r = client.post("/v1/recommend", content=chunks() if streamed else b" " * 2_000_001,
                    headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert "send a smaller body" in r.json()["error"]["message"] and "--max-body-bytes" in r.json()["error"]["message"]
