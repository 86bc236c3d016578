"""The store contract: the ordered context view."""

from __future__ import annotations

from mnesis.store import (
    ContextItem,
    ImmutableStore,
)
from tests.store.contract.helpers import (
    append_text,
    make_message,
    new_session,
)


class TestContextItems:
    async def test_appended_messages_take_the_next_position_of_their_own_session(
        self, store: ImmutableStore
    ) -> None:
        a, b = await new_session(store), await new_session(store)
        positions: dict[str, list[int | None]] = {a: [], b: []}
        for sid in (a, b, a, a, b, a):
            positions[sid].append((await store.append_message(make_message(sid))).position)
        assert positions == {a: [1, 2, 3, 4], b: [1, 2]}
        assert [i.position for i in await store.get_context_items(a)] == [1, 2, 3, 4]

    async def test_context_items_carry_the_message_role_and_estimate(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        u = await append_text(store, sid, "q", "user", tokens=11)
        a = await append_text(store, sid, "a", "assistant", tokens=22)
        t = await append_text(store, sid, "r", "tool", tokens=33)
        assert await store.get_context_items(sid) == [
            ContextItem(1, "message", u, 11, "user"),
            ContextItem(2, "message", a, 22, "assistant"),
            ContextItem(3, "message", t, 33, "tool"),
        ]

    async def test_a_message_kept_out_of_context_has_no_position(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        appended = await store.append_message(make_message(sid), in_context=False)
        assert appended.position is None
        assert await store.get_context_items(sid) == []
        assert (await store.get_message(appended.message_id)).id == appended.message_id

    async def test_the_context_can_be_paged_newest_first(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(7)]
        page1 = await store.get_context_items(sid, newest_first=True, limit=3)
        page2 = await store.get_context_items(
            sid, newest_first=True, before_position=page1[-1].position, limit=3
        )
        assert [i.item_id for i in page1 + page2] == ids[::-1][:6]

    async def test_the_context_token_total_follows_appends_and_new_estimates(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        assert await store.context_token_total(sid) == 0
        await append_text(store, sid, "a", tokens=10)
        mid = await append_text(store, sid, "b", tokens=15)
        await store.append_message(make_message(sid, token_estimate=99), in_context=False)
        assert await store.context_token_total(sid) == 25
        await store.update_message_tokens(mid, token_estimate=5)
        assert await store.context_token_total(sid) == 15
        assert [i.tokens for i in await store.get_context_items(sid)] == [10, 5]
