"""The OpenAI Agents SDK (``pip install 'mnesis-lcm[openai-agents]'``): a ``Session``
whose history is a mnesis session, and the ``lcm_*`` tools as ``FunctionTool``\\ s.

``Runner.run(agent, "...", session=MnesisAgentsSession(session))``: the runner stores each
turn's items through :meth:`MnesisAgentsSession.add_items` (recorded as ordered rounds,
``record_messages(items, format="responses")``) and reads the history through
:meth:`~MnesisAgentsSession.get_items`: the assembled, compacted context as Responses
items, summaries included, so a long run never outgrows the model's window.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agents import FunctionTool, RunContextWrapper

from mnesis.errors import InvalidArgumentError
from mnesis.integrations.append_only import fork_without_last, linked_session, view_items
from mnesis.integrations.tools import DEFAULT_EXCLUDE, lcm_tool_specs
from mnesis.session import MnesisSession

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory import OpenAIResponsesCompactionArgs, SessionSettings

__all__ = ["MnesisAgentsSession", "lcm_function_tools"]


class MnesisAgentsSession:
    """An Agents SDK ``Session`` (and ``OpenAIResponsesCompactionAwareSession``) over a
    :class:`~mnesis.session.MnesisSession`.

    ``pop_item`` and ``clear_session`` follow :mod:`mnesis.integrations.append_only`: the
    adapter moves to a new linked session (``session_id`` changes), nothing is deleted.
    Sessions the adapter started that way are closed by :meth:`close`; the one you passed
    in stays yours to close.
    """

    session_settings: SessionSettings | None = None

    def __init__(self, session: MnesisSession) -> None:
        """Wrap ``session`` (open, any store)."""
        if not isinstance(session, MnesisSession):
            raise InvalidArgumentError(
                f"MnesisAgentsSession needs a MnesisSession, got {type(session).__name__}"
            )
        self.session = session
        """The mnesis session written to now."""
        self._started: list[MnesisSession] = []

    @property
    def session_id(self) -> str:
        """The ID of the mnesis session written to now."""
        return self.session.id

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The context view as Responses items (compacted history as summary messages),
        the latest ``limit`` of them when given."""
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise InvalidArgumentError(f"limit must be None or an int >= 0, got {limit!r}")
        items = await view_items(self.session)
        if limit is not None:
            items = items[len(items) - limit :] if limit else []
        return items  # type: ignore[return-value]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Record ``items`` (a new turn from a user message, or more of the open turn)."""
        if items:
            await self.session.record_messages(list(items), format="responses")

    async def pop_item(self) -> TResponseInputItem | None:
        """Return the last item of the view; the adapter moves to a new linked session
        holding the view without it (the old session keeps it, searchable)."""
        child, item = await fork_without_last(self.session)
        if child is not self.session:
            self._started.append(child)
            self.session = child
        return item  # type: ignore[return-value]

    async def clear_session(self) -> None:
        """Move to a new, empty linked session (the old one stays stored, searchable)."""
        child = await linked_session(self.session)
        self._started.append(child)
        self.session = child

    async def run_compaction(self, args: OpenAIResponsesCompactionArgs | None = None) -> None:
        """The SDK's compaction hook, mapped onto mnesis compaction: ``force=True``
        compacts now; otherwise mnesis has already compacted as its thresholds asked when
        the items were recorded, so there is nothing more to do."""
        if args and args.get("force"):
            await self.session.compact()

    async def close(self) -> None:
        """Close the linked sessions this adapter started (not the one passed in)."""
        for started in self._started:
            await started.close()


def lcm_function_tools(
    agents_session: MnesisAgentsSession | MnesisSession,
    *,
    exclude: Sequence[str] = DEFAULT_EXCLUDE,
) -> list[FunctionTool]:
    """The ``lcm_*`` tools as ``FunctionTool``\\ s over the session (for an adapter: the
    one it writes to now, after any ``clear_session``)."""

    def current() -> MnesisSession:
        if isinstance(agents_session, MnesisAgentsSession):
            return agents_session.session
        return agents_session

    tools = []
    for spec in lcm_tool_specs(current, exclude=exclude):

        async def invoke(_ctx: RunContextWrapper[Any], arguments: str, _run: Any = spec.run) -> str:
            return str(await _run(json.loads(arguments) if arguments else {}))

        tools.append(
            FunctionTool(
                name=spec.name,
                description=spec.description,
                params_json_schema=spec.parameters,
                on_invoke_tool=invoke,
                strict_json_schema=False,
            )
        )
    return tools
