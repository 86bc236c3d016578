"""Model access: the client protocol, a deterministic fake and the litellm adapter."""

from __future__ import annotations

import os

from mnesis.llm.base import LLMChunk, LLMClient, LLMRequest, LLMResponse, ToolCall, complete
from mnesis.llm.fake import Empty, Fail, FakeBehaviour, FakeLLM, Garbage, Hang, Respond

__all__ = [
    "Empty",
    "Fail",
    "FakeBehaviour",
    "FakeLLM",
    "Garbage",
    "Hang",
    "LLMChunk",
    "LLMClient",
    "LLMRequest",
    "LLMResponse",
    "Respond",
    "ToolCall",
    "complete",
    "resolve_client",
]


def resolve_client(model: str, client: LLMClient | None = None) -> LLMClient:
    """The client for ``model``: the one given, the fake (``MNESIS_MOCK_LLM=1`` or a
    ``fake/``/``mock/`` model), else litellm (extra ``litellm``)."""
    if client is not None:
        return client
    if os.environ.get("MNESIS_MOCK_LLM") == "1" or model.startswith(("fake", "mock")):
        return FakeLLM()
    from mnesis.llm.litellm_client import LiteLLMClient

    return LiteLLMClient()
