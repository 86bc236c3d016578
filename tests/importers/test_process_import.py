"""A file parsed in the import's parser process (``mnesis.importers.process``) stores
exactly what the same file parsed on a thread stores: messages, parts, token estimates,
search results and the deep integrity report; the report (lines, malformed lines with
their numbers, tool results) is the same; growth, idempotence and a stopped import
behave as on the thread path. ``PROCESS_BYTES`` is lowered so the small samples take
the process path."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from mnesis.importers import api, import_file
from mnesis.importers.api import ImportReport
from mnesis.store import ImmutableStore
from tests.importers.shapes import lines, shape

SAMPLES = Path(__file__).parent / "samples"


def _report(report: ImportReport) -> dict[str, Any]:
    """The report, its (random) session IDs counted."""
    data = dataclasses.asdict(report)
    data["session_ids"] = len(report.session_ids)
    return data


async def _import(tmp_path: Path, name: str, path: Path, **kwargs: Any) -> list[Any]:
    """Import ``path`` twice (the second adds nothing) into a fresh store; the reports
    and what the store holds."""
    store = await ImmutableStore.open(str(tmp_path / f"{name}.db"))
    try:
        first = await import_file(store, str(path), **kwargs)
        second = await import_file(store, str(path), **kwargs)
        return [_report(first), _report(second), await shape(store, first.session_ids)]
    finally:
        await store.close()


@pytest.mark.parametrize(
    "name", ["claude_code.jsonl", "codex_rollout.jsonl", "openai_chat.jsonl", "generic.jsonl"]
)
async def test_a_process_parsed_import_stores_what_the_thread_path_stores(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_thread = await _import(tmp_path, "thread", SAMPLES / name)
    monkeypatch.setattr(api, "PROCESS_BYTES", 0)
    in_process = await _import(tmp_path, "process", SAMPLES / name)
    assert in_process == on_thread
    assert on_thread[0]["errors"], "each sample has a malformed line, reported with its number"
    assert on_thread[1]["status"] == "unchanged" and on_thread[1]["messages_added"] == 0


async def test_small_batches_and_a_growing_file_match_the_thread_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches of two messages, so split messages straddle batches, and the file grows
    between two imports (the second continues the first's stored messages)."""
    text = lines()
    path = tmp_path / "grow.jsonl"

    async def grown(name: str) -> list[Any]:
        store = await ImmutableStore.open(str(tmp_path / f"{name}.db"))
        try:
            path.write_text("".join(text[:5]))
            first = await import_file(store, str(path), batch_size=2)
            path.write_text("".join(text))
            second = await import_file(store, str(path), batch_size=2)
            return [_report(first), _report(second), await shape(store, second.session_ids)]
        finally:
            await store.close()

    on_thread = await grown("thread")
    monkeypatch.setattr(api, "PROCESS_BYTES", 0)
    assert await grown("process") == on_thread
    assert on_thread[1]["status"] == "grown"


async def _writer_fails(store: ImmutableStore, path: str, patch: pytest.MonkeyPatch) -> None:
    """The writer fails on the second batch (the parser process is stopped with it); the
    next import continues from the last written batch. (The parser process builds the
    rows, written by the backend's ``batch.append_rows``.)"""
    append = store.backend.batch.append_rows
    calls = 0

    async def fails_second(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("killed")
        return await append(*args, **kwargs)

    patch.setattr(store.backend.batch, "append_rows", fails_second)
    with pytest.raises(RuntimeError, match="killed"):
        await import_file(store, path, batch_size=2)


async def _cancelled(store: ImmutableStore, path: str, patch: pytest.MonkeyPatch) -> None:
    """Ctrl-C cancels the import's task while a batch is being written: the parser
    process is stopped with it."""
    append = store.backend.batch.append_rows
    writing = asyncio.Event()

    async def hangs_second(*args: Any, **kwargs: Any) -> Any:
        if writing.is_set():
            await asyncio.Event().wait()  # never set: cancelled here
        writing.set()
        return await append(*args, **kwargs)

    patch.setattr(store.backend.batch, "append_rows", hangs_second)
    task = asyncio.create_task(import_file(store, path, batch_size=2))
    await writing.wait()
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("stop", [_writer_fails, _cancelled], ids=["writer-fails", "cancelled"])
async def test_an_interrupted_import_stops_its_parser_and_resumes_to_the_same_store(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    stop: Callable[[ImmutableStore, str, pytest.MonkeyPatch], Awaitable[None]],
) -> None:
    """``stop`` interrupts an import on the process path (patching through the given
    ``MonkeyPatch``, undone after it); the next import ends where one import ends."""
    path = tmp_path / "interrupted.jsonl"
    path.write_text("".join(lines()))
    whole = await _import(tmp_path, "whole", path, batch_size=2)
    monkeypatch.setattr(api, "PROCESS_BYTES", 0)
    store = await ImmutableStore.open(str(tmp_path / "interrupted.db"))
    try:
        with monkeypatch.context() as patch:
            await stop(store, str(path), patch)
        again = await import_file(store, str(path), batch_size=2)
        assert again.status == "grown"
        assert await shape(store, again.session_ids) == whole[2]
    finally:
        await store.close()


@pytest.mark.postgres
async def test_a_process_parsed_import_into_postgresql_stores_what_the_thread_path_stores(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two copies of a sample in one PostgreSQL database, one through each path."""
    text = (SAMPLES / "claude_code.jsonl").read_text()
    store = await ImmutableStore.open(pg_url)
    try:
        shapes = []
        for name, threshold in (("thread", api.PROCESS_BYTES), ("process", 0)):
            path = tmp_path / name / "claude_code.jsonl"
            path.parent.mkdir()
            path.write_text(text)
            monkeypatch.setattr(api, "PROCESS_BYTES", threshold)
            report = await import_file(store, str(path))
            shapes.append(
                [_report(report) | {"path": None}, await shape(store, report.session_ids)]
            )
        assert shapes[1] == shapes[0]
        assert shapes[0][1][-1] == []
    finally:
        await store.close()
