"""The public ``MnesisSession`` API, on real SQLite files with the fake model.

Each class covers one behaviour of the session: its life cycle, a turn through
``send`` and ``stream``, ``record``, tool calls, the assembled context, events,
token accounting, doom-loop detection and what happens when the model fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import typing
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mnesis import (
    CompactionConfig,
    FinishReason,
    MnesisConfig,
    MnesisEvent,
    MnesisSession,
    RecordResult,
    SessionClosedError,
    SessionConfig,
    SessionNotFoundError,
    StoreConfig,
    StorePool,
    TextDelta,
    TextPart,
    TokenUsage,
    ToolPart,
    TurnComplete,
    TurnResult,
)
from mnesis._session.open_options import SessionOpenOptions
from mnesis.errors import (
    InvalidArgumentError,
    LLMError,
    LLMTimeoutError,
    MnesisError,
    PartNotFoundError,
)
from mnesis.llm import (
    Empty,
    Fail,
    FakeLLM,
    Garbage,
    Hang,
    LLMChunk,
    LLMRequest,
    Respond,
    ToolCall,
)
from mnesis.models.parts import RetryPart
from tests.backends import fetch
from tests.store.sqlite.helpers import sqlite_db

NO_AUTO_COMPACTION = MnesisConfig(compaction=CompactionConfig(auto=False))


@pytest.fixture
async def session(db_path: str, pool: StorePool, fake_llm: FakeLLM) -> AsyncIterator[MnesisSession]:
    s = await MnesisSession.create(
        model="fake/api", db_path=db_path, pool=pool, llm=fake_llm, config=NO_AUTO_COMPACTION
    )
    yield s
    await s.close()


def raw_rows(db_path: str, sql: str, *args: object) -> list[tuple[Any, ...]]:
    """Read the file with a separate raw connection (not through mnesis)."""
    return fetch(db_path, sql, *args)


def tool(call_id: str, name: str = "bash", **input: Any) -> ToolPart:
    return ToolPart(tool_name=name, tool_call_id=call_id, input=input, output="ok")


class TestLifecycle:
    async def test_a_created_session_can_be_loaded_by_id(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        created = await MnesisSession.create(
            model="fake/life", agent="planner", db_path=db_path, pool=pool, llm=fake_llm
        )
        await created.close()
        loaded = await MnesisSession.load(created.id, db_path=db_path, pool=pool, llm=fake_llm)
        assert loaded.id == created.id
        assert loaded.id.startswith("sess_")
        assert loaded.model == "fake/life"
        assert await loaded.messages() == []
        await loaded.close()

    async def test_open_yields_an_open_session_and_closes_it_on_exit(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        async with MnesisSession.open(
            model="fake/life", db_path=db_path, pool=pool, llm=fake_llm
        ) as session:
            assert not session.closed
            await session.send("hello")
        assert session.closed
        assert pool.open_count() == 0

    async def test_open_closes_the_session_when_the_body_raises(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        with pytest.raises(RuntimeError, match="boom"):
            async with MnesisSession.open(
                model="fake/life", db_path=db_path, pool=pool, llm=fake_llm
            ) as session:
                raise RuntimeError("boom")
        assert session.closed
        assert pool.open_count() == 0

    async def test_open_with_session_id_reopens_the_stored_session(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        async with MnesisSession.open(
            model="fake/life", db_path=db_path, pool=pool, llm=fake_llm
        ) as first:
            await first.record("question", "answer")
        async with MnesisSession.open(
            session_id=first.id, db_path=db_path, pool=pool, llm=fake_llm
        ) as again:
            assert again.id == first.id
            assert [m.text for m in await again.messages()] == ["question", "answer"]
        assert again.closed

    def test_open_takes_the_keywords_of_create_and_load_typed_as_there(self) -> None:
        create = typing.get_type_hints(MnesisSession.create)
        load = typing.get_type_hints(MnesisSession.load)
        assert all(create[name] == load[name] for name in create.keys() & load.keys())
        parameters = {**create, **load}
        del parameters["return"]
        assert typing.get_type_hints(SessionOpenOptions) == parameters

    async def test_open_passes_the_window_on(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        async with MnesisSession.open(
            model="local/x", db_path=db_path, pool=pool, llm=fake_llm, context_limit=32_000
        ) as session:
            assert session.model_info.context_limit == 32_000
        async with MnesisSession.open(
            session_id=session.id, db_path=db_path, pool=pool, max_output_tokens=1_000
        ) as again:
            assert again.model_info.context_limit == 32_000
            assert again.model_info.max_output_tokens == 1_000

    async def test_session_used_as_async_context_manager_closes_on_exit(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        created = await MnesisSession.create(
            model="fake/life", db_path=db_path, pool=pool, llm=fake_llm
        )
        async with created as session:
            assert session is created
        assert created.closed

    async def test_close_is_idempotent_and_releases_the_store_once(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        first = await MnesisSession.create(
            model="fake/life", db_path=db_path, pool=pool, llm=fake_llm
        )
        second = await MnesisSession.create(
            model="fake/life", db_path=db_path, pool=pool, llm=fake_llm
        )
        await first.close()
        await first.close()
        await first.close(abort_compaction=True)
        # The shared connection must still serve the other session.
        await second.record("still", "working")
        assert [m.text for m in await second.messages()] == ["still", "working"]
        assert pool.open_count() == 1
        await second.close()
        assert pool.open_count() == 0

    async def test_closing_and_loading_do_not_rewrite_the_session_row(
        self, db_path: str, pool: StorePool, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        # A read-only look (load + close) at a session another process is using
        # must not change it.
        await session.close()  # the creating object marks it closed (issue 14)
        before = raw_rows(db_path, "SELECT * FROM sessions WHERE id = ?", session.id)
        assert before[0][6] == "closed"
        loaded = await MnesisSession.load(session.id, db_path=db_path, pool=pool, llm=fake_llm)
        await loaded.close()
        assert raw_rows(db_path, "SELECT * FROM sessions WHERE id = ?", session.id) == before
        again = await MnesisSession.load(session.id, db_path=db_path, pool=pool, llm=fake_llm)
        await again.record("back", "again")
        await again.close()

    async def test_loading_an_unknown_id_raises_session_not_found_which_is_a_key_error(
        self, db_path: str, pool: StorePool
    ) -> None:
        missing = "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"
        with pytest.raises(SessionNotFoundError) as info:
            await MnesisSession.load(missing, db_path=db_path, pool=pool)
        assert isinstance(info.value, KeyError)
        assert missing in str(info.value)
        assert pool.open_count() == 0

    async def test_db_path_together_with_a_config_db_path_raises_value_error(
        self, db_path: str, tmp_path: Any, pool: StorePool
    ) -> None:
        other = str(tmp_path / "other.db")
        config = MnesisConfig(store=StoreConfig(db_path=other))
        with pytest.raises(ValueError, match="db_path"):
            await MnesisSession.create(model="fake/life", db_path=db_path, config=config, pool=pool)
        with pytest.raises(ValueError, match="db_path"):
            await MnesisSession.load(
                "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", db_path=db_path, config=config, pool=pool
            )
        assert pool.open_count() == 0

    async def test_config_db_path_alone_selects_the_file(
        self, tmp_path: Any, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        path = str(tmp_path / "from-config.db")
        config = MnesisConfig(store=StoreConfig(db_path=path))
        async with MnesisSession.open(
            model="fake/life", config=config, pool=pool, llm=fake_llm
        ) as session:
            await session.record("where", "here")
        assert raw_rows(path, "SELECT COUNT(*) FROM messages WHERE session_id = ?", session.id) == [
            (2,)
        ]


class TestSend:
    async def test_send_returns_the_text_tokens_and_finish_reason(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        fake_llm.script(Respond("The config lives in ~/.app/config.toml."))
        result = await session.send("Where is the config file?")
        assert isinstance(result, TurnResult)
        assert result.text == "The config lives in ~/.app/config.toml."
        assert result.finish_reason == FinishReason.STOP
        assert result.tokens.input > 0
        assert result.tokens.output > 0
        assert result.tokens.effective_total() == result.tokens.input + result.tokens.output
        assert result.doom_loop_detected is False
        assert result.tool_calls == []

    async def test_send_stores_the_user_message_and_the_reply(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        fake_llm.script(Respond("Sure."))
        result = await session.send("Please help.")
        user, assistant = await session.messages()
        assert (user.role, user.text) == ("user", "Please help.")
        assert (assistant.role, assistant.text) == ("assistant", "Sure.")
        assert user.id == result.user_message_id
        assert assistant.id == result.message_id
        assert assistant.message.parent_id == user.id
        assert assistant.message.finish_reason == "stop"
        assert assistant.message.tokens == result.tokens

    async def test_send_accepts_a_list_of_parts(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        # Dicts are accepted and validated like parts.
        parts: list[Any] = [TextPart(text="first"), {"type": "text", "text": "second"}]
        await session.send(parts)
        user = (await session.messages())[0]
        assert [p.text for p in user.parts if isinstance(p, TextPart)] == ["first", "second"]
        assert "first\n\nsecond" in fake_llm.calls[0].messages[-1]["content"]

    async def test_the_given_part_objects_are_not_mutated(self, session: MnesisSession) -> None:
        part = TextPart(text="mine")
        await session.send([part])
        assert part.id is None

    async def test_a_sync_on_part_callback_receives_every_delta_in_order(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        fake_llm.chunk_chars = 5
        fake_llm.script(Respond("abcdefghijklmnopqrstuvwxyz"))
        seen: list[TextPart] = []
        result = await session.send("alphabet", on_part=seen.append)
        assert [p.text for p in seen] == ["abcde", "fghij", "klmno", "pqrst", "uvwxy", "z"]
        assert all(isinstance(p, TextPart) for p in seen)
        assert result.text == "abcdefghijklmnopqrstuvwxyz"

    async def test_an_async_on_part_callback_is_awaited_before_send_returns(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        fake_llm.chunk_chars = 4
        fake_llm.script(Respond("async streaming text"))
        seen: list[str] = []

        async def on_part(part: TextPart) -> None:
            await asyncio.sleep(0)
            seen.append(part.text)

        result = await session.send("go", on_part=on_part)
        assert "".join(seen) == result.text == "async streaming text"
        assert len(seen) == 5

    async def test_an_on_part_callback_that_raises_propagates_and_the_session_goes_on(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        def explode(part: TextPart) -> None:
            raise RuntimeError("callback bug")

        with pytest.raises(RuntimeError, match="callback bug"):
            await session.send("first", on_part=explode)
        async with asyncio.timeout(10):  # guards against a turn lock that is never released
            result = await session.send("second")
        assert result.finish_reason == FinishReason.STOP
        users = [m.text for m in await session.messages() if m.role == "user"]
        assert users == ["first", "second"]

    async def test_the_user_message_is_committed_before_the_model_is_called(
        self, db_path: str, pool: StorePool
    ) -> None:
        seen: dict[str, Any] = {}

        def reply(request: LLMRequest) -> str:
            # Runs inside the model call: look at the file through a separate connection.
            seen["users"] = raw_rows(
                db_path,
                "SELECT m.id, p.text_content FROM messages m "
                "JOIN message_parts p ON p.message_id = m.id WHERE m.role = 'user'",
            )
            seen["context"] = raw_rows(
                db_path, "SELECT position, message_id FROM context_items ORDER BY position"
            )
            seen["assistants"] = raw_rows(
                db_path,
                "SELECT m.id, m.parent_id, m.finish_reason, "
                "(SELECT COUNT(*) FROM message_parts p WHERE p.message_id = m.id) "
                "FROM messages m WHERE m.role = 'assistant'",
            )
            return "answer"

        llm = FakeLLM(reply=reply)
        session = await MnesisSession.create(
            model="fake/order", db_path=db_path, pool=pool, llm=llm
        )
        result = await session.send("durable question")
        await session.close()
        assert seen["users"] == [(result.user_message_id, "durable question")]
        assert seen["context"][0] == (1, result.user_message_id)
        # The assistant row exists as a stub (no parts, no finish reason) before streaming.
        assert seen["assistants"] == [(result.message_id, result.user_message_id, None, 0)]

    async def test_the_model_receives_the_system_prompt_and_the_history(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        session = await MnesisSession.create(
            model="fake/ctx",
            db_path=db_path,
            pool=pool,
            llm=fake_llm,
            system_prompt="You are terse.",
        )
        await session.record("earlier question", "earlier answer")
        await session.send("new question")
        await session.send("another", system_prompt="Override for one turn.")
        first, second = fake_llm.calls
        assert first.messages == [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "earlier question"},
            {"role": "assistant", "content": "earlier answer"},
            {"role": "user", "content": "new question"},
        ]
        assert second.messages[0] == {"role": "system", "content": "Override for one turn."}
        # The assistant stub of the running turn is not sent as an empty message.
        assert second.messages[-1] == {"role": "user", "content": "another"}
        await session.close()


class TestStream:
    async def test_stream_yields_text_deltas_in_order_then_one_turn_complete(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        fake_llm.chunk_chars = 3
        fake_llm.script(Respond("streamed reply text"))
        items = [item async for item in session.stream("stream please")]
        assert isinstance(items[-1], TurnComplete)
        deltas = [d for d in items[:-1] if isinstance(d, TextDelta)]
        assert deltas and len(deltas) == len(items) - 1
        result = items[-1].result
        assert "".join(d.text for d in deltas) == result.text == "streamed reply text"
        assert {d.message_id for d in deltas} == {result.message_id}

    async def test_the_assistant_stub_exists_when_the_first_delta_arrives(
        self, session: MnesisSession, fake_llm: FakeLLM, db_path: str
    ) -> None:
        fake_llm.chunk_chars = 2
        fake_llm.script(Respond("slowly"))
        during: list[tuple[Any, ...]] = []
        async for item in session.stream("hi"):
            if isinstance(item, TextDelta) and not during:
                during = raw_rows(
                    db_path,
                    "SELECT role, finish_reason, "
                    "(SELECT COUNT(*) FROM message_parts p WHERE p.message_id = m.id) "
                    "FROM messages m WHERE id = ?",
                    item.message_id,
                )
        assert during == [("assistant", None, 0)]
        assistant = (await session.messages())[1]
        assert (assistant.text, assistant.message.finish_reason) == ("slowly", "stop")

    async def test_a_stream_closed_early_keeps_the_partial_text_and_frees_the_session(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        fake_llm.chunk_chars = 4
        fake_llm.script(Respond("part one, part two, part three"))
        stream: Any = session.stream("abandon me")  # an async generator: it has aclose()
        async with contextlib.aclosing(stream):
            async for item in stream:
                assert isinstance(item, TextDelta)
                assert item.text == "part"
                break
        user, assistant = await session.messages()
        assert user.text == "abandon me"
        assert assistant.message.finish_reason == "error"
        assert isinstance(assistant.parts[0], TextPart)
        assert assistant.parts[0].text == "part"
        assert isinstance(assistant.parts[-1], RetryPart)
        async with asyncio.timeout(10):
            result = await session.send("next")
        assert result.finish_reason == FinishReason.STOP

    async def test_a_cancelled_send_keeps_the_partial_text_and_releases_the_session(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        fake_llm.chunk_chars = 4
        fake_llm.delay_seconds = 0.01
        reply = "one two three four five six seven"
        fake_llm.script(Respond(reply), Respond("after"))
        first_delta = asyncio.Event()
        task = asyncio.create_task(session.send("cancel me", on_part=lambda p: first_delta.set()))
        await first_delta.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        user, stub = await session.messages()
        assert user.text == "cancel me"
        assert stub.message.finish_reason == "error"
        assert stub.text and reply.startswith(stub.text) and stub.text != reply
        assert isinstance(stub.parts[-1], RetryPart)
        async with asyncio.timeout(10):
            result = await session.send("next")
        assert result.text == "after"

    async def test_a_cancellation_that_meets_the_next_chunk_still_cancels_the_send(
        self, db_path: str, pool: StorePool
    ) -> None:
        started, release = asyncio.Event(), asyncio.Event()

        class Gated:
            async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
                started.set()
                await release.wait()
                yield LLMChunk(text="late", finish_reason="stop")

        session = await MnesisSession.create(
            model="gated/x", db_path=db_path, pool=pool, llm=Gated()
        )
        try:
            task = asyncio.create_task(session.send("hi"))
            await started.wait()
            release.set()  # the chunk arrives in the same loop step as the cancellation:
            task.cancel()  # Python 3.11's asyncio.wait_for would return it and lose the cancel
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            await session.close()


class TestRecord:
    async def test_record_with_tool_parts_stores_both_messages_with_matching_ids(
        self, session: MnesisSession
    ) -> None:
        call = ToolPart(
            tool_name="read_file",
            tool_call_id="call_7",
            input={"path": "src/app.py", "lines": [1, 20]},
            output="def main():\n    pass\n",
        )
        result = await session.record(
            "Show me app.py",
            [TextPart(text="Reading it."), call],
            tokens=TokenUsage(input=120, output=30, total=150),
            finish_reason=FinishReason.TOOL_CALLS,
        )
        assert isinstance(result, RecordResult)
        user, assistant = await session.messages()
        assert user.id == result.user_message_id
        assert assistant.id == result.assistant_message_id
        assert assistant.message.parent_id == user.id
        assert assistant.message.finish_reason == "tool_calls"
        assert assistant.message.tokens == TokenUsage(input=120, output=30, total=150)
        assert result.tokens == TokenUsage(input=120, output=30, total=150)
        assert assistant.text == "Reading it."
        [stored] = assistant.tool_parts
        assert stored.tool_name == "read_file"
        assert stored.tool_call_id == "call_7"
        assert stored.input == {"path": "src/app.py", "lines": [1, 20]}
        assert stored.output == "def main():\n    pass\n"
        assert stored.status.state == "completed"
        assert stored.id is not None and stored.id.startswith("part_")

    @pytest.mark.sqlite_only("traces the statements of the SQLite connection")
    async def test_record_writes_both_messages_in_one_transaction(
        self, session: MnesisSession
    ) -> None:
        statements: list[str] = []

        def trace(conn: sqlite3.Connection) -> None:
            conn.set_trace_callback(statements.append)

        await sqlite_db(session.store).read(trace)
        try:
            await session.record("q", [TextPart(text="a"), tool("c1")])
        finally:
            await sqlite_db(session.store).read(lambda conn: conn.set_trace_callback(None))
        transaction = 0
        open_tx = False
        # Since m010 the context view's rows are stored in context_slots, which the
        # SQLite appends write directly.
        where: dict[str, list[int]] = {"messages": [], "context_slots": [], "message_parts": []}
        for sql in statements:
            word = sql.strip().upper()
            if word.startswith("BEGIN"):
                transaction += 1
                open_tx = True
            elif word.startswith(("COMMIT", "ROLLBACK")):
                open_tx = False
            for table in where:
                if word.startswith(f"INSERT INTO {table.upper()} "):
                    assert open_tx, f"insert into {table} outside a transaction"
                    where[table].append(transaction)
        assert len(where["messages"]) == 2
        assert len(where["context_slots"]) == 2
        every = where["messages"] + where["context_slots"] + where["message_parts"]
        assert len(set(every)) == 1, "the turn was split over several transactions"

    async def test_record_estimates_tokens_when_none_are_given(
        self, session: MnesisSession
    ) -> None:
        result = await session.record("a question", "an answer")
        assert result.tokens.input > 0
        assert result.tokens.output > 0
        assert result.compaction_triggered is False
        assert result.doom_loop_detected is False

    async def test_record_puts_both_messages_in_the_context(
        self, session: MnesisSession, db_path: str
    ) -> None:
        result = await session.record("q1", "a1")
        items = raw_rows(
            db_path,
            "SELECT position, message_id, tokens FROM context_items WHERE session_id = ? "
            "ORDER BY position",
            session.id,
        )
        assert [(p, m) for p, m, _ in items] == [
            (1, result.user_message_id),
            (2, result.assistant_message_id),
        ]
        assert session.context_tokens == sum(t for _, _, t in items)


class TestToolCalls:
    async def test_send_returns_the_pending_tool_calls_the_model_asked_for(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        fake_llm.script(
            Respond("Let me look.", tool_calls=(ToolCall("call_1", "bash", {"cmd": "ls"}),))
        )
        result = await session.send("What is in the folder?")
        assert result.finish_reason == FinishReason.TOOL_CALLS
        [call] = result.tool_calls
        assert (call.tool_name, call.tool_call_id, call.input) == ("bash", "call_1", {"cmd": "ls"})
        assert call.status.state == "pending"
        stored = (await session.messages())[1].tool_parts
        assert [(p.tool_call_id, p.status.state) for p in stored] == [("call_1", "pending")]

    async def test_complete_tool_call_stores_the_output_and_updates_the_context(
        self, session: MnesisSession, fake_llm: FakeLLM, db_path: str
    ) -> None:
        fake_llm.script(
            Respond("Looking.", tool_calls=(ToolCall("call_1", "bash", {"cmd": "ls"}),))
        )
        result = await session.send("List files")
        before = session.context_tokens
        await session.complete_tool_call("call_1", output="README.md\nsetup.py")
        [part] = (await session.messages())[1].tool_parts
        assert part.status.state == "completed"
        assert part.output == "README.md\nsetup.py"
        assert part.status.completed_at is not None
        assert session.context_tokens > before
        context = await session.context_for_next_turn()
        assert "README.md\nsetup.py" in context[-1]["content"]
        estimate, tokens = raw_rows(
            db_path,
            "SELECT m.token_estimate, c.tokens FROM messages m "
            "JOIN context_items c ON c.message_id = m.id WHERE m.id = ?",
            result.message_id,
        )[0]
        assert estimate == tokens
        assert (
            session.context_tokens
            == raw_rows(
                db_path, "SELECT SUM(tokens) FROM context_items WHERE session_id = ?", session.id
            )[0][0]
        )

    async def test_complete_tool_call_with_an_error_marks_the_call_failed(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        fake_llm.script(Respond("", tool_calls=(ToolCall("call_9", "http_get", {"url": "x"}),)))
        await session.send("Fetch it")
        await session.complete_tool_call("call_9", error="connection refused")
        [part] = (await session.messages())[1].tool_parts
        assert part.status.state == "error"
        assert part.error_message == "connection refused"
        context = await session.context_for_next_turn()
        assert "Error: connection refused" in context[-1]["content"]

    async def test_a_completed_tool_call_survives_reopening(
        self, session: MnesisSession, fake_llm: FakeLLM, db_path: str, pool: StorePool
    ) -> None:
        fake_llm.script(Respond("On it.", tool_calls=(ToolCall("call_2", "grep", {"q": "x"}),)))
        await session.send("Search")
        await session.complete_tool_call("call_2", output="3 matches")
        await session.close()
        loaded = await MnesisSession.load(session.id, db_path=db_path, pool=pool, llm=fake_llm)
        [part] = (await loaded.messages())[1].tool_parts
        assert (part.status.state, part.output) == ("completed", "3 matches")
        await loaded.close()

    async def test_completing_an_unknown_tool_call_raises_part_not_found(
        self, session: MnesisSession
    ) -> None:
        with pytest.raises(PartNotFoundError) as info:
            await session.complete_tool_call("no_such_call", output="x")
        assert isinstance(info.value, KeyError)

    @pytest.mark.parametrize("kwargs", [{}, {"output": "a", "error": "b"}])
    async def test_complete_tool_call_needs_exactly_one_of_output_or_error(
        self, session: MnesisSession, fake_llm: FakeLLM, kwargs: dict[str, str]
    ) -> None:
        fake_llm.script(Respond("", tool_calls=(ToolCall("call_3", "bash", {}),)))
        await session.send("run")
        with pytest.raises(InvalidArgumentError):
            await session.complete_tool_call("call_3", **kwargs)
        [part] = (await session.messages())[1].tool_parts
        assert part.status.state == "pending"

    async def test_completing_a_tool_call_twice_is_refused_and_keeps_the_first_result(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        fake_llm.script(Respond("", tool_calls=(ToolCall("call_4", "bash", {}),)))
        await session.send("run")
        await session.complete_tool_call("call_4", output="first")
        with pytest.raises(MnesisError):
            await session.complete_tool_call("call_4", output="second")
        [part] = (await session.messages())[1].tool_parts
        assert part.output == "first"


class TestContextForNextTurn:
    async def test_it_is_a_list_of_role_and_content_dicts_starting_with_the_system_prompt(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        session = await MnesisSession.create(
            model="fake/ctx", db_path=db_path, pool=pool, llm=fake_llm, system_prompt="Be brief."
        )
        await session.record("q1", "a1")
        await session.record("q2", [TextPart(text="a2"), tool("c1", cmd="ls")])
        context = await session.context_for_next_turn(format="text")
        assert all(set(m) == {"role", "content"} for m in context)
        assert [m["role"] for m in context] == ["system", "user", "assistant", "user", "assistant"]
        assert context[0]["content"] == "Be brief."
        assert [m["content"] for m in context[1:4]] == ["q1", "a1", "q2"]
        assert context[4]["content"].startswith("a2\n\n[Tool: bash] id=c1")
        assert '"cmd": "ls"' in context[4]["content"]
        override = await session.context_for_next_turn(system_prompt="Other prompt.", format="text")
        assert override[0] == {"role": "system", "content": "Other prompt."}
        assert override[1:] == context[1:]
        await session.close()

    async def test_a_new_session_has_only_the_system_prompt(self, session: MnesisSession) -> None:
        context = await session.context_for_next_turn()
        assert context == [{"role": "system", "content": "You are a helpful assistant."}]


class TestMessagesAndConversation:
    @pytest.fixture
    def compacting_config(self) -> MnesisConfig:
        return MnesisConfig(
            compaction=CompactionConfig(
                auto=False,
                fresh_tail_count=2,
                leaf_target_tokens=64,
                compaction_model="extractive",
            )
        )

    async def test_messages_include_summaries_and_conversation_messages_do_not(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM, compacting_config: MnesisConfig
    ) -> None:
        session = await MnesisSession.create(
            model="fake/sum", db_path=db_path, pool=pool, llm=fake_llm, config=compacting_config
        )
        for i in range(6):
            await session.record(f"question {i} " + "lorem ipsum " * 30, f"answer {i} " * 30)
        assert await session.messages() == await session.conversation_messages()
        result = await session.compact()
        assert result.level_used > 0
        everything = await session.messages()
        conversation = await session.conversation_messages()
        summaries = [m for m in everything if m.message.is_summary]
        assert [m.id for m in summaries] == [result.summary_message_id]
        assert [m.id for m in everything if not m.message.is_summary] == [
            m.id for m in conversation
        ]
        assert len(conversation) == 12
        assert not any(m.message.is_summary for m in conversation)
        assert [m.role for m in conversation] == ["user", "assistant"] * 6
        await session.close()


class TestHistory:
    async def test_history_has_one_snapshot_per_turn_in_order(self, session: MnesisSession) -> None:
        sent = await session.send("one")
        recorded = await session.record("two", "2")
        history = session.history()
        assert [h.turn_index for h in history] == [0, 1]
        assert (history[0].user_message_id, history[0].assistant_message_id) == (
            sent.user_message_id,
            sent.message_id,
        )
        assert (history[1].user_message_id, history[1].assistant_message_id) == (
            recorded.user_message_id,
            recorded.assistant_message_id,
        )
        assert history[0].tokens == sent.tokens
        assert history[0].context.total > 0

    async def test_history_returns_a_copy(self, session: MnesisSession) -> None:
        await session.record("q", "a")
        session.history().clear()
        assert len(session.history()) == 1

    async def test_a_loaded_session_starts_with_an_empty_history(
        self, session: MnesisSession, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        await session.record("q", "a")
        loaded = await MnesisSession.load(session.id, db_path=db_path, pool=pool, llm=fake_llm)
        assert loaded.history() == []
        await loaded.close()


class TestEvents:
    async def test_a_turn_publishes_user_then_assistant_message_created(
        self, session: MnesisSession
    ) -> None:
        events: list[tuple[MnesisEvent, dict[str, Any]]] = []
        session.subscribe(None, lambda event, payload: events.append((event, payload)))
        result = await session.send("hello")
        assert [(e, p["role"], p["message_id"]) for e, p in events] == [
            (MnesisEvent.MESSAGE_CREATED, "user", result.user_message_id),
            (MnesisEvent.MESSAGE_CREATED, "assistant", result.message_id),
        ]
        assert all(p["session_id"] == session.id for _, p in events)

    async def test_record_publishes_the_same_events_as_send(self, session: MnesisSession) -> None:
        events: list[tuple[str, str]] = []
        session.subscribe(
            MnesisEvent.MESSAGE_CREATED, lambda e, p: events.append((p["role"], p["message_id"]))
        )
        result = await session.record("q", "a")
        assert events == [
            ("user", result.user_message_id),
            ("assistant", result.assistant_message_id),
        ]

    async def test_close_publishes_session_closed_last(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        session = await MnesisSession.create(
            model="fake/ev", db_path=db_path, pool=pool, llm=fake_llm
        )
        events: list[MnesisEvent] = []
        session.subscribe(None, lambda e, p: events.append(e))
        await session.send("hi")
        await session.close()
        await session.close()
        assert events == [
            MnesisEvent.MESSAGE_CREATED,
            MnesisEvent.MESSAGE_CREATED,
            MnesisEvent.SESSION_CLOSED,
        ]

    async def test_a_handler_only_receives_the_event_it_subscribed_to(
        self, session: MnesisSession
    ) -> None:
        closed: list[MnesisEvent] = []
        session.subscribe(MnesisEvent.DOOM_LOOP_DETECTED, lambda e, p: closed.append(e))
        await session.record("q", "a")
        assert closed == []

    async def test_async_handlers_run_and_a_failing_handler_does_not_break_the_turn(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        session = await MnesisSession.create(
            model="fake/ev", db_path=db_path, pool=pool, llm=fake_llm
        )
        seen: list[str] = []

        async def on_message(event: MnesisEvent, payload: dict[str, Any]) -> None:
            await asyncio.sleep(0)
            seen.append(payload["role"])

        def broken(event: MnesisEvent, payload: dict[str, Any]) -> None:
            raise RuntimeError("handler bug")

        session.subscribe(MnesisEvent.MESSAGE_CREATED, broken)
        session.subscribe(MnesisEvent.MESSAGE_CREATED, on_message)
        result = await session.send("hi")
        assert result.text
        await session.close()  # drains scheduled handlers
        assert seen == ["user", "assistant"]


class TestTokenUsage:
    async def test_token_usage_accumulates_over_sends_and_records(
        self, session: MnesisSession
    ) -> None:
        assert session.token_usage == TokenUsage()
        first = await session.send("one")
        second = await session.record("two", "2", tokens=TokenUsage(input=7, output=3, total=10))
        third = await session.send("three")
        expected = first.tokens + second.tokens + third.tokens
        assert session.token_usage == expected
        assert session.token_usage.total == (
            first.tokens.effective_total() + 10 + third.tokens.effective_total()
        )

    async def test_token_usage_survives_load(
        self, session: MnesisSession, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        await session.send("one")
        await session.record("two", "2")
        await session.record("three", "3", tokens=TokenUsage(input=5, output=6, total=11))
        usage = session.token_usage
        await session.close()
        loaded = await MnesisSession.load(session.id, db_path=db_path, pool=pool, llm=fake_llm)
        assert loaded.token_usage == usage
        await loaded.close()

    async def test_token_usage_given_without_a_total_survives_load(
        self, session: MnesisSession, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        await session.record("q", "a", tokens=TokenUsage(input=10, output=5))
        usage = session.token_usage
        assert usage.effective_total() == 15
        await session.close()
        loaded = await MnesisSession.load(session.id, db_path=db_path, pool=pool, llm=fake_llm)
        assert loaded.token_usage == usage
        await loaded.close()

    async def test_a_failed_turn_adds_no_token_usage(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        fake_llm.script(Fail("down"))
        with pytest.raises(LLMError):
            await session.send("q")
        assert session.token_usage == TokenUsage()


class TestClosedSession:
    @pytest.mark.parametrize(
        "call",
        [
            lambda s: s.send("hi"),
            lambda s: s.record("q", "a"),
            lambda s: s.complete_tool_call("c1", output="x"),
            lambda s: s.context_for_next_turn(),
            lambda s: s.compact(),
        ],
        ids=["send", "record", "complete_tool_call", "context_for_next_turn", "compact"],
    )
    async def test_calls_on_a_closed_session_raise_session_closed(
        self, session: MnesisSession, db_path: str, call: Any
    ) -> None:
        await session.close()
        with pytest.raises(SessionClosedError):
            await call(session)
        assert raw_rows(db_path, "SELECT COUNT(*) FROM messages") == [(0,)]

    async def test_stream_on_a_closed_session_raises_session_closed(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        await session.close()
        with pytest.raises(SessionClosedError):
            async for _ in session.stream("hi"):
                pass
        assert fake_llm.calls == []


class TestDoomLoop:
    async def test_three_identical_tool_calls_in_a_row_are_detected(
        self, session: MnesisSession
    ) -> None:
        events: list[dict[str, Any]] = []
        session.subscribe(MnesisEvent.DOOM_LOOP_DETECTED, lambda e, p: events.append(p))
        results = [
            await session.record(f"try {i}", [tool(f"c{i}", cmd="make test")]) for i in range(3)
        ]
        assert [r.doom_loop_detected for r in results] == [False, False, True]
        assert len(events) == 1
        assert events[0]["tool_name"] == "bash"
        assert events[0]["input"] == {"cmd": "make test"}
        assert events[0]["count"] == 3
        assert events[0]["session_id"] == session.id

    async def test_different_tool_calls_are_not_a_doom_loop(self, session: MnesisSession) -> None:
        events: list[dict[str, Any]] = []
        session.subscribe(MnesisEvent.DOOM_LOOP_DETECTED, lambda e, p: events.append(p))
        results = [
            await session.record("go", [tool("c1", cmd="ls")]),
            await session.record("go", [tool("c2", cmd="pwd")]),
            await session.record("go", [tool("c3", name="grep", cmd="ls")]),
            await session.record("go", [tool("c4", cmd="ls")]),
        ]
        assert not any(r.doom_loop_detected for r in results)
        assert events == []

    async def test_a_different_call_in_between_breaks_the_streak(
        self, session: MnesisSession
    ) -> None:
        results = [
            await session.record("go", [tool("c1", cmd="ls")]),
            await session.record("go", [tool("c2", cmd="ls")]),
            await session.record("go", [tool("c3", cmd="pwd")]),
            await session.record("go", [tool("c4", cmd="ls")]),
        ]
        assert not any(r.doom_loop_detected for r in results)

    async def test_tool_calls_returned_by_the_model_are_checked_too(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        events: list[MnesisEvent] = []
        session.subscribe(None, lambda e, p: events.append(e))
        for i in range(3):
            fake_llm.script(Respond("", tool_calls=(ToolCall(f"call_{i}", "search", {"q": "x"}),)))
        results = [await session.send(f"attempt {i}") for i in range(3)]
        assert [r.doom_loop_detected for r in results] == [False, False, True]
        assert events.count(MnesisEvent.DOOM_LOOP_DETECTED) == 1

    async def test_the_threshold_comes_from_the_config(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        config = MnesisConfig(session=SessionConfig(doom_loop_threshold=2))
        session = await MnesisSession.create(
            model="fake/doom", db_path=db_path, pool=pool, llm=fake_llm, config=config
        )
        first = await session.record("go", [tool("c1", cmd="ls")])
        second = await session.record("go", [tool("c2", cmd="ls")])
        assert (first.doom_loop_detected, second.doom_loop_detected) == (False, True)
        await session.close()


class TestModelFailures:
    async def test_a_failing_model_raises_llm_error_and_keeps_the_user_message_and_stub(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        fake_llm.script(Fail("rate limited"))
        with pytest.raises(LLMError, match="rate limited"):
            await session.send("important question")
        user, stub = await session.messages()
        assert user.text == "important question"
        assert stub.role == "assistant"
        assert stub.message.parent_id == user.id
        assert stub.message.finish_reason == "error"
        [retry] = stub.parts
        assert isinstance(retry, RetryPart)
        assert "rate limited" in retry.error
        assert session.history() == []

    async def test_text_streamed_before_a_failure_is_kept_with_the_retry_part(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        fake_llm.script(Fail("connection reset", after_chars=12))
        with pytest.raises(LLMError):
            await session.send("q")
        stub = (await session.messages())[1]
        assert [type(p) for p in stub.parts] == [TextPart, RetryPart]
        assert stub.text == "x" * 12

    async def test_the_session_is_usable_after_a_model_failure(
        self, session: MnesisSession, fake_llm: FakeLLM
    ) -> None:
        fake_llm.script(Fail("boom"), Respond("recovered"))
        with pytest.raises(LLMError):
            await session.send("first")
        result = await session.send("second")
        assert result.text == "recovered"
        assert [m.role for m in await session.messages()] == ["user", "assistant"] * 2

    async def test_a_hanging_model_times_out_without_leaving_half_written_rows(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        config = MnesisConfig(
            session=SessionConfig(model_timeout_seconds=0.2),
            compaction=CompactionConfig(auto=False),
        )
        session = await MnesisSession.create(
            model="fake/hang", db_path=db_path, pool=pool, llm=fake_llm, config=config
        )
        fake_llm.script(Hang(), Respond("back again"))
        with pytest.raises(LLMTimeoutError) as info:
            await session.send("are you there?")
        assert isinstance(info.value, TimeoutError)
        assert isinstance(info.value, LLMError)
        assert fake_llm.in_flight == 0
        user, stub = await session.messages()
        assert user.text == "are you there?"
        assert stub.message.finish_reason == "error"
        assert [type(p) for p in stub.parts] == [RetryPart]
        assert raw_rows(db_path, "SELECT COUNT(*) FROM messages") == [(2,)]
        assert raw_rows(db_path, "SELECT COUNT(*) FROM context_items") == [(2,)]
        result = await session.send("and now?")
        assert result.text == "back again"
        assert result.finish_reason == FinishReason.STOP
        await session.close()

    async def test_garbage_from_the_model_is_stored_and_read_back_exactly(
        self, session: MnesisSession, fake_llm: FakeLLM, db_path: str, pool: StorePool
    ) -> None:
        expected = "".join(
            [
                chunk.text
                async for chunk in FakeLLM()
                .script(Garbage(chars=3000, seed=7))
                .stream(LLMRequest(model="fake/x", messages=[]))
            ]
        )
        assert "\x00" in expected and "\u202e" in expected
        fake_llm.script(Garbage(chars=3000, seed=7))
        result = await session.send("say something")
        assert result.text == expected
        await session.close()
        loaded = await MnesisSession.load(
            session.id, db_path=db_path, pool=StorePool(), llm=fake_llm
        )
        assert (await loaded.messages())[1].text == expected
        context = await loaded.context_for_next_turn()
        assert context[-1] == {"role": "assistant", "content": expected}
        await loaded.close()

    async def test_an_empty_reply_is_stored_as_an_assistant_message_without_text(
        self, session: MnesisSession, fake_llm: FakeLLM, db_path: str, pool: StorePool
    ) -> None:
        fake_llm.script(Empty())
        result = await session.send("say nothing")
        assert result.text == ""
        assert result.finish_reason == FinishReason.STOP
        await session.close()
        loaded = await MnesisSession.load(session.id, db_path=db_path, pool=pool, llm=fake_llm)
        user, assistant = await loaded.messages()
        assert user.id == result.user_message_id
        assert assistant.id == result.message_id
        assert assistant.text == ""
        assert assistant.parts == []
        assert assistant.message.finish_reason == "stop"
        follow_up = await loaded.send("hello?")
        assert follow_up.text
        await loaded.close()
