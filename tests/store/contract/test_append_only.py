"""The store contract: history is append-only through the interface, on every backend.

Compaction hides messages from the context but never removes them; the only changes to
a stored row are the permitted ones (token accounting, the tool lifecycle, a tombstone
that is set once)."""

from __future__ import annotations

import pytest

from mnesis.errors import AppendOnlyViolationError
from mnesis.models.parts import TextPart, ToolPart, ToolStatus
from mnesis.store import ImmutableStore
from tests.store.contract.helpers import (
    REWRITE_REFUSED,
    T0,
    append_text,
    make_commit,
    make_message,
    message_items,
    new_session,
)


class TestAppendOnly:
    async def test_compacted_messages_stay_readable_with_their_parts(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(3)]
        await store.commit_compaction(make_commit(sid, (await message_items(store, sid))[:2]))
        assert [m.text for m in await store.get_messages_by_ids(ids)] == ["m0", "m1", "m2"]
        assert await store.count_messages(sid) == 4

    async def test_a_prune_tombstones_once_and_keeps_the_output(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        appended = await store.append_message(
            make_message(sid, "assistant"),
            [ToolPart(tool_name="bash", tool_call_id="c1", output="long output")],
        )
        (pid,) = appended.part_ids
        await store.tombstone_parts([(pid, T0, 3)], [(appended.message_id, 3)])
        await store.tombstone_parts([(pid, T0 + 9, 1)], [])  # already tombstoned: no change
        (tool,) = (await store.get_message(appended.message_id)).tool_parts
        assert (tool.compacted_at, tool.output) == (T0, "long output")
        assert (await store.get_context_items(sid))[0].tokens == 3
        with pytest.raises(AppendOnlyViolationError):
            await store.update_part_status(pid, compacted_at=T0 + 1)

    async def test_a_finished_tool_result_is_history(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        appended = await store.append_message(
            make_message(sid, "assistant"),
            [
                ToolPart(
                    tool_name="bash",
                    tool_call_id="c1",
                    error_message="boom",
                    status=ToolStatus(state="error"),
                )
            ],
        )
        (pid,) = appended.part_ids
        for change in (
            {"output": "forged"},
            {"error_message": "forged"},
            {"state": "completed", "output": "forged"},
        ):
            with pytest.raises(REWRITE_REFUSED):
                await store.update_part_status(pid, **change)  # type: ignore[arg-type]
        (tool,) = (await store.get_message(appended.message_id)).tool_parts
        assert (tool.status.state, tool.error_message, tool.output) == ("error", "boom", None)

    async def test_text_parts_only_grow_by_appending(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        mid = await append_text(store, sid, "first")
        await store.append_parts(mid, [TextPart(text="second")])
        assert [p.text for p in (await store.get_message(mid)).parts] == [  # type: ignore[union-attr]
            "first",
            "second",
        ]
