"""The shared scenario of the framework adapter tests: a long coding session recorded
through an adapter (the deploy port stated once, in the first turn), a small window so
compaction happens, then the framework's own runner asks for the port, which only the
``lcm_*`` tools can still find.

The provider servers are ``tests/providers/servers.py``'s: they reject (HTTP 400) any
request that breaks the provider's rules and call ``lcm_grep`` with ``{"query": "port"}``
whenever tools are offered and the conversation does not end with a tool result.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mnesis import MnesisSession
from mnesis.config import CompactionConfig, MnesisConfig

PORT_FACT = "The deploy service listens on port 8443; remember it."
QUESTION = "Which port does the deploy service listen on?"
TURNS = 50


def small_window() -> MnesisConfig:
    """Extractive compaction and a 6,000-token window: 50 turns compact several times."""
    return MnesisConfig(
        compaction=CompactionConfig(compaction_model="extractive", fresh_tail_count=4),
        model_overrides={"context_limit": 6_000, "max_output_tokens": 500},
    )


async def new_session(tmp_path: Path) -> MnesisSession:
    """A session on a real SQLite file with the small window."""
    return await MnesisSession.create(
        model="local/m", db_path=str(tmp_path / "agent.db"), config=small_window()
    )


def turn_text(number: int) -> str:
    """The user text of turn ``number`` (only turn 0 names the port)."""
    if number == 0:
        return PORT_FACT
    return f"Step {number}: refactor module_{number}.py and run its unit tests " + "x " * 60


def responses_turn(number: int) -> list[dict[str, Any]]:
    """One turn as Responses items: user, a tool call, its output, the answer."""
    call = f"call_rec_{number}"
    return [
        {"role": "user", "content": turn_text(number)},
        {
            "type": "function_call",
            "call_id": call,
            "name": "bash",
            "arguments": json.dumps({"cmd": f"pytest tests/test_module_{number}.py"}),
        },
        {"type": "function_call_output", "call_id": call, "output": f"{number} passed " * 20},
        {
            "type": "message",
            "id": f"msg_rec_{number}",
            "status": "completed",
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": f"Done with step {number}.", "annotations": []}
            ],
        },
    ]


def openai_turn(number: int) -> list[dict[str, Any]]:
    """One turn as OpenAI chat messages: user, a tool call, its result, the answer."""
    call = f"call_rec_{number}"
    arguments = json.dumps({"cmd": f"pytest tests/test_module_{number}.py"})
    return [
        {"role": "user", "content": turn_text(number)},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call,
                    "type": "function",
                    "function": {"name": "bash", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call, "content": f"{number} passed " * 20},
        {"role": "assistant", "content": f"Done with step {number}."},
    ]


def tool_results_sent(body: dict[str, Any]) -> list[str]:
    """The contents of the tool results in an OpenAI chat request body."""
    return [str(m.get("content")) for m in body["messages"] if m.get("role") == "tool"]


def plain_text_sent(body: dict[str, Any]) -> str:
    """Everything of an OpenAI chat request body except the tool results."""
    return json.dumps([m for m in body["messages"] if m.get("role") != "tool"])
