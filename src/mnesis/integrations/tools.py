"""The ``lcm_*`` tools as plain specs (name, description, JSON schema, runner) that each
framework adapter wraps in its own tool type."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mnesis.session import MnesisSession

__all__ = ["DEFAULT_EXCLUDE", "LcmToolSpec", "lcm_tool_specs"]

DEFAULT_EXCLUDE: tuple[str, ...] = ("lcm_expand_query",)
"""Left out unless asked for: ``lcm_expand_query`` runs a sub-agent on the session's own
model client (``llm=``), which a framework's agent usually does not share."""


@dataclass(frozen=True)
class LcmToolSpec:
    """One ``lcm_*`` tool: what the model sees and the coroutine that runs it."""

    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[dict[str, Any] | str | None], Awaitable[str]]


def lcm_tool_specs(
    session: MnesisSession | Callable[[], MnesisSession],
    *,
    exclude: Sequence[str] = DEFAULT_EXCLUDE,
) -> list[LcmToolSpec]:
    """The ``lcm_*`` tools over ``session`` (or a function returning the current session,
    for adapters that move to a linked session); each returns the tool's JSON, errors
    inside it (``{"error": ...}``), never raised."""
    current = session if callable(session) else (lambda: session)
    specs = []
    for definition in MnesisSession.lcm_tool_definitions(current(), exclude=exclude):
        function = definition["function"]
        name = function["name"]

        async def run(arguments: dict[str, Any] | str | None, _name: str = name) -> str:
            return await current().execute_tool(_name, arguments)

        specs.append(
            LcmToolSpec(
                name=name,
                description=function["description"],
                parameters=function["parameters"],
                run=run,
            )
        )
    return specs
