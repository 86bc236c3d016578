"""Google ADK's ``BaseMemoryService`` over mnesis (behind
:mod:`mnesis.integrations.google_adk`): ``search_memory`` is mnesis grep over every
stored session of the user, including what compaction hid and sessions ADK deleted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from google.adk.events.event import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types

from mnesis.errors import InvalidArgumentError
from mnesis.integrations.google_adk_events import event_to_messages
from mnesis.integrations.google_adk_sessions import MnesisSessionService
from mnesis.integrations.registry import Row, key
from mnesis.retrieval.results import GrepMatch

__all__ = ["MnesisMemoryService"]


class MnesisMemoryService(BaseMemoryService):
    """ADK memory in the store of a :class:`MnesisSessionService`.

    Sessions of that service are in mnesis already, event by event:
    ``add_session_to_memory`` has nothing to add for them. A session from another
    service (``InMemorySessionService``, ...) is imported into a mnesis session of its
    own, each event once however often it is added. ``search_memory`` greps the user's
    sessions (``limit`` hits, best first); each memory's ``custom_metadata`` names the
    mnesis session and message (``lcm_expand`` opens it).
    """

    def __init__(self, sessions: MnesisSessionService, *, limit: int = 10) -> None:
        """Memory over ``sessions``' store; at most ``limit`` memories per search."""
        if not isinstance(sessions, MnesisSessionService):
            raise InvalidArgumentError(
                f"MnesisMemoryService needs a MnesisSessionService, got {type(sessions).__name__}"
            )
        if not isinstance(limit, int) or limit < 1:
            raise InvalidArgumentError(f"limit must be an int >= 1, got {limit!r}")
        self.sessions = sessions
        self.limit = limit
        self._lock = asyncio.Lock()

    async def add_session_to_memory(self, session: Session) -> None:
        """Make ``session``'s events searchable (a no-op for this service's own)."""
        await self._add(session.app_name, session.user_id, session.id, session.events)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Make ``events`` searchable (those of this service's sessions already are)."""
        await self._add(app_name, user_id, session_id or "", events)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The user's stored turns and summaries that match ``query`` (mnesis grep)."""
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query must be a string, got {query!r}")
        ids = await self.sessions.mnesis_session_ids(app_name, user_id)
        index = await (await self.sessions.registry()).get("memory-index", app_name, user_id)
        if index is not None:
            ids.extend(index.state["sessions"])
        if not ids or not query.strip():
            return SearchMemoryResponse()
        searcher = await self.sessions.open_mnesis(ids[-1])
        found = await searcher.grep(query, session_ids=ids, limit=self.limit)
        return SearchMemoryResponse(memories=[_memory(m) for m in found.matches])

    async def _add(
        self, app_name: str, user_id: str, session_id: str, events: Sequence[Event]
    ) -> None:
        registry = await self.sessions.registry()
        own = await registry.get("session", app_name, user_id, session_id)
        if own is not None and not own.state.get("deleted"):
            return
        async with self._lock:
            row = await registry.get("memory", app_name, user_id, session_id)
            after = float(row.state["after"]) if row else float("-inf")
            seen = set(row.state["ids"]) if row else set()
            new = [
                e
                for e in sorted(events, key=lambda e: e.timestamp)
                if not e.partial
                and (e.timestamp > after or (e.timestamp == after and e.id not in seen))
            ]
            batches = [m for m in (event_to_messages(e) for e in new) if m]
            if not new:
                return
            if row is None:
                mnesis = await self.sessions.new_session(app_name)
                row = Row(key("memory", app_name, user_id, session_id), mnesis.id, {})
                await self._index(app_name, user_id, mnesis.id)
            target = await self.sessions.open_mnesis(row.session_id)
            for messages in batches:
                await target.record_messages(messages)
            last = new[-1].timestamp
            ids = [e.id for e in new if e.timestamp == last]
            row.state = {"after": last, "ids": ids + (list(seen) if last == after else [])}
            row.count += len(new)
            await registry.put(row)

    async def _index(self, app_name: str, user_id: str, mnesis_id: str) -> None:
        registry = await self.sessions.registry()
        index = await registry.get("memory-index", app_name, user_id)
        if index is None:
            index = Row(key("memory-index", app_name, user_id), mnesis_id, {"sessions": []})
        index.state["sessions"].append(mnesis_id)
        await registry.put(index)


def _memory(match: GrepMatch) -> MemoryEntry:
    role = "user" if match.role == "user" else "model"
    metadata: dict[str, Any] = {
        "mnesis_session_id": match.session_id,
        "kind": match.kind,
        "in_context": match.in_context,
    }
    if match.covering_summary_id:
        metadata["covering_summary_id"] = match.covering_summary_id
    return MemoryEntry(
        id=match.id,
        author=match.role or match.kind,
        content=types.Content(role=role, parts=[types.Part(text=match.snippet)]),
        timestamp=datetime.fromtimestamp(match.created_at / 1000, UTC).isoformat(),
        custom_metadata=metadata,
    )
