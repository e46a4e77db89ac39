"""Accelerator names as the profile spells them: ``cpu``, ``t4``, ``a100``, ``h200`` …"""

from __future__ import annotations

import re

__all__ = ["short_gpu_name"]

# Families whose marketing name is not a single letter-digit token (checked first).
_SPECIAL = (
    ("rtx a6000", "a6000"),
    ("rtx 6000 ada", "rtx6000ada"),
    ("l40s", "l40s"),
    ("gh200", "gh200"),
    ("gb200", "gb200"),
)


def short_gpu_name(device_name: str | None) -> str:
    """Lower-case short name of a device, from ``torch.cuda.get_device_name`` output.

    >>> short_gpu_name("NVIDIA A100-SXM4-80GB")
    'a100'
    >>> short_gpu_name("Tesla T4")
    't4'
    >>> short_gpu_name("NVIDIA H200")
    'h200'
    >>> short_gpu_name(None)
    'cpu'
    """
    if not device_name:
        return "cpu"
    text = device_name.lower()
    for needle, short in _SPECIAL:
        if needle in text:
            return short
    rtx = re.search(r"rtx\s*(\d{4})", text)
    if rtx:
        return "rtx" + rtx.group(1)
    # Drop vendor words, then take the first model token (a letter followed by digits,
    # e.g. a100, v100, t4, h100, l4, or an RTX number such as 4090).
    text = re.sub(r"\b(nvidia|tesla|geforce|quadro|amd|instinct)\b", " ", text)
    match = re.search(r"\b([a-z]{1,3}\d{1,4}[a-z]?)\b", text) or re.search(r"\b(\d{3,4})\b", text)
    if match:
        return match.group(1)
    token = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    return token or "gpu"


def local_gpu_name() -> str:
    """Name of this machine's accelerator (``cpu`` when torch sees no CUDA device)."""
    try:
        import torch  # local: only probe processes pay for importing torch
    except ImportError:  # a TensorFlow-only machine
        return _tf_gpu_name()
    if torch.cuda.is_available():
        return short_gpu_name(torch.cuda.get_device_name(0))
    return "cpu"


def _tf_gpu_name() -> str:
    try:
        import tensorflow as tf
    except ImportError:
        return "cpu"
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return "cpu"
    details = tf.config.experimental.get_device_details(gpus[0])
    return short_gpu_name(details.get("device_name"))


def local_device_count() -> int:
    """CUDA devices on this machine (0 on CPU)."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0
