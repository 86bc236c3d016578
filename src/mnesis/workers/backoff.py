"""Waiting out an unreachable database: bounded exponential backoff, logged.

A worker never exits because PostgreSQL is restarting, failing over or has cut its
connection: every database call of its loops goes through :func:`retry_until`, which
retries with delays of ``first``, twice that, ... up to ``cap`` seconds (with jitter),
logging each failure at WARNING with the delay before the next try, and the recovery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import psycopg
from psycopg_pool import PoolTimeout

from mnesis.errors import MnesisStoreError

__all__ = ["Backoff", "is_disconnect", "retry_until"]

logger = logging.getLogger("mnesis.workers")
T = TypeVar("T")

_GONE_STATES = {"57P01", "57P02", "57P03", "25006"}
"""Admin shutdown, crash shutdown, cannot connect now, read-only transaction (a
failed-over primary now a standby)."""


class Backoff:
    """Delays ``first``, ``2 * first``, ... capped at ``cap`` seconds, each with up to 10%
    jitter; :meth:`reset` after a success."""

    def __init__(self, first: float = 0.5, cap: float = 30.0) -> None:
        self.first = first
        self.cap = max(cap, first)
        self.failures = 0

    def next(self) -> float:
        """The delay before the next try (and count a failure)."""
        delay = min(self.cap, self.first * 2.0**self.failures)
        self.failures += 1
        return delay * (1 + random.random() * 0.1)

    def reset(self) -> None:
        """Start again from ``first``."""
        self.failures = 0


def is_disconnect(exc: BaseException) -> bool:
    """True if ``exc`` (or what caused it) says the database could not be reached or
    dropped the connection, rather than that the work itself failed."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, PoolTimeout | ConnectionError):
            return True
        if isinstance(seen, psycopg.OperationalError | psycopg.InterfaceError):
            state = seen.sqlstate
            if state is None or state.startswith("08") or state in _GONE_STATES:
                return True
        if isinstance(seen, psycopg.errors.ReadOnlySqlTransaction):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


async def retry_until(
    what: str,
    call: Callable[[], Awaitable[T]],
    stop: asyncio.Event,
    backoff: Backoff,
) -> T | None:
    """``await call()`` until it succeeds (its result) or ``stop`` is set (None).

    Failures that are the database's (:func:`is_disconnect`, a
    :class:`~mnesis.errors.MnesisStoreError`, any ``psycopg`` error) are logged at WARNING
    and retried after :meth:`Backoff.next`; anything else propagates.
    """
    started = time.monotonic()
    failed = 0
    while not stop.is_set():
        try:
            result = await call()
        except (psycopg.Error, PoolTimeout, MnesisStoreError, OSError) as exc:
            failed += 1
            delay = backoff.next()
            logger.warning(
                "%s failed (%s: %s); retrying in %.1f s",
                what,
                type(exc).__name__,
                str(exc).strip().splitlines()[0] if str(exc).strip() else "",
                delay,
                extra={"mnesis": {"attempt": failed, "retry_in_s": round(delay, 1)}},
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
            continue
        if failed:
            logger.warning(
                "%s succeeded after %d failed tries (%.1f s)",
                what,
                failed,
                time.monotonic() - started,
            )
        backoff.reset()
        return result
    return None
