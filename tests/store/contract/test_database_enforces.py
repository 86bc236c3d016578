"""The store contract: what the database itself enforces, on every backend, checked
through a plain connection the way any other program could (append-only triggers,
context item constraints). Backend-only checks stay in ``tests/store/<backend>/``."""

from __future__ import annotations

import pytest

from mnesis.errors import AppendOnlyViolationError
from mnesis.store import ImmutableStore
from tests.store.contract.helpers import T0, record_history
from tests.store.contract.raw import RawSQL


@pytest.fixture
async def history(store: ImmutableStore) -> dict[str, str]:
    return await record_history(store)


class TestAppendOnlyEnforcedByTheDatabase:
    @pytest.mark.parametrize(
        "table",
        ["messages", "message_parts", "summaries", "summary_messages", "summary_parents",
         "sessions"],
    )  # fmt: skip
    async def test_emptying_history_is_rejected(
        self, raw: RawSQL, history: dict[str, str], table: str
    ) -> None:
        before = raw.count(table)
        assert before > 0
        for statement in raw.delete_statements(table):
            raw.rejects("append_only", statement)
        assert raw.count(table) == before

    @pytest.mark.parametrize(
        ("column", "value"),
        [("id", "msg_forged"), ("session_id", "sess_other"), ("seq", 999), ("role", "system"),
         ("is_summary", True), ("agent", "intruder"), ("model_id", "other-model"),
         ("provider_id", "other"), ("parent_id", "msg_other"), ("created_at", 1)],
    )  # fmt: skip
    async def test_rewriting_a_message_is_rejected(
        self, raw: RawSQL, history: dict[str, str], column: str, value: object
    ) -> None:
        raw.rejects(
            "append_only",
            f"UPDATE messages SET {column} = ? WHERE id = ?",
            value,
            history["message"],
        )

    @pytest.mark.parametrize(
        ("column", "value"),
        [("content", '{"type":"text","text":"forged"}'), ("text_content", "forged"),
         ("part_type", "reasoning"), ("ordinal", 99), ("message_id", "msg_other"),
         ("created_at", 1)],
    )  # fmt: skip
    async def test_rewriting_a_text_part_is_rejected(
        self, raw: RawSQL, history: dict[str, str], column: str, value: object
    ) -> None:
        raw.rejects(
            "append_only",
            f"UPDATE message_parts SET {column} = ? WHERE message_id = ?",
            value,
            history["message"],
        )

    @pytest.mark.parametrize(
        "statement",
        ["UPDATE summaries SET content = 'forged'",
         "UPDATE summary_messages SET ordinal = ordinal + 10",
         "UPDATE summary_parents SET ordinal = ordinal + 10"],
    )  # fmt: skip
    async def test_rewriting_summaries_and_lineage_is_rejected(
        self, raw: RawSQL, history: dict[str, str], statement: str
    ) -> None:
        raw.rejects("append_only", statement)

    async def test_token_counts_cost_and_finish_reason_may_change(
        self, raw: RawSQL, store: ImmutableStore, history: dict[str, str]
    ) -> None:
        raw.rows(
            "UPDATE messages SET tokens_input = 5, tokens_output = 6, tokens_total = 11, "
            "cost = 0.1, finish_reason = 'stop', token_estimate = 77 WHERE id = ?",
            history["message"],
        )
        got = (await store.get_message(history["message"])).message
        assert got.tokens is not None and got.tokens.total == 11
        assert (got.cost, got.finish_reason, got.token_estimate) == (0.1, "stop", 77)

    async def test_a_tool_output_may_be_tombstoned_but_never_cleared_or_moved(
        self, raw: RawSQL, history: dict[str, str]
    ) -> None:
        part = history["completed_tool"]
        raw.rows("UPDATE message_parts SET compacted_at = ? WHERE id = ?", T0, part)
        raw.rejects(
            "append_only", "UPDATE message_parts SET compacted_at = NULL WHERE id = ?", part
        )
        raw.rejects(
            "append_only", "UPDATE message_parts SET compacted_at = ? WHERE id = ?", T0 + 1, part
        )

    @pytest.mark.parametrize("assignment", ["content = content || ' '", "text_content = 'forged'"])
    async def test_a_completed_tool_output_cannot_be_changed(
        self, raw: RawSQL, history: dict[str, str], assignment: str
    ) -> None:
        sql = f"UPDATE message_parts SET {assignment} WHERE id = ?"
        raw.rejects("append_only", sql, history["completed_tool"])

    async def test_a_finished_tool_call_cannot_be_reopened(
        self, raw: RawSQL, history: dict[str, str]
    ) -> None:
        # Reopening would make the output writable again (two statements, one rewrite).
        raw.rejects(
            "append_only",
            "UPDATE message_parts SET tool_state = 'running' WHERE id = ?",
            history["completed_tool"],
        )

    async def test_a_pending_tool_call_may_be_completed(
        self, raw: RawSQL, store: ImmutableStore, history: dict[str, str]
    ) -> None:
        await store.update_part_status(
            history["pending_tool"], state="completed", output="late result", completed_at=T0
        )
        ((state, completed_at, text),) = raw.rows(
            "SELECT CAST(tool_state AS TEXT), completed_at, text_content FROM message_parts "
            "WHERE id = ?",
            history["pending_tool"],
        )
        assert (state, completed_at) == ("completed", T0)
        assert "late result" in text

    async def test_a_violating_write_through_the_store_raises_append_only_violation(
        self, raw: RawSQL, store: ImmutableStore, history: dict[str, str]
    ) -> None:
        with pytest.raises(AppendOnlyViolationError, match="append-only"):
            await raw.write_through_store(store, "DELETE FROM messages")
        assert (await store.get_message(history["message"])).id == history["message"]


_CONTEXT_INSERT = (
    "INSERT INTO context_items (session_id, position, item_type, message_id, summary_id, "
    "tokens, created_at) VALUES (?, ?, ?, ?, ?, 1, 0)"
)


class TestContextItemConstraints:
    @pytest.mark.parametrize(
        ("item_type", "with_message", "with_summary"),
        [("message", True, True), ("message", False, False), ("message", False, True),
         ("summary", True, False), ("summary", True, True)],
    )  # fmt: skip
    async def test_a_row_must_point_at_exactly_one_message_or_summary(
        self,
        raw: RawSQL,
        history: dict[str, str],
        item_type: str,
        with_message: bool,
        with_summary: bool,
    ) -> None:
        raw.rejects(
            "check",
            _CONTEXT_INSERT,
            history["session"],
            1000,
            item_type,
            history["message"] if with_message else None,
            history["summary"] if with_summary else None,
        )

    async def test_an_unknown_item_type_is_rejected(
        self, raw: RawSQL, history: dict[str, str]
    ) -> None:
        raw.rejects(
            "unknown_value",
            _CONTEXT_INSERT,
            history["session"],
            1000,
            "other",
            history["message"],
            None,
        )

    async def test_two_items_cannot_share_a_position_and_targets_must_exist(
        self, raw: RawSQL, history: dict[str, str]
    ) -> None:
        ((position,),) = raw.rows(
            "SELECT MIN(position) FROM context_items WHERE session_id = ?", history["session"]
        )
        args = (history["session"], position, "message", history["message"], None)
        raw.rejects("unique", _CONTEXT_INSERT, *args)
        raw.rejects("foreign_key", _CONTEXT_INSERT, history["session"], 5000, "message",
                    "msg_missing", None)  # fmt: skip
