"""``cotune k8s``: the recommended job as Kubernetes manifests (YAML on stdout)."""

from __future__ import annotations

import argparse
import re

from cotune.cli._recommend import add_problem_arguments, request_from_args

__all__ = ["add_parser", "run"]


def _selector(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE such as nvidia.com/gpu.product=Tesla-T4, got {text!r}")
    return key.strip(), value.strip()


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "k8s",
        help="render the recommended job as a Kubeflow PyTorchJob (+ Volcano PodGroup or Kueue labels)",
        description="Recommend as 'cotune recommend' does, then print the job as Kubernetes YAML: a kubeflow.org/v1 "
        "PyTorchJob (elastic min/max replicas where the plan allows), GPU requests, host packing, and gang "
        "scheduling with Volcano (PodGroup) or Kueue (queue label). See docs/scheduler.md.",
        epilog="Exit codes: 0 ok, 1 nothing feasible (nothing printed on stdout), 2 bad input.",
    )
    add_problem_arguments(p)
    k = p.add_argument_group("manifest")
    k.add_argument("--name", default=None, help="job name (default: the workload's name)")
    k.add_argument("--namespace", default="default", help="namespace (default 'default')")
    k.add_argument("--image", default="pytorch/pytorch:latest", help="training container image")
    k.add_argument("--command", dest="container_command", default=None, metavar="CMD", help="container command, e.g. 'torchrun train.py --epochs 90'")
    k.add_argument("--gang", choices=("volcano", "kueue", "none"), default="volcano", help="gang scheduler (default volcano)")
    k.add_argument("--queue", default="default", help="Volcano queue or Kueue LocalQueue (default 'default')")
    k.add_argument("--no-elastic", dest="elastic", action="store_false", help="fixed size even when the plan allows a range")
    k.add_argument("--gpu-resource", default="nvidia.com/gpu", help="extended resource name of a GPU (default nvidia.com/gpu)")
    k.add_argument("--node-selector", action="append", type=_selector, default=None, metavar="KEY=VALUE", help="node label to require (repeatable)")
    from cotune.cli._fitcache import add_fit_arguments

    add_fit_arguments(p)
    p.set_defaults(run=run)


def _default_name(workload: str) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", workload.lower()).strip("-")[:50].strip("-")
    return name or "cotune-job"


def run(args: argparse.Namespace) -> int:
    import shlex

    from cotune._recommend import recommend
    from cotune.cli._output import emit
    from cotune.errors import EXIT_OK, InputError
    from cotune.k8s import JobOptions, render_manifests, to_yaml

    from cotune._recommend import load_profile
    from cotune.cli._fitcache import fitted_models

    profile = load_profile(args.profile)
    rec = recommend(profile, models=fitted_models(profile, args), **request_from_args(args))
    try:
        command = tuple(shlex.split(args.container_command)) if args.container_command else ()
    except ValueError as exc:
        raise InputError(f"--command is not a valid shell word list ({exc}): quote it as one argument") from None
    opts = JobOptions(
        name=args.name or _default_name(rec.workload),
        namespace=args.namespace,
        image=args.image,
        command=command,
        gang=args.gang,
        queue=args.queue,
        elastic=args.elastic,
        gpu_resource=args.gpu_resource,
        node_selector=dict(args.node_selector or []),
    )
    emit(to_yaml(render_manifests(rec.to_dict(), opts)).rstrip("\n"))
    return EXIT_OK
