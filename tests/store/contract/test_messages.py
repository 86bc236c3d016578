"""The store contract: messages, their order, paging and token accounting."""

from __future__ import annotations

import pytest

from mnesis.errors import (
    MessageNotFoundError,
    SessionNotFoundError,
)
from mnesis.models.parts import TextPart
from mnesis.models.tokens import TokenUsage
from mnesis.store import (
    ImmutableStore,
    NewMessage,
)
from tests.store.contract.helpers import (
    append_text,
    make_commit,
    make_message,
    message_items,
    new_session,
)


class TestMessages:
    async def test_message_fields_and_token_usage_read_back_exactly(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        message = make_message(
            sid,
            "assistant",
            agent="coder",
            model_id="gpt-4o",
            provider_id="openai",
            parent_id="msg_01ARZ3NDEKTSV4RRFFQ69G5FAV",
            tokens=TokenUsage(input=1200, output=300, cache_read=50, cache_write=7, total=1557),
            cost=0.0421,
            finish_reason="tool_calls",
            token_estimate=321,
        )
        await store.append_message(message, [TextPart(text="hi")])
        got = (await store.get_message(message.id)).message
        assert got.model_dump() == message.model_dump()

    async def test_each_session_numbers_its_messages_from_one(self, store: ImmutableStore) -> None:
        a, b = await new_session(store), await new_session(store)
        seqs = []
        for sid in (a, b, a, b, a):
            seqs.append((await store.append_message(make_message(sid))).seq)
        assert seqs == [1, 1, 2, 2, 3]
        assert await store.count_messages(a) == 3
        assert await store.count_messages(b) == 2

    async def test_messages_come_back_in_append_order_with_paging(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(6)]
        assert [m.id for m in await store.get_messages(sid)] == ids
        assert [m.id for m in await store.get_messages(sid, after_seq=2, limit=3)] == ids[2:5]

    async def test_messages_by_ids_come_back_in_the_order_asked_and_skip_unknown_ids(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(4)]
        asked = [ids[2], "msg_missing", ids[0], ids[3]]
        got = await store.get_messages_by_ids(asked)
        assert [m.id for m in got] == [ids[2], ids[0], ids[3]]
        assert [m.text for m in got] == ["m2", "m0", "m3"]
        assert await store.get_messages_by_ids([]) == []

    async def test_an_unknown_message_raises_message_not_found(self, store: ImmutableStore) -> None:
        with pytest.raises(MessageNotFoundError) as info:
            await store.get_message("msg_missing")
        assert isinstance(info.value, KeyError)

    async def test_summary_messages_can_be_left_out(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(3)]
        commit = make_commit(sid, (await message_items(store, sid))[:2])
        marker = await store.commit_compaction(commit)
        with_summaries = [m.id for m in await store.get_messages(sid)]
        without = [m.id for m in await store.get_messages(sid, include_summaries=False)]
        assert with_summaries == [*ids, marker.message_id]
        assert without == ids

    async def test_a_message_for_an_unknown_session_is_rejected_and_nothing_is_written(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        batch = [
            NewMessage(make_message(sid), [TextPart(text="ok")]),
            NewMessage(make_message("sess_missing"), [TextPart(text="orphan")]),
        ]
        with pytest.raises(SessionNotFoundError):
            await store.append_messages(batch)
        assert await store.get_messages(sid) == []
        assert await store.get_context_items(sid) == []


class TestTokenAccounting:
    async def test_token_counts_of_a_message_can_be_recorded_after_the_fact(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        mid = await append_text(store, sid, "answer", "assistant")
        usage = TokenUsage(input=900, output=100, cache_read=10, cache_write=2)
        await store.update_message_tokens(
            mid, tokens=usage, cost=0.5, finish_reason="stop", token_estimate=42
        )
        got = (await store.get_message(mid)).message
        assert got.tokens is not None
        assert (got.tokens.input, got.tokens.output, got.tokens.cache_read) == (900, 100, 10)
        assert got.tokens.effective_total() == usage.effective_total()
        assert (got.cost, got.finish_reason, got.token_estimate) == (0.5, "stop", 42)

    async def test_recording_tokens_of_an_unknown_message_is_rejected(
        self, store: ImmutableStore
    ) -> None:
        with pytest.raises(MessageNotFoundError):
            await store.update_message_tokens("msg_missing", cost=1.0)

    async def test_session_usage_is_the_sum_of_every_message_usage(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        appended_usage = TokenUsage(input=10, output=5)
        updated_usage = TokenUsage(input=20, output=8, cache_read=2)
        await store.append_message(make_message(sid, "assistant", tokens=appended_usage))
        mid = await append_text(store, sid, "later", "assistant")
        await store.update_message_tokens(mid, tokens=updated_usage)
        total = await store.session_token_usage(sid)
        assert (total.input, total.output, total.cache_read) == (30, 13, 2)
        assert total.effective_total() == (
            appended_usage.effective_total() + updated_usage.effective_total()
        )
