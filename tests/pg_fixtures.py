"""PostgreSQL for the tests: one throwaway cluster per test session, one database per test.

``pg_dsn`` is the server: ``MNESIS_TEST_PG_DSN`` when set, otherwise a cluster started
here from the binaries under ``/usr/lib/postgresql/*/bin`` (Debian's layout) in a temp
directory, listening on a free loopback port and a unix socket in that directory, with
trust authentication and durability switched off (tests never need a crash-safe disk).
PostgreSQL refuses to run as root, so a root test process runs ``initdb``/``pg_ctl`` as
the ``postgres`` OS user (``runuser``), the directory owned by it. ``pytest-postgresql``
has no such option (its issues #341 and #455 were closed without one), hence this file.

When no server can be had the tests fail with the reason; they never skip.
``pg_url`` gives each test a fresh empty database (created from ``template0``, dropped
afterwards), so tests are independent.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

__all__ = ["pg_dsn", "pg_url"]

_FAST = ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]


def _bin_dir() -> str:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    if not found:
        pytest.fail(
            "PostgreSQL tests need a server: set MNESIS_TEST_PG_DSN, or install the "
            "PostgreSQL binaries (Debian package 'postgresql', /usr/lib/postgresql/*/bin)",
            pytrace=False,
        )
    return os.path.dirname(found[-1])


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Cluster:
    """A PostgreSQL cluster in a temp directory, run as a non-root user when needed."""

    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.root = tempfile.mkdtemp(prefix="mnesis-pg-")
        self.data = os.path.join(self.root, "data")
        self.port = _free_port()
        self.as_user: str | None = None
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                pytest.fail(
                    "running as root, PostgreSQL needs an unprivileged 'postgres' OS user "
                    "to own the test cluster (or set MNESIS_TEST_PG_DSN)",
                    pytrace=False,
                )
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
            self.as_user = "postgres"

    def _run(self, *args: str) -> None:
        cmd = [os.path.join(self.bin, args[0]), *args[1:]]
        if self.as_user is not None:
            cmd = ["runuser", "-u", self.as_user, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            log = os.path.join(self.root, "server.log")
            tail = open(log).read()[-2000:] if os.path.exists(log) else ""  # noqa: SIM115
            pytest.fail(
                f"could not start the test PostgreSQL ({' '.join(cmd)}): "
                f"{done.stderr.strip() or done.stdout.strip()}\n{tail}",
                pytrace=False,
            )

    def start(self) -> str:
        self._run("initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
                  "--locale=C", "--no-sync")  # fmt: skip
        options = " ".join(
            [*_FAST, "-c", "listen_addresses=127.0.0.1", "-c", f"port={self.port}",
             "-c", f"unix_socket_directories={self.root}", "-c", "max_connections=200"]
        )  # fmt: skip
        self._run("pg_ctl", "start", "-w", "-t", "60", "-D", self.data,
                  "-l", os.path.join(self.root, "server.log"), "-o", options)  # fmt: skip
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "stop", "-m", "immediate", "-D", self.data)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """The URL of a PostgreSQL server the tests may create databases on."""
    given = os.environ.get("MNESIS_TEST_PG_DSN")
    if given:
        yield given
        return
    cluster = _Cluster()
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _with_database(dsn: str, name: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path="/" + name))


@pytest.fixture
def pg_url(pg_dsn: str) -> Iterator[str]:
    """A fresh, empty database on the test server (dropped after the test)."""
    name = "mnesis_test_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8'")  # type: ignore[arg-type]
    try:
        yield _with_database(pg_dsn, name)
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]
