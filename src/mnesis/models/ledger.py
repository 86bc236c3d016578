"""The loss ledger of a compaction: what one compaction took out of the context view.

A leaf summary takes messages out of the view, a condensed summary takes summaries out,
a prune pass replaces tool outputs by one-line tombstones. Each records (or, for a
prune, is read back as) a :class:`LossLedger`: the IDs that left, the token delta, and
the entities (file paths, commands, identifiers, numbers, URLs, decisions) that were in
what left and are not in what replaced it, each with the IDs where it can still be read
(``lcm_expand`` / ``lcm_grep`` reach them: nothing is deleted). A summary's ledger is
stored in its marker message (:attr:`~mnesis.models.parts.CompactionPart.ledger`),
written in the same transaction as the summary.

The marker stores it in a compact form (:func:`pack_ledger`): short keys, the dropped
entities grouped by kind as ``[value, *found_in]`` with each ID that the ledger's
removed IDs hold written as its position among them. :func:`unpack_ledger` reads that
form and the older one (the model's own fields) alike.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "ENTITY_KINDS",
    "LEDGER_FORM",
    "EntityKind",
    "LedgerEntity",
    "LossLedger",
    "pack_ledger",
    "unpack_ledger",
]

LEDGER_FORM = 2
"""The version of the compact stored form (``"v"``); the older form has no ``"v"``."""

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


def pack_ledger(ledger: LossLedger) -> dict[str, Any]:
    """``ledger`` in its compact stored form (see the module docstring): ``v`` form,
    ``k`` kind, ``m`` / ``s`` removed message / summary IDs, ``t`` tokens removed and
    added, ``n`` entities seen, kept and dropped in all, ``d`` the listed dropped
    entities by kind, each ``[value, *found_in]`` (a position into ``m + s``, or the ID
    itself when they do not hold it)."""
    removed = [*ledger.removed_message_ids, *ledger.removed_summary_ids]
    position = {mid: i for i, mid in reversed(list(enumerate(removed)))}
    dropped: dict[str, list[list[str | int]]] = {}
    for entity in ledger.dropped:
        where: list[str | int] = [position.get(i, i) for i in entity.found_in]
        dropped.setdefault(entity.kind, []).append([entity.value, *where])
    out: dict[str, Any] = {
        "v": LEDGER_FORM,
        "k": ledger.kind,
        "t": [ledger.tokens_removed, ledger.tokens_added],
        "n": [ledger.entities_seen, ledger.entities_kept, ledger.dropped_total],
    }
    if ledger.removed_message_ids:
        out["m"] = ledger.removed_message_ids
    if ledger.removed_summary_ids:
        out["s"] = ledger.removed_summary_ids
    if dropped:
        out["d"] = dropped
    return out


def unpack_ledger(data: Any) -> Any:
    """The model's fields of a ledger stored in the compact form; anything else (the
    older form, ``None``, a model) as it is, for the model to validate. A compact form
    that does not decode raises :class:`ValueError`."""
    if not isinstance(data, dict) or "v" not in data:
        return data
    if data["v"] != LEDGER_FORM:
        raise ValueError(f"unknown loss ledger form {data['v']!r}")
    try:
        messages = list(data.get("m", []))
        summaries = list(data.get("s", []))
        removed = [*messages, *summaries]
        kind = data["k"]
        tokens_removed, tokens_added = data["t"]
        seen, kept, total = data["n"]
        dropped = [
            {
                "kind": entity_kind,
                "value": entry[0],
                "found_in": [removed[i] if isinstance(i, int) else i for i in entry[1:]],
            }
            for entity_kind, entries in dict(data.get("d", {})).items()
            for entry in entries
        ]
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ValueError(f"a stored loss ledger does not decode: {exc!r}") from None
    return {
        "kind": kind,
        "removed_message_ids": messages,
        "removed_summary_ids": summaries,
        "tokens_removed": tokens_removed,
        "tokens_added": tokens_added,
        "entities_seen": seen,
        "entities_kept": kept,
        "dropped": dropped,
        "dropped_total": total,
    }
