"""The checked plan of one :class:`~mnesis.operators.AgenticMap` run.

:func:`plan_run` validates every argument of ``AgenticMap.run`` before any
session or store is touched, and raises :class:`~mnesis.errors.InvalidArgumentError`
for the first bad one. Inputs are JSON-encoded here, because they are stored to
make the run resumable.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mnesis.config import OperatorConfig
from mnesis.errors import InvalidArgumentError
from mnesis.models.ids import is_valid_id, new_id
from mnesis.operators.checks import int_at_least
from mnesis.operators.template import ItemTemplate

__all__ = ["DEFAULT_AGENT", "DEFAULT_SYSTEM_PROMPT", "AgentPlan", "ToolHandler", "plan_run"]

ToolHandler = Callable[[str, dict[str, Any]], Awaitable[str] | str]
"""``handler(tool_name, arguments) -> output text`` for the caller's own tools."""

DEFAULT_AGENT = "agentic-map"
DEFAULT_SYSTEM_PROMPT = (
    "You are a sub-agent working on one item of a larger task. Work on the item you are "
    "given, use the tools offered if they help, and finish with your final answer."
)


@dataclass(frozen=True, slots=True)
class AgentPlan:
    """Everything one run needs, checked."""

    run_id: str
    template: ItemTemplate
    inputs: list[Any]
    input_json: list[str]
    model: str
    agent: str
    system_prompt: str
    read_only: bool
    tools: tuple[dict[str, Any], ...]
    tool_handler: ToolHandler | None
    max_turns: int
    max_attempts: int
    concurrency: int
    parent_id: str | None
    retry_failed: bool

    def config_record(self) -> dict[str, Any]:
        """What is stored with the run (``template`` must match on resume)."""
        return {
            "template": self.template.source,
            "model": self.model,
            "agent": self.agent,
            "read_only": self.read_only,
            "max_turns": self.max_turns,
            "parent_session_id": self.parent_id,
            "total": len(self.inputs),
        }


def plan_run(
    config: OperatorConfig,
    model: str,
    inputs: Sequence[Any],
    prompt_template: str,
    *,
    read_only: bool,
    max_turns: int,
    run_id: str | None,
    parent_session_id: str | None,
    tools: Sequence[dict[str, Any]] | None,
    tool_handler: ToolHandler | None,
    system_prompt: str,
    agent: str,
    max_retries: int | None,
    concurrency: int | None,
    retry_failed: bool,
) -> AgentPlan:
    """The plan of a run of ``model`` with operator defaults from ``config``."""
    if isinstance(inputs, str | bytes | bytearray | dict) or not isinstance(inputs, Sequence):
        raise InvalidArgumentError(f"inputs must be a list of items, got {type(inputs).__name__}")
    items = list(inputs)
    template = ItemTemplate(prompt_template)
    encoded = [_encode(index, item) for index, item in enumerate(items)]
    if not isinstance(read_only, bool):
        raise InvalidArgumentError("read_only must be True or False")
    if not isinstance(retry_failed, bool):
        raise InvalidArgumentError("retry_failed must be True or False")
    turns = int_at_least(max_turns, 1, "max_turns")
    retries = int_at_least(
        config.max_retries if max_retries is None else max_retries, 0, "max_retries"
    )
    workers = int_at_least(
        config.agentic_map_concurrency if concurrency is None else concurrency,
        1,
        "concurrency",
    )
    if run_id is None:
        run_id = new_id("run")
    elif not isinstance(run_id, str) or not run_id.strip() or len(run_id) > 200:
        raise InvalidArgumentError(f"run_id must be a non-empty string, got {run_id!r}")
    if parent_session_id is not None and not is_valid_id(parent_session_id, "sess"):
        raise InvalidArgumentError(f"parent_session_id {parent_session_id!r} is not a session ID")
    if not isinstance(system_prompt, str):
        raise InvalidArgumentError("system_prompt must be a string")
    if not isinstance(agent, str) or not agent.strip():
        raise InvalidArgumentError(f"agent must be a non-empty string, got {agent!r}")
    offered = _check_tools(tools)
    if tool_handler is not None and not callable(tool_handler):
        raise InvalidArgumentError("tool_handler must be callable")
    if read_only and (offered or tool_handler is not None):
        raise InvalidArgumentError(
            "a read_only AgenticMap offers only the lcm_* retrieval tools; "
            "drop tools=/tool_handler= or pass read_only=False"
        )
    return AgentPlan(
        run_id=run_id,
        template=template,
        inputs=items,
        input_json=encoded,
        model=model,
        agent=f"{agent}:ro" if read_only else agent,
        system_prompt=system_prompt,
        read_only=read_only,
        tools=offered,
        tool_handler=tool_handler,
        max_turns=turns,
        max_attempts=retries + 1,
        concurrency=workers,
        parent_id=parent_session_id,
        retry_failed=retry_failed,
    )


def _encode(index: int, item: Any) -> str:
    try:
        return json.dumps(item, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(
            f"input {index} is not JSON-serialisable ({exc}); AgenticMap stores its "
            "inputs to be able to resume"
        ) from None


def _check_tools(tools: Sequence[dict[str, Any]] | None) -> tuple[dict[str, Any], ...]:
    if tools is None:
        return ()
    if isinstance(tools, dict) or not isinstance(tools, Sequence):
        raise InvalidArgumentError("tools must be a list of tool definitions")
    for tool in tools:
        if not isinstance(tool, dict):
            raise InvalidArgumentError(
                f"each tool must be a dict definition, got {type(tool).__name__}"
            )
    return tuple(tools)
