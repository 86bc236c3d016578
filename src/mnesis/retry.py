"""Retrying a call after a transient failure, with capped exponential backoff.

0.4.0's ``mnesis.retry``. A session retries its model call with it when
``SessionConfig.retry.max_retries`` is above 0 (the default, 0, never retries), and
publishes ``llm.retry`` before each retry. Usable on its own::

    from mnesis.models.config import RetryConfig
    from mnesis.retry import call_with_retry

    reply = await call_with_retry(lambda: fetch(url), RetryConfig(max_retries=3))

Only errors :func:`is_retryable` accepts are retried (timeouts, dropped connections,
rate limits and provider 5xx, a busy store); anything else is raised at once,
unchanged. Waits are bounded by ``RetryConfig.max_delay`` and the number of attempts
by ``max_retries`` (at most 100).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mnesis.config import RetryConfig
from mnesis.errors import (
    CompactionLockedError,
    InvalidArgumentError,
    LLMError,
    LLMResponseError,
    RetriesExhaustedError,
    StoreBusyError,
)

__all__ = ["RetriesExhaustedError", "backoff_delay", "call_with_retry", "is_retryable"]

T = TypeVar("T")

_LOGGER = logging.getLogger("mnesis.retry")
_RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
"""HTTP statuses of a provider error worth another attempt (timeouts, rate limits,
overload, server errors); 4xx errors of the request itself are not."""


def backoff_delay(cfg: RetryConfig, attempt: int) -> float:
    """Seconds to wait before retry number ``attempt`` (1 for the first retry):
    ``base_delay * 2 ** (attempt - 1)`` capped at ``max_delay``, and with ``jitter`` a
    random 50-100 % of that."""
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise InvalidArgumentError(f"attempt must be an int >= 1, got {attempt!r}")
    delay = min(cfg.max_delay, cfg.base_delay * 2.0 ** min(attempt - 1, 64))
    if cfg.jitter:
        delay *= random.uniform(0.5, 1.0)
    return delay


def _status(exc: BaseException) -> int | None:
    for candidate in (exc, exc.__cause__):
        status = getattr(candidate, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def is_retryable(exc: BaseException) -> bool:
    """Whether ``exc`` is transient: a timeout, a dropped connection, a busy store or
    compaction lock, a provider error with status 408/409/425/429/5xx, or a model error
    without a status (not an unusable response). Cancellation never is."""
    if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
        return False
    if isinstance(exc, TimeoutError | ConnectionError | StoreBusyError | CompactionLockedError):
        return True
    status = _status(exc)
    if status is not None:
        return status in _RETRYABLE_STATUS
    return isinstance(exc, LLMError) and not isinstance(exc, LLMResponseError)


async def call_with_retry(
    call: Callable[[], Awaitable[T]],
    cfg: RetryConfig,
    *,
    abort: asyncio.Event | None = None,
    logger: Any = None,
    on_retry: Callable[[int, float, Exception], None] | None = None,
) -> T:
    """``await call()``, retried up to ``cfg.max_retries`` times while it raises a
    retryable error (see :func:`is_retryable`), waiting :func:`backoff_delay` between
    attempts. ``on_retry(attempt, delay, error)`` runs before each wait (``attempt`` is
    the retry about to happen, 1 for the first); ``logger`` (``logging`` or structlog)
    gets a warning per retry. Setting ``abort`` stops the waiting: the last error is
    raised. A non-retryable error is raised unchanged at once; so is a retryable one
    when ``max_retries`` is 0. After the last retry fails,
    :class:`~mnesis.errors.RetriesExhaustedError` is raised from the last error."""
    log = logger if logger is not None else _LOGGER
    retries = 0
    while True:
        try:
            return await call()
        except Exception as exc:
            if not is_retryable(exc) or cfg.max_retries == 0:
                raise
            if retries >= cfg.max_retries:
                raise RetriesExhaustedError(retries + 1, exc) from exc
            retries += 1
            delay = backoff_delay(cfg, retries)
            if on_retry is not None:
                on_retry(retries, delay, exc)
            log.warning(
                "retry %d/%d in %.2fs after %s: %s",
                retries,
                cfg.max_retries,
                delay,
                type(exc).__name__,
                exc,
            )
            if await _aborted_during(delay, abort):
                raise


async def _aborted_during(delay: float, abort: asyncio.Event | None) -> bool:
    """Sleep ``delay`` seconds; True (at once) if ``abort`` is or becomes set."""
    if abort is None:
        await asyncio.sleep(delay)
        return False
    if abort.is_set():
        return True
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(delay):
            await abort.wait()
    return abort.is_set()
