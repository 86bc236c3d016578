"""SQLite: the neighbour context of every indexed part can be rebuilt exactly from the
immutable history (what not storing the ``search_context`` column relies on)."""

from __future__ import annotations

from pathlib import Path

from mnesis.models.ids import new_id
from tests.store.sqlite.history import indexed_as_rebuilt, random_history


async def test_every_stored_context_is_rebuilt_exactly(tmp_path: Path) -> None:
    path = str(tmp_path / "rebuild.db")
    sessions = [new_id("sess") for _ in range(3)]
    await random_history(path, sessions, 300, 17, max_words=200, times=(-(10**12), 4 * 10**12))
    rebuilt = indexed_as_rebuilt(path, sessions)
    assert sum(1 for c in rebuilt.values() if c and "\n" in c) > 200
