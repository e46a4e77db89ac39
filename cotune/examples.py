"""The bundled example profiles (real measurements; see ``data/profiles/NOTICE.md``).

An example's name works wherever a profile path does: ``cotune recommend cifar10-resnet18 ...``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ExampleProfile", "list_examples", "example_path", "resolve_profile_path", "nearest_example"]

_DIR = Path(__file__).parent / "data" / "profiles"


@dataclass(frozen=True)
class ExampleProfile:
    name: str
    path: Path
    metric: str
    goal: str
    dataset_size: int
    source: str


def list_examples() -> tuple[ExampleProfile, ...]:
    """Every bundled example profile, by name."""
    out = []
    for path in sorted(_DIR.glob("*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            head = json.loads(fh.readline())
        out.append(
            ExampleProfile(
                name=path.stem,
                path=path,
                metric=head.get("metric", "metric"),
                goal=head.get("goal", "max"),
                dataset_size=int(head["dataset_size"]),
                source=head.get("source", ""),
            )
        )
    return tuple(out)


def example_path(name: str) -> Path:
    """Path of a bundled example profile; KeyError if there is none of that name."""
    path = _DIR / f"{name}.jsonl"
    if not path.exists():
        raise KeyError(name)
    return path


def resolve_profile_path(text: str) -> str:
    """A file path as given, or a bundled example's path when ``text`` names one and no such file exists."""
    try:
        if Path(text).exists():
            return text
        return str(example_path(text))
    except (KeyError, OSError, ValueError):  # no such example; or a path os refuses (NUL byte, too long):
        return text  # read_profile then says what is wrong with it


def nearest_example(text: str) -> str | None:
    """The bundled example a bare name that is neither a file nor an example most likely
    meant (``cifar10``, ``CIFAR10-resnet18``, ``cifar10-resnet18.jsonl``), or None. A path
    with a directory in it is a file path: no guess."""
    from difflib import get_close_matches

    if not text or Path(text).name != text:
        return None
    names = sorted(p.stem for p in _DIR.glob("*.jsonl"))
    key = text.lower().removesuffix(".jsonl")
    starts = [n for n in names if n.startswith(key) or key.startswith(n)]
    if len(starts) == 1:
        return starts[0]
    close = get_close_matches(key, names, n=1, cutoff=0.6)
    return close[0] if close else None
