"""Driver errors become mnesis errors here, at the boundary, with their SQLSTATE kept."""

from __future__ import annotations

import psycopg

from mnesis.errors import (
    AppendOnlyViolationError,
    MnesisStoreError,
    StoreBusyError,
    StoreFullError,
    StoreReadOnlyError,
)

__all__ = ["one_line", "translate_pg_error"]

_BUSY = {
    "40001": "serialization failure",
    "40P01": "deadlock",
    "55P03": "lock not available",
    "57014": "statement timeout",
    "23505": "conflicting concurrent write",
}
_READ_ONLY = {"25006", "42501"}
_FULL = {"53100", "54000"}


def one_line(exc: BaseException) -> str:
    """The driver's message on one line (libpq messages span several)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def translate_pg_error(exc: psycopg.Error, location: str) -> MnesisStoreError:
    """Map a driver error to the mnesis error a caller can act on."""
    msg = one_line(exc)
    state = exc.sqlstate or ""
    tag = f" [{state}]" if state else ""
    if "mnesis append-only" in msg:
        return AppendOnlyViolationError(msg)
    if state in _BUSY:
        return StoreBusyError(f"{_BUSY[state]} on {location}, retry: {msg}{tag}")
    if state in _READ_ONLY:
        return StoreReadOnlyError(f"database {location} refuses writes: {msg}{tag}")
    if state in _FULL:
        return StoreFullError(f"no space left on {location}: {msg}{tag}")
    if isinstance(exc, psycopg.OperationalError) and not state.startswith(("22", "23", "42")):
        return MnesisStoreError(f"PostgreSQL {location} unavailable: {msg}{tag}")
    return MnesisStoreError(f"database error on {location}: {msg}{tag}")
