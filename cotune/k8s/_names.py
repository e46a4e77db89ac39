"""Kubernetes name and value rules, checked before rendering so ``kubectl apply`` never refuses what cotune printed.

* object names: DNS-1035 labels (``[a-z]([-a-z0-9]*[a-z0-9])?``) — the Kubeflow
  operators name Services after the job, and Services need DNS-1035: a name must start
  with a letter (``1job`` is refused; a workload called ``3d-unet`` becomes ``job-3d-unet``);
* label keys (an optional DNS-subdomain prefix and a name) and values (63 characters);
* container images: a reference the container runtime parses (``_IMAGE``; a newline would end the YAML value);
* annotation values quoting user text (a workload's name): printable and short.
"""

from __future__ import annotations

import re

from cotune._checks import excerpt
from cotune.errors import InputError

__all__ = ["JOB_NAME_MAX", "TAINT_EFFECTS", "TRAINJOB_NAME_MAX", "annotation_text", "check_image", "check_label_key",
           "check_label_value", "check_name", "check_toleration", "derive_name", "job_name_max", "parse_toleration"]

#: A taint's effects, as Kubernetes spells them; a toleration without one tolerates all three.
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

#: Longest PyTorchJob name (and the default limit): the v1 operator names each pod and its
#: Service ``<job>-worker-<index>``, a DNS-1035 label of at most 63 characters: 50 + 8 for
#: ``-worker-`` leaves 5 digits of index.
JOB_NAME_MAX = 50
#: Longest TrainJob name, for up to 1000 nodes. Trainer v2 runs the job as a JobSet named
#: after it, whose ``node`` replicated job names its pods ``<job>-node-0-<index>-<5 random>``;
#: the JobSet webhook refuses the job unless the longest such name is a DNS-1035 label of at
#: most 63 characters: 46 + len("-node-0-999-abcde") = 63 (47 would cover only 100 nodes).
#: A plan of more nodes is held to less by :func:`job_name_max` when it is rendered.
TRAINJOB_NAME_MAX = 46
# The part of a TrainJob's longest pod name that is not the job's name, for a pod index.
_TRAINJOB_POD_SUFFIX = "-node-0-{index}-abcde"
# What a name's limit comes from, per kind, for the error that states it.
_LIMIT_WHY = {
    "trainjob": "a TrainJob's pods are named NAME-node-0-INDEX-xxxxx, at most 63 characters",
    "pytorchjob": "a PyTorchJob's pods are named NAME-worker-INDEX, at most 63 characters",
}
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# An image reference as the container runtimes parse it (the distribution project's grammar,
# github.com/distribution/reference): [host[:port]/]path[:tag][@digest], path components
# lower case. A reference outside it (MyOrg/Train, a tag of 200 characters, "img:") is applied
# by kubectl and then fails at every pod's start as InvalidImageName, after the job was admitted.
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST_PART = r"(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])"
_HOST = rf"(?:{_HOST_PART}(?:\.{_HOST_PART})*|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}"
# The tag's classes are spelt out: Python's \w is Unicode (it took "train:tä", which the runtimes refuse).
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_IMAGE = re.compile(rf"(?:(?P<host>{_HOST})/)?(?P<path>{_PATH_PART}(?:/{_PATH_PART})*)(?::(?P<tag>{_TAG}))?"
                    rf"(?:@(?P<digest>{_DIGEST}))?", re.ASCII)


def job_name_max(*, kind: str, nodes: int | None = None) -> int:
    """Longest name a job of ``kind`` (``"trainjob"`` or ``"pytorchjob"``) may have; for a
    TrainJob of ``nodes`` pods, where more than 1000 need a shorter name than
    :data:`TRAINJOB_NAME_MAX` (their pod index has more digits)."""
    if kind != "trainjob":
        return JOB_NAME_MAX
    if nodes is None:
        return TRAINJOB_NAME_MAX
    return min(TRAINJOB_NAME_MAX, 63 - len(_TRAINJOB_POD_SUFFIX.format(index=max(int(nodes), 1) - 1)))


def check_name(value: str, *, what: str = "name", limit: int = JOB_NAME_MAX, kind: str | None = None) -> str:
    """``value`` if it is a DNS-1035 label of at most ``limit`` characters, else :class:`InputError`
    (naming what the limit comes from for a job of ``kind``)."""
    if not isinstance(value, str) or not (len(value) <= limit and _DNS_1035.fullmatch(value)):
        fixed = derive_name(value if isinstance(value, str) else "", limit=limit)
        why = f" ({_LIMIT_WHY[kind]})" if kind in _LIMIT_WHY else ""
        raise InputError(
            f"{what} {excerpt(value)} is not a valid Kubernetes name (DNS-1035): use at most {limit} lower-case letters, "
            f"digits and '-'{why}, starting with a letter and ending with a letter or digit, e.g. {fixed!r}"
        )
    return value


def derive_name(text: str, *, limit: int = JOB_NAME_MAX, default: str = "cotune-job") -> str:
    """A valid DNS-1035 name made from free text (a workload's name): ``3d-unet`` → ``job-3d-unet``."""
    name = re.sub(r"[^a-z0-9-]+", "-", str(text)[:500].lower()).strip("-")
    if name and not name[0].isalpha():
        name = "job-" + name
    name = name[:limit].rstrip("-")
    return name if name and _DNS_1035.fullmatch(name) else default


def check_subdomain(value: str, *, what: str) -> str:
    """``value`` if it is a DNS-1123 subdomain (what most object names are: at most 253
    lower-case letters, digits, '-' and '.', starting and ending with a letter or digit)."""
    if not isinstance(value, str) or not (len(value) <= 253 and _DNS_SUBDOMAIN.fullmatch(value)):
        raise InputError(f"{what} {excerpt(value)} is not a valid Kubernetes object name: at most 253 lower-case "
                         "letters, digits, '-' and '.', starting and ending with a letter or digit")
    return value


def check_extended_resource(name: str, *, what: str) -> str:
    """``name`` if a container may request it: an extended resource is domain-qualified
    (``nvidia.com/gpu``, ``amd.com/gpu``) and outside ``kubernetes.io``; the API server
    refuses a bare ``gpu``."""
    if not isinstance(name, str):
        raise InputError(f"{what} {excerpt(name)} must be text naming an extended resource, e.g. nvidia.com/gpu")
    check_label_key(name, what=what)
    prefix, slash, _ = name.rpartition("/")
    if not slash or prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io"):
        raise InputError(f"{what} {excerpt(name)} is not an extended resource name a container may request: give it "
                         "with its vendor's domain, e.g. nvidia.com/gpu or amd.com/gpu")
    return name


def check_label_key(key: str, *, what: str) -> str:
    if not isinstance(key, str):
        raise InputError(f"{what} key {excerpt(key)} must be text, a label key such as nvidia.com/gpu.product")
    prefix, slash, name = key.rpartition("/")
    ok = (
        bool(name) and len(name) <= 63 and _LABEL_NAME.fullmatch(name) is not None
        and (not slash or (0 < len(prefix) <= 253 and _DNS_SUBDOMAIN.fullmatch(prefix) is not None))
    )
    if not ok:
        raise InputError(
            f"{what} key {excerpt(key)} is not a valid label key: an optional DNS prefix and '/', then at most 63 "
            "letters, digits, '-', '_' or '.', starting and ending with a letter or digit (e.g. nvidia.com/gpu.product)"
        )
    return key


def check_label_value(value: str, *, what: str) -> str:
    if not isinstance(value, str):
        # A number or a boolean (YAML's 1, true) is no label value: the API server refuses it.
        raise InputError(f"{what} value {excerpt(value)} must be text, e.g. Tesla-T4 (quote a number: '1')")
    if not (len(value) <= 63 and _LABEL_VALUE.fullmatch(value)):
        raise InputError(
            f"{what} value {excerpt(value)} is not a valid label value: at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit (e.g. Tesla-T4)"
        )
    return value


def check_image(value: str) -> str:
    """``value`` if the container runtime can parse it as an image reference (``_IMAGE``)."""
    example = "e.g. ghcr.io/me/train:1.0"
    if not (isinstance(value, str) and 0 < len(value) <= 500 and value.isprintable() and " " not in value):
        raise InputError(f"image {excerpt(value)} is not a container image reference (no spaces or control characters, "
                         f"at most 500 characters): {example}")
    m = _IMAGE.fullmatch(value)
    first, slash, _ = value.partition("/")
    if m is None or len(m.group("path")) + len(m.group("host") or "") + 1 > 255:
        tag = value.rpartition("@")[0] if "@" in value else value
        tag = tag.rpartition(":")[2] if ":" in tag.rpartition("/")[2] else ""
        if m is not None:
            why = "the registry and repository path are at most 255 characters"
        elif _IMAGE.fullmatch(value.lower()) and value.lower() != value:
            why = "the repository path is lower case"
        elif len(tag) > 128:
            why = "a tag is at most 128 characters"
        elif not tag.isascii():
            why = "a tag is ASCII letters, digits, '_', '.' and '-'"
        else:
            why = "[registry[:port]/]path[:tag][@sha256:digest], the path in lower-case letters, digits and . _ -"
        raise InputError(f"image {excerpt(value)} is not a container image reference ({why}): {example}")
    if slash and first.lower() != first and not any(c in first for c in ".:") and first != "localhost":
        # The runtimes read a first component with capitals as a registry's host name (and
        # fail to resolve it); a repository path is lower case.
        raise InputError(f"image {excerpt(value)}: {first!r} would be read as a registry host, and a repository path is "
                         f"lower case: write {value.lower().split(':')[0] + (':' + value.split(':', 1)[1] if ':' in value else '')!r}"
                         f" or name the registry ({example})")
    return value


def annotation_text(text: str, *, limit: int = 200) -> str:
    """User text fit for an annotation value: control characters dropped, at most ``limit`` characters."""
    clean = "".join(c if c.isprintable() else " " for c in str(text)[: limit * 4])
    clean = " ".join(clean.split())
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


def parse_toleration(text: str) -> dict[str, str]:
    """``KEY[=VALUE][:EFFECT]`` as a pod's toleration: with a value it must equal the taint's
    (``operator: Equal``), without one any value is tolerated (``Exists``); without an effect
    every effect is. ``kubernetes.azure.com/scalesetpriority=spot:NoSchedule`` lets pods onto
    AKS's spot nodes, which carry that taint."""
    if not isinstance(text, str):
        raise InputError(f"toleration must be text KEY[=VALUE][:EFFECT], got {excerpt(text)}")
    head, colon, effect = text.partition(":")
    key, eq, value = head.partition("=")
    toleration = {"key": key.strip(), "operator": "Equal" if eq else "Exists"}
    if eq:
        toleration["value"] = value.strip()
    if colon:
        toleration["effect"] = effect.strip()
    return check_toleration(toleration)


def check_toleration(toleration: object) -> dict[str, str]:
    """A toleration as a plain mapping (``key``, ``operator``, ``value``, ``effect``), checked:
    a label key, a label value with ``Equal``, none with ``Exists``, one of :data:`TAINT_EFFECTS`.
    A toleration without a key (tolerate every taint) is refused: it would also let the job
    onto nodes tainted to keep it off (GPU maintenance, other teams' pools)."""
    if not isinstance(toleration, dict) or set(toleration) - {"key", "operator", "value", "effect"}:
        raise InputError(f"toleration {excerpt(toleration)}: give KEY[=VALUE][:EFFECT] (or a mapping of key, operator, "
                         "value, effect), e.g. kubernetes.azure.com/scalesetpriority=spot:NoSchedule")
    key, operator = toleration.get("key"), toleration.get("operator", "Equal")
    if not isinstance(key, str) or not key:
        raise InputError("toleration without a key would tolerate every taint: name the taint's key, e.g. "
                         "kubernetes.azure.com/scalesetpriority=spot:NoSchedule")
    check_label_key(key, what="toleration")
    if operator not in ("Equal", "Exists"):
        raise InputError(f"toleration {key}: operator must be Equal or Exists, got {excerpt(operator)}")
    out = {"key": key, "operator": operator}
    if operator == "Equal":
        value = toleration.get("value", "")
        if not isinstance(value, str):
            raise InputError(f"toleration {key}: value must be text, got {excerpt(value)}")
        out["value"] = check_label_value(value, what="toleration")
    elif toleration.get("value") not in (None, ""):
        raise InputError(f"toleration {key}: operator Exists takes no value, got {excerpt(toleration.get('value'))}")
    effect = toleration.get("effect")
    if effect not in (None, ""):
        if effect not in TAINT_EFFECTS:
            raise InputError(f"toleration {key}: effect must be one of {', '.join(TAINT_EFFECTS)} (or left out for all), "
                             f"got {excerpt(effect)}")
        out["effect"] = effect
    return out
