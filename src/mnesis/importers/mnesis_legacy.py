"""Upgrading a database written by the earlier ``mnesis`` library (0.4.x) to this schema.

Both libraries default to ``~/.mnesis/sessions.db``. A database of the earlier
library has the tables ``sessions``, ``messages``, ``message_parts``,
``context_items``, ``summary_nodes`` and ``file_references`` and no
``_mnesis_migrations``; opening one directly is refused with an error naming
``mnesis upgrade``. :func:`upgrade_database` (and ``mnesis upgrade PATH``) copies it
into a NEW file through the public store interface:

* every session, message (IDs, timestamps, token counts, cost and finish reason
  kept) and part (part IDs kept), with each tool call's state, timestamps, output
  or error, and its ``compacted_at`` tombstone;
* every summary node as a summary whose lineage is its span (a leaf covers the
  messages from ``span_start_message_id`` to ``span_end_message_id``; a condensed
  node merges its ``parent_node_ids``), written with the old summary message as its
  marker; summary ID ``sum_<the old node ID's suffix>``;
* every file reference (``file_id`` derived from the content hash, as new ones are);
* each session's context view, in the old order.

The original is never opened for writing: it is copied first and the copy is read;
its sha256 is taken before and after. The counts of the new file are compared with
the old rows and the integrity check runs on the result.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field

from mnesis.config import StoreConfig
from mnesis.errors import FileMissingError, InvalidArgumentError, MnesisStoreError
from mnesis.importers._legacy_rows import LegacyImporter, LegacyReader
from mnesis.integrity.checker import IntegrityChecker
from mnesis.models.parts import (
    CompactionPart,
    FileRefPart,
    ToolPart,
)
from mnesis.store.immutable import ImmutableStore

__all__ = ["LEGACY_TABLES", "UpgradeReport", "is_legacy_database", "upgrade_database"]

LEGACY_TABLES = frozenset(
    {"sessions", "messages", "message_parts", "context_items", "summary_nodes", "file_references"}
)
"""The tables that identify a database of the earlier library."""


@dataclass(slots=True)
class UpgradeReport:
    """What :func:`upgrade_database` did. ``old`` and ``new`` count the same things."""

    source: str
    output: str
    source_sha256: str
    source_unchanged: bool
    old: dict[str, int] = field(default_factory=dict)
    new: dict[str, int] = field(default_factory=dict)
    session_ids: list[str] = field(default_factory=list)
    integrity_violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True if every count matches, the original is unchanged and integrity is clean."""
        return self.old == self.new and self.source_unchanged and not self.integrity_violations


def tables_of(path: str) -> set[str]:
    """The table names of the SQLite file at ``path`` (opened read-only)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


def is_legacy_database(path: str) -> bool:
    """True if ``path`` is a database of the earlier mnesis library (not yet upgraded)."""
    try:
        tables = tables_of(path)
    except sqlite3.Error:
        return False
    return tables >= LEGACY_TABLES and "_mnesis_migrations" not in tables


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


async def upgrade_database(path: str, output: str | None = None) -> UpgradeReport:
    """Copy the earlier library's database ``path`` into a new file ``output``.

    ``output`` defaults to ``<path without .db>.upgraded.db`` and must not exist.
    Returns the :class:`UpgradeReport`; raises :class:`~mnesis.errors.MnesisStoreError`
    if the counts of the new file differ from the old rows (the new file is then
    removed), :class:`~mnesis.errors.InvalidArgumentError` if ``path`` is not such a
    database or ``output`` exists, :class:`~mnesis.errors.FileMissingError` if
    ``path`` does not exist.
    """
    source, target, before = await asyncio.to_thread(_prepare, path, output)
    partial = target + ".partial"
    with tempfile.TemporaryDirectory(prefix="mnesis-upgrade-") as tmp:
        legacy = LegacyReader(await asyncio.to_thread(_copy_source, source, tmp))
        try:
            store = ImmutableStore(StoreConfig(db_path=partial, wal_mode=False))
            await store.initialize()
            try:
                report = UpgradeReport(source, target, before, True, old=legacy.counts())
                report.session_ids = await LegacyImporter(legacy, store).run()
                report.new = await _counts(store, report.session_ids)
                checked = await IntegrityChecker(store).run()
                report.integrity_violations = [
                    f"{v.kind}: {v.object_id}: {v.detail}" for v in checked.violations
                ]
            finally:
                await store.close()
        finally:
            legacy.close()
    report.source_unchanged = await asyncio.to_thread(_sha256, source) == before
    complete = report.old == report.new
    await asyncio.to_thread(_finish, partial, target, complete)
    if not complete:
        raise MnesisStoreError(
            f"upgrade of {source} is incomplete: old rows {report.old}, new rows {report.new}"
        )
    return report


def _prepare(path: str, output: str | None) -> tuple[str, str, str]:
    """Check the paths; returns ``(source, target, sha256 of source)``."""
    source = os.path.abspath(os.path.expanduser(path))
    if not os.path.isfile(source):
        raise FileMissingError(source)
    if not is_legacy_database(source):
        raise InvalidArgumentError(
            f"{source} is not a database of the earlier mnesis library "
            f"(expected tables {', '.join(sorted(LEGACY_TABLES))})"
        )
    target = os.path.abspath(os.path.expanduser(output or _default_output(source)))
    if os.path.exists(target):
        raise InvalidArgumentError(f"{target} exists; pass another --output")
    for leftover in (".partial", ".partial-wal", ".partial-shm"):
        if os.path.exists(target + leftover):
            os.remove(target + leftover)
    return source, target, _sha256(source)


def _copy_source(source: str, directory: str) -> str:
    """Copy the original (and its WAL, if any) so that it is never opened."""
    copy = os.path.join(directory, "legacy.db")
    shutil.copyfile(source, copy)
    if os.path.exists(source + "-wal"):
        shutil.copyfile(source + "-wal", copy + "-wal")
    return copy


def _finish(partial: str, target: str, complete: bool) -> None:
    if complete:
        os.replace(partial, target)
    else:
        os.remove(partial)


def _default_output(source: str) -> str:
    stem = source[:-3] if source.endswith(".db") else source
    return stem + ".upgraded.db"


async def _counts(store: ImmutableStore, session_ids: list[str]) -> dict[str, int]:
    counts = dict.fromkeys(
        ("sessions", "messages", "parts", "tool_parts", "tombstones", "summaries"), 0
    )
    content_ids: set[str] = set()
    context_items = 0
    for sid in session_ids:
        await store.get_session(sid)
        counts["sessions"] += 1
        messages = await store.get_messages(sid, include_summaries=True)
        counts["messages"] += len(messages)
        summary_ids: set[str] = set()
        for message in messages:
            counts["parts"] += len(message.parts)
            for part in message.parts:
                if isinstance(part, ToolPart):
                    counts["tool_parts"] += 1
                    counts["tombstones"] += part.status.compacted_at is not None
                elif isinstance(part, CompactionPart):
                    summary_ids.add(part.summary_id)
                elif isinstance(part, FileRefPart):
                    content_ids.add(part.content_id)
        counts["summaries"] += len(await store.get_summaries(sorted(summary_ids)))
        context_items += len(await store.get_context_items(sid))
    found = 0
    for content_id in content_ids:
        found += await store.get_file_reference(content_id) is not None
    counts["file_references"] = found
    counts["context_items"] = context_items
    return counts
