"""A small transcript file costs one write transaction on SQLite: its sessions, its
rows and its import progress are committed together (issue 30: the fixed cost per
file of importing a folder of sub-agent transcripts). Counted at the database's own
entry points (each write is one ``BEGIN IMMEDIATE`` ... ``COMMIT`` on its thread; each
call is one hand-off to that thread), on the real store."""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from mnesis.importers import import_file
from mnesis.store import ImmutableStore
from mnesis.store.sqlite.database import SQLiteDatabase

SHOP = Path(__file__).parent / "samples" / "corpus" / "claude-code" / "-home-ada-shop"
SESSION = "5b1e6c2a-7d4f-4e8a-9c31-0a2b3c4d5e6f"


class _Counts:
    def __init__(self) -> None:
        self.writes = 0
        self.reads = 0


def _count(db: SQLiteDatabase, patch: pytest.MonkeyPatch) -> _Counts:
    counts = _Counts()
    write, read = db.write, db.read

    def counted(
        method: Callable[[Any], Awaitable[Any]], name: str
    ) -> Callable[[Any], Awaitable[Any]]:
        async def call(fn: Any) -> Any:
            setattr(counts, name, getattr(counts, name) + 1)
            return await method(fn)

        return call

    patch.setattr(db, "write", counted(write, "writes"))
    patch.setattr(db, "read", counted(read, "reads"))
    return counts


async def test_a_small_file_is_imported_in_one_write_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "-home-ada-shop"
    shutil.copytree(SHOP, folder)
    (agent,) = (folder / SESSION / "subagents").glob("agent-*.jsonl")
    store = await ImmutableStore.open(str(tmp_path / "small.db"))
    try:
        db = store.backend.db
        assert isinstance(db, SQLiteDatabase)
        with monkeypatch.context() as patch:
            counts = _count(db, patch)
            main = await import_file(store, str(folder / f"{SESSION}.jsonl"))
        assert main.messages_added > 0
        assert (counts.writes, counts.reads) == (1, 1)  # the progress row read, then all

        with monkeypatch.context() as patch:
            counts = _count(db, patch)
            sub = await import_file(store, str(agent))
        assert sub.messages_added > 0 and sub.parent_id == main.session_ids[0]
        # The parent's progress read (it is imported first, and is unchanged), the
        # file's own, and one write: the session, its messages and the progress.
        assert (counts.writes, counts.reads) == (1, 2)
        source = await store.get_import_source(f"claude-code:{agent.resolve()}")
        assert source is not None and source.messages == sub.messages_added
        assert "pending" not in source.state

        with monkeypatch.context() as patch:
            counts = _count(db, patch)
            again = await import_file(store, str(agent))
        assert again.status == "unchanged" and counts.writes == 0
    finally:
        await store.close()


async def test_a_batch_that_fails_in_its_transaction_leaves_no_session_and_no_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one transaction is all or nothing: a failure while writing the rows leaves
    neither the new session nor the progress row, and the next import stores the file
    whole, once."""
    path = tmp_path / f"{SESSION}.jsonl"
    shutil.copy(SHOP / f"{SESSION}.jsonl", path)
    store = await ImmutableStore.open(str(tmp_path / "fails.db"))
    try:
        from mnesis.store.sqlite import batch as sqlite_batch

        def broken(conn: Any, links: Any) -> None:
            raise RuntimeError("killed inside the transaction")

        with monkeypatch.context() as patch:
            patch.setattr(sqlite_batch, "extend_chain", broken)
            patch.setattr(store.backend.db, "chained", True)
            with pytest.raises(RuntimeError, match="killed"):
                await import_file(store, str(path))
        assert await store.list_sessions() == []
        assert await store.get_import_source(f"claude-code:{path.resolve()}") is None
        again = await import_file(store, str(path))
        assert again.status == "new" and again.messages_added > 0
        assert await store.count_messages(again.session_ids[0]) == again.messages_added
    finally:
        await store.close()
