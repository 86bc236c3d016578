"""0.4.0's call shapes give results of 0.4.0's shapes (issue 31), on real SQLite files
with only the model's answers faked (``FakeLLM``).

The calls are the ones the issue quotes (``TokenEstimator(heuristic_only=True)``,
``LLMMap.run(..., temperature=0.0)``, ``AgenticMap.run(inputs=..., agent_prompt_template=...)``,
``ImmutableStore.create_session("sess_001", model_id=..., agent=...)``,
``ContextBudget(model_context_limit=...)``) and the objects users read: batches and
results, ``TurnSnapshot``, ``MessageWithParts`` helpers, store errors, retries.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from mnesis import MnesisConfig, MnesisEvent, MnesisSession, StorePool
from mnesis.compaction.file_ids import (
    append_file_ids_footer,
    extract_file_id_paths,
    footer_file_id_paths,
    most_recent_file_ids,
    strip_file_ids_footer,
)
from mnesis.config import CompactionConfig, SessionConfig
from mnesis.errors import InvalidArgumentError, LLMError, MnesisConfigError, RetriesExhaustedError
from mnesis.events import EventBus
from mnesis.llm import Fail, FakeLLM, Respond, ToolCall
from mnesis.models.config import ModelInfo, RetryConfig, check_compaction_budget
from mnesis.models.message import ContextBudget, Message, MessageWithParts, TextPart, TokenUsage
from mnesis.models.summary import FileReference, SummaryNode
from mnesis.operators import AgenticMap, AgentMapBatch, LLMMap, MapBatch
from mnesis.retry import backoff_delay, call_with_retry, is_retryable
from mnesis.store import (
    DuplicateIDError,
    ImmutableStore,
    MessageNotFoundError,
    MnesisStoreError,
    PartNotFoundError,
    RawMessagePart,
    Session,
    SessionNotFoundError,
)
from mnesis.store.base import NewMessage
from mnesis.store.summary_dag import SummaryDAGStore
from mnesis.tokens.estimator import TokenEstimator, heuristic_token_count

FILE_A = "file_" + "A" * 26
FILE_B = "file_" + "B" * 26


class Person(BaseModel):
    name: str


# -- tokens and budgets ---------------------------------------------------------------


def test_token_estimator_heuristic_only_and_its_cached_and_per_model_estimates() -> None:
    estimator = TokenEstimator(heuristic_only=True)
    text = "def handler(event):\n    return event['body']\n"
    assert not estimator.is_exact
    assert estimator.estimate(text) == heuristic_token_count(text)
    key = TokenEstimator.content_hash(text)
    assert key == TokenEstimator.content_hash(text) != TokenEstimator.content_hash(text + " ")
    first = estimator.estimate_cached(text, key)
    assert estimator.estimate_cached("something else entirely", key) == first  # by key
    other = estimator.for_model(ModelInfo(model_id="gpt-4o", encoding="o200k_base"))
    assert (other.encoding, other.is_exact) == ("o200k_base", False)
    assert estimator.for_model(None) is estimator
    with pytest.raises(InvalidArgumentError):
        TokenEstimator(exact=True, heuristic_only=True)


def test_context_budget_in_0_4_0_terms() -> None:
    budget = ContextBudget(model_context_limit=200_000, reserved_output_tokens=8_192)
    assert budget.compaction_buffer == 20_000
    assert budget.usable == 200_000 - 8_192 - 20_000
    assert budget.context_limit == 200_000
    assert budget.fits(budget.usable) and not budget.fits(budget.usable + 1)
    assert budget.remaining(100) == budget.usable - 100
    assert budget.remaining(10**9) == 0
    with pytest.raises(MnesisConfigError, match="compaction_output_budget"):
        check_compaction_budget(
            CompactionConfig(compaction_output_budget=7_000),
            ModelInfo(model_id="small", context_limit=8_000, max_output_tokens=1_000),
        )


# -- operators ------------------------------------------------------------------------


async def test_llm_map_run_with_0_4_0_keywords() -> None:
    llm = FakeLLM().script(Respond('{"name": "Ada"}'), Respond("not json"), Respond("{}"))
    mapper = LLMMap(None, None, EventBus(), "fake/map", llm=llm, retry_backoff=0)
    results = [
        r
        async for r in mapper.run(
            ["ada", "bob"],
            "Extract the person: {{ item }}",
            Person,
            temperature=0.0,
            timeout_secs=30.0,
            max_retries=1,
            concurrency=1,
            retry_guidance="Return only the JSON object.",
        )
    ]
    by_input = {r.input: r for r in results}
    assert by_input["ada"].success and by_input["ada"].output == Person(name="Ada")
    failed = by_input["bob"]
    assert not failed.success and failed.attempts == 2
    assert (failed.error_type, failed.error_kind) == ("InvalidOutput", "validation")
    assert all(request.temperature == 0.0 for request in llm.calls)
    guidance = llm.calls[-1].messages[-1]["content"]
    assert guidance.startswith("Return only the JSON object.")


async def test_map_batch_successes_failures_total_attempts() -> None:
    llm = FakeLLM().script(Respond("a"), Fail("boom"), Fail("boom"))
    mapper = LLMMap(model="fake/map", llm=llm, retry_backoff=0)
    batch = await mapper.run_all(["x", "y"], "Echo {{ item }}", max_retries=1, concurrency=1)
    assert isinstance(batch, MapBatch)
    assert batch.total == 2 and [r.input for r in batch.successes] == ["x"]
    assert [(r.input, r.error_kind) for r in batch.failures] == [("y", "llm_error")]
    assert batch.total_attempts == 1 + 2
    rebuilt = MapBatch(successes=batch.successes, failures=batch.failures, total_attempts=3)
    assert (rebuilt.total, rebuilt.completed, rebuilt.failed) == (2, 1, 1)


async def test_agentic_map_run_in_0_4_0_form(tmp_path: Path, pool: StorePool) -> None:
    llm = FakeLLM().script(
        Respond("looking it up", tool_calls=(ToolCall("c1", "lookup", {"key": "a"}),)),
        Respond("the answer is 42"),
    )
    operator = AgenticMap(None, None, "fake/sub", llm=llm, pool=pool)
    run_db = str(tmp_path / "per-run.db")
    results = [
        r
        async for r in operator.run(
            inputs=["question"],
            agent_prompt_template="Answer {{ item }}",
            read_only=False,
            tools=[{"type": "function", "function": {"name": "lookup", "parameters": {}}}],
            tool_handler=lambda name, args: "a=42",
            continuation_message="Go on.",
            agent="general",
            max_turns=5,
            lcm_config=MnesisConfig(compaction=CompactionConfig(auto=False)),
            db_path=run_db,
        )
    ]
    (result,) = results
    assert result.success and result.output_text == "the answer is 42"
    assert result.intermediate_outputs == ["looking it up"]
    assert result.error_kind is None
    assert llm.calls[1].messages[-1]["content"] == "Go on."
    store = await pool.acquire(run_db)
    assert [s.id for s in await store.list_sessions()] == [result.session_id]
    batch = AgentMapBatch(results=results)
    assert (batch.total, batch.total_attempts, batch.failures) == (1, 1, [])


# -- the store ------------------------------------------------------------------------


async def test_store_create_session_and_reads_in_0_4_0_form(db_path: str) -> None:
    store = ImmutableStore(MnesisConfig().store.model_copy(update={"db_path": db_path}))
    await store.initialize()
    session = await store.create_session(
        "sess_001", model_id="gpt-4o", provider_id="openai", agent="coder", title="t"
    )
    assert isinstance(session, Session)
    assert (session.id, session.model_id, session.provider_id) == ("sess_001", "gpt-4o", "openai")
    assert (session.agent, session.is_active, session.title) == ("coder", True, "t")
    assert (await store.get_session("sess_001")).model == "openai/gpt-4o"
    messages = [
        Message(id=f"msg_{i}", session_id="sess_001", role=role)
        for i, role in enumerate(["user", "assistant", "user"])
    ]
    await store.append_messages([NewMessage(m, [TextPart(text=m.id)]) for m in messages])
    since = await store.get_messages_with_parts("sess_001", since_message_id="msg_0")
    assert [m.id for m in since] == ["msg_1", "msg_2"]
    assert [m.id for m in await store.get_messages("sess_001", since_message_id="msg_1")] == [
        "msg_2"
    ]
    (raw,) = await store.get_parts("msg_1")
    assert isinstance(raw, RawMessagePart) and raw.part_type == "text"
    added = await store.append_part(
        RawMessagePart(
            id="",
            message_id="msg_2",
            session_id="sess_001",
            part_type="text",
            content='{"text": "more"}',
        )
    )
    assert added.id and [
        p.text_content() for p in await store.get_messages_with_parts_by_ids(["msg_2"])
    ] == ["msg_2more"]
    await store.update_message_tokens("msg_1", TokenUsage(input=3, output=4), 0.5, "stop")
    assert (await store.sum_token_usage("sess_001")).output == 4
    await store.soft_delete_session("sess_001")
    assert await store.list_sessions(active_only=True) == []
    assert [s.id for s in await store.list_sessions()] == ["sess_001"]
    await store.close()


async def test_store_errors_carry_0_4_0_arguments(db_path: str) -> None:
    for error, attribute in (
        (SessionNotFoundError("sess_x"), "session_id"),
        (MessageNotFoundError("msg_x"), "message_id"),
        (PartNotFoundError("part_x"), "part_id"),
        (DuplicateIDError("msg_x"), "record_id"),
    ):
        assert isinstance(error, MnesisStoreError)
        assert getattr(error, attribute).endswith("_x") and "_x" in str(error)
    store = ImmutableStore(MnesisConfig().store.model_copy(update={"db_path": db_path}))
    await store.initialize()
    with pytest.raises(SessionNotFoundError) as raised:
        await store.get_session("sess_missing")
    assert raised.value.session_id == "sess_missing"
    await store.close()


async def test_summary_dag_store_in_0_4_0_form(db_path: str, pool: StorePool) -> None:
    session = await MnesisSession.create(model="fake/x", db_path=db_path, pool=pool)
    for i in range(3):
        await session.record(f"q{i} about {FILE_A}", f"a{i}")
    dag = SummaryDAGStore(session.store)
    messages = await session.store.get_messages(session.id)
    node = SummaryNode(
        id="sum_" + "1" * 26,
        session_id=session.id,
        span_start_message_id=messages[0].id,
        span_end_message_id=messages[3].id,
        content="Asked about the file.",
        token_count=5,
    )
    await dag.insert_node(node, id_generator=lambda: "unused")  # covers its span
    (active,) = await dag.get_active_nodes(session.id)
    assert (active.id, active.level, active.kind, active.compaction_level) == (
        node.id, 0, "leaf", 1,
    )  # fmt: skip
    assert (await dag.get_latest_node(session.id)) == active
    (gap,) = await dag.get_coverage_gaps(session.id)
    assert (gap.start_message_id, gap.end_message_id, gap.message_count) == (
        messages[4].id, messages[5].id, 2,
    )  # fmt: skip
    await session.close()


# -- sessions: snapshots, messages, retries --------------------------------------------


async def test_turn_snapshot_and_message_helpers(db_path: str, pool: StorePool) -> None:
    llm = FakeLLM().script(Respond("hello back"))
    session = await MnesisSession.create(model="fake/x", db_path=db_path, pool=pool, llm=llm)
    await session.send("hello")
    (snapshot,) = session.history()
    assert (snapshot.turn_index, snapshot.role, snapshot.compaction_triggered) == (
        0,
        "assistant",
        False,
    )
    assert snapshot.context_tokens == snapshot.context and snapshot.compact_result is None
    assert snapshot.context_tokens.summary == snapshot.context_tokens.summaries
    user, assistant = await session.messages()
    assert isinstance(assistant, MessageWithParts)
    assert (assistant.is_summary, assistant.model_id, assistant.text_content()) == (
        False, assistant.message.model_id, "hello back",
    )  # fmt: skip
    assert assistant.tokens is not None and user.role == "user"
    await session.close()


async def test_session_retries_a_failed_model_call_and_publishes_llm_retry(
    db_path: str, pool: StorePool
) -> None:
    llm = FakeLLM().script(Fail("overloaded"), Respond("ok"))
    bus = EventBus()
    seen: list[dict[str, Any]] = []
    bus.subscribe(MnesisEvent.LLM_RETRY, lambda _event, payload: seen.append(payload))
    retry = RetryConfig(max_retries=2, base_delay=0.0, jitter=False)
    config = MnesisConfig(session=SessionConfig(retry=retry))
    session = await MnesisSession.create(
        model="fake/x", db_path=db_path, pool=pool, llm=llm, config=config, event_bus=bus
    )
    result = await session.send("hi")
    assert result.text == "ok"
    assert [(p["attempt"], p["delay"]) for p in seen] == [(2, 0.0)]
    assert seen[0]["session_id"] == session.id and "overloaded" in seen[0]["error"]
    await session.close()


async def test_call_with_retry() -> None:
    calls: list[int] = []
    retries: list[tuple[int, float]] = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise TimeoutError("slow")
        return "done"

    cfg = RetryConfig(max_retries=3, base_delay=0.0, jitter=False)
    assert (
        await call_with_retry(flaky, cfg, on_retry=lambda n, d, _e: retries.append((n, d)))
        == "done"
    )
    assert retries == [(1, 0.0), (2, 0.0)]

    async def broken() -> None:
        raise LLMError("down")

    with pytest.raises(RetriesExhaustedError) as raised:
        await call_with_retry(broken, RetryConfig(max_retries=1, base_delay=0.0))
    assert raised.value.attempts == 2 and isinstance(raised.value.__cause__, LLMError)

    async def invalid() -> None:
        raise InvalidArgumentError("bad input")

    with pytest.raises(InvalidArgumentError):  # not retryable: raised at once
        await call_with_retry(invalid, cfg)
    abort = asyncio.Event()
    abort.set()
    with pytest.raises(LLMError):  # aborted: the last error, no more attempts
        await call_with_retry(broken, RetryConfig(max_retries=5, base_delay=10.0), abort=abort)
    assert [backoff_delay(RetryConfig(jitter=False, max_delay=3.0), n) for n in (1, 2, 3)] == [
        1.0, 2.0, 3.0,
    ]  # fmt: skip
    assert is_retryable(TimeoutError()) and not is_retryable(asyncio.CancelledError())


# -- file IDs and references ----------------------------------------------------------


def test_file_id_footer_with_paths() -> None:
    text = append_file_ids_footer("Summary.", [FILE_A, FILE_B], {FILE_A: "src/app.py"})
    assert text.endswith(f"[LCM File IDs: {FILE_A} (src/app.py), {FILE_B}]")
    assert footer_file_id_paths(text) == {FILE_A: "src/app.py"} == extract_file_id_paths(text)
    assert strip_file_ids_footer(text) == "Summary."
    message = MessageWithParts(
        message=Message(id="msg_1", session_id="s", role="user"),
        parts=[TextPart(text=f"{FILE_B} then {FILE_A}")],
    )
    later = MessageWithParts(
        message=Message(id="msg_2", session_id="s", role="user"), parts=[TextPart(text=FILE_B)]
    )
    assert most_recent_file_ids([message, later]) == [FILE_A, FILE_B]


def test_file_reference_in_0_4_0_form_derives_its_file_id() -> None:
    digest = "ab" * 32
    ref = FileReference(
        content_id=digest, path="/data/big.csv", file_type="csv", token_count=9,
        exploration_summary="columns: a, b",
    )  # fmt: skip
    assert ref.file_id.startswith("file_") and len(ref.file_id) == 31
    assert FileReference(digest, ref.file_id, "/data/big.csv", "csv", 9).file_id == ref.file_id
