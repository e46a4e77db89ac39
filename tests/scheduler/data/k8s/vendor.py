"""Regenerate the vendored CRD schemas from ``../shared/data/k8s-schemas`` (see NOTICE.md).

Each output is the ``spec.versions[name].schema.openAPIV3Schema`` of one upstream CRD,
with every ``description`` removed (size: the PyTorchJob CRD is 609 kB with them).
Nothing else is changed.

    python tests/scheduler/data/k8s/vendor.py ../shared/data/k8s-schemas tests/scheduler/data/k8s
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

# output name → (file under k8s-schemas/, version)
CRDS = {
    "pytorchjob.kubeflow.org.v1.json": ("kubeflow-training-operator/kubeflow.org_pytorchjobs.yaml", "v1"),
    "podgroup.scheduling.volcano.sh.v1beta1.json": ("volcano/scheduling.volcano.sh_podgroups.yaml", "v1beta1"),
}


def _strip(node: Any) -> Any:
    if isinstance(node, dict):
        # "description" is a schema keyword only beside other keywords; a property *named*
        # description (inside "properties") is kept.
        return {k: (_strip_props(v) if k == "properties" else _strip(v)) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def _strip_props(props: dict[str, Any]) -> dict[str, Any]:
    return {k: _strip(v) for k, v in props.items()}


def main(argv: list[str]) -> int:
    src, out = Path(argv[0]), Path(argv[1])
    for name, (path, version) in CRDS.items():
        crd = yaml.safe_load((src / path).read_text())
        (entry,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
        schema = _strip(entry["schema"]["openAPIV3Schema"])
        (out / name).write_text(json.dumps(schema, separators=(",", ":"), sort_keys=True) + "\n")
        print(name, (out / name).stat().st_size, "bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
