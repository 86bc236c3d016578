"""The table definitions both backends' migrations write alike, rendered per dialect.

Frozen, like the migrations that use them: a rendering is part of an applied migration,
so it never changes (``tests/store/test_frozen_schema.py`` records each migration's
text and the schema a fresh database gets). A new table or column is written in a new
migration, not here.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DELETE_GUARDED",
    "HISTORY_REFUSALS",
    "POSTGRES",
    "SQLITE",
    "Dialect",
    "context_items_table",
    "file_tables",
    "history_refusals",
    "import_sources",
    "lineage_tables",
    "map_run_tables",
    "refusal",
    "sessions_table",
    "vector_tables",
]


@dataclass(frozen=True)
class Dialect:
    """The words a table definition spells differently per database."""

    big: str
    """A millisecond timestamp or a count that may pass 2**31."""
    blob: str
    """Raw bytes."""
    serial: str
    """An integer primary key the database assigns."""
    without_rowid: str
    """Appended to the table's closing parenthesis where the table needs no row id."""
    refusal: str
    """An append-only trigger refusing a change: ``{trigger} {event} {table} {reason}``."""


SQLITE = Dialect(
    big="INTEGER",
    blob="BLOB",
    serial="INTEGER PRIMARY KEY",
    without_rowid=" WITHOUT ROWID",
    refusal="CREATE TRIGGER {trigger} BEFORE {event} ON {table} BEGIN\n"
    "    SELECT RAISE(ABORT, 'mnesis append-only: {reason}');\nEND;",
)
POSTGRES = Dialect(
    big="BIGINT",
    blob="BYTEA",
    serial="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    without_rowid="",
    refusal="CREATE TRIGGER {trigger} BEFORE {event} ON {table} FOR EACH ROW\n"
    "    EXECUTE FUNCTION mnesis_reject('{reason}');",
)

HISTORY_REFUSALS = (
    ("summaries_no_update", "summaries", "summaries cannot be changed"),
    ("summaries_no_delete", "summaries", "summaries cannot be deleted"),
    ("summary_messages_no_change", "summary_messages", "lineage cannot be changed"),
    ("summary_messages_no_delete", "summary_messages", "lineage cannot be deleted"),
    ("summary_parents_no_change", "summary_parents", "lineage cannot be changed"),
    ("summary_parents_no_delete", "summary_parents", "lineage cannot be deleted"),
    ("sessions_no_delete", "sessions", "sessions cannot be deleted"),
)
"""The append-only triggers of the initial schema that refuse every change, after the
ones of ``messages`` and ``message_parts``: (trigger, table, reason). A trigger named
``*_delete`` fires on DELETE, the others on UPDATE."""

DELETE_GUARDED = (
    ("messages", "messages cannot be deleted"),
    ("message_parts", "message parts cannot be deleted"),
    ("summaries", "summaries cannot be deleted"),
    ("summary_messages", "lineage cannot be deleted"),
    ("summary_parents", "lineage cannot be deleted"),
    ("sessions", "sessions cannot be deleted"),
)
"""The tables whose ``<table>_no_delete`` trigger admits a purge (m003): (table, reason)."""


def refusal(d: Dialect, trigger: str, table: str, reason: str) -> str:
    """The append-only trigger ``trigger`` refusing every delete (a ``*_delete`` trigger)
    or update of ``table`` with ``reason``."""
    event = "DELETE" if trigger.endswith("_delete") else "UPDATE"
    return d.refusal.format(trigger=trigger, event=event, table=table, reason=reason)


def history_refusals(d: Dialect) -> str:
    """The triggers of :data:`HISTORY_REFUSALS`, one after the other (m001)."""
    return "\n".join(refusal(d, *entry) for entry in HISTORY_REFUSALS)


def sessions_table(d: Dialect) -> str:
    """``sessions`` and its indexes (m001)."""
    return f"""CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    parent_id TEXT REFERENCES sessions(id),
    model TEXT NOT NULL,
    agent TEXT NOT NULL DEFAULT 'default',
    system_prompt TEXT NOT NULL DEFAULT '',
    title TEXT,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'closed')),
    config TEXT,
    created_at {d.big} NOT NULL,
    updated_at {d.big} NOT NULL
);
CREATE INDEX sessions_parent_idx ON sessions (parent_id);
CREATE INDEX sessions_created_idx ON sessions (created_at);
"""


def lineage_tables(d: Dialect) -> str:
    """``summary_messages`` and ``summary_parents``, the summary DAG's edges (m001)."""
    return f"""CREATE TABLE summary_messages (
    summary_id TEXT NOT NULL REFERENCES summaries(id),
    message_id TEXT NOT NULL REFERENCES messages(id),
    ordinal INTEGER NOT NULL,
    PRIMARY KEY (summary_id, message_id)
){d.without_rowid};
CREATE INDEX summary_messages_message_idx ON summary_messages (message_id);

CREATE TABLE summary_parents (
    summary_id TEXT NOT NULL REFERENCES summaries(id),
    parent_summary_id TEXT NOT NULL REFERENCES summaries(id),
    ordinal INTEGER NOT NULL,
    PRIMARY KEY (summary_id, parent_summary_id),
    CHECK (summary_id <> parent_summary_id)
){d.without_rowid};
CREATE INDEX summary_parents_parent_idx ON summary_parents (parent_summary_id);
"""


def context_items_table(d: Dialect, item_type: str) -> str:
    """``context_items`` and its indexes (m001); ``item_type`` is that column's type."""
    return f"""CREATE TABLE context_items (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    position {d.big} NOT NULL,
    item_type {item_type},
    message_id TEXT REFERENCES messages(id),
    summary_id TEXT REFERENCES summaries(id),
    tokens {d.big} NOT NULL DEFAULT 0,
    created_at {d.big} NOT NULL,
    PRIMARY KEY (session_id, position),
    CHECK (
        (item_type = 'message' AND message_id IS NOT NULL AND summary_id IS NULL) OR
        (item_type = 'summary' AND summary_id IS NOT NULL AND message_id IS NULL)
    )
){d.without_rowid};
CREATE INDEX context_items_summary_idx ON context_items (session_id, position)
    WHERE item_type = 'summary';
CREATE INDEX context_items_message_idx ON context_items (message_id)
    WHERE message_id IS NOT NULL;
"""


def file_tables(d: Dialect) -> str:
    """``file_references`` and ``compaction_locks`` (m001)."""
    return f"""CREATE TABLE file_references (
    content_id TEXT PRIMARY KEY,
    file_id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    file_type TEXT NOT NULL,
    token_count {d.big} NOT NULL,
    byte_size {d.big},
    exploration_summary TEXT NOT NULL DEFAULT '',
    session_id TEXT,
    created_at {d.big} NOT NULL
);

CREATE TABLE compaction_locks (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    owner TEXT NOT NULL,
    expires_at {d.big} NOT NULL
);
"""


def map_run_tables(d: Dialect) -> str:
    """``map_runs`` and ``map_items``: item state of AgenticMap runs (m002)."""
    return f"""CREATE TABLE map_runs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    created_at {d.big} NOT NULL,
    config TEXT NOT NULL
);
CREATE TABLE map_items (
    run_id TEXT NOT NULL REFERENCES map_runs(id),
    idx INTEGER NOT NULL,
    input TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'running', 'completed', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    output TEXT,
    error TEXT,
    session_id TEXT REFERENCES sessions(id),
    updated_at {d.big} NOT NULL,
    PRIMARY KEY (run_id, idx)
);
CREATE INDEX map_items_state_idx ON map_items (run_id, state);
"""


def import_sources(d: Dialect) -> str:
    """``import_sources``: transcript import progress, one row per imported file (m003)."""
    return f"""CREATE TABLE import_sources (
    source_key TEXT PRIMARY KEY,
    format TEXT NOT NULL,
    path TEXT NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    byte_offset {d.big} NOT NULL DEFAULT 0,
    lines {d.big} NOT NULL DEFAULT 0,
    fingerprint TEXT NOT NULL DEFAULT '',
    messages {d.big} NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT '{{}}',
    updated_at {d.big} NOT NULL
);
CREATE INDEX import_sources_session_idx ON import_sources (session_id);
"""


def vector_tables(d: Dialect) -> str:
    """``part_vectors`` and ``summary_vectors``: embeddings next to their rows (m007)."""
    return _vector_table(
        d,
        "part_vectors",
        "part_id TEXT NOT NULL UNIQUE REFERENCES message_parts(id) ON DELETE CASCADE,\n"
        "    message_id TEXT NOT NULL",
    ) + _vector_table(
        d,
        "summary_vectors",
        "summary_id TEXT NOT NULL UNIQUE REFERENCES summaries(id) ON DELETE CASCADE",
    )


def _vector_table(d: Dialect, table: str, owner: str) -> str:
    return f"""CREATE TABLE {table} (
    id {d.serial},
    {owner},
    session_id TEXT NOT NULL,
    created_at {d.big} NOT NULL,
    model TEXT NOT NULL,
    vector {d.blob} NOT NULL
);
CREATE INDEX {table}_scan_idx ON {table} (session_id, model, id);
"""
