"""What a search should not return: its own traces, the question being asked, echoes.

* The inputs and outputs of the ``lcm_*`` retrieval tools are past searches, not
  history: they repeat the query's words and would crowd out the evidence.
* The newest user turn of a session, while it is still unanswered, is the question
  the caller is searching for; it is not evidence for itself.
* Identical or near-identical texts (a build log printed twenty times) collapse into
  one hit that counts the others.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mnesis.store.base import RecentTurn, SearchHit
from mnesis.store.immutable import ImmutableStore

__all__ = ["RETRIEVAL_TOOL_PREFIX", "NearDuplicates", "is_retrieval_trace", "unanswered_questions"]

RETRIEVAL_TOOL_PREFIX = "lcm_"
_TAIL = 8
_SESSIONS = 8
_WORD_RE = re.compile(r"\w+")
SIMILAR = 0.75
"""Word-set Jaccard similarity from which two snippets count as the same."""


def is_retrieval_trace(hit: SearchHit) -> bool:
    """True for the input/output of one of the ``lcm_*`` retrieval tools."""
    return hit.tool_name is not None and hit.tool_name.startswith(RETRIEVAL_TOOL_PREFIX)


async def unanswered_questions(store: ImmutableStore, session_ids: Sequence[str]) -> set[str]:
    """Message IDs of the newest user turn of each session, when nothing answered it yet.

    A turn is unanswered while every message after it is an assistant step that
    calls tools (a tool loop in progress), or when it is the newest message.
    One store read covers the sessions (at most ``_SESSIONS``).
    """
    by_session: dict[str, list[RecentTurn]] = {}
    for turn in await store.recent_turns(list(dict.fromkeys(session_ids))[:_SESSIONS], _TAIL):
        by_session.setdefault(turn.session_id, []).append(turn)
    out: set[str] = set()
    for tail in by_session.values():
        for turn in reversed(tail):
            if turn.role == "user":
                if turn.has_text:
                    out.add(turn.message_id)
                break
            if not turn.calls_tools:
                break
    return out


def _words(text: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in _WORD_RE.findall(text))


class NearDuplicates:
    """Groups texts whose words are (nearly) the same; the first one seen leads."""

    def __init__(self) -> None:
        self._leaders: dict[str, list[tuple[frozenset[str], int]]] = {}
        self._exact: dict[tuple[str, str], int] = {}
        self._same_text: dict[str, int] = {}

    def leader_of(self, text: str, index: int, group: str = "", *, new: bool = True) -> int:
        """The index of the earlier text of ``group`` that ``text`` duplicates, or
        ``index`` if none (texts of different groups are only duplicates when they
        are the same).

        With ``new=False`` a text that duplicates none is not kept (``-1``).
        """
        key = (group, " ".join(text.casefold().split()))
        if key in self._exact:
            return self._exact[key]
        if key[1] in self._same_text:
            # The same snippet is a duplicate whatever the texts behind it hold.
            return self._same_text[key[1]]
        leaders = self._leaders.setdefault(group, [])
        if not leaders and not new:
            return -1
        words = _words(key[1])
        for other, leader in leaders:
            union = len(words | other)
            if union and len(words & other) / union >= SIMILAR:
                self._exact[key] = leader
                return leader
        if not new:
            return -1
        self._exact[key] = index
        self._same_text.setdefault(key[1], index)
        leaders.append((words, index))
        return index
