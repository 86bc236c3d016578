"""The storage-level passes of the integrity checker: the database engine's own check
and, with ``deep``, decoding every stored row.

Both find damage below the level of lineage (a flipped bit in a page, an index that
disagrees with its table, a JSON column that no longer parses). They return
``(object_id, detail)`` pairs; the checker turns them into violations. On PostgreSQL
the engine's part is what an ordinary role may run (index validity, page-checksum
failures, ``amcheck`` where installed and granted); what cannot run is reported as
unavailable, not as passed.
"""

from __future__ import annotations

from mnesis.errors import MnesisStoreError, StoreCorruptError
from mnesis.store.immutable import ImmutableStore
from mnesis.store.records import EngineCheck

__all__ = ["Finding", "chain_findings", "decode_findings", "engine_damage", "engine_findings"]

Finding = tuple[str, str]
"""``(object_id, detail)`` of one piece of damage."""

DATABASE = "database"
"""The object ID of a finding about the database as a whole."""


async def engine_findings(store: ImmutableStore, *, full: bool) -> EngineCheck:
    """What the engine's consistency check (SQLite ``quick_check``/``integrity_check``)
    ran and found; a check that fails to run is itself a problem."""
    try:
        return await store.engine_check(full=full)
    except MnesisStoreError as exc:
        return EngineCheck(problems=[f"the database engine's check failed: {exc}"])


def engine_damage(check: EngineCheck) -> list[Finding]:
    """The problems of ``check`` as findings about the whole database."""
    return [(DATABASE, line) for line in check.problems]


async def decode_findings(
    store: ImmutableStore, session_id: str, message_ids: list[str]
) -> list[Finding]:
    """Decode the session row and every message with its parts; one finding per row
    that does not decode. Reads the whole session at once and, only when that fails,
    message by message to name each damaged one."""
    out: list[Finding] = []
    try:
        await store.get_session(session_id)
    except StoreCorruptError as exc:
        out.append((session_id, str(exc)))
    try:
        await store.get_messages(session_id, include_summaries=True)
        return out
    except StoreCorruptError:
        pass
    for message_id in message_ids:
        try:
            await store.get_message(message_id)
        except StoreCorruptError as exc:
            out.append((message_id, str(exc)))
    return out


CHAIN_UNAVAILABLE = (
    "hash chain: the database has none yet (written before m011; opening it for writing "
    "migrates it)"
)


async def chain_findings(store: ImmutableStore, session_id: str) -> tuple[list[Finding], str]:
    """The session's hash chain checked (see ``docs/integrity.md``): the first broken
    link, then (when none) each row no link covers; and why the check could not run
    (empty: it ran)."""
    try:
        report = await store.verify_chain(session_id)
    except StoreCorruptError as exc:
        return [(session_id, f"hash chain unreadable: {exc}")], ""
    except NotImplementedError as exc:
        return [], f"hash chain: {exc}"
    if not report.available:
        return [], CHAIN_UNAVAILABLE
    out: list[Finding] = []
    if report.broken is not None:
        b = report.broken
        out.append(
            (b.row_id, f"first broken link of the hash chain: link {b.link} ({b.kind}): {b.detail}")
        )
    out += [
        (row_id, "row is in no link of the hash chain (written around the store)")
        for row_id in report.unchained
    ]
    return out, ""
