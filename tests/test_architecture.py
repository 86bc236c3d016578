"""The architecture rule, checked: no import cycles in ``src/mnesis``; imports point down.

The layers, highest first; a package may import its own layer and any lower one, never a
higher one::

    adapters     cli  mcp  metrics  testing  importers  workers  report
                 (and the top-level ``mnesis`` API)
    operators    operators
    session      session
    engines      compaction
                 context  retrieval  integrity  files
    storage      store  llm
    foundation   models  config  events  tokens  logs
    errors       errors

Every import counts, including imports inside functions (a lazy import must not hide a
cycle); only imports under ``if TYPE_CHECKING:`` are ignored.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import mnesis

SRC = Path(mnesis.__file__).resolve().parent

LAYERS: list[set[str]] = [
    {"errors"},
    {"models", "config", "events", "tokens", "logs"},
    {"store", "llm"},
    {"context", "retrieval", "integrity", "files"},
    {"compaction"},
    {"session"},
    {"operators"},
    {"cli", "mcp", "metrics", "testing", "importers", "workers", "report", "mnesis"},
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "mnesis"
    name = parts[1].lstrip("_")
    return "session" if name.startswith("session") else name


def _import_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        type_only: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                type_only.update(id(n) for n in ast.walk(node))
        for node in ast.walk(tree):
            if id(node) in type_only:
                continue
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] != "mnesis":
                    continue
                for alias in node.names:
                    target = f"{node.module}.{alias.name}"
                    graph[module].add(target if target in modules else node.module)
            elif isinstance(node, ast.Import):
                graph[module].update(
                    a.name for a in node.names if a.name.split(".")[0] == "mnesis"
                )
            elif isinstance(node, ast.ImportFrom) and node.level:
                raise AssertionError(f"{module}: use absolute imports, not relative ones")
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_there_are_no_import_cycles() -> None:
    assert _cycles(_import_graph()) == []


def test_every_package_has_a_layer() -> None:
    packages = {_package(m) for m in _import_graph()}
    assert packages - set(RANK) == set()


def test_imports_point_down_the_layers() -> None:
    upward = sorted(
        f"{source} -> {target}"
        for source, targets in _import_graph().items()
        for target in targets
        if RANK[_package(target)] > RANK[_package(source)]
    )
    assert upward == []


def test_the_checker_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
