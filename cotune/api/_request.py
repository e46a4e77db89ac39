"""Parse plain data (JSON) into the request values: :class:`~cotune.RecommendRequest` and
:class:`~cotune.ReplanRequest`.

The published contracts are ``docs/schema/recommend-request.v1.json`` and
``replan-request.v1.json``; this module is their executable form. It accepts what they
accept (a test checks the recommend schema and this parser on the same generated
requests) except for rules a JSON Schema cannot state: ``global_batch_range`` min <= max,
no ``prices`` beside a ``cluster``, the cluster file's own rules (spot needs a
checkpoint), and for replan workers left (a job at or past its deadline is no bad input:
``replan`` answers it ``infeasible``). What it adds to
the request values' own validation (:mod:`cotune._request`, the one place fields are
checked): JSON-only rules — unknown fields, ``schema_version``, JSON types of
containers, the ``profile`` forms — and it turns every error into a
:class:`~cotune.api.RequestError` at its JSON Pointer.

Nothing here touches the file system or imports user code: a profile is either a bundled
example's *name* or inline records; ``{"path": ...}`` is only resolved later, and only
when the caller allows a directory (:func:`cotune.api.recommend_request`).
"""

from __future__ import annotations

import difflib
from typing import Any, Callable, Mapping

from cotune._checks import MAX_DEPTH, BadValue, excerpt
from cotune._request import (
    PROGRESS_FIELDS, ProfileRef, Progress, RecommendRequest, ReplanRequest, pointer_key,
)
from cotune.api._errors import RequestError, pointer_code
from cotune.errors import InputError

__all__ = ["REQUEST_SCHEMA_VERSION", "ProfileRef", "parse_replan_request", "parse_request"]

REQUEST_SCHEMA_VERSION = 1

#: Fields of ``recommend-request.v1`` (``max_candidates`` is the server's limit, not the caller's).
RECOMMEND_FIELDS = (
    "schema_version", "profile", "target", "deadline_s", "max_workers", "gpus_per_host", "prices", "cluster",
    "objective", "budget", "confidence", "gpus", "local_batches", "workers", "hosts", "startup_s",
    "global_batch_range", "baseline_local_batch", "baseline_workers", "interval", "top", "pareto_limit",
)
#: Fields of ``replan-request.v1``: the job's question (what replan uses), its progress, the rule.
REPLAN_FIELDS = (
    "schema_version", "profile", "target", "deadline_s", "max_workers", "gpus_per_host", "cluster", "objective",
    "confidence", "gpus", "local_batches", "hosts", "interval", "progress", "margin", "restart_s", "prices",
    "budget", "lr_rule", "job",
)
_PROFILE_KEYS = ("example", "records", "path")
_MISSING = object()


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RequestError(f"must be an object, got {excerpt(value)}", path=path, code=pointer_code(path))
    return value


def _array(value: Any, path: str, *, empty: str = "leave the field out for the default") -> list[Any]:
    """A non-empty JSON array; ``empty`` is the fix an empty one is told."""
    if not isinstance(value, list):
        # JSON's array is a Python list: only a tuple from a Python caller is told so, with
        # the fix; an HTTP client (curl, Go, JavaScript) has no Python list to send.
        told = " (a Python list)" if isinstance(value, tuple) else ""
        fix = ": pass a list" if isinstance(value, tuple) else ""
        raise RequestError(f"must be an array{told}, got {excerpt(value)}{fix}", path=path, code=pointer_code(path))
    if not value:
        raise RequestError(f"must not be empty: {empty}", path=path, code=pointer_code(path))
    return value


def _string(value: Any, path: str, *, max_length: int = 200) -> str:
    if not isinstance(value, str) or not value:
        raise RequestError(f"must be a non-empty string, got {excerpt(value)}", path=path)
    if len(value) > max_length:
        raise RequestError(f"must be at most {max_length} characters, got {len(value)}", path=path)
    return value


def _unknown_keys(obj: Mapping[str, Any], known: tuple[str, ...], path: str) -> None:
    for key in obj:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known fields: {', '.join(known)}"
            raise RequestError(f"unknown field {excerpt(str(key))}{hint}", path=f"{path}/{pointer_key(str(key))[:200]}")


def _check_depth(value: Any) -> None:
    """Refuse absurd nesting up front (iteratively), so no later step can recurse too deep."""
    if not isinstance(value, (dict, list)):
        return
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if children and depth >= MAX_DEPTH:  # a value of any kind deeper than MAX_DEPTH
            raise RequestError(f"nested deeper than {MAX_DEPTH} levels: a request is a flat object of fields", path="")
        # Only objects and arrays go on the stack, judged by their children's depth: a
        # scalar has none (45,000 inline records hold a quarter of a million scalars).
        stack.extend((v, depth + 1) for v in children if isinstance(v, (dict, list)))


def _profile(value: Any) -> ProfileRef:
    path = "/profile"
    if isinstance(value, str):
        return ProfileRef(example=_string(value, path))
    obj = _object(value, path)
    _unknown_keys(obj, _PROFILE_KEYS, path)
    given = [k for k in _PROFILE_KEYS if k in obj]
    if len(given) != 1:
        raise RequestError(
            "give exactly one of 'example' (a bundled profile name), 'records' (the profile's records inline) "
            f"or 'path' (a file under the server's profile directory); got {', '.join(given) or 'none'}",
            path=path,
        )
    key = given[0]
    if key == "example":
        return ProfileRef(example=_string(obj[key], f"{path}/example"))
    if key == "path":
        return ProfileRef(path=_string(obj[key], f"{path}/path", max_length=1000))
    records = _array(obj[key], f"{path}/records",
                     empty="send the profile's records, its workload record first (docs/profile-format.md)")
    for i, rec in enumerate(records):
        _object(rec, f"{path}/records/{i}")
        if not isinstance(rec.get("record"), str):
            raise RequestError(
                "every record needs a string field 'record' (workload, step, eval, failure or noise)",
                path=f"{path}/records/{i}",
            )
    return ProfileRef(records=tuple(records))


def _containers(obj: Mapping[str, Any]) -> None:
    """JSON container types the request values would also accept in Python form (a tuple, a Mapping)."""
    for key in ("gpus", "local_batches", "workers", "global_batch_range"):
        if obj.get(key) is not None:
            _array(obj[key], f"/{key}")
    for key in ("prices", "cluster"):
        if obj.get(key) is not None:
            _object(obj[key], f"/{key}")
    if isinstance(obj.get("max_workers"), (list, str)):
        raise RequestError(f"must be a whole number >= 1 or an object of gpu → number, got {excerpt(obj['max_workers'])}", path="/max_workers")


def _build(make: Callable[[], Any]) -> Any:
    """Run a request value's constructor, its errors as :class:`RequestError` at their pointer."""
    try:
        return make()
    except BadValue as exc:
        raise RequestError(exc.detail, path=exc.where, code=pointer_code(exc.where)) from None
    except RequestError:
        raise
    except InputError as exc:  # the cluster's own validation: "/cluster: gpu.t4.spot …"
        text = str(exc)
        if text.startswith("/cluster: "):
            raise RequestError(text[len("/cluster: "):], path="/cluster", code="invalid_cluster") from None
        raise


def _top(request: Any, fields: tuple[str, ...], required: tuple[str, ...]) -> dict[str, Any]:
    obj = _object(request, "")
    _check_depth(obj)
    _unknown_keys(obj, fields, "")
    version = obj.get("schema_version", REQUEST_SCHEMA_VERSION)
    if isinstance(version, bool) or not isinstance(version, (int, float)) or version != REQUEST_SCHEMA_VERSION:
        # a whole number, but not this one (an integer of 400 digits has no float: no float() here)
        if (isinstance(version, int) and not isinstance(version, bool)) or (isinstance(version, float) and version.is_integer()):
            raise RequestError(
                f"request schema_version {excerpt(version)} is not understood: this cotune reads version {REQUEST_SCHEMA_VERSION}",
                path="/schema_version",
                code="unsupported_version",
            )
        raise RequestError(f"must be the whole number {REQUEST_SCHEMA_VERSION}, got {excerpt(version)}", path="/schema_version")
    for name in required:
        if name not in obj:
            raise RequestError(f"missing required field {name!r}", path="")
        if obj[name] is None:
            raise RequestError("must not be null: this field is required", path=f"/{name}")
    _containers(obj)
    # null means "the default": drop it so the request value's own default applies.
    return {k: v for k, v in obj.items() if v is not None and k != "schema_version"}


def _question(given: dict[str, Any], **defaults: Any) -> RecommendRequest:
    given = dict(defaults, **given)
    given["profile"] = _profile(given["profile"])
    if "cluster" in given:  # the cluster file's fields inline: validated here, errors at /cluster
        from cotune.spot import parse_cluster

        raw = given["cluster"]
        given["cluster"] = _build(lambda: parse_cluster(raw, source="/cluster"))
    return _build(lambda: RecommendRequest(**given))


def parse_request(request: Any, *, max_candidates: int | None = None) -> RecommendRequest:
    """Validate a recommend request (a ``dict`` from JSON) and return it as a :class:`~cotune.RecommendRequest`.

    Raises :class:`~cotune.api.RequestError` with a JSON Pointer to the first bad value.
    Unknown fields are errors (a misspelt ``deadline`` must not silently mean "no deadline").
    ``max_candidates``: the server's limit on the search space.
    """
    given = _top(request, RECOMMEND_FIELDS, ("profile", "target"))
    return _question(given, **({} if max_candidates is None else {"max_candidates": max_candidates}))


def parse_replan_request(
    request: Any, *, max_candidates: int | None = None, load_profile_ref: Callable[[Any], Any] | None = None
) -> ReplanRequest:
    """Validate a replan request (``docs/schema/replan-request.v1.json``) into a :class:`~cotune.ReplanRequest`.

    Progress fields left out come from the profile's tracked records of the job, read with
    ``load_profile_ref(ref)`` (default: the request's own read; a service passes
    its own, which confines paths to its profile directory and bounds the records)."""
    given = _top(request, REPLAN_FIELDS, ("profile", "target", "deadline_s"))
    progress = _object(given.pop("progress", {}), "/progress")
    _unknown_keys(progress, PROGRESS_FIELDS, "/progress")
    rule = {k: given.pop(k) for k in ("margin", "restart_s", "prices", "lr_rule", "job") if k in given}
    question = _question(given, **({} if max_candidates is None else {"max_candidates": max_candidates}))
    progress = {k: v for k, v in progress.items() if v is not None}

    def build() -> ReplanRequest:
        if all(k in progress for k in ("epochs_done", "elapsed_s", "gpu", "market", "workers", "local_batch")):
            current = Progress(**progress)
        else:  # the rest from the job's tracked records in the profile
            from cotune.track import progress_from_records

            # The request keeps the reference (a service checks what kind of profile it names).
            profile = load_profile_ref(question.profile) if load_profile_ref else question.load_profile()
            current = progress_from_records(profile, job=rule.get("job"), default_market=question.implied_market,
                                            target=question.target, **progress)
        return ReplanRequest(request=question, progress=current, **rule)

    return _build(build)
