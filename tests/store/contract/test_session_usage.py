"""The store contract: a session's token usage kept as running sums (m015).

The sums a read returns always equal a fresh ``SUM`` over the session's messages, whatever
was written between reads (appends, batches, usage set after the fact on a message the
sums already cover or on a newer one); a read sums only the messages after the kept row;
a purge removes the row with its session.
"""

from __future__ import annotations

from pathlib import Path

from mnesis.integrity import IntegrityChecker, ViolationKind
from mnesis.integrity.repair import apply_repairs, plan_repairs
from mnesis.models.parts import TextPart
from mnesis.models.tokens import TokenUsage
from mnesis.store import ImmutableStore, NewMessage
from tests.store.contract.helpers import append_text, make_message, new_session
from tests.store.contract.raw import RawSQL

K = ViolationKind

_FRESH = (
    "SELECT COALESCE(SUM(tokens_input), 0), COALESCE(SUM(tokens_output), 0), "
    "COALESCE(SUM(tokens_cache_read), 0), COALESCE(SUM(tokens_cache_write), 0), "
    "COALESCE(SUM(tokens_total), 0) FROM messages WHERE session_id = ? AND seq <= ?"
)


def _fresh(raw: RawSQL, sid: str, upto_seq: int = 2**62) -> tuple[int, ...]:
    """The usage of the session's messages up to ``upto_seq``, summed now."""
    return tuple(int(v) for v in raw.rows(_FRESH, sid, upto_seq)[0])


async def _read(store: ImmutableStore, sid: str) -> tuple[int, ...]:
    u = await store.session_token_usage(sid)
    return (u.input, u.output, u.cache_read, u.cache_write, u.total)


def _kept(raw: RawSQL, sid: str) -> list[tuple[int, ...]]:
    rows = raw.rows(
        "SELECT upto_seq, sum_input, sum_output, sum_cache_read, sum_cache_write, sum_total "
        "FROM session_usage WHERE session_id = ?",
        sid,
    )
    return [tuple(int(v) for v in row) for row in rows]


async def _assistant(store: ImmutableStore, sid: str, n: int) -> str:
    usage = TokenUsage(input=100 + n, output=10 + n, cache_read=n, cache_write=n % 3)
    appended = await store.append_message(
        make_message(sid, "assistant", tokens=usage), [TextPart(text=f"answer {n}")]
    )
    return appended.message_id


class TestKeptUsage:
    async def test_the_sums_equal_a_fresh_sum_through_every_kind_of_write(
        self, store: ImmutableStore, raw: RawSQL
    ) -> None:
        sid = await new_session(store)
        other = await new_session(store)
        ids = [await _assistant(store, sid, n) for n in range(5)]
        await _assistant(store, other, 99)
        assert _kept(raw, sid) == []
        assert await _read(store, sid) == _fresh(raw, sid) != (0, 0, 0, 0, 0)
        assert _kept(raw, sid) == [(5, *_fresh(raw, sid))]

        # Newer messages, one by one and as an import's batch.
        ids += [await _assistant(store, sid, n) for n in range(5, 8)]
        await store.append_batch(
            [
                NewMessage(
                    make_message(sid, "assistant", tokens=TokenUsage(input=7, output=3)),
                    [TextPart(text="imported")],
                )
            ]
        )
        assert await _read(store, sid) == _fresh(raw, sid)
        assert _kept(raw, sid)[0][0] == 9

        # Usage set after the fact, on a message the sums cover and on a newer one.
        await store.update_message_tokens(ids[1], tokens=TokenUsage(input=1, output=2, total=50))
        assert _kept(raw, sid) == [(9, *_fresh(raw, sid))]
        newer = await append_text(store, sid, "streaming", "assistant")
        await store.update_message_tokens(newer, tokens=TokenUsage(input=40, output=4))
        await store.append_parts(
            ids[2], [TextPart(text="more")], tokens=TokenUsage(input=5, cache_write=9)
        )
        assert _kept(raw, sid) == [(9, *_fresh(raw, sid, 9))] != [(9, *_fresh(raw, sid))]
        assert await _read(store, sid) == _fresh(raw, sid)
        assert _kept(raw, sid) == [(10, *_fresh(raw, sid))]
        # A change of the newest message after it was summed, then a read with nothing newer.
        await store.update_message_tokens(newer, tokens=TokenUsage(input=41, output=5))
        assert await _read(store, sid) == _fresh(raw, sid) == _kept(raw, sid)[0][1:]
        assert await _read(store, other) == _fresh(raw, other)

    async def test_a_read_sums_only_the_messages_after_the_kept_row(
        self, store: ImmutableStore, raw: RawSQL
    ) -> None:
        sid = await new_session(store)
        for n in range(3):
            await _assistant(store, sid, n)
        await _read(store, sid)
        # The kept row stands for the three first messages: a read does not look at them.
        raw.rows(
            "UPDATE session_usage SET sum_input = 1000, sum_output = 0, sum_cache_read = 0, "
            "sum_cache_write = 0, sum_total = 0 WHERE session_id = ?",
            sid,
        )
        assert await _read(store, sid) == (1000, 0, 0, 0, 0)
        await _assistant(store, sid, 3)
        assert await _read(store, sid) == (1103, 13, 3, 0, 119)

    async def test_an_unknown_or_empty_session_has_no_usage_and_no_row(
        self, store: ImmutableStore, raw: RawSQL
    ) -> None:
        sid = await new_session(store)
        assert await _read(store, sid) == (0, 0, 0, 0, 0)
        assert await _read(store, "sess_missing") == (0, 0, 0, 0, 0)
        assert raw.count("session_usage") == 0

    async def test_a_purge_removes_the_sessions_row(
        self, store: ImmutableStore, raw: RawSQL
    ) -> None:
        parent = await new_session(store)
        child = await new_session(store, parent_id=parent)
        kept = await new_session(store)
        for sid in (parent, child, kept):
            await _assistant(store, sid, 1)
            await _read(store, sid)
        assert raw.count("session_usage") == 3
        await store.purge_session(parent)
        assert [r[0] for r in raw.rows("SELECT session_id FROM session_usage")] == [kept]
        assert await _read(store, parent) == (0, 0, 0, 0, 0)
        assert await _read(store, kept) == _fresh(raw, kept)


class TestUsageCheck:
    """``check --deep`` compares the kept sums with a fresh sum; a repair drops them."""

    async def test_kept_sums_match_after_every_kind_of_write(
        self, store: ImmutableStore, raw: RawSQL
    ) -> None:
        sid = await new_session(store)
        assert await store.check_usage(sid) is None
        ids = [await _assistant(store, sid, n) for n in range(4)]
        await _read(store, sid)
        await store.update_message_tokens(ids[1], tokens=TokenUsage(input=3, output=2, total=9))
        await store.append_parts(ids[2], [TextPart(text="more")], tokens=TokenUsage(input=8))
        await _assistant(store, sid, 9)
        check = await store.check_usage(sid)
        assert check is not None and check.matches
        assert (check.upto_seq, *check.kept) == _kept(raw, sid)[0]
        assert check.fresh == _fresh(raw, sid, 4)
        report = await IntegrityChecker(store, deep=True).run(sid)
        assert K.USAGE_MISMATCH not in report.by_kind()

    async def test_drifted_sums_are_reported_and_repaired(
        self, store: ImmutableStore, raw: RawSQL, tmp_path: Path
    ) -> None:
        sid = await new_session(store)
        other = await new_session(store)
        for n in range(3):
            await _assistant(store, sid, n)
            await _assistant(store, other, n)
        await _read(store, sid)
        await _read(store, other)
        raw.rows("UPDATE session_usage SET sum_output = sum_output + 5 WHERE session_id = ?", sid)
        # Only a deep check compares them (it reads every message's usage).
        assert K.USAGE_MISMATCH not in (await IntegrityChecker(store).run(sid)).by_kind()
        report = await IntegrityChecker(store, deep=True).run()
        drifted = [v for v in report.violations if v.kind == K.USAGE_MISMATCH]
        assert [(v.session_id, v.repairable) for v in drifted] == [(sid, True)]
        assert "seq 3" in drifted[0].detail
        assert await _read(store, sid) != _fresh(raw, sid)

        plan = plan_repairs(report)
        assert [(a.action, a.session_id) for a in plan.actions] == [("reset_usage", sid)]
        await apply_repairs(store, plan, backup_path=str(tmp_path / "before-repair.db"))
        assert _kept(raw, sid) == [] and len(_kept(raw, other)) == 1
        assert await _read(store, sid) == _fresh(raw, sid)
        assert _kept(raw, sid) == [(3, *_fresh(raw, sid))]
        assert (await IntegrityChecker(store, deep=True).run()).ok
