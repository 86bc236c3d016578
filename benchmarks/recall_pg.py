"""PostgreSQL for ``bench_recall --aged --backend postgres``: the server, the database
of each size, and the server's CPU time.

The server is ``--dsn`` (or ``MNESIS_BENCH_PG_DSN``) when given, else a throwaway
:class:`benchmarks._pg.Cluster` for the run; with ``--keep DIR`` that cluster lives in
``DIR/pg-cluster`` and is started again (data kept) by a later run. Each size has its
own database, ``mnesis_aged_<turns>``: with ``--keep`` (and its question file there) a
later run reuses it, otherwise it is created afresh and dropped at the end. The server's CPU
time is read from ``/proc`` (the postmaster and its children) when the server runs
on this machine and its data directory is readable: ``grep``'s work on PostgreSQL is
mostly the server's, which the client's process time does not see.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from benchmarks._pg import Cluster, with_database

__all__ = ["ServerCpu", "aged_database", "drop_database", "pg_server", "vacuum_analyze"]


class ServerCpu:
    """CPU seconds used so far by a local server's processes (postmaster and children)."""

    def __init__(self, postmaster: int) -> None:
        self.postmaster = postmaster
        self.tick = os.sysconf("SC_CLK_TCK")

    def seconds(self) -> float:
        """User + system time of the postmaster and every process it started (those
        that exited too)."""
        total = 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # After the command: state, ppid, ..., utime (14th field), stime (15th),
            # then cutime and cstime: the postmaster's count its children that exited.
            if int(entry) == self.postmaster:
                total += sum(int(f) for f in fields[11:15])
            elif int(fields[1]) == self.postmaster:
                total += int(fields[11]) + int(fields[12])
        return total / self.tick


def _postmaster(dsn: str) -> int | None:
    """The local server's postmaster PID, when its data directory is readable."""
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("SHOW data_directory").fetchone()
        with open(os.path.join(str(row[0]) if row else "", "postmaster.pid")) as pid_file:
            return int(pid_file.readline())
    except (OSError, ValueError, psycopg.Error):
        return None


@contextmanager
def pg_server(dsn: str | None, keep: str | None = None) -> Iterator[tuple[str, ServerCpu | None]]:
    """The server to use (``dsn``, ``MNESIS_BENCH_PG_DSN`` or a cluster of our own:
    throwaway, or in ``keep/pg-cluster`` and kept when ``keep``) and a reader of its CPU
    time (None when the server is not local)."""
    given = dsn or os.environ.get("MNESIS_BENCH_PG_DSN")
    if given:
        pid = _postmaster(given)
        yield given, ServerCpu(pid) if pid is not None else None
        return
    cluster = Cluster(os.path.join(keep, "pg-cluster") if keep else None)
    try:
        started = cluster.start()
        with open(os.path.join(cluster.data, "postmaster.pid")) as pid_file:
            pid = int(pid_file.readline())
        yield started, ServerCpu(pid)
    finally:
        cluster.stop(remove=keep is None)


def aged_database(dsn: str, total: int, reuse: bool) -> tuple[str, bool]:
    """The URL of the ``total``-turn database and whether it already existed (kept
    when ``reuse``, else created afresh)."""
    name = f"mnesis_aged_{int(total)}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if exists and reuse:
            return with_database(dsn, name), True
        if exists:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8'")
    return with_database(dsn, name), False


def drop_database(dsn: str, url: str) -> None:
    """Drop the database ``url`` names (on the server of ``dsn``)."""
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def vacuum_analyze(url: str) -> float:
    """``VACUUM ANALYZE`` the database (as autovacuum would after a bulk load); seconds."""
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return time.perf_counter() - started
