"""Errors of the plain-data API, with where in the request they point and the HTTP status
a service should answer with. They are :class:`~cotune.errors.InputError` subclasses, so
the CLI and Python callers treat them like any other bad input."""

from __future__ import annotations

from typing import Any

from cotune.errors import InputError

__all__ = ["RequestError", "LimitError", "error_document", "pointer_code", "ERROR_SCHEMA_VERSION"]

ERROR_SCHEMA_VERSION = 1


class RequestError(InputError):
    """The request is malformed or names something that does not exist.

    ``path`` is a JSON Pointer (RFC 6901) to the offending value (``""`` is the whole
    request); ``status`` is the HTTP status for it; ``code`` a stable machine-readable name.
    """

    def __init__(self, message: str, *, path: str = "", status: int = 422, code: str = "invalid_request") -> None:
        super().__init__(f"{path or '/'}: {message}" if path else message)
        self.detail = message
        self.path = path
        self.status = status
        self.code = code


class LimitError(RequestError):
    """The request is well formed but larger than this service accepts."""

    def __init__(self, message: str, *, path: str = "", status: int = 422, code: str = "limit_exceeded") -> None:
        super().__init__(message, path=path, status=status, code=code)


def pointer_code(where: str) -> str:
    """The error code of a bad value at the JSON Pointer ``where``: the request's ``cluster``
    (``/cluster`` or inside it) is ``invalid_cluster``, as its parse errors are; else ``invalid_request``."""
    return "invalid_cluster" if where == "/cluster" or where.startswith("/cluster/") else "invalid_request"


def error_document(exc: BaseException, *, internal_message: str | None = None) -> dict[str, Any]:
    """The JSON body of an error answer (schema: ``docs/schema/error.v1.json``): of the HTTP
    service, and of a CLI command run with ``--json``. ``internal_message`` replaces the
    service's text for a bug (the CLI names the file that keeps its traceback)."""
    from cotune._checks import BadValue
    from cotune.errors import InfeasibleError, ProfileError, ProfileNotFoundError, StorageError

    if isinstance(exc, RequestError):
        code, message, path = exc.code, exc.detail, exc.path
    elif isinstance(exc, BadValue) and exc.where.startswith("/"):  # a request field, by its pointer
        code, message, path = pointer_code(exc.where), str(exc), exc.where
    elif isinstance(exc, ProfileError):
        code, message, path = ("unknown_profile" if isinstance(exc, ProfileNotFoundError) else "invalid_profile"), str(exc), None
    elif isinstance(exc, InputError):
        code, message, path = "invalid_request", str(exc), None
    elif isinstance(exc, StorageError):  # a file cotune writes could not be written (CLI exit 3)
        code, message, path = "storage_error", str(exc), None
    elif isinstance(exc, InfeasibleError):
        # Raised on purpose (cotune.k8s has no job to render for an infeasible or 'stay'
        # answer): an answer about the question, never a bug to report.
        code, message, path = "infeasible", str(exc), None
    else:
        code, message, path = "internal_error", internal_message or "internal error: the server logged it; please report it", None
    return {
        "schema_version": ERROR_SCHEMA_VERSION,
        "status": "error",
        "error": {"code": code, "message": " ".join(str(message).split()), "path": path},
    }
