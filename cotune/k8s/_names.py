"""Kubernetes name and value rules, checked before rendering so ``kubectl apply`` never refuses what cotune printed.

* object names: DNS-1035 labels (``[a-z]([-a-z0-9]*[a-z0-9])?``) — the Kubeflow
  operators name Services after the job, and Services need DNS-1035: a name must start
  with a letter (``1job`` is refused; a workload called ``3d-unet`` becomes ``job-3d-unet``);
* label keys (an optional DNS-subdomain prefix and a name) and values (63 characters);
* container images: no whitespace or control characters (a newline would end the YAML value);
* annotation values quoting user text (a workload's name): printable and short.
"""

from __future__ import annotations

import re

from cotune._checks import excerpt
from cotune.errors import InputError

__all__ = ["JOB_NAME_MAX", "annotation_text", "check_image", "check_label_key", "check_label_value", "check_name", "derive_name"]

#: Longest job name: pod names add a suffix such as ``-worker-12`` or ``-node-0-12-abcde`` within 63.
JOB_NAME_MAX = 50
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$")


def check_name(value: str, *, what: str = "name", limit: int = JOB_NAME_MAX) -> str:
    """``value`` if it is a DNS-1035 label of at most ``limit`` characters, else :class:`InputError`."""
    if not isinstance(value, str) or not (len(value) <= limit and _DNS_1035.fullmatch(value)):
        fixed = derive_name(value if isinstance(value, str) else "", limit=limit)
        raise InputError(
            f"{what} {excerpt(value)} is not a valid Kubernetes name (DNS-1035): use at most {limit} lower-case letters, "
            f"digits and '-', starting with a letter and ending with a letter or digit, e.g. {fixed!r}"
        )
    return value


def derive_name(text: str, *, limit: int = JOB_NAME_MAX, default: str = "cotune-job") -> str:
    """A valid DNS-1035 name made from free text (a workload's name): ``3d-unet`` → ``job-3d-unet``."""
    name = re.sub(r"[^a-z0-9-]+", "-", str(text)[:500].lower()).strip("-")
    if name and not name[0].isalpha():
        name = "job-" + name
    name = name[:limit].rstrip("-")
    return name if name and _DNS_1035.fullmatch(name) else default


def check_label_key(key: str, *, what: str) -> str:
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
    if not (len(value) <= 63 and _LABEL_VALUE.fullmatch(value)):
        raise InputError(
            f"{what} value {excerpt(value)} is not a valid label value: at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit (e.g. Tesla-T4)"
        )
    return value


def check_image(value: str) -> str:
    if not (isinstance(value, str) and 0 < len(value) <= 500 and _IMAGE.fullmatch(value)):
        raise InputError(
            f"image {excerpt(value)} is not a container image reference (no spaces or control characters, at most "
            "500 characters): e.g. ghcr.io/me/train:1.0"
        )
    return value


def annotation_text(text: str, *, limit: int = 200) -> str:
    """User text fit for an annotation value: control characters dropped, at most ``limit`` characters."""
    clean = "".join(c if c.isprintable() else " " for c in str(text)[: limit * 4])
    clean = " ".join(clean.split())
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."
