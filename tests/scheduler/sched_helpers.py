"""Shared helpers of the scheduler tests (a unique module name: test folders share sys.path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
REPO = HERE.parent.parent
EXAMPLE = "cifar10-resnet18"
# A small, quick question used across the tests (fits in ~1 s, then cached).
BASE_REQUEST: dict[str, Any] = {
    "profile": EXAMPLE,
    "target": 0.94,
    "deadline_s": 1800,
    "max_workers": 16,
    "gpus_per_host": 4,
    "prices": {"t4": 0.526},
}


def example_records(name: str = EXAMPLE) -> list[dict[str, Any]]:
    from cotune.examples import example_path

    return [json.loads(line) for line in example_path(name).read_text().splitlines() if line.strip()]


def without_timing(doc: dict[str, Any]) -> dict[str, Any]:
    out = dict(doc)
    out.pop("solve_time_s", None)
    return out




def closed(node: Any) -> Any:
    """additionalProperties: false wherever a CRD schema lists properties (SOURCE.md's advice): typos fail."""
    if isinstance(node, dict):
        out = {k: closed(v) for k, v in node.items()}
        if "properties" in out and "additionalProperties" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [closed(v) for v in node]
    return node
