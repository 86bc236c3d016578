"""The litellm adapter, driven by a stand-in ``litellm`` module (only the model is faked)."""

from __future__ import annotations

import sys
import types
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from mnesis.errors import LLMError, MissingDependencyError
from mnesis.llm import LLMRequest
from mnesis.llm.litellm_client import LiteLLMClient


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


async def _collect(client: LiteLLMClient, request: LLMRequest) -> list[Any]:
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
