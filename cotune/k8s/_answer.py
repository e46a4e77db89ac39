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

from cotune.errors import InfeasibleError, InputError

__all__ = ["answer_document"]


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
    if "decision" not in doc:  # a recommend answer: rendered as it is
        _fields(doc, ("status", "plan", "recommendation", "constraints", "workload", "cost_unit", "interval"),
                what="give the output of 'cotune recommend --json' or 'cotune replan --json' (or the service's answer)")
        return doc
    decision = doc["decision"]
    if decision == "stay":
        raise InfeasibleError("the re-plan answer is 'stay': the job goes on where it runs, so there is no new job to "
                              f"submit ({doc.get('reason', '')})")
    if decision == "infeasible":
        raise InfeasibleError(f"the re-plan answer is 'infeasible', so there is no job to render: {doc.get('reason', '')}")
    if decision != "switch":
        raise InputError(f"the re-plan answer's decision is {decision!r}: expected 'stay', 'switch' or 'infeasible'")
    _fields(doc, ("best", "plan", "remaining_deadline_s", "cost_unit"),
            what="a re-plan answer renders from its 'plan', which answers since 2026-12-05 carry: ask again")
    best, plan = doc["best"], doc["plan"]
    if not isinstance(best, Mapping) or not isinstance(plan, Mapping):
        raise InputError("the re-plan answer's 'best' and 'plan' must be objects: give the answer as cotune wrote it")
    target = doc.get("target", best.get("metric"))
    if not isinstance(target, (int, float)) or isinstance(target, bool):
        raise InputError("the re-plan answer names no target: give the answer as cotune wrote it")
    return {
        "status": "ok",
        "workload": doc.get("workload") or doc.get("job") or "job",
        "cost_unit": doc["cost_unit"],
        "interval": doc.get("interval") or 0.9,
        "plan": plan,
        "recommendation": {
            "global_batch": best["global_batch"], "time_s": best.get("time_s"), "cost": best.get("cost"),
            "time_interval_s": best.get("time_interval_s"), "p_success": best.get("p_success"),
        },
        # The re-plan's own constraints: what is left of the deadline and of the budget.
        "constraints": {"target": target, "deadline_s": doc.get("remaining_deadline_s"), "budget": doc.get("budget_left"),
                        "confidence": doc.get("confidence")},
        "lr_scale": doc.get("lr_scale"),
    }
