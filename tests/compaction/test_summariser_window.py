"""Issue 33, item 7: the summariser's own input fits the stated window.

A scripted summarisation model records the size of every request it receives (the
prompt's tokens plus the ``max_tokens`` it is asked for). Before, a 16k
``model_overrides`` window was ignored by the ladder (128k assumed for an unknown
model) and a backlog compaction sent prompts many times the window.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnesis import MnesisSession
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.llm.base import LLMChunk, LLMRequest
from mnesis.models.parts import TextPart, ToolPart
from mnesis.tokens.estimator import TokenEstimator

ESTIMATOR = TokenEstimator()
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./-]{2,}")


@dataclass
class RecordingModel:
    """Answers compaction requests with the leading words of their input; records the
    size of every request (prompt tokens + the answer's ``max_tokens``)."""

    sizes: list[int] = field(default_factory=list)
    prompt_chars: list[int] = field(default_factory=list)

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        text = "\n".join(str(m.get("content", "")) for m in request.messages)
        self.sizes.append(ESTIMATOR.estimate(text) + (request.max_tokens or 0))
        self.prompt_chars.append(len(text))
        words = _WORD.findall(str(request.messages[-1].get("content", "")))[:50]
        yield LLMChunk(text="Summary: " + " ".join(words) + ".", finish_reason="stop")


def _output(turn: int, lines: int) -> str:
    return "\n".join(
        f"src/pkg/mod_{(turn + i) % 41}.py:{i}: def handler_{i}(request): return status {i}"
        for i in range(lines)
    )


async def _backlog(session: MnesisSession, turns: int) -> None:
    for turn in range(turns):
        tool = ToolPart(
            tool_name="bash",
            tool_call_id=f"call_{turn}",
            input={"command": f"grep -rn handler src/pkg --turn {turn}"},
            output=_output(turn, 60),
            status={"state": "completed"},
        )
        await session.record(f"Turn {turn}: look for the handlers.", [TextPart(text="ok"), tool])
    huge = ToolPart(
        tool_name="read_file",
        tool_call_id="call_huge",
        input={"path": "dump.log"},
        output=_output(999, 1_800),  # ~60k tokens: one message far above the window
        status={"state": "completed"},
    )
    await session.record("Read the dump.", [huge])
    for turn in range(3):
        await session.record(f"Next {turn}.", [TextPart(text=f"done {turn}")])


async def test_a_backlog_is_summarised_in_pieces_that_fit_the_session_window(
    tmp_path: Path,
) -> None:
    model = RecordingModel()
    config = MnesisConfig(
        compaction=CompactionConfig(auto=False, prune=False, max_compaction_rounds=60)
    )
    session = await MnesisSession.create(
        model="local/coder",
        llm=model,
        config=config,
        db_path=str(tmp_path / "s.db"),
        context_limit=16_000,
        max_output_tokens=2_000,
    )
    await _backlog(session, 30)
    before = session.context_tokens
    assert before > 80_000
    result = await session.compaction_engine.run_compaction(session.id)
    assert result.rounds > 2, result.stop_detail
    assert len(model.sizes) >= 3, "a backlog this size is summarised in several pieces"
    assert max(model.sizes) <= 16_000, max(model.sizes)
    assert max(model.prompt_chars) < 80_000  # 195,747 characters before
    assert result.tokens_after < before // 4
    await session.close()


async def test_an_explicit_compaction_window_is_honoured(tmp_path: Path) -> None:
    model = RecordingModel()
    config = MnesisConfig(
        model_overrides={"context_limit": 64_000, "max_output_tokens": 4_000},
        compaction=CompactionConfig(
            auto=False, prune=False, compaction_context_limit=4_096, max_compaction_rounds=40
        ),
    )
    session = await MnesisSession.create(
        model="local/coder", llm=model, config=config, db_path=str(tmp_path / "e.db")
    )
    assert session.compaction_engine.summariser_window("local/coder") == 4_096
    await _backlog(session, 12)
    result = await session.compaction_engine.run_compaction(session.id)
    assert result.rounds > 0 and model.sizes
    assert max(model.sizes) <= 4_096, max(model.sizes)
    await session.close()


def test_the_compaction_window_follows_the_configuration() -> None:
    from mnesis.compaction.engine import CompactionEngine

    def engine(config: MnesisConfig, model: str) -> CompactionEngine:
        return CompactionEngine(
            None,  # type: ignore[arg-type]  (only the window is asked for)
            None,  # type: ignore[arg-type]
            ESTIMATOR,
            None,  # type: ignore[arg-type]
            config,
            session_model=model,
        )

    small = MnesisConfig(model_overrides={"context_limit": 16_000})
    assert engine(small, "local/coder").summariser_window("local/coder") == 16_000
    assert engine(small, "local/coder").summariser_window("gpt-4o") == 128_000
    other: dict[str, Any] = {"compaction_model": "gpt-4o", "compaction_context_limit": 9_000}
    explicit = MnesisConfig(compaction=CompactionConfig(**other))
    assert engine(explicit, "claude-opus-4").summariser_window("gpt-4o") == 9_000
