"""The LangGraph store over mnesis in a real LangGraph graph (nodes reading and writing
the store LangGraph hands them), and the ``BaseStore`` operations: get, put, delete on
an append-only store, search by grep with filters, namespaces; sync and async."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import Item, SearchItem

from mnesis import MnesisSession
from mnesis.errors import InvalidArgumentError
from mnesis.integrations.langgraph_store import MnesisStore
from tests.integrations.scenario import PORT_FACT, turn_text

NS = ("memories", "ada")


class State(TypedDict, total=False):
    notes: list[str]
    question: str
    found: list[str]


async def remember(state: State) -> dict[str, Any]:
    store = get_store()
    for number, note in enumerate(state.get("notes", [])):
        await store.aput(NS, f"note-{number}", {"text": note, "number": number})
    return {}


async def recall(state: State) -> dict[str, Any]:
    if not state.get("question"):
        return {"found": []}
    hits = await get_store().asearch(("memories",), query=state["question"], limit=3)
    return {"found": [hit.value["text"] for hit in hits]}


def _graph(store: MnesisStore) -> Any:
    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    return graph.compile(store=store)


async def test_a_graph_finds_what_an_earlier_run_stored(tmp_path: Path) -> None:
    store = MnesisStore(db_path=str(tmp_path / "memory.db"))
    try:
        graph = _graph(store)
        notes = [turn_text(n) for n in range(30)]
        await graph.ainvoke({"notes": notes})
        state = await graph.ainvoke({"question": "Which port does the deploy service use?"})
        assert state["found"][0] == PORT_FACT
        # Every item is a stored turn of the namespace's mnesis session, found by grep.
        item = await store.aget(NS, "note-0")
        assert item is not None and item.value == {"text": PORT_FACT, "number": 0}
    finally:
        store.close()
    async with MnesisSession.open(model="local/m", db_path=str(tmp_path / "memory.db")) as s:
        found = await s.grep("8443", all_sessions=True)
        assert any(PORT_FACT in m.snippet for m in found.matches)


async def test_operations(tmp_path: Path) -> None:
    store = MnesisStore(db_path=str(tmp_path / "memory.db"))
    try:
        store.put(NS, "lang", {"text": "Ada writes Python", "level": 3})  # sync, in a loop
        await store.aput(NS, "editor", {"text": "Ada edits in vim", "level": 1})
        await store.aput(("memories", "bob"), "lang", {"text": "Bob writes Rust", "level": 2})
        await store.aput(("prefs", "ada", "ui"), "theme", {"text": "dark"})
        first = await store.aget(NS, "lang")
        await store.aput(NS, "lang", {"text": "Ada writes Python and Go", "level": 4})
        second = await store.aget(NS, "lang")
        assert first is not None and second is not None
        assert second.value["text"] == "Ada writes Python and Go"
        assert second.created_at == first.created_at <= second.updated_at
        assert type(second) is Item and "score" not in second.dict()

        hits = await store.asearch(("memories",), query="writes", filter={"level": {"$gte": 3}})
        assert [(h.namespace, h.key) for h in hits] == [(NS, "lang")]
        assert isinstance(hits[0], SearchItem) and hits[0].score is not None
        assert (hits[0].value, hits[0].created_at, hits[0].updated_at) == (
            second.value,
            second.created_at,
            second.updated_at,
        )
        newest = await store.asearch(("memories",), limit=2)
        assert [h.key for h in newest] == ["lang", "lang"]
        assert [h.namespace for h in newest] == [NS, ("memories", "bob")]
        assert all(isinstance(h, SearchItem) and h.score is None for h in newest)
        assert store.search(("memories",), filter={"level": 1})[0].key == "editor"

        assert await store.alist_namespaces() == [
            ("memories", "ada"),
            ("memories", "bob"),
            ("prefs", "ada", "ui"),
        ]
        assert await store.alist_namespaces(prefix=("prefs",), max_depth=2) == [("prefs", "ada")]
        assert await store.alist_namespaces(suffix=("*", "bob")) == [("memories", "bob")]

        await store.adelete(NS, "lang")
        assert await store.aget(NS, "lang") is None
        assert [h.key for h in await store.asearch(NS, query="Python")] == []
        # Concurrent puts to one namespace lose no key.
        await asyncio.gather(*(store.aput(("burst",), f"k{n}", {"n": n}) for n in range(20)))
        assert len(await store.asearch(("burst",), limit=50)) == 20
        with pytest.raises(InvalidArgumentError, match="embedding index"):
            await store.aput(NS, "x", {"text": "y"}, index=["text"])
    finally:
        store.close()
    # Append-only: the deleted item's versions are still stored and found by grep.
    async with MnesisSession.open(model="local/m", db_path=str(tmp_path / "memory.db")) as s:
        found = await s.grep('"Python and Go"', all_sessions=True)
        assert found.matches
