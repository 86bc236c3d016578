"""Prompts live in one module and every one of them can be overridden in config."""

from __future__ import annotations

from mnesis import MnesisConfig, MnesisSession, StorePool, TextPart, ToolPart
from mnesis.compaction import prompts
from mnesis.config import CompactionConfig
from mnesis.llm import Empty, FakeLLM


async def _compacted_system_prompts(db_path: str, compaction: CompactionConfig) -> list[str]:
    llm = FakeLLM()
    config = MnesisConfig(
        model_overrides={"context_limit": 32_000, "max_output_tokens": 2_000},
        compaction=compaction,
    )
    pool = StorePool()
    session = await MnesisSession.create(
        model="fake/m", db_path=db_path, pool=pool, llm=llm, config=config
    )
    for i in range(40):
        await session.record(
            f"step {i}",
            [
                TextPart(text=f"running {i}"),
                ToolPart(tool_name="bash", tool_call_id=f"c{i}", output="ok\n" * 300),
            ],
        )
    llm.calls.clear()
    llm.script(Empty())  # level 1 rejected, so level 2 runs too
    await session.compact()
    await session.close()
    await pool.close_all()
    return [str(call.messages[0]["content"]) for call in llm.calls if call.purpose == "compaction"]


class TestPromptOverrides:
    async def test_the_default_prompts_come_from_the_prompts_module(self, db_path: str) -> None:
        sent = await _compacted_system_prompts(
            db_path, CompactionConfig(compaction_output_budget=4_000, auto=False)
        )
        assert sent[0].startswith(prompts.LEVEL1_PROMPT.split("{")[0][:60])
        assert sent[1].startswith(prompts.LEVEL2_PROMPT.split("{")[0][:60])

    async def test_level1_and_level2_prompts_can_be_overridden(self, db_path: str) -> None:
        sent = await _compacted_system_prompts(
            db_path,
            CompactionConfig(
                compaction_output_budget=4_000,
                auto=False,
                compaction_prompt="CUSTOM ONE within {target_tokens} tokens",
                level2_prompt="CUSTOM TWO within {target_tokens} tokens",
            ),
        )
        assert sent[0].startswith("CUSTOM ONE within ") and "{target_tokens}" not in sent[0]
        assert sent[1].startswith("CUSTOM TWO within ")
