"""Fuzzing the MCP server through its real tool-call path (issue 17).

Random and hostile arguments (wrong types, huge integers, deep nesting, NUL, huge
strings, bad cursors, hostile regular expressions, unknown tools and keys) reach the
server ``build_server`` makes, through an in-process client of the official ``mcp`` SDK
and through its ``tools/call`` handler as the SDK invokes it. Every answer must be a
well-formed tool result: content matching the tool's output schema, or ``isError`` with
a one-line message; never a protocol-level error; and the store's logical dump is
unchanged. Lone surrogates and broken JSON cannot reach a tool: the SDK's JSON parser
refuses the line; the stdio server is checked to keep serving after them.
The examples are derandomized.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnesis import MnesisConfig
from mnesis.config import RetrievalConfig
from mnesis.retrieval.tools import output_schema
from tests.hardening.dump import logical_dump
from tests.hostile import ints
from tests.hostile import json_values as hostile_json
from tests.mcp.conftest import Stored

mcp = pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mnesis.mcp import MnesisMCP, build_server  # noqa: E402

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TOOLS = ["lcm_grep", "lcm_describe", "lcm_expand", "lcm_sessions"]
KEYS = [
    "query",
    "mode",
    "scope",
    "limit",
    "summary_id",
    "cursor",
    "include_lcm_tools",
    "session_id",
    "id",
    "depth",
    "include_messages",
    "token_cap",
]

# -- values -----------------------------------------------------------------------------
HOSTILE_TEXT = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\u202ertl",
    "\n\n",
    "🙂" * 50,
    "x" * 100_000,
    "[" * 5_000,
    "sum_" + "0" * 26,
    "msg_01ARZ3NDEKTSV4RRFFQ69G5FAV",
    "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV",
    "regex",
    "both",
]
HOSTILE_PATTERNS = [
    "(?R)",
    "(?0)|(?1)(a)",
    "(?P<n>a)(?P>n)",
    "((x?){1000}){1000}",
    "x{4294967294}",
    "(a|aa)+$|zzz",
    "(?x)(?&\n n)(?P<n>a)",
    "(",
    "[z-a]",
    "\\",
    "(?V1)[[a]--[b]]",
]
texts = st.one_of(
    st.sampled_from(HOSTILE_TEXT), st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
)
json_values = hostile_json(texts, max_leaves=10)


def _nested(depth: int) -> Any:
    value: Any = "x"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def _cursor(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii")


deep_values = st.integers(min_value=1, max_value=200).map(_nested)
cursors = st.one_of(
    texts,
    st.builds(lambda v: _cursor(json.dumps(v).encode()), json_values),
    st.builds(lambda n: _cursor(b"[" * n), st.integers(min_value=0, max_value=100_000)),
    st.builds(lambda n: _cursor(json.dumps({"messages_before": n}).encode()), ints),
)
values = st.one_of(json_values, deep_values, cursors, st.sampled_from(HOSTILE_PATTERNS))
names = st.one_of(st.sampled_from(TOOLS), texts)
arguments = st.one_of(
    st.none(),
    st.dictionaries(st.one_of(st.sampled_from(KEYS), texts), values, max_size=5),
    st.builds(
        lambda pattern, extra: {"query": pattern, "mode": "regex", **extra},
        st.one_of(st.sampled_from(HOSTILE_PATTERNS), texts),
        st.dictionaries(st.sampled_from(["limit", "cursor", "scope"]), values, max_size=2),
    ),
)
benign = st.one_of(
    st.sampled_from([1, 3, 50, True, False, None]),
    st.sampled_from(["regex", "full_text", "both", "messages", "summaries"]),
    st.sampled_from(["build", "step 7", "port 8443", r"build number is \d+", "(a|aa)+$|zzz"]),
)
TOOL_KEYS = {
    "lcm_grep": ["query", "mode", "scope", "limit", "summary_id", "cursor", "include_lcm_tools"],
    "lcm_describe": ["id", "session_id"],
    "lcm_expand": ["summary_id", "depth", "include_messages", "token_cap", "cursor"],
    "lcm_sessions": ["limit"],
}
calls = st.one_of(
    st.tuples(names, arguments, st.just(False)),
    st.sampled_from(TOOLS).flatmap(
        lambda tool: st.tuples(
            st.just(tool),
            st.dictionaries(
                st.sampled_from(TOOL_KEYS[tool]),
                st.one_of(benign, benign, values),
                max_size=2,
            ),
            st.just(True),
        )
    ),
)
"""``(tool, arguments, on_base)``: with ``on_base`` the arguments override a valid call
of the tool, so one hostile value meets the code past the other arguments' checks."""


# -- the harness --------------------------------------------------------------------------
@dataclass
class Served:
    """The MCP state over the module's database, on a loop the examples share."""

    loop: asyncio.AbstractEventLoop
    state: MnesisMCP
    stored: Stored
    base: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.base = {
            "lcm_grep": {"query": "build number", "session_id": self.stored.alpha},
            "lcm_describe": {"id": self.stored.fact_message_id},
            "lcm_expand": {"summary_id": self.stored.leaf_id, "session_id": self.stored.alpha},
            "lcm_sessions": {},
        }

    def arguments(self, name: str, args: dict[str, Any] | None, on_base: bool) -> Any:
        if on_base and name in self.base and isinstance(args, dict):
            return {**self.base[name], **args}
        return args

    def call(self, name: str, args: dict[str, Any] | None) -> Any:
        """A ``tools/call`` from an in-process client of the SDK."""

        async def run() -> Any:
            async with Client(build_server(self.state), raise_exceptions=True) as client:
                return await client.call_tool(name, args)

        return self.loop.run_until_complete(run())

    def handle(self, name: str, args: dict[str, Any] | None) -> Any:
        """The server's ``tools/call`` handler, given the parameters the SDK parses."""
        entry = build_server(self.state).get_request_handler("tools/call")
        assert entry is not None
        params = entry.params_type.model_validate({"name": name, "arguments": args})
        return self.loop.run_until_complete(entry.handler(None, params))


@pytest.fixture(scope="module")
def served(stored: Stored) -> Iterator[Served]:
    loop = asyncio.new_event_loop()
    config = MnesisConfig(retrieval=RetrievalConfig(regex_timeout_seconds=0.3))
    state = MnesisMCP(config, db_path=stored.db_path)
    yield Served(loop, state, stored)
    loop.run_until_complete(state.close())
    loop.close()


def _well_formed(name: str, result: Any) -> None:
    """A tool result: one text block; an error in one line, or the tool's output schema."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    text = result.content[0].text
    assert isinstance(text, str) and text
    if result.is_error:
        assert "\n" not in text and "Traceback" not in text, text
        assert result.structured_content is None
        return
    assert name in TOOLS
    jsonschema.validate(result.structured_content, output_schema(name))


# -- the tests -----------------------------------------------------------------------------
@settings(FUZZ, max_examples=60)
@given(call=calls)
def test_every_client_call_gets_a_well_formed_tool_result_and_writes_nothing(
    served: Served, call: tuple[str, dict[str, Any] | None, bool]
) -> None:
    name, args, on_base = call
    before = logical_dump(served.stored.db_path)
    _well_formed(name, served.call(name, served.arguments(name, args, on_base)))
    assert logical_dump(served.stored.db_path) == before


@FUZZ
@given(call=calls)
def test_the_call_handler_answers_with_a_result_that_can_be_sent(
    served: Served, call: tuple[str, dict[str, Any] | None, bool]
) -> None:
    name, args, on_base = call
    before = logical_dump(served.stored.db_path)
    result = served.handle(name, served.arguments(name, args, on_base))
    _well_formed(name, result)
    # What the server writes back to the peer must encode.
    json.loads(result.model_dump_json(by_alias=True, exclude_none=True))
    assert logical_dump(served.stored.db_path) == before


def test_hostile_patterns_come_back_as_one_line_errors(served: Served) -> None:
    for pattern in HOSTILE_PATTERNS[:5]:
        result = served.call("lcm_grep", {"query": pattern, "mode": "regex"})
        _well_formed("lcm_grep", result)
        assert result.is_error, pattern
    slow = served.call("lcm_grep", {"query": "(a|aa)+$|zzz", "mode": "regex"})
    _well_formed("lcm_grep", slow)


async def test_the_stdio_server_keeps_serving_after_lines_no_tool_can_take(
    stored: Stored,
) -> None:
    """Raw JSON-RPC lines over stdio: a lone surrogate, 100,000 nested brackets, bytes
    that are not UTF-8, then hostile calls; every call is answered, the last one too."""
    before = logical_dump(stored.db_path)

    def request(number: int, name: str, args: dict[str, Any]) -> bytes:
        params = {"name": name, "arguments": args}
        message = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}
        return json.dumps(message).encode()

    start = {"protocolVersion": "2025-06-18", "capabilities": {}}
    lines = [
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {**start, "clientInfo": {"name": "fuzz", "version": "0"}},
            }
        ).encode(),
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "lcm_grep", '
        b'"arguments": {"query": "\\ud800"}}}',
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "lcm_grep", '
        b'"arguments": {"query": ' + b"[" * 100_000 + b"}}}",
        b"\xff\xfe\x00 not json",
        request(3, "lcm_grep", {"query": "a\x00b", "mode": "regex"}),
        request(4, "lcm_grep", {"query": "(?R)", "mode": "regex"}),
        request(5, "lcm_grep", {"query": "x" * 1_000_000}),
        request(6, "lcm_grep", {"query": "build", "limit": 10**30}),
        request(7, "lcm_expand", {"summary_id": stored.leaf_id, "depth": 10**30}),
        request(8, "lcm_describe", {"id": _nested(150)}),
        request(9, "lcm_sessions", {}),
    ]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mnesis.cli",
        "mcp",
        "--db",
        stored.db_path,
        "--session",
        stored.alpha,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=dict(os.environ),
        limit=2**24,
    )
    assert process.stdin is not None and process.stdout is not None
    answers: dict[int, dict[str, Any]] = {}
    try:
        process.stdin.write(b"\n".join(lines) + b"\n")
        await process.stdin.drain()

        async def read_answers() -> None:
            assert process.stdout is not None
            while not set(range(3, 10)) <= set(answers):
                line = await process.stdout.readline()
                assert line, f"the server stopped; answered {sorted(answers)}"
                message = json.loads(line)
                if "id" in message and message["id"] is not None:
                    answers[message["id"]] = message

        await asyncio.wait_for(read_answers(), timeout=120)
    finally:
        process.stdin.close()
        await asyncio.wait_for(process.wait(), timeout=60)
    for number in range(3, 10):
        assert "result" in answers[number], answers[number]
        result = answers[number]["result"]
        assert len(result["content"]) == 1 and result["content"][0]["text"]
        failed = result.get("isError", False)
        assert failed == (number in (4, 5, 8)), result
        if failed:
            assert "\n" not in result["content"][0]["text"]
        else:
            assert isinstance(result["structuredContent"], dict)
    assert answers[9]["result"]["structuredContent"]["sessions"][0]["id"] == stored.alpha
    assert logical_dump(stored.db_path) == before
