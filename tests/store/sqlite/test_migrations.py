"""SQLite schema migrations: the whole schema after migrating, and how opening fails.

Schema changes go in a new migration (``m00N_what_changed``); when one is added,
the expected sets below are updated in the same change, which is the point.
"""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnesis.errors import MnesisStoreError, StoreCorruptError, StoreReadOnlyError
from mnesis.models.ids import new_id
from mnesis.store import SessionRecord, StorePool
from mnesis.store.sqlite import database as sqlite_database
from mnesis.store.sqlite.migrations import MIGRATIONS
from tests.store.sqlite.helpers import sqlite_db

EXPECTED_TABLES = {
    "_mnesis_migrations",
    "compaction_locks",
    # the context view's rows, keyed by integers under the view context_items (m010)
    "context_slots",
    "file_references",
    "message_parts",
    "messages",
    "sessions",
    "summaries",
    "summary_messages",
    "summary_parents",
    "map_runs",
    "map_items",
    "import_sources",
    "purge_grants",
    # holds the full-text insert trigger off inside a batch append (m008)
    "fts_deferred",
    # embedding vectors of the semantic extra (m007)
    "part_vectors",
    "summary_vectors",
    # FTS5 external-content indexes and their shadow tables
    "message_parts_fts",
    "message_parts_fts_config",
    "message_parts_fts_data",
    "message_parts_fts_docsize",
    "message_parts_fts_idx",
    "summaries_fts",
    "summaries_fts_config",
    "summaries_fts_data",
    "summaries_fts_docsize",
    "summaries_fts_idx",
    # the per-session hash chain over history (m011)
    "history_chain",
    # each session's kept token usage sums (m015)
    "session_usage",
}

EXPECTED_INDEXES = {
    "context_slots_message_idx",
    "context_slots_summary_idx",
    "import_sources_session_idx",
    "map_items_state_idx",
    "message_parts_session_idx",
    "message_parts_tool_call_idx",
    "part_vectors_scan_idx",
    "sessions_created_idx",
    "sessions_parent_idx",
    "summaries_session_idx",
    "summary_messages_message_idx",
    "summary_parents_parent_idx",
    "summary_vectors_scan_idx",
}

EXPECTED_TRIGGERS = {
    # full-text index kept in sync
    "message_parts_fts_insert",
    "message_parts_fts_update",
    "summaries_fts_insert",
    # append-only history
    "message_parts_immutable",
    "message_parts_no_delete",
    "messages_immutable",
    "messages_no_delete",
    "sessions_no_delete",
    "summaries_no_delete",
    "summaries_no_update",
    "summary_messages_no_change",
    "summary_messages_no_delete",
    "summary_parents_no_change",
    "summary_parents_no_delete",
    # the context_items view over context_slots, and its foreign keys (m010)
    "context_items_insert",
    "context_items_update",
    "context_items_delete",
    "context_slots_message_fk",
    "context_slots_session_fk",
    "context_slots_session_id_fk",
    # the hash chain is append-only (m011)
    "history_chain_no_update",
    "history_chain_no_delete",
}


def _schema(path: str) -> dict[str, set[str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT type, name FROM sqlite_master").fetchall()
    finally:
        conn.close()
    out: dict[str, set[str]] = {"table": set(), "index": set(), "trigger": set(), "view": set()}
    for kind, name in rows:
        if not name.startswith("sqlite_autoindex_"):
            out[kind].add(name)
    return out


def _migration_rows(path: str) -> list[tuple[str, int]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT name, applied_at FROM _mnesis_migrations ORDER BY name"
        ).fetchall()
    finally:
        conn.close()


async def _create(path: str) -> None:
    """Open (and so create and migrate) the database at ``path``, then close it."""
    pool = StorePool()
    try:
        await pool.acquire(db_path=path)
    finally:
        await pool.close_all()


@pytest.fixture
def migrated(tmp_path: Path) -> str:
    return str(tmp_path / "migrated.db")


class TestSchemaAfterMigration:
    async def test_a_new_database_has_exactly_the_expected_schema(self, migrated: str) -> None:
        await _create(migrated)
        schema = _schema(migrated)
        assert schema["table"] == EXPECTED_TABLES
        assert schema["index"] == EXPECTED_INDEXES
        assert schema["trigger"] == EXPECTED_TRIGGERS
        assert schema["view"] == {"context_items"}

    async def test_every_migration_is_recorded_once(self, migrated: str) -> None:
        await _create(migrated)
        rows = _migration_rows(migrated)
        assert [name for name, _ in rows] == [name for name, _ in MIGRATIONS]
        assert rows[0][0] == "m001_initial"
        assert all(applied_at > 0 for _, applied_at in rows)

    def test_migrations_are_named_in_order_and_unique(self) -> None:
        names = [name for name, _ in MIGRATIONS]
        assert all(re.fullmatch(r"m\d{3}_[a-z0-9_]+", n) for n in names)
        assert names == sorted(set(names))

    async def test_the_database_runs_in_wal_mode_with_foreign_keys_on(
        self, migrated: str, pool: StorePool
    ) -> None:
        store = await pool.acquire(db_path=migrated)
        pragmas = await sqlite_db(store).read(
            lambda conn: (
                conn.execute("PRAGMA journal_mode").fetchone()[0],
                conn.execute("PRAGMA foreign_keys").fetchone()[0],
            )
        )
        assert pragmas == ("wal", 1)
        with pytest.raises(MnesisStoreError, match="FOREIGN KEY"):
            await sqlite_db(store).write(
                lambda conn: conn.execute(
                    "INSERT INTO compaction_locks (session_id, owner, expires_at) "
                    "VALUES ('sess_missing', 'o', 0)"
                )
            )

    async def test_reopening_does_not_apply_migrations_again(self, migrated: str) -> None:
        await _create(migrated)
        first = _migration_rows(migrated)
        await _create(migrated)
        pool = StorePool()
        try:
            store = await pool.acquire(db_path=migrated)
            await store.create_session(SessionRecord(id=new_id("sess"), model="m"))
        finally:
            await pool.close_all()
        assert _migration_rows(migrated) == first

    async def test_two_pools_opening_a_new_file_at_once_migrate_it_once(
        self, migrated: str
    ) -> None:
        pools = [StorePool(), StorePool()]
        try:
            await asyncio.gather(*(p.acquire(db_path=migrated) for p in pools))
        finally:
            for p in pools:
                await p.close_all()
        assert [name for name, _ in _migration_rows(migrated)] == [n for n, _ in MIGRATIONS]


class TestNewMigrations:
    async def test_a_new_migration_is_applied_to_an_existing_database(
        self, migrated: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        await _create(migrated)
        added = ("m999_add_notes", "CREATE TABLE notes (id TEXT PRIMARY KEY);")
        monkeypatch.setattr(sqlite_database, "MIGRATIONS", [*MIGRATIONS, added])
        await _create(migrated)
        assert "notes" in _schema(migrated)["table"]
        assert _migration_rows(migrated)[-1][0] == "m999_add_notes"

    async def test_a_failing_migration_leaves_no_trace(
        self, migrated: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        await _create(migrated)
        broken = (
            "m999_broken",
            "CREATE TABLE half_done (id TEXT);\nCREATE TABLE oops (id TEXT REFERENCES;\n",
        )
        monkeypatch.setattr(sqlite_database, "MIGRATIONS", [*MIGRATIONS, broken])
        with pytest.raises(MnesisStoreError):
            await _create(migrated)
        assert "half_done" not in _schema(migrated)["table"]
        assert "m999_broken" not in [name for name, _ in _migration_rows(migrated)]


class ReadOnlyFile:
    """A database path that :meth:`lock` makes unwritable, even for root."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._immutable = False

    def touch(self) -> None:
        """Create the file empty (a database not yet migrated)."""
        Path(self.path).touch()

    def lock(self) -> None:
        if os.geteuid() != 0:
            os.chmod(self.path, 0o444)
            return
        # root ignores permission bits; the immutable attribute binds it too.
        done = subprocess.run(["chattr", "+i", self.path], capture_output=True, check=False)
        if done.returncode != 0:
            pytest.skip("cannot make a file read-only for root here (chattr +i failed)")
        self._immutable = True

    def unlock(self) -> None:
        if self._immutable:
            subprocess.run(["chattr", "-i", self.path], check=False)
            self._immutable = False


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[ReadOnlyFile]:
    file = ReadOnlyFile(str(tmp_path / "readonly.db"))
    yield file
    file.unlock()


class TestOpeningFailures:
    async def test_a_database_from_a_newer_mnesis_is_refused(self, migrated: str) -> None:
        await _create(migrated)
        conn = sqlite3.connect(migrated)
        conn.execute("INSERT INTO _mnesis_migrations (name, applied_at) VALUES ('m999_future', 1)")
        conn.commit()
        conn.close()
        pool = StorePool()
        with pytest.raises(StoreCorruptError, match="m999_future"):
            await pool.acquire(db_path=migrated)
        assert pool.open_count() == 0

    async def test_a_file_that_is_not_a_database_is_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "notes.db"
        path.write_bytes(b"these are my notes, not a database\n" * 200)
        pool = StorePool()
        with pytest.raises(StoreCorruptError):
            await pool.acquire(db_path=str(path))
        assert pool.open_count() == 0
        assert path.read_bytes().startswith(b"these are my notes")

    async def test_a_directory_in_place_of_the_file_is_refused(self, tmp_path: Path) -> None:
        (tmp_path / "dir.db").mkdir()
        with pytest.raises(StoreCorruptError):
            await StorePool().acquire(db_path=str(tmp_path / "dir.db"))

    async def test_a_read_only_database_can_be_read_but_a_write_raises_store_read_only(
        self, read_only: ReadOnlyFile
    ) -> None:
        await _create(read_only.path)
        read_only.lock()
        pool = StorePool()
        try:
            store = await pool.acquire(db_path=read_only.path)
            assert await store.list_sessions() == []
            with pytest.raises(StoreReadOnlyError):
                await store.create_session(SessionRecord(id=new_id("sess"), model="m"))
        finally:
            await pool.close_all()

    async def test_a_read_only_file_that_needs_migrating_raises_store_read_only(
        self, read_only: ReadOnlyFile
    ) -> None:
        read_only.touch()
        read_only.lock()
        pool = StorePool()
        with pytest.raises(StoreReadOnlyError):
            await pool.acquire(db_path=read_only.path)
        assert pool.open_count() == 0
