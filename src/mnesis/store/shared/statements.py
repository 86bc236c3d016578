"""``Statements``: one database run statement by statement, whatever its backend.

Both :class:`~mnesis.store.sqlite.database.SQLiteDatabase` and
:class:`~mnesis.store.postgres.db.PostgresDatabase` offer these calls, so a
store part made only of single statements (written with ``?`` placeholders, see
:mod:`mnesis.store.shared.sql`) is written once for both backends.
"""

from __future__ import annotations

from abc import ABCMeta
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["DB", "Batch", "Plan", "Statements", "StorePart"]

Batch = tuple[str, Sequence[Sequence[Any]]]
"""One statement and the parameter rows it runs over."""

Plan = Callable[[tuple[Any, ...] | None], Sequence[tuple[str, Sequence[Any]]]]
"""The statements (and their parameters) to run given a row just read (None: no row);
it raises to refuse the change."""


class Statements(Protocol):
    """Single statements on one database (``?`` placeholders)."""

    chained: bool
    """Whether the database keeps the hash chain (m011 applied)."""
    usage_kept: bool
    """Whether the database keeps each session's usage sums (m015 applied)."""

    async def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of one read statement."""
        ...

    async def change(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run one statement in its own write transaction; how many rows it changed."""
        ...

    async def change_many(self, batches: Sequence[Batch]) -> None:
        """Run each statement over its rows (none: skipped), all in one write transaction."""
        ...

    async def change_after(
        self, sql: str, args: Sequence[Any], plan: Plan, *, then: str | None = None
    ) -> None:
        """Read the first row of ``sql``, then run the statements ``plan`` makes of it,
        all in one write transaction. ``then``: a second read, run after the first
        (which may lock what it needs) with the first row's last value as its one
        argument; the columns of its first row (NULLs when none) are appended to the
        row ``plan`` gets."""
        ...


DB = TypeVar("DB", bound=Statements)


class StorePart(Generic[DB], metaclass=ABCMeta):
    """One named collaborator of a backend store (``store.stats``, ``store.purge``, ...):
    the database it works on, :attr:`db`. Each topic has an engine-neutral subclass
    (abstract where the engines differ) and one subclass per engine, which names its
    database type (``SQLiteStats(BaseStats[SQLiteDatabase])``)."""

    def __init__(self, db: DB) -> None:
        self.db = db
