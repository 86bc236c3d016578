"""The demo's final report: what is stored, the next context, the compactions, a summary.

Collected through the public session and store interfaces after the last turn, then
rendered as rich tables.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from mnesis.cli._common import format_bytes, format_tokens
from mnesis.cli.demo._live import LiveStats
from mnesis.context.builder import BuiltContext
from mnesis.models.message import MessageWithParts
from mnesis.models.parts import CompactionPart, MessagePart, ToolPart
from mnesis.session import MnesisSession
from mnesis.store.base import SummaryRecord
from mnesis.store.session_stats import SessionStats
from mnesis.testing.conversations import PlantedFact
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = [
    "DemoReport",
    "collect_report",
    "full_history_tokens",
    "render_report",
    "timing_line",
]

_SUMMARY_LINES = 12
_SUMMARY_CHARS = 1_200


def _plural(count: int, singular: str, plural: str) -> str:
    return f"{count:,} {singular if count == 1 else plural}"


def _normalise(text: str) -> str:
    return " ".join(text.split()).lower()


@dataclass(frozen=True)
class DemoReport:
    """Everything the final tables show, read once after the last turn."""

    session_id: str
    db_path: str
    turns: int
    seed: int
    live: LiveStats
    context: BuiltContext
    stats: SessionStats
    """The store's counts of the session (messages, markers, parts, tool calls, pruned)."""
    tool_errors: int
    history_tokens: int
    """The estimate of every stored message (what the context would be without compaction)."""
    sessions_in_db: int
    instructions_visible: list[str]
    """Labels of the user's instructions still readable in the next context."""
    instructions_lost: list[str]
    """Labels of instructions given but no longer in the next context (still stored)."""
    summaries: list[SummaryRecord]
    elapsed_s: float = 0.0
    """Wall time of the whole run, set by the runner once the session is closed."""
    db_bytes: int = 0
    """Bytes the database's data occupies, measured by the runner once the session is closed."""

    @property
    def assistant_messages(self) -> int:
        """Conversation messages that are not the user's (the model's replies)."""
        return self.stats.messages - self.stats.turns

    @property
    def context_summaries(self) -> int:
        """Summaries in the next context."""
        return sum(1 for item in self.context.item_ids if item.startswith("sum_"))

    @property
    def context_messages(self) -> int:
        """Raw messages in the next context."""
        return len(self.context.item_ids) - self.context_summaries


def _untombstoned(part: MessagePart) -> MessagePart:
    if isinstance(part, ToolPart) and part.status.compacted_at is not None:
        return part.model_copy(
            update={"status": part.status.model_copy(update={"compacted_at": None})}
        )
    return part


def full_history_tokens(messages: list[MessageWithParts], estimator: TokenEstimator) -> int:
    """Tokens of every conversation message rendered in full, pruned tool outputs included.

    A message's stored ``token_estimate`` shrinks when its tool outputs are tombstoned,
    so the history is re-estimated from the parts, which the store keeps unchanged.
    """
    return sum(
        MESSAGE_OVERHEAD_TOKENS + sum(estimator.estimate_part(_untombstoned(p)) for p in m.parts)
        for m in messages
        if not m.message.is_summary
    )


async def collect_report(
    session: MnesisSession,
    live: LiveStats,
    instructions: Sequence[PlantedFact],
    *,
    turns: int,
    seed: int,
) -> DemoReport:
    """Read the stored session and its next context (before the session is closed).

    ``instructions`` are the user's instructions the session was given (its planted facts).
    """
    messages = await session.messages()
    context = await session.build_context()
    stats = (await session.store.session_stats([session.id]))[session.id]
    summary_ids: list[str] = []
    tool_errors = 0
    for message in messages:
        if message.message.is_summary:
            summary_ids += [p.summary_id for p in message.parts if isinstance(p, CompactionPart)]
            continue
        tool_errors += sum(tool.status.state == "error" for tool in message.tool_parts)
    history = full_history_tokens(messages, TokenEstimator(session.model_info.encoding))
    visible, lost = _instructions_in_view(context, instructions)
    return DemoReport(
        session_id=session.id,
        db_path=session.config.store.db_path,
        turns=turns,
        seed=seed,
        live=live,
        context=context,
        stats=stats,
        tool_errors=tool_errors,
        history_tokens=history,
        sessions_in_db=len(await session.store.list_sessions(limit=1_000_000)),
        instructions_visible=visible,
        instructions_lost=lost,
        summaries=await session.store.get_summaries(summary_ids),
    )


def _instructions_in_view(
    built: BuiltContext, instructions: Sequence[PlantedFact]
) -> tuple[list[str], list[str]]:
    """The labels of the user's instructions the next context still shows word for word,
    and of those it no longer shows."""
    text = _normalise(" ".join([built.system_prompt, *(str(m.content) for m in built.messages)]))
    visible: list[str] = []
    lost: list[str] = []
    for fact in instructions:
        (visible if _normalise(fact.needle) in text else lost).append(fact.key)
    return visible, lost


def _table(title: str) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold", show_header=False)
    table.add_column("what", style="dim", no_wrap=True)
    table.add_column("value", overflow="fold")
    return table


def _stored_table(r: DemoReport) -> Table:
    kinds = Counter(s.kind for s in r.summaries)
    table = _table("Stored (append-only: nothing is ever deleted)")
    table.add_row("session", f"{r.session_id} ({r.sessions_in_db} in this database)")
    table.add_row("database", f"{escape(r.db_path)} · {format_bytes(r.db_bytes)}")
    table.add_row(
        "messages",
        f"{r.stats.messages:,} ({r.stats.turns:,} user, "
        f"{r.assistant_messages:,} assistant) + "
        + _plural(r.stats.compactions, "summary marker", "summary markers"),
    )
    table.add_row("parts", f"{r.stats.parts:,}")
    table.add_row(
        "tool calls",
        f"{r.stats.tool_calls:,} ({_plural(r.tool_errors, 'error', 'errors')}; "
        f"{_plural(r.stats.pruned_tool_outputs, 'output', 'outputs')} pruned from the "
        "context, still stored)",
    )
    table.add_row(
        "summaries",
        f"{len(r.summaries)} ({kinds.get('leaf', 0)} leaf, {kinds.get('condensed', 0)} condensed)",
    )
    return table


def _context_table(r: DemoReport) -> Table:
    c = r.context
    b = c.budget
    share = c.token_estimate / b.usable if b.usable else 0.0
    ratio = r.history_tokens / c.token_estimate if c.token_estimate else 0.0
    table = _table("Next context (what the model receives on the next turn)")
    table.add_row(
        "items",
        f"{_plural(r.context_messages, 'message', 'messages')} + "
        f"{_plural(r.context_summaries, 'summary', 'summaries')}",
    )
    table.add_row(
        "tokens",
        f"system {format_tokens(c.system_prompt_tokens)} · summaries "
        f"{format_tokens(c.summary_token_count)} · messages "
        f"{format_tokens(c.raw_message_tokens)} (tool I/O {format_tokens(c.tool_output_tokens)})",
    )
    table.add_row(
        "estimate vs budget",
        f"[bold]{format_tokens(c.token_estimate)}[/] of {format_tokens(b.usable)} usable "
        f"({share:.0%}) · window {format_tokens(b.context_limit)} − output "
        f"{format_tokens(b.reserved_output_tokens)} − compaction buffer "
        f"{format_tokens(b.compaction_buffer)}",
    )
    table.add_row(
        "full history",
        f"{format_tokens(r.history_tokens)} tokens in {r.stats.messages:,} messages",
    )
    table.add_row("compression", f"[bold]{ratio:.1f}×[/] (full history / next context)")
    given = len(r.instructions_visible) + len(r.instructions_lost)
    if given:
        lost = (
            " · no longer in view: " + ", ".join(r.instructions_lost) if r.instructions_lost else ""
        )
        table.add_row(
            "user instructions",
            f"{len(r.instructions_visible)} of {given} still readable in the next context"
            f"{lost} (all {given} kept in the store)",
        )
    return table


def _compaction_table(r: DemoReport) -> Table:
    live = r.live
    runs = [result for _, result in live.runs]
    levels = Counter(s.level for s in r.summaries)
    depth = max((s.depth for s in r.summaries), default=0)
    table = _table("Compactions")
    table.add_row(
        "runs",
        f"{_plural(live.compactions, 'compaction', 'compactions')} over "
        f"{_plural(r.turns, 'turn', 'turns')}"
        + (f" · {live.failures} failed" if live.failures else ""),
    )
    table.add_row(
        "levels",
        ", ".join(f"level {lvl}: {n}" for lvl, n in sorted(levels.items())) or "-",
    )
    table.add_row(
        "summary DAG",
        f"{sum(result.compacted_message_count for result in runs):,} messages summarised · "
        f"{_plural(sum(res.condensed_count for res in runs), 'condensation', 'condensations')}"
        f" · max depth {depth}",
    )
    table.add_row(
        "pruning",
        f"{_plural(live.prunes, 'pass', 'passes')} · "
        f"{_plural(live.pruned_outputs, 'tool output', 'tool outputs')} tombstoned · "
        f"{format_tokens(live.pruned_tokens)} tokens reclaimed",
    )
    return table


def _newest_summary(r: DemoReport) -> Panel | None:
    if not r.summaries:
        return None
    newest = max(r.summaries, key=lambda s: (s.created_at, s.id))
    lines = newest.content.splitlines()
    body = "\n".join(lines[:_SUMMARY_LINES])[:_SUMMARY_CHARS]
    shown = body.count("\n") + 1
    if len(lines) > shown or len(body) == _SUMMARY_CHARS:
        body += f"\n… ({len(newest.content) - len(body):,} more characters)"
    return Panel(
        Text(body),
        title=f"Newest summary {newest.id}",
        subtitle=f"{newest.kind}, depth {newest.depth}, level {newest.level} · covers "
        f"{newest.source_message_count} messages · {newest.token_count} tokens",
        title_align="left",
        subtitle_align="left",
    )


def timing_line(report: DemoReport) -> str:
    """How long the run took: the one line of the report that differs between runs."""
    compacting = sum(result.elapsed_ms for _, result in report.live.runs) / 1000
    return f"time: {compacting:.2f}s compacting · {report.elapsed_s:.1f}s in total"


def render_report(console: Console, report: DemoReport) -> None:
    """Print the final tables of the demo (the same for the same seed, byte for byte)."""
    parts: list[Table | Panel] = [
        _stored_table(report),
        _context_table(report),
        _compaction_table(report),
    ]
    panel = _newest_summary(report)
    if panel is not None:
        parts.append(panel)
    console.print()
    console.print(Group(*parts))
