"""``benchmarks/semantic_embed.py``: a large benchmark database embedded in commits that a
later run resumes, with the vectors ``index_semantic`` would store."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from benchmarks import semantic_embed
from benchmarks.bench_recall import _open

from mnesis import StorePool
from mnesis.retrieval.semantic import MODEL_ID, codec
from mnesis.retrieval.semantic.index import embedded_text
from mnesis.retrieval.semantic.model import load_embedder
from mnesis.store.vectors import PendingText
from tests.backends import fetch

_TEXTS = (
    "SELECT p.id, p.message_id, p.session_id, m.created_at, p.text_content, p.search_context "
    "FROM message_parts p JOIN messages m ON m.id = p.message_id "
    "WHERE p.part_type = 'text' AND NOT m.is_summary ORDER BY p.rowid"
)


@pytest.mark.sqlite_only("the script reads and writes the SQLite file with sqlite3")
async def test_a_stopped_run_resumes_after_its_last_commit_and_embeds_like_the_index(
    db_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = StorePool()
    session, _, _ = await _open(db_path, 600, pool)
    await session.close()
    await pool.close_all()
    embedder = semantic_embed.load(threads=1, batch=32)
    await asyncio.to_thread(semantic_embed.run, db_path, embedder, 64, 100)
    first = fetch(db_path, "SELECT part_id FROM part_vectors ORDER BY id")
    texts = fetch(db_path, _TEXTS)
    assert [r[0] for r in first] == [t[0] for t in texts[:128]]  # two commits of 64
    capsys.readouterr()
    await asyncio.to_thread(semantic_embed.run, db_path, embedder, 64, None)
    resumed = capsys.readouterr().out.splitlines()[0]
    row = fetch(db_path, "SELECT rowid FROM message_parts WHERE id = ?", texts[127][0])[0][0]
    assert resumed == f"resuming after rowid {row}: {len(texts) - 128:,} texts left"
    stored = fetch(db_path, "SELECT part_id, model, vector FROM part_vectors ORDER BY id")
    assert [r[0] for r in stored] == [t[0] for t in texts]
    assert {r[1] for r in stored} == {MODEL_ID}
    sample = texts[::37]
    pending = [PendingText("message", t[1], t[2], t[3], t[4], t[0], t[5]) for t in sample]
    want = codec.decode(codec.encode(load_embedder().embed([embedded_text(p) for p in pending])))
    by_part = {r[0]: bytes(r[2]) for r in stored}
    got = codec.decode([by_part[t[0]] for t in sample])
    assert np.abs(got[0].astype(int) - want[0].astype(int)).max() <= 1
