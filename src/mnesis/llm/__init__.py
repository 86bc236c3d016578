"""Model access: the client protocol, a deterministic fake and the litellm adapter.

Nothing here imports litellm: :class:`LiteLLMClient` imports it when constructed, and
:func:`resolve_client` defers even that to the first model call.
"""

from __future__ import annotations

from mnesis.llm.base import LLMChunk, LLMClient, LLMRequest, LLMResponse, ToolCall, complete
from mnesis.llm.fake import Empty, Fail, FakeBehaviour, FakeLLM, Garbage, Hang, Respond
from mnesis.llm.function_client import check_tools
from mnesis.llm.litellm_client import LiteLLMClient, litellm_available
from mnesis.llm.resolve import (
    ClientLike,
    DeferredClient,
    FunctionClient,
    MessagesFn,
    is_fake_model,
    needs_litellm,
    resolve_client,
)

__all__ = [
    "ClientLike",
    "DeferredClient",
    "Empty",
    "Fail",
    "FakeBehaviour",
    "FakeLLM",
    "FunctionClient",
    "Garbage",
    "Hang",
    "LLMChunk",
    "LLMClient",
    "LLMRequest",
    "LLMResponse",
    "LiteLLMClient",
    "MessagesFn",
    "Respond",
    "ToolCall",
    "check_tools",
    "complete",
    "is_fake_model",
    "litellm_available",
    "needs_litellm",
    "resolve_client",
]
