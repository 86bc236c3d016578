"""Google ADK (``pip install 'mnesis-lcm[google-adk]'``): a ``BaseSessionService``, a
``BaseMemoryService`` and the ``lcm_*`` tools as ADK tools.

``service = MnesisSessionService(model=..., db_path="agent.db")``;
``Runner(agent=..., app_name=..., session_service=service,
memory_service=MnesisMemoryService(service))``; ``LlmAgent(..., tools=lcm_tools(service))``.
The runner appends each event through the service (recorded in mnesis as ordered
rounds) and reads the session back as the mnesis window: compacted history as summary
events, so a long session never outgrows the model's window, and the model finds what
compaction hid with ``lcm_grep`` / ``lcm_describe`` / ``lcm_expand``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from mnesis._session.tools import lcm_tool_definitions
from mnesis.integrations.google_adk_events import event_to_messages, messages_to_events
from mnesis.integrations.google_adk_memory import MnesisMemoryService
from mnesis.integrations.google_adk_sessions import MnesisSessionService
from mnesis.integrations.tools import DEFAULT_EXCLUDE

__all__ = [
    "LcmTool",
    "MnesisMemoryService",
    "MnesisSessionService",
    "event_to_messages",
    "lcm_tools",
    "messages_to_events",
]


class LcmTool(BaseTool):
    """One ``lcm_*`` tool, run against the mnesis session of the calling ADK session."""

    def __init__(self, service: MnesisSessionService, definition: dict[str, Any]) -> None:
        """The tool ``definition`` (OpenAI format) over ``service``'s sessions."""
        function = definition["function"]
        super().__init__(name=function["name"], description=function["description"])
        self._service = service
        self._parameters: dict[str, Any] = function["parameters"]

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema=self._parameters,
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """The tool's JSON result (errors inside it, ``{"error": ...}``, never raised)."""
        session = await self._service.mnesis_session(tool_context.session)
        value = json.loads(await session.execute_tool(self.name, args))
        return value if isinstance(value, dict) else {"result": value}


def lcm_tools(
    service: MnesisSessionService, *, exclude: Sequence[str] = DEFAULT_EXCLUDE
) -> list[BaseTool]:
    """The ``lcm_*`` tools for an ``LlmAgent`` whose runner uses ``service``."""
    return [LcmTool(service, d) for d in lcm_tool_definitions(format="openai", exclude=exclude)]
