"""Integrity snapshots, repairs, backups and concurrent writers on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mnesis.errors import MnesisStoreError
from mnesis.store.postgres import PostgresStore
from mnesis.store.postgres.integrity import BACKUP_FORMAT, BACKUP_TABLES
from mnesis.store.postgres.migrations import MIGRATIONS
from tests.store.contract.helpers import append_text, make_commit, message_items, new_session

pytestmark = pytest.mark.postgres


async def test_a_backup_holds_every_row_of_every_table_as_json_lines(
    pg_store: PostgresStore, tmp_path: Path
) -> None:
    sid = await new_session(pg_store)
    for i in range(3):
        await append_text(pg_store, sid, f"text {i} \x00 nul")
    await pg_store.commit_compaction(make_commit(sid, (await message_items(pg_store, sid))[:2]))
    path = tmp_path / "backup.jsonl"
    await pg_store.backup_to(str(path))
    header, *lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert header["format"] == BACKUP_FORMAT and header["version"] == 1
    counts: dict[str, int] = {}
    for line in lines:
        counts[line["table"]] = counts.get(line["table"], 0) + 1
    assert counts == {
        "_mnesis_migrations": len(MIGRATIONS),
        "sessions": 1,
        "messages": 4,
        "message_parts": 5,
        "summaries": 1,
        "summary_messages": 2,
        "context_items": 2,
    }
    parts = [r["row"] for r in lines if r["table"] == "message_parts"]
    assert parts[0]["part_type"] == "text"
    assert json.loads(parts[0]["content"]) == {"text": "text 0 \x00 nul"}
    assert [line["table"] for line in lines] == sorted(
        (line["table"] for line in lines), key=BACKUP_TABLES.index
    )
    with pytest.raises(MnesisStoreError, match="cannot write the backup"):
        await pg_store.backup_to(str(path))


async def test_a_snapshot_and_the_repairs_see_and_change_the_context(
    pg_store: PostgresStore,
) -> None:
    sid = await new_session(pg_store)
    mids = [await append_text(pg_store, sid, f"m{i}") for i in range(3)]
    commit = make_commit(sid, (await message_items(pg_store, sid))[:2])
    await pg_store.commit_compaction(commit)
    snap = await pg_store.integrity_snapshot(sid)
    assert [c[1] for c in snap.context] == ["summary", "message"]
    assert snap.summary_messages == [(commit.summary.id, mids[0]), (commit.summary.id, mids[1])]
    assert snap.missing_context_targets == [] and snap.summaries[0][1] == "leaf"
    await pg_store.replace_context_items(sid, [("message", m, 1) for m in mids])
    assert [i.item_id for i in await pg_store.get_context_items(sid)] == mids
    await pg_store.add_summary_sources(commit.summary.id, [mids[2], mids[0]])
    assert await pg_store.get_summary_source_ids(commit.summary.id) == mids


async def test_concurrent_appends_to_one_session_get_distinct_positions(
    pg_store: PostgresStore,
) -> None:
    sid = await new_session(pg_store)
    await asyncio.gather(*(append_text(pg_store, sid, f"m{i}") for i in range(20)))
    assert await pg_store.count_messages(sid) == 20
    assert len({m.message.id for m in await pg_store.get_messages(sid)}) == 20
    positions = [i.position for i in await pg_store.get_context_items(sid)]
    assert positions == list(range(1, 21))
