"""Write the :class:`~mnesis.importers.batches.Batch` es of an import: sessions, the parts
that continue messages stored by an earlier batch, then the messages in one
``append_batch`` transaction, then the completions of tool calls whose result arrived
after their call's batch was cut."""

from __future__ import annotations

from mnesis.errors import PartNotFoundError
from mnesis.importers.batches import Batch, Extension, part_tokens
from mnesis.importers.records import ToolResult
from mnesis.models.parts import ToolPart
from mnesis.store.base import ImportSource
from mnesis.store.codec import pre_encoded
from mnesis.store.immutable import ImmutableStore
from mnesis.store.record_checks import check_import_source, check_session_record
from mnesis.store.sqlite.store import SQLiteStore

__all__ = ["BatchWriter"]


class BatchWriter:
    """Writes the batches of one import, in order, into ``store``."""

    def __init__(self, store: ImmutableStore) -> None:
        self.store = store
        self._written_calls: dict[str, tuple[str, str]] = {}
        """Call ID → ``(part ID, message ID)`` of the calls this import stored ``running``."""
        self.messages = 0
        self.tool_results = 0
        self.orphan_results = 0
        """Tool results whose call was never seen."""

    async def create_sessions(self, batch: Batch) -> None:
        """Create the sessions the batch's messages go to."""
        for record in batch.sessions:
            await self.store.create_session(record)

    def writes_at_once(self, batch: Batch) -> bool:
        """Whether :meth:`write_at_once` can write ``batch``: rows prepared for a backend
        that writes them with their sessions and the import's progress in one
        transaction, and nothing to do around them (no stored message to continue, no
        late result to complete: those come before or after the rows)."""
        return (
            batch.rows is not None
            and not batch.extensions
            and not batch.late
            and isinstance(self.store.backend, SQLiteStore)
        )

    async def write_at_once(self, batch: Batch, source: ImportSource) -> None:
        """Create the batch's sessions, append its rows and store ``source`` (the
        import's progress after the batch) in one transaction (see :meth:`writes_at_once`).
        Everything is checked before the write: a typed error leaves the store as it was."""
        backend = self.store.backend
        assert batch.rows is not None and isinstance(backend, SQLiteStore)
        for record in batch.sessions:
            check_session_record(record)
        check_import_source(source)
        await backend.batch.append_rows(batch.rows, sessions=batch.sessions, source=source)
        self._written_calls.update((call, (part, msg)) for call, part, msg in batch.calls)
        self.messages += len(batch.rows.rows.messages)
        self.tool_results += batch.tool_results

    async def write(self, batch: Batch) -> None:
        """Extend the stored messages the batch continues, append its messages (one
        transaction), then complete late results."""
        for extension in batch.extensions:
            await self._extend(extension)
        if batch.rows is not None:
            backend = self.store.backend
            assert isinstance(backend, SQLiteStore)  # rows are prepared only for it
            await backend.batch.append_rows(batch.rows)
            self._written_calls.update((call, (part, msg)) for call, part, msg in batch.calls)
            self.messages += len(batch.rows.rows.messages)
        if batch.messages:
            # A batch the parser process checked goes to the backend unchecked (the
            # check would repeat on the same values); its parts come encoded.
            append = self.store.backend.append_batch if batch.checked else self.store.append_batch
            with pre_encoded(batch.encoded):
                appended = await append(batch.messages)
            for new, landed in zip(batch.messages, appended, strict=True):
                for part, part_id in zip(new.parts, landed.part_ids, strict=True):
                    if isinstance(part, ToolPart) and part.status.state == "running":
                        self._written_calls[part.tool_call_id] = (part_id, new.message.id)
            self.messages += len(batch.messages)
        self.tool_results += batch.tool_results
        for result, session_id in batch.late:
            await self._complete_late(result, session_id)

    async def _extend(self, extension: Extension) -> None:
        """Append the parts that continue a stored message (its token estimate grows by
        theirs, as if they had come with it)."""
        stored = await self.store.get_message(extension.message_id)
        part_ids = await self.store.append_parts(
            extension.message_id,
            extension.parts,
            part_tokens=extension.tokens,
            finish_reason=extension.finish_reason,
            token_estimate=stored.message.token_estimate + sum(extension.tokens),
        )
        for part, part_id in zip(extension.parts, part_ids, strict=True):
            if isinstance(part, ToolPart) and part.status.state == "running":
                self._written_calls[part.tool_call_id] = (part_id, extension.message_id)

    async def _complete_late(self, result: ToolResult, session_id: str | None) -> None:
        found = self._written_calls.pop(result.call_id, None)
        if found is None and session_id is not None:
            try:
                found = await self.store.find_tool_part(session_id, result.call_id)
            except PartNotFoundError:
                found = None
        if found is None:
            self.orphan_results += 1
            return
        part_id, message_id = found
        stored = await self.store.get_message(message_id)
        part = next(p for p in stored.parts if p.id == part_id)
        if not isinstance(part, ToolPart) or part.status.state not in ("pending", "running"):
            self.orphan_results += 1  # a second result for a call already answered
            return
        before = part_tokens(part)
        part.output = result.output
        after = part_tokens(part)
        # The estimates a result that arrived with its call would have given.
        await self.store.update_part_status(
            part_id,
            state="error" if result.is_error else "completed",
            output=result.output,
            error_message=(result.output[:500] or "error") if result.is_error else None,
            completed_at=result.created_at,
            token_estimate=after,
            message_token_estimate=stored.message.token_estimate - before + after,
        )
