"""The parsing half of an import, on a thread of its own: it reads and parses lines and
cuts :class:`~mnesis.importers.batches.Batch` es into a bounded queue while the event
loop writes the previous batch (the database works outside the GIL, so the two overlap).

At most ``DEPTH`` cut batches wait in the queue, one is being built and one written:
memory stays bounded whatever the file's size. :func:`cut_batches` is the parsing
itself, which :mod:`mnesis.importers.process` runs in a process of its own for a large
file.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from mnesis.importers.batches import Batch, BatchBuilder
from mnesis.importers.reader import SKIPPED, LineError
from mnesis.importers.records import ParsedItem

__all__ = [
    "DEPTH",
    "Limits",
    "LineParser",
    "ParseAtOnce",
    "ParseThread",
    "Parsing",
    "SourceLine",
    "cut_batches",
]

DEPTH = 1
"""Cut batches that may wait for the writer."""
_POLL_SECONDS = 0.05
_HARD_CHARS = 4
"""A batch is cut even inside a split message once it holds this many times its
character limit (a file that never ends its message cannot hold memory forever)."""


class LineParser(Protocol):
    """What the thread needs of a format's parser."""

    def parse(self, record: Any) -> list[ParsedItem]:
        """The records of one decoded line; ``ValueError`` for a line of the wrong shape."""

    def state(self) -> dict[str, Any]:
        """What the parser carries from line to line (see ``Parser.state``)."""


class SourceLine(Protocol):
    """A decoded line (or JSON item): its number, value and the offset just past it."""

    @property
    def number(self) -> int:
        """1-based line (or item) number."""

    @property
    def value(self) -> Any:
        """The decoded JSON value."""

    @property
    def end_offset(self) -> int:
        """Where the next import resumes."""


@dataclass(slots=True, frozen=True)
class Limits:
    """When a batch is cut: this many messages or this many characters of text."""

    messages: int
    chars: int


class _End:
    """The thread is done (``error`` set if it failed)."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


@dataclass(slots=True, frozen=True)
class Parsing:
    """What a parse works through: ``lines`` parsed with ``parser`` into ``builder``,
    cut at ``limits``; ``start`` is the ``(offset, line number)`` the lines continue from.
    ``finish``, when given, is applied to each batch where it is cut (building its rows)."""

    lines: Iterable[SourceLine | LineError]
    parser: LineParser
    builder: BatchBuilder
    limits: Limits
    start: tuple[int, int]
    finish: Callable[[Batch], Batch] | None = None

    def batches(self) -> Iterator[Batch]:
        """Each batch as it is cut (see :func:`cut_batches`), finished."""
        for batch in cut_batches(self.lines, self.parser, self.builder, self.limits, self.start):
            yield batch if self.finish is None else self.finish(batch)


class ParseThread:
    """Works through a :class:`Parsing` on a thread of its own; :meth:`next` gives each
    batch. The last batch (cut when the lines end) covers the rest of the file, even if
    it holds no message. Use as ``async with``: leaving stops and joins the thread.
    """

    def __init__(self, parsing: Parsing) -> None:
        self._parsing = parsing
        self._queue: queue.Queue[Batch | _End] = queue.Queue(maxsize=DEPTH)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mnesis-import-parse", daemon=True)
        self._finished = False

    async def __aenter__(self) -> ParseThread:
        self._thread.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        while True:  # unblock a thread waiting to put
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        await asyncio.get_running_loop().run_in_executor(None, self._thread.join)

    async def next(self) -> Batch | None:
        """The next batch, or None once the last one was given; re-raises the thread's
        error (an ``OSError`` reading the file, say)."""
        if self._finished:
            return None
        item = await asyncio.get_running_loop().run_in_executor(None, self._queue.get)
        if isinstance(item, _End):
            self._finished = True
            if item.error is not None:
                raise item.error
            return None
        return item

    def _put(self, item: Batch | _End) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            for batch in self._parsing.batches():
                if not self._put(batch):
                    return
        except BaseException as exc:  # handed to the event loop, raised by next()
            self._put(_End(exc))
        else:
            self._put(_End())


class ParseAtOnce:
    """:class:`ParseThread`'s work for a small file (its batches are few and small): every
    batch is cut in one call on the event loop's executor, the first time :meth:`next`
    is called, and then given one by one. No thread of its own, one hand-off: starting a
    thread and passing each batch through a queue cost more than parsing a small file."""

    def __init__(self, parsing: Parsing) -> None:
        self._parsing = parsing
        self._batches: list[Batch] | None = None

    async def __aenter__(self) -> ParseAtOnce:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._batches = []

    def _cut_all(self) -> list[Batch]:
        batches = list(self._parsing.batches())
        batches.reverse()
        return batches

    async def next(self) -> Batch | None:
        """The next batch, or None once the last one was given; raises what parsing
        raised (an ``OSError`` reading the file, say)."""
        if self._batches is None:
            self._batches = await asyncio.get_running_loop().run_in_executor(None, self._cut_all)
        return self._batches.pop() if self._batches else None


def cut_batches(
    lines: Iterable[SourceLine | LineError],
    parser: LineParser,
    builder: BatchBuilder,
    limits: Limits,
    start: tuple[int, int],
) -> Iterator[Batch]:
    """Parse ``lines`` with ``parser`` into ``builder`` and yield each batch it cuts, the
    last one (covering the rest of the lines, even if it holds no message) included.
    ``start`` is the ``(offset, line number)`` the lines continue from."""
    offset, number = start
    read = 0
    errors: list[tuple[int, str]] = []
    for line in lines:
        full = builder.buffered >= limits.messages or builder.buffered_chars >= limits.chars
        # The state a cut before this line leaves (taken only where a cut may come).
        state = parser.state() if full else None
        if isinstance(line, LineError):
            items: list[ParsedItem] = []
            problem: str | None = line.message
        elif line.value is SKIPPED:
            items, problem = [], None
        else:
            try:
                items, problem = parser.parse(line.value), None
            except (ValueError, TypeError) as exc:
                items, problem = [], str(exc)
        if full and (
            builder.starts_message(items) or builder.buffered_chars >= _HARD_CHARS * limits.chars
        ):
            # Cut before this line: a message split over lines stays one message.
            yield _cut(builder, offset, number, read, errors, state)
            read, errors = 0, []
        read += 1
        offset, number = line.end_offset, line.number
        if problem is not None:
            errors.append((line.number, problem))
        for item in items:
            builder.add(item)
    yield _cut(builder, offset, number, read, errors, parser.state())


def _cut(
    builder: BatchBuilder,
    offset: int,
    number: int,
    read: int,
    errors: list[tuple[int, str]],
    state: dict[str, Any] | None,
) -> Batch:
    batch = builder.cut()
    batch.offset, batch.lines, batch.lines_read, batch.errors = offset, number, read, errors
    batch.parser_state = state or {}
    return batch
