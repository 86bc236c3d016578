"""``mnesis.testing``: seeded coding-agent sessions, their planted facts and their replay."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

from mnesis import MnesisSession, StorePool, ToolPart
from mnesis.testing import (
    DEMO,
    SESSIONS,
    ConversationSpec,
    FakeLLM,
    generate,
    iter_turns,
    planted_facts,
    replay,
)

MIGRATION = replace(DEMO, turns=300, seed=0)


def _dump(spec: ConversationSpec) -> list[object]:
    return [
        (t.user_text, [p.model_dump() for p in t.assistant], t.assistant_file_ids)
        for t in iter_turns(spec)
    ]


class TestDeterminism:
    def test_the_same_seed_gives_the_same_turns_and_another_seed_others(self) -> None:
        for spec in (replace(SESSIONS["bugfix_sprint"], turns=40), replace(DEMO, turns=80)):
            assert _dump(spec) == _dump(spec)
            assert _dump(spec) != _dump(replace(spec, seed=spec.seed + 1))

    def test_generate_and_iter_turns_give_the_same_turns(self) -> None:
        spec = SESSIONS["bugfix_sprint"]
        assert generate(spec).turns == tuple(iter_turns(spec))


class TestTheCatalogue:
    def test_sessions_hold_300_to_3000_messages(self) -> None:
        sizes = {spec.messages for spec in SESSIONS.values()}
        assert min(sizes) == 300 and max(sizes) == 3_000

    def test_artifact_flood_mentions_ten_fresh_file_ids_a_turn(self) -> None:
        conversation = generate(SESSIONS["artifact_flood"])
        assert len(conversation.file_ids) == 10 * conversation.spec.turns
        assert all(fid.startswith("file_") and len(fid) == 21 for fid in conversation.file_ids)

    def test_every_planted_fact_is_in_the_message_of_its_turn(self) -> None:
        conversation = generate(SESSIONS["webapp_auth"])
        assert len(conversation.facts) == 5
        for fact in conversation.facts:
            turn = conversation.turns[fact.turn]
            parts = turn.user if fact.role == "user" else turn.assistant
            text = " ".join(getattr(p, "text", "") for p in parts)
            assert fact.sentence in text and fact.needle in fact.sentence


class TestThePaymentsMigration:
    def test_it_mixes_chat_turns_and_tool_heavy_turns_with_errors(self) -> None:
        turns = list(iter_turns(MIGRATION))
        assert len(turns) == 300
        assert turns[0].is_chat and "Never touch migrations/" in turns[0].user_text
        tools = [p for t in turns for p in t.assistant if isinstance(p, ToolPart)]
        assert {t.tool_name for t in tools} == {"bash", "read_file", "grep", "edit"}
        assert any(t.status.state == "error" for t in tools)
        assert max(len(t.output or "") for t in tools) > 3_000
        assert 10 < sum(t.is_chat for t in turns) < 60

    def test_the_users_instructions_are_its_planted_facts(self) -> None:
        turns = list(iter_turns(MIGRATION))
        facts = planted_facts(MIGRATION)
        assert len(facts) == 8
        for fact in facts:
            assert fact.needle in fact.sentence and fact.sentence in turns[fact.turn].user_text

    def test_a_short_session_plants_only_what_the_user_said_in_it(self) -> None:
        spec = replace(DEMO, turns=3)
        said = " ".join(t.user_text for t in iter_turns(spec))
        facts = planted_facts(spec)
        assert 2 <= len(facts) < 8
        assert all(f.turn < 3 and f.needle in said for f in facts)


class TestReplay:
    async def test_it_stores_every_turn_and_finds_the_planted_facts(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await MnesisSession.create(
            model="fake/kit", db_path=db_path, pool=pool, llm=FakeLLM()
        )
        conversation = generate(replace(DEMO, turns=12))
        replayed = await replay(session, conversation)
        stored = await session.messages()
        assert [m.id for m in stored if not m.message.is_summary] == replayed.message_ids
        assert len(replayed.message_ids) == 24
        by_id = {m.id: m for m in stored}
        assert len(replayed.facts) == len(conversation.facts) > 0
        for found in replayed.facts:
            assert found.fact.needle in by_id[found.message_id].text
        chat = next(i for i, t in enumerate(conversation.turns) if t.is_chat and i > 0)
        reply = by_id[replayed.message_ids[2 * chat + 1]]
        assert reply.role == "assistant" and reply.text
        await session.close()


class TestImportCost:
    def test_importing_mnesis_does_not_import_the_test_kit(self) -> None:
        code = "import json, sys, mnesis; print(json.dumps('mnesis.testing' in sys.modules))"
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert json.loads(done.stdout) is False
