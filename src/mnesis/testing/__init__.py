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

from mnesis.llm import fake as _fake
from mnesis.llm.fake import *  # noqa: F403  (the fake model and its behaviours)
from mnesis.testing import conversations
from mnesis.testing.conversations import *  # noqa: F403  (the scenario generator)

__all__ = []
__all__ += _fake.__all__
__all__ += conversations.__all__
