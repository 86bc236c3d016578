"""Which resumable map runs are executing in this process.

Invariant: **one live run per (store location, run_id) per process.** Two
concurrent executions of the same run in one process would claim the same
items of the same ``map_items`` rows; across processes the store's item states
already make a resume safe, so only this process needs guarding.

The registry is process-wide by nature (two :class:`~mnesis.store.StorePool`
objects may open the same file), and is owned by this module: the one
:data:`ACTIVE_RUNS` instance is what :class:`~mnesis.operators.AgenticMap`
consults. A lock makes the check-and-add atomic across threads running their own
event loops.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from mnesis.errors import InvalidArgumentError

__all__ = ["ACTIVE_RUNS", "ActiveRuns"]


class ActiveRuns:
    """The (location, run_id) pairs being executed in this process."""

    def __init__(self) -> None:
        self._keys: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def hold(self, location: str, run_id: str) -> Iterator[None]:
        """Mark the run live for the ``with`` block; raises
        :class:`~mnesis.errors.InvalidArgumentError` if it already is."""
        key = (location, run_id)
        with self._lock:
            if key in self._keys:
                raise InvalidArgumentError(
                    f"run {run_id!r} is already running in this process; "
                    "wait for it to finish before resuming it"
                )
            self._keys.add(key)
        try:
            yield
        finally:
            with self._lock:
                self._keys.discard(key)

    def is_active(self, location: str, run_id: str) -> bool:
        """Whether the run is live in this process."""
        with self._lock:
            return (location, run_id) in self._keys


ACTIVE_RUNS = ActiveRuns()
"""The registry of this process."""
