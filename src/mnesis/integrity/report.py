"""What an integrity check reports: the kinds of broken invariant, each violation found,
and the report of a run."""

from __future__ import annotations

from collections import defaultdict
from enum import StrEnum

from pydantic import BaseModel, Field

__all__ = ["REPAIRABLE", "IntegrityReport", "Violation", "ViolationKind"]


class ViolationKind(StrEnum):
    """Every kind of broken invariant the checker detects."""

    SUMMARY_WITHOUT_SOURCE = "summary_without_source"
    DANGLING_CONTEXT_ITEM = "dangling_context_item"
    CONTEXT_OUT_OF_ORDER = "context_out_of_order"
    DUPLICATE_CONTEXT_ITEM = "duplicate_context_item"
    DOUBLE_COUNTED = "double_counted"
    LOST_FROM_VIEW = "lost_from_view"
    DAG_CYCLE = "dag_cycle"
    SEPARATED_TOOL_RESULT = "separated_tool_result"
    TOKEN_MISMATCH = "token_mismatch"
    MISSING_FILE_REFERENCE = "missing_file_reference"
    ENGINE_INTEGRITY = "engine_integrity"
    """The database engine's own check (SQLite ``quick_check``, PostgreSQL index
    validity, checksum counters and ``amcheck``) found damage."""
    UNDECODABLE_ROW = "undecodable_row"
    """A stored row no longer decodes (a damaged file)."""
    CHAIN_BROKEN = "chain_broken"
    """With ``deep``: a row no longer matches the hash its chain link recorded when it
    was written (its text, order or lineage changed), or a row is in no link."""
    USAGE_MISMATCH = "usage_mismatch"
    """With ``deep``: a session's kept usage sums (what a load adds newer messages to)
    differ from a fresh sum of its messages up to the same message."""


REPAIRABLE = frozenset(
    {
        ViolationKind.SUMMARY_WITHOUT_SOURCE,
        ViolationKind.DANGLING_CONTEXT_ITEM,
        ViolationKind.CONTEXT_OUT_OF_ORDER,
        ViolationKind.DUPLICATE_CONTEXT_ITEM,
        ViolationKind.DOUBLE_COUNTED,
        ViolationKind.LOST_FROM_VIEW,
        ViolationKind.SEPARATED_TOOL_RESULT,
        ViolationKind.TOKEN_MISMATCH,
        ViolationKind.USAGE_MISMATCH,
    }
)


class Violation(BaseModel):
    """One broken invariant."""

    kind: ViolationKind
    session_id: str
    object_id: str
    detail: str
    repairable: bool


class IntegrityReport(BaseModel):
    """The result of a check."""

    sessions_checked: int = 0
    messages_checked: int = 0
    violations: list[Violation] = Field(default_factory=list)
    elapsed_ms: float = 0.0
    engine_checks: list[str] = Field(default_factory=list)
    """The database engine's own checks that ran (with ``engine_check`` or ``deep``)."""
    engine_checks_unavailable: list[str] = Field(default_factory=list)
    """The engine's checks that could not run here, each with the reason: not passed,
    not failed (e.g. PostgreSQL without the ``amcheck`` extension)."""

    @property
    def ok(self) -> bool:
        """True when no violation was found."""
        return not self.violations

    @property
    def sessions_per_second(self) -> float:
        """Checking throughput."""
        return self.sessions_checked / (self.elapsed_ms / 1000) if self.elapsed_ms else 0.0

    def by_kind(self) -> dict[str, int]:
        """Violation counts per kind."""
        counts: dict[str, int] = defaultdict(int)
        for v in self.violations:
            counts[v.kind.value] += 1
        return dict(counts)
