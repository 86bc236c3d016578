"""Issue 33, item 6: every compaction says why it stopped (result, event, log, CLI)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mnesis import MnesisSession
from mnesis.cli import app
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.events.bus import MnesisEvent
from mnesis.models.message import CompactionResult
from mnesis.models.parts import TextPart, ToolPart

WINDOW = {"context_limit": 16_000, "max_output_tokens": 2_000}


def _config(**compaction: Any) -> MnesisConfig:
    return MnesisConfig(
        model_overrides=dict(WINDOW),
        compaction=CompactionConfig(**{"compaction_model": "extractive", **compaction}),
    )


def _reply(turn: int, chars: int = 2_400) -> list[TextPart]:
    words = " ".join(f"step{turn} changed module_{turn % 13}.py to fix bug {i}" for i in range(60))
    return [TextPart(text=words[:chars])]


async def _session(tmp_path: Path, turns: int, **compaction: Any) -> MnesisSession:
    session = await MnesisSession.create(
        model="fake/stop",
        db_path=str(tmp_path / "stop.db"),
        config=_config(auto=False, **compaction),
    )
    for turn in range(turns):
        await session.record(f"Turn {turn}: please continue with the fix.", _reply(turn))
    return session


async def _run(session: MnesisSession, *, force: bool = False) -> CompactionResult:
    return await session.compaction_engine.run_compaction(session.id, force=force)


async def test_done_when_the_context_reaches_the_target(tmp_path: Path) -> None:
    session = await _session(tmp_path, 24)
    events: list[dict[str, Any]] = []
    session.subscribe(MnesisEvent.COMPACTION_COMPLETED, lambda _e, p: events.append(p))
    result = await _run(session)
    assert result.stop_reason == "done", result.stop_detail
    assert result.tokens_after <= result.target_tokens
    assert result.tokens_left == 0 and result.rounds > 0
    assert events[-1]["result"]["stop_reason"] == "done"
    assert events[-1]["stop_detail"] == result.stop_detail
    await session.close()


async def test_nothing_to_do_is_not_success_with_work_left(tmp_path: Path) -> None:
    session = await _session(tmp_path, 2)
    result = await _run(session)
    assert result.stop_reason == "nothing_to_do"
    assert result.rounds == 0 and result.tokens_left == 0
    forced = await _run(session, force=True)  # two turns: all of it is the fresh tail
    assert forced.stop_reason == "nothing_to_do", forced.stop_detail
    await session.close()


async def test_round_cap_says_how_much_is_left(tmp_path: Path) -> None:
    session = await _session(tmp_path, 30, max_compaction_rounds=1, condensation_enabled=False)
    result = await _run(session)
    assert result.stop_reason == "round_cap", result.stop_detail
    assert result.rounds == 1
    assert result.tokens_left == result.tokens_after - result.target_tokens > 0
    assert f"{result.tokens_left:,}" in result.stop_detail
    await session.close()


async def test_irreducible_reports_the_protected_tail(tmp_path: Path) -> None:
    session = await _session(tmp_path, 0)
    big = ToolPart(
        tool_name="read_file",
        tool_call_id="call_big",
        input={"path": "src/generated.py"},
        output="\n".join(f"FIELD_{i} = Column(String({i}))  # generated" for i in range(600)),
        status={"state": "completed"},
    )
    await session.record("Read the generated file.", [big])
    result = await _run(session)
    assert result.stop_reason == "irreducible", result.stop_detail
    assert result.protected_tail_tokens > result.target_tokens > 0
    assert f"{result.protected_tail_tokens:,}" in result.stop_detail
    await session.close()


async def test_model_cooldown_when_the_model_keeps_failing(tmp_path: Path) -> None:
    async def failing(messages: list[dict[str, Any]]) -> str:
        raise RuntimeError("model server down")

    config = MnesisConfig(
        model_overrides=dict(WINDOW),
        compaction=CompactionConfig(
            auto=False,
            max_compaction_rounds=1,
            max_consecutive_model_failures=1,
            failure_cooldown_seconds=600,
        ),
    )
    session = await MnesisSession.create(
        model="local/failing", db_path=str(tmp_path / "c.db"), config=config, llm=failing
    )
    for turn in range(30):
        await session.record(f"Turn {turn}: continue.", _reply(turn))
    result = await _run(session)
    assert result.stop_reason == "model_cooldown", result.stop_detail
    assert result.level_used == 3 and result.tokens_left > 0
    assert "cooldown" in result.stop_detail
    await session.close()


async def test_lock_held_by_another_compactor(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    session = await _session(tmp_path, 24)
    assert await session.store.acquire_compaction_lock(session.id, "other_owner", 600)
    with caplog.at_level(logging.INFO, logger="mnesis.compaction"):
        result = await _run(session)
    assert result.stop_reason == "lock_held"
    assert result.error and result.rounds == 0
    assert any("stopped: lock_held" in r.getMessage() for r in caplog.records)
    await session.store.release_compaction_lock(session.id, "other_owner")
    with caplog.at_level(logging.INFO, logger="mnesis.compaction"):
        again = await _run(session)
    assert again.stop_reason == "done"
    assert any("stopped: done" in r.getMessage() for r in caplog.records)
    await session.close()


def test_the_cli_prints_the_stop_reason(tmp_path: Path) -> None:
    async def make() -> str:
        session = await _session(tmp_path, 24)
        await session.close()
        return session.id

    session_id, db = asyncio.run(make()), str(tmp_path / "stop.db")
    out = CliRunner().invoke(app, ["compact", session_id, "--db", db, "--model", "extractive"])
    assert out.exit_code == 0, out.output
    assert "Stopped: done" in out.output
    as_json = CliRunner().invoke(app, ["compact", session_id, "--db", db, "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert '"stop_reason"' in as_json.output
