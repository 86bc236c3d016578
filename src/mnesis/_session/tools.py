"""The tool loop: which of the model's ``lcm_*`` tool calls a session runs itself, and
running them against a retrieval engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.config import MnesisConfig
from mnesis.errors import InvalidArgumentError
from mnesis.models.parts import ToolPart
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.tools import (
    LCM_TOOL_NAMES,
    ExpandQueryFn,
    anthropic_tools,
    execute_lcm_tool,
    openai_tools,
)

__all__ = ["ToolLoop", "lcm_tool_definitions"]


def lcm_tool_definitions(
    *, format: str = "openai", exclude: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Definitions of the ``lcm_*`` tools in the ``"openai"`` or ``"anthropic"`` format."""
    names = [n for n in sorted(LCM_TOOL_NAMES) if n not in exclude]
    if format == "openai":
        return openai_tools(names)
    if format == "anthropic":
        return anthropic_tools(names)
    raise InvalidArgumentError(f"format must be 'openai' or 'anthropic', got {format!r}")


class ToolLoop:
    """Runs one session's ``lcm_*`` tool calls and counts them.

    By default against the session's own retrieval engine, with ``lcm_expand_query``
    answered by ``expand_query``; :meth:`restrict` turns the session into a sub-agent.
    """

    def __init__(
        self,
        engine: RetrievalEngine,
        config: MnesisConfig,
        *,
        expand_query: ExpandQueryFn | None = None,
    ) -> None:
        self._engine = engine
        self._config = config
        self._expand_query = expand_query
        self._max_token_cap: int | None = None
        self.calls_run = 0

    def restrict(self, engine: RetrievalEngine, *, max_token_cap: int | None = None) -> None:
        """Run tool calls against ``engine`` (e.g. a restricted grant), every expansion
        capped at ``max_token_cap``; ``lcm_expand_query`` is refused from now on (a
        sub-agent never spawns sub-agents)."""
        self._engine = engine
        self._max_token_cap = max_token_cap
        self._expand_query = None

    def calls_to_run(self, tool_calls: list[ToolPart], rounds_done: int) -> list[ToolPart]:
        """The ``lcm_*`` calls to run before calling the model again; none when any call
        is one mnesis cannot run itself (it goes back to the caller) or the rounds are
        used up."""
        lcm_calls = [c for c in tool_calls if c.tool_name in LCM_TOOL_NAMES]
        if len(lcm_calls) != len(tool_calls):
            return []
        if rounds_done >= self._config.session.max_tool_rounds:
            return []
        return lcm_calls

    async def execute(self, name: str, arguments: dict[str, Any] | str | None) -> str:
        """Run one tool call; returns JSON for the model, errors inside it."""
        self.calls_run += 1
        return await execute_lcm_tool(
            self._engine,
            name,
            arguments,
            expand_query=self._expand_query,
            max_token_cap=self._max_token_cap,
        )
