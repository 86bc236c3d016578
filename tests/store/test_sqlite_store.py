"""The store contract, and the guarantees the SQLite backend enforces in the database.

Every class that uses the ``store`` fixture is the contract any backend must pass:
the fixture is parametrised over backends (today only ``sqlite``; a PostgreSQL
backend adds a ``postgres`` param that skips when no server is available). Classes
that use ``sqlite_store``/``raw`` check what the SQLite file itself enforces
(triggers, CHECK constraints, the FTS5 index) by talking to it with plain
``sqlite3``, the way any other program could.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path

import pytest

from mnesis.errors import (
    AppendOnlyViolationError,
    CompactionLockedError,
    InvalidArgumentError,
    MessageNotFoundError,
    PartNotFoundError,
    SessionNotFoundError,
    SummaryNotFoundError,
)
from mnesis.models.ids import is_valid_id, new_id
from mnesis.models.message import Message
from mnesis.models.parts import (
    AgentPart,
    CompactionPart,
    FilePart,
    FileRefPart,
    MessagePart,
    PatchPart,
    ReasoningPart,
    RetryPart,
    SnapshotPart,
    StepFinishPart,
    StepStartPart,
    SubtaskPart,
    TextPart,
    ToolPart,
    ToolStatus,
)
from mnesis.models.tokens import TokenUsage
from mnesis.store import (
    CompactionCommit,
    ContextItem,
    FileReference,
    ImmutableStore,
    NewMessage,
    SessionRecord,
    SQLiteStore,
    StorePool,
    SummaryDAGStore,
    SummaryRecord,
)

T0 = 1_700_000_000_000
"""A fixed Unix-ms timestamp: stored values are compared exactly."""

REWRITE_REFUSED = (AppendOnlyViolationError, InvalidArgumentError)
"""A rewrite of a finished tool call is refused by the database (append-only trigger)
or, earlier, by the store's own check (invalid argument); either way nothing changes."""


# -- fixtures ---------------------------------------------------------------


@pytest.fixture(params=["sqlite"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, pool: StorePool
) -> AsyncIterator[ImmutableStore]:
    """A fresh, empty store of each backend."""
    if request.param == "sqlite":
        backend: ImmutableStore = await pool.acquire_sqlite(str(tmp_path / "contract.db"))
    else:  # pragma: no cover - future backends (postgres) plug in here
        pytest.skip(f"backend {request.param} not available")
    yield backend
    await backend.close()


@pytest.fixture
async def sqlite_store(tmp_path: Path, pool: StorePool) -> AsyncIterator[SQLiteStore]:
    s = await pool.acquire_sqlite(str(tmp_path / "sqlite.db"))
    yield s
    await s.close()


@pytest.fixture
def raw(sqlite_store: SQLiteStore) -> Iterator[sqlite3.Connection]:
    """A second, plain sqlite3 connection to the store's file (autocommit)."""
    conn = sqlite3.connect(sqlite_store.path, isolation_level=None)
    yield conn
    conn.close()


# -- helpers ----------------------------------------------------------------


async def new_session(store: ImmutableStore, **fields: object) -> str:
    session_id = new_id("sess")
    await store.create_session(SessionRecord(id=session_id, model="fake/model", **fields))  # type: ignore[arg-type]
    return session_id


def make_message(
    session_id: str, role: str = "user", *, token_estimate: int = 10, **fields: object
) -> Message:
    return Message(
        id=new_id("msg"),
        session_id=session_id,
        role=role,
        created_at=T0,
        token_estimate=token_estimate,
        **fields,
    )


async def append_text(
    store: ImmutableStore, session_id: str, text: str, role: str = "user", tokens: int = 10
) -> str:
    appended = await store.append_message(
        make_message(session_id, role, token_estimate=tokens), [TextPart(text=text)]
    )
    return appended.message_id


def make_commit(
    session_id: str,
    replaced: Sequence[ContextItem],
    *,
    content: str = "the user asked about the config file",
    context_tokens: int = 25,
    source_message_ids: Sequence[str] | None = None,
    parents: Sequence[SummaryRecord] = (),
) -> CompactionCommit:
    """A leaf summary over message items, or a condensed one over ``parents``."""
    summary_id = new_id("sum")
    if parents:
        kind, depth = "condensed", max(p.depth for p in parents) + 1
        span = (parents[0].span_start_message_id, parents[-1].span_end_message_id)
        count = sum(p.source_message_count for p in parents)
        sources: Sequence[str] = []
    else:
        kind, depth = "leaf", 0
        sources = (
            [i.item_id for i in replaced] if source_message_ids is None else source_message_ids
        )
        span = (sources[0], sources[-1])
        count = len(sources)
    record = SummaryRecord(
        id=summary_id,
        session_id=session_id,
        kind=kind,  # type: ignore[arg-type]
        depth=depth,
        level=1,
        content=content,
        token_count=context_tokens - 5,
        file_ids=["file_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
        span_start_message_id=span[0],
        span_end_message_id=span[1],
        source_message_count=count,
        created_at=T0,
    )
    marker = NewMessage(
        make_message(session_id, "assistant", is_summary=True, token_estimate=context_tokens),
        [
            TextPart(text=content, synthetic=True),
            CompactionPart(summary_id=summary_id, level=1, compacted_message_count=count),
        ],
        in_context=False,
    )
    return CompactionCommit(
        summary=record,
        source_message_ids=sources,
        parent_summary_ids=[p.id for p in parents],
        replaced=[(i.position, i.item_id) for i in replaced],
        context_tokens=context_tokens,
        marker=marker,
    )


async def message_items(store: ImmutableStore, session_id: str) -> list[ContextItem]:
    return await store.get_context_items(session_id, item_type="message")


# Every part type, with every field set to a non-default value where it has one.
PART_FACTORIES: dict[str, Callable[[], MessagePart]] = {
    "text": lambda: TextPart(text="hello wörld 🌍 中文", synthetic=True, ignored=True),
    "reasoning": lambda: ReasoningPart(text="first list the files, then grep"),
    "tool-pending": lambda: ToolPart(
        tool_name="bash",
        tool_call_id="call_pending",
        input={"command": "ls", "flags": ["-l", "-a"], "depth": 2},
        title="List files",
        status=ToolStatus(state="pending"),
    ),
    "tool-running": lambda: ToolPart(
        tool_name="bash",
        tool_call_id="call_running",
        input={"command": "make"},
        status=ToolStatus(state="running", started_at=T0 + 1),
    ),
    "tool-completed": lambda: ToolPart(
        tool_name="read_file",
        tool_call_id="call_done",
        input={"path": "src/app.py"},
        output="def main():\n    return 0\n",
        status=ToolStatus(state="completed", started_at=T0 + 1, completed_at=T0 + 2),
    ),
    "tool-error": lambda: ToolPart(
        tool_name="bash",
        tool_call_id="call_error",
        input={"command": "false"},
        error_message="exit status 1",
        status=ToolStatus(state="error", started_at=T0 + 1, completed_at=T0 + 3),
    ),
    "tool-compacted": lambda: ToolPart(
        tool_name="grep",
        tool_call_id="call_compacted",
        input={"pattern": "TODO"},
        output="a.py:1: TODO\n" * 20,
        status=ToolStatus(
            state="completed", started_at=T0 + 1, completed_at=T0 + 2, compacted_at=T0 + 9
        ),
    ),
    "patch": lambda: PatchPart(hash="9f2c1e", files=["src/a.py", "src/b.py"]),
    "file": lambda: FilePart(mime="image/png", filename="cat.png", url="https://example.com/c.png"),
    "file_ref": lambda: FileRefPart(
        content_id="sha256:" + "ab" * 32,
        file_id="file_01ARZ3NDEKTSV4RRFFQ69G5FAV",
        path="data/huge.csv",
        file_type="csv",
        token_count=123_456,
        exploration_summary="columns: id, name, amount",
    ),
    "subtask": lambda: SubtaskPart(prompt="summarise the logs", description="logs", agent="scout"),
    "compaction": lambda: CompactionPart(
        summary_id="sum_01ARZ3NDEKTSV4RRFFQ69G5FAV", level=2, auto=False, compacted_message_count=7
    ),
    "step_start": lambda: StepStartPart(snapshot="snap-1"),
    "step_finish": lambda: StepFinishPart(
        reason="tool_calls",
        cost=0.0125,
        tokens=TokenUsage(input=100, output=20, cache_read=5, cache_write=1, total=126),
    ),
    "snapshot": lambda: SnapshotPart(snapshot="snap-2"),
    "agent": lambda: AgentPart(name="planner"),
    "retry": lambda: RetryPart(attempt=3, error="429 rate limited"),
}


# -- the contract -------------------------------------------------------------


class TestSessions:
    async def test_a_created_session_reads_back_with_all_its_fields(
        self, store: ImmutableStore
    ) -> None:
        parent = await new_session(store)
        child = await new_session(
            store, agent="scout", parent_id=parent, system_prompt="Be brief.", title="Child"
        )
        got = await store.get_session(child)
        assert (got.model, got.agent, got.parent_id, got.system_prompt, got.title) == (
            "fake/model",
            "scout",
            parent,
            "Be brief.",
            "Child",
        )
        assert got.status == "active"
        assert got.created_at > 0 and got.updated_at >= got.created_at

    async def test_an_unknown_session_raises_session_not_found_which_is_a_key_error(
        self, store: ImmutableStore
    ) -> None:
        with pytest.raises(SessionNotFoundError) as info:
            await store.get_session("sess_missing")
        assert isinstance(info.value, KeyError)

    async def test_a_child_of_an_unknown_parent_is_rejected(self, store: ImmutableStore) -> None:
        with pytest.raises(SessionNotFoundError):
            await new_session(store, parent_id="sess_missing")

    async def test_sessions_are_listed_newest_first(self, store: ImmutableStore) -> None:
        ids = []
        for offset in range(3):
            sid = new_id("sess")
            await store.create_session(
                SessionRecord(id=sid, model="m", created_at=T0 + offset, updated_at=T0 + offset)
            )
            ids.append(sid)
        listed = await store.list_sessions()
        assert [s.id for s in listed] == list(reversed(ids))
        assert [s.id for s in await store.list_sessions(limit=1, offset=1)] == [ids[1]]

    async def test_closing_a_session_is_recorded_and_unknown_sessions_are_rejected(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        await store.set_session_status(sid, "closed")
        assert (await store.get_session(sid)).status == "closed"
        with pytest.raises(SessionNotFoundError):
            await store.set_session_status("sess_missing", "closed")


class TestPartRoundTrip:
    @pytest.mark.parametrize("kind", list(PART_FACTORIES))
    async def test_every_part_type_reads_back_exactly_as_written(
        self, store: ImmutableStore, kind: str
    ) -> None:
        sid = await new_session(store)
        part = PART_FACTORIES[kind]()
        appended = await store.append_message(make_message(sid, "assistant"), [part])
        (got,) = (await store.get_message(appended.message_id)).parts
        assert type(got) is type(part)
        assert got.model_dump() == part.model_dump()

    async def test_all_part_types_in_one_message_keep_their_order(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        parts = [factory() for factory in PART_FACTORIES.values()]
        appended = await store.append_message(make_message(sid, "assistant"), parts)
        for got in (
            (await store.get_message(appended.message_id)).parts,
            (await store.get_messages(sid))[0].parts,
            (await store.get_messages_by_ids([appended.message_id]))[0].parts,
        ):
            assert [p.model_dump() for p in got] == [p.model_dump() for p in parts]

    async def test_the_store_assigns_sortable_part_ids_in_order(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        parts = [TextPart(text=str(i)) for i in range(5)]
        appended = await store.append_message(make_message(sid), parts)
        assert all(is_valid_id(pid, "part") for pid in appended.part_ids)
        assert list(appended.part_ids) == [p.id for p in parts]
        assert list(appended.part_ids) == sorted(appended.part_ids)
        stored = await store.get_message(appended.message_id)
        assert [p.id for p in stored.parts] == list(appended.part_ids)

    async def test_a_part_id_given_by_the_caller_is_kept(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        given = new_id("part")
        appended = await store.append_message(make_message(sid), [TextPart(id=given, text="x")])
        assert appended.part_ids == (given,)
        assert (await store.get_message(appended.message_id)).parts[0].id == given

    async def test_appended_parts_follow_the_existing_parts(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        appended = await store.append_message(make_message(sid, "assistant"), [TextPart(text="a")])
        ids = await store.append_parts(
            appended.message_id, [TextPart(text="b"), TextPart(text="c")]
        )
        one = await store.append_part(appended.message_id, TextPart(text="d"))
        stored = await store.get_message(appended.message_id)
        assert [p.text for p in stored.parts] == ["a", "b", "c", "d"]  # type: ignore[union-attr]
        assert [p.id for p in stored.parts][1:] == [*ids, one]

    async def test_appending_parts_to_an_unknown_message_is_rejected(
        self, store: ImmutableStore
    ) -> None:
        with pytest.raises(MessageNotFoundError):
            await store.append_parts("msg_missing", [TextPart(text="x")])

    @pytest.mark.parametrize(
        "text",
        [
            "",
            "nul \x00 inside",
            "lone surrogate \ud83d here",
            "emoji 👩‍💻 and RTL مرحبا",
            "quotes ' \" and backslash \\ and 'sql'); DROP TABLE messages;--",
            "x" * 200_000,
        ],
        ids=["empty", "nul", "surrogate", "emoji-rtl", "sql-quotes", "large"],
    )
    async def test_awkward_text_survives_the_round_trip(
        self, store: ImmutableStore, text: str
    ) -> None:
        sid = await new_session(store)
        mid = await append_text(store, sid, text)
        (part,) = (await store.get_message(mid)).parts
        assert isinstance(part, TextPart) and part.text == text


class TestMessages:
    async def test_message_fields_and_token_usage_read_back_exactly(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        message = make_message(
            sid,
            "assistant",
            agent="coder",
            model_id="gpt-4o",
            provider_id="openai",
            parent_id="msg_01ARZ3NDEKTSV4RRFFQ69G5FAV",
            tokens=TokenUsage(input=1200, output=300, cache_read=50, cache_write=7, total=1557),
            cost=0.0421,
            finish_reason="tool_calls",
            token_estimate=321,
        )
        await store.append_message(message, [TextPart(text="hi")])
        got = (await store.get_message(message.id)).message
        assert got.model_dump() == message.model_dump()

    async def test_each_session_numbers_its_messages_from_one(self, store: ImmutableStore) -> None:
        a, b = await new_session(store), await new_session(store)
        seqs = []
        for sid in (a, b, a, b, a):
            seqs.append((await store.append_message(make_message(sid))).seq)
        assert seqs == [1, 1, 2, 2, 3]
        assert await store.count_messages(a) == 3
        assert await store.count_messages(b) == 2

    async def test_messages_come_back_in_append_order_with_paging(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(6)]
        assert [m.id for m in await store.get_messages(sid)] == ids
        assert [m.id for m in await store.get_messages(sid, after_seq=2, limit=3)] == ids[2:5]

    async def test_messages_by_ids_come_back_in_the_order_asked_and_skip_unknown_ids(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(4)]
        asked = [ids[2], "msg_missing", ids[0], ids[3]]
        got = await store.get_messages_by_ids(asked)
        assert [m.id for m in got] == [ids[2], ids[0], ids[3]]
        assert [m.text for m in got] == ["m2", "m0", "m3"]
        assert await store.get_messages_by_ids([]) == []

    async def test_an_unknown_message_raises_message_not_found(self, store: ImmutableStore) -> None:
        with pytest.raises(MessageNotFoundError) as info:
            await store.get_message("msg_missing")
        assert isinstance(info.value, KeyError)

    async def test_summary_messages_can_be_left_out(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(3)]
        commit = make_commit(sid, (await message_items(store, sid))[:2])
        marker = await store.commit_compaction(commit)
        with_summaries = [m.id for m in await store.get_messages(sid)]
        without = [m.id for m in await store.get_messages(sid, include_summaries=False)]
        assert with_summaries == [*ids, marker.message_id]
        assert without == ids

    async def test_a_message_for_an_unknown_session_is_rejected_and_nothing_is_written(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        batch = [
            NewMessage(make_message(sid), [TextPart(text="ok")]),
            NewMessage(make_message("sess_missing"), [TextPart(text="orphan")]),
        ]
        with pytest.raises(SessionNotFoundError):
            await store.append_messages(batch)
        assert await store.get_messages(sid) == []
        assert await store.get_context_items(sid) == []


class TestTokenAccounting:
    async def test_token_counts_of_a_message_can_be_recorded_after_the_fact(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        mid = await append_text(store, sid, "answer", "assistant")
        usage = TokenUsage(input=900, output=100, cache_read=10, cache_write=2)
        await store.update_message_tokens(
            mid, tokens=usage, cost=0.5, finish_reason="stop", token_estimate=42
        )
        got = (await store.get_message(mid)).message
        assert got.tokens is not None
        assert (got.tokens.input, got.tokens.output, got.tokens.cache_read) == (900, 100, 10)
        assert got.tokens.effective_total() == usage.effective_total()
        assert (got.cost, got.finish_reason, got.token_estimate) == (0.5, "stop", 42)

    async def test_recording_tokens_of_an_unknown_message_is_rejected(
        self, store: ImmutableStore
    ) -> None:
        with pytest.raises(MessageNotFoundError):
            await store.update_message_tokens("msg_missing", cost=1.0)

    async def test_session_usage_is_the_sum_of_every_message_usage(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        appended_usage = TokenUsage(input=10, output=5)
        updated_usage = TokenUsage(input=20, output=8, cache_read=2)
        await store.append_message(make_message(sid, "assistant", tokens=appended_usage))
        mid = await append_text(store, sid, "later", "assistant")
        await store.update_message_tokens(mid, tokens=updated_usage)
        total = await store.session_token_usage(sid)
        assert (total.input, total.output, total.cache_read) == (30, 13, 2)
        assert total.effective_total() == (
            appended_usage.effective_total() + updated_usage.effective_total()
        )


class TestToolLifecycle:
    async def _tool(self, store: ImmutableStore, state: str = "completed") -> tuple[str, str, str]:
        sid = await new_session(store)
        part = ToolPart(
            tool_name="bash",
            tool_call_id="call_1",
            input={"command": "ls"},
            output="a\nb" if state == "completed" else None,
            status=ToolStatus(state=state),
        )
        appended = await store.append_message(make_message(sid, "assistant"), [part])
        return sid, appended.message_id, appended.part_ids[0]

    async def test_a_pending_tool_call_can_be_completed_with_its_output(
        self, store: ImmutableStore
    ) -> None:
        _, mid, pid = await self._tool(store, "pending")
        await store.update_part_status(pid, state="running", started_at=T0 + 1)
        await store.update_part_status(
            pid, state="completed", output="done", completed_at=T0 + 2, token_estimate=7
        )
        (tool,) = (await store.get_message(mid)).tool_parts
        assert tool.output == "done"
        assert tool.status == ToolStatus(state="completed", started_at=T0 + 1, completed_at=T0 + 2)

    async def test_a_running_tool_call_can_end_in_an_error(self, store: ImmutableStore) -> None:
        _, mid, pid = await self._tool(store, "running")
        await store.update_part_status(pid, state="error", error_message="boom")
        (tool,) = (await store.get_message(mid)).tool_parts
        assert (tool.status.state, tool.error_message, tool.output) == ("error", "boom", None)

    async def test_a_tombstone_keeps_the_original_output(self, store: ImmutableStore) -> None:
        _, mid, pid = await self._tool(store)
        await store.update_part_status(pid, compacted_at=T0 + 5)
        (tool,) = (await store.get_message(mid)).tool_parts
        assert tool.compacted_at == T0 + 5
        assert tool.output == "a\nb"

    async def test_a_tombstone_cannot_be_moved(self, store: ImmutableStore) -> None:
        _, mid, pid = await self._tool(store)
        await store.update_part_status(pid, compacted_at=T0 + 5)
        with pytest.raises(AppendOnlyViolationError):
            await store.update_part_status(pid, compacted_at=T0 + 6)
        assert (await store.get_message(mid)).tool_parts[0].compacted_at == T0 + 5

    async def test_the_output_of_a_completed_tool_call_cannot_be_rewritten(
        self, store: ImmutableStore
    ) -> None:
        _, mid, pid = await self._tool(store)
        with pytest.raises(REWRITE_REFUSED):
            await store.update_part_status(pid, output="forged")
        with pytest.raises(REWRITE_REFUSED):
            await store.update_part_status(pid, state="error", error_message="forged")
        (tool,) = (await store.get_message(mid)).tool_parts
        assert (tool.status.state, tool.output, tool.error_message) == ("completed", "a\nb", None)

    async def test_a_finished_tool_call_cannot_be_reopened_to_rewrite_its_output(
        self, store: ImmutableStore
    ) -> None:
        _, mid, pid = await self._tool(store)
        with pytest.raises(REWRITE_REFUSED):
            await store.update_part_status(pid, state="running")
            await store.update_part_status(pid, output="forged")
        (tool,) = (await store.get_message(mid)).tool_parts
        assert (tool.status.state, tool.output) == ("completed", "a\nb")

    async def test_only_tool_parts_have_a_status(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        appended = await store.append_message(make_message(sid), [TextPart(text="x")])
        with pytest.raises(InvalidArgumentError):
            await store.update_part_status(appended.part_ids[0], compacted_at=T0)
        with pytest.raises(PartNotFoundError):
            await store.update_part_status("part_missing", compacted_at=T0)

    async def test_a_tool_call_is_found_by_its_call_id(self, store: ImmutableStore) -> None:
        sid, mid, pid = await self._tool(store, "pending")
        assert await store.find_tool_part(sid, "call_1") == (pid, mid)
        with pytest.raises(PartNotFoundError):
            await store.find_tool_part(sid, "call_unknown")
        with pytest.raises(PartNotFoundError):
            await store.find_tool_part(await new_session(store), "call_1")


class TestContextItems:
    async def test_appended_messages_take_the_next_position_of_their_own_session(
        self, store: ImmutableStore
    ) -> None:
        a, b = await new_session(store), await new_session(store)
        positions: dict[str, list[int | None]] = {a: [], b: []}
        for sid in (a, b, a, a, b, a):
            positions[sid].append((await store.append_message(make_message(sid))).position)
        assert positions == {a: [1, 2, 3, 4], b: [1, 2]}
        assert [i.position for i in await store.get_context_items(a)] == [1, 2, 3, 4]

    async def test_context_items_carry_the_message_role_and_estimate(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        u = await append_text(store, sid, "q", "user", tokens=11)
        a = await append_text(store, sid, "a", "assistant", tokens=22)
        t = await append_text(store, sid, "r", "tool", tokens=33)
        assert await store.get_context_items(sid) == [
            ContextItem(1, "message", u, 11, "user"),
            ContextItem(2, "message", a, 22, "assistant"),
            ContextItem(3, "message", t, 33, "tool"),
        ]

    async def test_a_message_kept_out_of_context_has_no_position(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        appended = await store.append_message(make_message(sid), in_context=False)
        assert appended.position is None
        assert await store.get_context_items(sid) == []
        assert (await store.get_message(appended.message_id)).id == appended.message_id

    async def test_the_context_can_be_paged_newest_first(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(7)]
        page1 = await store.get_context_items(sid, newest_first=True, limit=3)
        page2 = await store.get_context_items(
            sid, newest_first=True, before_position=page1[-1].position, limit=3
        )
        assert [i.item_id for i in page1 + page2] == ids[::-1][:6]

    async def test_the_context_token_total_follows_appends_and_new_estimates(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        assert await store.context_token_total(sid) == 0
        await append_text(store, sid, "a", tokens=10)
        mid = await append_text(store, sid, "b", tokens=15)
        await store.append_message(make_message(sid, token_estimate=99), in_context=False)
        assert await store.context_token_total(sid) == 25
        await store.update_message_tokens(mid, token_estimate=5)
        assert await store.context_token_total(sid) == 15
        assert [i.tokens for i in await store.get_context_items(sid)] == [10, 5]


class TestCompactionCommit:
    async def test_a_commit_swaps_the_replaced_items_for_one_summary(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}", tokens=10) for i in range(5)]
        commit = make_commit(sid, (await message_items(store, sid))[:3], context_tokens=12)
        await store.commit_compaction(commit)
        items = await store.get_context_items(sid)
        assert [(i.item_type, i.item_id) for i in items] == [
            ("summary", commit.summary.id),
            ("message", ids[3]),
            ("message", ids[4]),
        ]
        assert items[0].position == 1 and items[0].tokens == 12
        assert [i.position for i in items] == sorted(i.position for i in items)
        assert await store.context_token_total(sid) == 12 + 20

    async def test_a_commit_writes_the_summary_its_lineage_and_a_marker_outside_the_context(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(3)]
        commit = make_commit(sid, (await message_items(store, sid))[:2])
        marker = await store.commit_compaction(commit)

        summary = await store.get_summary(commit.summary.id)
        assert summary.content == commit.summary.content
        assert (summary.kind, summary.depth, summary.level) == ("leaf", 0, 1)
        assert summary.message_id == marker.message_id
        assert summary.file_ids == commit.summary.file_ids
        assert (summary.span_start_message_id, summary.span_end_message_id) == (ids[0], ids[1])
        assert await store.get_summary_source_ids(summary.id) == ids[:2]
        assert await store.get_summary_parent_ids(summary.id) == []

        assert marker.position is None and marker.seq == 4
        stored_marker = await store.get_message(marker.message_id)
        assert stored_marker.message.is_summary
        assert [p.type for p in stored_marker.parts] == ["text", "compaction"]
        assert list(marker.part_ids) == [p.id for p in stored_marker.parts]
        in_context = {i.item_id for i in await store.get_context_items(sid)}
        assert marker.message_id not in in_context

    async def test_a_condensed_summary_records_its_parents_and_reaches_every_source(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(5)]
        first = make_commit(sid, (await message_items(store, sid))[:2])
        await store.commit_compaction(first)
        second = make_commit(sid, (await message_items(store, sid))[:2])
        await store.commit_compaction(second)
        summaries = await store.get_context_items(sid, item_type="summary")
        assert [s.item_id for s in summaries] == [first.summary.id, second.summary.id]

        parents = await store.get_summaries([first.summary.id, second.summary.id])
        condensed = make_commit(sid, summaries, parents=parents)
        await store.commit_compaction(condensed)
        assert await store.get_summary_parent_ids(condensed.summary.id) == [
            first.summary.id,
            second.summary.id,
        ]
        assert await store.get_summary_source_ids(condensed.summary.id) == []
        dag = SummaryDAGStore(store)
        assert await dag.get_source_message_ids(condensed.summary.id) == ids[:4]
        assert [c.id for c in await dag.get_children(condensed.summary.id)] == [
            first.summary.id,
            second.summary.id,
        ]
        items = await store.get_context_items(sid)
        assert [i.item_id for i in items] == [condensed.summary.id, ids[4]]

    async def test_summaries_come_back_in_the_order_asked_and_unknown_ids_raise(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        for i in range(4):
            await append_text(store, sid, f"m{i}")
        a = make_commit(sid, (await message_items(store, sid))[:1])
        await store.commit_compaction(a)
        b = make_commit(sid, (await message_items(store, sid))[:1])
        await store.commit_compaction(b)
        got = await store.get_summaries([b.summary.id, "sum_missing", a.summary.id])
        assert [s.id for s in got] == [b.summary.id, a.summary.id]
        with pytest.raises(SummaryNotFoundError):
            await store.get_summary("sum_missing")

    async def test_a_commit_over_a_stale_context_is_refused_and_writes_nothing(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        for i in range(4):
            await append_text(store, sid, f"m{i}")
        snapshot = (await message_items(store, sid))[:2]
        winner = make_commit(sid, snapshot)
        loser = make_commit(sid, snapshot)  # read the same items before the winner committed
        await store.commit_compaction(winner)
        context_before = await store.get_context_items(sid)
        messages_before = await store.count_messages(sid)

        with pytest.raises(CompactionLockedError):
            await store.commit_compaction(loser)
        assert await store.get_context_items(sid) == context_before
        assert await store.count_messages(sid) == messages_before
        assert await store.get_summaries([loser.summary.id]) == []
        with pytest.raises(MessageNotFoundError):
            await store.get_message(loser.marker.message.id)

    async def test_a_commit_naming_the_wrong_item_at_a_position_is_refused(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        for i in range(3):
            await append_text(store, sid, f"m{i}")
        items = await message_items(store, sid)
        wrong = [ContextItem(items[0].position, "message", items[1].item_id, 10, "user")]
        with pytest.raises(CompactionLockedError):
            await store.commit_compaction(make_commit(sid, wrong))
        assert await store.get_context_items(sid) == items

    async def test_a_commit_that_replaces_nothing_is_an_invalid_argument(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        mid = await append_text(store, sid, "m")
        with pytest.raises(InvalidArgumentError):
            await store.commit_compaction(make_commit(sid, [], source_message_ids=[mid]))


class TestCompactionLock:
    async def test_a_free_lock_is_taken_and_a_second_owner_is_refused(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        assert await store.acquire_compaction_lock(sid, "worker-a", 60) is True
        assert await store.acquire_compaction_lock(sid, "worker-b", 60) is False

    async def test_the_holder_may_take_its_lock_again(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        assert await store.acquire_compaction_lock(sid, "worker-a", 60)
        assert await store.acquire_compaction_lock(sid, "worker-a", 60)

    async def test_only_the_holder_can_release_the_lock(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        await store.acquire_compaction_lock(sid, "worker-a", 60)
        await store.release_compaction_lock(sid, "worker-b")
        assert await store.acquire_compaction_lock(sid, "worker-b", 60) is False
        await store.release_compaction_lock(sid, "worker-a")
        assert await store.acquire_compaction_lock(sid, "worker-b", 60) is True

    async def test_an_expired_lock_can_be_taken_over(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        assert await store.acquire_compaction_lock(sid, "crashed-worker", -60)
        assert await store.acquire_compaction_lock(sid, "worker-b", 60) is True
        assert await store.acquire_compaction_lock(sid, "crashed-worker", 60) is False

    async def test_locks_of_different_sessions_are_independent(self, store: ImmutableStore) -> None:
        a, b = await new_session(store), await new_session(store)
        assert await store.acquire_compaction_lock(a, "worker-a", 60)
        assert await store.acquire_compaction_lock(b, "worker-b", 60)


class TestFileReferences:
    async def test_a_file_reference_is_found_by_content_id_and_by_file_id(
        self, store: ImmutableStore
    ) -> None:
        ref = FileReference(
            content_id="sha256:" + "cd" * 32,
            file_id=new_id("file"),
            path="logs/app.log",
            file_type="log",
            token_count=50_000,
            exploration_summary="errors at 10:02",
            byte_size=200_000,
        )
        stored = await store.store_file_reference(ref)
        assert stored.file_id == ref.file_id and stored.created_at > 0
        assert await store.get_file_reference(ref.content_id) == stored
        assert await store.get_file_reference(ref.file_id) == stored
        assert await store.get_file_reference("file_missing") is None

    async def test_storing_known_content_again_returns_the_first_reference(
        self, store: ImmutableStore
    ) -> None:
        content_id = "sha256:" + "ef" * 32
        first = await store.store_file_reference(
            FileReference(content_id, new_id("file"), "a.txt", "text", 10)
        )
        again = await store.store_file_reference(
            FileReference(content_id, new_id("file"), "copy/a.txt", "text", 10)
        )
        assert again == first


# -- what the SQLite file enforces by itself ----------------------------------


@pytest.fixture
async def history(sqlite_store: SQLiteStore) -> dict[str, str]:
    """A session with messages, a tool call, two leaf summaries and a condensed one."""
    store = sqlite_store
    sid = await new_session(store)
    mids = [await append_text(store, sid, f"message {i}") for i in range(4)]
    tool = await store.append_message(
        make_message(sid, "assistant"),
        [
            ToolPart(tool_name="bash", tool_call_id="c1", output="out"),
            ToolPart(tool_name="bash", tool_call_id="c2", status=ToolStatus(state="pending")),
        ],
    )
    leaf1 = make_commit(sid, (await message_items(store, sid))[:2])
    await store.commit_compaction(leaf1)
    leaf2 = make_commit(sid, (await message_items(store, sid))[:2])
    await store.commit_compaction(leaf2)
    summaries = await store.get_context_items(sid, item_type="summary")
    condensed = make_commit(
        sid, summaries, parents=await store.get_summaries([i.item_id for i in summaries])
    )
    await store.commit_compaction(condensed)
    return {
        "session": sid,
        "message": mids[0],
        "completed_tool": tool.part_ids[0],
        "pending_tool": tool.part_ids[1],
        "summary": condensed.summary.id,
    }


def _append_only(raw: sqlite3.Connection, sql: str, *args: object) -> None:
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        raw.execute(sql, args)


class TestAppendOnlyEnforcedByTheDatabase:
    @pytest.mark.parametrize(
        "table",
        [
            "messages",
            "message_parts",
            "summaries",
            "summary_messages",
            "summary_parents",
            "sessions",
        ],
    )
    async def test_deleting_history_rows_is_rejected_by_the_database(
        self, raw: sqlite3.Connection, history: dict[str, str], table: str
    ) -> None:
        before = raw.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        assert before > 0
        _append_only(raw, f"DELETE FROM {table}")
        assert raw.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == before

    @pytest.mark.parametrize(
        ("column", "value"),
        [
            ("id", "msg_forged"),
            ("session_id", "sess_other"),
            ("seq", 999),
            ("role", "system"),
            ("is_summary", 1),
            ("agent", "intruder"),
            ("model_id", "other-model"),
            ("provider_id", "other"),
            ("parent_id", "msg_other"),
            ("created_at", 1),
        ],
    )
    async def test_rewriting_a_message_is_rejected_by_the_database(
        self, raw: sqlite3.Connection, history: dict[str, str], column: str, value: object
    ) -> None:
        _append_only(
            raw, f"UPDATE messages SET {column} = ? WHERE id = ?", value, history["message"]
        )

    @pytest.mark.parametrize(
        ("column", "value"),
        [
            ("content", '{"type":"text","text":"forged"}'),
            ("text_content", "forged"),
            ("part_type", "reasoning"),
            ("ordinal", 99),
            ("message_id", "msg_other"),
            ("created_at", 1),
        ],
    )
    async def test_rewriting_a_text_part_is_rejected_by_the_database(
        self, raw: sqlite3.Connection, history: dict[str, str], column: str, value: object
    ) -> None:
        _append_only(
            raw,
            f"UPDATE message_parts SET {column} = ? WHERE message_id = ?",
            value,
            history["message"],
        )

    async def test_rewriting_summaries_and_lineage_is_rejected_by_the_database(
        self, raw: sqlite3.Connection, history: dict[str, str]
    ) -> None:
        _append_only(raw, "UPDATE summaries SET content = 'forged'")
        _append_only(raw, "UPDATE summary_messages SET ordinal = ordinal + 10")
        _append_only(raw, "UPDATE summary_parents SET ordinal = ordinal + 10")

    async def test_token_counts_cost_and_finish_reason_may_change(
        self, raw: sqlite3.Connection, sqlite_store: SQLiteStore, history: dict[str, str]
    ) -> None:
        raw.execute(
            "UPDATE messages SET tokens_input = 5, tokens_output = 6, tokens_total = 11, "
            "cost = 0.1, finish_reason = 'stop', token_estimate = 77 WHERE id = ?",
            (history["message"],),
        )
        got = (await sqlite_store.get_message(history["message"])).message
        assert got.tokens is not None and got.tokens.total == 11
        assert (got.cost, got.finish_reason, got.token_estimate) == (0.1, "stop", 77)

    async def test_a_tool_output_may_be_tombstoned_but_never_cleared_or_moved(
        self, raw: sqlite3.Connection, history: dict[str, str]
    ) -> None:
        part = history["completed_tool"]
        raw.execute("UPDATE message_parts SET compacted_at = ? WHERE id = ?", (T0, part))
        _append_only(raw, "UPDATE message_parts SET compacted_at = NULL WHERE id = ?", part)
        _append_only(raw, "UPDATE message_parts SET compacted_at = ? WHERE id = ?", T0 + 1, part)

    async def test_a_completed_tool_output_cannot_be_changed(
        self, raw: sqlite3.Connection, history: dict[str, str]
    ) -> None:
        part = history["completed_tool"]
        _append_only(
            raw,
            "UPDATE message_parts SET content = replace(content, '\"out\"', '\"forged\"') "
            "WHERE id = ?",
            part,
        )
        _append_only(raw, "UPDATE message_parts SET text_content = 'forged' WHERE id = ?", part)

    async def test_a_finished_tool_call_cannot_be_reopened(
        self, raw: sqlite3.Connection, history: dict[str, str]
    ) -> None:
        # Reopening would make the output writable again (two statements, one rewrite).
        _append_only(
            raw,
            "UPDATE message_parts SET tool_state = 'running' WHERE id = ?",
            history["completed_tool"],
        )

    async def test_a_pending_tool_call_may_be_completed(
        self, raw: sqlite3.Connection, sqlite_store: SQLiteStore, history: dict[str, str]
    ) -> None:
        await sqlite_store.update_part_status(
            history["pending_tool"], state="completed", output="late result", completed_at=T0
        )
        row = raw.execute(
            "SELECT tool_state, completed_at, text_content FROM message_parts WHERE id = ?",
            (history["pending_tool"],),
        ).fetchone()
        assert row[0] == "completed" and row[1] == T0
        assert "late result" in row[2]

    async def test_a_violating_write_through_the_store_raises_append_only_violation(
        self, sqlite_store: SQLiteStore, history: dict[str, str]
    ) -> None:
        with pytest.raises(AppendOnlyViolationError, match="append-only"):
            await sqlite_store.db.write(lambda conn: conn.execute("DELETE FROM messages"))
        assert (await sqlite_store.get_message(history["message"])).id == history["message"]


class TestContextItemConstraints:
    @pytest.mark.parametrize(
        ("item_type", "with_message", "with_summary"),
        [
            ("message", True, True),
            ("message", False, False),
            ("message", False, True),
            ("summary", True, False),
            ("summary", True, True),
            ("other", True, False),
        ],
    )
    async def test_a_row_must_point_at_exactly_one_message_or_summary(
        self,
        raw: sqlite3.Connection,
        history: dict[str, str],
        item_type: str,
        with_message: bool,
        with_summary: bool,
    ) -> None:
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            raw.execute(
                "INSERT INTO context_items (session_id, position, item_type, message_id, "
                "summary_id, tokens, created_at) VALUES (?, 1000, ?, ?, ?, 1, 0)",
                (
                    history["session"],
                    item_type,
                    history["message"] if with_message else None,
                    history["summary"] if with_summary else None,
                ),
            )

    async def test_two_items_cannot_share_a_position(
        self, raw: sqlite3.Connection, history: dict[str, str]
    ) -> None:
        position = raw.execute(
            "SELECT MIN(position) FROM context_items WHERE session_id = ?", (history["session"],)
        ).fetchone()[0]
        with pytest.raises(sqlite3.IntegrityError):
            raw.execute(
                "INSERT INTO context_items (session_id, position, item_type, message_id, tokens, "
                "created_at) VALUES (?, ?, 'message', ?, 1, 0)",
                (history["session"], position, history["message"]),
            )


async def _fts(store: SQLiteStore, table: str, query: str) -> list[int]:
    def _match(conn: sqlite3.Connection) -> list[int]:
        return [
            r[0]
            for r in conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid", (query,)
            )
        ]

    return await store.db.read(_match)


async def _part_rowid(store: SQLiteStore, part_id: str) -> int:
    def _get(conn: sqlite3.Connection) -> int:
        return int(
            conn.execute("SELECT rowid FROM message_parts WHERE id = ?", (part_id,)).fetchone()[0]
        )

    return await store.db.read(_get)


class TestFullTextIndex:
    async def test_text_tool_and_file_parts_are_searchable_right_after_append(
        self, sqlite_store: SQLiteStore
    ) -> None:
        store = sqlite_store
        sid = await new_session(store)
        appended = await store.append_message(
            make_message(sid, "assistant"),
            [
                TextPart(text="the quick zebra jumps"),
                ReasoningPart(text="ponder the okapi"),
                ToolPart(tool_name="grep", tool_call_id="c1", output="found narwhal.py"),
                FileRefPart(content_id="sha256:00", path="docs/axolotl.md"),
                AgentPart(name="pangolin"),
            ],
        )
        rowids = [await _part_rowid(store, pid) for pid in appended.part_ids]
        assert await _fts(store, "message_parts_fts", "zebra") == [rowids[0]]
        assert await _fts(store, "message_parts_fts", "okapi") == [rowids[1]]
        assert await _fts(store, "message_parts_fts", "narwhal") == [rowids[2]]
        assert await _fts(store, "message_parts_fts", "axolotl") == [rowids[3]]
        assert await _fts(store, "message_parts_fts", "pangolin") == []

    async def test_a_completed_tool_output_becomes_searchable(
        self, sqlite_store: SQLiteStore
    ) -> None:
        store = sqlite_store
        sid = await new_session(store)
        appended = await store.append_message(
            make_message(sid, "assistant"),
            [ToolPart(tool_name="bash", tool_call_id="c1", status=ToolStatus(state="pending"))],
        )
        (pid,) = appended.part_ids
        assert await _fts(store, "message_parts_fts", "wombat") == []
        await store.update_part_status(pid, state="completed", output="wombat burrow")
        assert await _fts(store, "message_parts_fts", "wombat") == [await _part_rowid(store, pid)]

    async def test_a_summary_is_searchable_right_after_its_commit(
        self, sqlite_store: SQLiteStore
    ) -> None:
        store = sqlite_store
        sid = await new_session(store)
        for i in range(2):
            await append_text(store, sid, f"m{i}")
        commit = make_commit(sid, await message_items(store, sid), content="capybara migration")
        await store.commit_compaction(commit)

        def _summary_rowid(conn: sqlite3.Connection) -> int:
            return int(
                conn.execute(
                    "SELECT rowid FROM summaries WHERE id = ?", (commit.summary.id,)
                ).fetchone()[0]
            )

        rowid = await store.db.read(_summary_rowid)
        assert await _fts(store, "summaries_fts", "capybara") == [rowid]

    async def test_the_index_matches_its_content_after_appends_completions_and_tombstones(
        self, sqlite_store: SQLiteStore, history: dict[str, str]
    ) -> None:
        store = sqlite_store
        await store.update_part_status(history["pending_tool"], state="completed", output="x y")
        await store.update_part_status(history["completed_tool"], compacted_at=T0)

        def _check(conn: sqlite3.Connection) -> None:
            for table in ("message_parts_fts", "summaries_fts"):
                # rank=1: also compare the index with the rows of its content table
                conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")

        await store.db.write(_check)
