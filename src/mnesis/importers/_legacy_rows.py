"""Reading the earlier library's rows and writing them through the public store interface.

The conversion behind :func:`mnesis.importers.mnesis_legacy.upgrade_database`: sessions,
messages and parts, summary nodes (as summaries with their lineage), file references and
each session's context view.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from mnesis.files.handler import file_id_for
from mnesis.models.ids import is_valid_id, new_id
from mnesis.models.message import Message
from mnesis.models.parts import (
    CompactionPart,
    FileRefPart,
    MessagePart,
    TextPart,
    ToolPart,
    part_adapter,
)
from mnesis.models.summary import FileReference, SummaryRecord
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import NewMessage, SessionRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.store.summary_dag import SummaryDAGStore
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = ["LegacyImporter", "LegacyReader"]

_HEX = frozenset("0123456789abcdef")


class LegacyReader:
    """Read access to (a copy of) a legacy database."""

    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect(path)
        self.conn.row_factory = sqlite3.Row

    def close(self) -> None:
        self.conn.close()

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
        return list(self.conn.execute(sql, tuple(args)))

    def counts(self) -> dict[str, int]:
        def one(sql: str) -> int:
            return int(self.conn.execute(sql).fetchone()[0])

        return {
            "sessions": one("SELECT COUNT(*) FROM sessions"),
            "messages": one("SELECT COUNT(*) FROM messages"),
            "parts": one("SELECT COUNT(*) FROM message_parts"),
            "tool_parts": one("SELECT COUNT(*) FROM message_parts WHERE part_type = 'tool'"),
            "tombstones": one("SELECT COUNT(*) FROM message_parts WHERE compacted_at IS NOT NULL"),
            "summaries": one("SELECT COUNT(*) FROM summary_nodes"),
            "file_references": one("SELECT COUNT(*) FROM file_references"),
            "context_items": one("SELECT COUNT(*) FROM context_items"),
        }


class LegacyImporter:
    """Writes the legacy rows through the public store interface."""

    def __init__(self, legacy: LegacyReader, store: ImmutableStore) -> None:
        self.legacy = legacy
        self.store = store
        self.dag = SummaryDAGStore(store)
        self.estimator = TokenEstimator()
        self.summary_ids: dict[str, str] = {}

    async def run(self) -> list[str]:
        for row in self.legacy.rows("SELECT * FROM file_references ORDER BY created_at"):
            await self.store.store_file_reference(_file_reference(row))
        sessions = self.legacy.rows("SELECT * FROM sessions ORDER BY created_at, rowid")
        done: list[str] = []
        pending = list(sessions)
        while pending:  # parents before children
            ready = [r for r in pending if r["parent_id"] is None or r["parent_id"] in done]
            if not ready:
                ready = pending[:1]
            for row in ready:
                await self._session(row)
                done.append(row["id"])
                pending.remove(row)
        return done

    async def _session(self, row: sqlite3.Row) -> None:
        sid = row["id"]
        metadata = _json(row["metadata"])
        await self.store.create_session(
            SessionRecord(
                id=sid,
                model=row["model_id"] or "unknown/unknown",
                agent=row["agent"] or "default",
                parent_id=row["parent_id"],
                system_prompt=row["system_prompt"] or "",
                title=row["title"],
                status="active" if row["is_active"] else "closed",
                created_at=row["created_at"],
                updated_at=row["updated_at"],
                config=metadata if isinstance(metadata, dict) else None,
            )
        )
        nodes = {
            r["id"]: r
            for r in self.legacy.rows(
                "SELECT * FROM summary_nodes WHERE session_id = ? ORDER BY created_at, rowid",
                [sid],
            )
        }
        messages = self.legacy.rows(
            "SELECT * FROM messages WHERE session_id = ? ORDER BY created_at, rowid", [sid]
        )
        order = [m["id"] for m in messages if not m["is_summary"]]
        batch: list[NewMessage] = []
        for msg in messages:
            if msg["is_summary"] and msg["id"] in nodes:
                await self._flush(batch)
                await self._summary(nodes.pop(msg["id"]), msg, order)
            else:
                batch.append(self._message(msg, in_context=not msg["is_summary"]))
        await self._flush(batch)
        for node in nodes.values():  # summary nodes without a summary message
            await self._summary(node, None, order)
        await self._mirror_context(sid)

    async def _flush(self, batch: list[NewMessage]) -> None:
        if batch:
            await self.store.append_batch(batch)
            batch.clear()

    def _message(self, row: sqlite3.Row, *, in_context: bool) -> NewMessage:
        parts = [self._part(p) for p in self._part_rows(row["id"])]
        part_tokens = [self.estimator.estimate_part(p) for p in parts]
        message = Message(
            id=row["id"],
            session_id=row["session_id"],
            role=row["role"],
            created_at=row["created_at"],
            agent=row["agent"] or "default",
            model_id=row["model_id"] or None,
            provider_id=row["provider_id"] or None,
            is_summary=bool(row["is_summary"]),
            parent_id=row["parent_id"],
            tokens=TokenUsage(
                input=row["tokens_input"] or 0,
                output=row["tokens_output"] or 0,
                cache_read=row["tokens_cache_read"] or 0,
                cache_write=row["tokens_cache_write"] or 0,
                total=row["tokens_total"] or 0,
            ),
            cost=row["cost"] or 0.0,
            finish_reason=row["finish_reason"],
            token_estimate=MESSAGE_OVERHEAD_TOKENS + sum(part_tokens),
        )
        return NewMessage(message, parts, part_tokens, in_context)

    def _part_rows(self, message_id: str) -> list[sqlite3.Row]:
        return self.legacy.rows(
            "SELECT * FROM message_parts WHERE message_id = ? ORDER BY part_index, rowid",
            [message_id],
        )

    def _part(self, row: sqlite3.Row) -> MessagePart:
        data = _json(row["content"])
        if not isinstance(data, dict):
            data = {"type": "text", "text": str(row["content"])}
        data.setdefault("type", row["part_type"])
        part_id = row["id"] if is_valid_id(row["id"], "part") else new_id("part")
        kind = data["type"]
        part: MessagePart
        if kind == "tool":
            part = ToolPart(
                id=part_id,
                tool_name=data.get("tool_name") or row["tool_name"] or "unknown",
                tool_call_id=data.get("tool_call_id") or row["tool_call_id"] or part_id,
                input=data.get("input") or {},
                output=data.get("output"),
                error_message=data.get("error_message"),
                status={
                    "state": row["tool_state"]
                    or data.get("status", {}).get("state")
                    or "completed",
                    "compacted_at": row["compacted_at"],
                    "started_at": row["started_at"],
                    "completed_at": row["completed_at"],
                },
            )
        elif kind == "file_ref":
            content_id = str(data.get("content_id", ""))
            part = FileRefPart(
                id=part_id,
                content_id=content_id,
                file_id=_file_id(content_id),
                path=str(data.get("path", "")),
                file_type=str(data.get("file_type", "unknown")),
                token_count=int(data.get("token_count") or 0),
                exploration_summary=str(data.get("exploration_summary", "")),
            )
        elif kind == "compaction":
            old = str(data.get("summary_node_id", ""))
            part = CompactionPart(
                id=part_id,
                summary_id=self.summary_ids.get(old) or _summary_id(old),
                level=min(3, max(1, int(data.get("level") or 1))),
                compacted_message_count=int(data.get("compacted_message_count") or 0),
            )
        else:
            data["id"] = part_id
            try:
                part = part_adapter.validate_python(data)
            except ValueError:
                part = TextPart(id=part_id, text=json.dumps(data), synthetic=True)
        return part

    async def _summary(
        self, node: sqlite3.Row, message: sqlite3.Row | None, order: list[str]
    ) -> None:
        sid = node["session_id"]
        summary_id = _summary_id(node["id"])
        self.summary_ids[node["id"]] = summary_id
        parents = [self.summary_ids[p] for p in _json_list(node["parent_node_ids"])]
        if node["parent_node_id"] and not parents and node["parent_node_id"] in self.summary_ids:
            parents = [self.summary_ids[node["parent_node_id"]]]
        sources: list[str] = []
        if not parents:
            start, end = node["span_start_message_id"], node["span_end_message_id"]
            if start in order and end in order:
                sources = order[order.index(start) : order.index(end) + 1]
        marker = None
        if message is not None:
            marker = self._message(message, in_context=False)
            for part in marker.parts:
                if isinstance(part, CompactionPart):
                    part.summary_id = summary_id
        record = SummaryRecord(
            id=summary_id,
            session_id=sid,
            kind="condensed" if parents else "leaf",
            depth=1 if parents else 0,
            level=min(3, max(1, node["compaction_level"] or 1)),
            content=node["content"],
            token_count=node["token_count"] or self.estimator.estimate(node["content"]),
            file_ids=_file_ids_in(node["content"]),
            span_start_message_id=node["span_start_message_id"] or None,
            span_end_message_id=node["span_end_message_id"] or None,
            source_message_count=len(sources),
            created_at=node["created_at"],
        )
        if parents:
            children = await self.store.get_summaries(parents)
            record.depth = max((c.depth for c in children), default=0) + 1
        await self.dag.insert_node(
            record, source_message_ids=sources, parent_summary_ids=parents, marker=marker
        )

    async def _mirror_context(self, session_id: str) -> None:
        """Make the context view the old one (same items, same order)."""
        old = self.legacy.rows(
            "SELECT item_type, item_id FROM context_items WHERE session_id = ? ORDER BY position",
            [session_id],
        )
        if not old:
            return
        wanted = [(r["item_type"], self.summary_ids.get(r["item_id"], r["item_id"])) for r in old]
        current = await self.store.get_context_items(session_id)
        if [(i.item_type, i.item_id) for i in current] == wanted:
            return
        tokens = {i.item_id: i.tokens for i in current}
        messages = await self.store.get_messages_by_ids(
            [item_id for kind, item_id in wanted if kind == "message" and item_id not in tokens]
        )
        tokens.update({m.id: m.message.token_estimate for m in messages})
        summaries = await self.store.get_summaries(
            [item_id for kind, item_id in wanted if kind == "summary" and item_id not in tokens]
        )
        tokens.update({s.id: s.token_count + MESSAGE_OVERHEAD_TOKENS for s in summaries})
        await self.store.replace_context_items(
            session_id, [(kind, item_id, tokens.get(item_id, 0)) for kind, item_id in wanted]
        )


def _file_reference(row: sqlite3.Row) -> FileReference:
    content_id = row["content_id"]
    return FileReference(
        content_id=content_id,
        file_id=_file_id(content_id) or new_id("file"),
        path=row["path"],
        file_type=row["file_type"] or "unknown",
        token_count=row["token_count"] or 0,
        exploration_summary=row["exploration_summary"] or "",
        created_at=row["created_at"] or 0,
    )


def _file_id(content_id: str) -> str | None:
    if len(content_id) == 64 and set(content_id) <= _HEX:
        return file_id_for(content_id)
    return None


def _file_ids_in(text: str) -> list[str]:
    return [w.strip(",.;:()[]") for w in text.split() if is_valid_id(w.strip(",.;:()[]"), "file")]


def _summary_id(old_id: str) -> str:
    suffix = old_id.split("_", 1)[-1]
    candidate = f"sum_{suffix}"
    return candidate if is_valid_id(candidate, "sum") else new_id("sum")


def _json(raw: object) -> Any:
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _json_list(raw: object) -> list[str]:
    value = _json(raw)
    return [str(v) for v in value] if isinstance(value, list) else []
