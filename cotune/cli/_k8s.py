"""``cotune k8s``: the recommended job as Kubernetes manifests (YAML, or JSON with ``--json``)."""

from __future__ import annotations

import argparse
from typing import Any, Mapping

from cotune._request import DEFAULT_MAX_CANDIDATES
from cotune.cli import _args
from cotune.cli._question import add_question_arguments, recommend_from_args

__all__ = ["add_parser", "run"]


def _gpu_label(text: str) -> tuple[str, tuple[str, str]]:
    """``GPU:KEY=VALUE`` (a label key has no ':')."""
    gpu, sep, label = text.partition(":")
    if not sep or not gpu.strip():
        raise argparse.ArgumentTypeError(f"expected GPU:KEY=VALUE such as v100:nvidia.com/gpu.product=Tesla-V100-SXM2-16GB, "
                                         f"got {text[:60]!r}")
    return gpu.strip().lower(), _args.key_text("v100:nvidia.com/gpu.product=Tesla-V100-SXM2-16GB")(label)


def _gpu_labels(given: list[tuple[str, tuple[str, str]]] | None) -> dict[str, dict[str, str]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for gpu, pair in given or ():
        out.setdefault(gpu, []).append(pair)
    return {gpu: _args.unique_pairs(pairs, f"--gpu-label {gpu}:") or {} for gpu, pairs in out.items()}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "k8s",
        help="render the recommended job as a Kubeflow TrainJob or PyTorchJob (+ Volcano / Kueue)",
        description="Recommend as 'cotune recommend' does (same options), then print the job as Kubernetes objects: a "
        "Kubeflow Trainer v2 TrainJob (--kind trainjob: fixed size per submission) or a v1 PyTorchJob (elastic "
        "min/max replicas where the plan allows), GPU requests, host packing, and gang scheduling with Volcano or "
        "Kueue. See docs/scheduler.md.",
        epilog="Exit codes: 0 ok, 1 nothing to render (nothing feasible, or a saved re-plan that stays; nothing "
        "printed on stdout), 2 bad input.",
    )
    add_question_arguments(p, optional=True)
    p.add_argument("--answer", default=None, metavar="FILE",
                   help="render a saved answer instead of solving: the JSON of 'cotune recommend --json' or 'cotune replan "
                        "--json' (a switch: its new configuration), or the service's; '-' reads stdin. Leave out PROFILE "
                        "and the question's options")
    k = p.add_argument_group("manifest")
    k.add_argument("--kind", choices=("trainjob", "pytorchjob"), default="pytorchjob",
                   help="trainjob: Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1); pytorchjob: the v1 training operator (default)")
    k.add_argument("--name", default=None, help="job name, DNS-1035 (default: derived from the workload's name)")
    k.add_argument("--namespace", default="default", help="namespace (default 'default')")
    k.add_argument("--image", default=None, help="training container image (without it: a loud warning, and the runtime's "
                   "image for a TrainJob or pytorch/pytorch:latest for a PyTorchJob)")
    k.add_argument("--command", dest="container_command", default=None, metavar="CMD",
                   help="container command as one shell-quoted string, e.g. 'torchrun train.py --epochs 90'; or give it "
                        "word for word after '--' at the end: cotune k8s ... -- torchrun train.py --epochs 90")
    k.add_argument("--runtime", default="torch-distributed", help="TrainJob: the ClusterTrainingRuntime to use (default torch-distributed)")
    k.add_argument("--gang", choices=("volcano", "kueue", "none"), default="volcano", help="gang scheduler (default volcano)")
    k.add_argument("--queue", default="default", help="Volcano queue or Kueue LocalQueue (default 'default')")
    k.add_argument("--no-elastic", dest="elastic", action="store_false", help="PyTorchJob: fixed size even when the plan allows a range")
    k.add_argument("--gpu-resource", default="nvidia.com/gpu", help="extended resource name of a GPU (default nvidia.com/gpu)")
    k.add_argument("--node-selector", action="append", type=_args.key_text("nvidia.com/gpu.product=Tesla-T4"), default=None, metavar="KEY=VALUE", help="node label to require (repeatable)")
    k.add_argument("--gpu-label", action="append", type=_gpu_label, default=None, metavar="GPU:KEY=VALUE",
                   help="node label of a gpu type's nodes (repeatable; give every type the answer may choose), e.g. "
                        "v100:nvidia.com/gpu.product=Tesla-V100-SXM2-16GB: the chosen type's join the node selector")
    k.add_argument("--toleration", action="append", default=None, metavar="KEY[=VALUE][:EFFECT]",
                   help="taint the pods tolerate (repeatable), e.g. kubernetes.azure.com/scalesetpriority=spot:NoSchedule "
                        "for AKS's spot nodes")
    p.add_argument("--json", action="store_true", help="print the objects as one JSON List (kubectl apply -f accepts it)")
    p.set_defaults(run=run)


def _default_name(doc: Mapping[str, Any], *, kind: str) -> str:
    """The job's name when --name is not given: the workload's; for a re-plan's switch, with
    a suffix of its own (``-r`` and 4 hex digits of the new plan): the switch is a new
    submission beside the running job, and under the running job's name ``kubectl apply``
    would change that job in place (a PyTorchJob) or be refused (a TrainJob's trainer is
    immutable). The same answer always renders the same name, within ``kind``'s limit."""
    import hashlib
    import json

    from cotune.k8s import derive_name, job_name_max

    # The plan's workers bound its pods from above: a TrainJob of over 1000 pods needs a
    # shorter name, and a name the user never gave must not be what refuses the rendering.
    plan = doc.get("plan")
    workers = plan.get("workers") if isinstance(plan, Mapping) else None
    nodes = workers if isinstance(workers, int) and not isinstance(workers, bool) and workers > 0 else None
    workload, limit = str(doc["workload"]), job_name_max(kind=kind, nodes=nodes)
    if not doc.get("switch"):
        return derive_name(workload, limit=limit)
    key = json.dumps({k: doc.get(k) for k in ("plan", "recommendation", "constraints")}, sort_keys=True, default=str)
    return f"{derive_name(workload, limit=limit - 6)}-r{hashlib.sha256(key.encode()).hexdigest()[:4]}"  # 6: "-r" + 4 hex


def _options(args: argparse.Namespace, doc):  # -> JobOptions
    import shlex

    from cotune.cli._args import unique_pairs
    from cotune.errors import InputError
    from cotune.k8s import JobOptions

    argv = getattr(args, "container_argv", None)  # the words after `--`
    if argv is not None and args.container_command is not None:
        raise InputError("the container command is given twice, as --command and after '--': keep one")
    if argv is not None and not argv:
        raise InputError("nothing after '--': give the container's command there (-- torchrun train.py), or leave '--' out")
    try:
        command = argv if argv is not None else (tuple(shlex.split(args.container_command)) if args.container_command else ())
    except ValueError as exc:
        raise InputError(f"--command is not a valid shell word list ({exc}): quote it as one argument") from None
    try:
        return JobOptions(
            kind=args.kind,
            name=args.name if args.name is not None else _default_name(doc, kind=args.kind),
            namespace=args.namespace,
            image=args.image,
            command=command,
            gang=args.gang,
            queue=args.queue,
            elastic=args.elastic,
            gpu_resource=args.gpu_resource,
            node_selector=unique_pairs(args.node_selector, "--node-selector") or {},
            gpu_labels=_gpu_labels(args.gpu_label),
            tolerations=tuple(args.toleration or ()),
            runtime=args.runtime,
        )
    except InputError as exc:
        raise InputError(f"--{str(exc)}" if str(exc).split(" ", 1)[0] in ("name", "image", "namespace", "queue", "runtime", "toleration") else str(exc)) from None


#: The question's options, which a saved answer already answered: given with --answer, they
#: would be ignored, so they are refused (dest, option, default).
_QUESTION = (("profile", "PROFILE", None), ("target", "--target", None), ("deadline", "--deadline", None),
             ("max_workers", "--max-workers", None), ("gpus_per_host", "--gpus-per-host", None),
             ("max_candidates", "--max-candidates", DEFAULT_MAX_CANDIDATES),
             ("cluster", "--cluster", None), ("price", "--price", None),
             ("objective", "--objective", "cost"), ("confidence", "--confidence", None), ("gpu", "--gpu", None),
             ("local_batch", "--local-batch", None), ("hosts", "--hosts", "packed"), ("interval", "--interval", None),
             ("budget", "--budget", None), ("workers", "--workers", None), ("startup", "--startup", None),
             ("global_batch", "--global-batch", None), ("baseline_batch", "--baseline-batch", None),
             ("baseline_workers", "--baseline-workers", None), ("top", "--top", None), ("pareto_limit", "--pareto-limit", None))


def _saved_answer(args: argparse.Namespace):  # -> Mapping: the recommendation document to render
    import sys

    from cotune._checks import file_problem, load_json, not_text_reason
    from cotune.errors import InputError
    from cotune.k8s import answer_document

    given = [option for dest, option, default in _QUESTION if getattr(args, dest, default) != default]
    if given:
        raise InputError(f"--answer renders a saved answer: leave out {', '.join(given)} (the answer already holds "
                         "the question it answered)")
    source = args.answer
    if source == "-":
        if sys.stdin is None:  # started with fd 0 closed (`<&-`): there is no stdin to read
            raise InputError("--answer -: standard input is closed: pipe the answer in (cotune recommend ... --json | "
                             "cotune k8s --answer -) or give the file 'cotune recommend/replan --json' wrote")
        raw = sys.stdin.buffer.read(_MAX_ANSWER_BYTES + 1)
        source = "stdin"
    else:
        problem = file_problem(source)
        if problem is not None:
            raise InputError(f"--answer {source}: {problem}: give the file 'cotune recommend/replan --json' wrote")
        try:
            with open(source, "rb") as fh:
                raw = fh.read(_MAX_ANSWER_BYTES + 1)
        except OSError as exc:
            raise InputError(f"--answer {source}: cannot read it ({exc.strerror or exc}): give the file 'cotune "
                             "recommend/replan --json' wrote") from None
    if len(raw) > _MAX_ANSWER_BYTES:
        raise InputError(f"--answer {source}: larger than {_MAX_ANSWER_BYTES // 2**20} MiB: an answer is a few kB")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        why = not_text_reason(raw)
        raise InputError(f"--answer {source}: {why or 'not UTF-8 text: give the JSON cotune wrote'}") from None
    if "\x00" in text[:8] and not_text_reason(raw):  # UTF-16 without a byte order mark decodes: no JSON error
        raise InputError(f"--answer {source}: {not_text_reason(raw)}")
    try:
        return answer_document(load_json(text, where=f"--answer {source}"))
    except InputError as exc:
        message = str(exc)
        raise InputError(message if message.startswith("--answer ") else f"--answer {source}: {message}") from None


_MAX_ANSWER_BYTES = 16 * 2**20


def run(args: argparse.Namespace) -> int:
    from cotune.cli._output import emit, emit_json, error
    from cotune.errors import EXIT_OK, InputError
    from cotune.k8s import manifest_warnings, render_manifests, to_yaml

    if not args.json:  # YAML needs PyYAML (cotune[k8s]); say so before a solve, not after it as a crash
        import importlib.util

        if importlib.util.find_spec("yaml") is None:
            raise InputError("cotune k8s writes YAML with PyYAML, which is not installed: pip install 'cotune[k8s]', "
                             "or pass --json for the same objects as JSON")
    if args.name is not None:  # a bad name fails before the solve
        from cotune.k8s import check_name, job_name_max

        check_name(args.name, what="--name", limit=job_name_max(kind=args.kind), kind=args.kind)
    if args.answer is not None:
        doc = _saved_answer(args)
    else:
        if args.profile is None or args.target is None:
            missing = ", ".join(n for n, v in (("PROFILE", args.profile), ("--target", args.target)) if v is None)
            raise InputError(f"the following arguments are required: {missing} (or --answer FILE: a saved answer)")
        doc = recommend_from_args(args).to_dict()
    opts = _options(args, doc)
    manifests = render_manifests(doc, opts)
    for line in manifest_warnings(doc, opts):
        error(line)
    if args.json:
        emit_json({"apiVersion": "v1", "kind": "List", "items": manifests})
    else:
        emit(to_yaml(manifests).rstrip("\n"))
    return EXIT_OK
