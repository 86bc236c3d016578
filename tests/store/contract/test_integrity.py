"""The store contract: what the integrity checker reads and the repairs it may write."""

from __future__ import annotations

from pathlib import Path

from mnesis.store import ImmutableStore
from tests.store.contract.helpers import append_text, make_commit, message_items, new_session


class TestIntegritySnapshot:
    async def test_a_snapshot_holds_the_context_messages_summaries_and_lineage(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}", tokens=7) for i in range(3)]
        commit = make_commit(sid, (await message_items(store, sid))[:2])
        marker = await store.commit_compaction(commit)
        snap = await store.integrity_snapshot(sid)
        assert snap.session_id == sid
        assert [(c[1], c[2], c[3]) for c in snap.context] == [
            ("summary", None, commit.summary.id),
            ("message", ids[2], None),
        ]
        assert [(m[0], m[1], m[3]) for m in snap.messages] == [
            (ids[0], 1, False),
            (ids[1], 2, False),
            (ids[2], 3, False),
            (marker.message_id, 4, True),
        ]
        assert snap.summaries == [
            (commit.summary.id, "leaf", commit.summary.file_ids, ids[0], ids[1])
        ]
        assert snap.summary_messages == [(commit.summary.id, ids[0]), (commit.summary.id, ids[1])]
        assert snap.summary_parents == []
        assert snap.known_file_ids == set()
        assert snap.missing_context_targets == []

    async def test_every_session_is_listed_oldest_first(self, store: ImmutableStore) -> None:
        ids = [await new_session(store) for _ in range(3)]
        assert await store.list_session_ids() == ids


class TestRepairs:
    async def test_the_context_can_be_rebuilt_in_one_write(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(3)]
        await store.replace_context_items(sid, [("message", ids[2], 4), ("message", ids[0], 5)])
        items = await store.get_context_items(sid)
        assert [(i.position, i.item_id, i.tokens) for i in items] == [
            (1, ids[2], 4),
            (2, ids[0], 5),
        ]

    async def test_an_orphan_summary_can_be_linked_to_its_sources_once(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(3)]
        commit = make_commit(sid, (await message_items(store, sid))[:1])
        await store.commit_compaction(commit)
        await store.add_summary_sources(commit.summary.id, [ids[1], ids[0]])
        assert await store.get_summary_source_ids(commit.summary.id) == [ids[0], ids[1]]
        assert await store.get_leaf_summaries_of_message(ids[1]) == [commit.summary.id]

    async def test_a_backup_is_written_where_asked(
        self, store: ImmutableStore, tmp_path: Path
    ) -> None:
        await new_session(store)
        target = tmp_path / "backup.copy"
        await store.backup_to(str(target))
        assert target.stat().st_size > 0
