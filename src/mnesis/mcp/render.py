"""Readable text for each tool result: the block a model or a person reads next to the
structured content."""

from __future__ import annotations

from typing import Any

from mnesis.retrieval.describe import brief_lines

__all__ = ["render_result"]

_SNIPPET = 240


def _clip(text: str, limit: int = _SNIPPET) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _grep(data: dict[str, Any]) -> list[str]:
    matches = data.get("matches", [])
    lines = [f"{len(matches)} matches for {data.get('query')!r} ({data.get('mode')})"]
    for match in matches:
        where = (
            "in context"
            if match.get("in_context")
            else f"covered by {match['covering_summary_id']}"
            if match.get("covering_summary_id")
            else "not in context"
        )
        role = f"{match['role']}, " if match.get("role") else ""
        lines.append(f"- {match['id']} [{role}{where}] {_clip(match.get('snippet', ''))}")
    if data.get("timed_out"):
        lines.append("The regex scan timed out; continue with the cursor.")
    if data.get("next_cursor"):
        lines.append(f"More: call lcm_grep again with cursor={data['next_cursor']}")
    return lines


def _describe(data: dict[str, Any]) -> list[str]:
    kind = data.get("kind")
    if kind == "summary":
        lines = [
            f"{data['id']}: {data['summary_kind']} summary, depth {data['depth']}, "
            f"{data['source_message_count']} source messages "
            f"({data.get('span_start_message_id')} … {data.get('span_end_message_id')}), "
            f"{data['token_count']} tokens{', in context' if data.get('in_context') else ''}",
        ]
        if data.get("child_summary_ids"):
            lines.append("merges: " + ", ".join(data["child_summary_ids"]))
        if data.get("parent_summary_ids"):
            lines.append("merged into: " + ", ".join(data["parent_summary_ids"]))
        if data.get("ledger"):
            lines += brief_lines(data["ledger"])
        lines.append(str(data.get("content", "")))
        return lines
    if kind == "file":
        return [
            f"{data['id']}: {data['path']} ({data['file_type']}, {data['token_count']} tokens)",
            str(data.get("exploration_summary", "")),
        ]
    cover = data.get("covering_summary_id")
    return [
        f"{data['id']}: {data['role']} message, {data['token_estimate']} tokens, "
        + ("in context" if data.get("in_context") else f"covered by {cover}"),
        _clip(data.get("preview", ""), 2000),
    ]


def _expand(data: dict[str, Any]) -> list[str]:
    summaries, messages = data.get("summaries", []), data.get("messages", [])
    lines = [
        f"{data['summary_id']}: {len(summaries)} summaries and {len(messages)} messages "
        f"(~{data.get('estimated_tokens', 0)} tokens)"
    ]
    for s in summaries:
        lines += [f"## {s['id']} ({s['summary_kind']}, depth {s['depth']})", s["content"]]
    for m in messages:
        lines += [f"## {m['id']} ({m['role']})", m["text"]]
    if data.get("next_cursor"):
        lines.append(
            f"Truncated: call lcm_expand again with the same arguments and "
            f"cursor={data['next_cursor']} for the rest."
        )
    if data.get("unexpanded_summary_ids"):
        lines.append("Not opened: " + ", ".join(data["unexpanded_summary_ids"]))
    return lines


def _sessions(data: dict[str, Any]) -> list[str]:
    rows = data.get("sessions", [])
    if not rows:
        return ["No sessions."]
    return [
        f"- {r['id']} (agent {r['agent']}, model {r['model']}"
        + (f", {r['title']!r}" if r.get("title") else "")
        + ")"
        for r in rows
    ]


def _expand_query(data: dict[str, Any]) -> list[str]:
    lines = [str(data.get("answer", ""))]
    if data.get("cited_ids"):
        lines.append("Cited: " + ", ".join(data["cited_ids"]))
    return lines


_RENDERERS = {
    "lcm_grep": _grep,
    "lcm_describe": _describe,
    "lcm_expand": _expand,
    "lcm_sessions": _sessions,
    "lcm_expand_query": _expand_query,
}


def render_result(tool: str, data: dict[str, Any]) -> str:
    """The result of ``tool`` as plain text."""
    return "\n".join(_RENDERERS[tool](data))
