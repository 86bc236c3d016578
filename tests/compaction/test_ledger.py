"""Issue 33, item 8: the loss ledger. Each compaction records what it took out of the view
(IDs, tokens) and the entities that left it with the IDs that still hold them; the
ledger is read back by ``mnesis compactions`` and the HTML report, and every entity that
left the view is reachable with one grep."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mnesis import MnesisSession
from mnesis.cli import app
from mnesis.compaction.ledger import (
    MAX_SCAN_CHARS,
    extract_entities,
    leaf_ledger,
    message_texts,
)
from mnesis.compaction.ledger_read import read_ledger
from mnesis.config import MnesisConfig
from mnesis.models.ledger import LedgerEntity, LossLedger, unpack_ledger
from mnesis.models.message import Message, MessageWithParts
from mnesis.models.parts import CompactionPart, MessagePart, TextPart, ToolPart
from mnesis.report import collect, render_html
from mnesis.store.codec import decode_part, dumps, encode_part

TURNS = 36


def test_entities_are_read_off_the_text_by_kind() -> None:
    text = (
        "We decided to keep the retry budget at 250ms for payments.\n"
        "The handler lives in src/billing/retry_policy.py (see https://example.com/docs/retry).\n"
        "$ pytest -k test_retry_budget\n"
        "RetryPolicy.max_attempts is 12 and the ratio is 0.75; a plain word is not one."
    )
    found = set(extract_entities(text))
    assert {
        ("decision", "We decided to keep the retry budget at 250ms for payments."),
        ("number", "250ms"),
        ("path", "src/billing/retry_policy.py"),
        ("url", "https://example.com/docs/retry"),
        ("command", "pytest -k test_retry_budget"),
        ("identifier", "test_retry_budget"),
        ("identifier", "RetryPolicy.max_attempts"),
        ("number", "12"),
        ("number", "0.75"),
    } <= found
    assert not {value for _, value in found} & {"plain", "word", "handler", "ratio"}
    # Bounded: nothing past the scanned prefix of a text is read.
    assert extract_entities("x " * MAX_SCAN_CHARS + "src/late/entity.py") == []


def _message(mid: str, parts: list[MessagePart]) -> MessageWithParts:
    return MessageWithParts(
        message=Message(id=mid, session_id="sess_x", role="assistant", created_at=1), parts=parts
    )


def test_a_leaf_ledger_lists_what_the_summary_dropped_and_where_it_is() -> None:
    covered = [
        _message("msg_a", [TextPart(text="Edit src/app/main.py and src/app/db.py now.")]),
        _message(
            "msg_b",
            [
                ToolPart(
                    tool_name="bash",
                    tool_call_id="c1",
                    input={"command": "make migrate"},
                    output="applied 0042_add_index to postgres://db.internal:5432/app",
                    status={"state": "completed"},
                )
            ],
        ),
    ]
    ledger = leaf_ledger(covered, "Summary: edited src/app/main.py.", 900, 0)
    dropped = {(e.kind, e.value): e.found_in for e in ledger.dropped}
    assert dropped[("path", "src/app/db.py")] == ["msg_a"]
    assert dropped[("command", "make migrate")] == ["msg_b"]
    assert dropped[("url", "postgres://db.internal:5432/app")] == ["msg_b"]
    assert ("path", "src/app/main.py") not in dropped
    assert ledger.removed_message_ids == ["msg_a", "msg_b"]
    assert ledger.entities_kept == 1
    assert ledger.dropped_total == len(ledger.dropped) == ledger.entities_seen - 1


def _turn(turn: int) -> list[MessagePart]:
    lines = "\n".join(
        f"checked services/svc_{turn}/handler_{i}.py: latency {turn * 100 + i}ms ok"
        for i in range(40)
    )
    return [
        TextPart(text=f"Step {turn}: we decided to pin worker_pool_{turn} to 4 threads."),
        ToolPart(
            tool_name="bash",
            tool_call_id=f"call_{turn}",
            input={"command": f"make check SVC=svc_{turn}"},
            output=f"see https://ci.example.com/runs/{9000 + turn}\n{lines}",
            status={"state": "completed"},
        ),
    ]


async def _summarise(messages: list[dict[str, Any]]) -> str:
    return "Summary: the services were checked step by step."


def _holds(stored: MessageWithParts, value: str) -> bool:
    texts = [t for t, _ in message_texts(stored)]
    texts += [p.output or "" for p in stored.parts if isinstance(p, ToolPart)]
    texts += [v for p in stored.parts if isinstance(p, ToolPart) for v in p.input.values()]
    return any(value in str(t) for t in texts)


async def test_every_compaction_records_its_ledger_and_every_dropped_entity_is_found(
    db_path: str,
) -> None:
    session = await MnesisSession.create(
        model="local/model",
        llm=_summarise,
        db_path=db_path,
        config=MnesisConfig(),
        context_limit=16_000,
        max_output_tokens=2_000,
    )
    for turn in range(TURNS):
        await session.record(f"Turn {turn}: next step.", _turn(turn))
        await session.compaction_engine.wait_for_pending()
    rows, without = await read_ledger(session.store, session.id)
    assert without == 0
    kinds = {r.ledger.kind for r in rows}
    assert {"leaf", "prune"} <= kinds, kinds
    snapshot = await session.store.integrity_snapshot(session.id)
    sources: dict[str, list[str]] = {}
    for summary_id, message_id in snapshot.summary_messages:
        sources.setdefault(summary_id, []).append(message_id)
    assert {r.summary_id for r in rows if r.summary_id} == {s[0] for s in snapshot.summaries}
    for row in rows:
        ledger = row.ledger
        if ledger.kind == "leaf":
            assert row.summary_id is not None
            assert ledger.removed_message_ids == sources[row.summary_id]
            assert 0 < ledger.tokens_added < ledger.tokens_removed
        for entity in ledger.dropped:
            assert entity.found_in
            if ledger.kind == "condensed":
                children = await session.store.get_summaries(entity.found_in)
                assert all(entity.value in c.content for c in children)
            else:
                held = await session.store.get_messages_by_ids(entity.found_in)
                assert all(_holds(m, entity.value) for m in held), (entity, ledger.kind)
    # Every planted path that left the view is in the ledger and reachable by one grep.
    view = json.dumps(await session.context_for_next_turn(format="text"))
    dropped = {e.value for r in rows for e in r.ledger.dropped}
    gone = [
        f"services/svc_{t}/handler_7.py"
        for t in range(TURNS)
        if f"services/svc_{t}/handler_7.py" not in view
    ]
    assert len(gone) >= TURNS // 2
    # Listed, or (past the per-kind cap of a ledger) held by a message that ledger names.
    capped = [i for r in rows if r.ledger.dropped_total > len(r.ledger.dropped)
              for i in r.ledger.removed_message_ids]  # fmt: skip
    named = await session.store.get_messages_by_ids(capped)
    for path in gone:
        assert path in dropped or any(_holds(m, path) for m in named), path
    assert len([p for p in gone if p in dropped]) >= len(gone) // 2
    for path in gone[:: max(1, len(gone) // 5)]:
        found = await session.grep(f'"{path}"', limit=5)
        hits = await session.store.get_messages_by_ids(
            [m.id for m in found.matches if m.kind == "message"]
        )
        assert any(_holds(m, path) for m in hits), path
    # The CLI and the report show it.
    store, sid = session.store, session.id
    data = await collect(store, sid)
    assert len(data.ledger) == len(rows)
    page = render_html(data)
    last = next(r for r in reversed(rows) if r.ledger.dropped)
    assert "Loss ledger" in page and last.ledger.dropped[0].value in page
    await session.close()


async def _recorded(db_path: str, turns: int) -> str:
    session = await MnesisSession.create(
        model="local/model",
        llm=_summarise,
        db_path=db_path,
        config=MnesisConfig(),
        context_limit=16_000,
        max_output_tokens=2_000,
    )
    for turn in range(turns):
        await session.record(f"Turn {turn}: next step.", _turn(turn))
        await session.compaction_engine.wait_for_pending()
    await session.close()
    return session.id


async def test_the_ledger_is_stored_with_the_summary_on_both_backends(db_path: str) -> None:
    session = await MnesisSession.create(
        model="local/model",
        llm=_summarise,
        db_path=db_path,
        config=MnesisConfig(compaction={"auto": False}),
        context_limit=16_000,
    )
    for turn in range(6):
        await session.record(f"Turn {turn}: next step.", _turn(turn))
    result = await session.compact()
    assert result.summary_id is not None
    rows, without = await read_ledger(session.store, session.id)
    leaf = next(r for r in rows if r.summary_id == result.summary_id)
    assert without == 0 and leaf.ledger.kind == "leaf"
    dropped = {e.value: e.found_in for e in leaf.ledger.dropped}
    assert dropped["make check SVC=svc_0"] == [leaf.ledger.removed_message_ids[1]]
    await session.close()


def test_mnesis_compactions_lists_the_ledger(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    sid = asyncio.run(_recorded(db, 16))
    result = CliRunner().invoke(app, ["compactions", sid, "--db", db, "--json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)["rows"]
    assert {"leaf", "prune"} <= {r["kind"] for r in listed}
    leaf = next(r for r in listed if r["kind"] == "leaf")
    assert leaf["summary_id"].startswith("sum_") and leaf["removed_message_ids"]
    assert leaf["token_delta"] == leaf["tokens_added"] - leaf["tokens_removed"] < 0
    assert len(leaf["dropped"]) == min(8, leaf["dropped_total"]) > 0
    entity = leaf["dropped"][0]
    assert set(entity["found_in"]) <= set(leaf["removed_message_ids"])
    table = CliRunner().invoke(app, ["compactions", sid, "--db", db], terminal_width=200)
    assert table.exit_code == 0, table.output
    assert leaf["summary_id"] in table.stdout and "prune" in table.stdout


def test_a_marker_written_before_the_ledger_still_reads() -> None:
    part = CompactionPart.model_validate({"type": "compaction", "summary_id": "sum_x"})
    assert part.ledger is None


def test_a_marker_stores_its_ledger_compactly_and_reads_it_back() -> None:
    covered = [_message(f"msg_{i:026d}", _turn(i)) for i in range(6)]
    ledger = leaf_ledger(covered, "Summary: the services were checked.", 9_000, 300)
    assert len(ledger.dropped) > 100
    part = CompactionPart(summary_id="sum_x", level=1, ledger=ledger)
    stored = encode_part(part)["content"]
    old = dumps({**part.model_dump(exclude={"id"}), "ledger": ledger.model_dump()})
    # IDs as positions into the removed IDs, kinds and keys written once.
    assert len(stored) * 2 < len(old), (len(stored), len(old))
    for content in (stored, old):
        read = decode_part("prt_x", content, None, None, None, None)
        assert isinstance(read, CompactionPart) and read.ledger == ledger
    # A found_in ID the removed IDs do not hold is kept as it is.
    elsewhere = LedgerEntity(kind="path", value="a/b.py", found_in=["msg_elsewhere"])
    odd = ledger.model_copy(update={"dropped": [elsewhere]})
    dumped = CompactionPart(summary_id="sum_x", ledger=odd).model_dump_json()
    assert CompactionPart.model_validate_json(dumped).ledger == odd


@pytest.mark.sqlite_only("rewrites a marker row with raw sqlite3, as an older version wrote it")
def test_a_ledger_stored_in_the_old_form_reads_the_same(tmp_path: Path) -> None:
    db = str(tmp_path / "old.db")
    sid = asyncio.run(_recorded(db, 12))

    def shown() -> tuple[str, str]:
        listed = CliRunner().invoke(app, ["compactions", sid, "--db", db, "--json"])
        assert listed.exit_code == 0, listed.output
        leaf = next(r for r in json.loads(listed.stdout)["rows"] if r["kind"] == "leaf")
        described = CliRunner().invoke(app, ["describe", leaf["summary_id"], "--db", db, "--json"])
        assert described.exit_code == 0, described.output
        return listed.stdout, described.stdout

    before = shown()
    assert '"ledger": {' in before[1] and '"found_in"' in before[0]
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT rowid, content FROM message_parts WHERE part_type = 'compaction'"
        ).fetchall()
        assert rows and all('"v":2' in content.replace(" ", "") for _, content in rows)
        trigger = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'message_parts_immutable'"
        ).fetchone()[0]
        conn.execute("DROP TRIGGER message_parts_immutable")
        for rowid, content in rows:
            data = json.loads(content)
            data["ledger"] = LossLedger.model_validate(unpack_ledger(data["ledger"])).model_dump()
            conn.execute(
                "UPDATE message_parts SET content = ? WHERE rowid = ?", (json.dumps(data), rowid)
            )
        conn.execute(trigger)
    assert shown() == before
