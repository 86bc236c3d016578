"""The happy path end to end: create, send, record, reload."""

from __future__ import annotations

from mnesis import MnesisSession, StorePool, TextPart, ToolPart
from mnesis.llm import FakeLLM


class TestHappyPath:
    async def test_send_record_and_load_round_trip(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        session = await MnesisSession.create(
            model="fake/model", db_path=db_path, pool=pool, llm=fake_llm
        )
        turn = await session.send("Where is the config file?")
        assert turn.text.startswith("[fake ")
        recorded = await session.record(
            "list the repo",
            [
                TextPart(text="Listing."),
                ToolPart(
                    tool_name="bash", tool_call_id="c1", input={"command": "ls"}, output="a\nb"
                ),
            ],
        )
        await session.close()

        reloaded = await MnesisSession.load(session.id, db_path=db_path, pool=pool)
        messages = await reloaded.messages()
        assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
        assert messages[3].id == recorded.assistant_message_id
        tool = messages[3].tool_parts[0]
        assert tool.output == "a\nb" and tool.input == {"command": "ls"}
        context = await reloaded.context_for_next_turn()
        assert context[0]["role"] == "system"
        assert "Where is the config file?" in context[1]["content"]
        await reloaded.close()
