"""Which client answers a model string, resolved no earlier than the first model call.

* a client given by the caller is used as it is; a plain async function
  ``async (messages) -> str`` is wrapped in a
  :class:`~mnesis.llm.function_client.FunctionClient`;
* ``fake/...`` and ``mock/...`` models (or ``MNESIS_MOCK_LLM=1``) get the built-in fake;
* anything else gets a :class:`DeferredClient` that builds a
  :class:`~mnesis.llm.litellm_client.LiteLLMClient` on its first call, so creating,
  loading and recording never need litellm: :class:`~mnesis.errors.MissingDependencyError`
  appears only when a model is actually called without it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import TypeAlias

from mnesis.errors import InvalidArgumentError
from mnesis.llm.base import LLMChunk, LLMClient, LLMRequest
from mnesis.llm.fake import FakeLLM
from mnesis.llm.function_client import FunctionClient, MessagesFn
from mnesis.llm.litellm_client import LiteLLMClient, litellm_available

__all__ = [
    "ClientLike",
    "DeferredClient",
    "FunctionClient",
    "MessagesFn",
    "is_fake_model",
    "needs_litellm",
    "resolve_client",
]

ClientLike: TypeAlias = LLMClient | MessagesFn
"""What ``llm=`` accepts: a client, or a plain async function."""


def is_fake_model(model: str) -> bool:
    """True for the models the built-in fake answers."""
    return os.environ.get("MNESIS_MOCK_LLM") == "1" or model.startswith(("fake", "mock"))


class DeferredClient:
    """A :class:`~mnesis.llm.litellm_client.LiteLLMClient` built on the first call."""

    wire_format = "openai"

    def __init__(self) -> None:
        self._client: LiteLLMClient | None = None

    @property
    def available(self) -> bool:
        """True if litellm is installed (checked without importing it)."""
        return self._client is not None or litellm_available()

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """Build the litellm client if needed (:class:`MissingDependencyError` without
        the extra) and stream ``request`` through it."""
        if self._client is None:
            self._client = LiteLLMClient()
        async for chunk in self._client.stream(request):
            yield chunk


def resolve_client(model: str, client: ClientLike | None = None) -> LLMClient:
    """The client for ``model``: the one given, the fake (``MNESIS_MOCK_LLM=1`` or a
    ``fake/``/``mock/`` model), else litellm, imported on the first call."""
    if client is not None:
        if isinstance(client, LLMClient):
            return client
        if callable(client):
            return FunctionClient(client)
        raise InvalidArgumentError(
            "llm must be an LLMClient (with an async stream(request) method) or an async "
            f"function (messages) -> str, got {type(client).__name__}"
        )
    if is_fake_model(model):
        return FakeLLM()
    return DeferredClient()


def needs_litellm(model: str, client: LLMClient | None) -> bool:
    """True if calling ``model`` through ``client`` (``None``: the default one) would
    need litellm and it is not installed."""
    if model == "extractive" or is_fake_model(model):
        return False
    if client is not None and not isinstance(client, DeferredClient):
        return False
    return not litellm_available()
