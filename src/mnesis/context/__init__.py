"""Context window assembly."""

from mnesis.context.builder import BuiltContext, ContextBudget, ContextBuilder, LLMMessage

__all__ = ["BuiltContext", "ContextBudget", "ContextBuilder", "LLMMessage"]
