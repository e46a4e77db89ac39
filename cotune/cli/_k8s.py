"""``cotune k8s``: the recommended job as Kubernetes manifests (YAML, or JSON with ``--json``)."""

from __future__ import annotations

import argparse

from cotune.cli._question import add_question_arguments, recommend_from_args

__all__ = ["add_parser", "run"]


def _selector(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE such as nvidia.com/gpu.product=Tesla-T4, got {text[:60]!r}")
    return key.strip(), value.strip()


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "k8s",
        help="render the recommended job as a Kubeflow TrainJob or PyTorchJob (+ Volcano / Kueue)",
        description="Recommend as 'cotune recommend' does (same options), then print the job as Kubernetes objects: a "
        "Kubeflow Trainer v2 TrainJob (--kind trainjob: fixed size per submission) or a v1 PyTorchJob (elastic "
        "min/max replicas where the plan allows), GPU requests, host packing, and gang scheduling with Volcano or "
        "Kueue. See docs/scheduler.md.",
        epilog="Exit codes: 0 ok, 1 nothing feasible (nothing printed on stdout), 2 bad input.",
    )
    add_question_arguments(p)
    k = p.add_argument_group("manifest")
    k.add_argument("--kind", choices=("trainjob", "pytorchjob"), default="pytorchjob",
                   help="trainjob: Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1); pytorchjob: the v1 training operator (default)")
    k.add_argument("--name", default=None, help="job name, DNS-1035 (default: derived from the workload's name)")
    k.add_argument("--namespace", default="default", help="namespace (default 'default')")
    k.add_argument("--image", default=None, help="training container image (without it: a loud warning, and the runtime's "
                   "image for a TrainJob or pytorch/pytorch:latest for a PyTorchJob)")
    k.add_argument("--command", dest="container_command", default=None, metavar="CMD", help="container command, e.g. 'torchrun train.py --epochs 90'")
    k.add_argument("--runtime", default="torch-distributed", help="TrainJob: the ClusterTrainingRuntime to use (default torch-distributed)")
    k.add_argument("--gang", choices=("volcano", "kueue", "none"), default="volcano", help="gang scheduler (default volcano)")
    k.add_argument("--queue", default="default", help="Volcano queue or Kueue LocalQueue (default 'default')")
    k.add_argument("--no-elastic", dest="elastic", action="store_false", help="PyTorchJob: fixed size even when the plan allows a range")
    k.add_argument("--gpu-resource", default="nvidia.com/gpu", help="extended resource name of a GPU (default nvidia.com/gpu)")
    k.add_argument("--node-selector", action="append", type=_selector, default=None, metavar="KEY=VALUE", help="node label to require (repeatable)")
    p.add_argument("--json", action="store_true", help="print the objects as one JSON List (kubectl apply -f accepts it)")
    p.set_defaults(run=run)


def _options(args: argparse.Namespace, workload: str):  # -> JobOptions
    import shlex

    from cotune.cli._args import unique_pairs
    from cotune.errors import InputError
    from cotune.k8s import JobOptions, derive_name

    try:
        command = tuple(shlex.split(args.container_command)) if args.container_command else ()
    except ValueError as exc:
        raise InputError(f"--command is not a valid shell word list ({exc}): quote it as one argument") from None
    try:
        return JobOptions(
            kind=args.kind,
            name=args.name if args.name is not None else derive_name(workload),
            namespace=args.namespace,
            image=args.image,
            command=command,
            gang=args.gang,
            queue=args.queue,
            elastic=args.elastic,
            gpu_resource=args.gpu_resource,
            node_selector=unique_pairs(args.node_selector, "--node-selector") or {},
            runtime=args.runtime,
        )
    except InputError as exc:
        raise InputError(f"--{str(exc)}" if str(exc).split(" ", 1)[0] in ("name", "image", "namespace", "queue", "runtime") else str(exc)) from None


def run(args: argparse.Namespace) -> int:
    from cotune.cli._output import emit, emit_json, error
    from cotune.errors import EXIT_OK
    from cotune.k8s import manifest_warnings, render_manifests, to_yaml

    if args.name is not None:  # a bad name fails before the solve
        from cotune.k8s import check_name

        check_name(args.name, what="--name")
    rec = recommend_from_args(args)
    opts = _options(args, rec.workload)
    doc = rec.to_dict()
    manifests = render_manifests(doc, opts)
    for line in manifest_warnings(doc, opts):
        error(line)
    if args.json:
        emit_json({"apiVersion": "v1", "kind": "List", "items": manifests})
    else:
        emit(to_yaml(manifests).rstrip("\n"))
    return EXIT_OK
