"""What the SQLite file itself enforces (triggers, CHECK constraints, the FTS5 index),
checked by talking to it with plain ``sqlite3``, the way any other program could.

The backend-neutral behaviour of the store is in ``tests/store/contract/``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from mnesis.errors import AppendOnlyViolationError
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
)
from tests.store.sqlite.helpers import sqlite_db


@pytest.fixture
async def sqlite_store(tmp_path: Path, pool: StorePool) -> AsyncIterator[ImmutableStore]:
    s = await pool.acquire(db_path=str(tmp_path / "sqlite.db"))
    yield s
    await s.close()


@pytest.fixture
def raw(sqlite_store: ImmutableStore) -> Iterator[sqlite3.Connection]:
    """A second, plain sqlite3 connection to the store's file (autocommit)."""
    conn = sqlite3.connect(sqlite_store.location, isolation_level=None)
    yield conn
    conn.close()


# -- what the SQLite file enforces by itself ----------------------------------


@pytest.fixture
async def history(sqlite_store: ImmutableStore) -> dict[str, str]:
    """A session with messages, a tool call, two leaf summaries and a condensed one."""
    store = sqlite_store
    sid = await new_session(store)
    mids = [await append_text(store, sid, f"message {i}") for i in range(4)]
    tool = await store.append_message(
        make_message(sid, "assistant"),
        [
            ToolPart(tool_name="bash", tool_call_id="c1", output="out"),
            ToolPart(tool_name="bash", tool_call_id="c2", status=ToolStatus(state="pending")),
        ],
    )
    leaf1 = make_commit(sid, (await message_items(store, sid))[:2])
    await store.commit_compaction(leaf1)
    leaf2 = make_commit(sid, (await message_items(store, sid))[:2])
    await store.commit_compaction(leaf2)
    summaries = await store.get_context_items(sid, item_type="summary")
    condensed = make_commit(
        sid, summaries, parents=await store.get_summaries([i.item_id for i in summaries])
    )
    await store.commit_compaction(condensed)
    return {
        "session": sid,
        "message": mids[0],
        "completed_tool": tool.part_ids[0],
        "pending_tool": tool.part_ids[1],
        "summary": condensed.summary.id,
    }


def _append_only(raw: sqlite3.Connection, sql: str, *args: object) -> None:
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        raw.execute(sql, args)


class TestAppendOnlyEnforcedByTheDatabase:
    @pytest.mark.parametrize(
        "table",
        [
            "messages",
            "message_parts",
            "summaries",
            "summary_messages",
            "summary_parents",
            "sessions",
        ],
    )
    async def test_deleting_history_rows_is_rejected_by_the_database(
        self, raw: sqlite3.Connection, history: dict[str, str], table: str
    ) -> None:
        before = raw.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        assert before > 0
        _append_only(raw, f"DELETE FROM {table}")
        assert raw.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == before

    @pytest.mark.parametrize(
        ("column", "value"),
        [
            ("id", "msg_forged"),
            ("session_id", "sess_other"),
            ("seq", 999),
            ("role", "system"),
            ("is_summary", 1),
            ("agent", "intruder"),
            ("model_id", "other-model"),
            ("provider_id", "other"),
            ("parent_id", "msg_other"),
            ("created_at", 1),
        ],
    )
    async def test_rewriting_a_message_is_rejected_by_the_database(
        self, raw: sqlite3.Connection, history: dict[str, str], column: str, value: object
    ) -> None:
        _append_only(
            raw, f"UPDATE messages SET {column} = ? WHERE id = ?", value, history["message"]
        )

    @pytest.mark.parametrize(
        ("column", "value"),
        [
            ("content", '{"type":"text","text":"forged"}'),
            ("text_content", "forged"),
            ("part_type", "reasoning"),
            ("ordinal", 99),
            ("message_id", "msg_other"),
            ("created_at", 1),
        ],
    )
    async def test_rewriting_a_text_part_is_rejected_by_the_database(
        self, raw: sqlite3.Connection, history: dict[str, str], column: str, value: object
    ) -> None:
        _append_only(
            raw,
            f"UPDATE message_parts SET {column} = ? WHERE message_id = ?",
            value,
            history["message"],
        )

    async def test_rewriting_summaries_and_lineage_is_rejected_by_the_database(
        self, raw: sqlite3.Connection, history: dict[str, str]
    ) -> None:
        _append_only(raw, "UPDATE summaries SET content = 'forged'")
        _append_only(raw, "UPDATE summary_messages SET ordinal = ordinal + 10")
        _append_only(raw, "UPDATE summary_parents SET ordinal = ordinal + 10")

    async def test_token_counts_cost_and_finish_reason_may_change(
        self, raw: sqlite3.Connection, sqlite_store: ImmutableStore, history: dict[str, str]
    ) -> None:
        raw.execute(
            "UPDATE messages SET tokens_input = 5, tokens_output = 6, tokens_total = 11, "
            "cost = 0.1, finish_reason = 'stop', token_estimate = 77 WHERE id = ?",
            (history["message"],),
        )
        got = (await sqlite_store.get_message(history["message"])).message
        assert got.tokens is not None and got.tokens.total == 11
        assert (got.cost, got.finish_reason, got.token_estimate) == (0.1, "stop", 77)

    async def test_a_tool_output_may_be_tombstoned_but_never_cleared_or_moved(
        self, raw: sqlite3.Connection, history: dict[str, str]
    ) -> None:
        part = history["completed_tool"]
        raw.execute("UPDATE message_parts SET compacted_at = ? WHERE id = ?", (T0, part))
        _append_only(raw, "UPDATE message_parts SET compacted_at = NULL WHERE id = ?", part)
        _append_only(raw, "UPDATE message_parts SET compacted_at = ? WHERE id = ?", T0 + 1, part)

    async def test_a_completed_tool_output_cannot_be_changed(
        self, raw: sqlite3.Connection, history: dict[str, str]
    ) -> None:
        part = history["completed_tool"]
        _append_only(
            raw,
            "UPDATE message_parts SET content = content || ' ' "
            "WHERE id = ?",
            part,
        )
        _append_only(raw, "UPDATE message_parts SET text_content = 'forged' WHERE id = ?", part)

    async def test_a_finished_tool_call_cannot_be_reopened(
        self, raw: sqlite3.Connection, history: dict[str, str]
    ) -> None:
        # Reopening would make the output writable again (two statements, one rewrite).
        _append_only(
            raw,
            "UPDATE message_parts SET tool_state = 'running' WHERE id = ?",
            history["completed_tool"],
        )

    async def test_a_pending_tool_call_may_be_completed(
        self, raw: sqlite3.Connection, sqlite_store: ImmutableStore, history: dict[str, str]
    ) -> None:
        await sqlite_store.update_part_status(
            history["pending_tool"], state="completed", output="late result", completed_at=T0
        )
        row = raw.execute(
            "SELECT tool_state, completed_at, text_content FROM message_parts WHERE id = ?",
            (history["pending_tool"],),
        ).fetchone()
        assert row[0] == "completed" and row[1] == T0
        assert "late result" in row[2]

    async def test_a_violating_write_through_the_store_raises_append_only_violation(
        self, sqlite_store: ImmutableStore, history: dict[str, str]
    ) -> None:
        with pytest.raises(AppendOnlyViolationError, match="append-only"):
            await sqlite_db(sqlite_store).write(lambda conn: conn.execute("DELETE FROM messages"))
        assert (await sqlite_store.get_message(history["message"])).id == history["message"]


class TestContextItemConstraints:
    @pytest.mark.parametrize(
        ("item_type", "with_message", "with_summary"),
        [
            ("message", True, True),
            ("message", False, False),
            ("message", False, True),
            ("summary", True, False),
            ("summary", True, True),
            ("other", True, False),
        ],
    )
    async def test_a_row_must_point_at_exactly_one_message_or_summary(
        self,
        raw: sqlite3.Connection,
        history: dict[str, str],
        item_type: str,
        with_message: bool,
        with_summary: bool,
    ) -> None:
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            raw.execute(
                "INSERT INTO context_items (session_id, position, item_type, message_id, "
                "summary_id, tokens, created_at) VALUES (?, 1000, ?, ?, ?, 1, 0)",
                (
                    history["session"],
                    item_type,
                    history["message"] if with_message else None,
                    history["summary"] if with_summary else None,
                ),
            )

    async def test_two_items_cannot_share_a_position(
        self, raw: sqlite3.Connection, history: dict[str, str]
    ) -> None:
        position = raw.execute(
            "SELECT MIN(position) FROM context_items WHERE session_id = ?", (history["session"],)
        ).fetchone()[0]
        with pytest.raises(sqlite3.IntegrityError):
            raw.execute(
                "INSERT INTO context_items (session_id, position, item_type, message_id, tokens, "
                "created_at) VALUES (?, ?, 'message', ?, 1, 0)",
                (history["session"], position, history["message"]),
            )


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
