"""Imports point one way: no cycle among cotune's modules (issue 13 item 4).

Every import counts — module level and inside functions (a lazy import is still a
dependency: the old cycle _recommend → spot → spot._replan → _recommend was a lazy one) —
except those under ``if TYPE_CHECKING``. Importing ``a.b.c`` also imports the packages
``a`` and ``a.b``, so they are edges too, unless they enclose the importing module.

A module an annotation names but the module must not import (``cotune._lazy``:
``cotune = annotation_module("cotune")`` for ``"cotune.spot.Cluster"``) is no edge either,
like a ``TYPE_CHECKING`` import — on condition that the name is read in annotations only,
which ``test_annotation_modules_are_read_in_annotations_only`` checks.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _modules() -> dict[str, Path]:
    out = {}
    for path in (REPO / "cotune").rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imported(name: str, path: Path, known: set[str]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(ast.Module(body=child.orelse, type_ignores=[]))  # the else branch's statements themselves
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    head = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(head + ([base] if base else []))
                found.add(base)
                found.update(f"{base}.{a.name}" for a in child.names if f"{base}.{a.name}" in known)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    edges = set()
    for target in found:
        parts = target.split(".")
        for i in range(1, len(parts) + 1):
            mod = ".".join(parts[:i])
            if mod in known and not (name == mod or name.startswith(mod + ".")):
                edges.add(mod)
    return edges


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path (first == last), or None (iterative DFS)."""
    state: dict[str, int] = {}
    for start in sorted(graph):
        if state.get(start):
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(child) == 1:
                return path[path.index(child):] + [child]
            elif not state.get(child):
                state[child] = 1
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
    return None


def test_cotune_modules_import_each_other_without_a_cycle():
    mods = _modules()
    graph = {name: _imported(name, path, set(mods)) for name, path in mods.items()}
    assert "cotune._pipeline" in graph and "cotune.spot" in graph["cotune._pipeline"]  # the analysis sees lazy imports
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_planted_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_request_value_is_a_leaf_below_every_door():
    mods = _modules()
    deps = _imported("cotune._request", mods["cotune._request"], set(mods))
    assert deps <= {"cotune._checks", "cotune.errors", "cotune.profile", "cotune._lazy"}, deps
    assert _imported("cotune._checks", mods["cotune._checks"], set(mods)) == {"cotune.errors"}
    assert _imported("cotune._lazy", mods["cotune._lazy"], set(mods)) == set()


def _annotation_module_reads(source: str) -> list[str]:
    """Where a name bound to ``annotation_module(...)`` is read outside an annotation (line:
    name). A function that binds the name itself (``import pandas as pd`` in ``to_frame``)
    reads its own."""
    tree = ast.parse(source)
    names = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
             and isinstance(node.value.func, ast.Name) and node.value.func.id == "annotation_module"
             for target in node.targets if isinstance(target, ast.Name)}
    annotation_nodes: set[int] = set()
    for node in ast.walk(tree):
        found: list[ast.AST | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            found = [node.returns, *(a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs,
                                                            args.vararg, args.kwarg) if a is not None)]
        elif isinstance(node, ast.AnnAssign):
            found = [node.annotation]
        annotation_nodes.update(id(n) for a in found if a is not None for n in ast.walk(a))
    reads: list[str] = []

    def visit(node: ast.AST, own: frozenset[str]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            own = own | {(alias.asname or alias.name).split(".")[0] for n in ast.walk(node)
                         if isinstance(n, (ast.Import, ast.ImportFrom)) for alias in n.names}
        if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names
                and node.id not in own and id(node) not in annotation_nodes):
            reads.append(f"{node.lineno}: {node.id}")
        for child in ast.iter_child_nodes(node):
            visit(child, own)

    visit(tree, frozenset())
    return reads


def test_annotation_modules_are_read_in_annotations_only():
    # A run-time read would be an import the graph above cannot see (and a cycle it would miss).
    found = {name: reads for name, path in _modules().items()
             if (reads := _annotation_module_reads(path.read_text(encoding="utf-8")))}
    assert found == {}


def test_the_annotation_module_check_finds_a_planted_run_time_read():
    source = (
        "pd = annotation_module('pandas')\n"
        "def to_frame(x: pd.DataFrame) -> 'pd.DataFrame':\n"
        "    import pandas as pd\n"
        "    return pd.DataFrame(x)\n"  # its own pd: fine
        "def leak() -> None:\n"
        "    return pd.DataFrame()\n"
    )
    assert _annotation_module_reads(source) == ["6: pd"]
