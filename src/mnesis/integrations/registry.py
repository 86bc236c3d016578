"""Where an adapter keeps what its framework names but mnesis does not: for
:mod:`mnesis.integrations.google_adk`, which mnesis session an ADK session ``(app, user,
session)`` is, its ``state``, the sessions of a user, the user and app ``state``; for
:mod:`mnesis.integrations.langgraph_store`, the keys of each namespace.

One row per name in the store's ``import_sources`` table (``format`` the adapter's; the
table keeps progress records keyed by a source, which these are: where a framework's
name stands now). Rows are updated in place; the conversation itself stays append-only in
the sessions they point to. A row belongs to a session (``session_id``): an ADK
session's row to its mnesis session (``mnesis purge`` of that session removes the ADK
session too), the app's and users' rows to the app's *registry session*, an empty
mnesis session made for them.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from mnesis.store.immutable import ImmutableStore
from mnesis.store.records import ImportSource

__all__ = ["Registry", "Row"]

FORMAT = "google-adk"


@dataclass
class Row:
    """One registry row: the session it belongs to and its JSON state."""

    key: str
    session_id: str
    state: dict[str, Any] = field(default_factory=dict)
    count: int = 0
    """Events stored through the row (an ADK session) or imported (a memory copy)."""


def key(kind: str, *names: str, fmt: str = FORMAT) -> str:
    """The row key of ``kind`` (``app``, ``user``, ``session``, ``memory``, ...) for
    ``names`` in the rows of format ``fmt``."""
    return f"{fmt}/{kind}/" + json.dumps(list(names), ensure_ascii=False)


class Registry:
    """Reads and writes registry rows on one store (serialise writers yourself)."""

    def __init__(self, store: ImmutableStore, fmt: str = FORMAT) -> None:
        """Rows of format ``fmt`` on ``store`` (open; closed by the caller)."""
        self.store = store
        self.fmt = fmt

    async def get(self, kind: str, *names: str) -> Row | None:
        """The row of ``kind`` for ``names``, or None."""
        row_key = key(kind, *names, fmt=self.fmt)
        source = await self.store.get_import_source(row_key)
        if source is None:
            return None
        return Row(row_key, source.session_id, dict(source.state), source.messages)

    async def put(self, row: Row) -> None:
        """Write ``row`` (insert or replace)."""
        await self.store.put_import_source(
            ImportSource(
                source_key=row.key,
                format=self.fmt,
                path=row.key,
                session_id=row.session_id,
                messages=row.count,
                state=row.state,
                updated_at=int(time.time() * 1000),
            )
        )
