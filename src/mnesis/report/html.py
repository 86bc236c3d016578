"""One self-contained HTML page for a session: inline SVG charts, inline CSS, one inline
JSON block (tables, summaries, the bounded message index) and an inline script that pages
the tables, searches the messages and shows the transcript. No network, no external files."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from html import escape
from typing import Any

from mnesis.report.assets import CSS, SCRIPT
from mnesis.report.charts import dag_svg, drawn_nodes, fmt_tokens, needs_zoom, token_chart
from mnesis.report.data import MAX_PRUNED_ROWS, DagNode, ReportData

__all__ = ["MAX_LEDGER_ROWS", "MAX_SEARCH_HITS", "render_html"]

MAX_SEARCH_HITS = 1_000
"""The search box lists at most this many matches (the first ones, in order)."""


MAX_LEDGER_ROWS = 500
"""Compactions the loss-ledger table lists (the first ones; `mnesis compactions` lists all)."""
_LEDGER_ENTITIES = 6


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _details(nodes: list[DagNode]) -> str:
    out = []
    for n in nodes:
        span = f"{n.span_start_message_id or '?'} … {n.span_end_message_id or '?'}"
        out.append(
            f'<section class="summary-detail" id="d-{n.id}" hidden><h3>{n.id}</h3>'
            f"<p class=meta>{n.kind}, depth {n.depth}, level {n.level}, "
            f"{n.source_message_count} source messages ({escape(span)}), "
            f"{n.tokens_before:,} → {n.token_count:,} tokens, written {_when(n.created_at)}"
            f"{', in context now' if n.in_context else ''}</p>"
            f"<pre>{escape(n.content)}</pre></section>"
        )
    return "".join(out)


def _levels(data: ReportData) -> str:
    if not data.levels:
        return "<p>No compactions yet.</p>"
    top = max(max(s.tokens_before for s in data.levels), 1)
    rows = []
    for s in data.levels:
        before, after = 520 * s.tokens_before / top, 520 * s.tokens_after / top
        rows.append(
            f"<tr><td>level {s.level}</td><td>{s.summaries}</td>"
            f'<td><svg class="bar" width="540" height="34"><rect y="2" height="14" '
            f'width="{before:.1f}" fill="#8a94a6"/><rect y="18" height="14" '
            f'width="{max(after, 1):.1f}" fill="#2f6fde"/></svg></td>'
            f"<td>{s.tokens_before:,} → {s.tokens_after:,}</td></tr>"
        )
    return (
        '<table id="levels"><tr><th>level</th><th>summaries</th><th>tokens before / after</th>'
        "<th></th></tr>" + "".join(rows) + "</table>"
    )


def _pruned(data: ReportData) -> str:
    if not data.pruned_count:
        return "<p>No tool outputs were pruned.</p>"
    tools = "".join(
        f"<tr><td>{escape(t.tool_name)}</td><td>{t.outputs:,}</td><td>{t.tokens:,}</td></tr>"
        for t in data.pruned_by_tool[:50]
    )
    listed = (
        f" The table lists the first {len(data.pruned):,} (at most {MAX_PRUNED_ROWS:,})."
        if len(data.pruned) < data.pruned_count
        else ""
    )
    return (
        f"<p>{data.pruned_count:,} outputs, {data.pruned_tokens:,} tokens kept out of the "
        f"context (still in the store, shown in full by lcm_expand).{listed}</p>"
        '<table id="pruned-by-tool"><tr><th>tool</th><th>outputs</th><th>tokens</th></tr>'
        f'{tools}</table><div id="pruned-table"></div>'
    )


def _ledger(data: ReportData) -> str:
    if not data.ledger:
        return "<p>No compactions yet.</p>"
    rows = []
    for row in data.ledger[:MAX_LEDGER_ROWS]:
        ledger = row.ledger
        out = (
            f"{len(ledger.removed_summary_ids):,} summaries"
            if ledger.kind == "condensed"
            else f"{len(ledger.removed_message_ids):,} messages"
        )
        dropped = "<br>".join(
            f"{e.kind} <code>{escape(e.value[:80])}</code> → {escape(', '.join(e.found_in))}"
            for e in ledger.dropped[:_LEDGER_ENTITIES]
        )
        more = ledger.dropped_total - min(len(ledger.dropped), _LEDGER_ENTITIES)
        if more > 0:
            dropped += f"<br>… {more:,} more"
        rows.append(
            f"<tr><td>{_when(row.created_at)}</td><td>{ledger.kind}</td>"
            f"<td>{escape(row.summary_id or '-')}</td><td>{out}</td>"
            f"<td>{ledger.tokens_removed:,} → {ledger.tokens_added:,}</td>"
            f"<td>{ledger.entities_kept:,} / {ledger.entities_seen:,}</td>"
            f"<td>{dropped or '-'}</td></tr>"
        )
    listed = (
        f" The table lists the first {MAX_LEDGER_ROWS:,} of {len(data.ledger):,}; "
        "`mnesis compactions` lists all."
        if len(data.ledger) > MAX_LEDGER_ROWS
        else ""
    )
    return (
        "<p>What each compaction took out of the context view, and the entities (paths, "
        "commands, identifiers, numbers, URLs, decisions) no longer readable there, with "
        f"the message or summary IDs that still hold them (lcm_expand).{listed}</p>"
        '<table id="ledger"><tr><th>when</th><th>kind</th><th>summary</th><th>out of view'
        "</th><th>tokens out → in</th><th>entities kept</th><th>entities dropped</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _payload(data: ReportData) -> str:
    payload: dict[str, Any] = {
        "maxHits": MAX_SEARCH_HITS,
        "pruned": [
            [p.tool_name, p.tool_call_id, p.message_id, p.tokens, p.compacted_at]
            for p in data.pruned
        ],
        "summaries": [
            [
                n.id,
                n.kind,
                n.level,
                n.depth,
                n.source_message_count,
                n.tokens_before,
                n.token_count,
                n.after_message,
                n.created_at,
            ]
            for n in data.nodes
        ],
        "messages": [
            [e.ordinal, e.turn, e.role, e.message_id, e.created_at, e.text, int(e.truncated)]
            for e in data.index.entries
        ],
    }
    # Inside <script>, "</" would end the block: every "<" is written as an escape.
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def _index_note(data: ReportData) -> str:
    index = data.index
    note = (
        f"Searches the first {index.per_message:,} characters of each message "
        f"(the page holds at most {index.budget:,} characters of message text)"
    )
    if index.left_out:
        note += (
            f"; the {index.left_out:,} earliest messages do not fit that bound and are left "
            f"out: search holds messages #{index.first_indexed:,} to #{data.message_count:,}. "
            "`mnesis grep` and `mnesis show` read all of them"
        )
    return note + "."


def render_html(data: ReportData) -> str:
    """The report page of ``data``."""
    s = data.session
    last = data.turns[-1] if data.turns else None
    saved = (
        0
        if last is None or not last.history_tokens
        else (100 * (1 - last.context_tokens / last.history_tokens))
    )
    cards = [
        ("turns", f"{len(data.turns):,}"),
        ("messages", f"{data.message_count:,}"),
        ("history tokens", fmt_tokens(last.history_tokens) if last else "0"),
        ("context tokens now", fmt_tokens(data.context_tokens_now)),
        ("summaries", f"{len(data.nodes):,}"),
        ("context saved", f"{saved:.0f}%"),
    ]
    if data.backlog_turns:
        cards.append(("imported backlog", f"{data.backlog_turns:,} turns"))
    drawn = drawn_nodes(data.nodes)
    dag_note = (
        f" The DAG draws the newest {len(drawn):,} of {len(data.nodes):,} summaries."
        if len(drawn) < len(data.nodes)
        else ""
    )
    backlog_note = (
        f" Shaded: the first {data.backlog_turns:,} turns were stored over the model's window "
        "before anything was compacted (an import compacted afterwards): no model saw them "
        "as one context, so no context line is drawn there."
        if data.backlog_turns
        else ""
    )
    zoom = (
        '<p class="hint">The context is small next to the history: here it is alone, '
        f"on its own axis.</p>{token_chart(data, context_only=True)}"
        if needs_zoom(data)
        else ""
    )
    title = escape(s.title or s.id)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>mnesis report: {title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head>
<body><header><h1>mnesis session {escape(s.id)}</h1>
<p>{escape(s.model)} · agent {escape(s.agent)} · created {_when(s.created_at)}</p></header>
<main><div class="cards">{"".join(f'<div class="card">{k}<b>{v}</b></div>' for k, v in cards)}</div>
<section class="panel"><h2>History versus context, per turn</h2>{token_chart(data)}{zoom}
<p class="hint">The grey line is everything stored; the blue line is what the model saw.
Dashed lines mark the turns during which a compaction landed; the red dashed line is the
model's window.{backlog_note}</p></section>
<section class="panel" id="search-panel"><h2>Search the messages</h2>
<input id="search" type="search" placeholder="words to find (all must match)"
 aria-label="search the session's messages"><p class="hint">{escape(_index_note(data))}
Click a match to open it in the transcript.</p><div id="search-results"></div></section>
<section class="panel" id="transcript-panel"><h2>Transcript</h2>
<p class="hint">Messages in order, 100 a page (click a row to read all of it);
orange rows are compaction points: where a summary landed, after which message.</p>
<div id="transcript"></div></section>
<section class="panel"><h2>Summary DAG</h2>
<p class="hint">Leaves (green) summarise messages; condensed summaries (purple) merge summaries.
Outlined: in the context now. Hover for tokens, click to read a summary and its span.{dag_note}</p>
{dag_svg(drawn)}{_details(drawn)}<div id="summary-table"></div></section>
<section class="panel"><h2>Compactions by level</h2>{_levels(data)}</section>
<section class="panel"><h2>Pruned tool outputs</h2>{_pruned(data)}</section>
<section class="panel"><h2>Loss ledger</h2>{_ledger(data)}</section>
</main><script type="application/json" id="report-data">{_payload(data)}</script>
<script>{SCRIPT}</script></body></html>
"""
