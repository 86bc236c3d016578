"""Fuzzing the public entry points with random and hostile values (issue 17).

Every call either succeeds or raises a :class:`~mnesis.errors.MnesisError` subclass, and
whenever it raises, the store's logical dump (every row of every table) is unchanged.
The examples are derandomized, so a CI run is reproducible.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mnesis import MnesisConfig, MnesisSession, StorePool, TokenUsage, ToolPart
from mnesis.cli import app
from mnesis.config import CompactionConfig
from mnesis.errors import MnesisError
from mnesis.llm import FakeLLM
from mnesis.models.parts import ToolStatus
from tests.hardening.dump import logical_dump
from tests.hostile import HOSTILE_INTS, ints
from tests.hostile import json_values as hostile_json

FUZZ = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- values -----------------------------------------------------------------------------
HOSTILE_TEXT = ["", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "‮rtl", "🙂" * 50, "{", "[" * 50]
texts = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.text(st.characters(blacklist_categories=()), max_size=40),
)
json_values = hostile_json(texts, max_leaves=12)


def nested(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = [value] if depth % 2 else {"k": value}
    return value


deep_values = st.integers(min_value=0, max_value=400).map(nested)
anything = st.one_of(json_values, deep_values, st.builds(object))


def _cursor(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii")


cursors = st.one_of(
    st.none(),
    texts,
    st.builds(lambda v: _cursor(json.dumps(v).encode()), json_values),
    st.builds(lambda n: _cursor(b"[" * n), st.integers(min_value=0, max_value=100_000)),
    st.builds(lambda n: _cursor(json.dumps({"messages": n, "tier": 0}).encode()), ints),
)

names = st.one_of(st.sampled_from(["bash", "call_1"]), texts)
tool_dicts = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["tool", "tool", "tool", "text", "video"]),
        "tool_name": names,
        "tool_call_id": names,
    },
    optional={
        "text": texts,
        "input": st.one_of(json_values, deep_values),
        "output": st.one_of(st.none(), texts),
        "status": st.fixed_dictionaries(
            {},
            optional={
                "state": st.sampled_from(["pending", "completed", "error", "bogus"]),
                "started_at": ints,
                "compacted_at": ints,
            },
        ),
    },
)
tool_objects = st.builds(
    lambda name, call, value, started: ToolPart.model_construct(
        id=None,
        type="tool",
        tool_name=name,
        tool_call_id=call,
        input=value,
        output=None,
        error_message=None,
        title=None,
        status=ToolStatus.model_construct(
            state="completed", started_at=started, compacted_at=None, completed_at=None
        ),
    ),
    names,
    names,
    st.one_of(st.dictionaries(texts, json_values, max_size=3), deep_values.map(lambda v: {"v": v})),
    st.one_of(st.none(), ints),
)
contents = st.one_of(
    st.sampled_from(["hello", "what did we decide?"]),
    texts,
    st.lists(st.one_of(tool_dicts, tool_objects, texts), min_size=1, max_size=3),
)
usages = st.one_of(
    st.none(),
    st.builds(
        lambda n: TokenUsage.model_construct(
            input=n, output=0, cache_read=0, cache_write=0, total=0
        ),
        st.sampled_from(HOSTILE_INTS),
    ),
    st.builds(
        lambda a, b: TokenUsage.model_construct(
            input=a, output=b, cache_read=0, cache_write=0, total=0
        ),
        ints,
        ints,
    ),
    anything,
)


# -- the harness --------------------------------------------------------------------------
@dataclass
class Harness:
    """One session on a real SQLite file, driven from synchronous hypothesis examples."""

    loop: asyncio.AbstractEventLoop
    session: MnesisSession
    db_path: str

    def call(self, make: Callable[[MnesisSession], Awaitable[object]]) -> None:
        """Run one call: it succeeds, or raises a MnesisError and writes nothing."""
        before = logical_dump(self.db_path)
        try:
            self.loop.run_until_complete(make(self.session))
        except MnesisError:
            assert logical_dump(self.db_path) == before, "a rejected call wrote rows"


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    db_path = str(Path(tmp_path_factory.mktemp("fuzz")) / "fuzz.db")
    loop = asyncio.new_event_loop()
    pool = StorePool()
    config = MnesisConfig(
        model_overrides={"context_limit": 32_000, "max_output_tokens": 2_000},
        compaction=CompactionConfig(auto=False),
    )

    async def create() -> MnesisSession:
        session = await MnesisSession.create(
            model="fake/fuzz", db_path=db_path, pool=pool, llm=FakeLLM(), config=config
        )
        await session.record("a question about the fuzz harness", "an answer with text")
        return session

    session = loop.run_until_complete(create())
    yield Harness(loop, session, db_path)
    loop.run_until_complete(session.close())
    loop.run_until_complete(pool.close_all())
    loop.close()


# -- the entry points ---------------------------------------------------------------------
@FUZZ
@given(user=contents, assistant=contents, tokens=usages, finish=st.one_of(texts, anything))
def test_record(harness: Harness, user: Any, assistant: Any, tokens: Any, finish: Any) -> None:
    harness.call(lambda s: s.record(user, assistant, tokens=tokens, finish_reason=finish))


@FUZZ
@given(message=contents, prompt=st.one_of(st.none(), texts))
def test_send(harness: Harness, message: Any, prompt: Any) -> None:
    harness.call(lambda s: s.send(message, system_prompt=prompt))


@FUZZ
@given(
    query=st.one_of(texts, anything),
    mode=st.one_of(st.just("full_text"), texts),
    scope=st.one_of(st.sampled_from(["both", "messages", "summaries"]), texts),
    limit=st.one_of(st.none(), ints, anything),
    cursor=cursors,
    since=st.one_of(st.none(), ints, st.floats()),
)
def test_grep(
    harness: Harness, query: Any, mode: Any, scope: Any, limit: Any, cursor: Any, since: Any
) -> None:
    harness.call(
        lambda s: s.grep(query, mode=mode, scope=scope, limit=limit, cursor=cursor, since=since)
    )


@FUZZ
@given(
    object_id=st.one_of(texts, anything, st.builds(lambda t: "sum_" + t, texts)),
    depth=st.one_of(ints, anything),
    token_cap=st.one_of(st.none(), ints, anything),
    cursor=cursors,
)
def test_describe_and_expand(
    harness: Harness, object_id: Any, depth: Any, token_cap: Any, cursor: Any
) -> None:
    harness.call(lambda s: s.describe(object_id))
    harness.call(lambda s: s.expand(object_id, depth=depth, token_cap=token_cap))
    harness.call(
        lambda s: s.retrieval.expand(object_id, depth=depth, token_cap=token_cap, cursor=cursor)
    )


@FUZZ
@given(
    name=st.one_of(st.sampled_from(["lcm_grep", "lcm_describe", "lcm_expand"]), texts),
    arguments=st.one_of(
        st.none(),
        texts,
        st.builds(json.dumps, json_values),
        st.builds(lambda n: '{"query": ' + "[" * n, st.integers(0, 100_000)),
        st.dictionaries(
            st.sampled_from(["query", "id", "summary_id", "cursor", "limit", "token_cap"]),
            st.one_of(json_values, cursors, deep_values),
            max_size=4,
        ),
    ),
)
def test_execute_tool(harness: Harness, name: Any, arguments: Any) -> None:
    async def run(session: MnesisSession) -> None:
        out = await session.execute_tool(name, arguments)
        assert isinstance(json.loads(out), dict)

    harness.call(run)


@settings(FUZZ, max_examples=60)
@given(
    command=st.sampled_from(["sessions", "show", "context", "grep", "describe", "expand"]),
    value=st.one_of(texts, ints.map(str)),
    option=st.sampled_from([None, "--limit", "--json", "--max-tokens", "--context-limit"]),
    number=ints.map(str),
)
def test_cli(harness: Harness, command: str, value: str, option: str | None, number: str) -> None:
    positional = {"sessions": [], "show": [harness.session.id], "context": [harness.session.id]}
    args = [command, *positional.get(command, [value]), "--db", harness.db_path]
    if option == "--json":
        args.append(option)
    elif option is not None:
        args += [option, number]
    before = logical_dump(harness.db_path)
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 1, 2), (args, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        repr(result.exception),
    )
    assert "Traceback" not in result.output
    assert logical_dump(harness.db_path) == before
