"""One self-contained HTML page for a session: inline SVG charts, inline CSS and a few
lines of inline script (click a summary to read it). No network, no external files."""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape

from mnesis.report.data import DagNode, ReportData

__all__ = ["render_html"]

_W, _H, _PAD = 960, 320, 48
_HISTORY, _CONTEXT, _MARK = "#8a94a6", "#2f6fde", "#e0703a"
_LEAF, _CONDENSED = "#4caf7d", "#7a5cd6"


def _fmt(n: float) -> str:
    return f"{n / 1000:.1f}k" if n >= 10_000 else f"{int(n):,}"


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _empty(svg_id: str, message: str) -> str:
    return (
        f'<svg id="{svg_id}" role="img" width="{_W}" height="60">'
        f'<text x="10" y="30">{escape(message)}</text></svg>'
    )


def _token_chart(data: ReportData) -> str:
    turns = data.turns
    if not turns:
        return _empty("token-chart", "No turns yet.")
    top = max(max(t.history_tokens for t in turns), 1) * 1.05
    span = max(len(turns) - 1, 1)

    def x(i: int) -> float:
        return _PAD + (_W - 2 * _PAD) * i / span

    def y(v: float) -> float:
        return _H - _PAD - (_H - 2 * _PAD) * v / top

    parts = [
        f'<svg id="token-chart" role="img" aria-label="history and context tokens per turn" '
        f'viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}">'
    ]
    for k in range(5):
        v = top * k / 4
        parts.append(
            f'<line x1="{_PAD}" x2="{_W - _PAD}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="grid"/>'
            f'<text x="{_PAD - 6}" y="{y(v) + 4:.1f}" class="tick" text-anchor="end">'
            f"{_fmt(v)}</text>"
        )
    step = max(1, len(turns) // 10)
    for i in range(0, len(turns), step):
        parts.append(
            f'<text x="{x(i):.1f}" y="{_H - _PAD + 16}" class="tick" text-anchor="middle">'
            f"{turns[i].turn}</text>"
        )
    parts.append(
        f'<text x="{_W / 2}" y="{_H - 8}" class="axis" text-anchor="middle">turn</text>'
    )
    for i, t in enumerate(turns):
        if t.compacted:
            parts.append(
                f'<line class="compaction" x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{_PAD}" '
                f'y2="{_H - _PAD}" stroke="{_MARK}"><title>compaction during turn {t.turn}'
                f"</title></line>"
            )
    for name, color, values in [
        ("history", _HISTORY, [t.history_tokens for t in turns]),
        ("context", _CONTEXT, [t.context_tokens for t in turns]),
    ]:
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
        parts.append(
            f'<polyline id="{name}-line" points="{points}" fill="none" stroke="{color}" '
            f'stroke-width="2.5"/>'
        )
    for i, t in enumerate(turns):
        parts.append(
            f'<circle cx="{x(i):.1f}" cy="{y(t.context_tokens):.1f}" r="3" fill="{_CONTEXT}">'
            f"<title>turn {t.turn}: history {t.history_tokens:,} tokens, context "
            f"{t.context_tokens:,} tokens</title></circle>"
        )
    legend = [
        ("history (everything stored)", _HISTORY),
        ("context (what the model sees)", _CONTEXT),
        ("compaction", _MARK),
    ]
    for k, (label, color) in enumerate(legend):
        lx = _PAD + 12 + k * 230
        parts.append(
            f'<rect x="{lx}" y="12" width="14" height="14" fill="{color}" rx="3"/>'
            f'<text x="{lx + 20}" y="24" class="legend">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _dag(nodes: list[DagNode]) -> str:
    if not nodes:
        return _empty("summary-dag", "No summaries yet: nothing was compacted.")
    depths = sorted({n.depth for n in nodes})
    rows = {d: [n for n in nodes if n.depth == d] for d in depths}
    widest = max(len(r) for r in rows.values())
    box_w, gap, row_h = 26, 8, 90
    width = max(_W, 2 * _PAD + widest * (box_w + gap))
    height = 2 * _PAD + (len(depths) - 1) * row_h + 30
    pos: dict[str, tuple[float, float]] = {}
    for level, d in enumerate(depths):
        row = rows[d]
        room = (width - 2 * _PAD) / max(len(row), 1)
        for i, node in enumerate(row):
            pos[node.id] = (_PAD + room * (i + 0.5), height - _PAD - level * row_h)
    parts = [
        f'<svg id="summary-dag" role="img" aria-label="summary DAG" viewBox="0 0 {width} '
        f'{height}" width="{width}" height="{height}">'
    ]
    for node in nodes:
        for child in node.children:
            if child in pos:
                (x1, y1), (x2, y2) = pos[node.id], pos[child]
                parts.append(
                    f'<line class="edge" x1="{x1:.1f}" y1="{y1 + 10:.1f}" x2="{x2:.1f}" '
                    f'y2="{y2 - 10:.1f}"/>'
                )
    for level, d in enumerate(depths):
        parts.append(
            f'<text x="8" y="{height - _PAD - level * row_h + 4:.1f}" class="tick">depth {d}</text>'
        )
    for node in nodes:
        cx, cy = pos[node.id]
        color = _LEAF if node.kind == "leaf" else _CONDENSED
        ring = ' stroke="#1b1f24" stroke-width="2.5"' if node.in_context else ""
        tip = (
            f"{node.id} ({node.kind}, depth {node.depth}, level {node.level}): "
            f"{node.tokens_before:,} → {node.token_count:,} tokens"
        )
        parts.append(
            f'<g class="node {node.kind}" tabindex="0" data-id="{node.id}">'
            f'<rect x="{cx - box_w / 2:.1f}" y="{cy - 10:.1f}" width="{box_w}" height="20" '
            f'rx="5" fill="{color}"{ring}/><title>{escape(tip)}</title></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


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
            f'width="{before:.1f}" fill="{_HISTORY}"/><rect y="18" height="14" '
            f'width="{max(after, 1):.1f}" fill="{_CONTEXT}"/></svg></td>'
            f"<td>{s.tokens_before:,} → {s.tokens_after:,}</td></tr>"
        )
    return (
        '<table id="levels"><tr><th>level</th><th>summaries</th><th>tokens before / after</th>'
        "<th></th></tr>" + "".join(rows) + "</table>"
    )


def _pruned(data: ReportData) -> str:
    if not data.pruned:
        return "<p>No tool outputs were pruned.</p>"
    rows = "".join(
        f"<tr><td>{escape(p.tool_name)}</td><td><code>{escape(p.tool_call_id)}</code></td>"
        f"<td><code>{p.message_id}</code></td><td>{p.tokens:,}</td><td>{_when(p.compacted_at)}"
        "</td></tr>"
        for p in data.pruned
    )
    total = sum(p.tokens for p in data.pruned)
    return (
        f"<p>{len(data.pruned)} outputs, {total:,} tokens kept out of the context "
        "(still in the store, shown in full by lcm_expand).</p>"
        '<table id="pruned"><tr><th>tool</th><th>call</th><th>message</th><th>tokens</th>'
        f"<th>pruned at</th></tr>{rows}</table>"
    )


_CSS = """
body{font:15px/1.5 system-ui,-apple-system,Segoe UI,sans-serif;margin:0}
body{background:#f6f7f9;color:#1b1f24}
header{background:#1b1f24;color:#fff;padding:20px 32px}
header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#b8c0cc}
main{padding:8px 32px 40px;max-width:1100px}
.cards{display:flex;flex-wrap:wrap;gap:16px;margin:20px 0}
.card{background:#fff;border-radius:10px;padding:12px 18px;min-width:150px}
.card,section.panel{box-shadow:0 1px 3px #0002}
.card b{display:block;font-size:24px}
section.panel{background:#fff;border-radius:10px;padding:8px 20px 16px;margin:18px 0}
section.panel{overflow-x:auto}
h2{font-size:17px;margin:12px 0}
.grid{stroke:#e3e6eb}
.tick{font-size:11px;fill:#6b7280}
.axis,.legend{font-size:12px;fill:#374151}
.compaction{stroke-dasharray:4 3;stroke-width:1.5}
.edge{stroke:#b7bcc6;stroke-width:1.2}
.node{cursor:pointer}
.node:hover rect,.node:focus rect{opacity:.75}
table{border-collapse:collapse}
td,th{padding:4px 10px;text-align:left;border-bottom:1px solid #eef0f3}
pre{white-space:pre-wrap;background:#f6f7f9;padding:10px;border-radius:6px}
pre{max-height:320px;overflow:auto}
.meta{color:#4b5563}
.hint{color:#6b7280;font-size:13px}
"""

_JS = """
document.querySelectorAll('#summary-dag .node').forEach(function(g){
  function show(){document.querySelectorAll('.summary-detail').forEach(function(s){s.hidden=true});
    var d=document.getElementById('d-'+g.dataset.id); if(d){d.hidden=false;}}
  g.addEventListener('click',show);
  g.addEventListener('keydown',function(e){if(e.key==='Enter'){show();}});
});
"""


def render_html(data: ReportData) -> str:
    """The report page of ``data``."""
    s = data.session
    last = data.turns[-1] if data.turns else None
    saved = 0 if last is None or not last.history_tokens else (
        100 * (1 - last.context_tokens / last.history_tokens)
    )
    cards = [
        ("turns", f"{len(data.turns):,}"),
        ("messages", f"{data.message_count:,}"),
        ("history tokens", _fmt(last.history_tokens) if last else "0"),
        ("context tokens now", _fmt(data.context_tokens_now)),
        ("summaries", f"{len(data.nodes):,}"),
        ("context saved", f"{saved:.0f}%"),
    ]
    title = escape(s.title or s.id)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>mnesis report: {title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_CSS}</style></head>
<body><header><h1>mnesis session {escape(s.id)}</h1>
<p>{escape(s.model)} · agent {escape(s.agent)} · created {_when(s.created_at)}</p></header>
<main><div class="cards">{"".join(f'<div class="card">{k}<b>{v}</b></div>' for k, v in cards)}</div>
<section class="panel"><h2>History versus context, per turn</h2>{_token_chart(data)}
<p class="hint">The grey line is everything stored; the blue line is what the model saw.
Dashed lines mark the turns during which a compaction landed.</p></section>
<section class="panel"><h2>Summary DAG</h2>
<p class="hint">Leaves (green) summarise messages; condensed summaries (purple) merge summaries.
Outlined: in the context now. Hover for tokens, click to read a summary and its span.</p>
{_dag(data.nodes)}{_details(data.nodes)}</section>
<section class="panel"><h2>Compactions by level</h2>{_levels(data)}</section>
<section class="panel"><h2>Pruned tool outputs</h2>{_pruned(data)}</section>
</main><script>{_JS}</script></body></html>
"""
