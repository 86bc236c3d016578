"""Compaction tests, and the lineage invariants they all check.

:func:`lineage_problems` reads a session's context view and summary DAG back
from the store and lists every broken invariant (empty list: all hold):

* ``context_items`` positions are unique and strictly increasing;
* every summary of the session links to at least one source
  (``summary_messages`` or ``summary_parents``);
* walking the context in position order and expanding each summary to its
  source messages through lineage yields every conversation message exactly
  once, in conversation order: nothing lost, nothing both raw and summarised,
  nothing under two summaries in context.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, TypeVar

from benchmarks.crash_trials import campaign_config as small_window_config

from mnesis import MnesisSession, StorePool
from mnesis.llm import FakeLLM, LLMClient
from mnesis.store.base import ContextItem
from mnesis.store.dag import SummaryDAGStore
from mnesis.store.immutable import ImmutableStore
from mnesis.testing import SESSIONS, ReplayResult, generate, replay
from tests.backends import fetch

T = TypeVar("T")


async def seed_session(
    db_path: str,
    pool: StorePool,
    fixture: str,
    turns: int,
    *,
    llm: LLMClient | None = None,
) -> tuple[str, ReplayResult]:
    """Store the first ``turns`` turns of a fixture with automatic compaction off.

    The session is closed again; reopen it with :meth:`MnesisSession.load` and the
    configuration under test. Returns its ID and what was replayed.
    """
    session = await MnesisSession.create(
        model="fake/model",
        db_path=db_path,
        pool=pool,
        llm=llm or FakeLLM(),
        config=small_window_config(auto=False),
    )
    replayed = await replay(session, generate(SESSIONS[fixture]), stop=turns)
    await session.close()
    return session.id, replayed


def run_in_fresh_loop(factory: Callable[[], Awaitable[T]]) -> T:
    """Run ``factory()`` to completion on a new event loop in a helper thread.

    Lets synchronous (e.g. module-scoped) fixtures do async work without touching
    the loops pytest-asyncio manages.
    """
    box: dict[str, Any] = {}

    def _target() -> None:
        try:
            box["value"] = asyncio.run(factory())  # type: ignore[arg-type]
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=_target, name="fresh-loop")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


@dataclass(slots=True)
class SummaryRow:
    """One ``summaries`` row with its lineage."""

    id: str
    kind: str
    level: int
    content: str
    token_count: int
    file_ids: list[str]
    message_ids: list[str]
    """``summary_messages`` rows (leaf sources), in order."""
    parent_ids: list[str]
    """``summary_parents`` rows (condensed children), in order."""


@dataclass(slots=True)
class LineageReport:
    """The context view expanded through lineage."""

    items: list[ContextItem] = field(default_factory=list)
    conversation_ids: list[str] = field(default_factory=list)
    expanded_ids: list[str] = field(default_factory=list)
    """Conversation message IDs reached from the context, in position order."""
    sources: dict[str, list[str]] = field(default_factory=dict)
    """Summary ID (in context) -> the message IDs it covers."""
    summaries: list[SummaryRow] = field(default_factory=list)
    """Every summary of the session, in context or superseded."""
    problems: list[str] = field(default_factory=list)

    @property
    def raw_ids(self) -> set[str]:
        """Message IDs present as raw message items."""
        return {i.item_id for i in self.items if i.item_type == "message"}

    def holder_of(self, message_id: str) -> str | None:
        """The context item (message or summary ID) through which a message is reached."""
        if message_id in self.raw_ids:
            return message_id
        for summary_id, ids in self.sources.items():
            if message_id in ids:
                return summary_id
        return None


def summary_rows(db_path: str, session_id: str) -> list[SummaryRow]:
    """Every summary of a session (in insertion order) with its lineage rows, read with
    plain SQL on either backend."""
    order = "key" if db_path.startswith(("postgresql://", "postgres://")) else "rowid"
    rows = fetch(
        db_path,
        "SELECT id, kind, level, content, token_count, file_ids FROM summaries "
        f"WHERE session_id = ? ORDER BY {order}",
        session_id,
    )
    sources: dict[str, list[str]] = {}
    for summary_id, message_id in fetch(
        db_path,
        "SELECT l.summary_id, l.message_id FROM summary_messages l "
        "JOIN summaries s ON s.id = l.summary_id WHERE s.session_id = ? "
        "ORDER BY l.summary_id, l.ordinal",
        session_id,
    ):
        sources.setdefault(summary_id, []).append(message_id)
    parents: dict[str, list[str]] = {}
    for summary_id, parent_id in fetch(
        db_path,
        "SELECT l.summary_id, l.parent_summary_id FROM summary_parents l "
        "JOIN summaries s ON s.id = l.summary_id WHERE s.session_id = ? "
        "ORDER BY l.summary_id, l.ordinal",
        session_id,
    ):
        parents.setdefault(summary_id, []).append(parent_id)
    return [
        SummaryRow(
            id=summary_id,
            kind=str(kind),
            level=level,
            content=content,
            token_count=tokens,
            file_ids=json.loads(file_ids) if isinstance(file_ids, str) else list(file_ids),
            message_ids=sources.get(summary_id, []),
            parent_ids=parents.get(summary_id, []),
        )
        for summary_id, kind, level, content, tokens, file_ids in rows
    ]


async def lineage_report(store: ImmutableStore, db_path: str, session_id: str) -> LineageReport:
    """Expand the context of ``session_id`` through lineage and check the invariants."""
    report = LineageReport()
    problems = report.problems
    items = await store.get_context_items(session_id)
    report.items = items
    positions = [i.position for i in items]
    if any(b <= a for a, b in pairwise(positions)):
        problems.append(f"context positions not strictly increasing: {positions}")
    conversation = await store.get_messages(session_id, include_summaries=False)
    report.conversation_ids = [m.id for m in conversation]
    dag = SummaryDAGStore(store)
    expanded: list[str] = []
    for item in items:
        if item.item_type == "message":
            expanded.append(item.item_id)
            continue
        ids = await dag.get_source_message_ids(item.item_id)
        if not ids:
            problems.append(f"summary {item.item_id} in context has no source messages")
        report.sources[item.item_id] = ids
        expanded.extend(ids)
    report.expanded_ids = expanded
    counts = Counter(expanded)
    seen = set(counts)
    duplicates = {mid for mid, n in counts.items() if n > 1}
    if duplicates:
        raw = report.raw_ids
        both = sorted(d for d in duplicates if d in raw)
        problems.append(
            f"{len(duplicates)} messages reached twice from the context "
            f"({len(both)} both raw and summarised), e.g. {sorted(duplicates)[:3]}"
        )
    missing = [mid for mid in report.conversation_ids if mid not in seen]
    if missing:
        problems.append(f"{len(missing)} messages unreachable from the context, e.g. {missing[:3]}")
    conversation_set = set(report.conversation_ids)
    unknown = [mid for mid in seen if mid not in conversation_set]
    if unknown:
        problems.append(f"context reaches {len(unknown)} non-conversation messages: {unknown[:3]}")
    if not duplicates and not missing and not unknown and expanded != report.conversation_ids:
        problems.append("the context, expanded through lineage, is out of conversation order")
    report.summaries = summary_rows(db_path, session_id)
    orphans = [s.id for s in report.summaries if not s.message_ids and not s.parent_ids]
    if orphans:
        problems.append(f"summaries without any source: {orphans}")
    return report
