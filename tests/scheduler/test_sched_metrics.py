"""GET /metrics: the service's Prometheus series, read back with prometheus-client's own parser."""

from __future__ import annotations

import sys
import uuid

import pytest
from sched_helpers import BASE_REQUEST

pytest.importorskip("fastapi")
pytest.importorskip("prometheus_client")
from fastapi.testclient import TestClient  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from cotune import __version__  # noqa: E402
from cotune.serve import ServiceSettings, create_app  # noqa: E402

TOKEN = "s3cret-metrics-token"


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of an exposition, keyed by (name, labels)."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def count(text: str, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples(text).items() if n == name and want <= ls)


def test_answers_are_counted_by_route_status_error_code_and_outcome(response_validator):
    client = TestClient(create_app())
    assert client.post("/v1/recommend", json=BASE_REQUEST).json()["status"] == "ok"
    assert client.post("/v1/recommend", json=dict(BASE_REQUEST, target=0.999)).json()["status"] == "infeasible"
    assert client.post("/v1/recommend", json=dict(BASE_REQUEST, deadline=1800)).status_code == 422
    assert client.post("/v1/recommend", content=b"{", headers={"content-type": "application/json"}).status_code == 400
    assert client.get("/health").status_code == 200
    page = client.get("/metrics")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
    text = page.text
    assert count(text, "cotune_requests_total", route="/v1/recommend", status="200", code="") == 2
    assert count(text, "cotune_requests_total", route="/v1/recommend", status="422", code="invalid_request") == 1
    assert count(text, "cotune_requests_total", route="/v1/recommend", status="400", code="invalid_json") == 1
    assert count(text, "cotune_requests_total", route="/health", method="GET", status="200") == 1
    assert count(text, "cotune_answers_total", route="/v1/recommend", outcome="ok") == 1
    assert count(text, "cotune_answers_total", route="/v1/recommend", outcome="infeasible") == 1
    assert count(text, "cotune_request_duration_seconds_count", route="/v1/recommend") == 4
    assert count(text, "cotune_requests_pending") == 0
    assert count(text, "cotune_build_info", version=__version__) == 1


def test_a_replan_is_counted_by_its_decision():
    from test_sched_replan import REPLAN_REQUEST

    client = TestClient(create_app())
    decision = client.post("/v1/replan", json=REPLAN_REQUEST).json()["decision"]
    assert count(client.get("/metrics").text, "cotune_answers_total", route="/v1/replan", outcome=decision) == 1


def test_unknown_paths_add_one_series_not_one_per_path():
    # Labelled by the raw path, a scan of random URLs would grow the series (and memory) without bound.
    client = TestClient(create_app())
    for _ in range(50):
        assert client.get(f"/{uuid.uuid4().hex}").status_code == 404
    assert client.get("/v1/schema/nope").status_code == 404  # a route template, whatever the name
    text = client.get("/metrics").text
    assert count(text, "cotune_requests_total", route="other", status="404", code="not_found") == 50
    assert count(text, "cotune_requests_total", route="/v1/schema/{name}", status="404") == 1
    routes = {dict(ls)["route"] for (n, ls) in samples(text) if n == "cotune_requests_total"}
    assert routes == {"other", "/v1/schema/{name}"}


def test_made_up_methods_add_one_series_not_one_per_method():
    client = TestClient(create_app())
    for i in range(20):
        assert client.request(f"X{uuid.uuid4().hex[:8].upper()}", "/health").status_code == 405
    methods = {dict(ls)["method"] for (n, ls) in samples(client.get("/metrics").text) if n == "cotune_requests_total"}
    assert methods == {"other"}


def test_metrics_need_the_token_and_the_refusals_are_counted():
    client = TestClient(create_app(ServiceSettings(token=TOKEN)))
    assert client.get("/metrics").status_code == 401
    assert client.post("/v1/recommend", json=BASE_REQUEST).status_code == 401
    page = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert page.status_code == 200
    assert count(page.text, "cotune_requests_total", route="/v1/recommend", status="401", code="unauthorized") == 1
    assert count(page.text, "cotune_requests_total", route="/metrics", status="401") == 1


def test_a_scraper_that_asks_for_openmetrics_gets_it():
    client = TestClient(create_app())
    page = client.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert page.headers["content-type"].startswith("application/openmetrics-text")
    assert page.text.rstrip().endswith("# EOF")


def test_two_apps_in_one_process_count_apart():
    first, second = TestClient(create_app()), TestClient(create_app())
    first.get("/health")
    first.get("/health")
    second.get("/health")
    assert count(first.get("/metrics").text, "cotune_requests_total", route="/health") == 2
    assert count(second.get("/metrics").text, "cotune_requests_total", route="/health") == 1


def test_without_prometheus_client_the_service_answers_and_metrics_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cotune.serve._metrics", None)  # as if prometheus-client were not installed
    client = TestClient(create_app())
    assert client.post("/v1/recommend", json=BASE_REQUEST).json()["status"] == "ok"
    page = client.get("/metrics")
    assert page.status_code == 501
    assert page.json()["error"]["code"] == "not_implemented" and "pip install 'cotune[serve]'" in page.json()["error"]["message"]


@pytest.mark.slow  # starts a real server
def test_a_real_server_on_loopback_serves_its_metrics():
    import httpx
    from sched_server import running_server

    with running_server() as url:
        assert httpx.post(f"{url}/v1/recommend", json=BASE_REQUEST, timeout=120).status_code == 200
        page = httpx.get(f"{url}/metrics", timeout=60)
    assert page.status_code == 200
    assert count(page.text, "cotune_requests_total", route="/v1/recommend", status="200") == 1
    assert count(page.text, "cotune_answers_total", route="/v1/recommend", outcome="ok") == 1
