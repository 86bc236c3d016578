"""``mnesis report`` on both backends: the same recorded session gives the same curve,
transcript and lineage counts on SQLite and on PostgreSQL (the report reads only through
the store's facade)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mnesis import StorePool
from mnesis.cli import run
from mnesis.report.data import ReportData, collect
from tests.backends import template_location
from tests.cli.recorded import record_compacted


async def _collect(location: str, session_id: str) -> ReportData:
    pool = StorePool()
    store = await pool.acquire(location)
    try:
        return await collect(store, session_id)
    finally:
        await store.close()
        await pool.close_all()


def _shape(data: ReportData) -> tuple[object, ...]:
    return (
        [(t.turn, t.history_tokens, t.context_tokens, t.compacted, t.backlog) for t in data.turns],
        [(e.ordinal, e.role, e.text) for e in data.index.entries if e.role != "compaction"],
        [(e.ordinal, e.turn) for e in data.index.entries if e.role == "compaction"],
        [(n.kind, n.source_message_count, n.after_message) for n in data.nodes],
        data.work,
    )


@pytest.mark.postgres
def test_sqlite_and_postgres_give_the_same_report(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    shapes = []
    for backend in ("sqlite", "postgres"):
        with template_location(backend, request, "report") as location:
            session_id, _ = asyncio.run(record_compacted(location, turns=30, model="fake/r"))
            out = tmp_path / f"{backend}.html"
            assert run(["report", session_id, "-o", str(out), "--db", location]) == 0
            assert 'id="transcript"' in out.read_text(encoding="utf-8")
            shapes.append(_shape(asyncio.run(_collect(location, session_id))))
    sqlite, postgres = shapes
    # The summary's own text names message IDs, which are random: the token estimate of a
    # ~560-token summary spreads by ~20 between runs of the same backend, so the turn it
    # lands in is compared within 5%; everything else is equal.
    assert sqlite[0][:-1] == postgres[0][:-1]
    assert sqlite[1:] == postgres[1:]
    turns, messages, compactions, nodes, _ = sqlite
    last = postgres[0][-1]
    assert (last[0], last[1], last[3]) == (turns[-1][0], turns[-1][1], True)
    assert abs(last[2] - turns[-1][2]) <= 0.05 * turns[-1][2]
    assert len(turns) == 30 and len(messages) == 60
    assert compactions and nodes and any(t[3] for t in turns)
