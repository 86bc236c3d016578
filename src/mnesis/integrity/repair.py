"""Repair plans: non-destructive, explicit, backed up, re-checked.

:func:`plan_repairs` turns a report into actions and writes nothing.
:func:`apply_repairs` takes a backup of the database first, applies the actions
(context rebuilt from lineage, orphan summaries re-linked to their span, token
estimates re-derived, kept usage sums dropped to be summed again) and re-runs the
checker. History rows are never touched: only the context view, lineage links that
were missing, token estimates and the kept usage sums.
"""

from __future__ import annotations

import heapq
import os
import time
from collections import defaultdict
from itertools import pairwise
from typing import Literal

from pydantic import BaseModel, Field

from mnesis.errors import InvalidArgumentError
from mnesis.integrity.checker import IntegrityChecker, descendants
from mnesis.integrity.report import REPAIRABLE, IntegrityReport, ViolationKind
from mnesis.models.render import render_summary_record
from mnesis.models.summary import SummaryRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = ["RepairAction", "RepairOutcome", "RepairPlan", "apply_repairs", "plan_repairs"]

_Action = Literal["rebuild_context", "relink_summary", "rederive_tokens", "reset_usage"]
_OWN_ACTIONS: dict[ViolationKind, tuple[_Action, str | None]] = {
    ViolationKind.SUMMARY_WITHOUT_SOURCE: (
        "relink_summary",
        "re-link the summary to the messages of its recorded span",
    ),
    ViolationKind.TOKEN_MISMATCH: ("rederive_tokens", None),  # the reason: the violation's detail
    ViolationKind.USAGE_MISMATCH: (
        "reset_usage",
        "drop the kept usage sums; the next load sums the messages again",
    ),
}
"""Kinds with an action of their own, one per violation."""
# Repaired by rebuilding the session's context view.
_CONTEXT_KINDS = REPAIRABLE - frozenset(_OWN_ACTIONS)


class RepairAction(BaseModel):
    """One step of a plan."""

    action: _Action
    session_id: str
    target_id: str
    reason: str


class RepairPlan(BaseModel):
    """What :func:`apply_repairs` would do."""

    actions: list[RepairAction] = Field(default_factory=list)
    unrepairable: list[str] = Field(default_factory=list)
    """Violations no automatic repair can fix (cycles, missing files)."""


class RepairOutcome(BaseModel):
    """What :func:`apply_repairs` did."""

    backup_path: str
    applied: int
    report_after: IntegrityReport


def plan_repairs(report: IntegrityReport) -> RepairPlan:
    """A non-destructive plan for the repairable violations of ``report``."""
    plan = RepairPlan()
    rebuild: dict[str, str] = {}
    for v in report.violations:
        if v.kind in _CONTEXT_KINDS:
            rebuild.setdefault(v.session_id, v.kind.value)
        elif v.kind in _OWN_ACTIONS:
            action, reason = _OWN_ACTIONS[v.kind]
            plan.actions.append(
                RepairAction(
                    action=action,
                    session_id=v.session_id,
                    target_id=v.object_id,
                    reason=reason or v.detail,
                )
            )
        else:
            plan.unrepairable.append(f"{v.kind.value}: {v.object_id} ({v.detail})")
    # Re-linking first, so the rebuilt context sees the restored lineage.
    for session_id, why in rebuild.items():
        plan.actions.append(
            RepairAction(
                action="rebuild_context",
                session_id=session_id,
                target_id=session_id,
                reason=f"rebuild the context view from lineage ({why})",
            )
        )
    return plan


async def apply_repairs(
    store: ImmutableStore,
    plan: RepairPlan,
    *,
    backup_path: str,
    estimator: TokenEstimator | None = None,
) -> RepairOutcome:
    """Back up the database to ``backup_path``, apply ``plan``, then re-check."""
    estimator = estimator or TokenEstimator()
    if not isinstance(backup_path, str) or not backup_path.strip():
        raise InvalidArgumentError("backup_path must name a new file")
    if os.path.lexists(backup_path):  # noqa: ASYNC240 - one stat, before any write
        raise InvalidArgumentError(
            f"backup path {backup_path} already exists; name a new file for the backup"
        )
    # Every target must exist before anything is written: a plan applies whole or not.
    for action in plan.actions:
        if action.action == "rederive_tokens":
            await store.get_message(action.target_id)
        elif action.action == "relink_summary":
            await store.get_summary(action.target_id)
        else:
            await store.get_session(action.session_id)
    await store.backup_to(backup_path)
    applied = 0
    sessions: set[str] = set()
    for action in plan.actions:
        sessions.add(action.session_id)
        if action.action == "relink_summary":
            await _relink(store, action.session_id, action.target_id)
        elif action.action == "reset_usage":
            await store.forget_usage(action.session_id)
        elif action.action == "rederive_tokens":
            message = await store.get_message(action.target_id)
            await store.update_message_tokens(
                message.id, token_estimate=estimator.estimate_message(message)
            )
        else:
            await _rebuild_context(store, action.session_id, estimator)
        applied += 1
    checker = IntegrityChecker(store, estimator)
    after = IntegrityReport()
    started = time.perf_counter()
    for session_id in sorted(sessions):
        one = await checker.run(session_id)
        after.violations.extend(one.violations)
        after.sessions_checked += one.sessions_checked
        after.messages_checked += one.messages_checked
    after.elapsed_ms = (time.perf_counter() - started) * 1000
    return RepairOutcome(backup_path=backup_path, applied=applied, report_after=after)


async def _relink(store: ImmutableStore, session_id: str, summary_id: str) -> None:
    summary = await store.get_summary(summary_id)
    if summary.span_start_message_id is None or summary.span_end_message_id is None:
        return
    snap = await store.integrity_snapshot(session_id)
    seqs = {m[0]: m[1] for m in snap.messages}
    start = seqs.get(summary.span_start_message_id)
    end = seqs.get(summary.span_end_message_id)
    if start is None or end is None:
        return
    ids = [m[0] for m in snap.messages if start <= m[1] <= end and not m[3]]
    await store.add_summary_sources(summary_id, ids)


async def _rebuild_context(
    store: ImmutableStore, session_id: str, estimator: TokenEstimator
) -> None:
    """Context = disjoint topmost summaries, each at its first message, plus uncovered messages."""
    snap = await store.integrity_snapshot(session_id)
    children: dict[str, list[str]] = defaultdict(list)
    merged: set[str] = set()
    for parent, child in snap.summary_parents:
        children[parent].append(child)
        merged.add(child)
    sources: dict[str, list[str]] = defaultdict(list)
    for edge_summary, edge_message in snap.summary_messages:
        sources[edge_summary].append(edge_message)
    created = {row[0]: index for index, row in enumerate(snap.summaries)}
    roots = [row[0] for row in snap.summaries if row[0] not in merged]
    records: dict[str, SummaryRecord] = {}
    roles = {m[0]: m[2] for m in snap.messages}
    unrolled: set[str] = set()
    while True:
        owner = _owners(roots, children, sources, created, unrolled)
        wanted = sorted(set(owner.values()) - records.keys())
        records.update((s.id, s) for s in await store.get_summaries(wanted))
        items: list[tuple[str, str, int]] = []
        emitted: set[str] = set()
        for message_id, _seq, _role, is_summary, tokens in snap.messages:
            if is_summary:
                continue
            owning = owner.get(message_id)
            if owning is None:
                items.append(("message", message_id, tokens))
            elif owning not in emitted and owning in records:
                emitted.add(owning)
                text = render_summary_record(records[owning])
                tokens = estimator.estimate(text) + MESSAGE_OVERHEAD_TOKENS
                items.append(("summary", owning, tokens))
        # A tool result must follow a raw message: show the summary before it raw.
        separating = {
            prev[1]
            for prev, item in pairwise(items)
            if item[0] == "message" and roles.get(item[1]) == "tool" and prev[0] == "summary"
        }
        if not separating:
            break
        unrolled |= separating
    await store.replace_context_items(session_id, items)


def _owners(
    roots: list[str],
    children: dict[str, list[str]],
    sources: dict[str, list[str]],
    created: dict[str, int],
    unrolled: set[str],
) -> dict[str, str]:
    """Message ID → the one summary that shows it: summaries with disjoint coverage.

    The summary covering the most messages wins an overlap (ties: the newer one); a
    summary that loses is replaced by the summaries it merged, so what it alone covered
    comes back raw. ``unrolled`` summaries show nothing: their messages come back raw.
    """
    covering = {s: descendants(s, children, sources)[1] for s in roots}
    heap = [(-len(covering[s]), -created.get(s, 0), s) for s in roots]
    heapq.heapify(heap)
    queued = set(roots)
    owner: dict[str, str] = {}
    while heap:
        _size, _newer, summary_id = heapq.heappop(heap)
        if summary_id in unrolled:
            continue
        under = covering[summary_id]
        if not under & owner.keys():
            owner.update(dict.fromkeys(under, summary_id))
            continue
        for child in children.get(summary_id, ()):
            if child not in queued:
                queued.add(child)
                covering[child] = descendants(child, children, sources)[1]
                heapq.heappush(heap, (-len(covering[child]), -created.get(child, 0), child))
    return owner
