"""AgenticMap: one real sub-session per input on a real store (both backends), the item state
table, read-only sub-agents, multi-turn tool loops, retries, and resuming a run
that a SIGKILL interrupted (each item completes exactly once).

Everything runs on :class:`FakeLLM`; no test asserts on timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from mnesis import (
    EventBus,
    InvalidArgumentError,
    MnesisConfig,
    MnesisEvent,
    MnesisSession,
    OperatorConfig,
    SessionNotFoundError,
    StorePool,
)
from mnesis.llm import Fail, FakeLLM, LLMRequest, Respond, ToolCall
from mnesis.models.ids import new_id
from mnesis.operators import AgenticMap, AgentMapBatch
from tests.backends import fetch, file_is_whole
from tests.operators.agentic import NO_AUTO_COMPACTION, make_map
from tests.operators.child_agentic import CONCURRENCY, TEMPLATE, inputs, session_config

CHILD = Path(__file__).with_name("child_agentic.py")


def query(db_path: str, sql: str, *args: object) -> list[tuple[Any, ...]]:
    return fetch(db_path, sql, *args)


def tool_names(request: LLMRequest) -> list[str]:
    return sorted(tool["function"]["name"] for tool in request.tools or [])


class TestManySubSessionsShareOneFile:
    async def test_fifty_parallel_items_complete_without_lock_errors(
        self, db_path: str, pool: StorePool, parent: MnesisSession
    ) -> None:
        llm = FakeLLM(delay_seconds=0.1)  # long enough for parallel items to overlap
        operator = make_map(db_path, pool, llm, agentic_map_concurrency=50)
        items = [f"[item {i:02d}]" for i in range(50)]
        batch = await operator.run_all(items, "Check {{ item }}", parent_session_id=parent.id)

        assert isinstance(batch, AgentMapBatch)
        assert (batch.total, batch.completed, batch.failed) == (50, 50, 0)
        assert batch.failures == []
        assert 1 < llm.max_in_flight <= 50
        for index, result in enumerate(batch.results):
            assert result.index == index
            assert result.input == items[index]
            assert items[index] in result.output_text
            assert result.attempts == 1
            assert result.turns == 1
        sub_sessions = query(
            db_path,
            "SELECT id, agent FROM sessions WHERE parent_id = ? ORDER BY id",
            parent.id,
        )
        assert len(sub_sessions) == 50
        assert {row[0] for row in sub_sessions} == {r.session_id for r in batch.results}
        assert {row[1] for row in sub_sessions} == {"agentic-map"}
        states = query(
            db_path,
            "SELECT state, count(*), sum(attempts) FROM map_items WHERE run_id = ? GROUP BY state",
            batch.run_id,
        )
        assert states == [("completed", 50, 50)]
        assert file_is_whole(db_path)

    async def test_the_default_concurrency_is_four(self, db_path: str, pool: StorePool) -> None:
        # Each model call lasts far longer than starting a sub-session on either backend,
        # so the calls of parallel items overlap.
        llm = FakeLLM(delay_seconds=0.25)
        batch = await make_map(db_path, pool, llm).run_all(list(range(12)), "{{ item }}")
        assert batch.completed == 12
        assert 1 < llm.max_in_flight <= 4

    async def test_the_parent_sees_only_the_final_text_of_each_sub_session(
        self, db_path: str, pool: StorePool
    ) -> None:
        llm = FakeLLM().script(
            Respond("", tool_calls=(ToolCall("c1", "lookup", {"key": "a"}),)),
            Respond("", tool_calls=(ToolCall("c2", "lookup", {"key": "b"}),)),
            Respond("final answer"),
        )
        calls: list[tuple[str, dict[str, Any]]] = []

        async def handler(name: str, arguments: dict[str, Any]) -> str:
            calls.append((name, arguments))
            return f"value of {arguments['key']}"

        tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
        batch = await make_map(db_path, pool, llm).run_all(
            ["x"], "{{ item }}", tools=tools, tool_handler=handler
        )
        result = batch.results[0]
        assert result.output_text == "final answer"
        assert (result.turns, result.finish_reason) == (3, "stop")
        assert calls == [("lookup", {"key": "a"}), ("lookup", {"key": "b"})]
        assert "lookup" in tool_names(llm.calls[0])
        # The tool output reached the model in the next turn.
        assert "value of a" in str(llm.calls[1].messages)
        assert result.session_id is not None
        texts = query(
            db_path,
            "SELECT count(*) FROM messages WHERE session_id = ? AND role = 'user'",
            result.session_id,
        )
        assert texts == [(3,)]

    async def test_max_turns_ends_a_sub_agent_that_keeps_asking_for_tools(
        self, db_path: str, pool: StorePool
    ) -> None:
        llm = FakeLLM().script(
            *[Respond("thinking", tool_calls=(ToolCall(f"c{i}", "t", {"i": i}),)) for i in range(5)]
        )
        batch = await make_map(db_path, pool, llm).run_all(
            ["x"], "{{ item }}", max_turns=2, tool_handler=lambda name, args: "ok"
        )
        result = batch.results[0]
        assert result.success
        assert (result.turns, result.finish_reason, result.output_text) == (
            2,
            "max_turns",
            "thinking",
        )
        assert len(llm.calls) == 2


class TestReadOnlySubAgents:
    async def test_read_only_sub_agents_are_offered_only_retrieval_tools(
        self, db_path: str, pool: StorePool
    ) -> None:
        llm = FakeLLM().script(
            Respond("", tool_calls=(ToolCall("c1", "write_file", {"path": "/etc/x"}),)),
            Respond("done without writing"),
        )
        batch = await make_map(db_path, pool, llm).run_all(["x"], "{{ item }}", read_only=True)
        result = batch.results[0]
        assert result.output_text == "done without writing"
        offered = tool_names(llm.calls[0])
        assert offered
        assert all(name.startswith("lcm_") for name in offered)
        assert "lcm_expand_query" not in offered
        agent = query(db_path, "SELECT agent FROM sessions WHERE id = ?", result.session_id)
        assert agent == [("agentic-map:ro",)]
        errors = query(
            db_path,
            "SELECT tool_state, content FROM message_parts WHERE session_id = ? AND tool_name = ?",
            result.session_id,
            "write_file",
        )
        assert errors[0][0] == "error"
        assert "read-only" in errors[0][1]

    async def test_lcm_tools_run_inside_the_sub_session(
        self, db_path: str, pool: StorePool
    ) -> None:
        llm = FakeLLM().script(
            Respond("", tool_calls=(ToolCall("c1", "lcm_grep", {"query": "needle"}),)),
            Respond("searched"),
        )
        batch = await make_map(db_path, pool, llm).run_all(
            ["find the needle"], "{{ item }}", read_only=True
        )
        assert batch.results[0].output_text == "searched"
        assert "needle" in str(llm.calls[1].messages)

    async def test_tools_or_a_handler_with_read_only_are_refused(
        self, db_path: str, pool: StorePool
    ) -> None:
        operator = make_map(db_path, pool, FakeLLM())
        with pytest.raises(InvalidArgumentError, match="read_only"):
            operator.run(["x"], "{{ item }}", read_only=True, tool_handler=lambda n, a: "")
        with pytest.raises(InvalidArgumentError, match="read_only"):
            operator.run(["x"], "{{ item }}", read_only=True, tools=[{"type": "function"}])


class TestFailures:
    async def test_a_failing_item_is_retried_in_fresh_sub_sessions_then_marked_failed(
        self, db_path: str, pool: StorePool
    ) -> None:
        llm = FakeLLM().always(Fail("provider down"), times=3)
        batch = await make_map(db_path, pool, llm, max_retries=2).run_all(["x"], "{{ item }}")
        result = batch.results[0]
        assert not result.success
        assert result.attempts == 3
        assert "provider down" in (result.error or "")
        assert (batch.completed, batch.failed) == (0, 1)
        row = query(
            db_path,
            "SELECT state, attempts, error FROM map_items WHERE run_id = ?",
            batch.run_id,
        )
        assert row[0][:2] == ("failed", 3)
        assert "provider down" in row[0][2]
        assert query(db_path, "SELECT count(*) FROM sessions") == [(3,)]

    async def test_a_failed_item_is_retried_on_resume_only_when_asked(
        self, db_path: str, pool: StorePool
    ) -> None:
        run_id = new_id("run")
        llm = FakeLLM().always(Fail("down"), times=1)
        operator = make_map(db_path, pool, llm, max_retries=0)
        first = await operator.run_all(["x", "y"], "{{ item }}", run_id=run_id)
        assert (first.completed, first.failed) == (1, 1)
        again = await operator.run_all(["x", "y"], "{{ item }}", run_id=run_id)
        assert (again.completed, again.failed) == (1, 1)
        assert all(r.resumed for r in again.results)
        retried = await operator.run_all(["x", "y"], "{{ item }}", run_id=run_id, retry_failed=True)
        assert (retried.completed, retried.failed) == (2, 0)
        assert len(llm.calls) == 3

    async def test_an_unknown_parent_session_is_reported(
        self, db_path: str, pool: StorePool
    ) -> None:
        operator = make_map(db_path, pool, FakeLLM())
        with pytest.raises(SessionNotFoundError):
            await operator.run_all(["x"], "{{ item }}", parent_session_id=new_id("sess"))


class TestArguments:
    def test_a_template_without_item_is_refused_before_any_session(
        self, unopened_db_path: str
    ) -> None:
        llm = FakeLLM()
        with pytest.raises(InvalidArgumentError, match="item"):
            make_map(unopened_db_path, StorePool(), llm).run(["x"], "Do the thing.")
        assert llm.calls == []
        assert not Path(unopened_db_path).exists()

    @pytest.mark.parametrize(
        ("inputs", "kwargs"),
        [
            ("abc", {}),
            ([object()], {}),
            ([float("nan")], {}),
            (["x"], {"max_turns": 0}),
            (["x"], {"max_retries": -1}),
            (["x"], {"concurrency": 0}),
            (["x"], {"parent_session_id": "nope"}),
            (["x"], {"run_id": ""}),
        ],
    )
    def test_bad_arguments_are_refused_before_any_session(
        self, unopened_db_path: str, inputs: Any, kwargs: dict[str, Any]
    ) -> None:
        with pytest.raises(InvalidArgumentError):
            make_map(unopened_db_path, StorePool(), FakeLLM()).run(inputs, "{{ item }}", **kwargs)
        assert not Path(unopened_db_path).exists()

    def test_db_path_and_a_configured_path_together_are_refused(self, tmp_path: Path) -> None:
        config = MnesisConfig()
        config.store.db_path = str(tmp_path / "a.db")
        with pytest.raises(InvalidArgumentError, match="db_path"):
            AgenticMap(model="fake/x", db_path=str(tmp_path / "b.db"), session_config=config)


class TestEvents:
    async def test_started_item_completed_and_completed_are_published(
        self, db_path: str, pool: StorePool
    ) -> None:
        bus = EventBus()
        seen: list[tuple[MnesisEvent, dict[str, Any]]] = []
        bus.subscribe(None, lambda event, payload: seen.append((event, payload)))
        operator = AgenticMap(
            None,
            bus,
            model="fake/sub",
            db_path=db_path,
            pool=pool,
            llm=FakeLLM(),
            session_config=NO_AUTO_COMPACTION,
        )
        batch = await operator.run_all(["a", "b"], "{{ item }}")
        kinds = [event for event, _ in seen]
        assert kinds == [
            MnesisEvent.MAP_STARTED,
            MnesisEvent.MAP_ITEM_COMPLETED,
            MnesisEvent.MAP_ITEM_COMPLETED,
            MnesisEvent.MAP_COMPLETED,
        ]
        assert seen[0][1]["operator"] == "agentic_map"
        assert seen[-1][1] == {
            "operator": "agentic_map",
            "run_id": batch.run_id,
            "total": 2,
            "completed": 2,
            "failed": 0,
            "elapsed_ms": seen[-1][1]["elapsed_ms"],
        }


class TestResumingARun:
    async def test_a_stopped_run_resumes_without_rerunning_completed_items(
        self, db_path: str, pool: StorePool
    ) -> None:
        run_id = new_id("run")
        items = [f"[item {i:02d}]" for i in range(10)]
        llm = FakeLLM(delay_seconds=0.002)
        operator = make_map(db_path, pool, llm, agentic_map_concurrency=2)
        first: list[int] = []
        async with contextlib.aclosing(operator.run(items, "{{ item }}", run_id=run_id)) as stream:
            async for result in stream:
                first.append(result.index)
                if len(first) == 3:
                    break
        # Stopping early puts the items in flight back to pending.
        states = dict(query(db_path, "SELECT state, count(*) FROM map_items GROUP BY state"))
        assert states.get("running", 0) == 0
        assert states["completed"] >= 3

        calls_before = len(llm.calls)
        batch = await operator.run_all(items, "{{ item }}", run_id=run_id)
        assert batch.completed == 10
        resumed = {r.index for r in batch.results if r.resumed}
        assert set(first) <= resumed
        assert len(llm.calls) - calls_before == 10 - len(resumed)
        for result in batch.results:
            assert items[result.index] in result.output_text

    async def test_resuming_with_other_inputs_or_template_is_refused(
        self, db_path: str, pool: StorePool
    ) -> None:
        run_id = new_id("run")
        operator = make_map(db_path, pool, FakeLLM())
        await operator.run_all(["a", "b"], "{{ item }}", run_id=run_id)
        with pytest.raises(InvalidArgumentError, match="inputs"):
            await operator.run_all(["a", "b", "c"], "{{ item }}", run_id=run_id)
        with pytest.raises(InvalidArgumentError, match="input 1"):
            await operator.run_all(["a", "z"], "{{ item }}", run_id=run_id)
        with pytest.raises(InvalidArgumentError, match="template"):
            await operator.run_all(["a", "b"], "Say {{ item }}", run_id=run_id)

    async def test_the_same_run_cannot_run_twice_at_once_in_one_process(
        self, db_path: str, pool: StorePool
    ) -> None:
        run_id = new_id("run")
        operator = make_map(db_path, pool, FakeLLM(delay_seconds=0.01))
        async with contextlib.aclosing(
            operator.run(["a", "b"], "{{ item }}", run_id=run_id)
        ) as one:
            await anext(one)
            with pytest.raises(InvalidArgumentError, match="already running"):
                await operator.run_all(["a", "b"], "{{ item }}", run_id=run_id)

    async def test_the_same_run_is_refused_through_another_pool_then_resumes(
        self, db_path: str, pool: StorePool
    ) -> None:
        run_id = new_id("run")
        operator = make_map(db_path, pool, FakeLLM(delay_seconds=0.01))
        other_pool = StorePool()
        try:
            other = make_map(db_path, other_pool, FakeLLM())
            async with contextlib.aclosing(
                operator.run(["a", "b", "c"], "{{ item }}", run_id=run_id)
            ) as one:
                await anext(one)
                with pytest.raises(InvalidArgumentError, match="already running"):
                    await other.run_all(["a", "b", "c"], "{{ item }}", run_id=run_id)
            # Once the first run has stopped, the same run resumes through either pool.
            batch = await other.run_all(["a", "b", "c"], "{{ item }}", run_id=run_id)
            assert batch.completed == 3
        finally:
            await other_pool.close_all()

    async def test_a_run_killed_midway_resumes_and_completes_every_item_once(
        self, db_path: str, pool: StorePool, parent: MnesisSession
    ) -> None:
        count = 12
        run_id = new_id("run")
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(CHILD),
            db_path,
            run_id,
            parent.id,
            str(count),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            completed_before = await read_until_items_are_running(proc, completed=CONCURRENCY)
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGKILL)
            await proc.wait()

        states = dict(
            query(
                db_path,
                "SELECT state, count(*) FROM map_items WHERE run_id = ? GROUP BY state",
                run_id,
            )
        )
        assert states.get("completed", 0) >= len(completed_before)
        assert states.get("running", 0) >= 1, states
        interrupted = {
            row[0]
            for row in query(
                db_path, "SELECT idx FROM map_items WHERE run_id = ? AND state = 'running'", run_id
            )
        }
        done_before = {
            row[0]
            for row in query(
                db_path,
                "SELECT idx FROM map_items WHERE run_id = ? AND state = 'completed'",
                run_id,
            )
        }

        llm = FakeLLM()
        operator = AgenticMap(
            OperatorConfig(agentic_map_concurrency=CONCURRENCY),
            model="fake/child",
            db_path=db_path,
            pool=pool,
            llm=llm,
            session_config=session_config(),
        )
        batch = await operator.run_all(
            inputs(count), TEMPLATE, run_id=run_id, parent_session_id=parent.id
        )

        assert (batch.completed, batch.failed) == (count, 0)
        assert {r.index for r in batch.results if r.resumed} == done_before
        assert len(llm.calls) == count - len(done_before)
        rows = query(
            db_path,
            "SELECT idx, state, attempts, session_id FROM map_items WHERE run_id = ? ORDER BY idx",
            run_id,
        )
        assert [row[1] for row in rows] == ["completed"] * count
        for idx, _, attempts, session_id in rows:
            # Every sub-session started for the item, its prompt naming the item.
            sessions = query(
                db_path,
                "SELECT DISTINCT s.id FROM sessions s "
                "JOIN message_parts p ON p.session_id = s.id "
                "JOIN messages m ON m.id = p.message_id AND m.role = 'user' "
                "WHERE s.parent_id = ? AND p.text_content LIKE ?",
                parent.id,
                f"%{inputs(count)[idx]}%",
            )
            answered = query(
                db_path,
                "SELECT DISTINCT session_id FROM messages "
                "WHERE role = 'assistant' AND finish_reason = 'stop' AND session_id IN "
                f"({','.join('?' * len(sessions))})",
                *[s[0] for s in sessions],
            )
            expected_attempts = 2 if idx in interrupted else 1
            assert attempts == expected_attempts, (idx, attempts)
            if idx in interrupted:
                # The kill may land between the claim and the killed attempt's first
                # message: that attempt is counted but left no prompt behind.
                assert 1 <= len(sessions) <= expected_attempts, (idx, sessions)
            else:
                assert len(sessions) == expected_attempts, (idx, sessions)
            # Exactly one sub-session answered: the item completed once.
            assert answered == [(session_id,)], (idx, answered)
        assert file_is_whole(db_path)


async def read_until_items_are_running(
    proc: asyncio.subprocess.Process, *, completed: int
) -> set[int]:
    """Read the child's output until ``completed`` items finished and at least one
    more model call started (so that item is ``running``); return the finished ones."""
    assert proc.stdout is not None
    done: set[int] = set()
    calls = 0
    while len(done) < completed or calls <= len(done):
        raw = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
        if not raw:
            assert proc.stderr is not None
            err = (await proc.stderr.read()).decode(errors="replace")
            pytest.fail(f"child exited before the kill:\n{err}")
        line = raw.decode().strip()
        if line == "CALL":
            calls += 1
        elif line.startswith("COMPLETED "):
            done.add(int(line.split()[1]))
    return done
