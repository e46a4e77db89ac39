"""A module that annotations name, imported only when the annotations are evaluated.

Tools that read a library's annotations (``typing.get_type_hints``, pydantic, sphinx
autodoc, cattrs) evaluate ``"pd.DataFrame"`` in the defining module's globals. A name
imported only under ``if TYPE_CHECKING:`` is missing there (NameError); one imported at
module level costs every caller the import — pandas for a planner that never asks for a
frame, numpy for ``cotune --help`` — or closes an import cycle (``cotune._request`` names
``cotune.spot.Cluster``, whose module imports it). The stand-in binds the name at no cost and
imports the module on the first attribute read, which only an evaluated annotation makes::

    if TYPE_CHECKING:
        import pandas as pd
    else:
        pd = annotation_module("pandas")

    def to_frame(self) -> "pd.DataFrame": ...

The stand-in of a package reaches its subpackages too: with ``cotune =
annotation_module("cotune")``, ``"cotune.spot.Cluster"`` imports ``cotune.spot`` when
evaluated, and reads as the public name it is.

For annotations only: code that runs imports what it uses itself, so that the import
graph ``tests/core/test_layers.py`` checks stays the graph the code really has (that test
refuses any other read of such a name).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["AnnotationModule", "annotation_module"]


class AnnotationModule:
    """Stands in for the module ``name`` until an attribute is read, then forwards the read."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        # Probes of private and dunder names (copy, pickle, inspect.unwrap, doctest's finder)
        # must not import the module: only a public name an annotation spells does.
        if attr.startswith("_"):
            raise AttributeError(attr)
        module = import_module(self._name)
        try:
            return getattr(module, attr)
        except AttributeError:  # a subpackage not imported yet: the profile of "cotune.profile.Profile"
            return import_module(f"{self._name}.{attr}")

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported when an annotation naming it is evaluated>"


def annotation_module(name: str) -> Any:
    """A stand-in for the module ``name`` in annotations (typed ``Any``: type checkers see the
    real import under ``TYPE_CHECKING``)."""
    return AnnotationModule(name)
