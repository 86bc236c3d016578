"""The report's inline SVG: history versus context per turn, and the summary DAG.

Both stay bounded whatever the session's size: the chart draws at most
:data:`MAX_CHART_POINTS` points (turns grouped into buckets: the last history value and
the peak context of each), the DAG at most :data:`MAX_DAG_NODES` summaries (the newest).
"""

from __future__ import annotations

from dataclasses import replace
from html import escape

from mnesis.report.data import DagNode, ReportData
from mnesis.report.timeline import TurnPoint

__all__ = [
    "MAX_CHART_POINTS",
    "MAX_DAG_NODES",
    "dag_svg",
    "drawn_nodes",
    "fmt_tokens",
    "needs_zoom",
    "token_chart",
]

MAX_CHART_POINTS = 1_000
MAX_DAG_NODES = 1_500
W, H = 960, 320
_LEFT, _RIGHT, _TOP, _BOTTOM = 76, 24, 44, 48
HISTORY, CONTEXT, MARK, BACKLOG = "#8a94a6", "#2f6fde", "#e0703a", "#c9ced8"
LEAF, CONDENSED = "#4caf7d", "#7a5cd6"


def fmt_tokens(n: float) -> str:
    """A token count for an axis or a card: ``950``, ``12.3k``, ``4.56M``, ``1.20B``."""
    if n >= 1_000_000_000:
        return f"{n / 1_000_000_000:.2f}B"
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2f}M"
    return f"{n / 1000:.1f}k" if n >= 10_000 else f"{int(n):,}"


def empty_svg(svg_id: str, message: str) -> str:
    """A one-line placeholder where a chart would be."""
    return (
        f'<svg id="{svg_id}" role="img" width="{W}" height="60">'
        f'<text x="10" y="30">{escape(message)}</text></svg>'
    )


def _buckets(turns: list[TurnPoint]) -> list[TurnPoint]:
    if len(turns) <= MAX_CHART_POINTS:
        return turns
    size = -(-len(turns) // MAX_CHART_POINTS)
    out = []
    for start in range(0, len(turns), size):
        group = turns[start : start + size]
        seen = [t for t in group if not t.backlog] or group
        out.append(
            replace(
                group[-1],
                context_tokens=max(t.context_tokens for t in seen),
                compacted=any(t.compacted for t in group),
                backlog=all(t.backlog for t in group),
            )
        )
    return out


def needs_zoom(data: ReportData) -> bool:
    """Whether the context is too small next to the history to read on one axis (the
    page then adds a chart of the context alone)."""
    seen = [t.context_tokens for t in data.turns if not t.backlog]
    return bool(seen) and 4 * max(max(seen), data.window) < data.turns[-1].history_tokens


def token_chart(data: ReportData, *, context_only: bool = False) -> str:
    """History and context tokens per turn, compactions marked, the window drawn, and a
    leading backlog (history over the window, compacted afterwards) shaded;
    ``context_only``: the context and the window alone, on their own axis."""
    turns = _buckets(data.turns)
    svg_id = "context-chart" if context_only else "token-chart"
    if not turns:
        return empty_svg(svg_id, "No turns yet.")
    if context_only:
        seen = [t.context_tokens for t in turns if not t.backlog]
        top = max(max(seen, default=0), data.window, 1) * 1.05
    else:
        top = max(max(t.history_tokens for t in turns), 1) * 1.05
    span = max(len(turns) - 1, 1)

    def x(i: float) -> float:
        return _LEFT + (W - _LEFT - _RIGHT) * i / span

    def y(v: float) -> float:
        return H - _BOTTOM - (H - _TOP - _BOTTOM) * v / top

    label = "context tokens per turn" if context_only else "history and context tokens per turn"
    parts = [
        f'<svg id="{svg_id}" role="img" aria-label="{label}" '
        f'viewBox="0 0 {W} {H}" width="{W}" height="{H}">'
    ]
    backlog = sum(1 for t in turns if t.backlog)
    if backlog:
        right = x(min(backlog, len(turns) - 1))
        parts.append(
            f'<rect class="backlog" x="{_LEFT}" y="{_TOP}" width="{max(right - _LEFT, 2):.1f}" '
            f'height="{H - _TOP - _BOTTOM}" fill="{BACKLOG}" opacity=".45"><title>'
            f"{data.backlog_turns:,} turns stored over the window before any compaction "
            "(an import compacted afterwards): no model saw them as one context</title></rect>"
            f'<text x="{_LEFT + 8}" y="{(H + _TOP - _BOTTOM) / 2}" class="axis">imported backlog: '
            "never one context, compacted afterwards</text>"
        )
    for k in range(5):
        v = top * k / 4
        parts.append(
            f'<line x1="{_LEFT}" x2="{W - _RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="grid"/>'
            f'<text x="{_LEFT - 8}" y="{y(v) + 4:.1f}" class="tick" text-anchor="end">'
            f"{fmt_tokens(v)}</text>"
        )
    if 0 < data.window < top:
        parts.append(
            f'<line x1="{_LEFT}" x2="{W - _RIGHT}" y1="{y(data.window):.1f}" '
            f'y2="{y(data.window):.1f}" class="window"/><text x="{W - _RIGHT}" '
            f'y="{y(data.window) - 4:.1f}" class="tick" text-anchor="end">model window '
            f"{fmt_tokens(data.window)}</text>"
        )
    step = max(1, len(turns) // 10)
    for i in range(0, len(turns), step):
        parts.append(
            f'<text x="{x(i):.1f}" y="{H - _BOTTOM + 16}" class="tick" text-anchor="middle">'
            f"{turns[i].turn:,}</text>"
        )
    parts.append(
        f'<text x="{(W + _LEFT) / 2}" y="{H - 10}" class="axis" text-anchor="middle">turn</text>'
        f'<text transform="translate(14 {(H + _TOP - _BOTTOM) / 2}) rotate(-90)" class="axis" '
        'text-anchor="middle">tokens</text>'
    )
    for i, t in enumerate(turns):
        if t.compacted:
            parts.append(
                f'<line class="compaction" x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{_TOP}" '
                f'y2="{H - _BOTTOM}" stroke="{MARK}"><title>compaction during turn {t.turn:,}'
                f"</title></line>"
            )
    context = [(i, t.context_tokens) for i, t in enumerate(turns) if not t.backlog]
    lines = [("context", CONTEXT, context)]
    if not context_only:
        lines.insert(0, ("history", HISTORY, list(enumerate(t.history_tokens for t in turns))))
    for name, color, values in lines:
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in values)
        line_id = f"{name}-line" + ("-zoomed" if context_only else "")
        parts.append(
            f'<polyline id="{line_id}" points="{points}" fill="none" stroke="{color}" '
            f'stroke-width="2.5"/>'
        )
    if len(context) <= 400:
        for i, v in context:
            t = turns[i]
            parts.append(
                f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3" fill="{CONTEXT}">'
                f"<title>turn {t.turn}: history {t.history_tokens:,} tokens, context "
                f"{t.context_tokens:,} tokens</title></circle>"
            )
    legend = [
        ("history (everything stored)", HISTORY),
        ("context (what the model sees)", CONTEXT),
        ("compaction", MARK),
    ][1 if context_only else 0 :]
    for k, (label, color) in enumerate(legend):
        lx = _LEFT + k * 230
        parts.append(
            f'<rect x="{lx}" y="12" width="14" height="14" fill="{color}" rx="3"/>'
            f'<text x="{lx + 20}" y="24" class="legend">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def drawn_nodes(nodes: list[DagNode]) -> list[DagNode]:
    """The summaries the DAG draws: all, or the newest :data:`MAX_DAG_NODES`."""
    return nodes[-MAX_DAG_NODES:]


def dag_svg(nodes: list[DagNode]) -> str:
    """The summary DAG, one row per depth; click a node to read it."""
    if not nodes:
        return empty_svg("summary-dag", "No summaries yet: nothing was compacted.")
    depths = sorted({n.depth for n in nodes})
    rows = {d: [n for n in nodes if n.depth == d] for d in depths}
    widest = max(len(r) for r in rows.values())
    box_w, gap, row_h, pad = 26, 8, 90, 48
    width = max(W, 2 * pad + 40 + widest * (box_w + gap))
    height = 2 * pad + (len(depths) - 1) * row_h + 30
    pos: dict[str, tuple[float, float]] = {}
    for level, d in enumerate(depths):
        row = rows[d]
        room = (width - 2 * pad - 40) / max(len(row), 1)
        for i, node in enumerate(row):
            pos[node.id] = (pad + 40 + room * (i + 0.5), height - pad - level * row_h)
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
            f'<text x="8" y="{height - pad - level * row_h + 4:.1f}" class="tick">depth {d}</text>'
        )
    for node in nodes:
        cx, cy = pos[node.id]
        color = LEAF if node.kind == "leaf" else CONDENSED
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
