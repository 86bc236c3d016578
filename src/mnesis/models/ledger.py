"""The loss ledger of a compaction: what one compaction took out of the context view.

A leaf summary takes messages out of the view, a condensed summary takes summaries out,
a prune pass replaces tool outputs by one-line tombstones. Each records (or, for a
prune, is read back as) a :class:`LossLedger`: the IDs that left, the token delta, and
the entities (file paths, commands, identifiers, numbers, URLs, decisions) that were in
what left and are not in what replaced it, each with the IDs where it can still be read
(``lcm_expand`` / ``lcm_grep`` reach them: nothing is deleted). A summary's ledger is
stored in its marker message (:attr:`~mnesis.models.parts.CompactionPart.ledger`),
written in the same transaction as the summary.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["ENTITY_KINDS", "EntityKind", "LedgerEntity", "LossLedger"]

EntityKind = Literal["path", "command", "identifier", "number", "url", "decision"]
ENTITY_KINDS: tuple[EntityKind, ...] = (
    "path",
    "command",
    "identifier",
    "number",
    "url",
    "decision",
)
"""The kinds of entity a ledger tracks, in the order it lists them."""


class LedgerEntity(BaseModel):
    """An entity that left the context view, and where it can still be read."""

    kind: EntityKind
    value: str
    found_in: list[str] = Field(default_factory=list)
    """Message IDs (or, for a condensed summary, the merged summary IDs) that hold it:
    the first few, in order."""


class LossLedger(BaseModel):
    """What one compaction took out of the context view (see the module docstring)."""

    kind: Literal["leaf", "condensed", "prune"]
    removed_message_ids: list[str] = Field(default_factory=list)
    """Messages taken out of the view (leaf), or whose tool outputs were pruned."""
    removed_summary_ids: list[str] = Field(default_factory=list)
    """Summaries merged into a condensed summary (out of the view)."""
    tokens_removed: int = Field(default=0, ge=0)
    """Tokens of the view items taken out (for a prune: of the outputs, tombstones aside)."""
    tokens_added: int = Field(default=0, ge=0)
    """Tokens of what replaced them in the view (the summary; 0 for a prune)."""
    entities_seen: int = Field(default=0, ge=0)
    """Distinct entities in what left the view."""
    entities_kept: int = Field(default=0, ge=0)
    """Of those, the ones the replacement still holds verbatim."""
    dropped: list[LedgerEntity] = Field(default_factory=list)
    """Entities no longer readable in the view (at most ``MAX_DROPPED``, by kind)."""
    dropped_total: int = Field(default=0, ge=0)
    """All dropped entities, listed or not."""

    @property
    def token_delta(self) -> int:
        """The change of the view's size (negative: the view shrank)."""
        return self.tokens_added - self.tokens_removed
