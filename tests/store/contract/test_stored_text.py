"""Each part's text stored once, exactly; its neighbour context written with the row.

The context a part is indexed with (speaker and date, then the previous two text parts
of its session, newest first) is computed by the writer, from a per-store cache of
the last turns or one indexed query; both backends return the same text.
"""

from __future__ import annotations

from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import FileRefPart, ReasoningPart, TextPart, ToolPart, ToolStatus
from mnesis.store import ImmutableStore, StorePool
from mnesis.store.base import NewMessage, SearchFilter
from mnesis.store.search_query import SearchQuery, Term
from mnesis.store.shared.search_context import search_context
from tests.store.contract.helpers import T0, make_commit, message_items, new_session
from tests.store.contract.raw import RawSQL

_DAY = 86_400_000
_PENDING = ToolStatus(state="pending")


async def _contexts(store: ImmutableStore, session_id: str, word: str) -> dict[str, str | None]:
    """The stored context of every part holding ``word``, by part ID."""
    hits = await store.search_text(
        query=SearchQuery(all_of=(Term.word(word),), include_context=False),
        scope="messages",
        where=SearchFilter(session_ids=[session_id]),
        limit=100,
    )
    return {h.part_id or "": h.context for h in hits}


def _message(session_id: str, role: str, at: int = T0) -> Message:
    return Message(id=new_id("msg"), session_id=session_id, role=role, created_at=at)  # type: ignore[arg-type]


class TestNeighbourContext:
    async def test_each_part_gets_the_previous_two_text_parts_newest_first(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        texts = ["zebra one\nline", "zebra two", "zebra three " + "x" * 700, "zebra four"]
        ids = []
        for turn, text in enumerate(texts):
            role = "user" if turn % 2 == 0 else "assistant"
            appended = await store.append_message(
                _message(sid, role, T0 + turn * _DAY), [TextPart(text=text)]
            )
            ids.append(appended.part_ids[0])
        found = await _contexts(store, sid, "zebra")
        roles = ["user", "assistant", "user", "assistant"]
        for turn, message_id in enumerate(ids):
            previous = [(roles[i], texts[i]) for i in range(turn - 1, -1, -1)]
            assert found[message_id] == search_context(roles[turn], T0 + turn * _DAY, previous)
        assert found[ids[0]] == "user 2023-11-14 tuesday november"
        assert found[ids[3]] == (
            "assistant 2023-11-17 friday november\nuser: zebra three " + "x" * 588 + "\n"
            "assistant: zebra two"
        )

    async def test_a_batch_a_second_store_and_appended_parts_see_the_same_neighbours(
        self, store: ImmutableStore, pool: StorePool
    ) -> None:
        sid = await new_session(store)
        batch = [
            NewMessage(_message(sid, "user"), [TextPart(text="okapi a")]),
            NewMessage(
                _message(sid, "assistant"),
                [
                    ReasoningPart(text="okapi thinking"),
                    TextPart(text="okapi b1"),
                    TextPart(text="okapi b2"),
                    ToolPart(
                        tool_name="read",
                        tool_call_id="c1",
                        input={"path": "okapi.txt"},
                        output="okapi output",
                        status=ToolStatus(state="completed"),
                    ),
                ],
            ),
        ]
        first = await store.append_messages(batch)
        # A second store on the same location appends in between: the first store's
        # cache must not be trusted for the next message.
        other = await StorePool().acquire(db_path=store.location)
        try:
            later = await other.append_message(_message(sid, "user"), [TextPart(text="okapi c")])
        finally:
            await other.close()
        last = await store.append_message(_message(sid, "assistant"), [TextPart(text="okapi d")])
        extra = await store.append_parts(first[0].message_id, [TextPart(text="okapi a2")])
        after = await store.append_message(_message(sid, "user"), [TextPart(text="okapi e")])
        found = await _contexts(store, sid, "okapi")
        day = "2023-11-14 tuesday november"
        reasoning, b1, b2, tool = first[1].part_ids
        assert found[first[0].part_ids[0]] == f"user {day}"
        assert found[reasoning] == found[b1] == found[b2] == f"assistant {day}\nuser: okapi a"
        assert found[tool] is None
        assert found[later.part_ids[0]] == (f"user {day}\nassistant: okapi b1\nassistant: okapi b2")
        assert found[last.part_ids[0]] == f"assistant {day}\nuser: okapi c\nassistant: okapi b1"
        assert found[after.part_ids[0]] == f"user {day}\nassistant: okapi d\nuser: okapi c"
        hits = await store.search_text(
            query=SearchQuery(all_of=(Term.word("a2"),), include_context=False),
            scope="messages",
            where=SearchFilter(session_ids=[sid]),
            limit=5,
        )
        assert [(h.part_id, h.context) for h in hits] == [(extra[0], f"user {day}")]

    async def test_summaries_tool_only_turns_and_the_window_bound_the_neighbours(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        await store.append_message(_message(sid, "user"), [TextPart(text="far away")])
        tool = ToolPart(
            tool_name="ls", tool_call_id="t", input={}, status=ToolStatus(state="pending")
        )
        for _ in range(6):
            await store.append_message(_message(sid, "assistant"), [tool.model_copy()])
        lonely = await store.append_message(_message(sid, "user"), [TextPart(text="quagga")])
        await store.commit_compaction(make_commit(sid, await message_items(store, sid)))
        next_ = await store.append_message(_message(sid, "assistant"), [TextPart(text="quagga 2")])
        found = await _contexts(store, sid, "quagga")
        day = "2023-11-14 tuesday november"
        assert found[lonely.part_ids[0]] == f"user {day}"
        assert found[next_.part_ids[0]] == f"assistant {day}\nuser: quagga"

    async def test_tool_parts_get_no_context(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        await store.append_message(_message(sid, "user"), [TextPart(text="run it")])
        await store.append_message(
            _message(sid, "assistant"),
            [
                ToolPart(
                    tool_name="gnu",
                    tool_call_id="c",
                    input={},
                    output="gnu says hi",
                    status=ToolStatus(state="completed"),
                )
            ],
        )
        hits = await store.search_text(
            query=SearchQuery(all_of=(Term.word("gnu"),)),
            scope="messages",
            where=SearchFilter(session_ids=[sid]),
            limit=5,
        )
        assert [h.context for h in hits] == [None]


_AWKWARD = [
    "plain text",
    "",
    "a\x00b NUL inside",
    "\x00",
    "lone \ud800 surrogate",
    "\udfff",
    "中文文本 with CJK",
    "emoji 🦜 and \u200b zero width",
    "x" * 1_000_000,
    "line\nbreaks\r\nand\ttabs",
    '"quoted" {"json": [1, 2]} \\ backslash',
    "\x1a0 the PostgreSQL NUL escape character \x1a1",
]


class TestTextRoundTrip:
    async def test_every_text_comes_back_exactly(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        for text in _AWKWARD:
            parts = [
                TextPart(text=text),
                ReasoningPart(text=text),
                ToolPart(
                    tool_name="t",
                    tool_call_id="c",
                    input={"q": text},
                    output=text,
                    status=ToolStatus(state="completed"),
                ),
                ToolPart(
                    tool_name="t",
                    tool_call_id="e",
                    input={},
                    output=text,
                    error_message=text + " failed",
                    status=ToolStatus(state="error"),
                ),
                FileRefPart(content_id="c1", path="a.txt", exploration_summary=text),
            ]
            appended = await store.append_message(_message(sid, "assistant"), parts)
            stored = await store.get_message(appended.message_id)
            assert [p.model_dump(exclude={"id"}) for p in stored.parts] == [
                p.model_dump(exclude={"id"}) for p in parts
            ], repr(text[:40])

    async def test_a_tool_output_set_later_comes_back_exactly(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        for text in _AWKWARD:
            appended = await store.append_message(
                _message(sid, "assistant"),
                [
                    ToolPart(
                        tool_name="t",
                        tool_call_id="c",
                        input={},
                        status=ToolStatus(state="pending"),
                    )
                ],
            )
            part_id = appended.part_ids[0]
            await store.update_part_status(part_id, state="running")
            await store.update_part_status(part_id, state="completed", output=text)
            (part,) = (await store.get_message(appended.message_id)).parts
            assert isinstance(part, ToolPart)
            assert (part.output, part.status.state) == (text, "completed"), repr(text[:40])


class TestBatchAppend:
    async def test_a_batch_gets_the_contexts_of_the_same_messages_appended_one_by_one(
        self, store: ImmutableStore
    ) -> None:
        one, batched = await new_session(store), await new_session(store)
        await store.append_message(_message(one, "user"), [TextPart(text="ibis before")])
        await store.append_message(_message(batched, "user"), [TextPart(text="ibis before")])
        texts = [("assistant", "ibis one"), ("user", "ibis two"), ("assistant", "ibis three")]
        for role, text in texts:
            await store.append_message(_message(one, role), [TextPart(text=text)])
        await store.append_batch(
            [NewMessage(_message(batched, role), [TextPart(text=text)]) for role, text in texts]
        )
        contexts = []
        for sid in (one, batched):
            hits = await store.search_text(
                query=SearchQuery(all_of=(Term.word("ibis"),), include_context=False),
                scope="messages",
                where=SearchFilter(session_ids=[sid]),
                limit=10,
            )
            contexts.append(sorted(h.context or "" for h in hits))
        assert contexts[0] == contexts[1]
        assert (
            "assistant 2023-11-14 tuesday november\nuser: ibis two\nassistant: ibis one"
            in (contexts[1])
        )


class TestMinimalJSON:
    async def test_a_plain_text_part_is_stored_as_an_empty_object_and_read_back(
        self, store: ImmutableStore, raw: RawSQL
    ) -> None:
        sid = await new_session(store)
        parts = [
            TextPart(text="a plain reply of a few words"),
            TextPart(text="marked", synthetic=True),
            ToolPart(tool_name="read", tool_call_id="c1", output="out", status=_PENDING),
        ]
        appended = await store.append_message(_message(sid, "assistant"), parts)
        stored = dict(
            raw.rows(
                "SELECT id, content FROM message_parts WHERE message_id = ?", appended.message_id
            )
        )
        assert [stored[i] for i in appended.part_ids[:2]] == ["{}", '{"synthetic":true}']
        assert '"status"' not in stored[appended.part_ids[2]]
        (message,) = await store.get_messages(sid)
        assert [p.model_dump(exclude={"id"}) for p in message.parts] == [
            p.model_dump(exclude={"id"}) for p in parts
        ]
