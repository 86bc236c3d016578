"""A backend as a small wrapper over named collaborators, the way Django's database
backends are (``connection.ops``, ``connection.features``, ...).

:class:`BackendWrapper` is the engine-neutral half of both backends: it names the
collaborators each engine gives it (``store.stats``, ...), each an engine-neutral base
with a SQLite and a PostgreSQL subclass (``store/sqlite/<topic>.py``,
``store/postgres/<topic>.py``), and keeps the methods of the
:class:`~mnesis.store.base.StoreBackend` interface as one-line delegations to them,
written here once. Callers keep calling ``backend.session_stats(...)``; a reader who
wants the SQL follows ``self.stats`` to the engine's module of that name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.store.base import StoreBackend
from mnesis.store.records import (
    AppendedMessage,
    ChainReport,
    EngineCheck,
    ImportSource,
    IntegritySnapshot,
    NewMessage,
    PurgeReport,
)
from mnesis.store.session_stats import BaseStats, SessionStats
from mnesis.store.shared.batch import BaseBatch
from mnesis.store.shared.integrity import BaseIntegrity
from mnesis.store.shared.purge import BasePurge

__all__ = ["BackendWrapper"]


class BackendWrapper(StoreBackend):
    """The interface answered by named collaborators (each engine's store sets them)."""

    stats: BaseStats[Any]
    """Per-session counts (``session_stats``)."""
    integrity: BaseIntegrity[Any]
    """Snapshots, the engine's own check, the hash chain's check, repairs, backups."""
    purge: BasePurge[Any]
    """Purging a session; import progress."""
    batch: BaseBatch[Any]
    """A large batch of new messages in one transaction (``append_batch``)."""

    # stats -----------------------------------------------------------------
    async def session_stats(self, session_ids: Sequence[str] | None) -> dict[str, SessionStats]:
        return await self.stats.session_stats(session_ids)

    # integrity -------------------------------------------------------------
    async def list_session_ids(self) -> list[str]:
        return await self.integrity.list_session_ids()

    async def integrity_snapshot(self, session_id: str) -> IntegritySnapshot:
        return await self.integrity.integrity_snapshot(session_id)

    async def verify_chain(self, session_id: str, expect: bytes | None = None) -> ChainReport:
        return await self.integrity.verify_chain(session_id, expect)

    async def engine_check(self, *, full: bool = False) -> EngineCheck:
        return await self.integrity.engine_check(full=full)

    async def replace_context_items(
        self, session_id: str, items: Sequence[tuple[str, str, int]]
    ) -> None:
        await self.integrity.replace_context_items(session_id, items)

    async def add_summary_sources(self, summary_id: str, message_ids: Sequence[str]) -> None:
        await self.integrity.add_summary_sources(summary_id, message_ids)

    async def backup_to(self, path: str) -> None:
        await self.integrity.backup_to(path)

    # purge and import progress ---------------------------------------------
    async def purge_session(self, session_id: str) -> PurgeReport:
        return await self.purge.purge_session(session_id)

    async def get_import_source(self, source_key: str) -> ImportSource | None:
        return await self.purge.get_import_source(source_key)

    async def put_import_source(self, source: ImportSource) -> None:
        await self.purge.put_import_source(source)

    # batches ---------------------------------------------------------------
    async def append_batch(self, batch: Sequence[NewMessage]) -> list[AppendedMessage]:
        return await self.batch.append_batch(batch)
