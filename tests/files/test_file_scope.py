"""File IDs are scoped like message and summary IDs (issue 17, item 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnesis import FileConfig, MnesisConfig, MnesisSession, StorePool
from mnesis.errors import OutOfScopeError
from mnesis.retrieval import FileDescription, RetrievalEngine
from mnesis.testing import FakeLLM

SOURCE = "\n".join(f"def handler_{i}(event):\n    return event * {i}\n" for i in range(400))


async def open_session(db_path: str, pool: StorePool) -> MnesisSession:
    config = MnesisConfig(file=FileConfig(inline_threshold=200))
    return await MnesisSession.create(
        model="fake/m", db_path=db_path, pool=pool, llm=FakeLLM(), config=config
    )


class TestDescribeFileScope:
    async def test_another_sessions_file_is_out_of_scope(
        self, tmp_path: Path, db_path: str, pool: StorePool
    ) -> None:
        (tmp_path / "private.py").write_text(SOURCE)
        owner = await open_session(db_path, pool)
        other = await open_session(db_path, pool)
        ref = (await owner.handle_file(str(tmp_path / "private.py"))).file_ref
        assert ref is not None and ref.file_id is not None
        described = await owner.describe(ref.file_id)
        assert isinstance(described, FileDescription) and "handler_1" in (
            described.exploration_summary
        )
        for key in (ref.file_id, ref.content_id):
            with pytest.raises(OutOfScopeError):
                await other.describe(key)
        await owner.close()
        await other.close()

    async def test_a_session_that_references_the_same_content_may_describe_it(
        self, tmp_path: Path, db_path: str, pool: StorePool
    ) -> None:
        (tmp_path / "a.py").write_text(SOURCE)
        (tmp_path / "copy.py").write_text(SOURCE)
        first = await open_session(db_path, pool)
        second = await open_session(db_path, pool)
        await first.handle_file(str(tmp_path / "a.py"))
        handled = await second.handle_file(str(tmp_path / "copy.py"))
        assert handled.cache_hit and handled.file_ref is not None
        assert handled.file_ref.file_id is not None
        await second.record("look at this", [handled.file_ref])
        described = await second.describe(handled.file_ref.file_id)
        assert isinstance(described, FileDescription)
        await first.close()
        await second.close()

    async def test_an_engine_granted_the_owner_session_may_describe_it(
        self, tmp_path: Path, db_path: str, pool: StorePool
    ) -> None:
        (tmp_path / "shared.py").write_text(SOURCE)
        owner = await open_session(db_path, pool)
        other = await open_session(db_path, pool)
        ref = (await owner.handle_file(str(tmp_path / "shared.py"))).file_ref
        assert ref is not None and ref.file_id is not None
        store = await pool.acquire(db_path=db_path)
        granted = RetrievalEngine(store, other.id, allowed_session_ids=[owner.id])
        assert isinstance(await granted.describe(ref.file_id), FileDescription)
        await store.close()
        await owner.close()
        await other.close()
