"""The transcript formats an import knows: name → parser factory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from mnesis.importers.claude_code import ClaudeCodeParser
from mnesis.importers.codex import CodexParser
from mnesis.importers.generic_jsonl import GenericJsonlParser
from mnesis.importers.openai_chat import OpenAIChatParser
from mnesis.importers.records import ParsedItem

__all__ = ["FORMATS", "Parser"]


class Parser(Protocol):
    """A transcript format: turns one decoded line into records."""

    name: str
    label: str

    def parse(self, record: Any) -> list[ParsedItem]:
        """The records of one line; ``ValueError`` for a line of the wrong shape."""


FORMATS: dict[str, Callable[[], Parser]] = {
    "claude-code": ClaudeCodeParser,
    "codex": CodexParser,
    "openai": OpenAIChatParser,
    "jsonl": GenericJsonlParser,
}
"""Format name → parser factory."""
