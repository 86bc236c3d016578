"""Context assembly: the exact message list sent to the model on each turn.

Invariants:

1. The newest raw message is always included (or :class:`ContextOverflowError`
   is raised when it alone exceeds the budget).
2. Only ``context_items`` are read: compacted spans appear as their summaries.
3. Tombstoned tool outputs are rendered as one-line tombstone strings.
4. File references are rendered as ``[FILE: ...]`` blocks.
5. The assembled context (system prompt included) fits ``ContextBudget.usable``.
6. A tool call and its result are never separated: they live in one
   :class:`~mnesis.models.parts.ToolPart`, and a ``tool``-role message is kept or
   dropped together with the message before it.

Cost: summary items are read with one indexed query; message items are read
newest-first, page by page, only until the budget is full, so assembly cost
depends on what fits the window, never on the length of the history. Rendered
messages are cached by ``(message_id, token_estimate)``: history is immutable,
and a tombstone changes the estimate, which invalidates the entry.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from mnesis.config import MnesisConfig
from mnesis.context.anthropic import render_anthropic
from mnesis.context.entries import ContextEntry, SummaryEntry
from mnesis.context.next_user import append_user
from mnesis.context.openai import render_openai
from mnesis.context.responses import render_responses
from mnesis.errors import ContextOverflowError, InvalidArgumentError
from mnesis.models.budget import ContextBudget
from mnesis.models.message import MessageWithParts
from mnesis.models.model_info import ModelInfo
from mnesis.models.parts import ToolPart
from mnesis.models.render import render_message_text, render_summary_record
from mnesis.store.base import ContextItem
from mnesis.store.dag import SummaryDAGStore
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = [
    "CONTEXT_FORMATS",
    "BuiltContext",
    "ContextBudget",
    "ContextBuilder",
    "ContextFormat",
    "LLMMessage",
]

ContextFormat = Literal["openai", "anthropic", "responses", "text"]
"""The wire formats a built context renders to (see :meth:`BuiltContext.render`)."""
CONTEXT_FORMATS: tuple[str, ...] = ("openai", "anthropic", "responses", "text")

_FIRST_PAGE = 128
_CACHE_SIZE = 8192


@dataclass(slots=True)
class LLMMessage:
    """A single message formatted for a provider API."""

    role: str
    content: str | list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        """``{"role": ..., "content": ...}``."""
        return {"role": self.role, "content": self.content}


@dataclass(slots=True)
class BuiltContext:
    """The assembled context window ready for a model call."""

    messages: list[LLMMessage]
    system_prompt: str
    token_estimate: int
    budget: ContextBudget
    has_summary: bool
    oldest_included_message_id: str | None = None
    summary_token_count: int = 0
    raw_message_tokens: int = 0
    """Tokens of raw (non-summary) messages included."""
    tool_output_tokens: int = 0
    """Subset of ``raw_message_tokens`` spent on tool parts."""
    system_prompt_tokens: int = 0
    item_ids: list[str] = field(default_factory=list)
    """IDs of the included context items (messages and summaries), in order."""
    dropped_summary_ids: list[str] = field(default_factory=list)
    entries: list[ContextEntry] = field(default_factory=list)
    """The included summaries and stored messages, in order (what the wire formats render)."""
    full_context_tokens: int | None = None
    """0.4.0's field: the size of the whole context view when it was measured apart
    from this build (``None``: see :attr:`context_tokens`)."""

    @property
    def context_tokens(self) -> int:
        """Tokens of the context as sent (``full_context_tokens`` when set, else
        ``token_estimate``)."""
        return self.token_estimate if self.full_context_tokens is None else self.full_context_tokens

    def to_dicts(self, *, include_system: bool = True) -> list[dict[str, Any]]:
        """The plain-text rendering: ``{"role", "content"}`` dicts, system prompt first,
        tool calls and results written out as ``[Tool: ...]`` text blocks."""
        out = [{"role": "system", "content": self.system_prompt}] if include_system else []
        out.extend(m.to_dict() for m in self.messages)
        return out

    def to_openai(self) -> list[dict[str, Any]]:
        """OpenAI chat messages: ``tool_calls`` on assistant turns, ``tool`` results
        (see :mod:`mnesis.context.openai`)."""
        return render_openai(self.system_prompt, self.entries)

    def to_anthropic(self, *, cache_control: bool = False) -> dict[str, Any]:
        """An Anthropic Messages body ``{"system", "messages"}`` with ``tool_use`` /
        ``tool_result`` blocks (see :mod:`mnesis.context.anthropic`)."""
        return render_anthropic(self.system_prompt, self.entries, cache_control=cache_control)

    def to_responses(self) -> list[dict[str, Any]]:
        """OpenAI Responses input items: ``function_call`` / ``function_call_output``
        items, ``reasoning`` items recorded from the Responses API (see
        :mod:`mnesis.context.responses`)."""
        return render_responses(self.system_prompt, self.entries)

    def render(
        self,
        format: ContextFormat = "openai",
        *,
        cache_control: bool = False,
        user: str | None = None,
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """The context in ``format``: ``"openai"`` (the default), ``"anthropic"``,
        ``"responses"`` or ``"text"`` (:meth:`to_dicts`). ``cache_control`` is for
        ``"anthropic"`` only; ``user`` appends the next user message by the format's
        rules (see :mod:`mnesis.context.next_user`)."""
        rendered = self._render(format, cache_control=cache_control)
        if user is None:
            return rendered
        return append_user(rendered, format, user, cache_control=cache_control)

    def _render(
        self, format: ContextFormat, *, cache_control: bool
    ) -> list[dict[str, Any]] | dict[str, Any]:
        if format not in CONTEXT_FORMATS:
            raise InvalidArgumentError(
                f"format must be 'openai', 'anthropic', 'responses' or 'text', got {format!r}"
            )
        if cache_control and format != "anthropic":
            raise InvalidArgumentError("cache_control applies to format='anthropic' only")
        if format == "anthropic":
            return self.to_anthropic(cache_control=cache_control)
        if format == "responses":
            return self.to_responses()
        return self.to_openai() if format == "openai" else self.to_dicts()


@dataclass(slots=True)
class _Rendered:
    message: LLMMessage
    tool_tokens: int
    source: MessageWithParts

    @property
    def empty(self) -> bool:
        """Nothing to send (e.g. the stub of a failed model call)."""
        return not self.message.content and not self.source.tool_parts

    @property
    def recorded(self) -> bool:
        """It holds parts recorded in a provider's shape (``record_messages``): an empty
        text or a reasoning block the wire formats send back although the plain text
        has nothing of them."""
        return any(getattr(p, "wire", None) for p in self.source.parts)


class ContextBuilder:
    """Assembles the message list sent to the model on each turn."""

    def __init__(
        self,
        store: ImmutableStore,
        dag_store: SummaryDAGStore | None = None,
        token_estimator: TokenEstimator | None = None,
    ) -> None:
        self.store = store
        self.dag_store = dag_store or SummaryDAGStore(store)
        self.estimator = token_estimator or TokenEstimator()
        self._cache: OrderedDict[tuple[str, int], _Rendered] = OrderedDict()

    async def build(
        self,
        session_id: str,
        model: ModelInfo,
        system_prompt: str,
        config: MnesisConfig,
    ) -> BuiltContext:
        """Build the context window for the next model call.

        Raises :class:`~mnesis.errors.ContextOverflowError` when the newest message
        alone does not fit the budget.
        """
        budget = ContextBudget.compute(model, config)
        system_tokens = self.estimator.estimate(system_prompt) + MESSAGE_OVERHEAD_TOKENS
        available = budget.usable - system_tokens

        summaries = await self.store.get_context_items(session_id, item_type="summary")
        summary_tokens = sum(s.tokens for s in summaries)
        selected = await self._select_messages(session_id, available - summary_tokens)
        dropped: list[ContextItem] = []
        if selected is None:
            # The newest message does not fit next to the summaries: drop the
            # oldest summaries (they stay reachable through retrieval) until it does.
            newest = await self._newest_unit(session_id)
            needed = sum(i.tokens for i in newest)
            while summaries and needed > available - summary_tokens:
                gone = summaries.pop(0)
                dropped.append(gone)
                summary_tokens -= gone.tokens
            if needed > available - summary_tokens:
                raise ContextOverflowError(needed + system_tokens, budget.usable)
            selected = await self._select_messages(session_id, available - summary_tokens) or []

        raw_total = sum(i.tokens for i in selected)
        while summaries and summary_tokens + raw_total > available:
            # Summaries alone exceed the window (e.g. reloaded with a smaller model).
            gone = summaries.pop(0)
            dropped.append(gone)
            summary_tokens -= gone.tokens

        rendered = await self._render_messages(selected)
        summary_text = await self._render_summaries([s.item_id for s in summaries])

        items = sorted([*summaries, *selected], key=lambda i: i.position)
        messages: list[LLMMessage] = []
        entries: list[ContextEntry] = []
        included: list[str] = []
        entry: ContextEntry
        for item in items:
            if item.item_type == "summary":
                text = summary_text.get(item.item_id)
                if text is None:
                    continue
                message, entry = LLMMessage("user", text), SummaryEntry(item.item_id, text)
            else:
                r = rendered[item.item_id]
                if r.empty:
                    if r.recorded:  # for the wire formats only
                        entries.append(r.source)
                        included.append(item.item_id)
                    continue
                message, entry = r.message, r.source
            messages.append(message)
            entries.append(entry)
            included.append(item.item_id)
        return BuiltContext(
            messages=messages,
            system_prompt=system_prompt,
            token_estimate=system_tokens + summary_tokens + raw_total,
            budget=budget,
            has_summary=bool(summaries),
            oldest_included_message_id=next(
                (i.item_id for i in items if i.item_type != "summary"), None
            ),
            summary_token_count=summary_tokens,
            raw_message_tokens=raw_total,
            tool_output_tokens=sum(rendered[i.item_id].tool_tokens for i in selected),
            system_prompt_tokens=system_tokens,
            item_ids=included,
            dropped_summary_ids=[d.item_id for d in dropped],
            entries=entries,
        )

    async def _message_pages(
        self, session_id: str, page_size: int, *, grow: bool
    ) -> AsyncIterator[list[ContextItem]]:
        """The session's message items, newest first, a page at a time (doubling if ``grow``)."""
        before: int | None = None
        while True:
            page = await self.store.get_context_items(
                session_id,
                item_type="message",
                newest_first=True,
                before_position=before,
                limit=page_size,
            )
            yield page
            if len(page) < page_size:
                return
            before = page[-1].position
            if grow:
                page_size *= 2

    async def _newest_unit(self, session_id: str) -> list[ContextItem]:
        unit: list[ContextItem] = []
        async for page in self._message_pages(session_id, 16, grow=False):
            for item in page:
                unit.append(item)
                if item.role != "tool":
                    return unit
        return unit

    async def _select_messages(self, session_id: str, budget: int) -> list[ContextItem] | None:
        """Newest-first fill; None when not even the newest unit fits."""
        chosen: list[ContextItem] = []
        unit: list[ContextItem] = []
        used = 0
        async for page in self._message_pages(session_id, _FIRST_PAGE, grow=True):
            for item in page:
                unit.append(item)
                if item.role == "tool":
                    continue
                cost = sum(i.tokens for i in unit)
                if used + cost > budget:
                    return chosen if chosen else None
                chosen.extend(unit)
                used += cost
                unit = []
        return chosen if chosen or not unit else None

    async def _render_messages(self, items: list[ContextItem]) -> dict[str, _Rendered]:
        out: dict[str, _Rendered] = {}
        missing: list[ContextItem] = []
        for item in items:
            key = (item.item_id, item.tokens)
            hit = self._cache.get(key)
            if hit is None:
                missing.append(item)
            else:
                self._cache.move_to_end(key)
                out[item.item_id] = hit
        if missing:
            loaded = await self.store.get_messages_by_ids([i.item_id for i in missing])
            by_id = {m.id: m for m in loaded}
            for item in missing:
                mwp = by_id.get(item.item_id)
                if mwp is None:
                    continue
                rendered = self._render(mwp)
                out[item.item_id] = rendered
                self._cache[(item.item_id, item.tokens)] = rendered
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return out

    def _render(self, mwp: MessageWithParts) -> _Rendered:
        role = mwp.role if mwp.role in ("user", "assistant", "system") else "user"
        tool_tokens = sum(
            self.estimator.estimate_part(p) for p in mwp.parts if isinstance(p, ToolPart)
        )
        return _Rendered(LLMMessage(role, render_message_text(mwp)), tool_tokens, mwp)

    async def _render_summaries(self, summary_ids: list[str]) -> dict[str, str]:
        records = await self.store.get_summaries(summary_ids)
        return {s.id: render_summary_record(s) for s in records}

    def invalidate(self) -> None:
        """Forget cached renderings (after tombstoning outside this builder's view)."""
        self._cache.clear()
