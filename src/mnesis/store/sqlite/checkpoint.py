"""WAL checkpoints off the commit path.

By default SQLite checkpoints inside the commit that takes the WAL past 1,000 pages,
so every few hundred turns one ``record()`` pays for copying the whole WAL into the
database file and syncing it. mnesis turns that off on its connection
(``PRAGMA wal_autocheckpoint = 0``) and checkpoints in two steps:

1. Every :data:`CHECKPOINT_EVERY_COMMITS` commits, a daemon thread runs
   ``PRAGMA wal_checkpoint(PASSIVE)`` on a connection of its own. A passive checkpoint
   never blocks writers: commits keep appending to the WAL while it copies.
2. The first commit after it finished runs one more passive checkpoint on the
   writer's connection, which only copies the few frames committed meanwhile. The WAL
   is then fully copied, so the next write starts it over: its size stays bounded, as
   with SQLite's own checkpoints, without one commit paying for all of it.

Before each background checkpoint the same thread does one step of the full-text
index's merge when one is due (``fts_merge.py``).
"""

from __future__ import annotations

import logging
import sqlite3
import threading

from mnesis.store.sqlite.fts_merge import MergeState, merge_step

__all__ = ["CHECKPOINT_EVERY_COMMITS", "WalCheckpointer"]

logger = logging.getLogger("mnesis.store")

CHECKPOINT_EVERY_COMMITS = 64
"""Commits between two checkpoints (a turn writes some 10-20 pages: about the 1,000
pages of SQLite's default)."""


class WalCheckpointer:
    """One database file's checkpoints (the background thread starts on first use)."""

    def __init__(self, path: str, busy_timeout_ms: int) -> None:
        self.path = path
        self.checkpoints = 0
        """Background checkpoints run so far (for tests and benchmarks)."""
        self._busy_timeout_ms = busy_timeout_ms
        self._commits = 0
        self._running = False
        self._wake = threading.Event()
        self._finished = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.fts_merge = MergeState()
        """The full-text index's merge, stepped after each background checkpoint."""

    def after_commit(self, conn: sqlite3.Connection) -> None:
        """Called on the writer's thread after each commit on ``conn``."""
        if self._finished.is_set():
            self._finished.clear()
            self._running = False
            self._commits = 0
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            except sqlite3.Error:
                logger.debug("catch-up checkpoint of %s failed", self.path, exc_info=True)
            return
        self._commits += 1
        if self._commits >= CHECKPOINT_EVERY_COMMITS and not self._running:
            self._running = True
            self._request()

    def _request(self) -> None:
        with self._lock:
            if self._stop:
                return
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="mnesis-sqlite-checkpoint", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        """Finish the checkpoint under way (if any) and end the thread."""
        with self._lock:
            self._stop = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join()

    def _merge(self, conn: sqlite3.Connection) -> None:
        # Before the checkpoint, so the checkpoint copies the merge's pages too.
        try:
            merge_step(conn, self.fts_merge)
        except sqlite3.Error:
            logger.warning("full-text index merge of %s failed", self.path, exc_info=True)

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stop:
                    return
                try:
                    if conn is None:
                        conn = sqlite3.connect(self.path, isolation_level=None)
                        conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
                    self._merge(conn)
                    row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    self.checkpoints += 1
                    logger.debug("checkpointed %s (busy, frames, copied: %s)", self.path, row)
                except sqlite3.Error:
                    # Not fatal: the catch-up step, the next checkpoint or the last
                    # connection's close folds the WAL in.
                    logger.warning("WAL checkpoint of %s failed", self.path, exc_info=True)
                self._finished.set()
        finally:
            if conn is not None:
                conn.close()
