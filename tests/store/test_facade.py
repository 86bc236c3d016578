"""``ImmutableStore`` checks every argument before any backend code runs.

These tests put a recording double under the facade: what they test is the facade (no
call reaches the backend when an argument is bad), not a database. Behaviour against
real databases is the contract suite in ``tests/store/contract/``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from mnesis.config import MnesisConfig
from mnesis.errors import InvalidArgumentError, MnesisStoreError
from mnesis.models.message import Message
from mnesis.models.parts import TextPart
from mnesis.store import (
    CompactionCommit,
    FileReference,
    ImmutableStore,
    NewMessage,
    SessionRecord,
    SQLiteStore,
    StoreBackend,
    StorePool,
    SummaryRecord,
)
from mnesis.store.base import SearchFilter
from mnesis.store.search_query import SearchQuery, Term


def recording_backend(calls: list[str]) -> StoreBackend:
    """A backend whose every method only records its name."""

    def recorder(name: str) -> Callable[..., Awaitable[Any]]:
        async def method(self: StoreBackend, *args: object, **kwargs: object) -> Any:
            calls.append(name)
            if name == "append_messages":
                return [None]
            return [] if name.startswith(("get_", "list_", "search", "scan")) else None

        return method

    namespace: dict[str, Any] = {name: recorder(name) for name in StoreBackend.__abstractmethods__}
    namespace["location"] = property(lambda self: "recorder.db")
    namespace["map_runs"] = property(lambda self: None)
    return type("RecordingBackend", (StoreBackend,), namespace)()  # type: ignore[no-any-return]


@pytest.fixture
def calls() -> list[str]:
    return []


@pytest.fixture
def store(calls: list[str]) -> ImmutableStore:
    return ImmutableStore.over(recording_backend(calls))


def _message(**fields: Any) -> Message:
    values: dict[str, Any] = {"id": "msg_1", "session_id": "sess_1", "role": "user"}
    values.update(created_at=1, **fields)
    return Message.model_construct(**values)


def _summary(**fields: Any) -> SummaryRecord:
    values: dict[str, Any] = dict(
        id="sum_1",
        session_id="sess_1",
        kind="leaf",
        depth=0,
        level=1,
        content="c",
        token_count=1,
    )
    values.update(fields)
    return SummaryRecord(**values)


def _commit(**fields: Any) -> CompactionCommit:
    values: dict[str, Any] = dict(
        summary=_summary(),
        source_message_ids=["msg_1"],
        parent_summary_ids=[],
        replaced=[(1, "msg_1")],
        context_tokens=3,
        marker=NewMessage(_message(id="msg_2", role="assistant"), [TextPart(text="s")]),
    )
    values.update(fields)
    return CompactionCommit(**values)


QUERY = SearchQuery(all_of=(Term.word("x"),))
Call = Callable[[Any], Awaitable[object]]

BAD_CALLS: dict[str, Call] = {
    "session id not a string": lambda s: s.get_session(42),
    "empty session id": lambda s: s.get_session(""),
    "NUL in a session id": lambda s: s.get_session("sess_\x00"),
    "surrogate in a message id": lambda s: s.get_message("msg_\ud800"),
    "a string as a list of ids": lambda s: s.get_messages_by_ids("msg_1"),
    "a non-string id in a list": lambda s: s.get_summaries(["sum_1", None]),
    "negative limit": lambda s: s.list_sessions(limit=-1),
    "bool as a limit": lambda s: s.get_messages("sess_1", limit=True),
    "negative offset": lambda s: s.list_sessions(offset=-5),
    "unknown session status": lambda s: s.set_session_status("sess_1", "deleted"),
    "session record of the wrong type": lambda s: s.create_session({"id": "sess_1"}),
    "surrogate in a model": lambda s: s.create_session(SessionRecord("sess_1", "m\ud800")),
    "unknown context item type": lambda s: s.get_context_items("sess_1", item_type="tool"),
    "negative before_position": lambda s: s.get_context_items("sess_1", before_position=-1),
    "not a NewMessage in a batch": lambda s: s.append_messages([_message()]),
    "a part that is not a part": lambda s: s.append_message(_message(), ["text"]),
    "negative part token estimate": lambda s: s.append_message(
        _message(), [TextPart(text="x")], part_tokens=[-1]
    ),
    "negative token estimate": lambda s: s.update_message_tokens("msg_1", token_estimate=-3),
    "infinite cost": lambda s: s.update_message_tokens("msg_1", cost=float("inf")),
    "unknown tool state": lambda s: s.update_part_status("part_1", state="exploded"),
    "float tombstone time": lambda s: s.update_part_status("part_1", compacted_at=1.5),
    "short tombstone row": lambda s: s.tombstone_parts([("part_1", 1)], []),
    "a compaction replacing nothing": lambda s: s.commit_compaction(_commit(replaced=[])),
    "unknown summary kind": lambda s: s.commit_compaction(_commit(summary=_summary(kind="huge"))),
    "a marker of another session": lambda s: s.commit_compaction(
        _commit(marker=NewMessage(_message(id="msg_2", session_id="sess_2")))
    ),
    "NaN lock ttl": lambda s: s.acquire_compaction_lock("sess_1", "me", float("nan")),
    "empty lock owner": lambda s: s.release_compaction_lock("sess_1", ""),
    "unknown search scope": lambda s: s.search_text(
        query=QUERY, scope="files", where=SearchFilter(), limit=5
    ),
    "a query string instead of a parsed query": lambda s: s.search_text(
        query="x", scope="messages", where=SearchFilter(), limit=5
    ),
    "a session string in a filter": lambda s: s.scan_text(
        scope="messages", where=SearchFilter(session_ids="sess_1"), before_key=None, limit=5
    ),
    "negative scan key": lambda s: s.scan_text(
        scope="messages", where=SearchFilter(), before_key=-1, limit=5
    ),
    "unknown repaired item type": lambda s: s.replace_context_items("sess_1", [("tool", "x", 1)]),
    "NUL in a backup path": lambda s: s.backup_to("/tmp/b\x00.db"),
    "negative file token count": lambda s: s.store_file_reference(
        FileReference("sha256:00", "file_1", "a.txt", "text", -1)
    ),
}


class TestBadArgumentsNeverReachTheBackend:
    @pytest.mark.parametrize("call", BAD_CALLS.values(), ids=BAD_CALLS.keys())
    async def test_it_is_an_invalid_argument_and_the_backend_is_not_called(
        self, store: ImmutableStore, calls: list[str], call: Call
    ) -> None:
        with pytest.raises(InvalidArgumentError):
            await call(store)
        assert calls == []


class TestGoodArgumentsAreDelegated:
    async def test_each_call_reaches_the_backend_once(
        self, store: ImmutableStore, calls: list[str]
    ) -> None:
        await store.get_session("sess_1")
        await store.append_message(_message(), [TextPart(text="x")], part_tokens=[2])
        await store.commit_compaction(_commit())
        await store.search_text(query=QUERY, scope="messages", where=SearchFilter(), limit=5)
        assert calls == ["get_session", "append_messages", "commit_compaction", "search_text"]


class TestConstruction:
    async def test_the_seeds_construction_style_opens_the_configured_backend(
        self, tmp_path: Path, pool: StorePool
    ) -> None:
        config = MnesisConfig()
        config.store.db_path = str(tmp_path / "seed.db")
        store = ImmutableStore(config.store, pool=pool)
        assert pool.open_count() == 0
        await store.initialize()
        await store.initialize()  # idempotent
        try:
            assert isinstance(store.backend, SQLiteStore)
            assert store.location == str(tmp_path / "seed.db")
            await store.create_session(SessionRecord("sess_1", "m"))
            assert (await store.get_session("sess_1")).model == "m"
            assert pool.open_count() == 1
        finally:
            await store.close()
        assert pool.open_count() == 0

    async def test_a_store_used_before_initialize_says_so(self, tmp_path: Path) -> None:
        store = ImmutableStore(str(tmp_path / "late.db"))
        with pytest.raises(MnesisStoreError, match="initialize"):
            await store.get_session("sess_1")
        assert not (tmp_path / "late.db").exists()

    async def test_a_store_without_a_pool_owns_and_closes_its_database(
        self, tmp_path: Path
    ) -> None:
        store = await ImmutableStore.open(str(tmp_path / "own.db"))
        await store.create_session(SessionRecord("sess_1", "m"))
        await store.close()
        with pytest.raises(MnesisStoreError, match="closed"):
            await store.get_session("sess_1")
        again = await ImmutableStore.open(str(tmp_path / "own.db"))
        try:
            assert (await again.get_session("sess_1")).id == "sess_1"
        finally:
            await again.close()
