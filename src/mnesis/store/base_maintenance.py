"""The integrity, repair and maintenance half of the store interface
(:class:`MaintenanceBackend`, the base of :class:`~mnesis.store.base.StoreBackend`, which
every backend implements): snapshots, the chain and engine checks, repairs, backups,
purging, import progress and the bytes used."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from mnesis.store import records

__all__ = ["MaintenanceBackend"]


class MaintenanceBackend(ABC):
    """What a backend answers for integrity checks, repairs and maintenance (see
    :class:`~mnesis.store.base.StoreBackend`)."""

    # integrity --------------------------------------------------------------
    @abstractmethod
    async def list_session_ids(self) -> list[str]:
        """Every session ID, oldest first."""

    @abstractmethod
    async def integrity_snapshot(self, session_id: str) -> records.IntegritySnapshot:
        """The rows the integrity checker needs for one session."""

    async def verify_chain(
        self, session_id: str, expect: bytes | None = None
    ) -> records.ChainReport:
        """The session's hash chain, checked link by link (see ``docs/integrity.md``);
        ``expect``: a head recorded earlier, looked for among the links."""
        raise NotImplementedError(f"{type(self).__name__} keeps no hash chain")

    async def check_usage(self, session_id: str) -> records.UsageCheck | None:
        """The session's kept usage sums beside a fresh sum of its messages up to the
        same message (None: this backend keeps none for it)."""
        return None

    async def forget_usage(self, session_id: str) -> None:
        """Repair: drop the session's kept usage sums (a backend keeping none: nothing)."""
        return None

    async def engine_check(self, *, full: bool = False) -> records.EngineCheck:
        """What the database engine's own consistency check ran and found.

        ``full`` asks for the thorough variant. The default runs nothing and says so: a
        backend without such a check inherits it.
        """
        return records.EngineCheck(unavailable=["this backend offers no engine check"])

    @abstractmethod
    async def replace_context_items(
        self, session_id: str, items: Sequence[tuple[str, str, int]]
    ) -> None:
        """Repair: replace a session's context with ``(item_type, item_id, tokens)`` rows,
        positions 1..n, in one transaction."""

    @abstractmethod
    async def add_summary_sources(self, summary_id: str, message_ids: Sequence[str]) -> None:
        """Repair: link an orphan leaf summary to its source messages."""

    @abstractmethod
    async def backup_to(self, path: str) -> None:
        """Write a consistent copy of the whole database to ``path``."""

    # maintenance ------------------------------------------------------------
    @abstractmethod
    async def purge_session(self, session_id: str) -> records.PurgeReport:
        """Remove a session, its sub-agent sessions and every row of theirs, in one
        transaction: the one explicit exception to append-only history (a privacy
        request). The append-only guard is lifted only inside that transaction and
        only for those sessions; raises :class:`~mnesis.errors.SessionNotFoundError`."""

    @abstractmethod
    async def get_import_source(self, source_key: str) -> records.ImportSource | None:
        """The import progress of a transcript file, if it was imported before."""

    @abstractmethod
    async def put_import_source(self, source: records.ImportSource) -> None:
        """Insert or replace the import progress of a transcript file."""

    @abstractmethod
    async def used_bytes(self) -> int:
        """The bytes the store's data occupies: on SQLite the file's pages that hold data
        (free pages left out: how many there are depends on when the background
        full-text merge last ran); on PostgreSQL the tables of the store's schema with
        their indexes and TOAST data."""
