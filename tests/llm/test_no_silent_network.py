"""No silent network (issue 27, item 6): compaction calls a model only when the user gave
one (``llm=`` or ``compaction.compaction_model``). With litellm installed (it is, in the
dev environment) a record-only session that gave neither compacts offline, makes no
network attempt and says so once."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mnesis import MnesisSession
from mnesis._session import wiring
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.llm import FakeLLM, litellm_available
from mnesis.llm.litellm_client import import_litellm

MODEL = "anthropic/claude-sonnet-4-5"
SMALL = {"context_limit": 8_000, "max_output_tokens": 1_000}


class Attempts:
    """Every outbound connection and every litellm completion call, each refused."""

    def __init__(self) -> None:
        self.connects: list[Any] = []
        self.lookups: list[Any] = []
        self.completions: list[str] = []


@pytest.fixture
def attempts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Attempts]:
    assert litellm_available(), "the dev environment installs litellm"
    litellm = import_litellm()
    seen = Attempts()
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        if self.family == socket.AF_UNIX:
            return real_connect(self, address)
        seen.connects.append(address)
        raise OSError("network disabled by the test")

    def getaddrinfo(*args: Any, **kwargs: Any) -> Any:
        seen.lookups.append(args[:2])
        raise OSError("network disabled by the test")

    async def acompletion(**kwargs: Any) -> Any:
        seen.completions.append(kwargs.get("model", ""))
        raise RuntimeError("litellm called by the test")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(litellm, "acompletion", acompletion)
    monkeypatch.setattr(wiring, "_notices_logged", set(), raising=False)
    monkeypatch.delenv("MNESIS_MOCK_LLM", raising=False)
    yield seen


def _config(**compaction: Any) -> MnesisConfig:
    return MnesisConfig(
        model_overrides=SMALL,
        compaction=CompactionConfig(
            compaction_output_budget=1_000,
            prune_protect_tokens=1_000,
            prune_minimum_tokens=500,
            **compaction,
        ),
    )


async def _record(session: MnesisSession, turns: int) -> None:
    for i in range(turns):
        await session.record(
            f"turn {i}: where is setting_{i}? " + "context " * 40,
            f"setting_{i} lives in config/{i}.toml " + "detail " * 40,
        )


def _notices(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "mnesis.session"]


async def test_a_record_only_session_without_a_model_compacts_offline_with_no_network(
    tmp_path: Path, attempts: Attempts, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mnesis.session")
    db = str(tmp_path / "s.db")
    session = await MnesisSession.create(model=MODEL, db_path=db, config=_config())
    await _record(session, 40)
    forced = await session.compact()
    await session.close()
    again = await MnesisSession.load(session.id, db_path=db)  # a second session object
    await again.compact()
    await again.close()

    assert attempts.completions == [] and attempts.connects == [] and attempts.lookups == []
    summaries = [m for m in await _messages(db, session.id) if m.message.is_summary]
    assert summaries, "compaction committed no summary"
    assert forced.error is None
    [notice] = _notices(caplog)
    assert "offline extractive summariser" in notice and "compaction_model" in notice


async def _messages(db: str, session_id: str) -> list[Any]:
    session = await MnesisSession.load(session_id, db_path=db)
    try:
        return await session.messages()
    finally:
        await session.close()


async def test_a_compaction_model_the_user_set_is_called(
    tmp_path: Path, attempts: Attempts, caplog: pytest.LogCaptureFixture
) -> None:
    """The guard above can fail: naming a compaction model makes litellm calls (refused
    here, so compaction falls back to its deterministic level)."""
    caplog.set_level(logging.WARNING, logger="mnesis.session")
    config = _config(compaction_model="anthropic/claude-haiku-4-5", auto=False)
    session = await MnesisSession.create(model=MODEL, db_path=str(tmp_path / "s.db"), config=config)
    await _record(session, 40)
    result = await session.compact()
    await session.close()
    assert attempts.completions and set(attempts.completions) == {
        config.compaction.compaction_model
    }
    assert result.level_used > 0
    assert _notices(caplog) == []


async def test_an_llm_the_user_gave_summarises(
    tmp_path: Path, attempts: Attempts, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mnesis.session")
    llm = FakeLLM()
    session = await MnesisSession.create(
        model=MODEL, db_path=str(tmp_path / "s.db"), llm=llm, config=_config(auto=False)
    )
    await _record(session, 40)
    result = await session.compact()
    await session.close()
    assert result.level_used > 0
    assert {c.purpose for c in llm.calls} == {"compaction"}
    assert attempts.completions == [] and attempts.connects == []
    assert _notices(caplog) == []
