"""The ``map_runs`` / ``map_items`` state machine in SQL, written once for both backends."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from mnesis.models.clock import now_ms
from mnesis.store.map_runs import MapRunStore

__all__ = [
    "CLAIM",
    "ITEMS_INSERT",
    "ITEMS_SELECT",
    "RETRY_FAILED",
    "RUN_INSERT",
    "SQLMapRunStore",
]

RUN_INSERT = "INSERT INTO map_runs (id, kind, created_at, config) VALUES (?, ?, ?, ?)"
ITEMS_INSERT = (
    "INSERT INTO map_items (run_id, idx, input, state, attempts, updated_at) "
    "VALUES (?, ?, ?, 'pending', 0, ?)"
)
ITEMS_SELECT = (
    "SELECT idx, input, state, attempts, output, error, session_id FROM map_items "
    "WHERE run_id = ? ORDER BY idx"
)
RETRY_FAILED = (
    "UPDATE map_items SET state = 'pending', updated_at = ? WHERE run_id = ? AND state = 'failed'"
)
CLAIM = (
    "UPDATE map_items SET state = 'running', attempts = attempts + 1, "
    "session_id = NULL, updated_at = ? "
    "WHERE run_id = ? AND idx = ? AND state IN ('pending', 'running')"
)
_RUNNING = "WHERE run_id = ? AND idx = ? AND state = 'running'"
_ATTACH = f"UPDATE map_items SET session_id = ?, updated_at = ? {_RUNNING}"
_NOTE_ERROR = f"UPDATE map_items SET error = ?, updated_at = ? {_RUNNING}"
_COMPLETE = (
    "UPDATE map_items SET state = 'completed', output = ?, error = NULL, "
    f"session_id = ?, updated_at = ? {_RUNNING}"
)
_FAIL = (
    "UPDATE map_items SET state = 'failed', error = ?, updated_at = ? "
    "WHERE run_id = ? AND idx = ? AND state IN ('pending', 'running')"
)
_RELEASE = f"UPDATE map_items SET state = 'pending', updated_at = ? {_RUNNING}"


class SQLMapRunStore(MapRunStore):
    """The transitions that are one guarded ``UPDATE`` each; a backend adds
    :meth:`_start`, :meth:`claim`, :meth:`items` and :meth:`_update`."""

    @abstractmethod
    async def _update(self, sql: str, args: Sequence[Any]) -> None:
        """Run one statement (``?`` placeholders) in its own write transaction."""

    async def attach_session(self, run_id: str, idx: int, session_id: str) -> None:
        await self._update(_ATTACH, (session_id, now_ms(), run_id, idx))

    async def note_error(self, run_id: str, idx: int, error: str) -> None:
        await self._update(_NOTE_ERROR, (error, now_ms(), run_id, idx))

    async def complete(self, run_id: str, idx: int, output: str, session_id: str) -> None:
        await self._update(_COMPLETE, (output, session_id, now_ms(), run_id, idx))

    async def fail(self, run_id: str, idx: int, error: str) -> None:
        await self._update(_FAIL, (error, now_ms(), run_id, idx))

    async def release(self, run_id: str, idx: int) -> None:
        await self._update(_RELEASE, (now_ms(), run_id, idx))
