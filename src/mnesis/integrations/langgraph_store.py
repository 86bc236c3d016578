"""LangGraph (``pip install 'mnesis-lcm[langchain]'``): a ``BaseStore`` for long-term
memory whose ``search`` is mnesis grep.

Each namespace is a mnesis session (agent ``langgraph-store``); a ``put`` records the
item as a turn of it (the item's JSON, acknowledged), so every version of every item
stays stored and searchable with mnesis (``mnesis grep``, ``mnesis show``). The key →
current version map lives in :mod:`~mnesis.integrations.registry` rows
(``format="langgraph-store"``); a delete drops the key from that map (append-only: the
versions stay stored, ``mnesis purge`` of the namespace's session deletes them).

Why a store and not a checkpointer: a checkpointer saves the graph's whole state at
every step and replaces it (forks, pending writes, channel versions): snapshots, not a
conversation, nothing mnesis compacts or searches. A store keeps documents the agent
reads back across threads by key and by search, which is what mnesis retrieval is for.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, TypeVar

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from mnesis.config import MnesisConfig
from mnesis.errors import InvalidArgumentError
from mnesis.integrations.held import Held
from mnesis.integrations.portal import Portal
from mnesis.integrations.registry import Registry, Row, key
from mnesis.session import MnesisSession
from mnesis.store.pool import StorePool

__all__ = ["MnesisStore"]

FORMAT = "langgraph-store"
_CHUNK = 100
"""Items read per query while a search walks its candidates."""
_ItemT = TypeVar("_ItemT", bound=Item)
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a is not None and a > b,
    "$gte": lambda a, b: a is not None and a >= b,
    "$lt": lambda a, b: a is not None and a < b,
    "$lte": lambda a, b: a is not None and a <= b,
}


class MnesisStore(BaseStore):
    """A LangGraph ``BaseStore`` in a mnesis database (``graph.compile(store=...)``).

    ``MnesisStore(db_path="memory.db")`` (or ``config=`` with a PostgreSQL ``store``);
    ``model`` only sizes the namespaces' sessions. Sync (``batch``) and async
    (``abatch``) both work, from any thread or loop: the store runs on an event loop of
    its own (:class:`~mnesis.integrations.portal.Portal`). ``search(query=...)`` is
    mnesis full-text grep over the namespaces under the prefix (best first, ``score``
    its rank; the best ``max(50, 5 * (offset + limit))`` hits are looked at, older
    versions of an item among them skipped); without a query, the newest items first.
    ``filter`` matches top-level value fields (equality, or ``$eq`` / ``$ne`` / ``$gt`` /
    ``$gte`` / ``$lt`` / ``$lte``). Not supported: embedding indexes (``index=``) and
    TTLs. Call :meth:`close` when done.
    """

    def __init__(
        self,
        *,
        db_path: str | None = None,
        config: MnesisConfig | None = None,
        pool: StorePool | None = None,
        model: str = "local/memory",
    ) -> None:
        """A store on ``db_path`` (or ``config.store``)."""
        config = config or MnesisConfig(
            model_overrides={"context_limit": 128_000, "max_output_tokens": 4_000}
        )
        self._model = model
        self._portal = Portal()
        self._held = Held(db_path, config, pool, fmt=FORMAT)
        self._lock = asyncio.Lock()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order (blocking this thread)."""
        ops = list(ops)
        return self._portal.call(lambda: self._batch(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order."""
        ops = list(ops)
        return await self._portal.acall(lambda: self._batch(ops))

    def close(self) -> None:
        """Close the namespaces' sessions, the store, then the store's loop."""
        self._portal.call(self._close)
        self._portal.close()

    async def _close(self) -> None:
        await self._held.close()

    # -- operations -----------------------------------------------------------
    async def _batch(self, ops: list[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, PutOp):
                async with self._lock:  # one read-modify-write of a namespace at a time
                    await self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list(op))
            else:
                raise InvalidArgumentError(f"unknown store operation {type(op).__name__}")
        return results

    async def _get(self, op: GetOp) -> Item | None:
        row = await (await self._rows()).get("ns", *op.namespace)
        entry = row.state["items"].get(op.key) if row else None
        if entry is None:
            return None
        return (await self._items(Item, [(op.namespace, op.key, entry)]))[0]

    async def _put(self, op: PutOp) -> None:
        if op.index not in (None, False):
            raise InvalidArgumentError("MnesisStore has no embedding index: pass index=None")
        if not op.namespace or not all(isinstance(n, str) and n for n in op.namespace):
            raise InvalidArgumentError(f"namespace must be non-empty strings, got {op.namespace!r}")
        registry = await self._rows()
        row = await registry.get("ns", *op.namespace)
        if op.value is None:
            if row is not None and row.state["items"].pop(op.key, None) is not None:
                await registry.put(row)
            return
        document = json.dumps({"key": op.key, "value": op.value}, ensure_ascii=False)
        if row is None:
            session = await self._new(op.namespace)
            row = Row(
                key("ns", *op.namespace, fmt=FORMAT),
                session.id,
                {"namespace": list(op.namespace), "items": {}},
            )
            await self._add_namespace(op.namespace, session.id)
        session = await self._session(row.session_id)
        recorded = await session.record_messages(
            [
                {"role": "user", "content": document},
                {"role": "assistant", "content": f"Stored {op.key}."},
            ]
        )
        now = datetime.now(UTC).isoformat()
        old = row.state["items"].get(op.key)
        row.state["items"][op.key] = {
            "message_id": recorded.user_message_id,
            "created": old["created"] if old else now,
            "updated": now,
        }
        row.count += 1
        await registry.put(row)

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        registry = await self._rows()
        rows = [
            row
            for ns in await self._namespaces()
            if tuple(ns[: len(op.namespace_prefix)]) == tuple(op.namespace_prefix)
            and (row := await registry.get("ns", *ns)) is not None
        ]
        entries = [
            (tuple(row.state["namespace"]), name, entry)
            for row in rows
            for name, entry in row.state["items"].items()
        ]
        scores: dict[str, float] = {}
        if op.query:
            by_id = {entry["message_id"]: (ns, name, entry) for ns, name, entry in entries}
            found = (
                await (await self._session(rows[0].session_id)).grep(
                    op.query,
                    session_ids=[row.session_id for row in rows],
                    scope="messages",
                    limit=max(50, 5 * (op.offset + op.limit)),
                )
                if rows
                else None
            )
            hits = [m for m in found.matches if m.id in by_id] if found else []
            scores = {m.id: float(m.rank) for m in hits}
            entries = [by_id[m.id] for m in hits if m.id in by_id]
            entries = list({e[2]["message_id"]: e for e in entries}.values())
        else:
            entries.sort(key=lambda e: str(e[2]["updated"]), reverse=True)
        items: list[SearchItem] = []
        for start in range(0, len(entries), _CHUNK):
            if len(items) >= op.offset + op.limit:
                break
            chunk = entries[start : start + _CHUNK]
            chunk_items = await self._items(SearchItem, chunk)
            for item, (_, _, entry) in zip(chunk_items, chunk, strict=True):
                if len(items) < op.offset + op.limit and _matches(item.value, op.filter):
                    item.score = scores.get(entry["message_id"])
                    items.append(item)
        return items[op.offset :]

    async def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found: set[tuple[str, ...]] = set()
        for ns in await self._namespaces():
            path = tuple(ns)
            if all(_condition(path, c.match_type, c.path) for c in op.match_conditions or ()):
                found.add(path[: op.max_depth] if op.max_depth is not None else path)
        return sorted(found)[op.offset : op.offset + op.limit]

    # -- helpers --------------------------------------------------------------
    async def _items(
        self, kind: type[_ItemT], entries: list[tuple[tuple[str, ...], str, dict[str, Any]]]
    ) -> list[_ItemT]:
        """The ``kind`` items (``Item``, or ``SearchItem`` without a score yet) of
        ``(namespace, key, entry)`` triples, in their order (one read)."""
        registry = await self._rows()
        ids = [entry["message_id"] for _, _, entry in entries]
        messages = {m.id: m for m in await registry.store.get_messages_by_ids(ids)}
        items = []
        for namespace, name, entry in entries:
            document = json.loads(messages[entry["message_id"]].text)
            items.append(
                kind(
                    namespace=namespace,
                    key=name,
                    value=document["value"],
                    created_at=datetime.fromisoformat(entry["created"]),
                    updated_at=datetime.fromisoformat(entry["updated"]),
                )
            )
        return items

    async def _namespaces(self) -> list[list[str]]:
        index = await (await self._rows()).get("namespaces")
        return list(index.state["namespaces"]) if index else []

    async def _add_namespace(self, namespace: tuple[str, ...], session_id: str) -> None:
        registry = await self._rows()
        index = await registry.get("namespaces")
        if index is None:
            index = Row(key("namespaces", fmt=FORMAT), session_id, {"namespaces": []})
        index.state["namespaces"].append(list(namespace))
        await registry.put(index)

    async def _rows(self) -> Registry:
        return await self._held.registry()

    async def _new(self, namespace: tuple[str, ...]) -> MnesisSession:
        return await self._held.create(
            self._model,
            "langgraph-store",
            "LangGraph store namespace " + json.dumps(list(namespace)),
        )

    async def _session(self, session_id: str) -> MnesisSession:
        return await self._held.session(session_id)


def _matches(value: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    for field, condition in (wanted or {}).items():
        actual = value.get(field)
        if isinstance(condition, dict) and condition and set(condition) <= set(_COMPARE):
            if not all(_COMPARE[o](actual, operand) for o, operand in condition.items()):
                return False
        elif actual != condition:
            return False
    return True


def _condition(path: tuple[str, ...], kind: str, pattern: tuple[str, ...]) -> bool:
    if len(pattern) > len(path):
        return False
    part = path[: len(pattern)] if kind == "prefix" else path[len(path) - len(pattern) :]
    return all(p == "*" or p == q for p, q in zip(pattern, part, strict=True))
