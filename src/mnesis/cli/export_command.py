"""``mnesis export`` (a session's messages as JSONL, OpenAI, Anthropic or Markdown) and
``mnesis dag`` (its summary DAG as Mermaid or Graphviz dot). Both read only."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any

import typer

from mnesis.cli._common import DbOption
from mnesis.cli._store import run_read_only
from mnesis.config import MnesisConfig
from mnesis.models.message import MessageWithParts
from mnesis.models.parts import ReasoningPart, TextPart, ToolPart
from mnesis.store.base import SessionRecord, SummaryRecord
from mnesis.store.immutable import ImmutableStore

__all__ = ["dag_command", "export_command"]


class ExportFormat(StrEnum):
    """Export formats."""

    jsonl = "jsonl"
    openai = "openai"
    anthropic = "anthropic"
    markdown = "markdown"


class DagFormat(StrEnum):
    """DAG drawing formats."""

    mermaid = "mermaid"
    dot = "dot"


SessionArg = Annotated[str, typer.Argument(metavar="SESSION_ID", help="A session ID.")]


async def _messages(
    store: ImmutableStore, session_id: str
) -> tuple[SessionRecord, list[MessageWithParts]]:
    record = await store.get_session(session_id)
    return record, await store.get_messages(session_id, include_summaries=False)


def _text(message: MessageWithParts) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, TextPart) and not p.synthetic)


def _openai(messages: list[MessageWithParts]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        tools = message.tool_parts
        entry: dict[str, Any] = {"role": message.role, "content": _text(message) or None}
        if tools:
            entry["tool_calls"] = [
                {
                    "id": t.tool_call_id,
                    "type": "function",
                    "function": {"name": t.tool_name, "arguments": json.dumps(t.input)},
                }
                for t in tools
            ]
        out.append(entry)
        out.extend(
            {
                "role": "tool",
                "tool_call_id": t.tool_call_id,
                "content": t.output or t.error_message or "",
            }
            for t in tools
        )
    return out


def _anthropic(messages: list[MessageWithParts]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, TextPart) and not part.synthetic:
                blocks.append({"type": "text", "text": part.text})
            elif isinstance(part, ReasoningPart):
                blocks.append({"type": "thinking", "thinking": part.text})
            elif isinstance(part, ToolPart):
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": part.tool_call_id,
                        "name": part.tool_name,
                        "input": part.input,
                    }
                )
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": part.tool_call_id,
                        "content": part.output or part.error_message or "",
                        "is_error": part.status.state == "error",
                    }
                )
        if blocks:
            out.append({"role": role, "content": blocks})
        if results:
            out.append({"role": "user", "content": results})
    return out


def _markdown(record: SessionRecord, messages: list[MessageWithParts]) -> str:
    lines = [f"# {record.title or record.id}", "", f"Model: {record.model}", ""]
    for message in messages:
        lines += [f"## {message.role} · {message.id}", ""]
        for part in message.parts:
            if isinstance(part, TextPart) and not part.synthetic:
                lines += [part.text, ""]
            elif isinstance(part, ReasoningPart):
                lines += ["> " + part.text.replace("\n", "\n> "), ""]
            elif isinstance(part, ToolPart):
                lines += [
                    f"**{part.tool_name}** `{json.dumps(part.input, ensure_ascii=False)}`",
                    "",
                    "```",
                    part.output or part.error_message or "",
                    "```",
                    "",
                ]
    return "\n".join(lines)


def export_command(
    session_id: SessionArg,
    db: DbOption = None,
    format: Annotated[ExportFormat, typer.Option(help="Output format.")] = ExportFormat.jsonl,
) -> None:
    """Print a session's original messages (never the summaries): `jsonl` (one stored
    message per line, lossless), `openai` or `anthropic` (API message lists), `markdown`."""
    (record, messages), _ = run_read_only(db, lambda store, _: _messages(store, session_id))
    if format is ExportFormat.jsonl:
        for message in messages:
            typer.echo(json.dumps(message.model_dump(mode="json"), ensure_ascii=False))
    elif format is ExportFormat.openai:
        typer.echo(json.dumps(_openai(messages), ensure_ascii=False, indent=2))
    elif format is ExportFormat.anthropic:
        typer.echo(json.dumps(_anthropic(messages), ensure_ascii=False, indent=2))
    else:
        typer.echo(_markdown(record, messages))


async def _dag(
    store: ImmutableStore, config: MnesisConfig, session_id: str
) -> tuple[list[SummaryRecord], dict[str, list[str]], set[str]]:
    await store.get_session(session_id)
    snapshot = await store.integrity_snapshot(session_id)
    summaries = await store.get_summaries([s[0] for s in snapshot.summaries])
    parents: dict[str, list[str]] = {}
    for summary_id, merged in snapshot.summary_parents:
        parents.setdefault(summary_id, []).append(merged)
    in_context = {s for _, kind, _, s in snapshot.context if kind == "summary" and s}
    return summaries, parents, in_context


def dag_command(
    session_id: SessionArg,
    db: DbOption = None,
    format: Annotated[DagFormat, typer.Option(help="Diagram language.")] = DagFormat.mermaid,
) -> None:
    """Print a session's summary DAG (condensed summaries → the summaries they merge; leaf
    summaries with the number of messages they cover) as Mermaid or Graphviz dot."""
    (summaries, parents, in_context), _ = run_read_only(
        db, lambda store, config: _dag(store, config, session_id)
    )
    lines: list[str] = []
    if format is DagFormat.mermaid:
        lines.append("graph TD")
        for s in summaries:
            label = f"{s.id}<br/>{s.kind} d{s.depth} · {s.source_message_count} msgs"
            shape = f'{s.id}(["{label}"])' if s.id in in_context else f'{s.id}["{label}"]'
            lines.append(f"    {shape}")
        for child, merged in parents.items():
            lines.extend(f"    {child} --> {m}" for m in merged)
    else:
        lines.append("digraph summaries {")
        lines.append("    node [shape=box];")
        for s in summaries:
            style = ", style=bold" if s.id in in_context else ""
            label = f"{s.id}\\n{s.kind} d{s.depth} · {s.source_message_count} msgs"
            lines.append(f'    "{s.id}" [label="{label}"{style}];')
        for child, merged in parents.items():
            lines.extend(f'    "{child}" -> "{m}";' for m in merged)
        lines.append("}")
    typer.echo("\n".join(lines))
