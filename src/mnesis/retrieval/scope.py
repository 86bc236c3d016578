"""What one retrieval engine may reach: its session, granted sessions and summaries.

A file reference is reachable when a reachable session handled it first (it owns the
``file_references`` row), holds it in one of its messages (a ``FileRefPart``, as
after handling content another session handled before) or when one of its summaries
in context lists it (its lineage references it).

An engine is bound to one session. Searches cover that session unless the caller
passes other session IDs, and an engine created with ``allowed_session_ids`` (as
agent tools are) refuses every ID outside that grant. An engine created with
``allowed_summary_ids`` (a sub-agent's) reaches only those summaries and what is
under them.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnesis.errors import InvalidArgumentError, OutOfScopeError
from mnesis.models.ids import is_valid_id
from mnesis.models.parts import FileRefPart
from mnesis.store.base import FileReference, SummaryRecord
from mnesis.store.immutable import ImmutableStore

__all__ = ["RetrievalScope", "out_of_scope"]


def out_of_scope(object_id: str) -> OutOfScopeError:
    """The one error for an ID outside the caller's scope, whatever its kind: it says
    nothing of whose the object is or why (another session, an ungranted summary)."""
    return OutOfScopeError(f"{object_id} is not in this caller's scope")


_GRANT_CACHE_SIZE = 4096
_PAGE = 500


class RetrievalScope:
    """Scope checks of one engine; raises ``OutOfScopeError`` for anything outside."""

    def __init__(
        self,
        store: ImmutableStore,
        session_id: str,
        *,
        allowed_session_ids: Sequence[str] | None = None,
        allowed_summary_ids: Sequence[str] | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.allowed_sessions = (
            None if allowed_session_ids is None else {session_id, *allowed_session_ids}
        )
        """Sessions this caller may reach; ``None``: any session it names."""
        self.allowed_summaries = None if allowed_summary_ids is None else set(allowed_summary_ids)
        """Summaries (and what is under them) this caller may reach; ``None``: all."""
        self._summary_grant_cache: dict[str, bool] = {}

    def check_session(self, session_id: str, object_id: str) -> None:
        """Refuse ``object_id`` when it belongs to a session outside this scope."""
        allowed = self.allowed_sessions or {self.session_id}
        if session_id not in allowed:
            raise out_of_scope(object_id)

    async def check_summary_grant(self, summary_id: str) -> None:
        """Restricted engines may only reach granted summaries and what is under them."""
        if self.allowed_summaries is None:
            return
        if summary_id in self.allowed_summaries:
            return
        cached = self._summary_grant_cache.get(summary_id)
        if cached is None:
            cached = False
            frontier = [summary_id]
            seen: set[str] = set()
            while frontier and not cached:
                current = frontier.pop()
                if current in seen:
                    continue
                seen.add(current)
                for parent in await self.store.get_summaries_merging(current):
                    if parent in self.allowed_summaries:
                        cached = True
                        break
                    frontier.append(parent)
            if len(self._summary_grant_cache) >= _GRANT_CACHE_SIZE:
                self._summary_grant_cache.clear()
            self._summary_grant_cache[summary_id] = cached
        if not cached:
            raise out_of_scope(summary_id)

    async def load_summary(self, summary_id: str) -> SummaryRecord:
        """The summary ``summary_id``, if it exists and is within this scope."""
        record = await self.store.get_summary(summary_id)
        self.check_session(record.session_id, summary_id)
        await self.check_summary_grant(summary_id)
        return record

    async def check_file(self, ref: FileReference) -> None:
        """Refuse a file reference no session of this scope handled or references."""
        sessions = sorted(self.allowed_sessions or {self.session_id})
        if ref.session_id in sessions:
            return
        for session_id in sessions:
            if await self._references_file(session_id, ref):
                return
        raise out_of_scope(ref.file_id or ref.content_id)

    async def _references_file(self, session_id: str, ref: FileReference) -> bool:
        in_context = await self.store.get_context_items(session_id, item_type="summary")
        summaries = await self.store.get_summaries([item.item_id for item in in_context])
        if any(ref.file_id in summary.file_ids for summary in summaries):
            return True
        after = 0
        while page := await self.store.get_messages(session_id, after_seq=after, limit=_PAGE):
            for message in page:
                for part in message.parts:
                    if isinstance(part, FileRefPart) and ref.content_id == part.content_id:
                        return True
            after += len(page)  # seq is gap-free within a session
            if len(page) < _PAGE:
                break
        return False

    def sessions_for(
        self, session_ids: Sequence[str] | None, all_sessions: bool
    ) -> list[str] | None:
        """The sessions a search covers (``None``: every session in the store)."""
        if all_sessions:
            if self.allowed_sessions is not None:
                return sorted(self.allowed_sessions)
            return None
        if session_ids is None:
            return [self.session_id]
        if isinstance(session_ids, str) or not all(isinstance(s, str) for s in session_ids):
            raise InvalidArgumentError("session_ids must be a list of session ID strings")
        for sid in session_ids:
            if not is_valid_id(sid, "sess"):
                raise InvalidArgumentError(f"{sid!r} is not a session ID")
            if self.allowed_sessions is not None and sid not in self.allowed_sessions:
                raise OutOfScopeError(f"session {sid} was not granted to this caller")
        return list(session_ids)
