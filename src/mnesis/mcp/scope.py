"""Which sessions an MCP server answers for: all of them, a list, or one agent's.

A call naming a session (or an object of a session) outside the scope gets exactly
the error a missing one gets, so a client cannot learn what else the database holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnesis.errors import InvalidArgumentError, MnesisError, NotFoundError
from mnesis.models.ids import is_valid_id
from mnesis.store.base import SessionRecord
from mnesis.store.immutable import ImmutableStore

__all__ = ["NotServedError", "SessionScope"]

_PAGE = 200


class NotServedError(MnesisError):
    """An ID that is missing, or outside the sessions this server serves (one message)."""

    def __init__(self, object_id: str) -> None:
        self.object_id = object_id
        super().__init__(
            f"not found: {object_id[:80]!r} (no such ID in the sessions this server serves)"
        )


class SessionScope:
    """The sessions a server serves: ``session_ids``, or ``agent``'s, or (neither) all."""

    def __init__(self, session_ids: Sequence[str] = (), agent: str | None = None) -> None:
        if session_ids and agent is not None:
            raise InvalidArgumentError("scope by session IDs or by agent, not both")
        for sid in session_ids:
            if not is_valid_id(sid, "sess"):
                raise InvalidArgumentError(f"{sid!r} is not a session ID (sess_…)")
        if agent is not None and not agent.strip():
            raise InvalidArgumentError("agent must be a non-empty name")
        self.session_ids = tuple(dict.fromkeys(session_ids))
        self.agent = agent

    @property
    def restricted(self) -> bool:
        """Whether the scope is narrower than the whole database."""
        return bool(self.session_ids) or self.agent is not None

    def describe(self) -> str:
        """The scope in words (for logs and the server's instructions)."""
        if self.session_ids:
            return "sessions " + ", ".join(self.session_ids)
        if self.agent is not None:
            return f"the sessions of agent {self.agent!r}"
        return "every session of the database"

    async def resolve(self, store: ImmutableStore, requested: str | None) -> str:
        """The session a call runs against: ``requested`` if served, else the default
        (the first scoped session, else the newest served one).

        Raises ``NotServedError`` for a session that is missing or outside the scope.
        """
        if requested is None:
            if self.session_ids:
                return self.session_ids[0]
            newest = await self.sessions(store, limit=1)
            if not newest:
                raise InvalidArgumentError("this server serves no sessions yet")
            return newest[0].id
        if not isinstance(requested, str) or not is_valid_id(requested, "sess"):
            raise InvalidArgumentError(f"{str(requested)[:80]!r} is not a session ID (sess_…)")
        if self.session_ids and requested not in self.session_ids:
            raise NotServedError(requested)
        try:
            record = await store.get_session(requested)
        except NotFoundError:
            raise NotServedError(requested) from None
        if self.agent is not None and record.agent != self.agent:
            raise NotServedError(requested)
        return requested

    async def sessions(self, store: ImmutableStore, *, limit: int) -> list[SessionRecord]:
        """The newest ``limit`` served sessions, newest first."""
        if self.session_ids:
            found: list[SessionRecord] = []
            for sid in self.session_ids:
                try:
                    found.append(await store.get_session(sid))
                except NotFoundError:
                    continue
            found.sort(key=lambda r: r.created_at, reverse=True)
            return found[:limit]
        if self.agent is None:
            return await store.list_sessions(limit=limit)
        chosen: list[SessionRecord] = []
        offset = 0
        while len(chosen) < limit:
            page = await store.list_sessions(limit=_PAGE, offset=offset)
            chosen.extend(r for r in page if r.agent == self.agent)
            if len(page) < _PAGE:
                break
            offset += _PAGE
        return chosen[:limit]
