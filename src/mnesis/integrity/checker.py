"""``IntegrityChecker``: proves that lineage is whole and the context view is sound.

The checker reads one :class:`~mnesis.store.base.IntegritySnapshot` per session
(any backend) and reports typed violations. It never writes; repairs are
planned by :func:`~mnesis.integrity.repair.plan_repairs` and applied only by an
explicit call that takes a backup first.
"""

from __future__ import annotations

import time
from collections import defaultdict

from mnesis.errors import InvalidArgumentError, StoreCorruptError
from mnesis.integrity.deep import (
    Finding,
    chain_findings,
    decode_findings,
    engine_damage,
    engine_findings,
)
from mnesis.integrity.report import REPAIRABLE, IntegrityReport, Violation, ViolationKind
from mnesis.models.ids import is_valid_id
from mnesis.store.base import IntegritySnapshot
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["IntegrityChecker", "IntegrityReport", "Violation", "ViolationKind"]


class IntegrityChecker:
    """Checks one session or every session of a store.

    ``check_tokens`` re-estimates each message (loads all parts: slower) and flags
    stored estimates that differ by more than ``token_tolerance`` (relative) plus
    ``token_slack`` (absolute). ``engine_check`` first runs the database engine's own
    check over the whole database (SQLite ``PRAGMA quick_check``; on PostgreSQL index
    validity, checksum counters and ``amcheck`` where installed); ``deep`` makes that the
    thorough variant (``integrity_check``; ``heapallindexed`` and ``verify_heapam``) and
    also decodes every stored row of each checked session. Damage found this way is
    reported as violations, never raised; what the engine could not check is listed in
    :attr:`IntegrityReport.engine_checks_unavailable`.
    """

    def __init__(
        self,
        store: ImmutableStore,
        estimator: TokenEstimator | None = None,
        *,
        check_tokens: bool = False,
        token_tolerance: float = 0.25,
        token_slack: int = 8,
        engine_check: bool = False,
        deep: bool = False,
    ) -> None:
        self.store = store
        self.estimator = estimator or TokenEstimator()
        self.check_tokens = check_tokens
        self.token_tolerance = token_tolerance
        self.token_slack = token_slack
        self.engine_check = engine_check
        self.deep = deep

    async def run(self, session_id: str | None = None) -> IntegrityReport:
        """Check ``session_id`` (or every session when None)."""
        started = time.perf_counter()
        if session_id is None:
            ids = await self.store.list_session_ids()
        else:
            if not is_valid_id(session_id, "sess"):
                raise InvalidArgumentError(f"{session_id!r} is not a session ID")
            await self.store.get_session(session_id)
            ids = [session_id]
        report = IntegrityReport()
        if self.engine_check or self.deep:
            engine = await engine_findings(self.store, full=self.deep)
            report.engine_checks = engine.ran
            report.engine_checks_unavailable = engine.unavailable
            findings = engine_damage(engine)
            report.violations.extend(_damage(ViolationKind.ENGINE_INTEGRITY, "", findings))
        for sid in ids:
            report.sessions_checked += 1
            try:
                snapshot = await self.store.integrity_snapshot(sid)
            except StoreCorruptError as exc:
                report.violations.append(
                    _violation(ViolationKind.UNDECODABLE_ROW, sid, sid, str(exc))
                )
                continue
            report.violations.extend(check_snapshot(snapshot))
            report.messages_checked += len(snapshot.messages)
            damaged: list[Finding] = []
            if self.deep:
                damaged = await decode_findings(self.store, sid, [m[0] for m in snapshot.messages])
                report.violations.extend(_damage(ViolationKind.UNDECODABLE_ROW, sid, damaged))
                chain, unavailable = await chain_findings(self.store, sid)
                report.violations.extend(_damage(ViolationKind.CHAIN_BROKEN, sid, chain))
                if unavailable and unavailable not in report.engine_checks_unavailable:
                    report.engine_checks_unavailable.append(unavailable)
                report.violations.extend(await self._check_usage(sid))
            if self.check_tokens and not damaged:
                report.violations.extend(await self._check_tokens(sid))
        report.elapsed_ms = (time.perf_counter() - started) * 1000
        return report

    async def _check_usage(self, session_id: str) -> list[Violation]:
        try:
            usage = await self.store.check_usage(session_id)
        except StoreCorruptError as exc:
            return [_violation(ViolationKind.UNDECODABLE_ROW, session_id, session_id, str(exc))]
        if usage is None or usage.matches:
            return []
        detail = (
            f"kept usage sums up to seq {usage.upto_seq} (input, output, cache read, "
            f"cache write, total) are {usage.kept}; the messages sum to {usage.fresh}"
        )
        return [_violation(ViolationKind.USAGE_MISMATCH, session_id, session_id, detail)]

    async def _check_tokens(self, session_id: str) -> list[Violation]:
        out: list[Violation] = []
        try:
            messages = await self.store.get_messages(session_id, include_summaries=False)
        except StoreCorruptError as exc:
            return [_violation(ViolationKind.UNDECODABLE_ROW, session_id, session_id, str(exc))]
        for message in messages:
            stored = message.message.token_estimate
            fresh = self.estimator.estimate_message(message)
            if abs(stored - fresh) > self.token_slack + self.token_tolerance * fresh:
                out.append(
                    _violation(
                        ViolationKind.TOKEN_MISMATCH,
                        session_id,
                        message.id,
                        f"stored estimate {stored} vs {fresh} re-estimated",
                    )
                )
        return out


def _violation(kind: ViolationKind, session_id: str, object_id: str, detail: str) -> Violation:
    return Violation(
        kind=kind,
        session_id=session_id,
        object_id=object_id,
        detail=detail,
        repairable=kind in REPAIRABLE,
    )


def _damage(kind: ViolationKind, session_id: str, findings: list[Finding]) -> list[Violation]:
    return [_violation(kind, session_id, obj, detail) for obj, detail in findings]


def descendants(
    summary_id: str, children: dict[str, list[str]], sources: dict[str, list[str]]
) -> tuple[set[str], set[str]]:
    """All summaries and messages under a summary (cycle-safe)."""
    summaries: set[str] = set()
    messages: set[str] = set()
    stack = [summary_id]
    while stack:
        current = stack.pop()
        for child in children.get(current, ()):
            if child not in summaries:
                summaries.add(child)
                stack.append(child)
        messages.update(sources.get(current, ()))
    return summaries, messages


def _find_cycles(children: dict[str, list[str]]) -> list[str]:
    white, grey, black = 0, 1, 2
    color: dict[str, int] = defaultdict(int)
    cyclic: list[str] = []
    for root in list(children):
        if color[root] != white:
            continue
        stack = [(root, iter(children.get(root, ())))]
        color[root] = grey
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = black
                stack.pop()
            elif color[nxt] == grey:
                cyclic.append(nxt)
            elif color[nxt] == white:
                color[nxt] = grey
                stack.append((nxt, iter(children.get(nxt, ()))))
    return sorted(set(cyclic))


def check_snapshot(snap: IntegritySnapshot) -> list[Violation]:
    """Every violation in one session's snapshot."""
    sid = snap.session_id
    out: list[Violation] = []
    children: dict[str, list[str]] = defaultdict(list)
    for parent, child in snap.summary_parents:
        children[parent].append(child)
    sources: dict[str, list[str]] = defaultdict(list)
    for edge_summary, edge_message in snap.summary_messages:
        sources[edge_summary].append(edge_message)
    seq = {m[0]: m[1] for m in snap.messages}
    roles = {m[0]: m[2] for m in snap.messages}

    for node_id, _kind, file_ids, _start, _end in snap.summaries:
        if not children.get(node_id) and not sources.get(node_id):
            out.append(
                _violation(
                    ViolationKind.SUMMARY_WITHOUT_SOURCE,
                    sid,
                    node_id,
                    "summary has no source messages and merges no summaries",
                )
            )
        # Only IDs mnesis issued (file_ + ULID) must resolve; other file_… strings
        # in conversation text are just text.
        missing_files = [
            f for f in file_ids if is_valid_id(f, "file") and f not in snap.known_file_ids
        ]
        if missing_files:
            out.append(
                _violation(
                    ViolationKind.MISSING_FILE_REFERENCE,
                    sid,
                    node_id,
                    f"{len(missing_files)} file IDs missing from file_references, "
                    f"e.g. {missing_files[0]}",
                )
            )
    for cyclic_id in _find_cycles(children):
        out.append(
            _violation(ViolationKind.DAG_CYCLE, sid, cyclic_id, "summary lineage has a cycle")
        )

    missing = set(snap.missing_context_targets)
    seen_items: set[str] = set()
    last_seq = 0
    in_context_messages: set[str] = set()
    covered: set[str] = set()
    context_summaries: list[str] = []
    summary_messages_seen: list[set[str]] = []
    summaries_under: dict[str, set[str]] = {}
    previous: tuple[str, str | None] | None = None
    for position, item_type, item_message, item_summary in snap.context:
        message_id, summary_id = item_message, item_summary
        item_id = message_id or summary_id or ""
        if position in missing:
            out.append(
                _violation(
                    ViolationKind.DANGLING_CONTEXT_ITEM,
                    sid,
                    item_id,
                    f"context position {position} points to a missing {item_type}",
                )
            )
            previous = (item_type, item_id)
            continue
        if item_id in seen_items:
            out.append(
                _violation(
                    ViolationKind.DUPLICATE_CONTEXT_ITEM,
                    sid,
                    item_id,
                    f"{item_id} appears twice in the context (position {position})",
                )
            )
        seen_items.add(item_id)
        if item_type == "message" and message_id is not None:
            in_context_messages.add(message_id)
            first = seq.get(message_id, 0)
            if roles.get(message_id) == "tool" and (previous is None or previous[0] != "message"):
                out.append(
                    _violation(
                        ViolationKind.SEPARATED_TOOL_RESULT,
                        sid,
                        message_id,
                        "tool result is not preceded by the message that called it",
                    )
                )
        else:
            assert summary_id is not None
            context_summaries.append(summary_id)
            under_summaries, under_messages = descendants(summary_id, children, sources)
            covered |= under_messages
            first = min((seq.get(m, 0) for m in under_messages), default=last_seq)
            summary_messages_seen.append(under_messages)
            summaries_under[summary_id] = under_summaries
        if first < last_seq:
            out.append(
                _violation(
                    ViolationKind.CONTEXT_OUT_OF_ORDER,
                    sid,
                    item_id,
                    f"position {position} starts before the item before it",
                )
            )
        last_seq = max(last_seq, first)
        previous = (item_type, item_id)

    in_context = set(context_summaries)
    for summary_id in context_summaries:
        for other in sorted(summaries_under.get(summary_id, set()) & in_context):
            out.append(
                _violation(
                    ViolationKind.DOUBLE_COUNTED,
                    sid,
                    summary_id,
                    f"summary {summary_id} is in context with its own source {other}",
                )
            )
    nested = {o for s_id in context_summaries for o in summaries_under.get(s_id, set())}
    counts: dict[str, int] = defaultdict(int)
    for summary_id, under in zip(context_summaries, summary_messages_seen, strict=True):
        if summary_id not in nested:
            for m in under:
                counts[m] += 1
    for stored_id in sorted(m for m, n in counts.items() if n > 1):
        out.append(
            _violation(
                ViolationKind.DOUBLE_COUNTED,
                sid,
                stored_id,
                "message is under two summaries in context",
            )
        )
    for stored_id in in_context_messages & covered:
        out.append(
            _violation(
                ViolationKind.DOUBLE_COUNTED,
                sid,
                stored_id,
                "message is in context both raw and under a summary",
            )
        )
    for stored_id, _seq, _role, is_summary, _tokens in snap.messages:
        if is_summary:
            continue
        if stored_id not in in_context_messages and stored_id not in covered:
            out.append(
                _violation(
                    ViolationKind.LOST_FROM_VIEW,
                    sid,
                    stored_id,
                    "message is neither in context nor under a summary in context",
                )
            )
    return out
