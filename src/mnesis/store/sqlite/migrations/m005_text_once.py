"""Each part's text stored once, and the neighbour context computed by the writer.

* ``message_parts.content`` of existing rows leaves out the field ``text_content``
  already holds (see :mod:`mnesis.store.shared.part_text`); a row whose text the
  indexed text does not hold exactly keeps its full JSON. The append-only trigger
  ``message_parts_immutable`` is lifted for this rewrite only, inside the migration's
  transaction, and restored from its stored definition before the transaction ends.
* ``search_context`` is written by the store with the row (see
  :mod:`mnesis.store.shared.search_context`): the insert trigger of the full-text index
  no longer computes it with a correlated subquery per part.
"""

from __future__ import annotations

import json
import sqlite3

from mnesis.errors import StoreCorruptError
from mnesis.store.shared.part_text import MARKER, decode_stored_part, shrink_content

__all__ = ["migrate"]

_BATCH = 2000

_FTS_INSERT = """
CREATE TRIGGER message_parts_fts_insert AFTER INSERT ON message_parts
WHEN NEW.text_content IS NOT NULL BEGIN
    INSERT INTO message_parts_fts (rowid, text_content, tool_content, context, session_id)
        VALUES (
            NEW.rowid,
            CASE WHEN NEW.part_type = 'tool' THEN NULL ELSE NEW.text_content END,
            CASE WHEN NEW.part_type = 'tool' THEN NEW.text_content END,
            NEW.search_context,
            substr(NEW.session_id, 6)
        );
END
"""


def _shrunk(part_id: str, part_type: str, content: str, text_content: str) -> str | None:
    """The shorter JSON of a stored part, or None to keep it as it is."""
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        return None  # Damage is `mnesis check`'s to report, not the migration's.
    if not isinstance(data, dict) or MARKER in data:
        return None
    shorter = shrink_content(data, text_content)
    if len(shorter) >= len(content):
        return None
    before = decode_stored_part(part_id, part_type, content, text_content, None, None, None, None)
    after = decode_stored_part(part_id, part_type, shorter, text_content, None, None, None, None)
    return shorter if after == before else None


def migrate(conn: sqlite3.Connection) -> None:
    """Apply the migration (inside the caller's ``BEGIN IMMEDIATE`` transaction)."""
    conn.execute("DROP TRIGGER message_parts_fts_insert")
    conn.execute(_FTS_INSERT)
    guard = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'message_parts_immutable'"
    ).fetchone()
    if guard is not None:
        conn.execute("DROP TRIGGER message_parts_immutable")
    last = 0
    while True:
        rows = conn.execute(
            "SELECT rowid, id, part_type, content, text_content FROM message_parts "
            "WHERE rowid > ? AND text_content IS NOT NULL ORDER BY rowid LIMIT ?",
            (last, _BATCH),
        ).fetchall()
        if not rows:
            break
        last = rows[-1][0]
        updates = []
        for rowid, part_id, part_type, content, text_content in rows:
            try:
                shorter = _shrunk(part_id, part_type, content, text_content)
            except StoreCorruptError:
                shorter = None  # An undecodable row is left as it is.
            if shorter is not None:
                updates.append((shorter, rowid))
        conn.executemany("UPDATE message_parts SET content = ? WHERE rowid = ?", updates)
    if guard is not None:
        conn.execute(guard[0])
