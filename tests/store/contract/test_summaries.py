"""The store contract: compaction commits, summaries, lineage and compaction locks."""

from __future__ import annotations

import pytest

from mnesis.errors import (
    CompactionLockedError,
    InvalidArgumentError,
    MessageNotFoundError,
    SummaryNotFoundError,
)
from mnesis.store import (
    ContextItem,
    ImmutableStore,
    SummaryDAGStore,
)
from tests.store.contract.helpers import (
    append_text,
    make_commit,
    message_items,
    new_session,
)


class TestCompactionCommit:
    async def test_a_commit_swaps_the_replaced_items_for_one_summary(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}", tokens=10) for i in range(5)]
        commit = make_commit(sid, (await message_items(store, sid))[:3], context_tokens=12)
        await store.commit_compaction(commit)
        items = await store.get_context_items(sid)
        assert [(i.item_type, i.item_id) for i in items] == [
            ("summary", commit.summary.id),
            ("message", ids[3]),
            ("message", ids[4]),
        ]
        assert items[0].position == 1 and items[0].tokens == 12
        assert [i.position for i in items] == sorted(i.position for i in items)
        assert await store.context_token_total(sid) == 12 + 20

    async def test_a_commit_writes_the_summary_its_lineage_and_a_marker_outside_the_context(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(3)]
        commit = make_commit(sid, (await message_items(store, sid))[:2])
        marker = await store.commit_compaction(commit)

        summary = await store.get_summary(commit.summary.id)
        assert summary.content == commit.summary.content
        assert (summary.kind, summary.depth, summary.level) == ("leaf", 0, 1)
        assert summary.message_id == marker.message_id
        assert summary.file_ids == commit.summary.file_ids
        assert (summary.span_start_message_id, summary.span_end_message_id) == (ids[0], ids[1])
        assert await store.get_summary_source_ids(summary.id) == ids[:2]
        assert await store.get_summary_parent_ids(summary.id) == []

        assert marker.position is None and marker.seq == 4
        stored_marker = await store.get_message(marker.message_id)
        assert stored_marker.message.is_summary
        assert [p.type for p in stored_marker.parts] == ["text", "compaction"]
        assert list(marker.part_ids) == [p.id for p in stored_marker.parts]
        in_context = {i.item_id for i in await store.get_context_items(sid)}
        assert marker.message_id not in in_context

    async def test_a_condensed_summary_records_its_parents_and_reaches_every_source(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(5)]
        first = make_commit(sid, (await message_items(store, sid))[:2])
        await store.commit_compaction(first)
        second = make_commit(sid, (await message_items(store, sid))[:2])
        await store.commit_compaction(second)
        summaries = await store.get_context_items(sid, item_type="summary")
        assert [s.item_id for s in summaries] == [first.summary.id, second.summary.id]

        parents = await store.get_summaries([first.summary.id, second.summary.id])
        condensed = make_commit(sid, summaries, parents=parents)
        await store.commit_compaction(condensed)
        assert await store.get_summary_parent_ids(condensed.summary.id) == [
            first.summary.id,
            second.summary.id,
        ]
        assert await store.get_summary_source_ids(condensed.summary.id) == []
        dag = SummaryDAGStore(store)
        assert await dag.get_source_message_ids(condensed.summary.id) == ids[:4]
        assert [c.id for c in await dag.get_children(condensed.summary.id)] == [
            first.summary.id,
            second.summary.id,
        ]
        items = await store.get_context_items(sid)
        assert [i.item_id for i in items] == [condensed.summary.id, ids[4]]

    async def test_summaries_come_back_in_the_order_asked_and_unknown_ids_raise(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        for i in range(4):
            await append_text(store, sid, f"m{i}")
        a = make_commit(sid, (await message_items(store, sid))[:1])
        await store.commit_compaction(a)
        b = make_commit(sid, (await message_items(store, sid))[:1])
        await store.commit_compaction(b)
        got = await store.get_summaries([b.summary.id, "sum_missing", a.summary.id])
        assert [s.id for s in got] == [b.summary.id, a.summary.id]
        with pytest.raises(SummaryNotFoundError):
            await store.get_summary("sum_missing")

    async def test_a_commit_over_a_stale_context_is_refused_and_writes_nothing(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        for i in range(4):
            await append_text(store, sid, f"m{i}")
        snapshot = (await message_items(store, sid))[:2]
        winner = make_commit(sid, snapshot)
        loser = make_commit(sid, snapshot)  # read the same items before the winner committed
        await store.commit_compaction(winner)
        context_before = await store.get_context_items(sid)
        messages_before = await store.count_messages(sid)

        with pytest.raises(CompactionLockedError):
            await store.commit_compaction(loser)
        assert await store.get_context_items(sid) == context_before
        assert await store.count_messages(sid) == messages_before
        assert await store.get_summaries([loser.summary.id]) == []
        with pytest.raises(MessageNotFoundError):
            await store.get_message(loser.marker.message.id)

    async def test_a_commit_naming_the_wrong_item_at_a_position_is_refused(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        for i in range(3):
            await append_text(store, sid, f"m{i}")
        items = await message_items(store, sid)
        wrong = [ContextItem(items[0].position, "message", items[1].item_id, 10, "user")]
        with pytest.raises(CompactionLockedError):
            await store.commit_compaction(make_commit(sid, wrong))
        assert await store.get_context_items(sid) == items

    async def test_a_commit_that_replaces_nothing_is_an_invalid_argument(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        mid = await append_text(store, sid, "m")
        with pytest.raises(InvalidArgumentError):
            await store.commit_compaction(make_commit(sid, [], source_message_ids=[mid]))


class TestCompactionLock:
    async def test_a_free_lock_is_taken_and_a_second_owner_is_refused(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        assert await store.acquire_compaction_lock(sid, "worker-a", 60) is True
        assert await store.acquire_compaction_lock(sid, "worker-b", 60) is False

    async def test_the_holder_may_take_its_lock_again(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        assert await store.acquire_compaction_lock(sid, "worker-a", 60)
        assert await store.acquire_compaction_lock(sid, "worker-a", 60)

    async def test_only_the_holder_can_release_the_lock(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        await store.acquire_compaction_lock(sid, "worker-a", 60)
        await store.release_compaction_lock(sid, "worker-b")
        assert await store.acquire_compaction_lock(sid, "worker-b", 60) is False
        await store.release_compaction_lock(sid, "worker-a")
        assert await store.acquire_compaction_lock(sid, "worker-b", 60) is True

    async def test_an_expired_lock_can_be_taken_over(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        assert await store.acquire_compaction_lock(sid, "crashed-worker", -60)
        assert await store.acquire_compaction_lock(sid, "worker-b", 60) is True
        assert await store.acquire_compaction_lock(sid, "crashed-worker", 60) is False

    async def test_locks_of_different_sessions_are_independent(self, store: ImmutableStore) -> None:
        a, b = await new_session(store), await new_session(store)
        assert await store.acquire_compaction_lock(a, "worker-a", 60)
        assert await store.acquire_compaction_lock(b, "worker-b", 60)
