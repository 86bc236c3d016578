"""How the session is put together: retrieval never depends on it, its collaborators never
import the facade, and a sub-agent it spawns is held to its grant.

The import checks read the source (``TYPE_CHECKING`` imports included), so a cycle hidden
behind a lazy or type-only import fails them too.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis.config import CompactionConfig
from mnesis.llm import FakeLLM, Respond, ToolCall

SRC = Path(__file__).resolve().parents[2] / "src"


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in (SRC / "mnesis").rglob("*.py")}
    return {name: _imports(path) & set(modules) - {name} for name, path in modules.items()}


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for dep in graph[todo.pop()]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


class TestDependenciesPointDown:
    def test_retrieval_never_reaches_the_session(self) -> None:
        graph = _graph()
        retrieval = [m for m in graph if m.startswith("mnesis.retrieval")]
        assert retrieval
        offenders = {
            module: sorted(
                d
                for d in _reachable(graph, module)
                if d.startswith(("mnesis.session", "mnesis._session"))
            )
            for module in retrieval
        }
        assert {m: deps for m, deps in offenders.items() if deps} == {}

    def test_the_collaborators_never_import_the_facade(self) -> None:
        graph = _graph()
        collaborators = [m for m in graph if m.startswith("mnesis._session")]
        assert len(collaborators) > 5
        assert [m for m in collaborators if "mnesis.session" in _reachable(graph, m)] == []

    def test_nothing_the_session_is_made_of_is_in_an_import_cycle(self) -> None:
        graph = _graph()
        ours = [m for m in graph if m == "mnesis.session" or m.startswith("mnesis._session")]
        assert [m for m in ours if m in _reachable(graph, m)] == []


class TestASubAgentIsHeldToItsGrant:
    async def test_it_cannot_spawn_sub_agents_of_its_own(self, tmp_path: Path) -> None:
        llm = FakeLLM()
        pool = StorePool()
        config = MnesisConfig(
            model_overrides={"context_limit": 32_000, "max_output_tokens": 2_000},
            compaction=CompactionConfig(
                compaction_output_budget=4_000, compaction_model="extractive"
            ),
        )
        session = await MnesisSession.create(
            model="fake/model", db_path=str(tmp_path / "s.db"), pool=pool, config=config, llm=llm
        )
        try:
            for index in range(40):
                log = f"host {index} deploy log line\n" * 60
                await session.record(f"the deploy key of host {index} is k{index}", log)
            # Automatic compaction may already have summarised everything outside the tail.
            assert (await session.compact()).stop_reason in ("done", "nothing_to_do")
            summary_id = (await session.grep("deploy key", scope="summaries")).matches[0].id
            nested = {"prompt": "again?", "summary_ids": [summary_id]}
            llm.script(
                Respond("", tool_calls=(ToolCall("t1", "lcm_expand_query", nested),)),
                Respond(f"Key k3 ({summary_id})."),
            )
            result = await session.expand_query("Key of host 3?", summary_ids=[summary_id])
            assert result.answer == f"Key k3 ({summary_id})."
            assert result.tool_calls == 1
            child = await MnesisSession.load(
                result.sub_session_id, pool=pool, db_path=str(tmp_path / "s.db")
            )
            calls = [p for m in await child.conversation_messages() for p in m.tool_parts]
            await child.close()
            assert [c.tool_name for c in calls] == ["lcm_expand_query"]
            assert "not available" in json.loads(calls[0].output or "{}")["error"]
        finally:
            await session.close()
            await pool.close_all()
