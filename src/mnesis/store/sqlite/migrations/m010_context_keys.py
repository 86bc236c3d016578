"""``context_items`` keyed by integers (SQLite).

The context view held each item's session and message as 30-character text IDs, in the
table and again in its indexes (~0.7 bytes on disk per byte of chat text). This
migration moves the rows into ``context_slots``, keyed by ``sessions.rowid`` and
``messages.rowid``, and puts a view named ``context_items`` in the table's place: the
same columns, joined back to the text IDs, with ``INSTEAD OF`` triggers, so every
statement written for both backends reads and writes it unchanged (PostgreSQL keeps
its text-keyed table). The SQLite writer's hot paths write ``context_slots`` directly
(see :mod:`~mnesis.store.sqlite.context_slots`).

The foreign keys the table had become triggers of equal force: they refuse only while
``PRAGMA foreign_keys`` is on, as a foreign key does, with SQLite's own message. Rows
whose message or session no longer existed (writable only with foreign keys off) are
kept with a negative key per missing ID, so the integrity checker still reports them.
Both row IDs are stable: the tables have no ``INTEGER PRIMARY KEY``, so only a
``VACUUM`` could renumber them, and SQLite's ``VACUUM`` copies row IDs as they are (the
contentless full-text index depends on ``message_parts.rowid`` the same way).
"""

from __future__ import annotations

import sqlite3

__all__ = ["OBJECTS", "migrate"]

_FK = "SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed')"
_FK_ON = "(SELECT foreign_keys FROM pragma_foreign_keys)"
_SESSION_KEY = "(SELECT rowid FROM sessions WHERE id = NEW.session_id)"
_MESSAGE_KEY = "(SELECT rowid FROM messages WHERE id = NEW.message_id)"
_SLOT = (
    "session_key = (SELECT rowid FROM sessions WHERE id = OLD.session_id) "
    "AND position = OLD.position"
)

OBJECTS = (
    """
CREATE TABLE context_slots (
    session_key INTEGER NOT NULL,
    position INTEGER NOT NULL,
    item_type TEXT NOT NULL CHECK (item_type IN ('message', 'summary')),
    message_key INTEGER,
    summary_id TEXT REFERENCES summaries(id),
    tokens INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_key, position),
    CHECK (
        (item_type = 'message' AND message_key IS NOT NULL AND summary_id IS NULL) OR
        (item_type = 'summary' AND summary_id IS NOT NULL AND message_key IS NULL)
    )
) WITHOUT ROWID
""",
    """
CREATE INDEX context_slots_summary_idx ON context_slots (session_key, position)
    WHERE item_type = 'summary'
""",
    """
CREATE INDEX context_slots_message_idx ON context_slots (message_key)
    WHERE message_key IS NOT NULL
""",
    """
CREATE VIEW context_items AS
SELECT sessions.id AS session_id, context_slots.position AS position,
       context_slots.item_type AS item_type, messages.id AS message_id,
       context_slots.summary_id AS summary_id, context_slots.tokens AS tokens,
       context_slots.created_at AS created_at
FROM context_slots JOIN sessions ON sessions.rowid = context_slots.session_key
LEFT JOIN messages ON messages.rowid = context_slots.message_key
""",
    f"""
CREATE TRIGGER context_items_insert INSTEAD OF INSERT ON context_items BEGIN
    {_FK} WHERE {_FK_ON} AND ({_SESSION_KEY} IS NULL
        OR (NEW.message_id IS NOT NULL AND {_MESSAGE_KEY} IS NULL));
    INSERT INTO context_slots (session_key, position, item_type, message_key, summary_id,
                               tokens, created_at)
        VALUES ({_SESSION_KEY}, NEW.position, NEW.item_type, {_MESSAGE_KEY},
                NEW.summary_id, NEW.tokens, NEW.created_at);
END
""",
    f"""
CREATE TRIGGER context_items_update INSTEAD OF UPDATE ON context_items BEGIN
    {_FK} WHERE {_FK_ON} AND (
        (NEW.session_id IS NOT OLD.session_id AND {_SESSION_KEY} IS NULL)
        OR (NEW.message_id IS NOT OLD.message_id AND NEW.message_id IS NOT NULL
            AND {_MESSAGE_KEY} IS NULL));
    UPDATE context_slots SET
        session_key = CASE WHEN NEW.session_id IS OLD.session_id THEN session_key
                      ELSE {_SESSION_KEY} END,
        position = NEW.position, item_type = NEW.item_type,
        message_key = CASE WHEN NEW.message_id IS OLD.message_id THEN message_key
                      ELSE {_MESSAGE_KEY} END,
        summary_id = NEW.summary_id, tokens = NEW.tokens, created_at = NEW.created_at
    WHERE {_SLOT};
END
""",
    f"""
CREATE TRIGGER context_items_delete INSTEAD OF DELETE ON context_items BEGIN
    DELETE FROM context_slots WHERE {_SLOT};
END
""",
    f"""
CREATE TRIGGER context_slots_message_fk BEFORE DELETE ON messages
WHEN {_FK_ON} AND EXISTS (SELECT 1 FROM context_slots WHERE message_key = OLD.rowid) BEGIN
    {_FK};
END
""",
    f"""
CREATE TRIGGER context_slots_session_fk BEFORE DELETE ON sessions
WHEN {_FK_ON} AND EXISTS (SELECT 1 FROM context_slots WHERE session_key = OLD.rowid) BEGIN
    {_FK};
END
""",
    f"""
CREATE TRIGGER context_slots_session_id_fk BEFORE UPDATE OF id ON sessions
WHEN {_FK_ON} AND NEW.id IS NOT OLD.id
    AND EXISTS (SELECT 1 FROM context_slots WHERE session_key = OLD.rowid) BEGIN
    {_FK};
END
""",
)
"""The table, its indexes, the view in the old table's place and its triggers."""

_COPY = """
INSERT INTO context_slots (session_key, position, item_type, message_key, summary_id,
                           tokens, created_at)
SELECT COALESCE(s.rowid, -k.session_rank), c.position, c.item_type,
       CASE WHEN c.message_id IS NULL THEN NULL
            ELSE COALESCE(m.rowid, -k.message_rank) END,
       c.summary_id, c.tokens, c.created_at
FROM old_context_items c
LEFT JOIN sessions s ON s.id = c.session_id
LEFT JOIN messages m ON m.id = c.message_id
LEFT JOIN temp.lost_keys k ON k.session_id = c.session_id
    AND k.message_id IS c.message_id
"""

_LOST = """
CREATE TEMP TABLE lost_keys AS
SELECT DISTINCT c.session_id, c.message_id,
       DENSE_RANK() OVER (ORDER BY c.session_id) AS session_rank,
       DENSE_RANK() OVER (ORDER BY c.message_id) AS message_rank
FROM old_context_items c
WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = c.session_id)
   OR (c.message_id IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = c.message_id))
"""
"""The rows naming a session or message that does not exist, each missing ID given a
rank: its negative is the key no row has (lost rows are written only with foreign keys
off, and keep pointing at nothing)."""


_FIRST = ("messages_no_delete", "sessions_no_delete")
"""Re-created after the foreign-key triggers, so they run first (SQLite runs a table's
triggers newest first): a delete of history is refused as append-only, as it was
before a foreign key was checked."""


def migrate(conn: sqlite3.Connection) -> None:
    """Apply the migration (inside the caller's ``BEGIN IMMEDIATE`` transaction)."""
    conn.execute("ALTER TABLE context_items RENAME TO old_context_items")
    conn.execute(_LOST)
    for statement in OBJECTS:
        conn.execute(statement)
    conn.execute(_COPY)
    conn.execute("DROP TABLE temp.lost_keys")
    conn.execute("DROP TABLE old_context_items")
    for name in _FIRST:
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        conn.execute(f"DROP TRIGGER {name}")
        conn.execute(sql)
