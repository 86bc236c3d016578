"""The child side of :mod:`mnesis.importers.process`: :func:`main` (run by the child's
program, or as ``python -m mnesis.importers.parse_child``) reads a pickled
:class:`ParseJob` on stdin, then writes each batch it cuts to stdout as one frame, then
an end frame (or an error frame).

A frame is a one-byte kind (:data:`BATCH`, :data:`END`, :data:`ERROR`), the payload's
length (8 bytes, big-endian) and the payload. Writing blocks while the pipe is full, so
the child stays at most one batch ahead of the writer.
"""

from __future__ import annotations

import contextlib
import gc
import pickle
import signal
import sys
from dataclasses import dataclass
from typing import Any, BinaryIO

from mnesis.importers.batches import Batch, BatchBuilder
from mnesis.importers.formats import FORMATS, skip_lines
from mnesis.importers.light import light_prepared, new_messages
from mnesis.importers.pipeline import Limits, cut_batches
from mnesis.importers.reader import read_jsonl
from mnesis.importers.wire import dump_batch
from mnesis.models.clock import now_ms
from mnesis.models.parts import ToolPart
from mnesis.store.checks import check_new_messages
from mnesis.store.codec import searchable_text
from mnesis.store.shared.batch import RowPreparer, SessionStart, encode_batch

__all__ = ["BATCH", "END", "ERROR", "HEADER_BYTES", "ParseJob", "main", "prepared_batch"]

BATCH, END, ERROR = b"B", b"E", b"X"
HEADER_BYTES = 9


@dataclass(slots=True, frozen=True)
class ParseJob:
    """What the child parses: ``path`` from byte ``offset`` (line number ``line``) in
    ``format``, continuing an earlier import's ``sessions`` and ``tails``."""

    path: str
    format: str
    offset: int
    line: int
    limits: Limits
    sessions: dict[str, str] | None = None
    tails: dict[str, Any] | None = None
    starts: dict[str, SessionStart] | None = None
    """Where the import's existing sessions stand (the backend's ``batch.batch_starts``): the
    child then builds the rows themselves (:class:`~mnesis.store.shared.batch.RowPreparer`);
    None: it checks and encodes the messages only."""
    parent_session: str | None = None
    parser_state: dict[str, Any] | None = None
    """Where the format's parser stood after the earlier import (``Parser.state``)."""
    """The stored session a sub-agent's own transcript belongs under (see
    :class:`~mnesis.importers.batches.BatchBuilder`)."""


def _frame(out: BinaryIO, kind: bytes, payload: bytes) -> None:
    out.write(kind + len(payload).to_bytes(HEADER_BYTES - 1, "big"))
    out.write(payload)
    out.flush()


def _encoded(batch: Batch) -> Batch:
    """``batch`` checked and its parts encoded (IDs assigned) as the store's batch append
    does both, so the writing process does neither again."""
    check_new_messages(batch.messages)
    batch.checked = True
    for item, rows in encode_batch(batch.messages):
        batch.encoded += ((part, row[2]) for part, row in zip(item.parts, rows, strict=True))
    return batch


def prepared_batch(batch: Batch, preparer: RowPreparer) -> Batch:
    """``batch`` checked and turned into the rows of its inserts (see
    :class:`~mnesis.store.shared.batch.RowPreparer`), so the writing process does little
    more than insert them. The extensions the writer appends first count as neighbours.
    Messages held as plain data (:attr:`Batch.light`) become rows without models when the
    store's batch check plainly accepts them, else they go the model path."""
    light = light_prepared(batch.light) if batch.light else None
    if batch.light and light is None:
        batch.messages += new_messages(batch.light)
    batch.light = []
    check_new_messages(batch.messages)
    for extension in batch.extensions:
        session_id = batch.known_sessions[extension.session_key]
        columns = [
            ("", 0, {"part_type": part.type, "text_content": searchable_text(part)})
            for part in extension.parts
        ]
        preparer.extend(session_id, extension.role, columns)
    if light is not None:
        prepared, batch.calls = light
    else:
        prepared = encode_batch(batch.messages)
        batch.calls = [
            (part.tool_call_id, row[0], item.message.id)
            for item, rows in prepared
            for part, row in zip(item.parts, rows, strict=True)
            if isinstance(part, ToolPart) and part.status.state == "running"
        ]
    batch.rows = preparer.prepare(prepared, now_ms())
    batch.messages = []
    return batch


def run(job: ParseJob, out: BinaryIO) -> None:
    """Parse ``job`` and write its frames to ``out``."""
    try:
        parser = FORMATS[job.format]()
        if job.parser_state:
            parser.restore(job.parser_state)
        builder = BatchBuilder(
            label=parser.label,
            sessions=job.sessions,
            tails=job.tails,
            light=job.starts is not None,
            parent_session=job.parent_session,
        )
        lines = read_jsonl(job.path, offset=job.offset, line=job.line, skip=skip_lines(parser))
        preparer = None if job.starts is None else RowPreparer(job.starts)
        for batch in cut_batches(lines, parser, builder, job.limits, (job.offset, job.line)):
            ready = _encoded(batch) if preparer is None else prepared_batch(batch, preparer)
            _frame(out, BATCH, dump_batch(ready))
    except Exception as exc:  # handed to the writer, raised there
        try:
            payload = pickle.dumps(exc)
        except Exception:
            payload = pickle.dumps(RuntimeError(f"the import's parser failed: {exc!r}"))
        _frame(out, ERROR, payload)
        return
    _frame(out, END, b"")


def main() -> None:
    """The child process's entry point."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the writer decides when to stop
    gc.disable()  # as in the writer (see import_file): batches are young objects only
    job = pickle.load(sys.stdin.buffer)
    with contextlib.suppress(BrokenPipeError):  # the writer stopped reading
        run(job, sys.stdout.buffer)


if __name__ == "__main__":
    main()
