"""The litellm adapter, driven by a stand-in ``litellm`` module (only the model is faked)."""

from __future__ import annotations

import os
import sys
import types
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from mnesis.errors import InvalidArgumentError, LLMError, MissingDependencyError
from mnesis.llm import (
    DeferredClient,
    FakeLLM,
    FunctionClient,
    LiteLLMClient,
    LLMRequest,
    complete,
    needs_litellm,
    resolve_client,
)


@dataclass
class _Function:
    name: str | None
    arguments: str | None


@dataclass
class _ToolCallDelta:
    index: int
    id: str | None
    function: _Function | None


@dataclass
class _Delta:
    content: str | None = None
    tool_calls: list[_ToolCallDelta] = field(default_factory=list)


@dataclass
class _Choice:
    delta: _Delta
    finish_reason: str | None = None


@dataclass
class _Usage:
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


@dataclass
class _Chunk:
    choices: list[_Choice]
    usage: _Usage | None = None


def _stream(chunks: list[_Chunk]) -> AsyncIterator[_Chunk]:
    async def gen() -> AsyncIterator[_Chunk]:
        for chunk in chunks:
            yield chunk

    return gen()


@pytest.fixture
def fake_litellm() -> Iterator[types.SimpleNamespace]:
    module = types.ModuleType("litellm")
    calls: list[dict[str, Any]] = []
    state = types.SimpleNamespace(calls=calls, chunks=[], error=None)

    async def acompletion(**kwargs: Any) -> AsyncIterator[_Chunk]:
        calls.append(kwargs)
        if state.error is not None:
            raise state.error
        return _stream(state.chunks)

    module.acompletion = acompletion  # type: ignore[attr-defined]
    sys.modules["litellm"] = module
    yield state
    del sys.modules["litellm"]


async def _collect(client: LiteLLMClient | DeferredClient, request: LLMRequest) -> list[Any]:
    return [chunk async for chunk in client.stream(request)]


class TestLiteLLMClient:
    async def test_text_deltas_usage_and_finish_reason_are_translated(
        self, fake_litellm: types.SimpleNamespace
    ) -> None:
        fake_litellm.chunks = [
            _Chunk([_Choice(_Delta("Hel"))]),
            _Chunk([_Choice(_Delta("lo"), finish_reason="stop")]),
            _Chunk([], usage=_Usage(12, 2, 14)),
        ]
        out = await _collect(
            LiteLLMClient(temperature=0),
            LLMRequest("openai/gpt-4o", [{"role": "user", "content": "hi"}], max_tokens=50),
        )
        assert "".join(c.text for c in out) == "Hello"
        assert out[-1].finish_reason == "stop"
        assert (out[-1].usage.input, out[-1].usage.output, out[-1].usage.total) == (12, 2, 14)
        call = fake_litellm.calls[0]
        assert call["model"] == "openai/gpt-4o" and call["stream"] is True
        assert call["max_tokens"] == 50 and call["temperature"] == 0

    async def test_streamed_tool_call_fragments_are_assembled(
        self, fake_litellm: types.SimpleNamespace
    ) -> None:
        fake_litellm.chunks = [
            _Chunk(
                [
                    _Choice(
                        _Delta(
                            tool_calls=[_ToolCallDelta(0, "call_1", _Function("lcm_grep", '{"que'))]
                        )
                    )
                ]
            ),
            _Chunk(
                [
                    _Choice(
                        _Delta(
                            tool_calls=[_ToolCallDelta(0, None, _Function(None, 'ry": "port"}'))]
                        )
                    )
                ]
            ),
            _Chunk([_Choice(_Delta(), finish_reason="tool_calls")]),
        ]
        out = await _collect(LiteLLMClient(), LLMRequest("m", [], tools=[{"type": "function"}]))
        (call,) = out[-1].tool_calls
        assert (call.id, call.name, call.arguments) == ("call_1", "lcm_grep", {"query": "port"})
        assert fake_litellm.calls[0]["tools"] == [{"type": "function"}]

    async def test_invalid_tool_arguments_are_kept_raw(
        self, fake_litellm: types.SimpleNamespace
    ) -> None:
        fake_litellm.chunks = [
            _Chunk(
                [_Choice(_Delta(tool_calls=[_ToolCallDelta(0, "c", _Function("x", "{not json"))]))]
            ),
        ]
        out = await _collect(LiteLLMClient(), LLMRequest("m", []))
        assert out[-1].tool_calls[0].arguments == {"_raw": "{not json"}

    async def test_provider_errors_become_llm_errors(
        self, fake_litellm: types.SimpleNamespace
    ) -> None:
        fake_litellm.error = RuntimeError("rate limited")
        with pytest.raises(LLMError, match="rate limited"):
            await _collect(LiteLLMClient(), LLMRequest("m", []))

    def test_a_missing_extra_says_what_to_install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "litellm", None)
        with pytest.raises(MissingDependencyError, match=r"mnesis-lcm\[litellm\]"):
            LiteLLMClient()


class TestOptions:
    async def test_api_base_key_and_extra_options_go_to_every_call(
        self, fake_litellm: types.SimpleNamespace
    ) -> None:
        fake_litellm.chunks = [_Chunk([_Choice(_Delta("ok"), finish_reason="stop")])]
        client = LiteLLMClient(api_base="http://127.0.0.1:9/v1", api_key="sk-x", temperature=0.2)
        await _collect(client, LLMRequest("openai/local", []))
        call = fake_litellm.calls[0]
        assert (call["api_base"], call["api_key"], call["temperature"]) == (
            "http://127.0.0.1:9/v1",
            "sk-x",
            0.2,
        )

    async def test_whole_responses_when_streaming_is_off(
        self, fake_litellm: types.SimpleNamespace
    ) -> None:
        message = types.SimpleNamespace(
            content="hi",
            tool_calls=[
                types.SimpleNamespace(
                    id="c1", function=types.SimpleNamespace(name="f", arguments='{"a": 1}')
                )
            ],
        )
        whole = types.SimpleNamespace(
            choices=[types.SimpleNamespace(message=message, finish_reason="tool_calls")],
            usage=_Usage(3, 4, 7),
        )

        async def acompletion(**kwargs: Any) -> Any:
            fake_litellm.calls.append(kwargs)
            return whole

        sys.modules["litellm"].acompletion = acompletion  # type: ignore[attr-defined]
        [chunk] = await _collect(LiteLLMClient(stream=False), LLMRequest("m", []))
        assert (chunk.text, chunk.finish_reason, chunk.usage.total) == ("hi", "tool_calls", 7)
        assert [(c.id, c.name, c.arguments) for c in chunk.tool_calls] == [("c1", "f", {"a": 1})]
        assert "stream" not in fake_litellm.calls[0]

    def test_the_offline_cost_map_switch_is_set_unless_the_user_set_it(
        self, fake_litellm: types.SimpleNamespace, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
        LiteLLMClient()
        assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
        monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "False")
        LiteLLMClient()
        assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "False"


class TestResolve:
    def test_a_provider_model_gets_a_deferred_client_that_imports_nothing(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setitem(sys.modules, "litellm", None)
        monkeypatch.delenv("MNESIS_MOCK_LLM", raising=False)
        client = resolve_client("anthropic/claude-sonnet-4-5")
        assert isinstance(client, DeferredClient) and not client.available
        assert needs_litellm("anthropic/claude-sonnet-4-5", client)
        assert not needs_litellm("anthropic/claude-sonnet-4-5", FakeLLM())
        assert not needs_litellm("extractive", None)

    async def test_the_deferred_client_says_what_to_install_on_the_first_call(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setitem(sys.modules, "litellm", None)
        client = DeferredClient()
        with pytest.raises(MissingDependencyError, match=r"mnesis-lcm\[litellm\]"):
            await _collect(client, LLMRequest("openai/x", []))  # type: ignore[arg-type]

    async def test_a_plain_async_function_becomes_a_client(self) -> None:
        seen: list[list[dict[str, Any]]] = []

        async def summarise(messages: list[dict[str, Any]]) -> str:
            seen.append(messages)
            return "summary text"

        client = resolve_client("anthropic/claude", summarise)
        assert isinstance(client, FunctionClient)
        response = await complete(
            client, LLMRequest("m", [{"role": "user", "content": "x"}]), timeout=5
        )
        assert response.text == "summary text" and seen == [[{"role": "user", "content": "x"}]]

    def test_anything_else_is_refused(self) -> None:
        with pytest.raises(InvalidArgumentError, match="llm must be"):
            resolve_client("m", 42)  # type: ignore[arg-type]
