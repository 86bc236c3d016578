"""The architecture rule, checked: no import cycles in ``src/mnesis``; imports point down.

The layers, highest first; a package may import its own layer and any lower one, never a
higher one::

    adapters     cli  mcp  metrics  testing  importers  workers  report  integrations
                 (and the top-level ``mnesis`` API)
    operators    operators
    session      session
    engines      compaction
                 context  retrieval  integrity  files
    storage      store  llm
    foundation   models  config  events  tokens  logs  tasks  retry
    errors       errors

Every import counts, including imports inside functions (a lazy import must not hide a
cycle); only imports under ``if TYPE_CHECKING:`` are ignored.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from pathlib import Path

import mnesis

SRC = Path(mnesis.__file__).resolve().parent

LAYERS: list[set[str]] = [
    {"errors"},
    {"models", "config", "events", "tokens", "logs", "tasks", "retry"},
    {"store", "llm"},
    {"context", "retrieval", "integrity", "files"},
    {"compaction"},
    {"session"},
    {"operators"},
    {"cli", "mcp", "metrics", "testing", "importers", "workers", "report", "mnesis"}
    | {"integrations"},
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
    """``module -> the mnesis modules it imports`` (a fresh copy: callers may add edges)."""
    graph: dict[str, set[str]] = defaultdict(set)
    graph.update((module, set(targets)) for module, targets in _parsed_graph().items())
    return graph


@functools.cache
def _parsed_graph() -> dict[str, frozenset[str]]:
    """The import graph, parsed once per test run."""
    return {module: frozenset(targets) for module, targets in _parse_graph().items()}


def _parse_graph() -> dict[str, set[str]]:
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
                graph[module].update(a.name for a in node.names if a.name.split(".")[0] == "mnesis")
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


DOC = SRC.parents[1] / "docs" / "architecture.md"
_FILE_NAME = re.compile(r"(?<![\w/.])([A-Za-z_]\w*\.py)\b")
_DESCRIPTION_COLUMN = 20


def _code_block_after(heading: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    after = text[text.index(heading) :]
    start = after.index("```\n") + 4
    return after[start : after.index("```", start)].splitlines()


def _layers_in_the_doc() -> list[set[str]]:
    """The picture's rows (a row without a layer name is a lower tier of the one above),
    lowest first, as the package names ``_package`` gives."""
    layers: list[set[str]] = []
    for line in _code_block_after("## Layers"):
        tokens = re.findall(r"[\w/.]+(?:/|\.py)", line)
        if tokens:
            layers.append(
                {
                    "mnesis" if token == "mnesis/__init__.py" else _package(f"mnesis.{name}")
                    for token in tokens
                    for name in [token.removesuffix("/").removesuffix(".py")]
                }
            )
    return layers[::-1]


def _modules_named_in_the_doc() -> dict[str, list[str]]:
    """Each folder of the folder map (``"."`` for ``mnesis/``) → the file names its entry
    names, in order, repeats kept."""
    named: dict[str, list[str]] = defaultdict(list)
    stack: list[str] = []
    folder = "."
    for line in _code_block_after("## Folders"):
        indent = len(line) - len(line.lstrip())
        first = line.split()[0] if line.strip() else ""
        if indent < _DESCRIPTION_COLUMN and first.endswith("/"):
            depth = indent // 2
            stack[depth:] = [first.removesuffix("/")]
            folder = "/".join(stack[1:]) or "."
            line = line[indent + len(first) :]
        elif indent < _DESCRIPTION_COLUMN and first.endswith(".py"):
            folder = "/".join(stack[1 : indent // 2]) or "."
        named[folder].extend(_FILE_NAME.findall(line))
    return named


def _modules_on_disk() -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC)
        folder = relative.parent.as_posix()
        if path.name == "__init__.py" and folder != ".":
            continue
        if relative.parent.name == "migrations" and re.fullmatch(r"m\d{3}_\w+\.py", path.name):
            continue
        found[folder].add(path.name)
    return found


def test_the_doc_draws_the_layers_the_rule_enforces() -> None:
    assert _layers_in_the_doc() == LAYERS


def test_the_folder_map_names_every_module_once() -> None:
    named = _modules_named_in_the_doc()
    on_disk = _modules_on_disk()
    missing = sorted(
        f"{folder}/{name}"
        for folder, names in on_disk.items()
        for name in names
        if name not in named.get(folder, [])
    )
    unknown = sorted(
        f"{folder}/{name}"
        for folder, names in named.items()
        for name in set(names)
        if name not in on_disk.get(folder, set())
    )
    repeated = sorted(
        f"{folder}/{name}"
        for folder, names in named.items()
        for name in set(names)
        if names.count(name) > 1
    )
    assert (missing, unknown, repeated) == ([], [], [])


MAX_LINES = 400
"""A module is one job: a few hundred lines at most."""

OVER_THE_LIMIT: dict[str, str] = {
    # Not logic: the recorded tool outputs of the test kit's payments story.
    "testing/_payments_outputs.py": "data: the scenario's recorded tool outputs",
    # The session facade keeps one public method per seed entry point (see the
    # decisions in docs/architecture.md).
    "session.py": "MnesisSession: the public facade, one short method per entry point",
}
"""Modules allowed above :data:`MAX_LINES`, each with its reason. An entry whose file
is gone or back under the limit fails the test, so the list only shrinks."""


def _line_counts() -> dict[str, int]:
    return {
        path.relative_to(SRC).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in SRC.rglob("*.py")
    }


def test_no_module_is_above_a_few_hundred_lines() -> None:
    counts = _line_counts()
    too_long = sorted(
        f"{path}: {lines}"
        for path, lines in counts.items()
        if lines > MAX_LINES and path not in OVER_THE_LIMIT
    )
    stale = sorted(path for path in OVER_THE_LIMIT if counts.get(path, 0) <= MAX_LINES)
    assert (too_long, stale) == ([], [])


def _arrows_on_disk() -> dict[str, set[str]]:
    arrows: dict[str, set[str]] = {name: set() for name in RANK}
    for source, targets in _import_graph().items():
        for target in targets:
            if _package(source) != _package(target):
                arrows[_package(source)].add(_package(target))
    return arrows


def _arrows_in_the_doc() -> dict[str, set[str]]:
    arrows: dict[str, set[str]] = {}
    for line in _code_block_after("## Arrows"):
        room, _, targets = line.partition("→")
        arrows[room.strip()] = set(targets.split()) - {"(nothing)"}
    return arrows


def test_the_doc_draws_every_arrow_between_rooms() -> None:
    on_disk = _arrows_on_disk()
    expected = "\n".join(
        f"{room:<13}→ {' '.join(sorted(targets, key=lambda t: (-RANK[t], t))) or '(nothing)'}"
        for room, targets in sorted(on_disk.items(), key=lambda item: (-RANK[item[0]], item[0]))
    )
    assert _arrows_in_the_doc() == on_disk, f"the tree's arrows:\n{expected}"


def _classes() -> dict[str, list[str]]:
    """``path:ClassName`` of every class of ``src/mnesis`` → its bases as written."""
    found: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                key = f"{path.relative_to(SRC).as_posix()}:{node.name}"
                found[key] = [ast.unparse(base) for base in node.bases]
    return found


def test_no_mixin_classes() -> None:
    assert sorted(key for key in _classes() if key.endswith("Mixin")) == []


def test_store_classes_have_one_base() -> None:
    """Everything in ``src/mnesis/store`` is one engine-neutral base and its engine's
    subclass (``Generic[...]`` aside): no class assembled from several."""
    many = {
        key
        for key, bases in _classes().items()
        if key.startswith("store/") and len([b for b in bases if not b.startswith("Generic[")]) > 1
    }
    assert sorted(many) == []


def test_each_collaborator_is_found_by_its_name() -> None:
    """``store.<topic>`` is ``<Engine><Topic>`` in ``store/<engine>/<topic>.py``, the
    engine's subclass (one base) of the engine-neutral ``Base<Topic>``, and each engine's
    store sets it; so a reader knows from ``store.stats`` which file to open."""
    from mnesis.store.shared.wrapper import BackendWrapper

    topics = [name for name in BackendWrapper.__annotations__ if not name.startswith("_")]
    classes = _classes()
    wrong = []
    for folder, engine in (("sqlite", "SQLite"), ("postgres", "Postgres")):
        store = (SRC / "store" / folder / "store.py").read_text(encoding="utf-8")
        for topic in topics:
            camel = "".join(word.capitalize() for word in topic.split("_"))
            name = f"{engine}{camel}"
            bases = classes.get(f"store/{folder}/{topic}.py:{name}")
            base = f"Base{camel}["
            if bases is None or len(bases) != 1 or not bases[0].startswith(base):
                wrong.append(f"store/{folder}/{topic}.py:{name} {bases}")
            if f"self.{topic} = {name}(db)" not in store:
                wrong.append(f"store/{folder}/store.py does not set self.{topic}")
    assert (sorted(topics), wrong) == (
        [
            "batch",
            "grep_reads",
            "integrity",
            "messages",
            "purge",
            "search",
            "sessions",
            "stats",
            "summaries",
        ],
        [],
    )
