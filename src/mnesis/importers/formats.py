"""The transcript formats an import knows: name → parser factory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from mnesis.importers.claude_code import ClaudeCodeParser
from mnesis.importers.codex import CodexParser
from mnesis.importers.generic_jsonl import GenericJsonlParser
from mnesis.importers.openai_chat import OpenAIChatParser
from mnesis.importers.records import ParsedItem

__all__ = ["FORMATS", "Parser", "skip_lines"]


class Parser(Protocol):
    """A transcript format: turns one decoded line into records."""

    name: str
    label: str

    def parse(self, record: Any) -> list[ParsedItem]:
        """The records of one line; ``ValueError`` for a line of the wrong shape."""

    def state(self) -> dict[str, Any]:
        """What the parser carries from line to line (JSON data, small), kept in the
        import's progress so that a later import of the grown file continues with it."""

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from an earlier :meth:`state` (anything unexpected is ignored)."""


FORMATS: dict[str, Callable[[], Parser]] = {
    "claude-code": ClaudeCodeParser,
    "codex": CodexParser,
    "openai": OpenAIChatParser,
    "jsonl": GenericJsonlParser,
}
"""Format name → parser factory."""


def skip_lines(parser: object) -> Callable[[bytes], bool] | None:
    """The parser's ``skip_line(raw) -> bool``, if its format has one: raw lines it
    would make nothing of, left undecoded (see
    :func:`~mnesis.importers.reader.read_jsonl`)."""
    skip = getattr(parser, "skip_line", None)
    return skip if callable(skip) else None
