"""``StorePool``: one database handle per path (or URL) per pool, closed by its last user
or by ``close_all()``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mnesis.config import StoreConfig
from mnesis.errors import MnesisStoreError
from mnesis.store import ImmutableStore, SessionRecord, StorePool


class TestSharing:
    async def test_stores_of_one_file_share_one_database(
        self, tmp_path: Path, pool: StorePool
    ) -> None:
        path = str(tmp_path / "shared.db")
        a = await pool.acquire(db_path=path)
        b = await pool.acquire(StoreConfig(db_path=os.path.join(tmp_path, ".", "shared.db")))
        c = await ImmutableStore.open(f"sqlite:///{path}", pool=pool)
        assert isinstance(a, ImmutableStore)
        assert pool.open_count() == 1
        assert a.backend.db is b.backend.db is c.backend.db  # type: ignore[attr-defined]
        await a.create_session(SessionRecord("sess_1", "m"))
        assert (await b.get_session("sess_1")).id == "sess_1"
        await a.close()
        await b.close()
        assert pool.open_count() == 1
        assert (await c.get_session("sess_1")).id == "sess_1"
        await c.close()
        assert pool.open_count() == 0

    async def test_closing_a_store_twice_releases_it_once(
        self, tmp_path: Path, pool: StorePool
    ) -> None:
        path = str(tmp_path / "twice.db")
        a = await pool.acquire(db_path=path)
        b = await pool.acquire(db_path=path)
        await a.close()
        await a.close()
        assert pool.open_count() == 1
        assert await b.list_sessions() == []
        await b.close()

    async def test_different_files_get_different_databases(
        self, tmp_path: Path, pool: StorePool
    ) -> None:
        a = await pool.acquire(db_path=str(tmp_path / "a.db"))
        b = await pool.acquire(db_path=str(tmp_path / "b.db"))
        assert pool.open_count() == 2
        await a.create_session(SessionRecord("sess_a", "m"))
        assert await b.list_sessions() == []
        await a.close()
        await b.close()

    async def test_separate_pools_open_separate_handles(self, tmp_path: Path) -> None:
        path = str(tmp_path / "two.db")
        first, second = StorePool(), StorePool()
        try:
            a = await first.acquire(db_path=path)
            b = await second.acquire(db_path=path)
            assert a.backend.db is not b.backend.db  # type: ignore[attr-defined]
        finally:
            await first.close_all()
            await second.close_all()


class TestCloseAll:
    async def test_close_all_closes_every_database_and_stores_fail_cleanly(
        self, tmp_path: Path
    ) -> None:
        pool = StorePool()
        stores = [await pool.acquire(db_path=str(tmp_path / f"{n}.db")) for n in "abc"]
        assert pool.open_count() == 3
        await pool.close_all()
        assert pool.open_count() == 0
        for store in stores:
            with pytest.raises(MnesisStoreError, match="closed"):
                await store.list_sessions()

    async def test_a_failed_open_leaves_nothing_in_the_pool(self, tmp_path: Path) -> None:
        pool = StorePool()
        (tmp_path / "dir.db").mkdir()
        with pytest.raises(MnesisStoreError):
            await pool.acquire(db_path=str(tmp_path / "dir.db"))
        notes = tmp_path / "notes.db"
        notes.write_bytes(b"not a database\n" * 100)
        with pytest.raises(MnesisStoreError):
            await pool.acquire(db_path=str(notes))
        assert pool.open_count() == 0

    def test_the_default_pool_is_one_per_process(self) -> None:
        assert StorePool.default() is StorePool.default()
