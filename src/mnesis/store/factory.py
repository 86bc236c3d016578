"""The one place a path or URL picks a store backend.

* ``postgresql://…`` or ``postgres://…`` → PostgreSQL (extra ``mnesis-lcm[postgres]``);
* ``sqlite:///relative.db``, ``sqlite:////absolute.db`` and ``sqlite:///:memory:`` →
  SQLite (SQLAlchemy's spelling: the path is everything after the third slash);
* a plain path (or ``:memory:``) → SQLite;
* anything else that starts like a URL (a scheme of two or more letters and a colon:
  ``mysql://…``, ``http://…``, the typo ``sqlite:/x``) → :class:`~mnesis.errors.MnesisConfigError`,
  raised before any file or connection is made. A relative file name with such a
  prefix (``notes:v2.db``) is written ``./notes:v2.db``.

:func:`resolve_location` reads a :class:`~mnesis.config.StoreConfig` (``database_url``,
which ``LCM_DATABASE_URL`` sets, wins over ``db_path``); :func:`open_database` and
:func:`new_backend` build the backend's shared database handle and a store over it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, cast
from urllib.parse import urlsplit, urlunsplit

from mnesis.config import StoreConfig
from mnesis.errors import MissingDependencyError, MnesisConfigError
from mnesis.store.base import StoreBackend
from mnesis.store.sqlite import SQLiteDatabase, SQLiteStore

if TYPE_CHECKING:
    from mnesis.store.pool import StorePool

__all__ = [
    "BackendName",
    "DatabaseHandle",
    "PooledStore",
    "StoreLocation",
    "new_backend",
    "open_backend",
    "open_database",
    "parse_location",
    "resolve_location",
]

BackendName = Literal["sqlite", "postgres"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):")
_POSTGRES_SCHEMES = ("postgresql", "postgres")
_SQLITE_PREFIX = "sqlite:///"


class DatabaseHandle(Protocol):
    """What the pool shares between the stores of one database (one per path or URL)."""

    async def open(self) -> None:
        """Connect (and migrate) now; raises a typed store error if it cannot."""

    async def close(self) -> None:
        """Release every connection (idempotent)."""


class PooledStore(Protocol):
    """What a backend store built by :func:`new_backend` gives its pool back on close."""

    @property
    def pool_key(self) -> str:
        """The key of its database in the pool."""

    @property
    def db(self) -> DatabaseHandle:
        """Its database handle."""


@dataclass(frozen=True, slots=True)
class StoreLocation:
    """A parsed store location: which backend, and the path or URL it opens."""

    backend: BackendName
    target: str
    """The SQLite file path (as given, or ``:memory:``) or the PostgreSQL URL."""

    @property
    def key(self) -> str:
        """The pool key: the real path of a file, the URL (scheme normalised) of a server."""
        if self.backend == "postgres":
            return "postgresql" + self.target[self.target.index(":") :]
        if self.target == ":memory:":
            return self.target
        return os.path.realpath(os.path.expanduser(self.target))

    def describe(self) -> str:
        """The location for messages: a URL never shows its password."""
        if self.backend == "sqlite":
            return self.target
        parts = urlsplit(self.target)
        if parts.password is None:
            return self.target
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urlunsplit(parts._replace(netloc=netloc))


def parse_location(value: str, *, key: str = "store.database_url") -> StoreLocation:
    """Classify a path or URL; ``key`` names the setting in the error message."""
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise MnesisConfigError(key, value, "must be a non-empty path or URL without NUL bytes")
    match = _SCHEME.match(value)
    if match is None:
        return StoreLocation("sqlite", value)
    scheme = match.group(1).lower()
    if scheme in _POSTGRES_SCHEMES and value[len(scheme) + 1 :].startswith("//"):
        return StoreLocation("postgres", value)
    if value.lower().startswith(_SQLITE_PREFIX):
        path = value[len(_SQLITE_PREFIX) :]
        if not path:
            raise MnesisConfigError(key, value, "a sqlite:/// URL needs a path after the slashes")
        return StoreLocation("sqlite", path)
    raise MnesisConfigError(
        key,
        value,
        f"unsupported store location (scheme {scheme!r}); use a file path, "
        "sqlite:///path or postgresql://user@host/database",
    )


def resolve_location(config: StoreConfig | None, db_path: str | None = None) -> StoreLocation:
    """The location a store opens: ``db_path`` if given, else ``config.database_url``,
    else ``config.db_path``."""
    cfg = config or StoreConfig()
    if db_path is not None:
        return parse_location(db_path, key="db_path")
    if cfg.database_url:
        return parse_location(cfg.database_url, key="store.database_url")
    return parse_location(cfg.db_path, key="store.db_path")


def open_database(
    location: StoreLocation, config: StoreConfig | None, *, read_only: bool = False
) -> DatabaseHandle:
    """A new, not yet opened, database handle for ``location``. ``read_only`` (PostgreSQL;
    SQLite has :mod:`mnesis.store.sqlite.readonly`): never migrate, never write."""
    if location.backend == "sqlite":
        return SQLiteDatabase(location.target, config)
    database_class, _ = _postgres()
    return database_class(location.target, config or StoreConfig(), read_only=read_only)


def new_backend(
    location: StoreLocation, db: DatabaseHandle, *, pool: StorePool | None, pool_key: str
) -> StoreBackend:
    """A store over an opened handle (``pool`` None: closing the store closes ``db``)."""
    if location.backend == "sqlite":
        return SQLiteStore(cast(SQLiteDatabase, db), pool=pool, pool_key=pool_key)
    _, store_class = _postgres()
    return store_class(db, pool=pool, pool_key=pool_key)


async def open_backend(location: StoreLocation, config: StoreConfig | None) -> StoreBackend:
    """A store over a database handle of its own, opened (creating and migrating if
    needed); closing the store closes the handle."""
    db = open_database(location, config)
    try:
        await db.open()
    except BaseException:
        await db.close()
        raise
    return new_backend(location, db, pool=None, pool_key=location.key)


class _PostgresDatabase(Protocol):
    def __call__(self, url: str, config: StoreConfig, *, read_only: bool) -> DatabaseHandle: ...


_PostgresStore = Callable[..., StoreBackend]


def _postgres() -> tuple[_PostgresDatabase, _PostgresStore]:
    """The PostgreSQL backend, imported only when a PostgreSQL URL is used (optional extra)."""
    for driver in ("psycopg", "psycopg_pool"):
        if importlib.util.find_spec(driver) is None:
            raise MissingDependencyError("the PostgreSQL store backend", "postgres")
    module = importlib.import_module("mnesis.store.postgres")
    return (
        cast(_PostgresDatabase, module.PostgresDatabase),
        cast(_PostgresStore, module.PostgresStore),
    )
