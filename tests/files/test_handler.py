"""LargeFileHandler on real files in a temp dir and a real SQLite store."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnesis import FileConfig, FileRefPart, TextPart, TokenEstimator
from mnesis.errors import (
    FileReferenceNotFoundError,
    InvalidArgumentError,
    MnesisError,
)
from mnesis.files import (
    FileChangedError,
    FileMissingError,
    LargeFileHandler,
    file_id_for,
)
from mnesis.files.handler import MAX_SUMMARY_TOKENS
from mnesis.models.ids import is_valid_id, new_id
from mnesis.models.render import render_part
from mnesis.retrieval import FileDescription, RetrievalEngine
from mnesis.store import ImmutableStore, SessionRecord, StorePool

ESTIMATOR = TokenEstimator(exact=False)
"""The heuristic: deterministic and fast everywhere."""


@pytest.fixture
async def store(tmp_path: Path, pool: StorePool) -> AsyncIterator[ImmutableStore]:
    s = await pool.acquire(db_path=str(tmp_path / "files.db"))
    yield s
    await s.close()


def make_handler(store: ImmutableStore, threshold: int = 200) -> LargeFileHandler:
    return LargeFileHandler(store, ESTIMATOR, FileConfig(inline_threshold=threshold))


@pytest.fixture
def handler(store: ImmutableStore) -> LargeFileHandler:
    return make_handler(store)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def database_bytes(db_path: str) -> bytes:
    """Everything SQLite wrote: the database file and its write-ahead log."""
    files = [Path(db_path + suffix) for suffix in ("", "-wal")]
    return b"".join(f.read_bytes() for f in files if f.exists())


def python_source(functions: int) -> str:
    return "\n".join(
        f"def function_{i}(a: int, b: str = 'x') -> int:\n    return a + {i}\n"
        for i in range(functions)
    )


NUMBERED = "".join(f"line {i:05d} {'x' * (i % 37)}\n" for i in range(1, 3001))
"""3,000 numbered lines of varying length (about 100 KB)."""


class TestInlineOrReference:
    async def test_a_file_under_the_threshold_comes_back_inline_and_stores_nothing(
        self, handler: LargeFileHandler, store: ImmutableStore, tmp_path: Path
    ) -> None:
        path = write(tmp_path / "small.py", "def f():\n    return 1\n")
        result = await handler.handle_file(path)
        assert result.inline_content == "def f():\n    return 1\n"
        assert result.file_ref is None and result.is_inline
        assert result.token_count == ESTIMATOR.estimate(result.inline_content)
        assert await store.get_file_reference(sha256(path)) is None
        assert result.to_part() == TextPart(text=result.inline_content)

    async def test_a_file_at_the_threshold_becomes_a_reference_and_one_below_stays_inline(
        self, store: ImmutableStore, tmp_path: Path
    ) -> None:
        path = write(tmp_path / "notes.txt", "some words here\n" * 40)
        tokens = ESTIMATOR.estimate(path.read_text())
        at = await make_handler(store, threshold=tokens).handle_file(path)
        assert at.file_ref is not None and at.inline_content is None
        above = await make_handler(store, threshold=tokens + 1).handle_file(path)
        assert above.inline_content is not None

    async def test_the_reference_is_content_addressed_with_a_stable_file_id(
        self, handler: LargeFileHandler, tmp_path: Path
    ) -> None:
        path = write(tmp_path / "big.py", python_source(40))
        ref = (await handler.handle_file(path)).file_ref
        assert ref is not None
        assert ref.content_id == sha256(path)
        assert ref.file_id == file_id_for(ref.content_id)
        assert is_valid_id(ref.file_id, "file")
        assert ref.path == str(path)
        assert ref.file_type == "python"
        assert ref.token_count == ESTIMATOR.estimate(path.read_text())
        assert "def function_39(a: int, b: str='x') -> int" in ref.exploration_summary

    async def test_the_file_id_is_the_same_in_another_database(
        self, tmp_path: Path, pool: StorePool
    ) -> None:
        path = write(tmp_path / "big.py", python_source(40))
        ids = []
        for name in ("one.db", "two.db"):
            other = await pool.acquire(db_path=str(tmp_path / name))
            ref = (await make_handler(other).handle_file(path)).file_ref
            assert ref is not None
            ids.append(ref.file_id)
            await other.close()
        assert ids[0] == ids[1]

    async def test_binary_files_are_referenced_however_small(
        self, handler: LargeFileHandler, tmp_path: Path
    ) -> None:
        path = tmp_path / "blob.bin"
        path.write_bytes(b"\x00\x01\x02 tiny")
        ref = (await handler.handle_file(path)).file_ref
        assert ref is not None and ref.file_type == "binary"
        assert "Binary data" in ref.exploration_summary

    async def test_the_raw_content_is_not_stored_in_the_database(
        self, handler: LargeFileHandler, store: ImmutableStore, tmp_path: Path
    ) -> None:
        marker = "UNIQUE-MARKER-7f3a9c"
        path = write(tmp_path / "app.log", "ordinary log line\n" * 200 + marker + "\n")
        result = await handler.handle_file(path, session_id=None)
        assert result.file_ref is not None and marker not in result.file_ref.exploration_summary
        stored = await store.get_file_reference(result.file_ref.file_id or "")
        assert (
            stored is not None
            and stored.path == str(path)
            and stored.byte_size == len(path.read_bytes())
        )
        db_bytes = database_bytes(store.location)
        assert marker.encode() not in db_bytes
        assert str(path).encode() in db_bytes

    async def test_the_session_id_is_recorded_with_the_reference(
        self, handler: LargeFileHandler, store: ImmutableStore, tmp_path: Path
    ) -> None:
        session_id = new_id("sess")
        path = write(tmp_path / "big.md", "# Title\n\n" + "text " * 500)
        result = await handler.handle_file(str(path), session_id=session_id)
        assert result.file_ref is not None
        stored = await store.get_file_reference(result.file_ref.content_id)
        assert stored is not None and stored.session_id == session_id

    async def test_the_part_renders_as_a_file_block(
        self, handler: LargeFileHandler, tmp_path: Path
    ) -> None:
        path = write(tmp_path / "doc.md", "# Title\n\n## Part one\n\n" + "words " * 400)
        part = (await handler.handle_file(path)).to_part()
        assert isinstance(part, FileRefPart)
        rendered = render_part(part) or ""
        assert rendered.startswith(f"[FILE: {path}]")
        assert f"File-ID: {part.file_id}" in rendered and "## Part one" in rendered

    async def test_a_large_file_is_estimated_from_samples_close_to_a_full_count(
        self, handler: LargeFileHandler, tmp_path: Path
    ) -> None:
        path = write(tmp_path / "big.txt", NUMBERED * 30)  # about 3 MB
        ref = (await handler.handle_file(path)).file_ref
        assert ref is not None
        full = ESTIMATOR.estimate(path.read_text())
        assert abs(ref.token_count - full) / full < 0.05

    async def test_the_summary_is_cut_to_the_token_bound(
        self, handler: LargeFileHandler, tmp_path: Path
    ) -> None:
        path = write(tmp_path / "huge_module.py", python_source(3_000))
        ref = (await handler.handle_file(path)).file_ref
        assert ref is not None
        assert ESTIMATOR.estimate(ref.exploration_summary) <= MAX_SUMMARY_TOKENS
        assert ref.exploration_summary.startswith("Python module: 8,999 lines")

    async def test_a_missing_path_raises_file_missing_error(
        self, handler: LargeFileHandler, tmp_path: Path
    ) -> None:
        with pytest.raises(FileMissingError) as caught:
            await handler.handle_file(tmp_path / "nope.txt")
        assert isinstance(caught.value, FileNotFoundError)
        assert isinstance(caught.value, MnesisError)
        assert "nope.txt" in str(caught.value)

    async def test_a_directory_is_refused(self, handler: LargeFileHandler, tmp_path: Path) -> None:
        with pytest.raises(InvalidArgumentError, match="directory"):
            await handler.handle_file(tmp_path)


class TestCache:
    async def test_the_same_content_is_explored_once(
        self, handler: LargeFileHandler, tmp_path: Path
    ) -> None:
        path = write(tmp_path / "data.json", json.dumps({"rows": list(range(2_000))}))
        first = await handler.handle_file(path)
        second = await handler.handle_file(path)
        assert handler.exploration_count == 1
        assert not first.cache_hit and second.cache_hit
        assert first.file_ref == second.file_ref

    async def test_a_copy_elsewhere_is_a_cache_hit_that_keeps_its_own_path(
        self, handler: LargeFileHandler, tmp_path: Path
    ) -> None:
        original = write(tmp_path / "a.csv", "id,name\n" + "1,x\n" * 500)
        copy = tmp_path / "copy" / "b.csv"
        copy.parent.mkdir()
        shutil.copy(original, copy)
        first = (await handler.handle_file(original)).file_ref
        second = (await handler.handle_file(copy)).file_ref
        assert first is not None and second is not None
        assert handler.exploration_count == 1
        assert second.file_id == first.file_id and second.path == str(copy)

    async def test_another_handler_on_the_same_store_reuses_the_exploration(
        self, store: ImmutableStore, tmp_path: Path
    ) -> None:
        path = write(tmp_path / "big.py", python_source(40))
        await make_handler(store).handle_file(path)
        fresh = make_handler(store)
        result = await fresh.handle_file(path)
        assert result.cache_hit and fresh.exploration_count == 0

    async def test_concurrent_calls_for_new_content_explore_it_once(
        self, handler: LargeFileHandler, tmp_path: Path
    ) -> None:
        path = write(tmp_path / "big.py", python_source(40))
        results = await asyncio.gather(*(handler.handle_file(path) for _ in range(5)))
        assert handler.exploration_count == 1
        assert sum(not r.cache_hit for r in results) == 1
        assert len({r.file_ref.file_id for r in results if r.file_ref}) == 1

    async def test_changed_content_at_the_same_path_is_a_new_reference(
        self, handler: LargeFileHandler, tmp_path: Path
    ) -> None:
        path = write(tmp_path / "big.py", python_source(40))
        before = (await handler.handle_file(path)).file_ref
        write(path, python_source(41))
        after = (await handler.handle_file(path)).file_ref
        assert before is not None and after is not None
        assert before.file_id != after.file_id and handler.exploration_count == 2


class TestRead:
    @pytest.fixture
    async def numbered(self, handler: LargeFileHandler, tmp_path: Path) -> tuple[Path, str]:
        path = write(tmp_path / "numbered.txt", NUMBERED)
        ref = (await handler.handle_file(path)).file_ref
        assert ref is not None and ref.file_id is not None
        return path, ref.file_id

    async def test_the_whole_file_is_read_by_file_id_or_content_id(
        self, handler: LargeFileHandler, numbered: tuple[Path, str]
    ) -> None:
        path, file_id = numbered
        assert await handler.read(file_id) == NUMBERED
        assert await handler.read(sha256(path)) == NUMBERED

    @pytest.mark.parametrize(
        ("start", "end"),
        [(1, 1), (2, 3), (None, 5), (2_998, None), (3_000, 3_000), (2_999, 5_000), (4_000, None)],
    )
    async def test_a_line_range_is_one_based_and_inclusive(
        self,
        handler: LargeFileHandler,
        numbered: tuple[Path, str],
        start: int | None,
        end: int | None,
    ) -> None:
        _, file_id = numbered
        lines = NUMBERED.splitlines(keepends=True)
        expected = "".join(lines[(start or 1) - 1 : end])
        assert await handler.read(file_id, start_line=start, end_line=end) == expected

    async def test_line_ranges_are_exact_across_chunk_boundaries(
        self, handler: LargeFileHandler, tmp_path: Path
    ) -> None:
        text = NUMBERED * 12  # about 1.2 MB: two read chunks, no trailing-newline surprises
        path = write(tmp_path / "long.txt", text + "last line without newline")
        ref = (await handler.handle_file(path)).file_ref
        assert ref is not None
        lines = path.read_text().splitlines(keepends=True)
        boundary = path.read_bytes()[: 1 << 20].count(b"\n") + 1  # the line cut by the chunk
        for start, end in [
            (boundary - 1, boundary + 1),
            (boundary, boundary),
            (boundary, None),
            (1, boundary),
            (len(lines), len(lines)),
            (len(lines) - 2, None),
        ]:
            got = await handler.read(ref.content_id, start_line=start, end_line=end)
            assert got == "".join(lines[start - 1 : end]), (start, end)

    async def test_a_changed_file_raises_file_changed_error_with_both_hashes(
        self, handler: LargeFileHandler, numbered: tuple[Path, str]
    ) -> None:
        path, file_id = numbered
        expected = sha256(path)
        write(path, NUMBERED.replace("line 01500", "LINE 01500"))
        with pytest.raises(FileChangedError) as caught:
            await handler.read(file_id, start_line=1, end_line=2)
        message = str(caught.value)
        assert str(path) in message and expected in message and sha256(path) in message
        assert caught.value.expected == expected and caught.value.actual == sha256(path)

    async def test_a_file_deleted_after_handling_raises_file_missing_error(
        self, handler: LargeFileHandler, numbered: tuple[Path, str]
    ) -> None:
        path, file_id = numbered
        path.unlink()
        with pytest.raises(FileMissingError) as caught:
            await handler.read(file_id)
        assert isinstance(caught.value, FileNotFoundError) and isinstance(caught.value, MnesisError)
        assert str(path) in str(caught.value) and file_id in str(caught.value)

    async def test_a_moved_file_is_read_from_another_path_seen_with_the_same_content(
        self, handler: LargeFileHandler, numbered: tuple[Path, str], tmp_path: Path
    ) -> None:
        path, file_id = numbered
        copy = tmp_path / "copy.txt"
        shutil.copy(path, copy)
        await handler.handle_file(copy)
        path.unlink()
        assert await handler.read(file_id, start_line=3, end_line=3) == "line 00003 xxx\n"

    async def test_unknown_ids_raise_file_reference_not_found(
        self, handler: LargeFileHandler
    ) -> None:
        for unknown in (new_id("file"), "0" * 64, "file_missing"):
            with pytest.raises(FileReferenceNotFoundError):
                await handler.read(unknown)

    @pytest.mark.parametrize(
        ("file_id", "start", "end"),
        [
            ("msg_01ARZ3NDEKTSV4RRFFQ69G5FAV", None, None),
            ("not an id", None, None),
            (42, None, None),
            ("0" * 64, 0, None),
            ("0" * 64, None, -1),
            ("0" * 64, 5, 4),
            ("0" * 64, True, None),
        ],
    )
    async def test_malformed_arguments_raise_invalid_argument(
        self, handler: LargeFileHandler, file_id: object, start: object, end: object
    ) -> None:
        with pytest.raises(InvalidArgumentError):
            await handler.read(file_id, start_line=start, end_line=end)  # type: ignore[arg-type]


class TestDescribe:
    async def test_describe_returns_the_stored_exploration_of_a_handled_file(
        self, handler: LargeFileHandler, store: ImmutableStore, tmp_path: Path
    ) -> None:
        session_id = new_id("sess")
        await store.create_session(SessionRecord(id=session_id, model="fake/model"))
        path = write(tmp_path / "users.csv", "id,name,joined\n" + "7,Ann,2024-05-01\n" * 300)
        ref = (await handler.handle_file(path, session_id=session_id)).file_ref
        assert ref is not None and ref.file_id is not None
        engine = RetrievalEngine(store, session_id, estimator=ESTIMATOR)
        for key in (ref.file_id, ref.content_id):
            described = await engine.describe(key)
            assert isinstance(described, FileDescription)
            assert described.id == ref.file_id and described.file_type == "csv"
            assert described.exploration_summary == ref.exploration_summary
            assert described.byte_size == path.stat().st_size
        assert "300 data rows" in ref.exploration_summary
        assert "3. joined: date" in ref.exploration_summary


_CHILD = textwrap.dedent(
    """
    import asyncio, json, resource, sys

    from mnesis import FileConfig, TokenEstimator
    from mnesis.files import LargeFileHandler
    from mnesis.store import StorePool

    async def main(db, warmup, path):
        pool = StorePool()
        store = await pool.acquire(db_path=db)
        handler = LargeFileHandler(store, TokenEstimator(), FileConfig())
        await handler.handle_file(warmup)  # threads, SQLite, the tokenizer: all warm
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = await handler.handle_file(path)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        await pool.close_all()
        ref = result.file_ref
        print(json.dumps({"growth_kb": after - before, "summary": ref.exploration_summary,
                          "tokens": ref.token_count}))

    asyncio.run(main(*sys.argv[1:]))
    """
)


def write_csv(path: Path, size: int) -> int:
    """Write a CSV of about ``size`` bytes in 4 MB blocks; return its data row count."""
    rows = [
        f'{i},user{i}@example.com,"Smith, {i % 97}",{i * 0.25:.2f},2024-01-{i % 28 + 1:02d}\n'
        for i in range(60_000)
    ]
    block = "".join(rows).encode()
    count = 0
    with open(path, "wb") as handle:
        handle.write(b"id,email,name,amount,day\n")
        while handle.tell() < size:
            handle.write(block)
            count += len(rows)
    return count


class TestBoundedMemory:
    def test_a_200_mb_csv_is_explored_with_less_than_50_mb_of_memory_growth(
        self, tmp_path: Path
    ) -> None:
        big = tmp_path / "big.csv"
        warmup = tmp_path / "warmup.csv"
        try:
            rows = write_csv(big, 200 * 1024 * 1024)
            write(warmup, "id,name\n" + "1,abcdefgh\n" * 20_000)
            done = subprocess.run(
                [sys.executable, "-c", _CHILD, str(tmp_path / "m.db"), str(warmup), str(big)],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONHASHSEED": "0"},
            )
        finally:
            big.unlink(missing_ok=True)
        report = json.loads(done.stdout)
        assert report["growth_kb"] < 50 * 1024, report
        assert f"{rows:,} data rows (plus a header row)" in report["summary"]
        assert "3. name: text" in report["summary"]
        assert report["tokens"] > 10_000_000


class TestSessionIntegration:
    async def test_a_large_file_flows_from_handle_file_into_context_and_describe(
        self, tmp_path: Path, db_path: str
    ) -> None:
        from mnesis import MnesisSession, StorePool

        source = tmp_path / "big_module.py"
        source.write_text(
            "\n".join(f"def function_{i}(value):\n    return value * {i}\n" for i in range(3000))
        )
        pool = StorePool()
        session = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool)
        result = await session.handle_file(str(source))
        assert result.file_ref is not None and result.file_ref.file_id is not None
        await session.record("review this module", [result.file_ref])
        described = await session.describe(result.file_ref.file_id)
        assert described.kind == "file" and "function_1" in described.exploration_summary
        context = await session.context_for_next_turn()
        assert f"File-ID: {result.file_ref.file_id}" in context[-1]["content"]
        await session.close()
        await pool.close_all()
