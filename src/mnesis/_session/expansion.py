"""Sub-agent expansion: a bounded sub-session answers a narrow question about history.

The main agent names a question and either a search query or summary IDs. A
child session (``parent_id`` = the caller) gets only ``lcm_grep``,
``lcm_describe`` and ``lcm_expand``, restricted to the granted summaries and
everything under them, with a token cap per expansion and a wall-clock timeout.
It returns a short answer with the IDs it cites; the raw expansion stays in the
child session. The grant exists only for the duration of the call.

This sits above :mod:`mnesis.retrieval` (which never sees a session) and below the
session facade, which hands it a way to spawn the child.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from mnesis._session.tools import ToolLoop, lcm_tool_definitions
from mnesis.config import MnesisConfig
from mnesis.errors import InvalidArgumentError, LLMError
from mnesis.models.ids import is_valid_id
from mnesis.models.message import TurnResult
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.results import ExpandQueryResult
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["EXPANDER_PROMPT", "SubAgent", "SubAgentExpander"]

EXPANDER_PROMPT = (
    "You answer one narrow question about an earlier part of a conversation that was "
    "compacted into summaries. Use lcm_expand on the granted summary IDs (and lcm_grep / "
    "lcm_describe) to read the original messages, then answer briefly and precisely. "
    "Cite the message or summary IDs your answer relies on, e.g. (msg_…)."
)
_ID_RE = re.compile(r"\b(?:sum|msg|file)_[0-9A-Za-z]{8,64}\b")
_MAX_GRANTED = 8


class SubAgent(Protocol):
    """What expansion needs of the child session it runs."""

    @property
    def id(self) -> str: ...

    async def send(
        self, message: str, *, tools: list[dict[str, Any]] | None = ..., run_lcm_tools: bool = ...
    ) -> TurnResult: ...

    async def close(self) -> None: ...


SpawnSubAgent = Callable[[str, str], Awaitable[tuple[SubAgent, ToolLoop]]]
"""``spawn(agent, system_prompt)``: a child session and its tool loop."""


class SubAgentExpander:
    """Answers ``lcm_expand_query`` for one session with bounded child sessions."""

    def __init__(
        self,
        store: ImmutableStore,
        session_id: str,
        *,
        retrieval: RetrievalEngine,
        estimator: TokenEstimator,
        config: MnesisConfig,
        spawn: SpawnSubAgent,
    ) -> None:
        self._store = store
        self._session_id = session_id
        self._retrieval = retrieval
        self._estimator = estimator
        self._config = config
        self._spawn = spawn

    async def expand_query(
        self,
        prompt: str,
        query: str | None,
        summary_ids: Sequence[str] | None,
        token_cap: int | None,
        max_answer_tokens: int,
        timeout: float,
    ) -> ExpandQueryResult:
        """Answer ``prompt`` from the summaries found by ``query`` or given as
        ``summary_ids`` (the arguments and their defaults are those of
        :meth:`mnesis.MnesisSession.expand_query`)."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidArgumentError("prompt must be a non-empty string")
        if query is None and not summary_ids:
            raise InvalidArgumentError("give a query or summary_ids to expand")
        if isinstance(max_answer_tokens, bool) or not isinstance(max_answer_tokens, int):
            raise InvalidArgumentError("max_answer_tokens must be an integer")
        if max_answer_tokens < 16:
            raise InvalidArgumentError("max_answer_tokens must be at least 16")
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise InvalidArgumentError("timeout must be a positive number of seconds")
        cap = token_cap if token_cap is not None else self._config.retrieval.max_expand_tokens
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise InvalidArgumentError("token_cap must be a positive integer")
        granted = await self._grant(query, summary_ids)
        if not granted:
            return ExpandQueryResult(answer="No matching compacted history was found.")
        restricted = RetrievalEngine(
            self._store,
            self._session_id,
            estimator=self._estimator,
            config=self._config.retrieval,
            allowed_summary_ids=granted,
        )
        child, tools = await self._spawn("lcm-expander", EXPANDER_PROMPT)
        tools.restrict(restricted, max_token_cap=cap)
        question = (
            f"Question: {prompt.strip()}\n"
            f"Granted summary IDs: {', '.join(granted)}\n"
            "Answer in at most a few sentences and cite IDs."
        )
        try:
            async with asyncio.timeout(timeout):
                turn = await child.send(
                    question,
                    tools=lcm_tool_definitions(exclude=("lcm_expand_query",)),
                    run_lcm_tools=True,
                )
        except TimeoutError as exc:
            raise LLMError(f"sub-agent expansion did not finish within {timeout}s") from exc
        finally:
            await child.close()
        answer, truncated = self._clip(turn.text.strip(), max_answer_tokens)
        return ExpandQueryResult(
            answer=answer,
            cited_ids=list(dict.fromkeys(_ID_RE.findall(answer))),
            tool_calls=tools.calls_run,
            truncated=truncated,
            sub_session_id=child.id,
        )

    def _clip(self, answer: str, max_tokens: int) -> tuple[str, bool]:
        estimator = self._estimator
        if estimator.estimate(answer) <= max_tokens:
            return answer, False
        chars = len(answer)
        while chars > 16 and estimator.estimate(answer[:chars]) > max_tokens:
            chars = int(chars * 0.85)
        return answer[:chars] + " …", True

    async def _grant(self, query: str | None, summary_ids: Sequence[str] | None) -> list[str]:
        granted: dict[str, None] = {}
        if summary_ids:
            if isinstance(summary_ids, str):
                raise InvalidArgumentError("summary_ids must be a list of summary IDs")
            for sid in summary_ids:
                if not isinstance(sid, str) or not is_valid_id(sid, "sum"):
                    raise InvalidArgumentError(f"{sid!r} is not a summary ID")
                await self._retrieval.describe(sid)  # existence and scope
                granted.setdefault(sid, None)
        if query is not None:
            found = await self._retrieval.grep(query, scope="both", limit=20)
            for match in found.matches:
                if match.kind == "summary":
                    granted.setdefault(match.id, None)
                elif match.covering_summary_id:
                    granted.setdefault(match.covering_summary_id, None)
                if len(granted) >= _MAX_GRANTED:
                    break
        return list(granted)[:_MAX_GRANTED]
