"""The store contract: the resumable run state of ``AgenticMap`` (``store.map_runs``)."""

from __future__ import annotations

import pytest

from mnesis.errors import InvalidArgumentError
from mnesis.store import ImmutableStore
from tests.store.contract.helpers import new_session


class TestMapRuns:
    async def test_a_new_run_has_one_pending_item_per_input(self, store: ImmutableStore) -> None:
        rows, existed = await store.map_runs.start(
            "run_1", kind="agentic", config={"k": 1}, inputs=['"a"', '"b"']
        )
        assert not existed
        assert [(r.idx, r.input, r.state, r.attempts) for r in rows] == [
            (0, '"a"', "pending", 0),
            (1, '"b"', "pending", 0),
        ]
        assert await store.map_runs.items("run_1") == rows
        assert await store.map_runs.items("run_missing") == []

    async def test_an_item_is_claimed_completed_once_and_stays_completed(
        self, store: ImmutableStore
    ) -> None:
        runs = store.map_runs
        sid = await new_session(store)
        await runs.start("run_1", kind="agentic", config={}, inputs=['"a"'])
        assert await runs.claim("run_1", 0) == 1
        await runs.attach_session("run_1", 0, sid)
        await runs.complete("run_1", 0, '"out"', sid)
        assert await runs.claim("run_1", 0) is None
        await runs.fail("run_1", 0, "late failure")
        (row,) = await runs.items("run_1")
        assert (row.state, row.output, row.session_id, row.attempts) == (
            "completed",
            '"out"',
            sid,
            1,
        )

    async def test_a_resumed_run_keeps_its_rows_and_may_retry_failures(
        self, store: ImmutableStore
    ) -> None:
        runs = store.map_runs
        await runs.start("run_1", kind="agentic", config={}, inputs=['"a"', '"b"'])
        await runs.claim("run_1", 0)
        await runs.note_error("run_1", 0, "transient")
        await runs.fail("run_1", 0, "gave up")
        await runs.claim("run_1", 1)
        await runs.release("run_1", 1)
        rows, existed = await runs.start(
            "run_1", kind="agentic", config={}, inputs=['"a"', '"b"'], retry_failed=True
        )
        assert existed
        assert [(r.state, r.error) for r in rows] == [("failed", "gave up"), ("pending", None)]
        assert [r.state for r in await runs.items("run_1")] == ["pending", "pending"]

    async def test_resuming_with_other_inputs_or_kind_is_refused(
        self, store: ImmutableStore
    ) -> None:
        runs = store.map_runs
        await runs.start("run_1", kind="agentic", config={"m": "x"}, inputs=['"a"'])
        with pytest.raises(InvalidArgumentError):
            await runs.start("run_1", kind="agentic", config={}, inputs=['"b"'])
        with pytest.raises(InvalidArgumentError):
            await runs.start("run_1", kind="llm", config={}, inputs=['"a"'])
        with pytest.raises(InvalidArgumentError):
            await runs.start(
                "run_1", kind="agentic", config={"m": "y"}, inputs=['"a"'], fixed_keys=["m"]
            )
