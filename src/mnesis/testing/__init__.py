"""The public test kit: what you need to test your own agent code against mnesis offline.

* :class:`FakeLLM` and its scripted behaviours (:class:`Respond`, :class:`Fail`,
  :class:`Hang`, :class:`Empty`, :class:`Garbage`): a deterministic model, no key and
  no network; pass it as ``llm=`` to :meth:`mnesis.MnesisSession.create`.
* Long coding-agent sessions generated from a seed: :class:`ConversationSpec` names one
  (its :data:`Story`, its length, its file IDs, its tool output sizes), :func:`generate`
  builds it (:func:`iter_turns` lazily), :data:`SESSIONS` is a catalogue of 300 to
  3,000 messages, and :func:`replay` stores it in a session and tells which stored
  message holds each planted fact::

      from mnesis import MnesisSession
      from mnesis.testing import SESSIONS, FakeLLM, generate, replay

      session = await MnesisSession.create(model="fake/test", llm=FakeLLM(), db_path=path)
      replayed = await replay(session, generate(SESSIONS["bugfix_sprint"]))
      for found in replayed.facts:  # can the agent still find what it was told?
          ...

This package is not imported by ``import mnesis``: import it in your tests.
"""

from __future__ import annotations

from mnesis.llm.fake import Empty, Fail, FakeBehaviour, FakeLLM, Garbage, Hang, Respond
from mnesis.testing.conversations import (
    DEMO,
    FACT_TEMPLATES,
    SESSIONS,
    Conversation,
    ConversationSpec,
    FactLocation,
    PlantedFact,
    ReplayResult,
    Story,
    Turn,
    generate,
    iter_turns,
    message_tokens,
    planted_facts,
    replay,
)

__all__ = [
    "DEMO",
    "FACT_TEMPLATES",
    "SESSIONS",
    "Conversation",
    "ConversationSpec",
    "Empty",
    "FactLocation",
    "Fail",
    "FakeBehaviour",
    "FakeLLM",
    "Garbage",
    "Hang",
    "PlantedFact",
    "ReplayResult",
    "Respond",
    "Story",
    "Turn",
    "generate",
    "iter_turns",
    "message_tokens",
    "planted_facts",
    "replay",
]
