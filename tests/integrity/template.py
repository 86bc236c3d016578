"""The compacted template session the checker and repair tests corrupt copies of."""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.crash_trials import copy_database

from mnesis import MnesisSession, StorePool
from mnesis.llm import FakeLLM
from mnesis.testing import SESSIONS, generate, replay
from tests.compaction import run_in_fresh_loop, seed_session, small_window_config

__all__ = ["FIXTURE", "Template", "build_template", "compacted_session", "copy_database"]

FIXTURE = "bugfix_sprint"


@dataclass(frozen=True, slots=True)
class Template:
    """A closed database holding one compacted session (leaf and condensed summaries)."""

    db_path: str
    session_id: str


async def compacted_session(db_path: str, pool: StorePool) -> str:
    """Record 100 fixture turns in a 32k window with two explicit compactions and
    automatic compaction in between; returns the (closed) session's ID."""
    session_id, _ = await seed_session(db_path, pool, FIXTURE, 40)
    session = await MnesisSession.load(
        session_id, config=small_window_config(), db_path=db_path, pool=pool, llm=FakeLLM()
    )
    try:
        await session.compact()
        await replay(session, generate(SESSIONS[FIXTURE]), start=40, stop=100)
        await session.compact()
    finally:
        await session.close()
    return session_id


def build_template(db_path: str) -> Template:
    """Build :func:`compacted_session` in ``db_path`` (synchronously, own event loop)."""

    async def build() -> Template:
        pool = StorePool()
        try:
            return Template(db_path, await compacted_session(db_path, pool))
        finally:
            await pool.close_all()

    return run_in_fresh_loop(build)
