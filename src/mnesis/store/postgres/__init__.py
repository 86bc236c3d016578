"""The PostgreSQL backend (extra ``mnesis-lcm[postgres]``: psycopg 3 and psycopg_pool).

``PostgresDatabase(url, config)`` is one database (connection pool, migrations);
``PostgresStore(db, pool=..., pool_key=...)`` is a store on it. See ``docs/postgres.md``.
"""

from mnesis.store.postgres.db import PostgresDatabase
from mnesis.store.postgres.store import PostgresStore

__all__ = ["PostgresDatabase", "PostgresStore"]
