"""The store contract: walking the summary DAG up and down, and what the context covers."""

from __future__ import annotations

from mnesis.store import ImmutableStore
from tests.store.contract.helpers import append_text, make_commit, message_items, new_session


async def two_levels(store: ImmutableStore) -> tuple[str, list[str], list[str], str]:
    """A session whose first four messages are under two leaves merged by one condensed."""
    sid = await new_session(store)
    ids = [await append_text(store, sid, f"m{i}") for i in range(5)]
    leaves = []
    for _ in range(2):
        leaf = make_commit(sid, (await message_items(store, sid))[:2])
        await store.commit_compaction(leaf)
        leaves.append(leaf.summary.id)
    summaries = await store.get_context_items(sid, item_type="summary")
    condensed = make_commit(sid, summaries, parents=await store.get_summaries(leaves))
    await store.commit_compaction(condensed)
    return sid, ids, leaves, condensed.summary.id


class TestLineage:
    async def test_a_summary_knows_what_merged_it_and_a_message_its_leaf(
        self, store: ImmutableStore
    ) -> None:
        _, ids, leaves, top = await two_levels(store)
        assert await store.get_summaries_merging(leaves[0]) == [top]
        assert await store.get_summaries_merging(top) == []
        assert await store.get_leaf_summaries_of_message(ids[2]) == [leaves[1]]
        assert await store.get_leaf_summaries_of_message(ids[4]) == []
        assert await store.get_source_message_ids_deep(top) == ids[:4]
        assert await store.get_source_message_ids_deep(leaves[1]) == ids[2:4]

    async def test_the_context_summary_covering_each_message_is_found(
        self, store: ImmutableStore
    ) -> None:
        sid, ids, _, top = await two_levels(store)
        covering = await store.covering_context_summaries(sid, [ids[0], ids[3], ids[4]])
        assert covering == {ids[0]: top, ids[3]: top, ids[4]: None}
        assert await store.messages_in_context(sid, ids) == {ids[4]}
        assert await store.messages_in_context(sid, []) == set()
