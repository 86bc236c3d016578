"""Context window assembly and its rendering to provider wire formats."""

from mnesis.context.anthropic import render_anthropic
from mnesis.context.builder import (
    CONTEXT_FORMATS,
    BuiltContext,
    ContextBudget,
    ContextBuilder,
    ContextFormat,
    LLMMessage,
)
from mnesis.context.entries import ContextEntry, SummaryEntry
from mnesis.context.openai import render_openai
from mnesis.context.responses import render_responses
from mnesis.context.validate import WireFormat, ensure_valid, validate

__all__ = [
    "CONTEXT_FORMATS",
    "BuiltContext",
    "ContextBudget",
    "ContextBuilder",
    "ContextEntry",
    "ContextFormat",
    "LLMMessage",
    "SummaryEntry",
    "WireFormat",
    "ensure_valid",
    "render_anthropic",
    "render_openai",
    "render_responses",
    "validate",
]
