"""The ASGI application behind ``cotune serve``.

Routes: ``POST /v1/recommend`` (body: ``recommend-request.v1``; answer:
``recommend-response.v1``), ``POST /v1/replan`` (``replan-request.v1`` →
``replan-response.v1``), ``GET /health``, ``GET /v1/schema/{name}``, and FastAPI's
``/openapi.json`` and ``/docs``, whose schemas are the published JSON Schemas themselves.

Every answer that is not a recommendation is an ``error.v1`` document. Bad input is
always a 4xx with a JSON Pointer to the bad value; a 500 means a bug in cotune. The
body is read incrementally and refused past ``max_body_bytes``; parsing and solving run
in worker threads, at most ``max_concurrency`` at once, so the event loop keeps
answering ``/health`` while solves are busy.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from cotune import __version__
from cotune.api import (
    ERROR_SCHEMA_VERSION,
    REQUEST_SCHEMA_VERSION,
    SCHEMA_NAMES,
    Limits,
    RequestError,
    error_document,
    recommend_request,
    replan_request,
    schema,
)
from cotune._checks import BadValue, load_json
from cotune.errors import InputError
from cotune.solver import RESULT_SCHEMA_VERSION

__all__ = ["ServiceSettings", "create_app", "DEFAULT_MAX_BODY_BYTES"]

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
_log = logging.getLogger("cotune.serve")

_COMPONENTS = {
    "recommend-request.v1": "RecommendRequestV1",
    "recommend-response.v1": "RecommendResponseV1",
    "replan-request.v1": "ReplanRequestV1",
    "replan-response.v1": "ReplanResponseV1",
    "error.v1": "ErrorV1",
}
_STATUS_CODES = {400: "invalid_json", 404: "not_found", 405: "method_not_allowed", 413: "request_too_large", 415: "unsupported_media_type"}


@dataclass(frozen=True)
class ServiceSettings:
    """How the service behaves; ``profile_dir=None`` (default) disables profiles by path."""

    limits: Limits = field(default_factory=Limits)
    profile_dir: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_concurrency: int = max(1, os.cpu_count() or 1)

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1:
            raise ValueError(f"max_body_bytes must be >= 1, got {self.max_body_bytes}")
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.profile_dir is not None and not os.path.isdir(self.profile_dir):
            raise ValueError(f"profile_dir {self.profile_dir!r} is not a directory")


def _error(status: int, code: str, message: str, path: str | None = None) -> JSONResponse:
    body = {"schema_version": ERROR_SCHEMA_VERSION, "status": "error", "error": {"code": code, "message": message, "path": path}}
    return JSONResponse(body, status_code=status)


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise RequestError("Content-Length is not a number", status=400, code="invalid_request")
        if int(declared) > limit:
            raise RequestError(f"body of {int(declared)} bytes exceeds the limit of {limit}", status=413, code="request_too_large")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(f"body exceeds the limit of {limit} bytes", status=413, code="request_too_large")
        chunks.append(chunk)
    return b"".join(chunks)


def _parse_json(body: bytes) -> Any:
    if not body.strip():
        raise RequestError("empty body: send a JSON object (docs/schema/recommend-request.v1.json)", status=400, code="invalid_json")
    try:  # NaN/Infinity literals, absurd nesting, huge integers, bad encodings: one 400, never a 500
        return load_json(body)
    except BadValue as exc:
        raise RequestError(exc.detail, status=400, code="invalid_json") from None


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


def create_app(settings: ServiceSettings | None = None) -> FastAPI:
    """The FastAPI application (pass it to any ASGI server, or use ``cotune serve``)."""
    cfg = settings or ServiceSettings()
    limiter = anyio.CapacityLimiter(cfg.max_concurrency)
    app = FastAPI(
        title="cotune",
        version=__version__,
        description="Cheapest configuration (workers, GPU type, market, batch size) of a training job that reaches "
        "its target metric by its deadline. Schemas: docs/schema/.",
    )
    app.state.settings = cfg
    error_responses = {
        status: {"description": text, "content": _ref("error.v1")}
        for status, text in (
            (400, "Not JSON"),
            (403, "Profiles by path are disabled"),
            (413, "Body too large"),
            (415, "Not application/json"),
            (422, "Invalid request, unknown profile, or over a limit"),
        )
    }

    @app.get("/health", summary="Liveness and versions")
    def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "cotune_version": __version__,
            "schema_versions": {"request": REQUEST_SCHEMA_VERSION, "response": RESULT_SCHEMA_VERSION, "error": ERROR_SCHEMA_VERSION},
        }

    @app.get("/v1/schema/{name}", summary="A published JSON Schema", responses={404: {"content": _ref("error.v1")}})
    def get_schema(name: str) -> Any:
        if name not in SCHEMA_NAMES:
            return _error(404, "not_found", f"no schema {name!r}: known are {', '.join(SCHEMA_NAMES)}")
        return schema(name)

    async def answer(request: Request, solve: Any) -> Any:
        ctype = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
        if ctype and ctype != "application/json" and not ctype.endswith("+json"):
            return _error(415, "unsupported_media_type", f"content type {ctype!r}: send application/json")
        try:
            body = await _read_body(request, cfg.max_body_bytes)
            data = await anyio.to_thread.run_sync(_parse_json, body, limiter=limiter)
            doc = await anyio.to_thread.run_sync(
                lambda: solve(data, profile_dir=cfg.profile_dir, limits=cfg.limits), limiter=limiter
            )
        except RequestError as exc:
            return JSONResponse(error_document(exc), status_code=exc.status)
        except InputError as exc:  # a valid request that the solver refuses (e.g. a price for an unknown gpu)
            return JSONResponse(error_document(exc), status_code=422)
        return JSONResponse(doc)

    @app.post(
        "/v1/recommend",
        summary="Recommend a configuration",
        description="Body: recommend-request.v1. Answers 200 with status 'ok' or 'infeasible' (then 'relax' says what to change).",
        openapi_extra={"requestBody": {"required": True, "content": _ref("recommend-request.v1")}},
        responses={200: {"description": "A recommendation", "content": _ref("recommend-response.v1")}, **error_responses},
    )
    async def recommend(request: Request) -> Any:
        return await answer(request, recommend_request)

    @app.post(
        "/v1/replan",
        summary="Re-plan a running job",
        description="Body: replan-request.v1 (the job's question, its progress, the switching rule). Answers 200 with "
        "decision 'stay', 'switch' or 'infeasible' and why.",
        openapi_extra={"requestBody": {"required": True, "content": _ref("replan-request.v1")}},
        responses={200: {"description": "A re-plan", "content": _ref("replan-response.v1")}, **error_responses},
    )
    async def replan(request: Request) -> Any:
        return await answer(request, replan_request)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(exc.status_code, "invalid_request" if exc.status_code < 500 else "internal_error")
        return _error(exc.status_code, code, str(exc.detail))

    @app.exception_handler(Exception)
    async def crash(request: Request, exc: Exception) -> JSONResponse:  # a bug: log it, answer a clean 500
        _log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(error_document(exc), status_code=500)

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
