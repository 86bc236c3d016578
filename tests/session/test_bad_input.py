"""Bad input to the session API, and hostile but valid content.

Every rejected call must raise a typed mnesis error (bad arguments are also
``ValueError``) and leave the database exactly as it was: the tests compare a
digest of every row of ``sessions``, ``messages``, ``message_parts`` and
``context_items`` before and after. Unusual but valid text (NUL bytes, lone
surrogates, emoji, right-to-left and CJK scripts, 20 MB) must come back exactly
after the session is reopened from disk.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from mnesis import (
    CompactionConfig,
    MnesisConfig,
    MnesisSession,
    OperatorConfig,
    SessionConfig,
    StoreConfig,
    StorePool,
    TextPart,
    ToolPart,
)
from mnesis.errors import (
    InvalidArgumentError,
    MnesisConfigError,
    MnesisError,
    PartNotFoundError,
    SessionNotFoundError,
    StoreCorruptError,
)
from mnesis.llm import FakeLLM, Respond, ToolCall
from tests.backends import fetch

TABLES = ("sessions", "messages", "message_parts", "context_items")
UNKNOWN_SESSION = "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"
NO_AUTO_COMPACTION = MnesisConfig(compaction=CompactionConfig(auto=False))


def snapshot(db_path: str) -> dict[str, tuple[int, str]]:
    """Row count and digest of every row of the tables a session writes."""
    out = {}
    for table in TABLES:
        rows = fetch(db_path, f"SELECT * FROM {table} ORDER BY 1, 2")
        digest = hashlib.sha256(repr(rows).encode("utf-8", "surrogatepass")).hexdigest()
        out[table] = (len(rows), digest)
    return out


@pytest.fixture
async def seeded(db_path: str, pool: StorePool, fake_llm: FakeLLM) -> AsyncIterator[MnesisSession]:
    """A session with some history: a recorded turn and a pending tool call."""
    session = await MnesisSession.create(
        model="fake/bad", db_path=db_path, pool=pool, llm=fake_llm, config=NO_AUTO_COMPACTION
    )
    await session.record("earlier question", "earlier answer")
    fake_llm.script(Respond("checking", tool_calls=(ToolCall("call_1", "bash", {"cmd": "ls"}),)))
    await session.send("list the files")
    fake_llm.calls.clear()
    yield session
    await session.close()


def _tool(**input: Any) -> ToolPart:
    return ToolPart(tool_name="bash", tool_call_id="call_x", input=input)


BAD_MESSAGES: dict[str, Callable[[], object]] = {
    "empty string": lambda: "",
    "whitespace only": lambda: " \n\t\u3000 ",
    "empty list": lambda: [],
    "int": lambda: 42,
    "float": lambda: 1.5,
    "bytes": lambda: b"hello",
    "bytearray": lambda: bytearray(b"hello"),
    "dict instead of list": lambda: {"type": "text", "text": "hi"},
    "None": lambda: None,
    "list of plain strings": lambda: ["hello"],
    "list with an int": lambda: [TextPart(text="ok"), 7],
    "list with None": lambda: [None],
    "unknown part type": lambda: [{"type": "video", "url": "x"}],
    "part without its text": lambda: [{"type": "text"}],
    "part with non-string text": lambda: [{"type": "text", "text": 5}],
    "tool part with empty name": lambda: [{"type": "tool", "tool_name": "", "tool_call_id": "c"}],
    "tool input with an object": lambda: [_tool(handle=object())],
    "tool input with NaN": lambda: [_tool(x=float("nan"))],
    "tool input with bytes": lambda: [_tool(x=b"raw")],
    "tool input with a set": lambda: [_tool(x={1, 2})],
}


class TestRejectedMessages:
    @pytest.mark.parametrize("make", BAD_MESSAGES.values(), ids=BAD_MESSAGES.keys())
    async def test_send_rejects_it_before_anything_is_stored(
        self, seeded: MnesisSession, db_path: str, fake_llm: FakeLLM, make: Callable[[], object]
    ) -> None:
        before = snapshot(db_path)
        with pytest.raises(InvalidArgumentError) as info:
            await seeded.send(make())  # type: ignore[arg-type]
        assert isinstance(info.value, ValueError)
        assert "message" in str(info.value)
        assert snapshot(db_path) == before
        assert fake_llm.calls == []

    @pytest.mark.parametrize("make", BAD_MESSAGES.values(), ids=BAD_MESSAGES.keys())
    async def test_stream_rejects_it_before_anything_is_stored(
        self, seeded: MnesisSession, db_path: str, fake_llm: FakeLLM, make: Callable[[], object]
    ) -> None:
        before = snapshot(db_path)
        with pytest.raises(InvalidArgumentError):
            async for _ in seeded.stream(make()):  # type: ignore[arg-type]
                pass
        assert snapshot(db_path) == before
        assert fake_llm.calls == []

    @pytest.mark.parametrize("make", BAD_MESSAGES.values(), ids=BAD_MESSAGES.keys())
    async def test_record_rejects_it_as_the_user_message(
        self, seeded: MnesisSession, db_path: str, make: Callable[[], object]
    ) -> None:
        before = snapshot(db_path)
        with pytest.raises(InvalidArgumentError, match="user_message"):
            await seeded.record(make(), "fine")  # type: ignore[arg-type]
        assert snapshot(db_path) == before

    @pytest.mark.parametrize("make", BAD_MESSAGES.values(), ids=BAD_MESSAGES.keys())
    async def test_record_rejects_it_as_the_response_without_storing_the_user_message(
        self, seeded: MnesisSession, db_path: str, make: Callable[[], object]
    ) -> None:
        before = snapshot(db_path)
        with pytest.raises(InvalidArgumentError, match="assistant_response"):
            await seeded.record("a fine question", make())  # type: ignore[arg-type]
        assert snapshot(db_path) == before

    async def test_the_session_still_works_after_rejected_input(
        self, seeded: MnesisSession
    ) -> None:
        for make in BAD_MESSAGES.values():
            with pytest.raises(InvalidArgumentError):
                await seeded.send(make())  # type: ignore[arg-type]
        result = await seeded.send("a good message")
        assert result.text
        roles = [m.role for m in await seeded.messages()]
        assert roles == ["user", "assistant"] * 3


class TestRejectedKeywordArguments:
    @pytest.mark.parametrize(
        "kwargs",
        [
            {"system_prompt": 5},
            {"system_prompt": b"prompt"},
            {"tools": "not a list"},
            {"tools": {"name": "t"}},
            {"on_part": 5},
            {"on_part": "print"},
        ],
        ids=["int prompt", "bytes prompt", "str tools", "dict tools", "int on_part", "str on_part"],
    )
    async def test_send_rejects_bad_keywords_before_anything_is_stored(
        self, seeded: MnesisSession, db_path: str, fake_llm: FakeLLM, kwargs: dict[str, Any]
    ) -> None:
        before = snapshot(db_path)
        with pytest.raises(InvalidArgumentError):
            await seeded.send("hello", **kwargs)
        assert snapshot(db_path) == before
        assert fake_llm.calls == []

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"tokens": 10},
            {"tokens": {"input": 1}},
            {"finish_reason": 5},
            {"finish_reason": None},
        ],
        ids=["int tokens", "dict tokens", "int finish_reason", "None finish_reason"],
    )
    async def test_record_rejects_bad_keywords_before_anything_is_stored(
        self, seeded: MnesisSession, db_path: str, kwargs: dict[str, Any]
    ) -> None:
        before = snapshot(db_path)
        with pytest.raises(InvalidArgumentError):
            await seeded.record("q", "a", **kwargs)
        assert snapshot(db_path) == before

    @pytest.mark.parametrize(
        ("call_id", "kwargs", "error"),
        [
            ("call_1", {"output": 123}, InvalidArgumentError),
            ("call_1", {"output": b"bytes"}, InvalidArgumentError),
            ("call_1", {"error": ["a", "list"]}, InvalidArgumentError),
            ("call_1", {}, InvalidArgumentError),
            ("call_1", {"output": "x", "error": "y"}, InvalidArgumentError),
            ("", {"output": "x"}, InvalidArgumentError),
            (42, {"output": "x"}, InvalidArgumentError),
            ("no_such_call", {"output": "x"}, PartNotFoundError),
        ],
        ids=[
            "int output",
            "bytes output",
            "list error",
            "neither",
            "both",
            "empty id",
            "int id",
            "unknown id",
        ],
    )
    async def test_complete_tool_call_rejects_bad_arguments_and_changes_nothing(
        self,
        seeded: MnesisSession,
        db_path: str,
        call_id: Any,
        kwargs: dict[str, Any],
        error: type[Exception],
    ) -> None:
        before = snapshot(db_path)
        with pytest.raises(error):
            await seeded.complete_tool_call(call_id, **kwargs)
        assert snapshot(db_path) == before
        [part] = (await seeded.messages())[-1].tool_parts
        assert part.status.state == "pending"

    async def test_context_for_next_turn_rejects_a_non_string_system_prompt(
        self, seeded: MnesisSession
    ) -> None:
        with pytest.raises(InvalidArgumentError):
            await seeded.context_for_next_turn(system_prompt=5)  # type: ignore[arg-type]

    async def test_subscribe_rejects_a_handler_that_is_not_callable(
        self, seeded: MnesisSession
    ) -> None:
        with pytest.raises(InvalidArgumentError):
            seeded.subscribe(None, "not callable")  # type: ignore[arg-type]


class TestInvalidConfiguration:
    @pytest.mark.parametrize(
        ("build", "key"),
        [
            (lambda: SessionConfig(model_timeout_seconds=0), "model_timeout_seconds"),
            (lambda: SessionConfig(model_timeout_seconds=-1.0), "model_timeout_seconds"),
            (lambda: SessionConfig(doom_loop_threshold=1), "doom_loop_threshold"),
            (lambda: CompactionConfig(soft_threshold_fraction=0), "soft_threshold_fraction"),
            (lambda: CompactionConfig(soft_threshold_fraction=1.5), "soft_threshold_fraction"),
            (lambda: CompactionConfig(leaf_target_tokens=10), "leaf_target_tokens"),
            (lambda: CompactionConfig(auto="sometimes"), "auto"),
            (lambda: StoreConfig(db_path=""), "db_path"),
            (lambda: StoreConfig(db_path="a\x00b"), "db_path"),
            (lambda: StoreConfig(connection_timeout=-1), "connection_timeout"),
            (lambda: StoreConfig(synchronous="SOMETIMES"), "synchronous"),
            (lambda: OperatorConfig(llm_map_concurrency=0), "llm_map_concurrency"),
            (lambda: MnesisConfig(model_overrides={"context_limit": 0}), "model_overrides"),
            (lambda: MnesisConfig(model_overrides={"window": 5}), "model_overrides"),
            (lambda: MnesisConfig(no_such_section={}), "no_such_section"),  # type: ignore[call-arg]
        ],
        ids=lambda value: value if isinstance(value, str) else None,
    )
    def test_invalid_values_raise_a_config_error_naming_the_key(
        self, build: Callable[[], object], key: str
    ) -> None:
        with pytest.raises(MnesisConfigError) as info:
            build()
        assert isinstance(info.value, ValueError)
        assert key in info.value.key
        assert key in str(info.value)

    def test_assigning_an_invalid_value_raises_a_config_error(self) -> None:
        config = MnesisConfig()
        with pytest.raises(MnesisConfigError, match="model_timeout_seconds"):
            config.session.model_timeout_seconds = -5
        assert config.session.model_timeout_seconds > 0

    @pytest.mark.parametrize(
        "config",
        ["not a config", {"session": {}}, SessionConfig()],
        ids=["str", "dict", "section"],
    )
    async def test_create_rejects_a_config_that_is_not_a_mnesis_config(
        self, seeded: MnesisSession, db_path: str, pool: StorePool, config: object
    ) -> None:
        before = snapshot(db_path)
        with pytest.raises(InvalidArgumentError, match="config"):
            await MnesisSession.create(
                model="fake/bad",
                db_path=db_path,
                pool=pool,
                config=config,  # type: ignore[arg-type]
            )
        assert snapshot(db_path) == before
        assert pool.open_count() == 1  # only the seeded session's handle


class TestRejectedCreateArguments:
    @pytest.mark.parametrize(
        ("kwargs", "error"),
        [
            ({"model": ""}, InvalidArgumentError),
            ({"model": "   "}, InvalidArgumentError),
            ({"model": None}, InvalidArgumentError),
            ({"model": 42}, InvalidArgumentError),
            ({"agent": ""}, InvalidArgumentError),
            ({"agent": 5}, InvalidArgumentError),
            ({"system_prompt": None}, InvalidArgumentError),
            ({"system_prompt": 5}, InvalidArgumentError),
            ({"parent_id": "not-an-id"}, InvalidArgumentError),
            ({"parent_id": "msg_01ARZ3NDEKTSV4RRFFQ69G5FAV"}, InvalidArgumentError),
            ({"parent_id": 7}, InvalidArgumentError),
            ({"parent_id": UNKNOWN_SESSION}, SessionNotFoundError),
            ({"db_path": ""}, InvalidArgumentError),
            ({"db_path": "with\x00nul.db"}, InvalidArgumentError),
            ({"db_path": 5}, InvalidArgumentError),
        ],
        ids=lambda value: repr(value) if isinstance(value, dict) else None,
    )
    async def test_bad_create_arguments_raise_typed_errors_and_store_nothing(
        self,
        seeded: MnesisSession,
        db_path: str,
        pool: StorePool,
        fake_llm: FakeLLM,
        kwargs: dict[str, Any],
        error: type[MnesisError],
    ) -> None:
        arguments: dict[str, Any] = {
            "model": "fake/bad",
            "db_path": db_path,
            "pool": pool,
            "llm": fake_llm,
            **kwargs,
        }
        before = snapshot(db_path)
        with pytest.raises(error):
            await MnesisSession.create(**arguments)
        assert snapshot(db_path) == before
        assert pool.open_count() == 1

    async def test_a_directory_as_db_path_raises_store_corrupt(
        self, tmp_path: Path, pool: StorePool
    ) -> None:
        with pytest.raises(StoreCorruptError, match="directory"):
            await MnesisSession.create(model="fake/bad", db_path=str(tmp_path), pool=pool)
        assert pool.open_count() == 0

    async def test_a_file_that_is_not_a_database_raises_store_corrupt_and_is_left_alone(
        self, tmp_path: Path, pool: StorePool
    ) -> None:
        junk = tmp_path / "notes.db"
        content = b"these are my notes, not a database\n" * 200
        junk.write_bytes(content)
        with pytest.raises(StoreCorruptError):
            await MnesisSession.create(model="fake/bad", db_path=str(junk), pool=pool)
        assert junk.read_bytes() == content
        assert pool.open_count() == 0


MALFORMED_IDS = [
    "",
    "not-an-id",
    "sess_",
    "sess_123",
    "msg_01ARZ3NDEKTSV4RRFFQ69G5FAV",
    "../../etc/passwd",
    "'; DROP TABLE sessions; --",
    "sess\x00_01ARZ3NDEKTSV4RRFFQ69G5FAV",
    "sess_\ud800",
]


class TestUnknownAndMalformedSessionIds:
    async def test_an_unknown_id_raises_session_not_found_which_is_a_key_error(
        self, seeded: MnesisSession, db_path: str, pool: StorePool
    ) -> None:
        before = snapshot(db_path)
        with pytest.raises(SessionNotFoundError) as info:
            await MnesisSession.load(UNKNOWN_SESSION, db_path=db_path, pool=pool)
        assert isinstance(info.value, KeyError)
        assert UNKNOWN_SESSION in str(info.value)
        assert snapshot(db_path) == before
        assert pool.open_count() == 1

    async def test_open_with_an_unknown_id_raises_session_not_found(
        self, db_path: str, pool: StorePool
    ) -> None:
        with pytest.raises(SessionNotFoundError):
            async with MnesisSession.open(session_id=UNKNOWN_SESSION, db_path=db_path, pool=pool):
                pytest.fail("the body must not run")

    @pytest.mark.parametrize("session_id", MALFORMED_IDS, ids=repr)
    async def test_a_malformed_id_raises_a_typed_error_and_changes_nothing(
        self, seeded: MnesisSession, db_path: str, pool: StorePool, session_id: str
    ) -> None:
        before = snapshot(db_path)
        with pytest.raises(MnesisError) as info:
            await MnesisSession.load(session_id, db_path=db_path, pool=pool)
        assert isinstance(info.value, InvalidArgumentError | SessionNotFoundError)
        assert snapshot(db_path) == before
        assert pool.open_count() == 1

    @pytest.mark.parametrize(
        "session_id", [None, 42, b"sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", [UNKNOWN_SESSION]], ids=repr
    )
    async def test_an_id_that_is_not_a_string_raises_invalid_argument(
        self, seeded: MnesisSession, db_path: str, pool: StorePool, session_id: object
    ) -> None:
        before = snapshot(db_path)
        with pytest.raises(InvalidArgumentError) as info:
            await MnesisSession.load(session_id, db_path=db_path, pool=pool)  # type: ignore[arg-type]
        assert isinstance(info.value, ValueError)
        assert snapshot(db_path) == before
        assert pool.open_count() == 1


EXOTIC_TEXTS = {
    "NUL bytes": "before\x00middle\x00",
    "lone high surrogate": "x\ud800y",
    "lone low surrogate": "\udfff",
    "half an emoji pair": "end\ud83d",
    "emoji": "🎉 👩‍👩‍👧‍👦 🏳️‍🌈 🇯🇵",
    "right to left": "שלום עולם مرحبا بالعالم \u202eevil\u202c \u200f",
    "CJK": "漢字かなカナ한국어 𠜎𠜱𠝹",
    "combining marks": "e\u0301 n\u0303 Z\u0351\u0352\u0353",
    "control characters": "\x01\x07\x1b[31mred\x1b[0m\r\n\t\x7f",
    "BOM and zero width": "\ufeff\u200b\u200c\u200d",
    "looks like JSON and SQL": '{"type": "tool"}\'); DROP TABLE messages; --',
}


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _exact(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


class TestExoticContentRoundTrips:
    @pytest.mark.parametrize("text", EXOTIC_TEXTS.values(), ids=EXOTIC_TEXTS.keys())
    async def test_recorded_text_and_tool_data_come_back_exactly_after_reopening(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM, text: str
    ) -> None:
        session = await MnesisSession.create(
            model="fake/exotic", db_path=db_path, pool=pool, llm=fake_llm
        )
        await session.record(
            [TextPart(text=text)],
            [
                TextPart(text=text),
                ToolPart(
                    tool_name="echo",
                    tool_call_id="call_exotic",
                    input={"arg": text, text: [text]},
                    output=text,
                ),
            ],
        )
        await session.close()
        assert pool.open_count() == 0  # the next load reads the file afresh
        loaded = await MnesisSession.load(session.id, db_path=db_path, pool=pool, llm=fake_llm)
        user, assistant = await loaded.messages()
        assert _exact(user.text) == _exact(text)
        assert _exact(assistant.text) == _exact(text)
        [part] = assistant.tool_parts
        assert part.input == {"arg": text, text: [text]}
        assert part.output is not None and _exact(part.output) == _exact(text)
        await loaded.close()

    @pytest.mark.parametrize("text", EXOTIC_TEXTS.values(), ids=EXOTIC_TEXTS.keys())
    async def test_sent_text_comes_back_exactly_after_reopening(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM, text: str
    ) -> None:
        fake_llm.script(Respond("reply: " + text))
        session = await MnesisSession.create(
            model="fake/exotic", db_path=db_path, pool=pool, llm=fake_llm
        )
        await session.send("say: " + text)
        await session.close()
        loaded = await MnesisSession.load(session.id, db_path=db_path, pool=pool, llm=fake_llm)
        user, assistant = await loaded.messages()
        assert _exact(user.text) == _exact("say: " + text)
        assert _exact(assistant.text) == _exact("reply: " + text)
        context = await loaded.context_for_next_turn()
        assert _exact(context[1]["content"]) == _exact("say: " + text)
        await loaded.close()

    async def test_a_system_prompt_with_unusual_text_comes_back_exactly(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        prompt = "".join(v for v in EXOTIC_TEXTS.values() if _encodable(v))
        session = await MnesisSession.create(
            model="fake/exotic", db_path=db_path, pool=pool, llm=fake_llm, system_prompt=prompt
        )
        await session.close()
        loaded = await MnesisSession.load(session.id, db_path=db_path, pool=pool, llm=fake_llm)
        assert (await loaded.context_for_next_turn())[0]["content"] == prompt
        await loaded.close()

    async def test_a_lone_surrogate_in_the_system_prompt_is_kept_or_cleanly_rejected(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        prompt = "be careful \ud800 here"
        try:
            session = await MnesisSession.create(
                model="fake/exotic",
                db_path=db_path,
                pool=pool,
                llm=fake_llm,
                system_prompt=prompt,
            )
        except MnesisError as exc:
            assert isinstance(exc, InvalidArgumentError)
            assert pool.open_count() == 0
            return
        await session.close()
        loaded = await MnesisSession.load(session.id, db_path=db_path, pool=pool, llm=fake_llm)
        assert (await loaded.context_for_next_turn())[0]["content"] == prompt
        await loaded.close()

    async def test_a_20_mb_message_comes_back_exactly_after_reopening(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        block = "The quick brown fox 漢字 😀 \x00 مرحبا \ud800\n" + "x" * 200
        size = 20 * 1024 * 1024
        big = block * (size // len(_exact(block)) + 1)
        assert len(_exact(big)) >= size
        session = await MnesisSession.create(
            model="fake/big", db_path=db_path, pool=pool, llm=fake_llm, config=NO_AUTO_COMPACTION
        )
        result = await session.record(big, "noted")
        await session.close()
        loaded = await MnesisSession.load(session.id, db_path=db_path, pool=pool, llm=fake_llm)
        user, assistant = await loaded.messages()
        assert user.id == result.user_message_id
        assert len(user.text) == len(big)
        assert _exact(user.text) == _exact(big)
        assert assistant.text == "noted"
        await loaded.close()
