"""Migrations are frozen records of what was applied: the schema a fresh database gets
from the migrations known here (both backends) is compared, byte for byte, with a dump
taken when they were written, and each migration script with its recorded digest.

A migration added later (m009 and on) is left out of both comparisons, so adding one
never touches this file; changing how an existing migration is written (its text, or
the objects a fresh database gets) fails here.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import TypeVar

import psycopg
import pytest

from mnesis.config import StoreConfig
from mnesis.store import StorePool
from mnesis.store.postgres import PostgresDatabase
from mnesis.store.postgres import db as postgres_db
from mnesis.store.postgres.migrations import MIGRATIONS as POSTGRES_MIGRATIONS
from mnesis.store.sqlite import database as sqlite_database
from mnesis.store.sqlite.migrations import MIGRATIONS as SQLITE_MIGRATIONS

T = TypeVar("T")

GOLDEN = Path(__file__).parent / "golden"

FROZEN = [
    "m001_initial",
    "m002_map_runs",
    "m003_purge_imports",
    "m004_search_context",
    "m005_text_once",
    "m007_vectors",
    "m008_bulk_fts",
]
"""The migrations whose outcome the golden dumps record."""

SQLITE_DIGESTS = {
    "m001_initial": "8d7dc142e7c17add16000171a992cb6a5fa375182f65915891a76f19fc0b6bb6",
    "m002_map_runs": "78589d0d0cf90fa7ad648b8b7f72c4e22a3e3b197c4225311885e87dd2088020",
    "m003_purge_imports": "b5f22ab26b06c311d0e7a6d46279a4a720decb122fc76f7e1fa372312946106f",
    "m004_search_context": "b72e6a629c74c4b524be1ec33035d33f8c839552efe7615408de1da4f7199ea6",
    "m007_vectors": "f79952983cf8b8dec8630c8a32ca19e6d7b407aec2b7fca9f5393661c1c36c95",
    "m008_bulk_fts": "e335b6e1246cd380660b8a2db0ea3533d275a294794a093315d8bf69604faf09",
}
POSTGRES_DIGESTS = {
    "m001_initial": "97667eff04435eddcdf8bd159dfe7b56d1c2a9cc05d7ab1487784e82ce0e8e78",
    "m002_map_runs": "79f7fa455939aebde8d23318050d435ddf8ef2e832c95ed00b6652291821c84c",
    "m003_purge_imports": "fd289c27e18c2befdefaf2a6a383e54db22fcd0cc161782d5ce439cc2e4b5364",
    "m004_search_context": "5a89197c07c52723eaccbe72f54ae9824205925055aaafba99d17695d4a4ad3f",
    "m005_text_once": "44fe1c7e31a5d4916d6ce8c9fd5df6d05c081e009e1b2d83edd8320e93eca128",
    "m007_vectors": "14601ef91e50a23073ff5e1ec916e92aee7994c1f625face033d7a5254e61247",
}
"""sha256 of each migration script (SQLite's m005 is a function, checked by its outcome)."""

_POSTGRES_CATALOG = [
    "SELECT table_name, column_name, ordinal_position, data_type, udt_name, is_nullable,"
    " column_default, is_generated, generation_expression, is_identity"
    " FROM information_schema.columns WHERE table_schema = 'public'"
    " ORDER BY table_name, ordinal_position",
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint"
    " WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2",
    "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
    " ORDER BY 1, 2",
    "SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid) FROM pg_trigger"
    " WHERE NOT tgisinternal ORDER BY 1, 2",
    "SELECT proname, pg_get_functiondef(oid) FROM pg_proc"
    " WHERE pronamespace = 'public'::regnamespace ORDER BY 1",
    "SELECT t.typname, e.enumsortorder, e.enumlabel FROM pg_enum e"
    " JOIN pg_type t ON t.oid = e.enumtypid ORDER BY 1, 2",
]


def _frozen(migrations: list[tuple[str, T]]) -> list[tuple[str, T]]:
    return [(name, m) for name, m in migrations if name in FROZEN]


def _digest(sql: object) -> str:
    assert isinstance(sql, str)
    return hashlib.sha256(sql.encode()).hexdigest()


def _lines(rows: list[tuple[object, ...]]) -> str:
    return "".join(" | ".join(str(v) for v in row) + "\n" for row in rows)


def _compare(actual: str, golden: str, tmp_path: Path) -> None:
    if actual != (GOLDEN / golden).read_text():
        (tmp_path / golden).write_text(actual)
        pytest.fail(f"the fresh schema differs from {GOLDEN / golden}: see {tmp_path / golden}")


class TestMigrationScripts:
    def test_sqlite_migrations_are_the_recorded_scripts(self) -> None:
        scripts = {name: m for name, m in _frozen(SQLITE_MIGRATIONS) if name in SQLITE_DIGESTS}
        assert {name: _digest(sql) for name, sql in scripts.items()} == SQLITE_DIGESTS

    def test_postgres_migrations_are_the_recorded_scripts(self) -> None:
        scripts = dict(_frozen(POSTGRES_MIGRATIONS))
        assert {name: _digest(sql) for name, sql in scripts.items()} == POSTGRES_DIGESTS


class TestFreshSchema:
    async def test_sqlite_fresh_schema_is_the_recorded_one(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(sqlite_database, "MIGRATIONS", _frozen(SQLITE_MIGRATIONS))
        path = str(tmp_path / "fresh.db")
        pool = StorePool()
        try:
            await pool.acquire(db_path=path)
        finally:
            await pool.close_all()
        conn = sqlite3.connect(path)
        try:
            rows = conn.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
            ).fetchall()
        finally:
            conn.close()
        _compare(_lines(rows), "sqlite_schema.txt", tmp_path)

    @pytest.mark.postgres
    async def test_postgres_fresh_schema_is_the_recorded_one(
        self, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(postgres_db, "MIGRATIONS", _frozen(POSTGRES_MIGRATIONS))
        db = PostgresDatabase(pg_url, StoreConfig(database_url=pg_url, connection_timeout=10))
        await db.open()
        await db.close()
        with psycopg.connect(pg_url) as conn:
            dump = "".join(_lines(conn.execute(q).fetchall()) for q in _POSTGRES_CATALOG)  # type: ignore[arg-type]
        _compare(dump, "postgres_schema.txt", tmp_path)
