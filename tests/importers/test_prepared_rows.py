"""``append_rows`` (SQLite), the write path of a large import whose parser process builds
the rows (:class:`~mnesis.store.shared.batch.RowPreparer`): the store checks that each
session stands where the rows assume before it writes anything. That the rows are the
rows the store itself builds is shown by ``test_process_import.py``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnesis.errors import MnesisStoreError, SessionNotFoundError
from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import TextPart
from mnesis.store import ImmutableStore
from mnesis.store.base import NewMessage, SessionRecord
from mnesis.store.shared.batch import RowPreparer, encode_batch
from mnesis.store.sqlite.batch import SQLiteBatch
from mnesis.store.sqlite.store import SQLiteStore


def _messages(session_id: str, texts: list[str]) -> list[NewMessage]:
    return [
        NewMessage(
            Message(id=new_id("msg"), session_id=session_id, role="user", created_at=1_000 + i),
            [TextPart(text=text)],
            [len(text) // 4],
        )
        for i, text in enumerate(texts)
    ]


async def _counts(store: ImmutableStore, session_id: str) -> int:
    return len(await store.get_messages(session_id))


@pytest.fixture
async def opened(tmp_path: Path) -> AsyncIterator[tuple[ImmutableStore, SQLiteBatch]]:
    """A fresh SQLite store and its backend's ``batch``."""
    store = await ImmutableStore.open(str(tmp_path / "rows.db"))
    try:
        assert isinstance(store.backend, SQLiteStore)
        yield store, store.backend.batch
    finally:
        await store.close()


async def test_rows_are_refused_when_their_session_moved(
    opened: tuple[ImmutableStore, SQLiteBatch],
) -> None:
    store, backend = opened
    sid = new_id("sess")
    await store.create_session(SessionRecord(id=sid, model="m"))
    await store.append_batch(_messages(sid, ["first words", "second words"]))
    preparer = RowPreparer(await backend.batch_starts([sid, new_id("sess")]))
    rows = preparer.prepare(encode_batch(_messages(sid, ["third words"])), 5)
    await store.append_batch(_messages(sid, ["written meanwhile"]))
    with pytest.raises(MnesisStoreError, match="changed while its rows were prepared"):
        await backend.append_rows(rows)
    assert await _counts(store, sid) == 3
    fresh = RowPreparer(await backend.batch_starts([sid]))
    await backend.append_rows(fresh.prepare(encode_batch(_messages(sid, ["third"])), 5))
    assert await _counts(store, sid) == 4


async def test_rows_of_a_session_that_does_not_exist_are_refused(
    opened: tuple[ImmutableStore, SQLiteBatch],
) -> None:
    _, backend = opened
    sid = new_id("sess")
    assert await backend.batch_starts([sid]) == {}
    rows = RowPreparer({}).prepare(encode_batch(_messages(sid, ["lost words"])), 5)
    with pytest.raises(SessionNotFoundError):
        await backend.append_rows(rows)
