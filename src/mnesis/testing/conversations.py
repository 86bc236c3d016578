"""Long coding-agent sessions, generated deterministically from a seed, and their replay.

A :class:`ConversationSpec` names a session shape (its story, how many turns, how many
file IDs per turn, how large tool outputs are); :func:`generate` turns it into a
:class:`Conversation`, the same for the same spec on every machine and every run (only
:class:`random.Random` seeded from the spec is used). :data:`SESSIONS` is a catalogue of
300 to 3,000 messages; :data:`DEMO` is the story ``mnesis demo`` runs.

Facts are planted at known turns (spread over the session), and :func:`replay`
reports which stored message holds each of them. One message per role per turn: a
session of ``n`` turns has ``2 * n`` messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from mnesis.models.parts import MessagePart, TextPart
from mnesis.session import MnesisSession
from mnesis.testing._payments import payments_facts, payments_turns
from mnesis.testing._types import Conversation, ConversationSpec, PlantedFact, Story, Turn
from mnesis.testing._webapp import FACT_TEMPLATES, webapp_facts, webapp_turns
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = [
    "DEMO",
    "FACT_TEMPLATES",
    "SESSIONS",
    "Conversation",
    "ConversationSpec",
    "FactLocation",
    "PlantedFact",
    "ReplayResult",
    "Story",
    "Turn",
    "generate",
    "iter_turns",
    "message_tokens",
    "planted_facts",
    "replay",
]


@dataclass(frozen=True, slots=True)
class FactLocation:
    """Where a planted fact landed in the store."""

    fact: PlantedFact
    message_id: str


@dataclass(slots=True)
class ReplayResult:
    """What :func:`replay` stored."""

    message_ids: list[str] = field(default_factory=list)
    """Every stored message ID, in order (user, assistant, user, ...)."""
    facts: list[FactLocation] = field(default_factory=list)
    file_ids_by_message: dict[str, tuple[str, ...]] = field(default_factory=dict)
    parts_by_message: dict[str, tuple[MessagePart, ...]] = field(default_factory=dict)
    """The parts of each stored message (of a chat turn's reply: its text)."""
    history_tokens: int = 0
    """Sum of the token estimates of the stored messages before any pruning."""


SESSIONS: dict[str, ConversationSpec] = {
    spec.name: spec
    for spec in (
        ConversationSpec("bugfix_sprint", seed=7, turns=150),
        ConversationSpec("webapp_auth", seed=11, turns=300),
        ConversationSpec("infra_migration", seed=23, turns=500, max_output_chars=3_500),
        ConversationSpec(
            "artifact_flood",
            seed=37,
            turns=400,
            file_ids_per_turn=10,
            min_output_chars=600,
            max_output_chars=1_500,
            tool_turn_share=1.0,
        ),
        ConversationSpec(
            "marathon", seed=41, turns=1_500, min_output_chars=600, max_output_chars=2_500
        ),
    )
}
"""The catalogue: 300 to 3,000 messages each. ``artifact_flood`` mentions 4,000
distinct file IDs; ``marathon`` is the 3,000-message session."""


DEMO = ConversationSpec("demo", seed=0, turns=300, story="payments_migration")
"""The session ``mnesis demo`` runs by default (its ``--turns`` and ``--seed`` change
``turns`` and ``seed``)."""


def planted_facts(spec: ConversationSpec) -> tuple[PlantedFact, ...]:
    """The facts planted in the session described by ``spec``, in the order they appear."""
    if spec.story == "payments_migration":
        return payments_facts(spec)
    return webapp_facts(spec)


def iter_turns(spec: ConversationSpec) -> Iterator[Turn]:
    """Yield the turns of the session described by ``spec`` one at a time.

    The same turns as :func:`generate`, without holding them all in memory.
    """
    if spec.story == "payments_migration":
        return payments_turns(spec)
    return webapp_turns(spec)


@lru_cache(maxsize=16)
def generate(spec: ConversationSpec) -> Conversation:
    """The session described by ``spec`` (deterministic, cached per process)."""
    return Conversation(spec, tuple(iter_turns(spec)), planted_facts(spec))


def message_tokens(parts: tuple[MessagePart, ...], estimator: TokenEstimator) -> int:
    """Token estimate of a message made of ``parts``, as the session computes it."""
    return MESSAGE_OVERHEAD_TOKENS + sum(estimator.estimate_part(p) for p in parts)


async def replay(
    session: MnesisSession,
    conversation: Conversation,
    *,
    start: int = 0,
    stop: int | None = None,
) -> ReplayResult:
    """Store turns ``start..stop`` of ``conversation`` in ``session``.

    A turn with an assistant reply is stored with ``session.record``; a chat turn goes
    through ``session.send`` and the session's model answers it. Returns every stored
    message ID and, for each planted fact in that range, the ID of the message that
    holds it.
    """
    estimator = TokenEstimator(session.model_info.encoding)
    result = ReplayResult()
    fact_turns: dict[int, list[PlantedFact]] = {}
    for fact in conversation.facts:
        fact_turns.setdefault(fact.turn, []).append(fact)
    for turn in conversation.turns[start:stop]:
        assistant = turn.assistant
        if turn.is_chat:
            sent = await session.send(list(turn.user))
            assert sent.user_message_id is not None  # send() with a message stores it
            user_id, assistant_id = sent.user_message_id, sent.message_id
            assistant = (TextPart(text=sent.text),)
        else:
            recorded = await session.record(list(turn.user), list(turn.assistant))
            user_id, assistant_id = recorded.user_message_id, recorded.assistant_message_id
        result.message_ids += [user_id, assistant_id]
        result.file_ids_by_message[user_id] = turn.user_file_ids
        result.file_ids_by_message[assistant_id] = turn.assistant_file_ids
        result.parts_by_message[user_id] = turn.user
        result.parts_by_message[assistant_id] = assistant
        result.history_tokens += message_tokens(turn.user, estimator)
        result.history_tokens += message_tokens(assistant, estimator)
        for fact in fact_turns.get(turn.index, []):
            holder = user_id if fact.role == "user" else assistant_id
            result.facts.append(FactLocation(fact, holder))
    return result
