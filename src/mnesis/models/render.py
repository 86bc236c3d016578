"""How stored parts are rendered into the text a model sees.

The token estimator counts exactly this rendering, so a message's stored
``token_estimate`` matches what the context builder will emit for it.
"""

from __future__ import annotations

import json

from mnesis.models.message import MessageWithParts
from mnesis.models.parts import (
    FilePart,
    FileRefPart,
    MessagePart,
    PatchPart,
    SubtaskPart,
    TextPart,
    ToolPart,
)
from mnesis.models.summary import SummaryRecord

__all__ = [
    "render_message_text",
    "render_part",
    "render_summary_record",
    "render_tool",
    "tombstone",
]


def tombstone(tool_name: str, compacted_at: int) -> str:
    """The one-line stand-in for a pruned tool output."""
    return f"[Tool '{tool_name}' output compacted at {compacted_at}]"


def render_tool(part: ToolPart) -> str:
    """Render a tool call with its result (or its tombstone)."""
    if part.status.compacted_at is not None:
        return tombstone(part.tool_name, part.status.compacted_at)
    args = json.dumps(part.input, ensure_ascii=False, sort_keys=True, default=str)
    lines = [f"[Tool: {part.tool_name}] id={part.tool_call_id}", f"Input: {args}"]
    state = part.status.state
    if state == "error":
        lines.append(f"Error: {part.error_message or 'unknown error'}")
    elif state == "completed":
        lines.append("Output:")
        lines.append(part.output or "")
    else:
        lines.append(f"Status: {state}")
    lines.append("[/Tool]")
    return "\n".join(lines)


def render_file_ref(part: FileRefPart) -> str:
    """Render a large-file reference as a ``[FILE: ...]`` block."""
    ident = part.file_id or part.content_id
    lines = [
        f"[FILE: {part.path}]",
        f"File-ID: {ident}",
        f"Content-ID: {part.content_id}",
        f"Type: {part.file_type}",
        f"Tokens: {part.token_count}",
    ]
    if part.exploration_summary:
        lines.append("Summary:")
        lines.append(part.exploration_summary)
    lines.append("[/FILE]")
    return "\n".join(lines)


def render_part(part: MessagePart) -> str | None:
    """Return the text a part contributes to the context, or None for metadata parts."""
    if isinstance(part, TextPart):
        return None if part.ignored else part.text
    if isinstance(part, ToolPart):
        return render_tool(part)
    if isinstance(part, FileRefPart):
        return render_file_ref(part)
    if isinstance(part, PatchPart):
        return f"[Patch {part.hash}: {', '.join(part.files)}]"
    if isinstance(part, FilePart):
        return f"[Attachment: {part.filename or part.url} ({part.mime})]"
    if isinstance(part, SubtaskPart):
        return f"[Subtask for {part.agent}: {part.description or part.prompt}]"
    return None


def render_message_text(message: MessageWithParts) -> str:
    """Render all parts of a message, joined by blank lines."""
    pieces = [text for text in map(render_part, message.parts) if text]
    return "\n\n".join(pieces)


def summary_header(
    summary_id: str,
    kind: str,
    depth: int,
    source_count: int,
    span_start: str | None,
    span_end: str | None,
) -> str:
    """The annotation above a summary in the context: what it is and how to expand it."""
    span = f"{span_start} … {span_end}" if span_start and span_end else "unknown span"
    return (
        f"[LCM summary {summary_id} | {kind}, depth {depth} | covers {source_count} "
        f'messages: {span} | recover details with lcm_expand(summary_id="{summary_id}") '
        "or lcm_grep]"
    )


def render_summary_record(summary: SummaryRecord) -> str:
    """A summary as it appears in the context: annotation header, then its text."""
    header = summary_header(
        summary.id,
        summary.kind,
        summary.depth,
        summary.source_message_count,
        summary.span_start_message_id,
        summary.span_end_message_id,
    )
    return header + "\n" + summary.content
