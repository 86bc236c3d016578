"""Upgrading a real database of the earlier mnesis library (0.4.0), built from its dump."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from mnesis import MnesisSession, StoreCorruptError
from mnesis.cli import run
from mnesis.errors import InvalidArgumentError
from mnesis.importers.mnesis_legacy import is_legacy_database, upgrade_database
from mnesis.integrity.checker import IntegrityChecker
from mnesis.models.parts import CompactionPart, FileRefPart, ToolPart
from mnesis.store.immutable import ImmutableStore

DUMP = Path(__file__).parent / "fixtures" / "mnesis_0_4_0.sql"
MAIN = "sess_01M833MRSN0F23C2P0W4NAS8SY"
REVIEW = "sess_01M833MS7PZ0AHRYBRTC93Z2CR"


@pytest.fixture
def legacy_db(tmp_path: Path) -> Path:
    path = tmp_path / "sessions.db"
    conn = sqlite3.connect(path)
    conn.executescript(DUMP.read_text(encoding="utf-8"))
    conn.close()
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _old_rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()


def test_fixture_is_a_legacy_database(legacy_db: Path) -> None:
    assert is_legacy_database(str(legacy_db))
    counts = _old_rows(legacy_db, "SELECT COUNT(*) FROM message_parts WHERE compacted_at > 0")
    assert counts == [(12,)]


async def test_opening_without_upgrade_names_the_command(legacy_db: Path) -> None:
    before = _sha(legacy_db)
    with pytest.raises(StoreCorruptError, match="mnesis upgrade"):
        await MnesisSession.create(model="fake/x", db_path=str(legacy_db))
    with pytest.raises(StoreCorruptError, match="mnesis upgrade"):
        await MnesisSession.load(MAIN, db_path=str(legacy_db))
    assert _sha(legacy_db) == before


async def test_upgrade_accounts_for_every_row(legacy_db: Path, tmp_path: Path) -> None:
    before = _sha(legacy_db)
    out = tmp_path / "new.db"
    report = await upgrade_database(str(legacy_db), str(out))
    assert report.ok, report
    assert report.source_unchanged and _sha(legacy_db) == before == report.source_sha256
    assert (
        report.old
        == report.new
        == {
            "sessions": 2,
            "messages": 37,
            "parts": 52,
            "tool_parts": 13,
            "tombstones": 12,
            "summaries": 1,
            "file_references": 1,
            "context_items": 9,
        }
    )
    assert report.integrity_violations == []

    store = ImmutableStore(str(out))
    await store.initialize()
    try:
        assert (await IntegrityChecker(store).run()).ok
        # every message and part, by ID
        old_messages = {r[0] for r in _old_rows(legacy_db, "SELECT id FROM messages")}
        old_parts = dict(_old_rows(legacy_db, "SELECT id, compacted_at FROM message_parts"))
        new_messages = [
            m
            for sid in (MAIN, REVIEW)
            for m in await store.get_messages(sid, include_summaries=True)
        ]
        assert {m.id for m in new_messages} == old_messages
        parts = {p.id: p for m in new_messages for p in m.parts}
        assert set(parts) == set(old_parts)
        for part_id, compacted_at in old_parts.items():
            part = parts[part_id]
            if isinstance(part, ToolPart):
                assert part.status.compacted_at == compacted_at
        error = next(
            p for p in parts.values() if isinstance(p, ToolPart) and p.status.state == "error"
        )
        assert error.error_message == "permission denied: /etc/deploy.key"
        # the summary node: its span is its lineage, its message is its marker
        (node_id, start, end) = _old_rows(
            legacy_db, "SELECT id, span_start_message_id, span_end_message_id FROM summary_nodes"
        )[0]
        summary_id = "sum_" + str(node_id).split("_", 1)[1]
        summary = await store.get_summary(summary_id)
        assert summary.message_id == node_id
        sources = await store.get_summary_source_ids(summary_id)
        assert sources[0] == start and sources[-1] == end and len(sources) == 28
        marker = next(m for m in new_messages if m.id == node_id)
        assert any(
            isinstance(p, CompactionPart) and p.summary_id == summary_id for p in marker.parts
        )
        # the context view is the old one, in order
        old_context = _old_rows(
            legacy_db,
            f"SELECT item_type, item_id FROM context_items WHERE session_id = '{MAIN}' "
            "ORDER BY position",
        )
        new_context = [(i.item_type, i.item_id) for i in await store.get_context_items(MAIN)]
        assert new_context == [
            (kind, summary_id if kind == "summary" else item_id) for kind, item_id in old_context
        ]
        # the file reference, by content ID and through the part
        ref_part = next(p for p in parts.values() if isinstance(p, FileRefPart))
        ref = await store.get_file_reference(ref_part.content_id)
        assert ref is not None and ref.path == "src/payments/handlers.py"
        assert ref_part.file_id == ref.file_id
    finally:
        await store.close()


async def test_upgraded_session_loads_assembles_and_greps(legacy_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "new.db"
    await upgrade_database(str(legacy_db), str(out))
    session = await MnesisSession.load(MAIN, db_path=str(out))
    try:
        context = await session.build_context()
        text = "\n".join(str(m.content) for m in context.messages)
        assert context.has_summary
        assert "Summarise where we are." in text
        assert "Migrate the payments service" in text  # inside the imported summary
        hits = await session.grep("8443")
        assert hits.matches, "text of the old database must be searchable"
        tombstoned = await session.grep("pytest output for run 0")
        assert tombstoned.matches  # tombstoned outputs stay searchable
    finally:
        await session.close()
    review = await MnesisSession.load(REVIEW, db_path=str(out))
    try:
        assert (await review.grep("retry budget")).matches
    finally:
        await review.close()


async def test_upgrade_refuses_existing_output_and_non_legacy_files(
    legacy_db: Path, tmp_path: Path
) -> None:
    taken = tmp_path / "taken.db"
    taken.write_bytes(b"")
    with pytest.raises(InvalidArgumentError, match="exists"):
        await upgrade_database(str(legacy_db), str(taken))
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).close()
    with pytest.raises(InvalidArgumentError, match="not a database of the earlier"):
        await upgrade_database(str(plain), str(tmp_path / "x.db"))


def test_cli_upgrade(legacy_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _sha(legacy_db)
    out = tmp_path / "cli.db"
    assert run(["upgrade", str(legacy_db), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "integrity: clean" in printed and "unchanged" in printed
    assert out.exists() and _sha(legacy_db) == before
    assert run(["sessions", "--db", str(out)]) == 0
    assert MAIN in capsys.readouterr().out
    assert run(["upgrade", str(legacy_db), "--output", str(out)]) == 1
