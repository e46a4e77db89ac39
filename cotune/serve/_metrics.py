"""What the service did, for Prometheus: ``GET /metrics`` (prometheus-client, the ``serve`` extra).

A scheduler calls cotune for every job; whoever runs it needs the rates, the latencies, the
refusals and the answers without reading logs. The series, each with a bounded label set
(routes are the app's route templates, unknown paths count as ``other``; error codes are
``error.v1``'s):

- ``cotune_requests_total{route, method, status, code}`` — every HTTP answer (``code`` is
  the error document's code, empty on success), 401s and 404s included;
- ``cotune_request_duration_seconds{route}`` — time to the answer's first byte, a histogram
  with buckets from 5 ms (``/health``) to 2 min (a large solve under load);
- ``cotune_answers_total{route, outcome}`` — what the 200s said: ``ok`` / ``infeasible`` for
  a recommendation, ``stay`` / ``switch`` / ``infeasible`` for a re-plan;
- ``cotune_requests_pending`` and ``cotune_candidates_in_flight`` — the admission state
  behind the 503s (``cotune serve --max-pending``, ``candidate_budget``);
- ``cotune_build_info{version}`` — 1, labelled with cotune's version.

A registry of its own per app (not prometheus-client's global one), so two apps in one
process — tests, an embedding scheduler — count apart.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import choose_encoder

__all__ = ["CountedApp", "ServiceMetrics", "LATENCY_BUCKETS_S"]

#: Upper bounds (seconds) of the latency histogram's buckets: from a /health answer to a
#: large solve that waited for its turn.
LATENCY_BUCKETS_S: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

# HTTP servers pass any token as a method ("FOO / HTTP/1.1"): a label per method sent would
# let a client grow the series without bound, so the rest count as "other".
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})
# An error body is a few hundred bytes; past this the code is not read (the label stays empty).
_MAX_ERROR_BODY = 64 * 1024


class ServiceMetrics:
    """The service's Prometheus series (module doc); :class:`CountedApp` counts the answers.

    ``routes`` are the route templates a request's path is labelled by (anything else is
    ``other``, so a scan of random paths cannot grow the series without bound);
    ``pending`` and ``candidates`` read the admission state when scraped.
    """

    def __init__(self, *, version: str, routes: Callable[[Mapping[str, Any]], str],
                 pending: Callable[[], float], candidates: Callable[[], float]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.route_of = routes
        self.requests = Counter("cotune_requests", "HTTP requests answered, by route, method, status and error code",
                                ["route", "method", "status", "code"], registry=self.registry)
        self.duration = Histogram("cotune_request_duration_seconds", "Time from a request's arrival to its answer's "
                                  "first byte", ["route"], buckets=LATENCY_BUCKETS_S, registry=self.registry)
        self.answers = Counter("cotune_answers", "What the 200 answers said: ok/infeasible (recommend), "
                               "stay/switch/infeasible (replan)", ["route", "outcome"], registry=self.registry)
        Gauge("cotune_requests_pending", "Requests in progress (reading, waiting or solving); over --max-pending "
              "the answer is 503", registry=self.registry).set_function(pending)
        Gauge("cotune_candidates_in_flight", "Candidates being solved now, against the service's candidate budget",
              registry=self.registry).set_function(candidates)
        Gauge("cotune_build_info", "1, labelled with cotune's version", ["version"],
              registry=self.registry).labels(version=version).set(1)

    def answered(self, route: str, doc: Mapping[str, Any]) -> None:
        """Count what a 200 answer said (its ``decision`` for a re-plan, else its ``status``)."""
        outcome = doc.get("decision") or doc.get("status")
        if isinstance(outcome, str):
            self.answers.labels(route=route, outcome=outcome).inc()

    def exposition(self, accept: str | None) -> tuple[bytes, str]:
        """The scrape's body and content type (OpenMetrics when the scraper asks for it)."""
        encode, content_type = choose_encoder(accept or "")
        return encode(self.registry), content_type


class CountedApp:
    """ASGI middleware: every HTTP answer of ``app`` counted and timed in ``metrics`` (pure
    ASGI, outside the token check: a 401 is counted as any other answer)."""

    def __init__(self, app: Any, *, metrics: ServiceMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        m = self.metrics
        route = m.route_of(scope)  # before the router adds its own keys to the scope
        began = time.perf_counter()
        seen: dict[str, Any] = {"status": 500, "body": b""}

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = int(message["status"])
                m.duration.labels(route=route).observe(time.perf_counter() - began)
            elif message["type"] == "http.response.body" and seen["status"] >= 400 and len(seen["body"]) < _MAX_ERROR_BODY:
                seen["body"] += message.get("body", b"")[:_MAX_ERROR_BODY]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:  # a bug's exception goes on to the 500 handler outside: counted as 500 here
            method = str(scope.get("method", ""))
            m.requests.labels(route=route, method=method if method in _METHODS else "other", status=str(seen["status"]),
                              code=_error_code(seen["body"])).inc()


def _error_code(body: bytes) -> str:
    """``error.code`` of an ``error.v1`` body ("" when the body is none)."""
    if not body:
        return ""
    try:
        code = json.loads(body).get("error", {}).get("code")
    except (ValueError, AttributeError):
        return ""
    return code if isinstance(code, str) and len(code) <= 64 else ""
