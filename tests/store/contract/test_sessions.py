"""The store contract: sessions."""

from __future__ import annotations

import pytest

from mnesis.errors import SessionNotFoundError
from mnesis.models.ids import new_id
from mnesis.store import (
    ImmutableStore,
    SessionRecord,
)
from tests.store.contract.helpers import (
    T0,
    new_session,
)


class TestSessions:
    async def test_a_created_session_reads_back_with_all_its_fields(
        self, store: ImmutableStore
    ) -> None:
        parent = await new_session(store)
        child = await new_session(
            store, agent="scout", parent_id=parent, system_prompt="Be brief.", title="Child"
        )
        got = await store.get_session(child)
        assert (got.model, got.agent, got.parent_id, got.system_prompt, got.title) == (
            "fake/model",
            "scout",
            parent,
            "Be brief.",
            "Child",
        )
        assert got.status == "active"
        assert got.created_at > 0 and got.updated_at >= got.created_at

    async def test_an_unknown_session_raises_session_not_found_which_is_a_key_error(
        self, store: ImmutableStore
    ) -> None:
        with pytest.raises(SessionNotFoundError) as info:
            await store.get_session("sess_missing")
        assert isinstance(info.value, KeyError)

    async def test_a_child_of_an_unknown_parent_is_rejected(self, store: ImmutableStore) -> None:
        with pytest.raises(SessionNotFoundError):
            await new_session(store, parent_id="sess_missing")

    async def test_sessions_are_listed_newest_first(self, store: ImmutableStore) -> None:
        ids = []
        for offset in range(3):
            sid = new_id("sess")
            await store.create_session(
                SessionRecord(id=sid, model="m", created_at=T0 + offset, updated_at=T0 + offset)
            )
            ids.append(sid)
        listed = await store.list_sessions()
        assert [s.id for s in listed] == list(reversed(ids))
        assert [s.id for s in await store.list_sessions(limit=1, offset=1)] == [ids[1]]

    async def test_closing_a_session_is_recorded_and_unknown_sessions_are_rejected(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        await store.set_session_status(sid, "closed")
        assert (await store.get_session(sid)).status == "closed"
        with pytest.raises(SessionNotFoundError):
            await store.set_session_status("sess_missing", "closed")
