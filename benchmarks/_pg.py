"""A throwaway PostgreSQL cluster for the tests and the benchmarks.

:class:`Cluster` runs ``initdb``/``pg_ctl`` from the binaries under
``/usr/lib/postgresql/*/bin`` (Debian's layout) in a temp directory, listening on a free
loopback port and a unix socket in that directory, with trust authentication and
durability switched off; ``Cluster(root)`` keeps its data in ``root`` instead, reused by
the next ``Cluster(root)`` (``stop(remove=False)``). PostgreSQL refuses to run as root,
so a root process runs them as the ``postgres`` OS user (``runuser``), the directory
owned by it. Failures raise
:class:`ClusterError` with the reason (the tests turn it into a failure, never a skip).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from urllib.parse import urlsplit, urlunsplit

__all__ = ["Cluster", "ClusterError", "with_database"]


class ClusterError(RuntimeError):
    """The throwaway cluster could not be started (the message says why)."""


def with_database(dsn: str, name: str) -> str:
    """``dsn`` pointing at database ``name``."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path="/" + name))


_FAST = ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]


def _bin_dir() -> str:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    if not found:
        raise ClusterError(
            "PostgreSQL needs a server: set MNESIS_TEST_PG_DSN, or install the "
            "PostgreSQL binaries (Debian package 'postgresql', /usr/lib/postgresql/*/bin)"
        )
    return os.path.dirname(found[-1])


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A PostgreSQL cluster in a temp directory, run as a non-root user when needed.

    ``root`` is a directory to keep the cluster in (made if missing, reused if it holds
    one); without it the cluster lives in a new temp directory made in ``parent`` (the
    system's temp directory by default; the tests put theirs in memory, ``/dev/shm``)."""

    def __init__(self, root: str | None = None, *, parent: str | None = None) -> None:
        self.bin = _bin_dir()
        if root is None:
            self.root = tempfile.mkdtemp(prefix="mnesis-pg-", dir=parent)
        else:
            os.makedirs(root, mode=0o700, exist_ok=True)
            self.root = root
        self.data = os.path.join(self.root, "data")
        self.port = _free_port()
        self.as_user: str | None = None
        self._options = ""
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise ClusterError(
                    "running as root, PostgreSQL needs an unprivileged 'postgres' OS user "
                    "to own the throwaway cluster (or set MNESIS_TEST_PG_DSN)"
                ) from None
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
            raise ClusterError(
                f"could not start the throwaway PostgreSQL ({' '.join(cmd)}): "
                f"{done.stderr.strip() or done.stdout.strip()}\n{tail}"
            )

    def start(self) -> str:
        """Start the server (``initdb`` first unless its data directory holds a cluster);
        its URL."""
        if not os.path.exists(os.path.join(self.data, "PG_VERSION")):
            self._run("initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
                      "--locale=C", "--no-sync")  # fmt: skip
        options = " ".join(
            [*_FAST, "-c", "listen_addresses=127.0.0.1", "-c", f"port={self.port}",
             "-c", f"unix_socket_directories={self.root}", "-c", "max_connections=200"]
        )  # fmt: skip
        self._options = options
        self._run("pg_ctl", "start", "-w", "-t", "60", "-D", self.data,
                  "-l", os.path.join(self.root, "server.log"), "-o", options)  # fmt: skip
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def restart(self, mode: str = "immediate") -> None:
        """``pg_ctl restart -m MODE`` (``immediate``: as a crash, no shutdown checkpoint),
        waiting until the server accepts connections again."""
        self._run("pg_ctl", "restart", "-w", "-t", "60", "-m", mode, "-D", self.data,
                  "-l", os.path.join(self.root, "server.log"), "-o", self._options)  # fmt: skip

    def halt(self) -> None:
        """Stop the server as a crash would (``-m immediate``), keeping its data."""
        self._run("pg_ctl", "stop", "-m", "immediate", "-D", self.data)

    def resume(self) -> None:
        """Start a halted server again."""
        self._run("pg_ctl", "start", "-w", "-t", "60", "-D", self.data,
                  "-l", os.path.join(self.root, "server.log"), "-o", self._options)  # fmt: skip

    def stop(self, remove: bool = True) -> None:
        """Stop the server (``-m immediate`` when its data is removed, else ``fast``: a
        kept cluster starts again without recovery) and remove its directory."""
        try:
            self._run("pg_ctl", "stop", "-m", "immediate" if remove else "fast", "-D", self.data)
        finally:
            if remove:
                shutil.rmtree(self.root, ignore_errors=True)
