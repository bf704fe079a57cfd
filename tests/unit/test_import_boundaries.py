"""The package's layers, checked from the source: every static import of every module under
``src/fleetplane`` (relative or absolute, at module level, inside functions or under
``TYPE_CHECKING``), so a layer cannot reach past its boundary by importing late."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

import fleetplane

SRC = Path(fleetplane.__file__).parent
SERVER_SIDE = ("fleetplane.server", "fleetplane.registry", "fleetplane.storage")


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names (relative ones against ``module``)."""
    if not node.level:
        return node.module or ""
    is_package = modules()[module].name == "__init__.py"
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(module: str) -> set[str]:
    """The fleetplane modules ``module`` imports: ``from pkg import sub`` counts as ``pkg.sub``
    when ``sub`` is a module, else as ``pkg``."""
    known = modules()
    tree = ast.parse(known[module].read_text(), str(known[module]))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            names = [f"{target}.{a.name}" if f"{target}.{a.name}" in known else target for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:  # `import fleetplane.x.y` of a name inside a module
                name = name.rpartition(".")[0]
            if name.startswith("fleetplane") and name != module:
                out.add(name)
    return out


def _within(module: str, packages: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _violations(sources: tuple[str, ...], allowed: Callable[[str], bool]) -> list[str]:
    return sorted(f"{m} imports {t}" for m in modules() if _within(m, sources)
                  for t in imports_of(m) if not allowed(t))


def test_controllers_and_libraries_never_import_the_server_side() -> None:
    layers = tuple(f"fleetplane.{p}" for p in ("fleet", "kube", "access", "inventory"))
    bad = _violations(layers, lambda t: not _within(t, SERVER_SIDE))
    assert not bad, "\n".join(bad)


def test_sim_and_cli_reach_the_server_side_only_through_the_assembly() -> None:
    sources = ("fleetplane.sim", "fleetplane.cli")
    bad = _violations(sources, lambda t: not _within(t, SERVER_SIDE))
    assert not bad, "\n".join(bad)


def test_access_imports_nothing_of_fleetplane_but_itself() -> None:
    bad = _violations(("fleetplane.access",), lambda t: _within(t, ("fleetplane.access",)))
    assert not bad, "\n".join(bad)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the graph's strongly-connected components."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    out.append(sorted(component))
    return out


def _cycle_in(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One circle through the component's first module, for the message."""
    members, start = set(component), component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in sorted(graph[node] & members):
                if nxt == start:
                    return [*paths[node], start]
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    return component


def test_no_two_modules_import_each_other_directly_or_in_a_circle() -> None:
    graph = {m: imports_of(m) for m in modules()}
    cycles = [" -> ".join(_cycle_in(c, graph)) for c in strongly_connected(graph) if len(c) > 1]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_checks_see_relative_and_late_imports() -> None:
    """The checker itself, on the package's real modules: ``from . import module`` and a
    relative import inside a function are edges; then Tarjan's components on a known graph."""
    assert "fleetplane.server.metrics" in imports_of("fleetplane.server.app")
    assert "fleetplane.kube.leaderelection" in imports_of("fleetplane.fleet.cluster.run")
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(graph) == [["a", "b", "c"], ["d"]]
    assert _cycle_in(["a", "b", "c"], graph) == ["a", "b", "c", "a"]
