"""Where :mod:`mnesis.integrations.google_adk` keeps what ADK names but mnesis does not:
which mnesis session an ADK session ``(app, user, session)`` is, its ``state``, the
sessions of a user, the user and app ``state``.

One row per name in the store's ``import_sources`` table (``format="google-adk"``; the
table keeps progress records keyed by a source, which these are: where an ADK name
stands now). Rows are updated in place; the conversation itself stays append-only in
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

__all__ = ["AdkRegistry", "Row"]

FORMAT = "google-adk"


@dataclass
class Row:
    """One registry row: the session it belongs to and its JSON state."""

    key: str
    session_id: str
    state: dict[str, Any] = field(default_factory=dict)
    count: int = 0
    """Events stored through the row (an ADK session) or imported (a memory copy)."""


def key(kind: str, *names: str) -> str:
    """The row key of ``kind`` (``app``, ``user``, ``session``, ``memory``) for ``names``."""
    return f"{FORMAT}/{kind}/" + json.dumps(list(names), ensure_ascii=False)


class AdkRegistry:
    """Reads and writes registry rows on one store (serialise writers yourself)."""

    def __init__(self, store: ImmutableStore) -> None:
        """Rows on ``store`` (open; closed by the caller)."""
        self.store = store

    async def get(self, kind: str, *names: str) -> Row | None:
        """The row of ``kind`` for ``names``, or None."""
        row_key = key(kind, *names)
        source = await self.store.get_import_source(row_key)
        if source is None:
            return None
        return Row(row_key, source.session_id, dict(source.state), source.messages)

    async def put(self, row: Row) -> None:
        """Write ``row`` (insert or replace)."""
        await self.store.put_import_source(
            ImportSource(
                source_key=row.key,
                format=FORMAT,
                path=row.key,
                session_id=row.session_id,
                messages=row.count,
                state=row.state,
                updated_at=int(time.time() * 1000),
            )
        )
