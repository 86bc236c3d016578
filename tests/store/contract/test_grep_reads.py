"""The store contract: the reads ``grep`` makes around its search, each in one statement,
agree with the per-session reads they replace."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mnesis.models.parts import TextPart, ToolPart
from mnesis.store import ImmutableStore
from tests.store.contract.helpers import append_text, make_message, new_session
from tests.store.contract.test_lineage import two_levels


@dataclass
class _History:
    """A session whose first four messages are under two leaves merged by ``top``, and
    another session holding one message."""

    sid: str
    ids: list[str]
    leaves: list[str]
    top: str
    other: str
    elsewhere: str


@pytest.fixture
async def history(store: ImmutableStore) -> _History:
    sid, ids, leaves, top = await two_levels(store)
    other = await new_session(store)
    return _History(sid, ids, leaves, top, other, await append_text(store, other, "which port?"))


class TestContextPlaces:
    async def test_each_id_is_placed_in_its_own_sessions_context(
        self, store: ImmutableStore, history: _History
    ) -> None:
        ids, top = history.ids, history.top
        places = await store.context_places([*ids, history.elsewhere], [top, *history.leaves])
        assert places.in_context == {ids[4], history.elsewhere, top}
        assert places.covering == {i: top for i in ids[:4]}
        covering = await store.covering_context_summaries(history.sid, ids[:4])
        assert covering == places.covering
        assert await store.messages_in_context(history.sid, ids) == places.in_context & set(ids)

    async def test_nothing_asked_nothing_placed(self, store: ImmutableStore) -> None:
        places = await store.context_places([], [])
        assert places.in_context == frozenset()
        assert places.covering == {}


class TestRecentTurns:
    async def test_the_newest_messages_of_each_session_by_what_their_parts_are(
        self, store: ImmutableStore, history: _History
    ) -> None:
        other = history.other
        running = ToolPart(tool_name="look", tool_call_id="call_1")
        calling = await store.append_message(make_message(other, "assistant"), [running])
        answered = await store.append_message(
            make_message(other, "assistant"), [TextPart(text="8443")]
        )
        empty = await new_session(store)
        turns = await store.recent_turns([other, history.sid, empty], 3)
        assert [t.session_id for t in turns] == sorted(t.session_id for t in turns)
        mine = [t for t in turns if t.session_id == other]
        assert [(t.message_id, t.role, t.has_text, t.calls_tools) for t in mine] == [
            (history.elsewhere, "user", True, False),
            (calling.message_id, "assistant", False, True),
            (answered.message_id, "assistant", True, False),
        ]
        # Summary markers count among the newest three but are not returned.
        newest = [m.message for m in await store.get_messages(history.sid)][-3:]
        assert any(m.is_summary for m in newest)
        assert [t.message_id for t in turns if t.session_id == history.sid] == [
            m.id for m in newest if not m.is_summary
        ]
        assert await store.recent_turns([], 3) == []
