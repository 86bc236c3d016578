"""SQLite, migration m015: a file written before it gets ``session_usage`` on opening and
reads the same usage; a file opened read-only reads its usage without writing, whether
it predates m015 (a plain sum) or keeps sums older than its newest messages."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from mnesis.config import StoreConfig
from mnesis.models.parts import TextPart
from mnesis.models.tokens import TokenUsage
from mnesis.store import StorePool
from mnesis.store.readonly import open_read_only
from mnesis.store.sqlite import database as sqlite_database
from mnesis.store.sqlite.migrations import MIGRATIONS
from tests.backends import fetch
from tests.store.contract.helpers import make_message, new_session

_BEFORE = MIGRATIONS[: [name for name, _ in MIGRATIONS].index("m015_session_usage")]


def _fresh(path: str, sid: str) -> tuple[int, ...]:
    sums = "tokens_input, tokens_output, tokens_cache_read, tokens_cache_write, tokens_total"
    total = ", ".join(f"SUM({c})" for c in sums.split(", "))
    row = fetch(path, f"SELECT {total} FROM messages WHERE session_id = ?", sid)[0]
    return tuple(int(v) for v in row)


async def _write(path: str, sid: str | None, messages: int) -> str:
    pool = StorePool()
    try:
        store = await pool.acquire(db_path=path)
        sid = sid or await new_session(store)
        for n in range(messages):
            usage = TokenUsage(input=n + 1, output=2 * n, cache_read=3)
            await store.append_message(
                make_message(sid, "assistant", tokens=usage), [TextPart(text=f"turn {n}")]
            )
        return sid
    finally:
        await pool.close_all()


async def _usage(path: str, sid: str, *, read_only: bool = False) -> tuple[int, ...]:
    pool = StorePool()
    try:
        if read_only:
            store = await open_read_only(StoreConfig(db_path=path))
        else:
            store = await pool.acquire(db_path=path)
        u = await store.session_token_usage(sid)
        if read_only:
            await store.close()
        return (u.input, u.output, u.cache_read, u.cache_write, u.total)
    finally:
        await pool.close_all()


async def test_an_older_file_migrates_and_keeps_its_sums_from_then_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "old.db")
    with monkeypatch.context() as patch:
        patch.setattr(sqlite_database, "MIGRATIONS", _BEFORE)
        sid = await _write(path, None, 6)
        assert await _usage(path, sid) == _fresh(path, sid)
    # Read-only, the unmigrated file sums its messages and stays as it was.
    assert await _usage(path, sid, read_only=True) == _fresh(path, sid)
    tables = {r[0] for r in fetch(path, "SELECT name FROM sqlite_master WHERE type='table'")}
    assert "session_usage" not in tables

    assert await _usage(path, sid) == _fresh(path, sid)
    assert fetch(path, "SELECT session_id, upto_seq FROM session_usage") == [(sid, 6)]
    await _write(path, sid, 3)
    # Read-only with newer messages than the kept row: the right sums, nothing written.
    assert await _usage(path, sid, read_only=True) == _fresh(path, sid)
    assert fetch(path, "SELECT upto_seq FROM session_usage") == [(6,)]
    assert await _usage(path, sid) == _fresh(path, sid)
    assert fetch(path, "SELECT upto_seq FROM session_usage") == [(9,)]


async def test_a_load_while_another_process_writes_reads_its_sums_without_keeping_them(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "busy.db")
    sid = await _write(path, None, 4)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    pool = StorePool()
    try:
        # A load does not wait for the lock to keep the sums: it answers while the
        # other connection still holds it (waiting would take the 20 s busy timeout,
        # which the guard turns into a failure).
        store = await pool.acquire(StoreConfig(db_path=path, connection_timeout=20))
        u = await asyncio.wait_for(store.session_token_usage(sid), timeout=10)
        assert (u.input, u.output, u.cache_read, u.cache_write, u.total) == _fresh(path, sid)
        # The connection's busy timeout is back for the writes that follow.
        assert await store.backend.db.rows("PRAGMA busy_timeout") == [(20_000,)]
    finally:
        await pool.close_all()
        other.execute("ROLLBACK")
        other.close()
    assert fetch(path, "SELECT upto_seq FROM session_usage") == []
