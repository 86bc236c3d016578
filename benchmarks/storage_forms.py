"""How small could a chat file get? The storage benchmark's chat file, rebuilt by hand.

``python -m benchmarks.storage_forms [--turns N]`` records the chat workload of
:mod:`benchmarks.bench_storage` with the current code, then copies the file and rebuilds
each copy in a form mnesis does not use, to measure what a schema change would buy
before anyone builds it: the neighbour context left out of the full-text index, and
integer keys in every row and index of ``messages`` and ``message_parts`` (the text IDs
only in their own table's unique index). Each copy's full-text index is ``optimize``d
and the copy ``VACUUM``ed, so the sizes are packed (a live file is a few per cent larger).
The copies drop the append-only triggers and the context view: they are measured, never
opened by mnesis.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sqlite3
import tempfile
from pathlib import Path

from benchmarks.bench_storage import measure

__all__ = ["FORMS", "main", "packed"]

_UNGUARDED = """
SELECT 'DROP TRIGGER ' || name FROM sqlite_master WHERE type = 'trigger'
UNION ALL SELECT 'DROP VIEW ' || name FROM sqlite_master WHERE type = 'view'
"""

_NO_CONTEXT = """
CREATE VIRTUAL TABLE fts_without_context USING fts5(
    text_content, tool_content, context, session_id, content='',
    tokenize='porter unicode61 remove_diacritics 2');
INSERT INTO fts_without_context (rowid, text_content, tool_content, context, session_id)
SELECT rowid, CASE WHEN part_type = 'tool' THEN NULL ELSE text_content END,
       CASE WHEN part_type = 'tool' THEN text_content END, NULL, substr(session_id, 6)
FROM message_parts WHERE text_content IS NOT NULL;
DROP TABLE message_parts_fts;
ALTER TABLE fts_without_context RENAME TO message_parts_fts;
"""

_MESSAGE_COLUMNS = (
    "role, is_summary, agent, model_id, provider_id, parent_id, created_at, tokens_input, "
    "tokens_output, tokens_cache_read, tokens_cache_write, tokens_total, cost, "
    "finish_reason, token_estimate"
)
_PART_COLUMNS = (
    "ordinal, part_type, content, text_content, tool_name, tool_call_id, tool_state, "
    "compacted_at, started_at, completed_at, token_estimate, created_at"
)


def _of(alias: str, columns: str) -> str:
    return ", ".join(f"{alias}.{c}" for c in columns.split(", "))


_INTEGER_KEYS = f"""
CREATE TABLE keyed_messages (key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
    session_key INTEGER NOT NULL, seq INTEGER NOT NULL, {_MESSAGE_COLUMNS},
    UNIQUE (session_key, seq));
INSERT INTO keyed_messages SELECT m.rowid, m.id, s.rowid, m.seq, {_of("m", _MESSAGE_COLUMNS)}
FROM messages m JOIN sessions s ON s.id = m.session_id;
CREATE TABLE keyed_parts (key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
    message_key INTEGER NOT NULL, session_key INTEGER NOT NULL, {_PART_COLUMNS},
    UNIQUE (message_key, ordinal));
INSERT INTO keyed_parts SELECT p.rowid, p.id, m.rowid, s.rowid, {_of("p", _PART_COLUMNS)}
FROM message_parts p JOIN messages m ON m.id = p.message_id
JOIN sessions s ON s.id = p.session_id;
DROP TABLE message_parts;
DROP TABLE messages;
ALTER TABLE keyed_messages RENAME TO messages;
ALTER TABLE keyed_parts RENAME TO message_parts;
CREATE INDEX message_parts_session_idx ON message_parts (session_key);
"""

FORMS: dict[str, tuple[str, ...]] = {
    "as stored": (),
    "no neighbour context in the index": (_NO_CONTEXT,),
    "integer keys everywhere": (_INTEGER_KEYS,),
    "integer keys everywhere + no neighbour context": (_NO_CONTEXT, _INTEGER_KEYS),
}
"""Each form's rebuild statements, applied in order to a copy of the file."""


def packed(source: Path, target: Path, scripts: tuple[str, ...]) -> dict[str, int]:
    """Copy ``source`` to ``target``, rebuild it with ``scripts``, pack it, and return
    the bytes of each table and index (``dbstat``) and ``"text"``, the stored text."""
    shutil.copy(source, target)
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = DELETE")
        for (drop,) in conn.execute(_UNGUARDED).fetchall():
            conn.execute(drop)
        for script in scripts:
            conn.executescript(script)
        conn.execute("INSERT INTO message_parts_fts (message_parts_fts) VALUES ('optimize')")
        conn.execute("VACUUM")
        sizes = dict(conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"))
        (text,) = conn.execute(
            "SELECT SUM(LENGTH(CAST(text_content AS BLOB))) FROM message_parts"
        ).fetchone()
    finally:
        conn.close()
    return {**sizes, "text": int(text)}


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.storage_forms``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.storage_forms")
    parser.add_argument("--turns", type=int, default=2000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mnesis-forms-") as workdir:
        asyncio.run(measure("chat", args.turns, 0, workdir))
        source = Path(workdir, "chat.db")
        print(f"### Chat file of {args.turns:,} turns, rebuilt by hand and packed\n")
        print("| form | B on disk / B of text | full-text index B / B |")
        print("|---|---:|---:|")
        for index, (name, scripts) in enumerate(FORMS.items()):
            sizes = packed(source, Path(workdir, f"form{index}.db"), scripts)
            text = sizes.pop("text")
            fts = sum(b for n, b in sizes.items() if n.startswith("message_parts_fts"))
            print(f"| {name} | {sum(sizes.values()) / text:.2f} | {fts / text:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
