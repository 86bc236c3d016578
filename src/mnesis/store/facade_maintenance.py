"""The integrity, repair and maintenance half of the store facade
(:class:`~mnesis.store.immutable.ImmutableStore`): snapshots, the chain and engine
checks, repairs, backups, purging, import progress and the bytes used; check, then
delegate."""

from __future__ import annotations

from collections.abc import Sequence

from mnesis.store.checks import chain_head_bytes, check_id, check_ids
from mnesis.store.facade_summaries import SummaryFacade
from mnesis.store.record_checks import check_context_rows, check_import_source
from mnesis.store.records import (
    ChainReport,
    EngineCheck,
    ImportSource,
    IntegritySnapshot,
    PurgeReport,
    UsageCheck,
)

__all__ = ["MaintenanceFacade"]


class MaintenanceFacade(SummaryFacade):
    """Integrity checks, repairs, backups, purging and import progress, checked then
    delegated to :attr:`backend`."""

    # integrity --------------------------------------------------------------
    async def list_session_ids(self) -> list[str]:
        return await self.backend.list_session_ids()

    async def integrity_snapshot(self, session_id: str) -> IntegritySnapshot:
        check_id(session_id, "session_id")
        return await self.backend.integrity_snapshot(session_id)

    async def verify_chain(self, session_id: str, expect: str | bytes | None = None) -> ChainReport:
        """The session's hash chain, checked link by link: its head (hash, link count,
        last ``seq``), the first link that no longer matches the rows it covers, and
        (``expect``: a head recorded earlier, 64 hex digits or its 32 bytes) which link
        that head is, so history recorded then is known unchanged (see
        ``docs/integrity.md``). Raises
        ``SessionNotFoundError``, ``InvalidArgumentError`` for a malformed ``expect``."""
        check_id(session_id, "session_id")
        expected = None if expect is None else chain_head_bytes(expect)
        await self.backend.get_session(session_id)
        return await self.backend.verify_chain(session_id, expected)

    async def engine_check(self, *, full: bool = False) -> EngineCheck:
        """What the database engine's own consistency check ran and found: SQLite's
        ``PRAGMA quick_check`` (``integrity_check`` when ``full``); on PostgreSQL the
        index validity and page-checksum counters, and ``amcheck`` where it is installed
        and may be used (what cannot run is listed as unavailable)."""
        return await self.backend.engine_check(full=full)

    async def check_usage(self, session_id: str) -> UsageCheck | None:
        """The session's kept usage sums (what a load adds newer messages to) beside a
        fresh sum of its messages up to the same message, read in one snapshot (None:
        none kept yet, or a database from before m015)."""
        check_id(session_id, "session_id")
        return await self.backend.check_usage(session_id)

    async def forget_usage(self, session_id: str) -> None:
        """Repair: drop the session's kept usage sums; the next load sums its messages
        again and keeps the result. Messages are not touched."""
        check_id(session_id, "session_id")
        await self.backend.forget_usage(session_id)

    async def replace_context_items(
        self, session_id: str, items: Sequence[tuple[str, str, int]]
    ) -> None:
        check_id(session_id, "session_id")
        check_context_rows(items)
        await self.backend.replace_context_items(session_id, items)

    async def add_summary_sources(self, summary_id: str, message_ids: Sequence[str]) -> None:
        check_id(summary_id, "summary_id")
        check_ids(message_ids, "message_ids")
        await self.backend.add_summary_sources(summary_id, message_ids)

    async def backup_to(self, path: str) -> None:
        check_id(path, "backup path")
        await self.backend.backup_to(path)

    # maintenance ------------------------------------------------------------
    async def purge_session(self, session_id: str) -> PurgeReport:
        check_id(session_id, "session_id")
        return await self.backend.purge_session(session_id)

    async def get_import_source(self, source_key: str) -> ImportSource | None:
        check_id(source_key, "source_key")
        return await self.backend.get_import_source(source_key)

    async def put_import_source(self, source: ImportSource) -> None:
        check_import_source(source)
        await self.backend.put_import_source(source)

    async def used_bytes(self) -> int:
        return await self.backend.used_bytes()
