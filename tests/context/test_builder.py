"""ContextBuilder: what the model sees on each turn, and what it costs to assemble.

Messages are appended straight to a real SQLite store with chosen ``token_estimate``
values, so budgets are exact: with ``max_output_tokens=0`` and
``compaction_output_budget=0`` the usable budget is the context limit, and an empty
system prompt costs the per-message overhead only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.context import BuiltContext, ContextBuilder, LLMMessage
from mnesis.context.builder import ContextBudget
from mnesis.errors import ContextOverflowError
from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.model_info import ModelInfo
from mnesis.models.parts import (
    CompactionPart,
    FileRefPart,
    MessagePart,
    TextPart,
    ToolPart,
    ToolStatus,
)
from mnesis.store import (
    CompactionCommit,
    ContextItem,
    ImmutableStore,
    NewMessage,
    SessionRecord,
    StorePool,
    SummaryRecord,
)
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

T0 = 1_700_000_000_000
NO_RESERVE = MnesisConfig(compaction=CompactionConfig(compaction_output_budget=0))
EMPTY_PROMPT_TOKENS = MESSAGE_OVERHEAD_TOKENS


def model(usable: int) -> ModelInfo:
    """A model whose usable budget under ``NO_RESERVE`` is exactly ``usable``."""
    return ModelInfo(model_id="tiny", context_limit=usable, max_output_tokens=0)


@pytest.fixture
async def store(db_path: str, pool: StorePool) -> AsyncIterator[ImmutableStore]:
    s = await pool.acquire(db_path=db_path)
    yield s
    await s.close()


@pytest.fixture
async def session(store: ImmutableStore) -> str:
    sid = new_id("sess")
    await store.create_session(SessionRecord(id=sid, model="fake/tiny"))
    return sid


@pytest.fixture
def builder(store: ImmutableStore) -> ContextBuilder:
    return ContextBuilder(store, token_estimator=TokenEstimator(exact=False))


async def append(
    store: ImmutableStore,
    session_id: str,
    parts: Sequence[MessagePart] | str,
    *,
    role: str = "user",
    tokens: int = 10,
) -> str:
    if isinstance(parts, str):
        parts = [TextPart(text=parts)]
    message = Message(
        id=new_id("msg"),
        session_id=session_id,
        role=role,
        created_at=T0,
        token_estimate=tokens,
    )
    return (await store.append_message(message, parts)).message_id


async def compact(
    store: ImmutableStore, session_id: str, items: Sequence[ContextItem], *, tokens: int, text: str
) -> str:
    """Replace ``items`` (messages) with a leaf summary costing ``tokens``."""
    summary_id = new_id("sum")
    ids = [i.item_id for i in items]
    await store.commit_compaction(
        CompactionCommit(
            summary=SummaryRecord(
                id=summary_id,
                session_id=session_id,
                kind="leaf",
                depth=0,
                level=1,
                content=text,
                token_count=tokens,
                span_start_message_id=ids[0],
                span_end_message_id=ids[-1],
                source_message_count=len(ids),
            ),
            source_message_ids=ids,
            parent_summary_ids=[],
            replaced=[(i.position, i.item_id) for i in items],
            context_tokens=tokens,
            marker=NewMessage(
                Message(
                    id=new_id("msg"),
                    session_id=session_id,
                    role="assistant",
                    created_at=T0,
                    is_summary=True,
                    token_estimate=tokens,
                ),
                [TextPart(text=text), CompactionPart(summary_id=summary_id, level=1)],
                in_context=False,
            ),
        )
    )
    return summary_id


async def build(
    builder: ContextBuilder, session_id: str, usable: int, system_prompt: str = ""
) -> BuiltContext:
    return await builder.build(session_id, model(usable), system_prompt, NO_RESERVE)


def text_of(message: LLMMessage) -> str:
    assert isinstance(message.content, str)
    return message.content


def contents(built: BuiltContext) -> list[str]:
    return [text_of(m) for m in built.messages]


class TestContextBudget:
    def test_a_large_model_reserves_its_output_and_the_compaction_buffer(self) -> None:
        info = ModelInfo(model_id="big", context_limit=200_000, max_output_tokens=8_192)
        budget = ContextBudget.compute(info, MnesisConfig())
        assert budget.context_limit == 200_000
        assert budget.reserved_output_tokens == 8_192
        assert budget.compaction_buffer == 20_000
        assert budget.usable == 200_000 - 8_192 - 20_000

    def test_the_output_reserve_never_takes_more_than_half_the_window(self) -> None:
        info = ModelInfo(model_id="odd", context_limit=10_000, max_output_tokens=9_000)
        config = MnesisConfig(compaction=CompactionConfig(compaction_output_budget=0))
        budget = ContextBudget.compute(info, config)
        assert budget.reserved_output_tokens == 5_000
        assert budget.usable == 5_000

    def test_a_small_model_keeps_at_least_a_quarter_of_its_window(self) -> None:
        info = ModelInfo(model_id="small", context_limit=8_000, max_output_tokens=4_000)
        budget = ContextBudget.compute(info, MnesisConfig())
        assert budget.compaction_buffer <= (8_000 - budget.reserved_output_tokens) // 2
        assert budget.usable >= 8_000 // 4
        assert (
            budget.usable
            >= budget.context_limit - budget.reserved_output_tokens - budget.compaction_buffer
        )

    def test_without_reserves_the_whole_window_is_usable(self) -> None:
        assert ContextBudget.compute(model(123), NO_RESERVE).usable == 123


class TestAssembly:
    async def test_an_empty_session_costs_only_the_system_prompt(
        self, builder: ContextBuilder, session: str
    ) -> None:
        built = await build(builder, session, 1_000, "You are terse.")
        assert built.messages == []
        assert built.system_prompt == "You are terse."
        assert built.token_estimate == built.system_prompt_tokens > MESSAGE_OVERHEAD_TOKENS
        assert built.to_dicts() == [{"role": "system", "content": "You are terse."}]

    async def test_the_newest_messages_that_fit_are_kept_in_chronological_order(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        ids = []
        for i in range(10):
            ids.append(
                await append(store, session, f"message {i}", role=("user", "assistant")[i % 2])
            )
        built = await build(builder, session, EMPTY_PROMPT_TOKENS + 35)
        assert contents(built) == ["message 7", "message 8", "message 9"]
        assert [m.role for m in built.messages] == ["assistant", "user", "assistant"]
        assert built.item_ids == ids[7:]
        assert built.oldest_included_message_id == ids[7]
        assert built.raw_message_tokens == 30
        assert built.token_estimate == EMPTY_PROMPT_TOKENS + 30

    @pytest.mark.parametrize("usable", [15, 24, 25, 60, 99, 1_000])
    async def test_the_assembled_context_never_exceeds_the_usable_budget(
        self, builder: ContextBuilder, store: ImmutableStore, session: str, usable: int
    ) -> None:
        for i, tokens in enumerate([7, 3, 11, 5, 2, 13, 8, 1, 9, 6]):
            await append(store, session, f"m{i}", tokens=tokens)
        built = await build(builder, session, usable)
        assert built.token_estimate <= built.budget.usable == usable
        # and nothing that would still have fit was left out
        newest_first = (await store.get_context_items(session))[::-1]
        kept = len(built.item_ids)
        if kept < len(newest_first):
            assert built.token_estimate + newest_first[kept].tokens > usable

    async def test_the_system_prompt_is_counted_against_the_budget(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        for i in range(10):
            await append(store, session, f"m{i}")
        prompt = "You are a meticulous assistant. " * 5
        prompt_tokens = builder.estimator.estimate(prompt) + MESSAGE_OVERHEAD_TOKENS
        built = await build(builder, session, prompt_tokens + 45, prompt)
        assert built.system_prompt_tokens == prompt_tokens
        assert len(built.messages) == 4
        assert built.token_estimate == prompt_tokens + 40
        assert built.to_dicts()[0] == {"role": "system", "content": prompt}
        assert built.to_dicts(include_system=False) == [m.to_dict() for m in built.messages]

    async def test_messages_are_provider_ready_dicts(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        await append(store, session, "hello")
        built = await build(builder, session, 1_000, "sys")
        assert built.messages == [LLMMessage("user", "hello")]
        assert built.to_dicts() == [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "hello"},
        ]


class TestRendering:
    async def test_a_tombstoned_tool_output_is_replaced_by_a_one_line_tombstone(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        tool = ToolPart(
            tool_name="read_file",
            tool_call_id="c1",
            input={"path": "big.log"},
            output="SECRET OUTPUT " * 50,
            status=ToolStatus(state="completed", compacted_at=T0 + 42),
        )
        await append(store, session, [TextPart(text="reading"), tool], role="assistant")
        (text,) = contents(await build(builder, session, 1_000))
        assert f"[Tool 'read_file' output compacted at {T0 + 42}]" in text
        assert "SECRET OUTPUT" not in text
        assert text.startswith("reading")

    async def test_a_live_tool_call_is_rendered_with_its_input_and_output(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        tool = ToolPart(tool_name="bash", tool_call_id="c9", input={"cmd": "ls"}, output="a.py")
        await append(store, session, [tool], role="assistant", tokens=30)
        built = await build(builder, session, 1_000)
        (text,) = contents(built)
        assert text.startswith("[Tool: bash] id=c9")
        assert '"cmd": "ls"' in text and "a.py" in text
        assert 0 < built.tool_output_tokens <= built.raw_message_tokens

    async def test_a_file_reference_is_rendered_as_a_file_block(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        ref = FileRefPart(
            content_id="sha256:" + "aa" * 32,
            file_id="file_01ARZ3NDEKTSV4RRFFQ69G5FAV",
            path="data/sales.csv",
            file_type="csv",
            token_count=250_000,
            exploration_summary="columns: date, region, amount",
        )
        await append(store, session, [TextPart(text="see attached"), ref])
        (text,) = contents(await build(builder, session, 1_000))
        assert "[FILE: data/sales.csv]" in text
        assert "File-ID: file_01ARZ3NDEKTSV4RRFFQ69G5FAV" in text
        assert "columns: date, region, amount" in text
        assert text.rstrip().endswith("[/FILE]")

    async def test_a_tool_role_message_is_sent_with_a_provider_role(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        await append(store, session, "call", role="assistant")
        await append(store, session, "result", role="tool")
        built = await build(builder, session, 1_000)
        assert all(m.role in {"user", "assistant", "system"} for m in built.messages)


class TestSummaries:
    async def test_a_summary_comes_first_with_its_annotation_and_replaces_its_span(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        ids = [await append(store, session, f"message {i}") for i in range(4)]
        items = await store.get_context_items(session)
        summary_id = await compact(
            store, session, items[:2], tokens=30, text="The user set up the project."
        )
        built = await build(builder, session, 1_000)
        first = text_of(built.messages[0])
        assert first.startswith(f"[LCM summary {summary_id}")
        assert "The user set up the project." in first
        assert contents(built)[1:] == ["message 2", "message 3"]
        assert built.item_ids == [summary_id, ids[2], ids[3]]
        assert built.has_summary and built.summary_token_count == 30
        assert built.token_estimate == EMPTY_PROMPT_TOKENS + 30 + 20

    async def test_the_oldest_summaries_are_dropped_when_the_newest_message_needs_room(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        for i in range(6):
            await append(store, session, f"m{i}")
        older = await compact(
            store, session, (await store.get_context_items(session))[:2], tokens=30, text="old"
        )
        messages = await store.get_context_items(session, item_type="message")
        newer = await compact(store, session, messages[:2], tokens=30, text="newer")
        big = await append(store, session, "a long newest message", tokens=50)

        built = await build(builder, session, EMPTY_PROMPT_TOKENS + 85)
        assert built.dropped_summary_ids == [older]
        assert built.item_ids == [newer, big]
        assert built.token_estimate <= built.budget.usable

    async def test_summaries_alone_larger_than_the_budget_do_not_overflow_it(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        for i in range(2):
            await append(store, session, f"m{i}")
        items = await store.get_context_items(session)
        await compact(store, session, items, tokens=500, text="an oversized summary")
        built = await build(builder, session, 100)
        assert built.token_estimate <= built.budget.usable

    async def test_the_summary_marker_message_never_appears_in_the_context(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        for i in range(3):
            await append(store, session, f"m{i}")
        items = await store.get_context_items(session)
        await compact(store, session, items[:2], tokens=20, text="MARKER TEXT")
        built = await build(builder, session, 1_000)
        assert sum("MARKER TEXT" in text for text in contents(built)) == 1
        assert len(built.messages) == 2


class TestToolMessagesStayWithTheirCall:
    async def test_a_tool_result_is_dropped_with_the_call_before_it_at_the_budget_edge(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        await append(store, session, "run the tests")
        await append(store, session, "calling pytest", role="assistant")
        await append(store, session, "3 passed", role="tool")
        newest = [
            await append(store, session, "and now?"),
            await append(store, session, "all good", role="assistant"),
        ]
        # 20 tokens of newest messages + 10 for the tool result would fit; its call would not.
        built = await build(builder, session, EMPTY_PROMPT_TOKENS + 35)
        assert built.item_ids == newest
        assert "3 passed" not in contents(built)

    async def test_a_newest_tool_result_that_fits_only_without_its_call_overflows(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        await append(store, session, "run the tests")
        await append(store, session, "calling pytest", role="assistant")
        await append(store, session, "3 passed", role="tool")
        # Only the tool result would fit on its own; sending it alone would orphan it.
        with pytest.raises(ContextOverflowError) as info:
            await build(builder, session, EMPTY_PROMPT_TOKENS + 15)
        assert info.value.needed == EMPTY_PROMPT_TOKENS + 20

    async def test_a_tool_result_and_its_call_are_kept_together_when_both_fit(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        await append(store, session, "run the tests")
        call = await append(store, session, "calling pytest", role="assistant")
        result = await append(store, session, "3 passed", role="tool")
        built = await build(builder, session, EMPTY_PROMPT_TOKENS + 25)
        assert built.item_ids == [call, result]


class TestOverflow:
    async def test_a_newest_message_larger_than_the_budget_raises_context_overflow(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        await append(store, session, "small")
        await append(store, session, "enormous paste", tokens=100)
        with pytest.raises(ContextOverflowError) as info:
            await build(builder, session, 50)
        assert info.value.needed >= 100
        assert info.value.available == 50


class TestRenderingCache:
    async def _tool_message(self, store: ImmutableStore, session: str) -> tuple[str, str]:
        tool = ToolPart(tool_name="grep", tool_call_id="c1", output="MATCHED LINE " * 30)
        appended = await store.append_message(
            Message(
                id=new_id("msg"),
                session_id=session,
                role="assistant",
                created_at=T0,
                token_estimate=200,
            ),
            [tool],
        )
        return appended.message_id, appended.part_ids[0]

    async def test_a_tombstone_that_changes_the_estimate_is_seen_by_the_same_builder(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        mid, pid = await self._tool_message(store, session)
        before = await build(builder, session, 1_000)
        assert "MATCHED LINE" in text_of(before.messages[0])

        await store.update_part_status(pid, compacted_at=T0 + 7)
        await store.update_message_tokens(mid, token_estimate=20)
        after = await build(builder, session, 1_000)
        assert text_of(after.messages[0]) == f"[Tool 'grep' output compacted at {T0 + 7}]"
        assert after.raw_message_tokens == 20

    async def test_invalidate_forgets_renderings_whose_estimate_did_not_change(
        self, builder: ContextBuilder, store: ImmutableStore, session: str
    ) -> None:
        _, pid = await self._tool_message(store, session)
        await build(builder, session, 1_000)
        await store.update_part_status(pid, compacted_at=T0 + 7)
        builder.invalidate()
        after = await build(builder, session, 1_000)
        assert text_of(after.messages[0]) == f"[Tool 'grep' output compacted at {T0 + 7}]"


class TestAssemblyCost:
    async def _long_session(self, store: ImmutableStore, count: int) -> str:
        sid = new_id("sess")
        await store.create_session(SessionRecord(id=sid, model="fake/tiny"))
        batch = [
            NewMessage(
                Message(
                    id=new_id("msg"),
                    session_id=sid,
                    role=("user", "assistant")[i % 2],
                    created_at=T0 + i,
                    token_estimate=10,
                ),
                [TextPart(text=f"turn {i}")],
            )
            for i in range(count)
        ]
        await store.append_messages(batch)
        return sid

    async def test_assembly_reads_a_bounded_number_of_items_whatever_the_history_length(
        self, store: ImmutableStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        long_session = await self._long_session(store, 5_000)
        short_session = await self._long_session(store, 300)
        reads = {"items": 0, "messages": 0}
        get_items = store.get_context_items
        get_by_ids = store.get_messages_by_ids

        async def counting_items(*args: Any, **kwargs: Any) -> list[ContextItem]:
            rows = await get_items(*args, **kwargs)
            reads["items"] += len(rows)
            return rows

        async def counting_messages(ids: Sequence[str]) -> Any:
            reads["messages"] += len(ids)
            return await get_by_ids(ids)

        async def full_scan(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("context assembly must not scan the message history")

        monkeypatch.setattr(store, "get_context_items", counting_items)
        monkeypatch.setattr(store, "get_messages_by_ids", counting_messages)
        monkeypatch.setattr(store, "get_messages", full_scan)

        counts = {}
        for sid in (long_session, short_session):
            reads.update(items=0, messages=0)
            builder = ContextBuilder(store, token_estimator=TokenEstimator(exact=False))
            built = await build(builder, sid, EMPTY_PROMPT_TOKENS + 200)
            assert len(built.messages) == 20
            assert built.messages[-1].content == f"turn {5_000 - 1 if sid == long_session else 299}"
            counts[sid] = dict(reads)

        assert counts[long_session] == counts[short_session]
        assert counts[long_session]["items"] <= 300
        assert counts[long_session]["messages"] == 20
