"""Semantic recall at scale: the indexer's store work per round, and int8 against float32.

    python -m benchmarks.semantic_scale rounds DB [DB ...]
    python -m benchmarks.semantic_scale quantisation DB [--rows N]

``rounds``: on a database whose texts all have vectors (a ``bench_semantic --keep``
database: ``semantic-N.db``, or ``latency-N.db`` with random vectors), the store work
of one background indexing round after a turn, timed with plain ``sqlite3`` (what
the store's thread runs): *before*, the statement that read every text of the
session against its vector (the anti-join as it shipped, ``LIMIT 128``); *after*, the
two highest-key lookups and the read of the rows above the mark (here the turn's two
newest parts). Read only: the file is opened with ``mode=ro``.

``quantisation``: on a database whose vectors were stored as float32 (embedded before
the int8 encoding, e.g. ``semantic-10000.db``; or the first ``--rows`` vectors of a
partly embedded one), the benchmark questions ranked by the dense search over the
exact float32 vectors and over their int8 form (:mod:`mnesis.retrieval.semantic.codec`):
evidence recall@1/5/10 (over the questions whose evidence is all among the rows read),
the share of the int8 top 10 that the float32 ranking also puts in its top 10 (ties
counted: the corpus repeats texts), the largest cosine error and the scoring time.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from mnesis.retrieval.semantic import codec
from mnesis.retrieval.semantic.model import DIM, MODEL_ID, load_embedder
from mnesis.store.shared.vectors import EMBEDDED, LAST_KEY, PARTS, PENDING

BEFORE = (
    "SELECT p.message_id, p.session_id, m.created_at, p.text_content, p.id, "
    f"p.search_context FROM {PARTS} "
    "LEFT JOIN part_vectors v ON v.part_id = p.id AND v.model = ? "
    f"WHERE p.session_id = ? AND {EMBEDDED} AND v.part_id IS NULL "
    "ORDER BY m.seq, p.ordinal LIMIT ?"
)
"""The message statement of ``store/shared/vectors.PENDING`` before the marks."""
REPEAT = 15


def _open(path: str) -> tuple[sqlite3.Connection, str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    session_id = json.loads(Path(path + ".json").read_text())["session_id"]
    return conn, session_id


def _millis(run: Any) -> float:
    times = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def rounds(path: str) -> None:
    conn, session_id = _open(path)
    parts = conn.execute(
        "SELECT count(*) FROM message_parts WHERE session_id = ? AND part_type = 'text'",
        (session_id,),
    ).fetchone()[0]
    newest = conn.execute(
        "SELECT rowid FROM message_parts WHERE session_id = ? AND part_type = 'text' "
        "ORDER BY rowid DESC LIMIT 3",
        (session_id,),
    ).fetchall()
    mark = int(newest[-1][0])
    last_parts = LAST_KEY["message"].format(key="rowid")
    last_summaries = LAST_KEY["summary"].format(key="rowid")
    pending = PENDING["message"].format(key="rowid")

    def before() -> None:
        conn.execute(BEFORE, (MODEL_ID, session_id, 128)).fetchall()

    def after() -> None:
        last = conn.execute(last_parts, (session_id,)).fetchone()[0]
        conn.execute(last_summaries, (session_id,)).fetchone()
        conn.execute(pending, (MODEL_ID, session_id, mark, last, 128)).fetchall()

    print(
        f"| {Path(path).name} | {parts:,} | {_millis(before):.2f} | {_millis(after):.3f} |",
        flush=True,
    )
    conn.close()


def quantisation(path: str, rows: int | None) -> None:
    conn, _ = _open(path)
    questions = json.loads(Path(path + ".json").read_text())["questions"]
    limit = -1 if rows is None else rows
    read = conn.execute(
        "SELECT message_id, vector FROM part_vectors WHERE model = ? ORDER BY id LIMIT ?",
        (MODEL_ID, limit),
    ).fetchall()
    conn.close()
    owners = np.array([r[0] for r in read])
    blobs = [bytes(r[1]) for r in read]
    assert {len(b) for b in blobs} == {codec.FLOAT32_BYTES}, "needs float32 vectors"
    exact = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), DIM)
    values, scales = codec.decode(blobs)
    known = set(owners.tolist())
    names, codes = np.unique(owners, return_inverse=True)
    error = 0.0
    embedder = load_embedder()
    found: dict[str, dict[int, list[float]]] = {"float32": {}, "int8": {}}
    overlap: list[float] = []
    millis: dict[str, list[float]] = {"float32": [], "int8": []}
    for question in questions:
        query = embedder.embed([question["text"]])[0]
        tops = {}
        for name in ("float32", "int8"):
            started = time.perf_counter()
            scores = exact @ query if name == "float32" else codec.scores(values, scales, query)
            millis[name].append((time.perf_counter() - started) * 1000)
            tops[name] = _top_messages(scores, owners, 10)
            if set(question["evidence"]) <= known:
                for k in (1, 5, 10):
                    top = set(tops[name][:k])
                    share = sum(e in top for e in question["evidence"]) / len(question["evidence"])
                    found[name].setdefault(k, []).append(share)
        # Share of the int8 top 10 that the exact ranking puts in its top 10, ties
        # included (many corpus turns are identical texts with identical vectors).
        best = np.full(len(names), -2.0, dtype=np.float32)
        np.maximum.at(best, codes, exact @ query)
        tenth = np.sort(best)[-10]
        exact_of = dict(zip(names.tolist(), best.tolist(), strict=True))
        overlap.append(sum(exact_of[m] >= tenth - 1e-6 for m in tops["int8"]) / 10)
        error = max(error, float(np.abs(exact @ query - codec.scores(values, scales, query)).max()))
    asked = len(found["float32"].get(1, []))
    print(
        f"\n{Path(path).name}: {len(blobs):,} vectors, {asked} of {len(questions)} questions "
        f"with their evidence among them; largest cosine error {error:.4f}\n"
    )
    print("| vectors | R@1 | R@5 | R@10 | top-10 overlap | scoring p50 ms |")
    print("|---|---|---|---|---|---|")
    for name in ("float32", "int8"):
        cells = [f"{statistics.mean(found[name][k]):.3f}" if asked else "-" for k in (1, 5, 10)]
        agreed = "1.000" if name == "float32" else f"{statistics.mean(overlap):.3f}"
        cells += [agreed, f"{statistics.median(millis[name]):.1f}"]
        print(f"| {name} | " + " | ".join(cells) + " |")


def _top_messages(scores: np.ndarray, owners: np.ndarray, k: int) -> list[str]:
    """The ``k`` best messages (a message scores as its best part)."""
    out: list[str] = []
    for index in np.argsort(-scores)[: 8 * k]:
        owner = str(owners[index])
        if owner not in out:
            out.append(owner)
        if len(out) == k:
            break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["rounds", "quantisation"])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--rows", type=int, help="quantisation: the first N vectors only")
    args = parser.parse_args()
    if args.mode == "rounds":
        print("| database | text parts | before ms | after ms |\n|---|---|---|---|")
        for path in args.paths:
            rounds(path)
        return
    for path in args.paths:
        quantisation(path, args.rows)


if __name__ == "__main__":
    main()
