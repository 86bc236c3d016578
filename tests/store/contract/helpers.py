"""Builders the contract tests share: sessions, messages, compaction commits, every part type."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mnesis.errors import AppendOnlyViolationError, InvalidArgumentError
from mnesis.models.ids import new_id
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
    ImmutableStore,
    NewMessage,
    SessionRecord,
    SummaryRecord,
)

T0 = 1_700_000_000_000
"""A fixed Unix-ms timestamp: stored values are compared exactly."""

REWRITE_REFUSED = (AppendOnlyViolationError, InvalidArgumentError)
"""A rewrite of a finished tool call is refused by the database (append-only trigger)
or, earlier, by the store's own check (invalid argument); either way nothing changes."""


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


async def record_history(store: ImmutableStore) -> dict[str, str]:
    """A session with messages, a tool call, two leaf summaries and a condensed one; the
    ids of its ``session``, first ``message``, ``completed_tool`` and ``pending_tool``
    parts and condensed ``summary``."""
    sid = await new_session(store)
    mids = [await append_text(store, sid, f"message {i}") for i in range(4)]
    tool = await store.append_message(
        make_message(sid, "assistant"),
        [
            ToolPart(tool_name="bash", tool_call_id="c1", output="out"),
            ToolPart(tool_name="bash", tool_call_id="c2", status=ToolStatus(state="pending")),
        ],
    )
    for _ in range(2):
        await store.commit_compaction(make_commit(sid, (await message_items(store, sid))[:2]))
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
