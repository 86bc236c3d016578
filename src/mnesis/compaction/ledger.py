"""The loss ledger (issue 33, item 8): the entities a compaction takes out of the view.

Entities are read off the text deterministically and in linear time: the text is split
on whitespace (at most :data:`MAX_SCAN_CHARS` of each piece, tokens longer than
:data:`MAX_TOKEN_CHARS` skipped) and each token is classified by anchored patterns
without nested repetition (URL, path, number, identifier); commands come from tool
inputs (``command`` / ``cmd``) and ``$ `` lines, decisions from sentences that state
one. An entity the replacement (the summary) does not hold verbatim is *dropped*; the
ledger lists it with the first IDs that hold it (:attr:`LedgerEntity.found_in`), so one
``lcm_grep`` for it or one ``lcm_expand`` of those IDs reads it again.

The builders are plain functions over a few hundred kilobytes at most; the engine runs
them on a worker thread (:func:`asyncio.to_thread`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from mnesis.compaction.recognise import is_path
from mnesis.models.ledger import ENTITY_KINDS, EntityKind, LedgerEntity, LossLedger
from mnesis.models.message import MessageWithParts
from mnesis.models.parts import FileRefPart, TextPart, ToolPart
from mnesis.models.summary import SummaryRecord

__all__ = [
    "MAX_FOUND_IN",
    "MAX_PER_KIND",
    "MAX_SCAN_CHARS",
    "EntityIndex",
    "condensed_ledger",
    "extract_entities",
    "holds",
    "leaf_ledger",
    "message_texts",
    "prune_ledger",
    "tool_texts",
]

MAX_SCAN_CHARS = 100_000
"""Characters of one text (a part, a summary) the extractor reads."""
MAX_TOKEN_CHARS = 300
"""Longer whitespace-separated tokens are not entities (blobs, minified code)."""
MAX_ENTITIES = 20_000
"""Distinct entities one ledger tracks (the rest are counted, not listed)."""
MAX_PER_KIND = 100
"""Dropped entities listed per kind (``LossLedger.dropped_total`` counts all)."""
MAX_FOUND_IN = 2
"""IDs listed per dropped entity."""
MAX_DECISION_CHARS = 200

_STRIP = "\"'`()[]{}<>,;:!?*"
_URL_PREFIXES = (
    "http://",
    "https://",
    "ws://",
    "wss://",
    "ftp://",
    "postgres://",
    "postgresql://",
    "redis://",
    "s3://",
    "file://",
)
_NUMBER_RE = re.compile(r"[-+]?\d[\d_,]*(?:\.\d+)?(?:%|ms|s|kb|mb|gb|tb|k|x)?", re.IGNORECASE)
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.:]{1,2}[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?")
_CAMEL_RE = re.compile(r"[a-z0-9][A-Z]")
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")
_DECISION_RE = re.compile(
    r"\b(?:decided|decision|we will|we'll|going with|chose|switch(?:ed)? to|settled on|"
    r"agreed|instead of)\b",
    re.IGNORECASE,
)
_COMMAND_KEYS = ("command", "cmd")

Key = tuple[EntityKind, str]


@lru_cache(maxsize=65_536)
def _classify(token: str) -> EntityKind | None:
    if token.isalpha() and token[1:].islower():
        return None  # a plain word (most of any text)
    lower = token.lower()
    if lower.startswith(_URL_PREFIXES):
        return "url" if len(token) > lower.index("://") + 3 else None
    if ("/" in token or "." in token.strip(".")) and is_path(token):
        return "path"
    if _NUMBER_RE.fullmatch(token):
        return "number" if sum(c.isdigit() for c in token) >= 2 else None
    if len(token) >= 4 and _IDENT_RE.fullmatch(token):
        body = token.removesuffix("()")
        if "_" in body.strip("_") or "." in body or ":" in body or _CAMEL_RE.search(body):
            return "identifier"
    return None


def _words(text: str) -> Iterable[Key]:
    for raw in text[:MAX_SCAN_CHARS].split():
        if len(raw) > MAX_TOKEN_CHARS:
            continue
        token = raw.lstrip(_STRIP).rstrip(_STRIP + ".")
        if len(token) < 2:
            continue
        kind = _classify(token)
        if kind is not None:
            yield kind, token


def _commands(text: str) -> Iterable[Key]:
    for line in text[:MAX_SCAN_CHARS].splitlines():
        stripped = line.strip()
        if stripped.startswith("$ ") and len(stripped) > 3:
            yield "command", stripped[2:].strip()[:MAX_DECISION_CHARS]


def _decisions(text: str) -> Iterable[Key]:
    for sentence in _SENTENCE_RE.split(text[:MAX_SCAN_CHARS]):
        sentence = " ".join(sentence.split())
        if sentence and _DECISION_RE.search(sentence):
            yield "decision", sentence[:MAX_DECISION_CHARS]


def extract_entities(text: str, *, prose: bool = True) -> list[Key]:
    """The entities of ``text`` in order of appearance (repeats kept); with ``prose``
    also the decisions its sentences state."""
    found = list(_words(text))
    found.extend(_commands(text))
    if prose:
        found.extend(_decisions(text))
    return found


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def holds(text: str, value: str, tries: int = 64) -> bool:
    """True if ``text`` holds ``value`` as a whole: not as part of a longer word
    (``payload_respons`` is not in ``payload_response``); at most ``tries`` occurrences
    are looked at."""
    start = text.find(value)
    while start >= 0 and tries > 0:
        end = start + len(value)
        before = start == 0 or not (_word_char(text[start - 1]) and _word_char(value[0]))
        after = end == len(text) or not (_word_char(text[end]) and _word_char(value[-1]))
        if before and after:
            return True
        start = text.find(value, start + 1)
        tries -= 1
    return False


class EntityIndex:
    """Distinct entities and the first IDs holding each (bounded)."""

    def __init__(self) -> None:
        self.where: dict[Key, list[str]] = {}
        self.overflow = 0

    def add(self, source_id: str, keys: Iterable[Key]) -> None:
        """Note that ``source_id`` holds each of ``keys``."""
        for key in keys:
            ids = self.where.get(key)
            if ids is None:
                if len(self.where) >= MAX_ENTITIES:
                    self.overflow += 1
                    continue
                self.where[key] = [source_id]
            elif len(ids) < MAX_FOUND_IN and ids[-1] != source_id:
                ids.append(source_id)

    def ledger(self, ledger: LossLedger, kept_in: str) -> LossLedger:
        """Fill ``ledger``'s entity fields: what ``kept_in`` (the replacement's text)
        does not hold verbatim is dropped."""
        dropped: dict[EntityKind, list[LedgerEntity]] = {k: [] for k in ENTITY_KINDS}
        total = 0
        for (kind, value), ids in self.where.items():
            if holds(kept_in, value):
                continue
            total += 1
            if len(dropped[kind]) < MAX_PER_KIND:
                dropped[kind].append(LedgerEntity(kind=kind, value=value, found_in=list(ids)))
        ledger.entities_seen = len(self.where) + self.overflow
        ledger.entities_kept = len(self.where) - total
        ledger.dropped = [e for kind in ENTITY_KINDS for e in dropped[kind]]
        ledger.dropped_total = total + self.overflow
        return ledger


def message_texts(message: MessageWithParts) -> Iterable[tuple[str, bool]]:
    """The texts of ``message`` the context view shows, each with whether it is prose
    (decisions are read from prose only); a pruned tool call is not in the view (its
    tombstone stands for it)."""
    for part in message.parts:
        if isinstance(part, TextPart) and not part.ignored:
            yield part.text, True
        elif isinstance(part, ToolPart):
            if part.status.compacted_at is None:
                yield from ((text, False) for text in tool_texts(part))
        elif isinstance(part, FileRefPart):
            yield part.path, False


def tool_texts(part: ToolPart) -> Iterable[str]:
    """The texts of a tool call the view shows until it is pruned: its command, its
    input values, its output and error."""
    for key in _COMMAND_KEYS:
        value = part.input.get(key)
        if isinstance(value, str) and value.strip():
            yield "$ " + value.strip().splitlines()[0]
    for value in part.input.values():
        if isinstance(value, str) and value:
            yield value
    yield part.output or ""
    yield part.error_message or ""


def _index_messages(messages: Sequence[MessageWithParts]) -> EntityIndex:
    index = EntityIndex()
    for message in messages:
        for text, prose in message_texts(message):
            if text:
                index.add(message.id, extract_entities(text, prose=prose))
    return index


def leaf_ledger(
    covered: Sequence[MessageWithParts], summary_text: str, tokens_removed: int, tokens_added: int
) -> LossLedger:
    """The ledger of a leaf summary of ``covered`` whose text is ``summary_text``."""
    ledger = LossLedger(
        kind="leaf",
        removed_message_ids=[m.id for m in covered],
        tokens_removed=max(0, tokens_removed),
        tokens_added=max(0, tokens_added),
    )
    return _index_messages(covered).ledger(ledger, summary_text)


def condensed_ledger(
    children: Sequence[SummaryRecord], summary_text: str, tokens_removed: int, tokens_added: int
) -> LossLedger:
    """The ledger of a condensed summary merging ``children`` into ``summary_text``."""
    index = EntityIndex()
    for child in children:
        index.add(child.id, extract_entities(child.content))
    ledger = LossLedger(
        kind="condensed",
        removed_summary_ids=[c.id for c in children],
        tokens_removed=max(0, tokens_removed),
        tokens_added=max(0, tokens_added),
    )
    return index.ledger(ledger, summary_text)


def prune_ledger(pruned: Sequence[tuple[str, ToolPart, int]]) -> LossLedger:
    """The ledger of a prune pass: ``(message_id, part, tokens)`` of each tombstoned
    output (the tombstone holds no entity of the output)."""
    index = EntityIndex()
    ids: dict[str, None] = {}
    for message_id, part, _ in pruned:
        ids.setdefault(message_id, None)
        for text in tool_texts(part):
            index.add(message_id, extract_entities(text, prose=False))
    ledger = LossLedger(
        kind="prune",
        removed_message_ids=list(ids),
        tokens_removed=sum(t for _, _, t in pruned),
    )
    return index.ledger(ledger, "")
