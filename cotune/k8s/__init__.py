"""Render a recommendation as the Kubernetes objects a scheduler runs: a Kubeflow
PyTorchJob (elastic where the plan allows), gang scheduling with Volcano or Kueue, GPU
requests and host packing. Pure functions: a recommendation document in, manifests
(plain ``dict``s) out; ``cotune k8s`` prints them as YAML."""

from cotune.k8s._render import GANGS, JobOptions, Layout, layout_for, render_manifests, to_yaml

__all__ = ["GANGS", "JobOptions", "Layout", "layout_for", "render_manifests", "to_yaml"]
