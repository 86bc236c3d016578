"""What the SQLite file itself keeps: the FTS5 index, checked by talking to it with plain
``sqlite3``, the way any other program could.

The backend-neutral behaviour of the store is in ``tests/store/contract/``, and what
both databases enforce by themselves (append-only triggers, constraints) in
``tests/store/contract/test_database_enforces.py``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnesis.models.parts import (
    AgentPart,
    FileRefPart,
    ReasoningPart,
    TextPart,
    ToolPart,
    ToolStatus,
)
from mnesis.store import ImmutableStore, StorePool
from tests.store.contract.helpers import (
    T0,
    append_text,
    make_commit,
    make_message,
    message_items,
    new_session,
    record_history,
)
from tests.store.sqlite.helpers import sqlite_db


@pytest.fixture
async def sqlite_store(tmp_path: Path, pool: StorePool) -> AsyncIterator[ImmutableStore]:
    s = await pool.acquire(db_path=str(tmp_path / "sqlite.db"))
    yield s
    await s.close()


@pytest.fixture
async def history(sqlite_store: ImmutableStore) -> dict[str, str]:
    return await record_history(sqlite_store)


async def _fts(store: ImmutableStore, table: str, query: str) -> list[int]:
    def _match(conn: sqlite3.Connection) -> list[int]:
        return [
            r[0]
            for r in conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid", (query,)
            )
        ]

    return await sqlite_db(store).read(_match)


async def _part_rowid(store: ImmutableStore, part_id: str) -> int:
    def _get(conn: sqlite3.Connection) -> int:
        return int(
            conn.execute("SELECT rowid FROM message_parts WHERE id = ?", (part_id,)).fetchone()[0]
        )

    return await sqlite_db(store).read(_get)


class TestFullTextIndex:
    async def test_text_tool_and_file_parts_are_searchable_right_after_append(
        self, sqlite_store: ImmutableStore
    ) -> None:
        store = sqlite_store
        sid = await new_session(store)
        appended = await store.append_message(
            make_message(sid, "assistant"),
            [
                TextPart(text="the quick zebra jumps"),
                ReasoningPart(text="ponder the okapi"),
                ToolPart(tool_name="grep", tool_call_id="c1", output="found narwhal.py"),
                FileRefPart(content_id="sha256:00", path="docs/axolotl.md"),
                AgentPart(name="pangolin"),
            ],
        )
        rowids = [await _part_rowid(store, pid) for pid in appended.part_ids]
        assert await _fts(store, "message_parts_fts", "zebra") == [rowids[0]]
        assert await _fts(store, "message_parts_fts", "okapi") == [rowids[1]]
        assert await _fts(store, "message_parts_fts", "narwhal") == [rowids[2]]
        assert await _fts(store, "message_parts_fts", "axolotl") == [rowids[3]]
        assert await _fts(store, "message_parts_fts", "pangolin") == []

    async def test_a_completed_tool_output_becomes_searchable(
        self, sqlite_store: ImmutableStore
    ) -> None:
        store = sqlite_store
        sid = await new_session(store)
        appended = await store.append_message(
            make_message(sid, "assistant"),
            [ToolPart(tool_name="bash", tool_call_id="c1", status=ToolStatus(state="pending"))],
        )
        (pid,) = appended.part_ids
        assert await _fts(store, "message_parts_fts", "wombat") == []
        await store.update_part_status(pid, state="completed", output="wombat burrow")
        assert await _fts(store, "message_parts_fts", "wombat") == [await _part_rowid(store, pid)]

    async def test_a_summary_is_searchable_right_after_its_commit(
        self, sqlite_store: ImmutableStore
    ) -> None:
        store = sqlite_store
        sid = await new_session(store)
        for i in range(2):
            await append_text(store, sid, f"m{i}")
        commit = make_commit(sid, await message_items(store, sid), content="capybara migration")
        await store.commit_compaction(commit)

        def _summary_rowid(conn: sqlite3.Connection) -> int:
            return int(
                conn.execute(
                    "SELECT rowid FROM summaries WHERE id = ?", (commit.summary.id,)
                ).fetchone()[0]
            )

        rowid = await sqlite_db(store).read(_summary_rowid)
        assert await _fts(store, "summaries_fts", "capybara") == [rowid]

    async def test_the_index_matches_its_content_after_appends_completions_and_tombstones(
        self, sqlite_store: ImmutableStore, history: dict[str, str]
    ) -> None:
        store = sqlite_store
        await store.update_part_status(history["pending_tool"], state="completed", output="x y")
        await store.update_part_status(history["completed_tool"], compacted_at=T0)

        def _check(conn: sqlite3.Connection) -> None:
            for table in ("message_parts_fts", "summaries_fts"):
                # rank=1: also compare the index with the rows of its content table
                conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")

        await sqlite_db(store).write(_check)
