"""The store contract: parts round-trip exactly; the tool lifecycle and tombstones."""

from __future__ import annotations

import pytest

from mnesis.errors import (
    AppendOnlyViolationError,
    InvalidArgumentError,
    MessageNotFoundError,
    PartNotFoundError,
)
from mnesis.models.ids import (
    is_valid_id,
    new_id,
)
from mnesis.models.parts import (
    TextPart,
    ToolPart,
    ToolStatus,
)
from mnesis.store import ImmutableStore
from tests.store.contract.helpers import (
    PART_FACTORIES,
    REWRITE_REFUSED,
    T0,
    append_text,
    make_message,
    new_session,
)


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
