"""``import mnesis`` stays light: counted in a fresh interpreter, never timed here.

The public names of ``mnesis`` (and ``EXPLORERS`` / ``explore`` of ``mnesis.files``) are
imported on first use through a module-level ``__getattr__``; the type checkers read the
same imports under ``if TYPE_CHECKING:``. The time it saves is measured by
``benchmarks/bench_import_time.py``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import mnesis
from tests.test_architecture import RANK, SRC, _cycles, _import_graph, _module_name, _package

MAX_MODULES = 200
"""The most modules ``import mnesis`` may leave in ``sys.modules`` (the interpreter's
own included; a bare ``python -c pass`` has ~35, pydantic with one model ~215)."""

HEAVY = ["jinja2", "jsonschema", "regex", "rich", "typer", "orjson", "litellm"]
"""Optional or costly libraries ``import mnesis`` must not load."""

SESSION_HEAVY = ["jinja2", "jsonschema", "regex", "rich", "typer", "litellm"]
"""What recording turns (``from mnesis import MnesisSession``) must not load either.
orjson is left out: the store's JSON codec uses it on the first message written."""

_PROBE = """
import json, sys
def loaded():
    return sorted(sys.modules)
import mnesis
after_import = loaded()
from mnesis import MnesisSession
print(json.dumps({"import": after_import, "session": loaded()}))
"""


def _loaded() -> dict[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    )
    loaded: dict[str, list[str]] = json.loads(done.stdout)
    return loaded


def _top_level(modules: list[str], names: list[str]) -> list[str]:
    return sorted({m.split(".")[0] for m in modules} & set(names))


def test_import_mnesis_loads_few_modules_and_nothing_heavy() -> None:
    loaded = _loaded()
    after_import = loaded["import"]
    assert len(after_import) < MAX_MODULES, sorted(after_import)
    assert _top_level(after_import, HEAVY) == []
    assert [m for m in after_import if m.startswith("mnesis.")] == ["mnesis.errors"]

    session = loaded["session"]
    assert _top_level(session, SESSION_HEAVY) == []
    assert not [m for m in session if m.startswith(("mnesis.operators", "mnesis.files.explorers"))]


def test_every_public_name_is_listed_and_resolves_to_its_home() -> None:
    assert set(mnesis.__all__) <= set(dir(mnesis))
    lazy: dict[str, str] = mnesis._HOMES
    assert set(lazy) <= set(mnesis.__all__)
    for name, home in lazy.items():
        assert getattr(mnesis, name) is getattr(sys.modules[home], name)


def _type_checking_imports(path: str) -> dict[str, str]:
    """``name -> module`` for the ``from mnesis... import name`` under ``if TYPE_CHECKING``."""
    tree = ast.parse((SRC / path).read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                if isinstance(inner, ast.ImportFrom) and inner.module:
                    found.update((alias.name, inner.module) for alias in inner.names)
    return found


def test_the_lazy_table_is_the_type_checkers_imports() -> None:
    assert _type_checking_imports("__init__.py") == mnesis._HOMES


def _lazy_modules() -> list[str]:
    """Modules with a module-level ``__getattr__`` (under ``if not TYPE_CHECKING`` or not)."""
    lazy = []
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "def __getattr__(" not in text:
            continue
        tree = ast.parse(text)
        top = [
            node
            for statement in tree.body
            for node in (
                statement.body + statement.orelse if isinstance(statement, ast.If) else [statement]
            )
        ]
        if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in top):
            lazy.append(path.relative_to(SRC).as_posix())
    return sorted(lazy)


def test_lazy_imports_hide_no_cycle_and_point_down() -> None:
    # The architecture test skips imports under TYPE_CHECKING; a module that imports
    # those names on first use really depends on them, so the edges are added back.
    lazy = _lazy_modules()
    assert {"__init__.py", "files/__init__.py"} <= set(lazy)
    graph = _import_graph()
    for path in lazy:
        source = _module_name(SRC / path)
        graph[source].update(_type_checking_imports(path).values())
    assert _cycles(graph) == []
    upward = [
        f"{source} -> {target}"
        for source, targets in graph.items()
        for target in targets
        if RANK[_package(target)] > RANK[_package(source)]
    ]
    assert upward == []
