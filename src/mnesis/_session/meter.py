"""The context-token meter: the estimated size of a session's context view.

Every append adds its estimate here, so thresholds are checked without reading the
view back; after a compaction commits, the meter is stale and re-reads the total.
"""

from __future__ import annotations

from mnesis.store.immutable import ImmutableStore

__all__ = ["ContextMeter"]


class ContextMeter:
    """Estimated tokens of everything in one session's context view."""

    def __init__(
        self, store: ImmutableStore, session_id: str, *, tokens: int, system_tokens: int
    ) -> None:
        self._store = store
        self._session_id = session_id
        self._tokens = tokens
        self._system_tokens = system_tokens
        self._stale = False

    @property
    def tokens(self) -> int:
        """The context view's estimated tokens (what ``MnesisSession.context_tokens`` says)."""
        return self._tokens

    @property
    def view_tokens(self) -> int:
        """What thresholds compare: the context view plus the default system prompt."""
        return self._tokens + self._system_tokens

    @property
    def stale(self) -> bool:
        """True after a compaction committed and before the next :meth:`refresh`."""
        return self._stale

    def add(self, tokens: int) -> None:
        """Account for ``tokens`` more (or fewer, when negative) in the view."""
        self._tokens += tokens

    def mark_stale(self) -> None:
        """The view changed behind the meter's back (a compaction committed)."""
        self._stale = True

    async def refresh(self) -> None:
        """Re-read the view's total from the store."""
        self._stale = False
        self._tokens = await self._store.context_token_total(self._session_id)
