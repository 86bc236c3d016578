"""Semantic recall: the ``semantic`` extra (dense vectors + RRF) against lexical ``grep``.

    python -m benchmarks.bench_semantic                  # 10k messages
    python -m benchmarks.bench_semantic --sizes 10000 100000
    python -m benchmarks.bench_semantic --quick          # 2k messages
    python -m benchmarks.bench_semantic --latency 100000 # query latency only (random vectors)
    python -m benchmarks.bench_semantic --keep DIR       # keep (and reuse) the databases in DIR

Runs on the corpus and the 300 questions of ``bench_recall`` (six kinds, 50 each).
For each ranking it reports evidence recall@1/5/10, per-kind recall@5 and the
latency p50/p95 of a ``grep`` call (query embedding and vector scan included):

* ``lexical``: ``grep`` as shipped (``RetrievalConfig.semantic=False``);
* ``dense``: the brute-force cosine search alone (what the vectors find by themselves);
* ``hybrid``: ``grep`` with ``RetrievalConfig.semantic=True`` (RRF of both, with the
  standout and reply corrections of ``semantic.hybrid``);
* ``hybrid, plain RRF``: the same without those corrections (what shipped first).

The index cost is the time of one full ``RetrievalEngine.index_semantic`` pass over
the session, per embedded text and per stored message. Needs the ``semantic`` extra.

``--latency N`` skips the model for the corpus: it stores random unit vectors for
every text (recall is then meaningless) and reports only the latency of the dense
search (cached, and streamed for the first ``STREAMED_QUERIES`` questions) and of
hybrid ``grep`` at that size, and the time of the cache's first fill.

``--keep DIR`` stores each database as ``DIR/semantic-<size>.db`` (``latency-<size>.db``
for ``--latency``) with the sidecars of ``bench_recall`` (questions, and here the index
cost of the pass that embedded it) and reuses them: a later run embeds nothing and only
scores. A copy of a ``bench_recall --keep`` database (with its ``.json``) can be
renamed into place to skip building the corpus; never point it at an original, the
run adds vectors to it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_recall import Scores, _open, _pct, score
from mnesis import MnesisSession, StorePool
from mnesis.config import RetrievalConfig
from mnesis.retrieval import RetrievalEngine
from mnesis.retrieval.semantic import codec, search
from mnesis.retrieval.semantic import hybrid as fusion
from mnesis.retrieval.semantic.model import DIM, MODEL_ID, load_embedder
from mnesis.retrieval.semantic.search import dense_search

Ranker = Callable[[str], Awaitable[list[str]]]
STREAMED_QUERIES = 5
"""``--latency``: questions timed with the streamed dense search (slow at 1M)."""


def rankers(session: MnesisSession) -> dict[str, Ranker]:
    """The three rankings compared, each returning the top 10 message IDs."""
    lexical = RetrievalEngine(session.store, session.id, config=RetrievalConfig())
    hybrid = RetrievalEngine(session.store, session.id, config=RetrievalConfig(semantic=True))
    vectors = session.store.vectors
    assert vectors is not None
    embedder = load_embedder()

    async def by_lexical(query: str) -> list[str]:
        return [m.id for m in (await lexical.grep(query, scope="messages", limit=10)).matches]

    async def by_dense(query: str) -> list[str]:
        vector = (await asyncio.to_thread(embedder.embed, [query]))[0]
        hits = await dense_search(
            vectors,
            embedder.model_id,
            vector,
            [session.id],
            ["message"],
            10,
            location=session.store.location,
        )
        return [h.id for h in hits]

    async def by_hybrid(query: str) -> list[str]:
        return [m.id for m in (await hybrid.grep(query, scope="messages", limit=10)).matches]

    async def by_plain_rrf(query: str) -> list[str]:
        with _plain_rrf():
            return await by_hybrid(query)

    return {
        "lexical": by_lexical,
        "dense": by_dense,
        "hybrid": by_hybrid,
        "hybrid, plain RRF": by_plain_rrf,
    }


@contextlib.contextmanager
def _plain_rrf() -> Iterator[None]:
    """Fusion without the standout and reply corrections (for comparison only)."""
    saved = fusion.KEEP_REPLIES, fusion.STANDOUT_WEIGHT
    fusion.KEEP_REPLIES, fusion.STANDOUT_WEIGHT = False, 1.0
    try:
        yield
    finally:
        fusion.KEEP_REPLIES, fusion.STANDOUT_WEIGHT = saved


async def evaluate(path: str, total: int) -> tuple[dict[str, Scores], dict[str, float]]:
    """Scores of each ranking on a ``total``-message corpus, and the index costs."""
    pool = StorePool()
    session, corpus, _ = await _open(path, total, pool)
    engine = RetrievalEngine(session.store, session.id, config=RetrievalConfig(semantic=True))
    await asyncio.to_thread(load_embedder)
    stored = await session.store.count_messages(session.id)
    started = time.perf_counter()
    embedded = await engine.index_semantic()
    seconds = time.perf_counter() - started
    costs = _costs(path, embedded, seconds, stored)
    results: dict[str, Scores] = {}
    for name, rank in rankers(session).items():
        results[name] = await score(rank, corpus.questions)
    await session.close()
    await pool.close_all()
    return results, costs


def _costs(path: str, embedded: int, seconds: float, stored: int) -> dict[str, float]:
    """The index cost of this run, or of the run that embedded a reused database."""
    sidecar = Path(path + ".index.json")
    if embedded == 0 and sidecar.exists():
        return dict(json.loads(sidecar.read_text()))
    costs = {
        "texts": embedded,
        "ms_per_text": seconds * 1000 / max(1, embedded),
        "ms_per_message": seconds * 1000 / max(1, stored),
        "index_seconds": seconds,
    }
    sidecar.write_text(json.dumps(costs))
    return costs


def report(total: int, results: dict[str, Scores], costs: dict[str, float]) -> None:
    """Print one markdown table."""
    print(
        f"\n## {total:,} messages: {int(costs['texts']):,} texts embedded in "
        f"{costs['index_seconds']:.1f} s ({costs['ms_per_text']:.2f} ms per text, "
        f"{costs['ms_per_message']:.2f} ms per stored message)\n"
    )
    kinds = sorted(next(iter(results.values())).kinds)
    print(
        "| ranking | R@1 | R@5 | R@10 | p50 ms | p95 ms | "
        + " | ".join(f"R@5 {k}" for k in kinds)
        + " |"
    )
    print("|---|---|---|---|---|---|" + "---|" * len(kinds))
    for name, s in results.items():
        cells = [f"{statistics.mean(s.at[k]):.3f}" for k in (1, 5, 10)]
        cells += [f"{_pct(s.millis, 0.5):.1f}", f"{_pct(s.millis, 0.95):.1f}"]
        cells += [f"{statistics.mean(s.kinds[k]):.2f}" for k in kinds]
        print(f"| {name} | " + " | ".join(cells) + " |")


async def latency(path: str, total: int) -> None:
    """Dense and hybrid query latency over ``total`` messages with random vectors."""
    import numpy as np

    pool = StorePool()
    session, corpus, _ = await _open(path, total, pool)
    vectors = session.store.vectors
    assert vectors is not None
    rng = np.random.default_rng(7)
    after = 0
    if await vectors.last_vector_key(session.id, MODEL_ID, "message"):
        after = await vectors.last_key(session.id, "message")  # reused: filled before
    while batch := await vectors.pending(session.id, MODEL_ID, "message", 5_000, after_key=after):
        after = batch[-1].key
        matrix = rng.standard_normal((len(batch), DIM)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        await vectors.put(MODEL_ID, list(zip(batch, codec.encode(matrix), strict=True)))
    stored = await vectors.count(session.id, MODEL_ID, "message")
    embedder = load_embedder()
    hybrid = RetrievalEngine(session.store, session.id, config=RetrievalConfig(semantic=True))
    t = time.perf_counter()
    await hybrid.index_semantic()
    first_pass = time.perf_counter() - t
    questions = corpus.questions[::3]
    timings: dict[str, list[float]] = {"embed query": [], "dense cached": [], "dense streamed": []}
    timings["hybrid grep"] = []
    where = session.store.location
    t = time.perf_counter()
    await dense_search(
        vectors, MODEL_ID, np.zeros(DIM, np.float32), [session.id], ["message"], 1, location=where
    )
    fill = time.perf_counter() - t
    for number, question in enumerate(questions):
        t = time.perf_counter()
        vector = (await asyncio.to_thread(embedder.embed, [question.text]))[0]
        timings["embed query"].append((time.perf_counter() - t) * 1000)
        for name, location in (("dense cached", where), ("dense streamed", None)):
            if location is None and number >= STREAMED_QUERIES:
                continue
            t = time.perf_counter()
            await dense_search(
                vectors, MODEL_ID, vector, [session.id], ["message"], 50, location=location
            )
            timings[name].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        await hybrid.grep(question.text, scope="messages", limit=10)
        timings["hybrid grep"].append((time.perf_counter() - t) * 1000)
    cache = search.CACHE_BYTES >> 20
    print(f"\n## {total:,} messages, {stored:,} random vectors (cache {cache} MB)\n")
    print(f"first index_semantic pass (nothing to embed): {first_pass:.1f} s")
    print(f"cache fill (first dense search): {fill:.1f} s\n")
    print("| step | p50 ms | p95 ms |\n|---|---|---|")
    for name, values in timings.items():
        print(f"| {name} | {_pct(values, 0.5):.1f} | {_pct(values, 0.95):.1f} |")
    await session.close()
    await pool.close_all()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000])
    parser.add_argument("--quick", action="store_true", help="2k messages only")
    parser.add_argument("--latency", type=int, help="latency only, random vectors")
    parser.add_argument("--keep", metavar="DIR", help="store the databases in DIR, reuse them")
    args = parser.parse_args()
    sizes = [2_000] if args.quick else args.sizes
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or tmp
        if args.latency:
            await latency(os.path.join(where, f"latency-{args.latency}.db"), args.latency)
            return
        for total in sizes:
            results, costs = await evaluate(os.path.join(where, f"semantic-{total}.db"), total)
            report(total, results, costs)


if __name__ == "__main__":
    asyncio.run(main())
