"""``import_file``: bring one transcript file into a store, idempotently and streaming.

Progress is kept per file in the store (``import_sources``): the byte offset of the
last imported line and a fingerprint of the file's beginning. Importing the same file
again adds nothing; a file that grew adds only its new lines; a file rewritten from
the start is imported again as a new session. Each batch is written in one
transaction, and announced before it is written (``state["pending"]``), so an import
killed at any point resumes without losing or repeating a line. On SQLite a batch that
neither continues stored messages nor completes earlier tool calls (a small file's only
batch, say) is written with its new sessions and the progress after it in one
transaction instead: nothing to announce, one commit per file.
"""

from __future__ import annotations

import functools
import gc
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mnesis.errors import InvalidArgumentError
from mnesis.importers import claude_code, codex
from mnesis.importers.batches import BatchBuilder
from mnesis.importers.formats import FORMATS, Parser, skip_lines
from mnesis.importers.parse_child import ParseJob, prepared_batch
from mnesis.importers.pipeline import Limits, ParseAtOnce, ParseThread, Parsing, SourceLine
from mnesis.importers.process import ParseProcess
from mnesis.importers.progress import commit, settle_pending
from mnesis.importers.reader import FINGERPRINT_BYTES, LineError, fingerprint, read_jsonl
from mnesis.importers.records import head_records
from mnesis.importers.writer import BatchWriter
from mnesis.store.base import ImportSource
from mnesis.store.immutable import ImmutableStore
from mnesis.store.shared.batch import RowPreparer
from mnesis.store.sqlite.store import SQLiteStore

__all__ = ["FORMATS", "ImportReport", "Parser", "default_paths", "detect_format", "import_file"]

DEFAULT_BATCH = 5000
PROCESS_BYTES = 8_000_000
"""A file with this many bytes left to import is parsed in a process of its own
(:mod:`mnesis.importers.process`); a smaller one on a thread (starting the process costs
~0.7 s of CPU: a fresh interpreter importing ``mnesis``)."""
SMALL_BYTES = 1_000_000
"""A file with at most this many bytes left to import is parsed in one call on the
event loop's executor (:class:`~mnesis.importers.pipeline.ParseAtOnce`: all its batches
held at once, a few MB at most), not on a thread of its own."""
MAX_BATCH_CHARS = 8_000_000
"""A batch is written once it holds this much text, whatever its message count (bounded
memory for transcripts with large tool outputs)."""


def default_paths(format: str) -> list[str]:
    """Where a tool keeps its transcripts: ``claude-code`` and ``codex`` only."""
    if format == "claude-code":
        return claude_code.default_paths()
    if format == "codex":
        return codex.default_paths()
    raise InvalidArgumentError(f"format {format!r} has no default location")


@dataclass(slots=True)
class ImportReport:
    """What importing one file did."""

    path: str
    format: str
    status: str = "new"
    """``new``, ``grown``, ``unchanged``, ``restarted`` (rewritten from the start) or
    ``empty`` (no message in the file: nothing stored, see :attr:`notes`)."""
    session_ids: list[str] = field(default_factory=list)
    messages_added: int = 0
    lines_read: int = 0
    tool_results: int = 0
    orphan_results: int = 0
    """Tool results whose call was never seen."""
    errors: list[tuple[int, str]] = field(default_factory=list)
    """``(line number, problem)`` of each skipped line."""
    notes: list[str] = field(default_factory=list)
    """What the import chose to do that the user may want to know (an empty file
    skipped, a sub-agent transcript whose parent session could not be found)."""
    parent_id: str | None = None
    """For a sub-agent's own transcript: the session it was linked under."""


_CLAUDE_CODE_ONLY = frozenset(
    ("file-history-snapshot", "queue-operation", "progress", "custom-title", "system")
)
"""Record types only Claude Code writes (a file may begin with a run of them)."""


def _sniff(path: str) -> str:
    for value in head_records(path):
        kind = value.get("type")
        if kind in ("user", "assistant", "summary") and ("message" in value or kind == "summary"):
            return "claude-code"
        if kind in _CLAUDE_CODE_ONLY:
            return "claude-code"
        if kind in ("session_meta", "response_item", "turn_context") or "payload" in value:
            return "codex"
        if isinstance(value.get("messages"), list):
            return "openai"
        for call in value.get("tool_calls") or []:
            if isinstance(call, dict):
                return "openai" if "function" in call else "jsonl"
    return "jsonl"


def detect_format(path: str) -> str:
    """The format of a transcript file, from its name and first lines."""
    if path.endswith(".json"):
        return "openai"
    if os.path.basename(path).startswith("rollout-"):
        return "codex"
    return _sniff(path)


async def import_file(
    store: ImmutableStore,
    path: str,
    format: str | None = None,
    *,
    batch_size: int = DEFAULT_BATCH,
    on_progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Import (or continue importing) the transcript at ``path`` into ``store``.

    ``format`` is a key of :data:`FORMATS` (default: detected). ``on_progress`` is
    called with ``(bytes done, file size)``. Malformed lines are reported in the
    result and skipped. Raises :class:`~mnesis.errors.InvalidArgumentError` for an
    unknown format or a file that cannot be read.
    """
    return (await _import_file(store, path, format, batch_size, on_progress))[0]


async def _import_file(
    store: ImmutableStore,
    path: str,
    format: str | None,
    batch_size: int = DEFAULT_BATCH,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[ImportReport, ImportSource | None]:
    """:func:`import_file`, and the file's progress record afterwards (None: nothing
    imported)."""
    full, size = _locate(path)
    try:
        fmt = format or detect_format(full)
    except OSError as exc:
        raise InvalidArgumentError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if fmt not in FORMATS:
        raise InvalidArgumentError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    gc_was_enabled = gc.isenabled()
    # Batches hold tens of thousands of young objects: the cyclic collector would scan
    # them again and again (3x the parse time) while reference counting frees them anyway.
    gc.disable()
    try:
        return await _import(store, full, size, fmt, batch_size, on_progress)
    except OSError as exc:
        raise InvalidArgumentError(f"cannot read {path}: {exc.strerror or exc}") from exc
    finally:
        if gc_was_enabled:
            gc.enable()


async def _import(
    store: ImmutableStore,
    full: str,
    size: int,
    fmt: str,
    batch_size: int,
    on_progress: Callable[[int, int], None] | None,
) -> tuple[ImportReport, ImportSource | None]:
    parser = FORMATS[fmt]()
    report = ImportReport(path=full, format=fmt)
    if size == 0:
        report.status = "empty"
        report.notes.append("empty file: skipped")
        return report, None
    parent_session = await _parent_session(store, full, fmt, report)
    key = f"{fmt}:{full}"
    source = await store.get_import_source(key)
    if source is not None:
        source = await settle_pending(store, source)
        span = min(int(source.state.get("fingerprint_bytes", 0)), FINGERPRINT_BYTES)
        if size < source.byte_offset or fingerprint(full, span) != source.fingerprint:
            report.status, source = "restarted", None
        elif size == source.byte_offset:
            report.status = "unchanged"
            report.session_ids = list(source.state.get("sessions", {}).values()) or [
                source.session_id
            ]
            return report, source
        else:
            report.status = "grown"
    sessions = source.state.get("sessions") if source else None
    tails = source.state.get("tails") if source else None
    parser_state = source.state.get("parser") if source else None
    if isinstance(parser_state, dict):
        parser.restore(parser_state)
    if source is None:
        source = ImportSource(source_key=key, format=fmt, path=full, session_id="")
    writer = BatchWriter(store)
    limits = Limits(messages=batch_size, chars=MAX_BATCH_CHARS)
    start = (source.byte_offset, source.lines)
    if size - source.byte_offset >= PROCESS_BYTES and not _whole_json(full, fmt):
        # A batch crosses the pipe with its text about twice (its parts and their
        # encoded columns) and is read whole: half the text per batch keeps the same bound.
        halved = Limits(messages=batch_size, chars=MAX_BATCH_CHARS // 2)
        starts = None
        if isinstance(store.backend, SQLiteStore):  # the child builds the rows too
            starts = await store.backend.batch.batch_starts(list((sessions or {}).values()))
        job = ParseJob(
            full,
            fmt,
            *start,
            halved,
            sessions=sessions,
            tails=tails,
            starts=starts,
            parent_session=parent_session,
            parser_state=parser.state(),
        )
        batches: ParseThread | ParseAtOnce | ParseProcess = ParseProcess(job)
    else:
        # On SQLite the thread builds the rows too, from plain data (as the parser
        # process does): no pydantic model per message and part.
        finish = None
        if isinstance(store.backend, SQLiteStore):
            starts = await store.backend.batch.batch_starts(list((sessions or {}).values()))
            finish = functools.partial(prepared_batch, preparer=RowPreparer(starts))
        builder = BatchBuilder(
            label=parser.label, sessions=sessions, tails=tails, parent_session=parent_session,
            light=finish is not None,
        )  # fmt: skip
        lines = _lines(full, fmt, source, skip_lines(parser))
        small = size - source.byte_offset <= SMALL_BYTES
        parsing = Parsing(lines, parser, builder, limits, start, finish)
        batches = ParseAtOnce(parsing) if small else ParseThread(parsing)
    known: dict[str, str] = {}
    created: list[str] = []
    async with batches:
        while (batch := await batches.next()) is not None:
            report.lines_read += batch.lines_read
            report.errors += batch.errors
            if not batch.empty:
                await commit(store, writer, batch, source, full)
                known, created = batch.known_sessions, batch.created
            if on_progress is not None:
                on_progress(batch.offset, size)
    report.messages_added = writer.messages
    report.tool_results = writer.tool_results
    report.orphan_results = writer.orphan_results
    report.session_ids = list(known.values()) + [i for i in created if i not in known.values()]
    if not report.session_ids:
        report.status = "empty"
        report.notes.append("no message in the file: skipped (it is read again if it grows)")
    return report, (source if source.session_id else None)


async def _parent_session(
    store: ImmutableStore, path: str, fmt: str, report: ImportReport
) -> str | None:
    """For a Claude Code sub-agent transcript: the session of its parent's transcript,
    imported first (idempotent: only what it lacks); None for any other file."""
    parent = _parent_file(path) if fmt == "claude-code" else None
    if parent is None:
        return None
    if not parent[1]:
        report.notes.append(f"sub-agent transcript: no parent transcript at {parent[0]}")
        return None
    _, source = await _import_file(store, parent[0], "claude-code")
    sessions = source.state.get("sessions", {}) if source is not None else {}
    report.parent_id = sessions.get("") or (source.session_id if source else None) or None
    if report.parent_id is None:
        report.notes.append(f"sub-agent transcript: its parent {parent} holds no session")
    return report.parent_id


def _parent_file(path: str) -> tuple[str, bool] | None:
    """The real path of a sub-agent transcript's parent and whether it exists (None: no
    sub-agent's file)."""
    parent = claude_code.parent_transcript(path)
    if parent is None:
        return None
    return os.path.realpath(parent), os.path.isfile(parent)


def _lines(
    path: str, fmt: str, source: ImportSource, skip: Callable[[bytes], bool] | None = None
) -> Iterable[SourceLine | LineError]:
    """The lines (or JSON items) of ``path`` past what ``source`` imported."""
    if _whole_json(path, fmt):
        return _json_lines(path, int(source.state.get("json_items", 0)))
    return read_jsonl(path, offset=source.byte_offset, line=source.lines, skip=skip)


def _whole_json(path: str, fmt: str) -> bool:
    """Whether ``path`` is a chat file read whole (a ``.json`` document, not JSONL)."""
    return fmt == "openai" and path.endswith(".json")


def _locate(path: str) -> tuple[str, int]:
    """The real path and size of a transcript file."""
    full = os.path.realpath(os.path.expanduser(path))
    if not os.path.isfile(full):
        raise InvalidArgumentError(f"no transcript file at {path}")
    return full, os.path.getsize(full)


@dataclass(slots=True, frozen=True)
class _JsonItem:
    number: int
    value: Any
    end_offset: int


def _json_lines(path: str, skip: int) -> list[_JsonItem]:
    """The top-level items of a ``.json`` chat file (read whole), past the first ``skip``."""
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError) as exc:
        raise InvalidArgumentError(f"{path} is not a JSON file: {exc}") from exc
    items = value if isinstance(value, list) else [value]
    size = os.path.getsize(path)
    return [_JsonItem(i + 1, item, size) for i, item in enumerate(items)][skip:]
