"""Kubeflow jobs from a plan: a Trainer v2 ``TrainJob`` (``trainer.kubeflow.org/v1alpha1``)
or a v1 ``PyTorchJob`` (``kubeflow.org/v1``), with Volcano / Kueue gang scheduling.

Layout. The plan says ``workers`` on ``hosts`` machines. When the hosts split the
workers evenly (``workers = hosts × k``), the job runs ``hosts`` identical pods of ``k``
GPUs each — a pod never spans machines, so the packing is exact; with several hosts whose
pods leave room on a node (``k < gpus_per_host``) a required pod anti-affinity on
``kubernetes.io/hostname`` keeps them one a node, as planned. Otherwise it runs one pod
per GPU and asks the scheduler to spread them evenly over nodes where the plan takes more
hosts than the workers need (a soft topology spread; for a TrainJob a preferred pod
anti-affinity), else to pack them (preferred pod affinity on ``kubernetes.io/hostname``);
Kubernetes cannot promise an exact host count there.

Elasticity. The plan's ``elastic`` range (worker counts that still meet target, deadline
and budget at the same local batch) becomes ``elasticPolicy.minReplicas/maxReplicas``
in pods: ``⌈min_workers / k⌉ .. ⌊max_workers / k⌋``. A job without a range gets a fixed
Master + Worker layout.

TrainJob (``kind="trainjob"``). Trainer v2 has no elastic policy: the job runs
``numNodes`` pods of ``numProcPerNode`` GPUs, fixed per submission; a resize is a new
submission (``docs/scheduler.md``). The plan's feasible range is kept in the
``cotune.dev/workers-range`` annotation so a scheduler knows which new sizes still meet
the target and the deadline. Host packing goes in ``runtimePatches`` (the runtime's
``node`` replicated job); the runtime is named by ``runtimeRef`` (default the
``torch-distributed`` ClusterTrainingRuntime).

Gang. Volcano: ``runPolicy.schedulingPolicy`` (the training operator's gang hook) plus
an explicit PodGroup with ``minMember`` = the pods that must start together (all of
them, or the elastic minimum) and ``minResources`` their GPUs. Kueue: the
``kueue.x-k8s.io/queue-name`` label; Kueue admits the job as a whole. A TrainJob gets
the Kueue label, or for Volcano the ``scheduling.volcano.sh/queue-name`` annotation (the
runtime's ``podGroupPolicy`` makes the PodGroup).
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

from cotune._checks import _is_bool, excerpt
from cotune.errors import InfeasibleError, InputError
from cotune.k8s._names import (
    annotation_text,
    check_extended_resource,
    check_image,
    check_label_key,
    check_label_value,
    check_name,
    check_subdomain,
    check_toleration,
    job_name_max,
    parse_toleration,
)

__all__ = [
    "DEFAULT_IMAGE", "GANGS", "KINDS", "JobOptions", "Layout", "layout_for", "manifest_warnings", "render_manifests", "to_yaml",
]

GANGS = ("volcano", "kueue", "none")
KINDS = ("trainjob", "pytorchjob")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
JOB_LABEL = "cotune.dev/job"
#: Most tolerations a job's pods may carry: the Trainer v2 CRD's limit on a TrainJob's pod
#: template (the PyTorchJob CRD sets none; both kinds are held to the smaller).
MAX_TOLERATIONS = 128
#: The PyTorchJob image when none is given (with a warning: it runs no training of yours).
DEFAULT_IMAGE = "pytorch/pytorch:latest"


@dataclass(frozen=True)
class JobOptions:
    """What the recommendation does not know: kind, names, image, command, the gang scheduler.

    kind : ``"trainjob"`` (Kubeflow Trainer v2) or ``"pytorchjob"`` (the v1 operator).
    name : the job's name: DNS-1035 (starts with a letter), at most 50 characters for a
        PyTorchJob (pods are ``NAME-worker-12``) and 46 for a TrainJob (its JobSet's pods are
        ``NAME-node-0-12-abcde``, which the JobSet webhook holds to 63; fewer for over 1000 nodes).
    image, command : the training container; the command a sequence of words
        (``("torchrun", "train.py")``: one string is refused). Without an image a TrainJob uses its
        runtime's and a PyTorchJob :data:`DEFAULT_IMAGE`; without a command the image's
        entrypoint runs — both almost never what you want, so :meth:`warnings` says so.
    gang : ``"volcano"``, ``"kueue"`` or ``"none"``.
    queue : Volcano queue or Kueue LocalQueue name (default ``"default"``).
    elastic : PyTorchJob only: use the plan's elastic range when it has one.
    node_selector : node labels the pods require (e.g. the provider's spot label).
    gpu_labels : per GPU type, the node labels that select its nodes (``{"v100":
        {"nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB"}}``): the chosen type's join the
        node selector, so a plan made for V100s does not land on T4 nodes. A scheduler
        passes its whole inventory; only the chosen type's are used.
    tolerations : taints the pods tolerate, as ``KEY[=VALUE][:EFFECT]`` text or mappings of
        ``key``, ``operator``, ``value``, ``effect`` (kept as checked mappings): AKS taints
        its spot nodes ``kubernetes.azure.com/scalesetpriority=spot:NoSchedule``. At most
        :data:`MAX_TOLERATIONS`.
    runtime, runtime_kind : the TrainJob's ``runtimeRef``.
    """

    name: str
    image: str | None = None
    namespace: str = "default"
    command: tuple[str, ...] = ()
    gang: Literal["volcano", "kueue", "none"] = "volcano"
    queue: str = "default"
    elastic: bool = True
    gpu_resource: str = "nvidia.com/gpu"
    node_selector: Mapping[str, str] = field(default_factory=dict)
    gpu_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, str], ...] = ()
    max_restarts: int = 3
    kind: Literal["trainjob", "pytorchjob"] = "pytorchjob"
    runtime: str = "torch-distributed"
    runtime_kind: Literal["ClusterTrainingRuntime", "TrainingRuntime"] = "ClusterTrainingRuntime"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"kind must be one of {', '.join(KINDS)}, got {annotation_text(str(self.kind), limit=40)!r}")
        # The name's limit is the kind's: a TrainJob's pods carry a longer suffix than a PyTorchJob's.
        check_name(self.name, what="name", limit=job_name_max(kind=self.kind), kind=self.kind)
        if not (isinstance(self.namespace, str) and len(self.namespace) <= 63 and _DNS_LABEL.fullmatch(self.namespace)):
            raise InputError(
                f"namespace {annotation_text(str(self.namespace), limit=40)!r} is not a valid Kubernetes name: use at most 63 "
                "lower-case letters, digits and '-', starting and ending with a letter or digit"
            )
        if self.gang not in GANGS:
            raise InputError(f"gang must be one of {', '.join(GANGS)}, got {annotation_text(str(self.gang), limit=40)!r}")
        # A Volcano Queue or a Kueue LocalQueue is named as objects are (a DNS-1123 subdomain:
        # 'team.a'), and Kueue's queue-name label holds it, so at most 63 characters.
        if not (isinstance(self.queue, str) and len(self.queue) <= 63 and _DNS_SUBDOMAIN.fullmatch(self.queue)):
            raise InputError(f"queue {annotation_text(str(self.queue), limit=40)!r} is not a valid queue name: at most 63 "
                             "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit")
        # numpy's bool_ and integers (options built from a DataFrame) are taken as the values
        # they are; their type is named where it is refused (np.int64(3) read "got 3").
        if _is_bool(self.elastic):
            object.__setattr__(self, "elastic", bool(self.elastic))
        if not isinstance(self.elastic, bool):
            raise InputError(f"elastic must be True or False, got {excerpt(self.elastic)} ({type(self.elastic).__name__})")
        if self.image is not None:
            check_image(self.image)
        object.__setattr__(self, "command", _command_words(self.command))
        check_extended_resource(self.gpu_resource, what="gpu resource")
        if not isinstance(self.node_selector, Mapping):
            raise InputError(f"node_selector must map label keys to values, e.g. {{'nvidia.com/gpu.product': 'Tesla-T4'}}, "
                             f"got {excerpt(self.node_selector)}")
        object.__setattr__(self, "node_selector", dict(self.node_selector))
        for key, value in self.node_selector.items():
            check_label_key(key, what="node selector")
            check_label_value(value, what="node selector")
        if not isinstance(self.gpu_labels, Mapping):
            raise InputError(f"gpu_labels must map gpu types to node labels, got {annotation_text(str(self.gpu_labels), limit=40)!r}")
        labels: dict[str, dict[str, str]] = {}
        for gpu, selector in self.gpu_labels.items():
            if not isinstance(gpu, str) or not gpu.strip() or not isinstance(selector, Mapping) or not selector:
                raise InputError(f"gpu_labels: {annotation_text(str(gpu), limit=40)!r} must name a gpu type and map it to "
                                 "node labels, e.g. {'v100': {'nvidia.com/gpu.product': 'Tesla-V100-SXM2-16GB'}}")
            for key, value in selector.items():
                check_label_key(key, what=f"gpu label of {gpu.strip().lower()}")
                check_label_value(value, what=f"gpu label of {gpu.strip().lower()}")
            labels[gpu.strip().lower()] = dict(selector)
        object.__setattr__(self, "gpu_labels", labels)  # gpu names compared as every door compares them
        if not isinstance(self.tolerations, (tuple, list)):  # a lone "key=v:Effect" or mapping is not a sequence of them
            raise InputError(f"tolerations must be a sequence of tolerations, got {annotation_text(str(self.tolerations), limit=40)!r}")
        if len(self.tolerations) > MAX_TOLERATIONS:
            # Past it a TrainJob fails its own CRD's schema at kubectl apply; counted before each is parsed.
            raise InputError(f"toleration count {len(self.tolerations)} is over the {MAX_TOLERATIONS} a job's pods may carry "
                             "(the Trainer v2 CRD's limit): keep only the taints the job's nodes carry")
        # Checked once, kept as the plain mappings the pod spec takes ("a=b:NoSchedule" text too).
        object.__setattr__(self, "tolerations", tuple(
            parse_toleration(t) if isinstance(t, str) else check_toleration(dict(t) if isinstance(t, Mapping) else t)
            for t in self.tolerations))
        check_subdomain(self.runtime, what="runtime")
        if self.runtime_kind not in ("ClusterTrainingRuntime", "TrainingRuntime"):
            raise InputError(f"runtime kind must be ClusterTrainingRuntime or TrainingRuntime, got {self.runtime_kind!r}")
        if isinstance(self.max_restarts, numbers.Integral) and not _is_bool(self.max_restarts):
            object.__setattr__(self, "max_restarts", int(self.max_restarts))
        if isinstance(self.max_restarts, bool) or not isinstance(self.max_restarts, int) or self.max_restarts < 0:
            raise InputError(f"max_restarts must be a whole number >= 0, e.g. 3, got {excerpt(self.max_restarts)} "
                             f"({type(self.max_restarts).__name__})")

    def warnings(self) -> list[str]:
        """What the rendered job will do that is probably not meant (the CLI prints these on stderr)."""
        out = []
        if self.image is None:
            where = f"the {self.runtime} runtime's image" if self.kind == "trainjob" else DEFAULT_IMAGE
            out.append(f"warning: no --image given: the job runs {where}, not your training image")
        if not self.command:
            out.append("warning: no --command given: the container runs its image's default entrypoint, not your training")
        if self.kind == "trainjob" and self.gang == "volcano":
            # Trainer v2 makes the PodGroup only from its runtime's podGroupPolicy.volcano, and
            # the stock torch-distributed runtime (v2.3.0) has none: the pods then start one by one.
            out.append(f"warning: a TrainJob is gang-scheduled by Volcano only if its runtime ({self.runtime}) has "
                       "podGroupPolicy.volcano (the stock torch-distributed runtime has none): add it to the runtime, or "
                       "use --gang kueue or --kind pytorchjob")
        return out


def _command_words(command: object) -> tuple[str, ...]:
    """The container command as a tuple of words, checked: a sequence of text, each word UTF-8
    text of at most 64 KiB without NUL, at most 128 words. One string is refused, not read as
    a sequence of its characters ("torchrun train.py" ran as t, o, r, c, ...)."""
    if isinstance(command, str):
        raise InputError(f"command must be a sequence of words, e.g. ('torchrun', 'train.py'), got the text "
                         f"{excerpt(command)}: split it into words (shlex.split)")
    if not isinstance(command, (tuple, list)):
        raise InputError(f"command must be a sequence of words, e.g. ('torchrun', 'train.py'), got {excerpt(command)}")
    for i, word in enumerate(command):
        if not isinstance(word, str):
            raise InputError(f"command word {i} is {excerpt(word)}, not text: give every word as a string, e.g. '1'")
        if "\x00" in word or len(word) > 65536:
            raise InputError("command words must be at most 64 KiB and hold no NUL character")
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate: bytes of the command line the locale could not decode (Python
            # keeps them as \udcXX), which the manifest would carry as the text "\udcff".
            raise InputError(f"command word {i} ({excerpt(word)}) is not valid UTF-8 text: give the command in "
                             "UTF-8 (check the terminal's encoding, LANG/LC_ALL)") from None
    if len(command) > 128:
        raise InputError(f"command has {len(command)} words, over the 128 a TrainJob allows: use a script")
    return tuple(command)


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


def _env(doc: Mapping[str, Any]) -> dict[str, str]:
    plan, choice = doc["plan"], doc["recommendation"]
    checkpoint_s = _checkpoint_interval_s(doc)
    return {
        "COTUNE_GPU": plan["gpu"],
        "COTUNE_WORKERS": str(plan["workers"]),
        "COTUNE_LOCAL_BATCH": str(plan["local_batch"]),
        "COTUNE_GLOBAL_BATCH": str(choice["global_batch"]),
        # A local batch measured only with gradient accumulation: the script must hold the
        # micro-batch and step the optimizer every COTUNE_ACCUM_STEPS of them, or it runs
        # out of memory at the whole local batch (the plan's probes never held it at once).
        **({"COTUNE_ACCUM_STEPS": str(plan["accum_steps"]),
            "COTUNE_MICRO_BATCH": str(plan["local_batch"] // plan["accum_steps"])}
           if plan.get("accum_steps", 1) > 1 else {}),
        "COTUNE_TARGET": repr(float(doc["constraints"]["target"])),
        # A re-plan that changes the batch: the factor the training script scales its
        # learning rate by when it resumes from the checkpoint (the answer's lr_rule).
        **({"COTUNE_LR_SCALE": repr(float(doc["lr_scale"]))} if doc.get("lr_scale") is not None else {}),
        # A spot or mixed plan's time and cost assume a checkpoint this often: the script needs it.
        **({"COTUNE_CHECKPOINT_INTERVAL_S": f"{checkpoint_s:.0f}"} if checkpoint_s is not None else {}),
    }


def _checkpoint_interval_s(doc: Mapping[str, Any]) -> float | None:
    spot = doc.get("spot")
    value = spot.get("checkpoint_interval_s") if isinstance(spot, Mapping) else None
    return None if value is None else float(value)


#: The device name of a plan profiled on CPU (``cotune profile --device cpu``): its workers
#: are processes on cores, and a pod that asks for a GPU for each would wait for GPU nodes.
CPU = "cpu"


def _on_cpu(doc: Mapping[str, Any]) -> bool:
    return str(doc["plan"]["gpu"]).strip().lower() == CPU


def _gpu_resources(doc: Mapping[str, Any], opts: JobOptions, *, gpus: int | str) -> dict[str, Any] | None:
    """A pod's ``resources`` for ``gpus`` devices of ``opts.gpu_resource``; None for a CPU
    plan, which requests no extended resource (the profile does not record a worker's
    cores, so no cpu request is set either: :func:`manifest_warnings` says so)."""
    if _on_cpu(doc):
        return None
    return {"limits": {opts.gpu_resource: gpus}, "requests": {opts.gpu_resource: gpus}}


def _container(doc: Mapping[str, Any], opts: JobOptions, gpus: int) -> dict[str, Any]:
    env = _env(doc)
    out: dict[str, Any] = {
        "name": "pytorch",  # the training operator finds the container by this name
        "image": opts.image or DEFAULT_IMAGE,
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }
    resources = _gpu_resources(doc, opts, gpus=gpus)
    if resources is not None:
        out["resources"] = resources
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
    spec.update(_placement(doc, opts, layout))
    return {"metadata": meta, "spec": spec}


def node_selector(doc: Mapping[str, Any], opts: JobOptions) -> dict[str, str]:
    """The pods' node selector: ``opts.node_selector`` and the chosen GPU type's labels
    (``opts.gpu_labels``); a key the two set to different values is refused."""
    out = dict(opts.node_selector)
    gpu = str(doc["plan"]["gpu"]).lower()
    for key, value in opts.gpu_labels.get(gpu, {}).items():
        if out.get(key, value) != value:
            raise InputError(f"the node selector sets {key}={out[key]} and the gpu label of {gpu} (the plan's type) "
                             f"{key}={value}: drop one of them")
        out[key] = value
    return out


def _weighed_gpus(doc: Mapping[str, Any]) -> set[str]:
    """The GPU types the answer shows it weighed: its search space's (``gpus``, in answers
    since 2026-12-05), and for older ones its choice, runner-ups, frontier and cluster (a
    re-plan's: where it stays and where it would go)."""
    # Only what is read: a saved answer may be hand-edited, and none of this is checked above
    # (a 'cluster' of true, a 'runner_ups' of 3 were internal errors).
    def listed(key: str) -> list:
        value = doc.get(key)
        return value if isinstance(value, list) else []

    rows = [doc.get("recommendation"), *listed("runner_ups"), *listed("pareto"), doc.get("stay"), doc.get("best")]
    cluster = doc.get("cluster")
    offered = cluster.get("gpus") if isinstance(cluster, Mapping) else None
    return ({r["gpu"].lower() for r in rows if isinstance(r, Mapping) and isinstance(r.get("gpu"), str)}
            | ({g.lower() for g in offered if isinstance(g, str)} if isinstance(offered, (Mapping, list)) else set())
            | {g.lower() for g in listed("gpus") if isinstance(g, str)})


def _placement(doc: Mapping[str, Any], opts: JobOptions, layout: Layout) -> dict[str, Any]:
    """Node selector and host packing of the job's pods (a pod-spec fragment)."""
    spec: dict[str, Any] = {}
    selector = node_selector(doc, opts)
    if selector:
        spec["nodeSelector"] = selector
    if opts.tolerations:
        spec["tolerations"] = [dict(t) for t in opts.tolerations]
    plan = doc["plan"]
    gpus_per_host, hosts = int(plan["gpus_per_host"]), int(plan["hosts"])
    partial = layout.gpus_per_pod < gpus_per_host  # a node has room for another pod
    # More hosts than the workers need: the plan spreads them on purpose (its time and
    # chance were computed for that layout, e.g. 16 workers as [3, 3, 3, 3, 2, 2] on 8-GPU hosts).
    spread = hosts > math.ceil(int(plan["workers"]) / gpus_per_host)
    job_pods = {"labelSelector": {"matchLabels": {JOB_LABEL: opts.name}}, "topologyKey": "kubernetes.io/hostname"}
    if layout.exact_hosts and hosts > 1 and partial:
        # The plan spreads its workers over hosts, k a host: one pod a node. Packing them
        # instead (the preferred podAffinity below) put 6 workers planned as [2, 2, 2] on
        # 4-GPU nodes as [4, 2], another layout than the one timed and priced.
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [job_pods]}}
    elif spread and partial:
        # An uneven spread (one pod a GPU): spread the pods evenly over nodes; packing them
        # put [3, 3, 3, 3, 2, 2] on two nodes, a layout predicted slower and less likely to
        # succeed. ScheduleAnyway, not DoNotSchedule: with DoNotSchedule every node the
        # selector admits counts, a full node or one without GPUs too, and while one of them
        # holds none of the job's pods no other may hold two, so most of the pods would stay
        # Pending. A TrainJob's runtime patch may not carry topologySpreadConstraints (Trainer
        # v2.3.0 permits affinity, nodeSelector, tolerations, ...): it gets the same soft
        # preference as a preferred podAntiAffinity, which scores a node down by the job's
        # pods already on it.
        if opts.kind == "trainjob":
            spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": job_pods}]}}
        else:
            spec["topologySpreadConstraints"] = [{
                "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {JOB_LABEL: opts.name}}}]
    elif layout.max_pods > 1 and partial:
        # One pod a GPU (or a one-host plan's elastic growth): pack the job's pods onto few
        # machines, preferring nodes already running one of them.
        spec["affinity"] = {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "podAffinityTerm": job_pods}
                ]
            }
        }
    return spec


def _replica(replicas: int, template: Mapping[str, Any]) -> dict[str, Any]:
    return {"replicas": replicas, "restartPolicy": "OnFailure", "template": template}


def _annotations(doc: Mapping[str, Any]) -> dict[str, str]:
    plan, choice = doc["plan"], doc["recommendation"]
    out = {
        "cotune.dev/workload": annotation_text(str(doc["workload"])),
        "cotune.dev/plan": f"{plan['workers']}x{annotation_text(plan['gpu'], limit=60)} ({plan['market']}) on {plan['hosts']} "
        f"host{'s' if plan['hosts'] != 1 else ''}, local batch {plan['local_batch']}"
        + (f" = {plan['local_batch'] // plan['accum_steps']} x {plan['accum_steps']} accumulation steps"
           if plan.get("accum_steps", 1) > 1 else ""),
        "cotune.dev/predicted-time-s": f"{choice['time_s']:.0f}" if choice.get("time_s") is not None else "unknown",
        "cotune.dev/predicted-cost": f"{choice['cost']:.4g} {doc['cost_unit']}" if choice.get("cost") is not None else "unknown",
    }
    # A prediction is a distribution: the interval and the chance travel with the job, so a
    # scheduler reading the manifest sees how sure the plan is, not only its median.
    lo, hi = choice.get("time_interval_s") or (None, None)
    if lo is not None and hi is not None:
        level = _short(100.0 * float(doc["interval"]), below=100.0)
        out["cotune.dev/predicted-time-interval-s"] = f"{lo:.0f}..{hi:.0f} ({level}%)"
    if choice.get("p_success") is not None:
        out["cotune.dev/p-success"] = _short(float(choice["p_success"]), below=1.0)
    if doc["constraints"].get("deadline_s") is not None:
        out["cotune.dev/deadline-s"] = f"{doc['constraints']['deadline_s']:.0f}"
    # The chance above counts the budget (and the confidence the plan was made at): both travel too.
    if doc["constraints"].get("budget") is not None:
        out["cotune.dev/budget"] = f"{doc['constraints']['budget']:.6g} {doc['cost_unit']}"
    if doc["constraints"].get("confidence") is not None:
        out["cotune.dev/confidence"] = _short(float(doc["constraints"]["confidence"]), below=1.0)
    if doc.get("lr_scale") is not None:
        out["cotune.dev/lr-scale"] = f"{doc['lr_scale']:.6g}"
    if (checkpoint_s := _checkpoint_interval_s(doc)) is not None:
        out["cotune.dev/checkpoint-interval-s"] = f"{checkpoint_s:.0f}"
    if _on_cpu(doc):
        # Whoever reads the job sees why its pods ask for no GPU, and what is left to set.
        out["cotune.dev/resources"] = ("cpu plan: no GPU requested; the profile does not record a worker's cores, so no "
                                       "cpu request is set")
    return out


def _short(value: float, *, below: float) -> str:
    """``value`` in 6 significant digits, more where those would round it up to ``below``
    (a chance of 0.9999996 is not "1", an interval level of 99.9 % not "100%"): an annotation
    never reads as a certainty the answer did not give."""
    for digits in range(6, 18):
        text = f"{value:.{digits}g}"
        if not value < below or float(text) < below:
            return text
    return repr(value)


def _feasible(doc: Mapping[str, Any]) -> None:
    if doc.get("status") != "ok" or doc.get("plan") is None:
        hints = doc.get("relax")
        relax = "; ".join(map(str, hints)) if isinstance(hints, list) else ""
        relax = " ".join(relax.split())[:500] or "relax the constraints"  # one line, whatever a saved answer holds
        raise InfeasibleError(f"nothing is feasible, so there is no job to render: {relax}")


def manifest_warnings(doc: Mapping[str, Any], opts: JobOptions) -> list[str]:
    """What the rendered job will do that is probably not meant: the options' own
    (:meth:`JobOptions.warnings`), and a plan priced on spot servers that nothing in the
    manifest sends to spot nodes (its cost and time assume them)."""
    out = opts.warnings()
    market = (doc.get("plan") or {}).get("market")
    if market in ("spot", "mixed") and not opts.node_selector:
        out.append(
            "warning: the plan is priced on spot servers"
            + ("" if market == "spot" else " while on schedule (mixed: on-demand when behind, by a re-plan)") + ", but "
            "nothing in the manifest sends its pods to spot nodes: add --node-selector for your spot node label (e.g. "
            "cloud.google.com/gke-spot=true, eks.amazonaws.com/capacityType=SPOT or "
            "kubernetes.azure.com/scalesetpriority=spot)"
        )
    gpu = str((doc.get("plan") or {}).get("gpu", "")).lower()
    if gpu == CPU:
        out.append(f"warning: the plan is for cpu workers: its pods request no GPU ({opts.gpu_resource}) and, since the "
                   "profile does not record a worker's cores, no cpu either: add a cpu request per worker as the "
                   "profile measured it (cotune profile --cpu-threads, default 1), or the pods may share cores")
    weighed = _weighed_gpus(doc)
    selector = node_selector(doc, opts) if gpu else dict(opts.node_selector)
    # A plan made for one type among several, and nothing that sends its pods to that type's
    # nodes: the scheduler may start it on any GPU, and its time and cost assume this one.
    if gpu and len(weighed) > 1 and gpu not in opts.gpu_labels and not any(_names_gpu(v, gpu=gpu) for v in selector.values()):
        others = ", ".join(sorted(weighed - {gpu}))
        out.append(f"warning: the plan is for {gpu} (the answer weighed {others} too), but nothing in the manifest sends "
                   f"its pods to {gpu} nodes: add --gpu-label {gpu}:KEY=VALUE for your cluster's GPU label (e.g. "
                   "nvidia.com/gpu.product from NVIDIA's GPU feature discovery, cloud.google.com/gke-accelerator on GKE, "
                   "or --node-selector)")
    for key, value in selector.items():
        taint = _TAINTED_SELECTORS.get((key, value))
        if taint is not None and not any(_tolerates(t, taint=taint) for t in opts.tolerations):
            # The pods would wait for nodes they may never run on (Pending, with no error).
            out.append(f"warning: --node-selector {key}={value} picks nodes that carry the taint {taint} by default, and "
                       f"nothing tolerates it: the pods would stay Pending; add --toleration {taint}")
    return out


def _names_gpu(value: str, *, gpu: str) -> bool:
    """Whether a node label value names ``gpu``: its words (split on what is not a letter or
    digit) hold the type's words in a row. A substring is not enough: NVIDIA-A100-SXM4-80GB
    holds "a10" and NVIDIA-L40S "l4", and named neither the A10 nor the L4 a plan was made for."""
    words, wanted = re.split(r"[^a-z0-9]+", value.lower()), re.split(r"[^a-z0-9]+", gpu.lower())
    return any(words[i:i + len(wanted)] == wanted for i in range(len(words) - len(wanted) + 1))


# Node labels whose nodes their provider taints by default: AKS's spot node pools.
_TAINTED_SELECTORS = {("kubernetes.azure.com/scalesetpriority", "spot"): "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"}


def _tolerates(toleration: Mapping[str, str], *, taint: str) -> bool:
    """Whether a checked toleration lets pods onto nodes with ``taint`` (``KEY=VALUE:EFFECT``),
    as the scheduler matches them: the key, then any value (``Exists``) or the taint's
    (``Equal``), then every effect (none given) or the taint's. The key alone is not enough:
    ``KEY=on-demand`` or ``KEY=spot:NoExecute`` leaves the pods Pending on the spot nodes."""
    head, _, effect = taint.partition(":")
    key, _, value = head.partition("=")
    return (toleration.get("key") == key
            and (toleration.get("operator") == "Exists" or toleration.get("value") == value)
            and toleration.get("effect") in (None, "", effect))


def render_manifests(doc: Mapping[str, Any], opts: JobOptions) -> list[dict[str, Any]]:
    """The manifests for an answer: a recommendation document (``Recommendation.to_dict()``
    or the HTTP answer), or a re-plan document that switches (its new configuration,
    :func:`~cotune.k8s.answer_document`): a TrainJob (``opts.kind == "trainjob"``), or a
    PyTorchJob preceded by a PodGroup when ``opts.gang == "volcano"``. Every value read is
    checked first (:class:`~cotune.errors.InputError` naming it by its JSON pointer)."""
    from cotune.k8s._answer import answer_document

    doc = answer_document(doc)
    _feasible(doc)
    if opts.kind == "trainjob":
        return [_trainjob(doc, opts)]
    return _pytorchjob(doc, opts)


def _trainjob(doc: Mapping[str, Any], opts: JobOptions) -> dict[str, Any]:
    plan = doc["plan"]
    layout = layout_for(plan, elastic=False)  # Trainer v2: fixed size per submission
    limit = job_name_max(kind="trainjob", nodes=layout.pods)
    if len(opts.name) > limit:
        # Over 1000 nodes the pod index takes more digits than JobOptions allowed for: the
        # JobSet webhook would refuse the job the trainer makes, after kubectl apply took it.
        raise InputError(f"name {opts.name!r} ({len(opts.name)} characters) is too long for a TrainJob of {layout.pods} nodes: "
                         f"its pods are named NAME-node-0-{layout.pods - 1}-xxxxx, at most 63 characters, so use at most "
                         f"{limit} characters")
    labels = {"app.kubernetes.io/managed-by": "cotune", JOB_LABEL: opts.name}
    annotations = _annotations(doc)
    annotations["cotune.dev/workers-range"] = f"{plan['elastic']['min_workers']}..{plan['elastic']['max_workers']}"
    if opts.gang == "kueue":
        labels["kueue.x-k8s.io/queue-name"] = opts.queue
    elif opts.gang == "volcano":
        annotations["scheduling.volcano.sh/queue-name"] = opts.queue
    trainer: dict[str, Any] = {"numNodes": layout.pods, "numProcPerNode": layout.gpus_per_pod}
    resources = _gpu_resources(doc, opts, gpus=str(layout.gpus_per_pod))
    if resources is not None:
        trainer["resourcesPerNode"] = resources
    trainer["env"] = [{"name": k, "value": v} for k, v in _env(doc).items()]
    if opts.image is not None:
        trainer["image"] = opts.image
    if opts.command:
        trainer["command"] = list(opts.command)
    spec: dict[str, Any] = {
        "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": opts.runtime_kind, "name": opts.runtime},
        "trainer": trainer,
    }
    pod = _placement(doc, opts, layout)
    if pod:
        spec["runtimePatches"] = [
            {
                "manager": "cotune.dev/k8s",
                "trainingRuntimeSpec": {
                    "template": {
                        "spec": {
                            "replicatedJobs": [
                                {"name": "node", "template": {"spec": {"template": {
                                    "metadata": {"labels": {JOB_LABEL: opts.name}}, "spec": pod}}}}
                            ]
                        }
                    }
                },
            }
        ]
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": opts.name, "namespace": opts.namespace, "labels": labels, "annotations": annotations},
        "spec": spec,
    }


def _pytorchjob(doc: Mapping[str, Any], opts: JobOptions) -> list[dict[str, Any]]:
    plan = doc["plan"]
    layout = layout_for(plan, elastic=opts.elastic)
    template = _template(doc, opts, layout)
    labels = {"app.kubernetes.io/managed-by": "cotune", JOB_LABEL: opts.name}
    if opts.gang == "kueue":
        labels["kueue.x-k8s.io/queue-name"] = opts.queue
    annotations = _annotations(doc)
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
        group: dict[str, Any] = {"minMember": gang_pods}
        if not _on_cpu(doc):  # a CPU plan's gang waits for its pods only, not for GPUs it does not use
            group["minResources"] = {opts.gpu_resource: str(gpus)}
        group["queue"] = opts.queue
        out.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": opts.name, "namespace": opts.namespace, "labels": dict(labels)},
                "spec": group,
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


# Plain scalars that a YAML 1.1 reader (kubectl's: go-yaml) takes for something other than a
# string, beyond what PyYAML's own resolver quotes: y/n and the other booleans, numbers with
# an exponent and no dot (1e-3), leading zeros (089), hex/octal/binary, sexagesimal (1:30),
# null and ~, .inf/.nan, timestamps. A string among them is written double-quoted.
_NOT_A_PLAIN_STRING = re.compile(
    r"""^(?:
        [-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?
      | [-+]?0[xX][0-9a-fA-F_]+ | [-+]?0[oO]?[0-7_]+ | [-+]?0[bB][01_]+
      | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?
      | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)
      | y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
      | ~|null|Null|NULL|
      | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}.*
    )$""",
    re.X,
)


def to_yaml(manifests: Sequence[Mapping[str, Any]]) -> str:
    """Multi-document YAML (PyYAML ships with optuna, a core dependency).

    A string that a YAML 1.1 reader would take for a number, a boolean or null is
    double-quoted (:data:`_NOT_A_PLAIN_STRING`): PyYAML writes ``1e-3`` and ``y`` plain,
    and kubectl then reads a command argument as a number or a job named ``y`` as ``true``.
    """
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def string(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        style = '"' if _NOT_A_PLAIN_STRING.match(value) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, string)
    return "---\n".join(yaml.dump(dict(m), Dumper=_Dumper, sort_keys=False, default_flow_style=False) for m in manifests)
