"""SQLite: every index is used by one of the store's own statements, and the statements
of the hot paths (append, reads of a session, context, search, lineage) use an index.

The statements are the real ones: a workload drives every store operation through
the public facade while SQLite's trace callback records each statement it runs; each
is then planned with ``EXPLAIN QUERY PLAN`` on the same database.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from mnesis.models.parts import TextPart, ToolPart, ToolStatus
from mnesis.models.tokens import TokenUsage
from mnesis.store import ImmutableStore, StorePool
from mnesis.store.base import ImportSource, NewMessage, SearchFilter
from mnesis.store.search_query import SearchQuery, Term
from tests.store.contract.helpers import make_commit, make_message, message_items, new_session
from tests.store.sqlite.helpers import sqlite_db

_HOT_TABLES = ("messages", "message_parts", "context_slots", "summaries", "summary_messages")
_VIEW_ROWS = re.compile(r"^\s*(UPDATE|DELETE FROM) context_items\b")
"""An update or delete of the ``context_items`` view (m010) scans the rows it selected
(planned with the view's tables above them) to run its ``INSTEAD OF`` trigger per row."""
_NOT_DRIVEN = {"part_vectors_scan_idx", "summary_vectors_scan_idx"}
"""Indexes of the optional semantic extra (m007_vectors), whose statements this
workload does not run."""
_WHOLE_TABLE_READS = (
    # Reads that are meant to visit every row of what they name.
    "FROM summary_messages sm JOIN summaries",
    "FROM summary_parents sp JOIN summaries",
)


async def _workload(store: ImmutableStore) -> None:
    parent = await new_session(store)
    child = await new_session(store, parent_id=parent)
    for sid in (parent, child):
        for turn in range(8):
            await store.append_message(
                make_message(sid, "user"), [TextPart(text=f"where is the heron {turn}?")]
            )
            appended = await store.append_message(
                make_message(sid, "assistant"),
                [
                    TextPart(text=f"on the pier {turn}"),
                    ToolPart(
                        tool_name="look",
                        tool_call_id=f"call_{turn}",
                        input={"at": "pier"},
                        status=ToolStatus(state="running"),
                    ),
                ],
            )
            await store.update_part_status(
                appended.part_ids[1], state="completed", output="heron seen", completed_at=1
            )
            await store.update_message_tokens(appended.message_id, token_estimate=40)
        await store.append_messages(
            [NewMessage(make_message(sid, "user"), [TextPart(text="batch heron")])] * 1
        )
        # The import's write path: the batch's parts are indexed together.
        await store.append_batch(
            [
                NewMessage(make_message(sid, role), [TextPart(text=f"imported heron {role}")])
                for role in ("user", "assistant")
            ]
        )
        items = await message_items(store, sid)
        first = make_commit(sid, items[:4])
        await store.commit_compaction(first)
        second = make_commit(sid, (await message_items(store, sid))[:4])
        await store.commit_compaction(second)
        summaries = await store.get_context_items(sid, item_type="summary")
        condensed = make_commit(
            sid, summaries, parents=await store.get_summaries([first.summary.id, second.summary.id])
        )
        await store.commit_compaction(condensed)
        ids = [m.message.id for m in await store.get_messages(sid)]
        await store.append_parts(ids[-1], [TextPart(text="one more heron")])
        await store.tombstone_parts([], [])
        await store.find_tool_part(sid, "call_7")
        await store.get_messages(sid, after_seq=3, limit=5)
        await store.get_messages_by_ids(ids[:3])
        await store.count_messages(sid)
        await store.session_token_usage(sid)
        # A change of usage the kept sums cover adjusts them (m015).
        await store.update_message_tokens(ids[1], tokens=TokenUsage(input=3, output=2))
        await store.session_token_usage(sid)
        await store.get_context_items(sid)
        await store.get_context_items(sid, newest_first=True, before_position=5, limit=3)
        await store.context_token_total(sid)
        await store.get_summary_source_ids(first.summary.id)
        await store.get_summary_parent_ids(condensed.summary.id)
        await store.get_summaries_merging(first.summary.id)
        await store.get_leaf_summaries_of_message(ids[0])
        await store.get_source_message_ids_deep(condensed.summary.id)
        await store.covering_context_summaries(sid, ids[:3])
        await store.messages_in_context(sid, ids)
        where = SearchFilter(session_ids=[sid])
        query = SearchQuery(all_of=(Term.word("heron"),))
        await store.search_text(query=query, scope="messages", where=where, limit=5)
        await store.search_text(query=query, scope="summaries", where=where, limit=5)
        under = SearchFilter(session_ids=[sid], under_summary=condensed.summary.id)
        await store.search_text(query=query, scope="messages", where=under, limit=5)
        await store.scan_text(scope="messages", where=where, before_key=None, limit=5)
        await store.scan_text(scope="summaries", where=where, before_key=None, limit=5)
        await store.replies_to(ids[:4])
        await store.context_places(ids[:6], [condensed.summary.id])
        await store.recent_turns([sid, parent], 8)
        await store.integrity_snapshot(sid)
        owner = await store.acquire_compaction_lock(sid, "me", ttl_seconds=60)
        assert owner
        await store.compaction_lock_owner(sid)
        await store.release_compaction_lock(sid, "me")
    await store.list_sessions()
    await store.list_session_ids()
    await store.get_session(parent)
    await store.put_import_source(ImportSource("key", "jsonl", "/tmp/a", child))
    await store.get_import_source("key")
    runs = store.map_runs
    await runs.start("run_1", kind="agentic", config={}, inputs=['"a"', '"b"'])
    assert await runs.claim("run_1", 0) == 1
    await runs.attach_session("run_1", 0, child)
    await runs.complete("run_1", 0, '"out"', child)
    assert await runs.claim("run_1", 1) == 1
    await runs.fail("run_1", 1, "boom")
    await runs.start("run_1", kind="agentic", config={}, inputs=['"a"', '"b"'], retry_failed=True)
    await runs.items("run_1")
    await store.purge_session(parent)


def _statements(log: list[str]) -> list[str]:
    wanted = re.compile(r"^\s*(SELECT|UPDATE|DELETE|INSERT|WITH)\b", re.IGNORECASE)
    return list(dict.fromkeys(s for s in log if wanted.match(s) and "sqlite_" not in s))


def _plans(path: str, statements: list[str], *, parameters: bool = False) -> dict[str, str]:
    conn = sqlite3.connect(path)
    try:
        plans = {}
        for statement in statements:
            args = [None] * statement.count("?") if parameters else []
            rows = conn.execute("EXPLAIN QUERY PLAN " + statement, args).fetchall()
            plans[statement] = "\n".join(r[3] for r in rows)
        return plans
    finally:
        conn.close()


async def test_every_index_is_used_and_every_hot_statement_uses_one(
    tmp_path: Path, pool: StorePool
) -> None:
    path = str(tmp_path / "plans.db")
    store = await pool.acquire(db_path=path)
    log: list[str] = []
    await sqlite_db(store).read(lambda conn: conn.set_trace_callback(log.append))
    await _workload(store)
    await sqlite_db(store).read(lambda conn: conn.set_trace_callback(None))
    await store.close()
    plans = _plans(path, _statements(log))
    assert len(plans) > 60

    conn = sqlite3.connect(path)
    indexes = {
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        )
    }
    conn.close()
    used = {i for i in indexes for plan in plans.values() if re.search(rf"\b{i}\b", plan)}
    assert indexes - used - _NOT_DRIVEN == set()

    full_scans = {
        statement: plan
        for statement, plan in plans.items()
        if any(re.search(rf"\bSCAN {t}\b(?! USING)", plan) for t in _HOT_TABLES)
        and not any(marker in statement for marker in _WHOLE_TABLE_READS)
    }
    assert full_scans == {}
    # Reads of the view are flattened into its tables' indexes; only the view's own
    # update or delete scans what it selected.
    through_view = {s: p for s, p in plans.items() if re.search(r"\bcontext_items\b", s)}
    assert len(through_view) > 10
    scanned = {s for s, p in through_view.items() if re.search(r"\bSCAN context_items\b", p)}
    assert scanned and all(_VIEW_ROWS.match(s) for s in scanned), scanned
    for statement in scanned:
        assert re.search(r"SEARCH context_slots USING (PRIMARY KEY|INDEX)", plans[statement])
    # The writer reads back the row keys of the parts it just inserted, to index them.
    bulk = [s for s in plans if "FROM message_parts WHERE rowid >" in s]
    assert bulk and all("USING INTEGER PRIMARY KEY (rowid>?)" in plans[s] for s in bulk)


def _trigger_statements(sql: str) -> list[str]:
    """The statements a trigger runs (its ``WHEN`` as a ``SELECT``), each reference to
    ``NEW`` or ``OLD`` made a parameter and each ``RAISE`` (trigger-only) a constant."""
    head, body = re.split(r"\bBEGIN\b", sql, maxsplit=1)
    when = re.search(r"\bWHEN\b(.*)$", head, re.DOTALL)
    found = [f"SELECT {when.group(1)}"] if when else []
    found += [s for s in body.rsplit("END", 1)[0].split(";") if s.strip()]
    found = [re.sub(r"RAISE\(ABORT, '[^']*'\)", "1", s) for s in found]
    found = [s for s in found if s.strip() != "SELECT 1"]
    return [re.sub(r"\b(NEW|OLD)\.\w+", "?", s) for s in found]


async def test_the_context_view_triggers_use_an_index(tmp_path: Path, pool: StorePool) -> None:
    path = str(tmp_path / "triggers.db")
    store = await pool.acquire(db_path=path)
    await new_session(store)
    await store.close()
    conn = sqlite3.connect(path)
    triggers = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' "
        "AND (tbl_name = 'context_items' OR sql LIKE '%context_slots%')"
    ).fetchall()
    conn.close()
    assert len(triggers) == 6
    statements = [s for _, sql in triggers for s in _trigger_statements(sql)]
    plans = _plans(path, statements, parameters=True)
    assert len(plans) == 8
    for statement, plan in plans.items():
        assert not re.search(r"\bSCAN (sessions|messages|context_slots)\b", plan), statement
        assert "SEARCH" in plan, statement
