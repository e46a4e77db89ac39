"""Render a recommendation as the Kubernetes objects a scheduler runs: a Kubeflow Trainer
v2 TrainJob (fixed size per submission) or a v1 PyTorchJob (elastic where the plan
allows), gang scheduling with Volcano or Kueue, GPU requests and host packing. Pure
functions: a recommendation document in, manifests (plain ``dict``s) out; ``cotune k8s``
prints them as YAML or JSON."""

from cotune.k8s._answer import answer_document
from cotune.k8s._names import JOB_NAME_MAX, TRAINJOB_NAME_MAX, check_name, derive_name, job_name_max
from cotune.k8s._render import (
    DEFAULT_IMAGE,
    GANGS,
    KINDS,
    JobOptions,
    Layout,
    layout_for,
    manifest_warnings,
    render_manifests,
    to_yaml,
)

__all__ = [
    "DEFAULT_IMAGE",
    "GANGS",
    "JOB_NAME_MAX",
    "KINDS",
    "TRAINJOB_NAME_MAX",
    "JobOptions",
    "Layout",
    "answer_document",
    "check_name",
    "derive_name",
    "job_name_max",
    "layout_for",
    "manifest_warnings",
    "render_manifests",
    "to_yaml",
]
