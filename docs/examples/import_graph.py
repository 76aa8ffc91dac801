"""Print the import graph of a Python package: floors, circles, layers and module sizes.

    python docs/examples/import_graph.py vault_tools [--json]

A module's floor is 1 when it imports nothing of the package, else one more than the
highest floor it imports; every import counts, at the top of a file or inside a function.
A circle is a set of modules that import each other in a loop (a strongly connected
component of more than one module). Standard library only, so it runs without vt.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(tree: ast.AST, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The package's modules that one module imports (a name taken from a package
    counts as its submodule when there is one, else as the package)."""
    here = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                base = f"{anchor}.{base}" if base else anchor
            found.update(f"{base}.{alias.name}" for alias in node.names)
            found.add(base)
    resolved = {_nearest_module(target, known) for target in found}
    return {m for m in resolved if m and m != name and not name.startswith(m + ".")}


def _nearest_module(target: str, known: set[str]) -> str | None:
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def read_package(root: Path) -> tuple[dict[str, set[str]], dict[str, int]]:
    files = {module_name(root, p): p for p in sorted(root.rglob("*.py"))}
    known = set(files)
    graph, sizes = {}, {}
    for name, path in files.items():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        graph[name] = imports_of(tree, name, path.name == "__init__.py", known)
        sizes[name] = len(text.splitlines())
    return graph, sizes


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, those of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each module's floor; modules of one circle share a floor."""
    members = {m: tuple(c) for c in circles(graph) for m in c}
    floor: dict[str, int] = {}

    def level(node: str, seen: frozenset[str]) -> int:
        if node in floor:
            return floor[node]
        group = set(members.get(node, (node,)))
        below = {t for m in group for t in graph[m]} - group - seen
        value = 1 + max((level(t, seen | group) for t in below), default=0)
        for m in group:
            floor[m] = value
        return value

    for node in sorted(graph):
        level(node, frozenset())
    return floor


def by_package(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The same graph with each subpackage drawn as one node (the package's own
    __init__ module is left out: it only names the package)."""

    def room(module: str) -> str:
        return ".".join(module.split(".")[:2])

    rooms: dict[str, set[str]] = {}
    for module, targets in graph.items():
        if "." in module:
            rooms.setdefault(room(module), set()).update(
                room(t) for t in targets if "." in t and room(t) != room(module)
            )
    return rooms


def summary(root: Path) -> dict[str, object]:
    graph, sizes = read_package(root)
    floor = floors(graph)
    rooms = by_package(graph)
    top = root.name
    return {
        "modules": len(graph),
        "floors": max(floor.values(), default=0),
        "circles": circles(graph),
        "package_floors": max(floors(rooms).values(), default=0),
        "package_circles": circles(rooms),
        "top_level_modules": sorted(
            m
            for m in graph
            if m.count(".") == 1
            and m not in {f"{top}.{p.name}" for p in root.iterdir() if p.is_dir()}
        ),
        "largest": sorted(sizes.items(), key=lambda kv: -kv[1])[:5],
        "floor": dict(sorted(floor.items(), key=lambda kv: (-kv[1], kv[0]))),
        "imports": {m: sorted(t) for m, t in sorted(graph.items())},
    }


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    data = summary(Path(argv[0]).resolve())
    if "--json" in argv:
        print(json.dumps(data, indent=2))
        return 0
    print(f"{data['modules']} modules on {data['floors']} floors, {len(data['circles'])} circles")
    print(
        f"drawn by package: {data['package_floors']} floors, {len(data['package_circles'])} circles"
    )
    for circle in data["circles"]:  # type: ignore[attr-defined]
        print("circle:", " <-> ".join(circle))
    print("top level:", ", ".join(m.rpartition(".")[2] for m in data["top_level_modules"]))
    print("largest:", ", ".join(f"{m} {n}" for m, n in data["largest"]))
    by_floor: dict[int, list[str]] = {}
    for module, level in data["floor"].items():  # type: ignore[attr-defined]
        by_floor.setdefault(level, []).append(module)
    for level in sorted(by_floor, reverse=True):
        print(f"floor {level}: {' '.join(sorted(by_floor[level]))}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:  # piped into `head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
