"""The cost guard: after repeated model failures, stop calling the model for a while."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["CircuitBreaker"]

logger = logging.getLogger("mnesis.compaction")


class CircuitBreaker:
    """Opens after ``max_failures`` consecutive failures, for ``cooldown_seconds``.

    While open, :meth:`available` is False and the compaction ladder skips its
    model rungs (Level 3 only). A success resets the count.
    """

    def __init__(
        self,
        max_failures: int,
        cooldown_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.cooldown_seconds = cooldown_seconds
        self._clock = clock
        self._failures = 0
        self._open_until = 0.0

    def available(self) -> bool:
        """True unless the breaker is open."""
        return self._clock() >= self._open_until

    def seconds_left(self) -> float:
        """Seconds until the breaker closes again (0 while it is closed)."""
        return max(0.0, self._open_until - self._clock())

    def record(self, ok: bool) -> None:
        """Count one model outcome; the ``max_failures``-th failure in a row opens the breaker."""
        if ok:
            self._failures = 0
            return
        self._failures += 1
        if self._failures >= self.max_failures:
            self._open_until = self._clock() + self.cooldown_seconds
            self._failures = 0
            logger.warning(
                "compaction model failed %d times in a row; using level 3 only for %.0fs",
                self.max_failures,
                self.cooldown_seconds,
            )
