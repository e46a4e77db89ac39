"""The ASGI application behind ``cotune serve``.

Routes: ``POST /v1/recommend`` (body: ``recommend-request.v1``; answer:
``recommend-response.v1``), ``POST /v1/replan`` (``replan-request.v1`` →
``replan-response.v1``), ``GET /health``, ``GET /metrics`` (Prometheus: ``_metrics``),
``GET /v1/schema/{name}``, and FastAPI's
``/openapi.json`` and ``/docs``, whose schemas are the published JSON Schemas themselves.

Every answer that is not a recommendation is an ``error.v1`` document. Bad input is
always a 4xx with a JSON Pointer to the bad value; a 500 means a bug in cotune. The
body is read incrementally and refused past ``max_body_bytes`` or after
``request_timeout_s`` (408); parsing and solving run in one worker-thread call, at most
``max_concurrency`` at once and at most ``candidate_budget`` candidates solved at once,
so the event loop keeps answering ``/health`` while solves are busy and memory stays
bounded. Beyond ``max_pending`` requests in progress the answer is 503 with
``Retry-After``. With a ``token``, every route but ``/health`` needs
``Authorization: Bearer TOKEN`` (compared in constant time).
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse as _StarletteJSON
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match

from cotune import __version__
from cotune._checks import excerpt
from cotune.api import (
    ERROR_SCHEMA_VERSION,
    REQUEST_SCHEMA_VERSION,
    SCHEMA_NAMES,
    LimitError,
    Limits,
    RequestError,
    error_document,
    recommend_request,
    replan_request,
    schema,
)
from cotune._checks import BadValue, load_json
from cotune.errors import InputError
from cotune.serve._admission import Admission, Overloaded, release_freed_memory
from cotune.solver import RESULT_SCHEMA_VERSION

__all__ = ["ServiceSettings", "create_app", "DEFAULT_MAX_BODY_BYTES", "OPEN_PATHS"]

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
# Routes answered without a token: liveness probes (Kubernetes, load balancers) carry none.
OPEN_PATHS = frozenset({"/health"})
# What a 404 lists: the routes a client may call.
ROUTES_SAID = "POST /v1/recommend, POST /v1/replan, GET /health, GET /metrics, GET /v1/schema/NAME, GET /openapi.json"
_log = logging.getLogger("cotune.serve")

_COMPONENTS = {
    "recommend-request.v1": "RecommendRequestV1",
    "recommend-response.v1": "RecommendResponseV1",
    "replan-request.v1": "ReplanRequestV1",
    "replan-response.v1": "ReplanResponseV1",
    "error.v1": "ErrorV1",
}
_STATUS_CODES = {
    400: "invalid_json",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    413: "request_too_large",
    415: "unsupported_media_type",
    503: "overloaded",
}


@dataclass(frozen=True)
class ServiceSettings:
    """How the service behaves; ``profile_dir=None`` (default) disables profiles by path."""

    limits: Limits = field(default_factory=Limits)
    profile_dir: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_concurrency: int = max(1, os.cpu_count() or 1)
    # Seconds for a request's head and for its body to arrive (slow clients are cut off).
    request_timeout_s: float = 30.0
    # Seconds a keep-alive connection may sit idle between requests.
    idle_timeout_s: float = 5.0
    # Requests in progress (waiting or solving) before the service answers 503.
    max_pending: int = 32
    # Candidates solved at once over all requests; None: limits.max_candidates.
    candidate_budget: int | None = None
    # Open connections before uvicorn answers 503 (file descriptors are finite).
    max_connections: int = 1000
    # Bearer token required on every route but /health; None: no authentication.
    token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1:
            raise ValueError(f"max_body_bytes must be >= 1, got {self.max_body_bytes}")
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        for name in ("request_timeout_s", "idle_timeout_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value <= 86_400):
                raise ValueError(f"{name} must be in (0, 86400] seconds, got {value!r}")
        for name in ("max_pending", "max_connections"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.candidate_budget is not None and self.candidate_budget < 1:
            raise ValueError(f"candidate_budget must be >= 1, got {self.candidate_budget}")
        if self.token is not None and (not self.token or len(self.token) > 4096 or not self.token.isprintable() or " " in self.token):
            raise ValueError("token must be 1 to 4096 printable characters without spaces")
        if self.profile_dir is not None and not os.path.isdir(self.profile_dir):
            raise ValueError(f"profile_dir {self.profile_dir!r} is not a directory")


class JSONResponse(_StarletteJSON):
    """Starlette's JSON response, whose text may hold a lone surrogate: ``"\\ud800"`` is valid
    JSON, so a request's key or a profile's name can carry one into an answer or an error's
    ``path``, and it has no UTF-8 bytes — rendering it was a 500. Such a document is written
    with every non-ASCII character as a ``\\u`` escape (the same JSON to any reader)."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False, indent=None, separators=(",", ":")).encode("ascii")


def _error_body(code: str, message: str, path: str | None = None) -> dict[str, Any]:
    return {"schema_version": ERROR_SCHEMA_VERSION, "status": "error", "error": {"code": code, "message": message, "path": path}}


def _error(status: int, code: str, message: str, path: str | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(_error_body(code, message, path), status_code=status, headers=headers)


class _BearerAuth:
    """Pure ASGI middleware: every HTTP route but :data:`OPEN_PATHS` needs the token."""

    def __init__(self, app: Any, *, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                # The scheme is case-insensitive (RFC 9110 § 11.1: "bearer" is "Bearer"); the token is not.
                scheme, _, rest = value.partition(b" ")
                given = (b"Bearer " + rest) if scheme.lower() == b"bearer" else value
                break
        # compare_digest: the time taken does not tell how much of a guess was right.
        if hmac.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        message = "missing or wrong bearer token: send the header 'Authorization: Bearer TOKEN' with the service's token"
        response = _error(401, "unauthorized", message, headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


# A client's X-Request-ID is echoed when it is a plain token; anything else (too long, spaces,
# control characters that would forge log lines) is replaced by a fresh one.
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:/+=-]{1,128}")


class _RequestId:
    """Pure ASGI middleware: every answer carries ``X-Request-ID`` — the client's (a
    scheduler's trace id) when it sent a plain one, else a fresh UUID — and the id is in
    ``request.state.request_id`` for the log line of a bug (the 500 handler adds it too)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = next((v for k, v in scope.get("headers", ()) if k == b"x-request-id"), b"")
        text = given.decode("latin-1")
        request_id = text if _REQUEST_ID.fullmatch(text) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id

        async def tagged(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != b"x-request-id"]
                message = {**message, "headers": [*headers, (b"x-request-id", request_id.encode())]}
            await send(message)

        await self.app(scope, receive, tagged)


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise RequestError("Content-Length is not a number", status=400, code="invalid_request")
        if int(declared) > limit:
            raise RequestError(f"body of {int(declared)} bytes exceeds the limit of {limit}: send a smaller body "
                               "(fewer records) or raise 'cotune serve --max-body-bytes'", status=413, code="request_too_large")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(f"body exceeds the limit of {limit} bytes: send a smaller body (fewer records) or raise "
                               "'cotune serve --max-body-bytes'", status=413, code="request_too_large")
        chunks.append(chunk)
    return b"".join(chunks)


def _max_containers(limits: Limits) -> int:
    """The most JSON arrays and objects a request body may hold: a record is one object,
    so a request within ``limits.max_records`` needs far fewer (room is left for nested
    diagnostic fields and the request's own lists)."""
    return 4 * limits.max_records + 10_000


def _parse_json(body: bytes, schema: str = "recommend-request.v1", *, containers_max: int | None = None) -> Any:
    if not body.strip():
        raise RequestError(f"empty body: send a JSON object (docs/schema/{schema}.json)", status=400, code="invalid_json")
    if containers_max is not None:
        # Counted on the bytes, before parsing: a body of empty arrays ("[],[],…") parses to
        # ~30x its size in memory and seconds of checks. A bracket inside a string counts too
        # (an upper bound), harmless at this margin.
        containers = body.count(b"[") + body.count(b"{")
        if containers > containers_max:
            raise LimitError(f"the body holds {containers:,} JSON arrays and objects, over this service's limit of "
                             f"{containers_max:,}: send one object per profile record and fewer records")
    problem = _encoding_problem(body)
    if problem is not None:
        raise RequestError(problem, status=400, code="invalid_json")
    try:  # NaN/Infinity literals, absurd nesting, huge integers: one 400, never a 500
        return load_json(body, decode_fix=f"send one JSON object (docs/schema/{schema}.json)")
    except BadValue as exc:
        raise RequestError(exc.detail, status=400, code="invalid_json") from None


def _encoding_problem(body: bytes) -> str | None:
    """What is wrong with the body's encoding, with the fix; None when it is UTF-8 (a byte
    order mark allowed). The body must be UTF-8 (RFC 8259 § 8.1), as the docs say: json
    alone also reads UTF-16/32 by their byte pattern, and read '\\xff\\xfe{}' as UTF-16 whose
    text then failed with "Expecting value"."""
    encoding = json.detect_encoding(body)
    if encoding not in ("utf-8", "utf-8-sig"):
        return f"the body is not UTF-8 text (it reads as {encoding.upper()}): send the body as UTF-8"
    try:  # surrogatepass: an encoded lone surrogate is judged where it is read, as before
        body.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        return f"the body is not UTF-8 text (byte 0x{body[exc.start]:02x} at position {exc.start}): send the body as UTF-8"
    return None


def _drop_tracebacks(exc: BaseException) -> None:
    """Forget the frames of ``exc`` and of the exceptions it was raised from or while handling."""
    stack: list[BaseException | None] = [exc]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        node.__traceback__ = None
        stack += (node.__cause__, node.__context__)


def _components(name: str) -> dict[str, Any]:
    """A published schema as OpenAPI components: ``$defs`` hoisted, refs rewritten."""
    prefix = _COMPONENTS[name]
    raw = schema(name)
    defs = raw.pop("$defs", {})
    for key in ("$schema", "$id"):
        raw.pop(key, None)

    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: (f"#/components/schemas/{prefix}_{v[len('#/$defs/'):]}" if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/") else fix(v))
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node

    out = {prefix: fix(raw)}
    out.update({f"{prefix}_{k}": fix(v) for k, v in defs.items()})
    return out


def _ref(name: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{_COMPONENTS[name]}"}}}


def _metrics(app: FastAPI, admission: Admission) -> Any:
    """The app's :class:`~cotune.serve._metrics.ServiceMetrics`, or None without prometheus-client
    (an install of fastapi and uvicorn alone: the service answers, ``/metrics`` says what to add)."""
    try:
        from cotune.serve._metrics import ServiceMetrics
    except ImportError:
        return None

    def route_of(scope: Any) -> str:
        # The route's template, never the raw path: a scan of random paths adds no series.
        for route in app.router.routes:
            if route.matches(scope)[0] != Match.NONE:
                return str(getattr(route, "path", "other"))
        return "other"

    return ServiceMetrics(version=__version__, routes=route_of, pending=lambda: admission.pending,
                          candidates=lambda: admission.candidates_in_flight)


def create_app(settings: ServiceSettings | None = None) -> FastAPI:
    """The FastAPI application (pass it to any ASGI server, or use ``cotune serve``)."""
    cfg = settings or ServiceSettings()
    limiter = anyio.CapacityLimiter(cfg.max_concurrency)
    # The worker threads' own limiter: a call enters it only while holding a token of
    # ``limiter`` (taken under a deadline in answer()), so it never waits here, and
    # anyio's default limiter (40 threads) does not cap a larger --concurrency.
    threads = anyio.CapacityLimiter(cfg.max_concurrency)
    admission = Admission(
        max_pending=cfg.max_pending,
        candidate_budget=cfg.candidate_budget or cfg.limits.max_candidates,
        wait_s=cfg.request_timeout_s,
    )
    app = FastAPI(
        # '/v1/recommend/' is a 404 error document, not a bodiless 307 a client may not follow with its POST body
        redirect_slashes=False,
        title="cotune",
        version=__version__,
        description="Cheapest configuration (workers, GPU type, market, batch size) of a training job that reaches "
        "its target metric by its deadline. Schemas: docs/schema/.",
    )
    app.state.settings = cfg
    app.state.admission = admission
    if cfg.token is not None:
        app.add_middleware(_BearerAuth, token=cfg.token)
    metrics = _metrics(app, admission)
    app.state.metrics = metrics
    if metrics is not None:
        from cotune.serve._metrics import CountedApp

        app.add_middleware(CountedApp, metrics=metrics)  # outside the token check, so a 401 is counted too
    app.add_middleware(_RequestId)  # outermost: every answer carries the id
    error_responses = {
        status: {"description": text, "content": _ref("error.v1")}
        for status, text in (
            (400, "Not JSON"),
            (401, "Missing or wrong bearer token (only when the service has one)"),
            (403, "Profiles by path are disabled"),
            (413, "Body too large"),
            (415, "Not application/json (nor a +json type)"),
            (408, "The body did not arrive in time"),
            (422, "Invalid request, unknown profile, or over a limit"),
            (503, "At capacity: retry after the Retry-After seconds"),
        )
    }

    @app.get("/health", summary="Liveness and versions")
    def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "cotune_version": __version__,
            "schema_versions": {"request": REQUEST_SCHEMA_VERSION, "response": RESULT_SCHEMA_VERSION, "error": ERROR_SCHEMA_VERSION},
        }

    # HEAD as load balancers probe it; one route per method keeps OpenAPI's operation ids unique
    app.add_api_route("/health", health, methods=["HEAD"], include_in_schema=False)

    @app.get("/metrics", include_in_schema=False)
    def get_metrics(request: Request) -> Response:
        if metrics is None:
            return _error(501, "not_implemented", "this service counts nothing: /metrics needs prometheus-client, "
                          "pip install 'cotune[serve]'")
        body, content_type = metrics.exposition(request.headers.get("accept"))
        return Response(body, media_type=content_type)

    @app.get("/v1/schema/{name}", summary="A published JSON Schema", responses={404: {"content": _ref("error.v1")}})
    def get_schema(name: str) -> Any:
        name = name[: -len(".json")] if name.endswith(".json") else name  # as the schema's own $id spells it
        if name not in SCHEMA_NAMES:
            return _error(404, "not_found", f"no schema {excerpt(name)}: known are {', '.join(SCHEMA_NAMES)}")
        return schema(name)

    @app.post(
        "/v1/recommend",
        summary="Recommend a configuration",
        description="Body: recommend-request.v1. Answers 200 with status 'ok' or 'infeasible' (then 'relax' says what to change).",
        openapi_extra={"requestBody": {"required": True, "content": _ref("recommend-request.v1")}},
        responses={200: {"description": "A recommendation", "content": _ref("recommend-response.v1")}, **error_responses},
    )
    async def recommend(request: Request) -> Any:
        return await answer(request, recommend_request, route="/v1/recommend")

    @app.post(
        "/v1/replan",
        summary="Re-plan a running job",
        description="Body: replan-request.v1 (the job's question, its progress, the switching rule). Answers 200 with "
        "decision 'stay', 'switch' or 'infeasible' and why.",
        openapi_extra={"requestBody": {"required": True, "content": _ref("replan-request.v1")}},
        responses={200: {"description": "A re-plan", "content": _ref("replan-response.v1")}, **error_responses},
    )
    async def replan(request: Request) -> Any:
        return await answer(request, replan_request, route="/v1/replan")

    async def answer(request: Request, solve: Any, *, route: str) -> Any:
        """Read, parse and answer one request with ``solve`` (recommend_request or replan_request)."""
        ctype = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
        if ctype and ctype != "application/json" and not ctype.endswith("+json"):
            return _error(415, "unsupported_media_type", f"content type {excerpt(ctype)}: send application/json")
        if request.url.query:  # a field sent as ?confidence=0.9 would be silently dropped
            names = sorted({k for k, _ in request.query_params.multi_items()} - {""})
            what = ", ".join(excerpt(k) for k in names[:3]) or excerpt(request.url.query)
            return _error(400, "invalid_request", f"query parameters are not read (got {what}): put every field in the JSON body")
        encoding = request.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):  # the body is read as it comes: a compressed one would not be JSON
            return _error(415, "unsupported_media_type", f"content encoding {excerpt(encoding)}: send the JSON uncompressed")
        try:
            with admission.request():
                try:
                    with anyio.fail_after(cfg.request_timeout_s):
                        body = await _read_body(request, cfg.max_body_bytes)
                except ClientDisconnect:  # the client went away mid-body: nobody reads an answer
                    return _error(400, "invalid_request", "the client closed the connection before the body was complete")
                except TimeoutError:
                    return _error(
                        408, "request_timeout", f"the body did not arrive within {cfg.request_timeout_s:g} s: send it at once",
                        headers={"Connection": "close"},
                    )
                schema = "replan-request.v1" if route == "/v1/replan" else "recommend-request.v1"

                def parse_and_solve() -> Any:
                    # One thread call: a request's parsed tree (many times its body's bytes) lives
                    # only while it holds a worker, never while it waits in the limiter's queue, so
                    # at most --concurrency trees exist however many bodies are pending.
                    try:
                        return solve(_parse_json(body, schema, containers_max=_max_containers(cfg.limits)),
                                     profile_dir=cfg.profile_dir, limits=cfg.limits, admit=admission.solve)
                    except (InputError, Overloaded) as exc:
                        # The answer needs only the message. The traceback's frames hold the parsed
                        # tree, and anyio's future and worker frame make a reference cycle of them
                        # that only the garbage collector frees: 32 refused 4 MiB bodies stayed
                        # 2 GB. (A bug keeps its traceback, for the log.)
                        _drop_tracebacks(exc)
                        raise
                    finally:
                        # After every request, a refused one too: only a solve's end trimmed before.
                        release_freed_memory()

                try:
                    # A request waits for a worker at most --request-timeout (as the docs promise):
                    # behind a long solve it was queued without end and answered minutes later.
                    with anyio.fail_after(cfg.request_timeout_s):
                        await limiter.acquire()
                except TimeoutError:
                    raise Overloaded(
                        f"no worker was free within {cfg.request_timeout_s:g} s ({cfg.max_concurrency} solve"
                        f"{'' if cfg.max_concurrency == 1 else 's'} at once, all busy): retry shortly, or raise "
                        "'cotune serve --concurrency'"
                    ) from None
                try:
                    doc = await anyio.to_thread.run_sync(parse_and_solve, limiter=threads)
                finally:
                    limiter.release()
        except Overloaded as exc:
            return _error(503, "overloaded", str(exc), headers={"Retry-After": str(exc.retry_after_s)})
        except RequestError as exc:
            return JSONResponse(error_document(exc), status_code=exc.status)
        except InputError as exc:  # a valid request that the solver refuses (e.g. a price for an unknown gpu)
            return JSONResponse(error_document(exc), status_code=422)
        if metrics is not None:
            metrics.answered(route, doc)
        return JSONResponse(doc)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(exc.status_code, "invalid_request" if exc.status_code < 500 else "internal_error")
        # The routing errors name what to send instead (Starlette's detail is "Not Found");
        # a 405 keeps its Allow header (RFC 9110 requires one).
        message = str(exc.detail)
        where = excerpt(request.url.path)
        headers = dict(exc.headers) if exc.headers else {}
        if exc.status_code == 404:
            message = f"no route {where}: the service answers {ROUTES_SAID}"
        elif exc.status_code == 405:
            # Every route of the path, not only the first that matched it: /health is a GET
            # route and a HEAD route, and the Allow header must name both.
            methods = {m for route in app.router.routes if route.matches(request.scope)[0] != Match.NONE
                       for m in (getattr(route, "methods", None) or ())}
            allowed = ", ".join(sorted(methods)) or headers.get("Allow", "")
            if allowed:
                headers["Allow"] = allowed
            message = f"method {excerpt(request.method)} is not allowed on {where}" + (f": use {allowed}" if allowed else "")
        return _error(exc.status_code, code, message, headers=headers or None)

    @app.exception_handler(Exception)
    async def crash(request: Request, exc: Exception) -> JSONResponse:  # a bug: log it, answer a clean 500
        # Answered outside the middleware (Starlette's outermost layer): the id is added here.
        request_id = getattr(request.state, "request_id", None)
        _log.exception("unhandled error on %s %s (request %s)", request.method, request.url.path, request_id)
        return JSONResponse(error_document(exc), status_code=500,
                            headers=None if request_id is None else {"X-Request-ID": request_id})

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            spec = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            comps = spec.setdefault("components", {}).setdefault("schemas", {})
            for name in _COMPONENTS:
                comps.update(_components(name))
            app.openapi_schema = spec
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
