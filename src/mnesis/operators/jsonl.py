"""JSONL file I/O of :meth:`~mnesis.operators.LLMMap.run_jsonl`, in bounded batches.

Input: each non-blank line is one JSON input, indexed by its 0-based line number;
a line that is not JSON becomes an :class:`Unreadable` (reported as a failed
result, never sent to the model). Output: one JSON object per result,
``{"index", "input", "success", "output", "error", "attempts"}``, written as
results complete. Files are read and written ``BATCH_LINES`` lines at a time in a
worker thread, so neither the event loop blocks nor the whole file sits in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import IO, Any

from pydantic import BaseModel

from mnesis.operators.results import MapResult

__all__ = ["BATCH_LINES", "Unreadable", "map_file", "read_jsonl", "result_line", "write_results"]

BATCH_LINES = 256


@dataclass(frozen=True, slots=True)
class Unreadable:
    """An input line that is not JSON: reported as a failed result, never sent."""

    raw: str
    error: str


def _read_batch(source: IO[str]) -> list[str]:
    return list(itertools.islice(source, BATCH_LINES))


async def read_jsonl(source: IO[str]) -> AsyncIterator[tuple[int, Any]]:
    """``(line index, parsed JSON or Unreadable)`` for every non-blank line of ``source``."""
    line_number = 0
    while True:
        batch = await asyncio.to_thread(_read_batch, source)
        if not batch:
            return
        for raw in batch:
            index = line_number
            line_number += 1
            if not raw.strip():
                continue
            try:
                yield index, json.loads(raw)
            except json.JSONDecodeError as exc:
                yield index, Unreadable(raw.rstrip("\r\n"), f"line {index + 1} is not JSON: {exc}")


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def result_line(result: MapResult) -> str:
    """One output line (with its newline) for ``result``."""
    record = {
        "index": result.index,
        "input": result.input,
        "success": result.success,
        "output": _jsonable(result.output),
        "error": result.error,
        "attempts": result.attempts,
    }
    return json.dumps(record, ensure_ascii=False, default=str) + "\n"


def _write_lines(sink: IO[str], lines: list[str]) -> None:
    sink.writelines(lines)
    sink.flush()


async def write_results(results: AsyncGenerator[MapResult, None], sink: IO[str]) -> tuple[int, int]:
    """Write one line per result of ``results`` to ``sink`` (closing ``results`` at the
    end); return the numbers of successful and failed results."""
    completed = failed = 0
    pending: list[str] = []
    async with contextlib.aclosing(results) as stream:
        async for result in stream:
            if result.success:
                completed += 1
            else:
                failed += 1
            pending.append(result_line(result))
            if len(pending) >= BATCH_LINES:
                await asyncio.to_thread(_write_lines, sink, pending)
                pending = []
    if pending:
        await asyncio.to_thread(_write_lines, sink, pending)
    return completed, failed


async def map_file(
    input_path: str,
    output_path: str,
    mapper: Callable[[AsyncIterator[tuple[int, Any]]], AsyncGenerator[MapResult, None]],
) -> tuple[int, int]:
    """Feed the lines of ``input_path`` to ``mapper`` and write its results to
    ``output_path`` (overwritten); return the numbers of successful and failed
    results. Raises ``OSError`` if a file cannot be opened."""
    source = await asyncio.to_thread(open, input_path, encoding="utf-8")
    try:
        sink = await asyncio.to_thread(open, output_path, "w", encoding="utf-8")
        try:
            return await write_results(mapper(read_jsonl(source)), sink)
        finally:
            await asyncio.to_thread(sink.close)
    finally:
        await asyncio.to_thread(source.close)
