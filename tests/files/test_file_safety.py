"""handle_file on hostile paths: typed errors, no blocking, confinement, a read timeout.

(Issue 17, item 4.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnesis import FileConfig, TokenEstimator
from mnesis.errors import FileAccessError, InvalidArgumentError, OutOfScopeError
from mnesis.files import LargeFileHandler
from mnesis.files import handler as handler_module
from mnesis.store import ImmutableStore, StorePool

ESTIMATOR = TokenEstimator(exact=False)
BIG = "def f(x):\n    return x\n" * 400
"""Above the 200-token threshold: becomes a reference."""


@pytest.fixture
async def store(tmp_path: Path, pool: StorePool) -> AsyncIterator[ImmutableStore]:
    s = await pool.acquire(db_path=str(tmp_path / "files.db"))
    yield s
    await s.close()


def make(store: ImmutableStore, **config: object) -> LargeFileHandler:
    return LargeFileHandler(store, ESTIMATOR, FileConfig(inline_threshold=200, **config))


class TestMalformedPaths:
    @pytest.mark.parametrize("path", ["a\x00b.txt", "bad\ud800name.txt", ""])
    async def test_a_path_the_file_system_cannot_take_is_an_invalid_argument(
        self, store: ImmutableStore, path: str
    ) -> None:
        with pytest.raises(InvalidArgumentError):
            await make(store).handle_file(path)


_FIFO_CHILD = textwrap.dedent(
    """
    import asyncio, os, sys

    from mnesis import FileConfig
    from mnesis.errors import InvalidArgumentError
    from mnesis.files import LargeFileHandler
    from mnesis.store import StorePool

    async def main(db, fifo):
        pool = StorePool()
        store = await pool.acquire(db_path=db)
        try:
            await LargeFileHandler(store, config=FileConfig()).handle_file(fifo)
        except InvalidArgumentError as exc:
            print("refused:", exc)
        await pool.close_all()

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
class TestSpecialFiles:
    def test_a_fifo_is_refused_without_blocking_and_the_process_exits(self, tmp_path: Path) -> None:
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        src = str(Path(handler_module.__file__).parents[2])
        try:
            done = subprocess.run(
                [sys.executable, "-c", _FIFO_CHILD, str(tmp_path / "f.db"), str(fifo)],
                capture_output=True,
                text=True,
                timeout=120,  # a hang guard: the old code blocked in open() forever
                env={**os.environ, "PYTHONPATH": src},
            )
        except subprocess.TimeoutExpired:
            pytest.fail("handle_file(fifo) blocked and the process could not exit")
        assert done.returncode == 0, done.stderr
        assert "refused:" in done.stdout and "regular file" in done.stdout

    async def test_a_character_device_is_refused(self, store: ImmutableStore) -> None:
        with pytest.raises(InvalidArgumentError, match="regular file"):
            await make(store).handle_file("/dev/zero")


class TestAllowedRoots:
    async def test_a_file_under_a_root_is_handled_and_read_back(
        self, store: ImmutableStore, tmp_path: Path
    ) -> None:
        project = tmp_path / "project"
        project.mkdir()
        (project / "mod.py").write_text(BIG)
        handler = make(store, allowed_roots=[str(project)])
        ref = (await handler.handle_file(project / "mod.py")).file_ref
        assert ref is not None and ref.file_id is not None
        assert await handler.read(ref.file_id, 1, 2) == "def f(x):\n    return x\n"

    async def test_a_path_outside_every_root_is_out_of_scope(
        self, store: ImmutableStore, tmp_path: Path
    ) -> None:
        project = tmp_path / "project"
        project.mkdir()
        (tmp_path / "secret.py").write_text(BIG)
        handler = make(store, allowed_roots=[str(project)])
        for path in (tmp_path / "secret.py", project / ".." / "secret.py"):
            with pytest.raises(OutOfScopeError, match="allowed roots"):
                await handler.handle_file(path)
        assert handler.exploration_count == 0

    async def test_a_symlink_to_outside_is_refused_and_one_to_inside_is_followed(
        self, store: ImmutableStore, tmp_path: Path
    ) -> None:
        project = tmp_path / "project"
        project.mkdir()
        (tmp_path / "secret.py").write_text(BIG)
        (project / "real.py").write_text(BIG + "# inside\n")
        (project / "escape.py").symlink_to(tmp_path / "secret.py")
        (project / "alias.py").symlink_to(project / "real.py")
        handler = make(store, allowed_roots=[str(project)])
        with pytest.raises(OutOfScopeError):
            await handler.handle_file(project / "escape.py")
        ref = (await handler.handle_file(project / "alias.py")).file_ref
        assert ref is not None and ref.path == str(project / "alias.py")

    async def test_a_symlinked_root_is_resolved_too(
        self, store: ImmutableStore, tmp_path: Path
    ) -> None:
        project = tmp_path / "project"
        project.mkdir()
        (project / "mod.py").write_text(BIG)
        (tmp_path / "link").symlink_to(project)
        handler = make(store, allowed_roots=[str(tmp_path / "link")])
        assert (await handler.handle_file(project / "mod.py")).file_ref is not None

    async def test_reading_back_a_reference_outside_the_roots_is_out_of_scope(
        self, store: ImmutableStore, tmp_path: Path
    ) -> None:
        (tmp_path / "elsewhere.py").write_text(BIG)
        ref = (await make(store).handle_file(tmp_path / "elsewhere.py")).file_ref
        assert ref is not None and ref.file_id is not None
        confined = make(store, allowed_roots=[str(tmp_path / "project")])
        with pytest.raises(OutOfScopeError):
            await confined.read(ref.file_id)

    def test_roots_must_be_paths(self) -> None:
        with pytest.raises(ValueError, match="allowed_roots"):
            FileConfig(allowed_roots=["ok", "bad\x00root"])


class TestReadTimeout:
    async def test_a_read_that_hangs_times_out_with_a_typed_error(
        self, store: ImmutableStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        release = threading.Event()
        scan = handler_module.scan_file

        def stalled(*args: object) -> object:
            release.wait()  # a read stuck on a stalled file system
            return scan(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(handler_module, "scan_file", stalled)
        (tmp_path / "slow.py").write_text(BIG)
        handler = make(store, read_timeout=0.05)
        try:
            with pytest.raises(FileAccessError, match="read_timeout"):
                await handler.handle_file(tmp_path / "slow.py")
        finally:
            release.set()

    def test_the_timeout_is_positive_or_none(self) -> None:
        assert FileConfig(read_timeout=None).read_timeout is None
        with pytest.raises(ValueError):
            FileConfig(read_timeout=0)
