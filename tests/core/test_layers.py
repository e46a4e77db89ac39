"""Imports point one way: no cycle among cotune's modules (issue 13 item 4).

Every import counts — module level and inside functions (a lazy import is still a
dependency: the old cycle _recommend → spot → spot._replan → _recommend was a lazy one) —
except those under ``if TYPE_CHECKING``. Importing ``a.b.c`` also imports the packages
``a`` and ``a.b``, so they are edges too, unless they enclose the importing module.
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
                for other in child.orelse:
                    visit(other)
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
    assert deps <= {"cotune._checks", "cotune.errors", "cotune.profile"}, deps
    assert _imported("cotune._checks", mods["cotune._checks"], set(mods)) == {"cotune.errors"}
