"""PyTorchJob (``kubeflow.org/v1``) + Volcano PodGroup / Kueue labels from a plan.

Layout. The plan says ``workers`` on ``hosts`` machines. When the hosts split the
workers evenly (``workers = hosts × k``), the job runs ``hosts`` identical pods of ``k``
GPUs each — a pod never spans machines, so the packing is exact. Otherwise it runs one
pod per GPU and asks the scheduler to pack them (preferred pod affinity on
``kubernetes.io/hostname``); Kubernetes cannot promise an exact host count there.

Elasticity. The plan's ``elastic`` range (worker counts that still meet target, deadline
and budget at the same local batch) becomes ``elasticPolicy.minReplicas/maxReplicas``
in pods: ``⌈min_workers / k⌉ .. ⌊max_workers / k⌋``. A job without a range gets a fixed
Master + Worker layout.

Gang. Volcano: ``runPolicy.schedulingPolicy`` (the training operator's gang hook) plus
an explicit PodGroup with ``minMember`` = the pods that must start together (all of
them, or the elastic minimum) and ``minResources`` their GPUs. Kueue: the
``kueue.x-k8s.io/queue-name`` label; Kueue admits the job as a whole.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

from cotune.errors import InfeasibleError, InputError

__all__ = ["GANGS", "JobOptions", "Layout", "layout_for", "render_manifests", "to_yaml"]

GANGS = ("volcano", "kueue", "none")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
JOB_LABEL = "cotune.dev/job"


@dataclass(frozen=True)
class JobOptions:
    """What the recommendation does not know: names, image, command, the gang scheduler.

    name : the PyTorchJob's name (RFC 1123 label, at most 50 characters: pod names add
        a suffix such as ``-worker-12``).
    gang : ``"volcano"``, ``"kueue"`` or ``"none"``.
    queue : Volcano queue or Kueue LocalQueue name (default ``"default"``).
    elastic : use the plan's elastic range when it has one.
    """

    name: str
    image: str
    namespace: str = "default"
    command: tuple[str, ...] = ()
    gang: Literal["volcano", "kueue", "none"] = "volcano"
    queue: str = "default"
    elastic: bool = True
    gpu_resource: str = "nvidia.com/gpu"
    node_selector: Mapping[str, str] = field(default_factory=dict)
    max_restarts: int = 3

    def __post_init__(self) -> None:
        for label, value, limit in (("name", self.name, 50), ("namespace", self.namespace, 63)):
            if not (len(value) <= limit and _DNS_LABEL.match(value)):
                raise InputError(
                    f"{label} {value!r} is not a valid Kubernetes name: use at most {limit} lower-case letters, "
                    "digits and '-', starting and ending with a letter or digit"
                )
        if self.gang not in GANGS:
            raise InputError(f"gang must be one of {', '.join(GANGS)}, got {self.gang!r}")
        if not (len(self.queue) <= 63 and _DNS_LABEL.match(self.queue)):
            raise InputError(f"queue {self.queue!r} is not a valid Kubernetes name (lower-case letters, digits, '-')")
        if not self.image.strip():
            raise InputError("image must be a container image reference, e.g. ghcr.io/me/train:1.0")
        if self.max_restarts < 0:
            raise InputError(f"max_restarts must be >= 0, got {self.max_restarts}")


@dataclass(frozen=True)
class Layout:
    """Pods of the job: ``pods`` × ``gpus_per_pod``; elastic bounds in pods."""

    pods: int
    gpus_per_pod: int
    min_pods: int
    max_pods: int
    exact_hosts: bool

    @property
    def elastic(self) -> bool:
        return self.max_pods > self.min_pods


def layout_for(plan: Mapping[str, Any], *, elastic: bool = True) -> Layout:
    """Pods from a plan (the ``plan`` object of a recommendation document)."""
    workers, hosts = int(plan["workers"]), int(plan["hosts"])
    per_host = [int(v) for v in plan["workers_per_host"]]
    if len(set(per_host)) == 1 and per_host[0] * hosts == workers:
        k, exact = per_host[0], True
    else:
        k, exact = 1, False
    pods = workers // k
    lo, hi = pods, pods
    if elastic:
        lo = min(pods, math.ceil(int(plan["elastic"]["min_workers"]) / k))
        hi = max(pods, int(plan["elastic"]["max_workers"]) // k)
    return Layout(pods=pods, gpus_per_pod=k, min_pods=lo, max_pods=hi, exact_hosts=exact)


def _container(doc: Mapping[str, Any], opts: JobOptions, gpus: int) -> dict[str, Any]:
    plan, choice = doc["plan"], doc["recommendation"]
    env = {
        "COTUNE_GPU": plan["gpu"],
        "COTUNE_WORKERS": str(plan["workers"]),
        "COTUNE_LOCAL_BATCH": str(plan["local_batch"]),
        "COTUNE_GLOBAL_BATCH": str(choice["global_batch"]),
        "COTUNE_TARGET": repr(float(doc["constraints"]["target"])),
    }
    out: dict[str, Any] = {
        "name": "pytorch",  # the training operator finds the container by this name
        "image": opts.image,
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "resources": {"limits": {opts.gpu_resource: gpus}, "requests": {opts.gpu_resource: gpus}},
    }
    if opts.command:
        out["command"] = list(opts.command)
    return out


def _template(doc: Mapping[str, Any], opts: JobOptions, layout: Layout) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": opts.name, "app.kubernetes.io/managed-by": "cotune", JOB_LABEL: opts.name}
    meta: dict[str, Any] = {"labels": labels}
    spec: dict[str, Any] = {"containers": [_container(doc, opts, layout.gpus_per_pod)]}
    if opts.gang == "volcano":
        meta["annotations"] = {"scheduling.k8s.io/group-name": opts.name}
        spec["schedulerName"] = "volcano"
    if opts.node_selector:
        spec["nodeSelector"] = dict(opts.node_selector)
    if layout.max_pods > 1 and layout.gpus_per_pod < int(doc["plan"]["gpus_per_host"]):
        # Pack the job's pods onto few machines: prefer nodes already running one of them.
        spec["affinity"] = {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {JOB_LABEL: opts.name}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            }
        }
    return {"metadata": meta, "spec": spec}


def _replica(replicas: int, template: Mapping[str, Any]) -> dict[str, Any]:
    return {"replicas": replicas, "restartPolicy": "OnFailure", "template": template}


def render_manifests(doc: Mapping[str, Any], opts: JobOptions) -> list[dict[str, Any]]:
    """The manifests for a recommendation document (``Recommendation.to_dict()`` or the
    HTTP answer): the PyTorchJob, preceded by a PodGroup when ``opts.gang == "volcano"``."""
    if doc.get("status") != "ok" or doc.get("plan") is None:
        relax = "; ".join(doc.get("relax") or []) or "relax the constraints"
        raise InfeasibleError(f"nothing is feasible, so there is no job to render: {relax}")
    plan, choice = doc["plan"], doc["recommendation"]
    layout = layout_for(plan, elastic=opts.elastic)
    template = _template(doc, opts, layout)
    labels = {"app.kubernetes.io/managed-by": "cotune", JOB_LABEL: opts.name}
    if opts.gang == "kueue":
        labels["kueue.x-k8s.io/queue-name"] = opts.queue
    annotations = {
        "cotune.dev/workload": str(doc["workload"]),
        "cotune.dev/plan": f"{plan['workers']}x{plan['gpu']} ({plan['market']}) on {plan['hosts']} host{'s' if plan['hosts'] != 1 else ''}, local batch {plan['local_batch']}",
        "cotune.dev/predicted-time-s": f"{choice['time_s']:.0f}" if choice["time_s"] is not None else "unknown",
        "cotune.dev/predicted-cost": f"{choice['cost']:.4g} {doc['cost_unit']}" if choice["cost"] is not None else "unknown",
    }
    if doc["constraints"].get("deadline_s") is not None:
        annotations["cotune.dev/deadline-s"] = f"{doc['constraints']['deadline_s']:.0f}"
    spec: dict[str, Any] = {"runPolicy": {"cleanPodPolicy": "None"}}
    gang_pods = layout.min_pods
    if layout.elastic:
        spec["pytorchReplicaSpecs"] = {"Worker": _replica(layout.pods, template)}
        spec["elasticPolicy"] = {
            "minReplicas": layout.min_pods,
            "maxReplicas": layout.max_pods,
            "rdzvBackend": "c10d",
            "maxRestarts": opts.max_restarts,
        }
    else:
        specs = {"Master": _replica(1, template)}
        if layout.pods > 1:
            specs["Worker"] = _replica(layout.pods - 1, template)
        spec["pytorchReplicaSpecs"] = specs
        gang_pods = layout.pods
    spec["nprocPerNode"] = str(layout.gpus_per_pod)  # a string in the CRD ("auto", "gpu", or a number)
    out: list[dict[str, Any]] = []
    if opts.gang == "volcano":
        gpus = gang_pods * layout.gpus_per_pod
        spec["runPolicy"]["schedulingPolicy"] = {"minAvailable": gang_pods, "queue": opts.queue}
        out.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": opts.name, "namespace": opts.namespace, "labels": dict(labels)},
                "spec": {"minMember": gang_pods, "minResources": {opts.gpu_resource: str(gpus)}, "queue": opts.queue},
            }
        )
    out.append(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": opts.name, "namespace": opts.namespace, "labels": labels, "annotations": annotations},
            "spec": spec,
        }
    )
    return out


def to_yaml(manifests: Sequence[Mapping[str, Any]]) -> str:
    """Multi-document YAML (PyYAML ships with optuna, a core dependency)."""
    import yaml

    return "---\n".join(yaml.safe_dump(dict(m), sort_keys=False, default_flow_style=False) for m in manifests)
