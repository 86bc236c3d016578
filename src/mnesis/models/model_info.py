"""Model metadata: context window and output limits for common model strings."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["ModelInfo"]

# (substring matched against the model name, context limit, max output tokens, encoding)
# Ordered: the first match wins, so more specific names come first.
_FAMILIES: tuple[tuple[str, int, int, str], ...] = (
    ("claude-opus-4", 200_000, 32_000, "cl100k_base"),
    ("claude-sonnet-4", 200_000, 64_000, "cl100k_base"),
    ("claude-3-7-sonnet", 200_000, 64_000, "cl100k_base"),
    ("claude-3-5-haiku", 200_000, 8_192, "cl100k_base"),
    ("claude-3-5-sonnet", 200_000, 8_192, "cl100k_base"),
    ("claude-haiku-4", 200_000, 64_000, "cl100k_base"),
    ("claude", 200_000, 8_192, "cl100k_base"),
    ("gpt-5", 400_000, 128_000, "o200k_base"),
    ("gpt-4.1", 1_047_576, 32_768, "o200k_base"),
    ("gpt-4o-mini", 128_000, 16_384, "o200k_base"),
    ("gpt-4o", 128_000, 16_384, "o200k_base"),
    ("gpt-4-turbo", 128_000, 4_096, "cl100k_base"),
    ("gpt-4", 8_192, 4_096, "cl100k_base"),
    ("gpt-3.5", 16_385, 4_096, "cl100k_base"),
    ("o4-mini", 200_000, 100_000, "o200k_base"),
    ("o3", 200_000, 100_000, "o200k_base"),
    ("o1", 200_000, 100_000, "o200k_base"),
    ("gemini-2.5", 1_048_576, 65_536, "cl100k_base"),
    ("gemini-2", 1_048_576, 8_192, "cl100k_base"),
    ("gemini-1.5-pro", 2_097_152, 8_192, "cl100k_base"),
    ("gemini", 1_048_576, 8_192, "cl100k_base"),
    ("deepseek", 128_000, 8_192, "cl100k_base"),
    ("mistral-large", 128_000, 8_192, "cl100k_base"),
    ("llama-3", 128_000, 4_096, "cl100k_base"),
    ("qwen", 128_000, 8_192, "cl100k_base"),
    ("fake", 200_000, 8_192, "cl100k_base"),
    ("mock", 200_000, 8_192, "cl100k_base"),
)
_DEFAULT = (128_000, 4_096, "cl100k_base")
_log = logging.getLogger("mnesis.models")
_warned: set[str] = set()
_MAX_WARNED = 1_000


class ModelInfo(BaseModel):
    """Limits of one model. Build it with :meth:`from_model_string`."""

    model_id: str
    provider_id: str = "unknown"
    context_limit: int = Field(default=200_000, gt=0)
    max_output_tokens: int = Field(default=8_192, ge=0)
    encoding: str = "cl100k_base"

    @classmethod
    def from_model_string(cls, model: str, overrides: dict[str, Any] | None = None) -> ModelInfo:
        """Return the limits of ``model`` (``"provider/name"`` or ``"name"``).

        Unknown models get a conservative 128k/4k window, and a warning (once per model
        string) that says how to state the real one. ``overrides`` may set
        ``context_limit`` and ``max_output_tokens``.
        """
        provider, _, name = model.rpartition("/")
        lowered = name.lower()
        if not provider:
            provider = _guess_provider(lowered)
        limit, output, encoding = _DEFAULT
        for key, fam_limit, fam_output, fam_encoding in _FAMILIES:
            if key in lowered:
                limit, output, encoding = fam_limit, fam_output, fam_encoding
                break
        else:
            if provider not in ("fake", "mock") and not (overrides or {}).get("context_limit"):
                _warn_unknown(model)
        data: dict[str, Any] = {
            "model_id": name,
            "provider_id": provider,
            "context_limit": limit,
            "max_output_tokens": output,
            "encoding": encoding,
        }
        if overrides:
            data.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**data)


def _warn_unknown(model: str) -> None:
    if model in _warned or len(_warned) >= _MAX_WARNED:
        return
    _warned.add(model)
    _log.warning(
        "model %r is not in mnesis' model table: assuming a %d-token window. State its "
        "window with MnesisSession.create(..., context_limit=N) or "
        "MnesisConfig(model_overrides={'context_limit': N, 'max_output_tokens': M}) "
        "(CLI: --context-limit)",
        model,
        _DEFAULT[0],
    )


def _guess_provider(name: str) -> str:
    if name.startswith("claude"):
        return "anthropic"
    if name.startswith(("gpt", "o1", "o3", "o4")):
        return "openai"
    if name.startswith("gemini"):
        return "google"
    if name.startswith(("fake", "mock")):
        return "mnesis"
    return "unknown"
