"""A second, plain connection to a store's database, the way any other program could
talk to it: one small helper per backend, so the tests of what the database itself
enforces (triggers, constraints) are written once.

Statements use ``?`` placeholders on every backend. A rejected statement is named by
its kind (:data:`Rejection`); each backend maps the kind to the error its driver raises.
"""

from __future__ import annotations

import sqlite3
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal, cast

import psycopg
import pytest

from mnesis.store import ImmutableStore, SQLiteStore
from mnesis.store.postgres import PostgresStore
from mnesis.store.postgres.db import Conn
from mnesis.store.shared.sql import pg

Rejection = Literal["append_only", "check", "unique", "foreign_key", "unknown_value"]
"""Why the database refuses a statement: an append-only trigger, a ``CHECK``, a unique
key, a foreign key, or a value outside a closed vocabulary."""


class RawSQL(ABC):
    """An autocommit connection to the database under a store."""

    errors: ClassVar[dict[Rejection, tuple[type[Exception], str]]]
    """Rejection kind → the driver's exception and a pattern its message matches."""

    @abstractmethod
    def rows(self, sql: str, *args: object) -> list[tuple[Any, ...]]:
        """Run one statement; every row it returns (none for a write)."""

    @abstractmethod
    def delete_statements(self, table: str) -> list[str]:
        """Every statement that would empty ``table``."""

    @abstractmethod
    async def write_through_store(self, store: ImmutableStore, sql: str) -> None:
        """Run ``sql`` inside one of the store's own write transactions."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection."""

    def count(self, table: str) -> int:
        """How many rows ``table`` holds."""
        return int(self.rows(f"SELECT COUNT(*) FROM {table}")[0][0])

    def rejects(self, kind: Rejection, sql: str, *args: object) -> None:
        """Assert the database refuses ``sql`` for the reason ``kind``."""
        error, pattern = self.errors[kind]
        with pytest.raises(error, match=pattern):
            self.rows(sql, *args)


class SQLiteRaw(RawSQL):
    """Plain ``sqlite3`` on the store's file, foreign keys on (as the store has them)."""

    errors: ClassVar[dict[Rejection, tuple[type[Exception], str]]] = {
        "append_only": (sqlite3.DatabaseError, "mnesis append-only"),
        "check": (sqlite3.IntegrityError, "CHECK"),
        "unique": (sqlite3.IntegrityError, "UNIQUE"),
        "foreign_key": (sqlite3.IntegrityError, "FOREIGN KEY"),
        "unknown_value": (sqlite3.IntegrityError, "CHECK"),
    }

    def __init__(self, path: str) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None)
        self._conn.execute("PRAGMA foreign_keys = ON")

    def rows(self, sql: str, *args: object) -> list[tuple[Any, ...]]:
        return self._conn.execute(sql, args).fetchall()

    def delete_statements(self, table: str) -> list[str]:
        return [f"DELETE FROM {table}"]

    async def write_through_store(self, store: ImmutableStore, sql: str) -> None:
        db = cast(SQLiteStore, store.backend).db
        await db.write(lambda conn: conn.execute(sql))

    def close(self) -> None:
        self._conn.close()


class PostgresRaw(RawSQL):
    """Plain ``psycopg`` on the store's database."""

    errors: ClassVar[dict[Rejection, tuple[type[Exception], str]]] = {
        "append_only": (psycopg.errors.RaiseException, "mnesis append-only"),
        "check": (psycopg.errors.CheckViolation, "check constraint"),
        "unique": (psycopg.errors.UniqueViolation, "duplicate key"),
        "foreign_key": (psycopg.errors.ForeignKeyViolation, "foreign key"),
        "unknown_value": (psycopg.errors.InvalidTextRepresentation, "invalid input value"),
    }

    def __init__(self, url: str) -> None:
        self._conn = psycopg.connect(url, autocommit=True)

    def rows(self, sql: str, *args: object) -> list[tuple[Any, ...]]:
        cur = self._conn.execute(pg(sql), args)
        return cur.fetchall() if cur.description is not None else []

    def delete_statements(self, table: str) -> list[str]:
        return [f"DELETE FROM {table}", f"TRUNCATE {table} CASCADE"]

    async def write_through_store(self, store: ImmutableStore, sql: str) -> None:
        async def _run(conn: Conn) -> None:
            await conn.execute(sql)

        await cast(PostgresStore, store.backend).db.write(_run)

    def close(self) -> None:
        self._conn.close()


def open_raw(store: ImmutableStore, request: pytest.FixtureRequest) -> RawSQL:
    """A raw connection to the database of ``store`` (a contract ``store``)."""
    if isinstance(store.backend, SQLiteStore):
        return SQLiteRaw(store.location)
    return PostgresRaw(str(request.getfixturevalue("migrated_pg_url")))
