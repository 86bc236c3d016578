"""The options and the checked plan of one :class:`~mnesis.operators.AgenticMap` run.

:class:`AgenticMapOptions` declares (and documents) the keyword options that
``AgenticMap.run`` and ``run_all`` share. :func:`plan_run` validates every argument
before any session or store is touched, and raises
:class:`~mnesis.errors.InvalidArgumentError` for the first bad one
(:class:`~mnesis.operators.UnknownOptionError` for a keyword that is no option).
Inputs are JSON-encoded here, because they are stored to make the run resumable.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from mnesis.config import MnesisConfig, OperatorConfig
from mnesis.errors import InvalidArgumentError
from mnesis.models.ids import is_valid_id, new_id
from mnesis.operators.checks import check_option_names, int_at_least, int_option, run_model
from mnesis.operators.template import ItemTemplate
from mnesis.store.pool import StorePool

__all__ = [
    "DEFAULT_AGENT",
    "DEFAULT_MAX_TURNS",
    "DEFAULT_SYSTEM_PROMPT",
    "PER_RUN_STORE",
    "AgentPlan",
    "AgenticMapOptions",
    "ToolHandler",
    "plan_run",
]

ToolHandler = Callable[[str, dict[str, Any]], Awaitable[str] | str]
"""``handler(tool_name, arguments) -> output text`` for the caller's own tools."""

DEFAULT_AGENT = "agentic-map"
DEFAULT_SYSTEM_PROMPT = (
    "You are a sub-agent working on one item of a larger task. Work on the item you are "
    "given, use the tools offered if they help, and finish with your final answer."
)
DEFAULT_MAX_TURNS = 20


class AgenticMapOptions(TypedDict, total=False):
    """The keyword options of one :class:`~mnesis.operators.AgenticMap` run; a missing
    option takes the default named here."""

    read_only: bool
    """Offer the sub-agents only the ``lcm_*`` retrieval tools (then ``tools`` and
    ``tool_handler`` are refused) and suffix their agent name with ``:ro``; default ``False``."""
    max_turns: int
    """User turns one sub-session may take while the model asks for tools; ``>= 1``,
    default 20."""
    run_id: str | None
    """The run's ID; pass your own (e.g. ``new_id("run")``) to be able to resume the run
    by calling ``run`` again with it, the same inputs and the same template. Default: a
    new ID."""
    parent_session_id: str | None
    """The session the sub-sessions are children of (it must exist); default ``None``."""
    tools: Sequence[dict[str, Any]] | None
    """Tool definitions offered besides the ``lcm_*`` tools; run by ``tool_handler``."""
    tool_handler: ToolHandler | None
    """``handler(name, arguments) -> text`` (sync or async) for the calls of ``tools``."""
    system_prompt: str
    """The sub-sessions' system prompt; default :data:`DEFAULT_SYSTEM_PROMPT`."""
    agent: str
    """The sub-sessions' agent name; default ``"agentic-map"``."""
    max_retries: int | None
    """Fresh sub-sessions tried after a failed attempt; ``>= 0``, default
    ``config.max_retries``."""
    concurrency: int | None
    """Items in flight at once; ``>= 1``, default ``config.agentic_map_concurrency``."""
    retry_failed: bool
    """On resume, run the items an earlier run left failed again; default ``False``."""
    model: str | None
    """Overrides the model given to the constructor; one of them must be given."""
    continuation_message: str
    """The user message sent after the tool results of a turn, asking the sub-agent to
    go on; default (``""``): a short built-in one."""
    lcm_config: MnesisConfig | None
    """0.4.0's name: the sub-sessions' configuration for this run (as the constructor's
    ``session_config``)."""
    db_path: str | None
    """0.4.0's per-run store path of the sub-sessions (as the constructor's ``db_path``)."""
    pool: StorePool | None
    """0.4.0's per-run store pool of the sub-sessions (as the constructor's ``pool``)."""


PER_RUN_STORE = ("lcm_config", "db_path", "pool")
"""Options that pick the sub-sessions' store and configuration: the constructor's, per run."""


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
    continuation: str = ""

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
    default_model: str | None,
    inputs: Sequence[Any],
    prompt_template: str,
    options: AgenticMapOptions,
    call: str = "AgenticMap.run",
) -> AgentPlan:
    """The plan of one call of ``call`` with ``options``; operator defaults come from
    ``config``, the model from ``options`` or else ``default_model``."""
    check_option_names(options, AgenticMapOptions.__optional_keys__, call)
    continuation = options.get("continuation_message", "")
    if not isinstance(continuation, str):
        raise InvalidArgumentError("continuation_message must be a string")
    model = run_model(options.get("model"), default_model, "AgenticMap")
    if isinstance(inputs, str | bytes | bytearray | dict) or not isinstance(inputs, Sequence):
        raise InvalidArgumentError(f"inputs must be a list of items, got {type(inputs).__name__}")
    items = list(inputs)
    template = ItemTemplate(prompt_template)
    encoded = [_encode(index, item) for index, item in enumerate(items)]
    read_only = _flag(options.get("read_only", False), "read_only")
    retry_failed = _flag(options.get("retry_failed", False), "retry_failed")
    turns = int_at_least(options.get("max_turns", DEFAULT_MAX_TURNS), 1, "max_turns")
    retries = int_option(options.get("max_retries"), config.max_retries, 0, "max_retries")
    workers = int_option(
        options.get("concurrency"), config.agentic_map_concurrency, 1, "concurrency"
    )
    run_id = options.get("run_id")
    if run_id is None:
        run_id = new_id("run")
    elif not isinstance(run_id, str) or not run_id.strip() or len(run_id) > 200:
        raise InvalidArgumentError(f"run_id must be a non-empty string, got {run_id!r}")
    parent_id = options.get("parent_session_id")
    if parent_id is not None and not is_valid_id(parent_id, "sess"):
        raise InvalidArgumentError(f"parent_session_id {parent_id!r} is not a session ID")
    system_prompt = options.get("system_prompt", DEFAULT_SYSTEM_PROMPT)
    if not isinstance(system_prompt, str):
        raise InvalidArgumentError("system_prompt must be a string")
    agent = options.get("agent", DEFAULT_AGENT)
    if not isinstance(agent, str) or not agent.strip():
        raise InvalidArgumentError(f"agent must be a non-empty string, got {agent!r}")
    offered = _check_tools(options.get("tools"))
    tool_handler = options.get("tool_handler")
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
        parent_id=parent_id,
        retry_failed=retry_failed,
        continuation=continuation,
    )


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be True or False")
    return value


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
