"""A saved answer — ``cotune recommend --json``, ``cotune replan --json`` or the HTTP
service's — as the recommendation document :func:`render_manifests` reads.

A scheduler that asked ``POST /v1/replan`` and got ``switch`` submits the new size as a
new job: the answer already says what to run (``plan``: the best option's workers laid
out on hosts), so rendering it must not solve again. Solving again is not only slower: a
``cotune k8s`` question pinned to the new configuration is asked for the *whole* job,
which may not fit the *remaining* deadline (nothing rendered), and it knows nothing of
the learning-rate factor the switch needs.
"""

from __future__ import annotations

from typing import Any, Mapping

from cotune._checks import BadValue, excerpt, integer, number, one_line_name
from cotune.errors import InfeasibleError, InputError

__all__ = ["answer_document"]

MARKETS = ("on_demand", "spot", "mixed")
COST_UNITS = ("USD", "worker_hours")
STATUSES = ("ok", "infeasible")
#: The answer document versions this cotune renders (``schema_version`` of recommend/replan --json).
SCHEMA_VERSIONS = (1,)
#: Kubernetes counts (replicas, minMember) are int32.
MAX_COUNT = 2**31 - 1


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise BadValue(f"must be an object, got {excerpt(value)}: give the answer as cotune wrote it", where=where)
    return value


def _optional(value: Any, where: str, **bounds: float) -> float | None:
    return None if value is None else number(value, where=where, **bounds)


def _check_plan(plan: Any, where: str = "/plan") -> dict[str, Any]:
    """What the renderer reads of a plan, checked and returned with its counts as plain
    integers (``3.0`` is 3, not ``COTUNE_WORKERS="3.0"``): a saved answer is the user's file
    (a hand edit, a truncated copy), and a bad value must be one line, not a crash or a
    manifest whose pods do not add up to the plan or ask for more GPUs than a host has."""
    plan = _object(plan, where)
    one_line_name(plan.get("gpu"), what=f"{where}/gpu", example="t4")
    if plan.get("market") not in MARKETS:
        raise BadValue(f"must be one of {', '.join(MARKETS)}, got {excerpt(plan.get('market'))}", where=f"{where}/market")
    workers = integer(plan.get("workers"), where=f"{where}/workers", ge=1, le=MAX_COUNT)
    hosts = integer(plan.get("hosts"), where=f"{where}/hosts", ge=1, le=workers)
    local_batch = integer(plan.get("local_batch"), where=f"{where}/local_batch", ge=1, le=MAX_COUNT)
    gpus_per_host = integer(plan.get("gpus_per_host"), where=f"{where}/gpus_per_host", ge=1, le=MAX_COUNT)
    per_host = plan.get("workers_per_host")
    if not isinstance(per_host, list) or len(per_host) != hosts:
        raise BadValue(f"must list the workers of each of the {hosts} hosts, got {excerpt(per_host)}",
                       where=f"{where}/workers_per_host")
    # One worker a GPU: a host runs at most gpus_per_host of them.
    counts = [integer(v, where=f"{where}/workers_per_host/{i}", ge=1, le=gpus_per_host) for i, v in enumerate(per_host)]
    if sum(counts) != workers:
        raise BadValue(f"adds up to {sum(counts)} workers, not the plan's {workers}", where=f"{where}/workers_per_host")
    # Optional (answers before 2026-12-06 have none: 1); it must split the local batch into
    # whole micro-batches, as the probes ran it.
    accum = integer(plan.get("accum_steps", 1), where=f"{where}/accum_steps", ge=1, le=local_batch)
    if local_batch % accum:
        raise BadValue(f"is {accum}, which does not split local batch {local_batch} into whole micro-batches: give the "
                       "answer as cotune wrote it", where=f"{where}/accum_steps")
    elastic = _object(plan.get("elastic"), f"{where}/elastic")
    lo = integer(elastic.get("min_workers"), where=f"{where}/elastic/min_workers", ge=1, le=workers)
    hi = integer(elastic.get("max_workers"), where=f"{where}/elastic/max_workers", ge=max(lo, workers), le=MAX_COUNT)
    return {**plan, "workers": workers, "hosts": hosts, "local_batch": local_batch, "accum_steps": accum,
            "gpus_per_host": gpus_per_host,
            "workers_per_host": counts, "elastic": {**elastic, "min_workers": lo, "max_workers": hi}}


def _check_rendered(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Every value of a recommendation document the manifests are made of, checked; the
    document returned with its counts as plain integers."""
    plan = _check_plan(doc["plan"])
    choice = _object(doc["recommendation"], "/recommendation")
    global_batch = integer(choice.get("global_batch"), where="/recommendation/global_batch", ge=1)
    if global_batch != plan["workers"] * plan["local_batch"]:
        raise BadValue(f"is {global_batch}, but the plan runs {plan['workers']} workers at local batch "
                       f"{plan['local_batch']} ({plan['workers'] * plan['local_batch']}): give the answer as cotune wrote it",
                       where="/recommendation/global_batch")
    _optional(choice.get("time_s"), "/recommendation/time_s", ge=0.0)
    _optional(choice.get("cost"), "/recommendation/cost", ge=0.0)
    _optional(choice.get("p_success"), "/recommendation/p_success", ge=0.0, le=1.0)
    span = choice.get("time_interval_s")
    if span is not None:
        if not isinstance(span, list) or len(span) != 2:
            raise BadValue(f"must be [lower, upper] or null, got {excerpt(span)}", where="/recommendation/time_interval_s")
        for i, v in enumerate(span):
            _optional(v, f"/recommendation/time_interval_s/{i}", ge=0.0)
    constraints = _object(doc["constraints"], "/constraints")
    number(constraints.get("target"), where="/constraints/target")
    _optional(constraints.get("deadline_s"), "/constraints/deadline_s", ge=0.0)
    _optional(constraints.get("budget"), "/constraints/budget", ge=0.0)
    _optional(constraints.get("confidence"), "/constraints/confidence", gt=0.0, lt=1.0)
    if not isinstance(doc["workload"], str):
        raise BadValue(f"must be the workload's name, got {excerpt(doc['workload'])}", where="/workload")
    if doc["cost_unit"] not in COST_UNITS:
        raise BadValue(f"must be one of {', '.join(COST_UNITS)}, got {excerpt(doc['cost_unit'])}", where="/cost_unit")
    number(doc["interval"], where="/interval", gt=0.0, lt=1.0)
    _optional(doc.get("lr_scale"), "/lr_scale", gt=0.0)
    spot = doc.get("spot")
    if spot is not None:
        _optional(_object(spot, "/spot").get("checkpoint_interval_s"), "/spot/checkpoint_interval_s", gt=0.0)
    return {**doc, "plan": plan, "recommendation": {**choice, "global_batch": global_batch}}


def _reason(doc: Mapping[str, Any]) -> str:
    """A saved answer's reason as one line of its own words (excerpt() quoted it as a Python
    string: 'the job\\'s curve ...'); the error printer escapes what a terminal would act on."""
    return " ".join(str(doc.get("reason", "")).split())[:300]


def _fields(doc: Mapping[str, Any], names: tuple[str, ...], *, what: str) -> None:
    missing = [n for n in names if n not in doc]
    if missing:
        raise InputError(f"the answer has no {', '.join(repr(m) for m in missing)}: {what}")


def answer_document(doc: Any) -> Mapping[str, Any]:
    """The recommendation document of a saved answer: a recommend answer as it is, a
    replan answer whose decision is ``switch`` as the document of its ``best`` option (its
    ``plan``, the remaining deadline and budget, the learning-rate factor). Raises
    :class:`~cotune.errors.InfeasibleError` when there is nothing to submit (infeasible, or
    a replan that stays) and :class:`~cotune.errors.InputError` for a document that is no
    cotune answer."""
    if not isinstance(doc, Mapping):
        raise InputError(f"the answer must be a JSON object (cotune recommend/replan --json), got {type(doc).__name__}")
    if doc.get("status") == "error" and isinstance(doc.get("error"), Mapping):
        # An error.v1 document: what `--json` printed when the question failed, or a 4xx body.
        error = doc["error"]
        message = " ".join(str(error.get("message", "")).split())[:300]  # one line; error() escapes the rest
        code = " ".join(str(error.get("code", "")).split())[:40]
        raise InputError(f"the answer is an error ({code}), not a plan: {message}; fix the question and ask again")
    version = doc.get("schema_version", 1)  # a document built by hand without one: the version this cotune writes
    if isinstance(version, bool) or version not in SCHEMA_VERSIONS:
        raise BadValue(f"is {excerpt(version)}, and this cotune reads version {', '.join(map(str, SCHEMA_VERSIONS))}: "
                       "render it with the cotune that wrote it, or ask this one again", where="/schema_version")
    if "decision" not in doc:  # a recommend answer: rendered as it is
        _fields(doc, ("status", "plan", "recommendation", "constraints", "workload", "cost_unit", "interval"),
                what="give the output of 'cotune recommend --json' or 'cotune replan --json' (or the service's answer)")
        if doc["status"] not in STATUSES:
            raise BadValue(f"must be one of {', '.join(STATUSES)}, got {excerpt(doc['status'])}", where="/status")
        if doc["status"] == "ok":
            return _check_rendered(doc)
        return doc
    decision = doc["decision"]
    if decision == "stay":
        raise InfeasibleError("the re-plan answer is 'stay': the job goes on where it runs, so there is no new job to "
                              f"submit ({_reason(doc)})")
    if decision == "infeasible":
        raise InfeasibleError(f"the re-plan answer is 'infeasible', so there is no job to render: {_reason(doc)}")
    if decision != "switch":
        raise InputError(f"the re-plan answer's decision is {excerpt(decision)}: expected 'stay', 'switch' or 'infeasible'")
    _fields(doc, ("best", "plan", "remaining_deadline_s", "cost_unit"),
            what="a re-plan answer renders from its 'plan', which answers since 2026-12-05 carry: ask again")
    best, plan = _object(doc["best"], "/best"), _object(doc["plan"], "/plan")
    target = doc.get("target", best.get("metric"))
    if target is None:
        raise InputError("the re-plan answer names no target: give the answer as cotune wrote it")
    if best.get("workers") != plan.get("workers"):
        raise BadValue(f"runs {excerpt(best.get('workers'))} workers, but the answer's plan lays out "
                       f"{excerpt(plan.get('workers'))}: give the answer as cotune wrote it", where="/best/workers")
    workload = doc.get("workload") if doc.get("workload") is not None else doc.get("job")
    out = {
        "schema_version": version,
        "status": "ok",
        "workload": workload if workload is not None else "job",
        # A switch is a new submission of the same job: its name must differ from the running one's.
        "switch": True,
        "cost_unit": doc["cost_unit"],
        "interval": doc["interval"] if doc.get("interval") is not None else 0.9,
        "plan": plan,
        "recommendation": {
            "global_batch": best.get("global_batch"), "time_s": best.get("time_s"), "cost": best.get("cost"),
            "time_interval_s": best.get("time_interval_s"), "p_success": best.get("p_success"),
        },
        # The re-plan's own constraints: what is left of the deadline and of the budget.
        "constraints": {"target": target, "deadline_s": doc.get("remaining_deadline_s"), "budget": doc.get("budget_left"),
                        "confidence": doc.get("confidence")},
        "lr_scale": doc.get("lr_scale"),
        # best's checkpoint interval (a spot or mixed option): its time and cost assume it, so
        # the job's script needs it as a recommend answer's spot block gives it.
        "spot": doc.get("spot"),
        # What the GPU-type warning reads: the types the re-plan weighed (and its two rows),
        # so a switch chosen among several types is warned about as a recommend answer is.
        "gpus": doc.get("gpus"), "stay": doc.get("stay"), "best": doc.get("best"),
    }
    try:
        return _check_rendered(out)
    except BadValue as exc:
        # the document's own pointers: /best/... for what came from best
        where = exc.where.replace("/recommendation/", "/best/", 1).replace("/constraints/deadline_s", "/remaining_deadline_s")
        where = where.replace("/constraints/budget", "/budget_left").replace("/constraints/", "/")
        raise BadValue(exc.detail, where=where) from None
