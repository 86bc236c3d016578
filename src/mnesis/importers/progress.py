"""An import's progress record (``import_sources``) around each batch it writes: the
batch announced before it is written (``state["pending"]``) and the progress after it,
or, where the store allows (:meth:`~mnesis.importers.writer.BatchWriter.writes_at_once`),
the batch, its sessions and the progress in one transaction; and, when an import
starts, the bookkeeping of a batch an interrupted import announced."""

from __future__ import annotations

from mnesis.errors import MessageNotFoundError
from mnesis.importers.batches import Batch
from mnesis.importers.reader import FINGERPRINT_BYTES, fingerprint
from mnesis.importers.writer import BatchWriter
from mnesis.models.ids import new_id
from mnesis.store.base import ImportSource
from mnesis.store.immutable import ImmutableStore

__all__ = ["commit", "settle_pending"]


async def _stored_parts(store: ImmutableStore, message_id: str) -> set[str] | None:
    """The part IDs of a stored message (None: no such message)."""
    try:
        found = await store.get_message(message_id)
    except MessageNotFoundError:
        return None
    return {p.id for p in found.parts if p.id is not None}


async def settle_pending(store: ImmutableStore, source: ImportSource) -> ImportSource:
    """Finish the bookkeeping of a batch an interrupted import announced: done when its
    last message is stored (or, for a batch that only continued stored messages, its
    continuations are). Continuations stored without their batch are left out when the
    lines are parsed again (:attr:`~mnesis.importers.batches.Tail.skip`)."""
    pending = source.state.pop("pending", None)
    if not isinstance(pending, dict):
        return source
    extended = []
    for key, message_id, first_part, count in pending.get("extensions", []):
        parts = await _stored_parts(store, str(message_id))
        extended.append((str(key), parts is not None and first_part in parts, int(count)))
    last = pending.get("message_id")
    if last is not None:
        done = await _stored_parts(store, str(last)) is not None
    else:
        done = bool(extended) and all(stored for _, stored, _ in extended)
    if not done:
        tails = source.state.get("tails", {})
        for key, stored, count in extended:
            if stored and isinstance(tails.get(key), dict):
                tails[key]["skip"] = count
        if any(stored for _, stored, _ in extended):
            await store.put_import_source(source)
        return source
    source.byte_offset = int(pending["offset"])
    source.state["tails"] = pending.get("tails", {})
    source.state["parser"] = pending.get("parser", {})
    source.lines = int(pending["lines"])
    source.state["json_items"] = int(pending.get("json_items", 0))
    await store.put_import_source(source)
    return source


async def commit(
    store: ImmutableStore, writer: BatchWriter, batch: Batch, source: ImportSource, path: str
) -> None:
    """Write one batch, announced in the progress record before it is written; or, when
    the store writes the batch's sessions, rows and progress in one transaction
    (:meth:`BatchWriter.writes_at_once`), in that one transaction, unannounced."""
    at_once = writer.writes_at_once(batch)
    if not at_once:
        await writer.create_sessions(batch)
    source.session_id = batch.known_sessions.get("", batch.main_session_id)
    source.state["sessions"] = batch.known_sessions
    if not source.fingerprint or source.byte_offset == 0:
        span = min(FINGERPRINT_BYTES, batch.offset)
        source.fingerprint = fingerprint(path, span)
        source.state["fingerprint_bytes"] = span
    if at_once:
        _written(source, batch)
        await writer.write_at_once(batch, source)
        return
    if batch.last_message_id is not None or batch.extensions:
        for extension in batch.extensions:
            first = extension.parts[0]
            first.id = first.id or new_id("part")
        source.state["pending"] = {
            "message_id": batch.last_message_id,
            "extensions": [
                [e.session_key, e.message_id, e.parts[0].id, len(e.parts)] for e in batch.extensions
            ],
            "tails": batch.tails,
            "parser": batch.parser_state,
            "offset": batch.offset,
            "lines": batch.lines,
            "json_items": batch.lines,
        }
        await store.put_import_source(source)
    await writer.write(batch)
    _written(source, batch)
    await store.put_import_source(source)


def _written(source: ImportSource, batch: Batch) -> None:
    """``source`` once ``batch`` is written."""
    source.state.pop("pending", None)
    source.state["tails"] = batch.tails
    source.state["parser"] = batch.parser_state
    source.byte_offset, source.lines = batch.offset, batch.lines
    source.state["json_items"] = batch.lines
    source.messages += len(batch.messages) + (len(batch.rows.rows.messages) if batch.rows else 0)
    source.state.pop("_counted", None)
