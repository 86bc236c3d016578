"""The shapes of a generated session: its spec, its turns and the facts planted in it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mnesis.models.parts import MessagePart, TextPart

__all__ = ["Conversation", "ConversationSpec", "PlantedFact", "Story", "Turn"]

Story = Literal["webapp", "payments_migration"]
"""The two stories a session can tell:

* ``webapp``: a coding agent fixing bugs and refactoring a web application, every turn
  recorded (user message and assistant reply with tool calls); five facts planted at
  fixed fractions of the session; optionally, many ``file_<16 hex>`` IDs per turn.
* ``payments_migration``: a coding agent migrating a payments service to asyncio,
  module by module, hitting real async failures; some turns are chat turns the model
  under test answers; the user's instructions are the planted facts.
"""


@dataclass(frozen=True, slots=True)
class ConversationSpec:
    """The shape of a generated session: the same spec gives the same session."""

    name: str
    seed: int
    turns: int
    file_ids_per_turn: int = 0
    """Fresh ``file_<16 hex>`` IDs mentioned by each turn's tool output (``webapp`` only)."""
    min_output_chars: int = 1_200
    """Smallest tool output, in characters (``webapp`` only)."""
    max_output_chars: int = 4_500
    """Largest tool output, in characters (``webapp`` only)."""
    tool_turn_share: float = 0.8
    """Share of turns whose assistant message calls tools (``webapp`` only)."""
    story: Story = "webapp"

    @property
    def messages(self) -> int:
        """Number of messages a replay stores (two per turn)."""
        return 2 * self.turns


@dataclass(frozen=True, slots=True)
class PlantedFact:
    """A fact an agent must not forget, planted at a known turn."""

    key: str
    """A short label naming the fact."""
    role: str
    """``user`` or ``assistant``: which message of the turn holds it."""
    sentence: str
    needle: str
    """A distinctive substring of ``sentence`` to search for."""
    turn: int


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn: the user's message and the assistant's reply.

    A turn with an empty ``assistant`` is a chat turn: the user's message goes through
    ``session.send`` and the model under test answers. Any other turn is stored as it
    is with ``session.record(user, assistant)``.
    """

    index: int
    user: tuple[MessagePart, ...]
    assistant: tuple[MessagePart, ...]
    user_file_ids: tuple[str, ...] = ()
    assistant_file_ids: tuple[str, ...] = ()

    @property
    def is_chat(self) -> bool:
        """True if the model under test answers the turn (``assistant`` is empty)."""
        return not self.assistant

    @property
    def user_text(self) -> str:
        """The text of the user's message."""
        return "".join(p.text for p in self.user if isinstance(p, TextPart))


@dataclass(frozen=True, slots=True)
class Conversation:
    """A generated session: its turns and the facts planted in them."""

    spec: ConversationSpec
    turns: tuple[Turn, ...]
    facts: tuple[PlantedFact, ...]

    @property
    def file_ids(self) -> set[str]:
        """Every distinct file ID the session mentions."""
        out: set[str] = set()
        for turn in self.turns:
            out.update(turn.user_file_ids)
            out.update(turn.assistant_file_ids)
        return out
