"""``used_bytes``: what the store's data occupies, on every backend: it grows with what
is written (free pages on SQLite: ``tests/store/sqlite/test_used_bytes.py``)."""

from __future__ import annotations

from mnesis.store import ImmutableStore
from tests.store.contract.helpers import append_text, new_session


async def test_used_bytes_grows_with_the_data_written(store: ImmutableStore) -> None:
    empty = await store.used_bytes()
    assert empty > 0  # the schema's own pages and relations
    sid = await new_session(store)
    for i in range(40):
        await append_text(store, sid, f"message {i} " + "heron " * 400)
    assert await store.used_bytes() > empty + 40 * 2000
