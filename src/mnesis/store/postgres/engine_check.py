"""PostgreSQL's own consistency checks, as far as an ordinary role may run them.

Always: every index of the store's tables is valid (a failed ``CREATE INDEX
CONCURRENTLY`` leaves one that is not), and the server has counted no data-page
checksum failure in this database (only where the cluster has data checksums).
Where the ``amcheck`` extension is installed and this role may execute it:
``bt_index_check`` on every B-tree index (``heapallindexed`` when ``full``) and, when
``full``, ``verify_heapam`` on every table. Installing ``amcheck`` takes a superuser,
so it is never installed here; a check that cannot run is reported as unavailable,
with the reason, never as passed.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from mnesis.store.postgres.db import Conn
from mnesis.store.postgres.rows import fetch, fetch_one
from mnesis.store.records import EngineCheck

__all__ = ["run_engine_check"]

_INDEXES = (
    "SELECT ic.oid::regclass::text, t.oid::regclass::text, i.indisvalid AND i.indisready, "
    "am.amname FROM pg_index i "
    "JOIN pg_class ic ON ic.oid = i.indexrelid "
    "JOIN pg_class t ON t.oid = i.indrelid "
    "JOIN pg_am am ON am.oid = ic.relam "
    "WHERE t.relnamespace = current_schema()::regnamespace AND t.relname = ANY(%s) "
    "ORDER BY 1"
)
_AMCHECK = (
    "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
    "WHERE e.extname = 'amcheck'"
)
_NOT_INSTALLED = (
    "amcheck (the extension is not installed in this database; a superuser can "
    "CREATE EXTENSION amcheck)"
)


async def run_engine_check(conn: Conn, tables: Sequence[str], *, full: bool) -> EngineCheck:
    """Run every check this role may run on ``tables`` (autocommit ``conn``)."""
    check = EngineCheck()
    indexes = await fetch(conn, _INDEXES, (list(tables),))
    check.ran.append("index validity")
    check.problems += [
        f"index {name} on {table} is not valid" for name, table, ok, _ in indexes if not ok
    ]
    await _checksum_failures(conn, check)
    schema = await _amcheck_schema(conn, check)
    if schema is not None:
        btrees = [name for name, _, ok, method in indexes if ok and method == "btree"]
        await _bt_index_check(conn, schema, btrees, full, check)
        if full:
            tables_of = sorted({table for _, table, _, _ in indexes})
            await _verify_heapam(conn, schema, tables_of, check)
    return check


async def _checksum_failures(conn: Conn, check: EngineCheck) -> None:
    row = await fetch_one(conn, "SELECT current_setting('data_checksums')")
    if row is None or row[0] != "on":
        check.unavailable.append(
            "page checksums (the cluster was initialised without data checksums)"
        )
        return
    row = await fetch_one(
        conn,
        "SELECT checksum_failures, checksum_last_failure FROM pg_stat_database "
        "WHERE datname = current_database()",
    )
    check.ran.append("page checksum failures")
    if row is not None and row[0]:
        check.problems.append(
            f"the server counted {row[0]} data page checksum failure(s) in this database "
            f"(the last at {row[1]})"
        )


async def _amcheck_schema(conn: Conn, check: EngineCheck) -> str | None:
    """The schema of an installed ``amcheck`` this role may execute, else None."""
    row = await fetch_one(conn, _AMCHECK)
    if row is None:
        check.unavailable.append(_NOT_INSTALLED)
        return None
    schema = str(row[0])
    allowed = await fetch_one(
        conn,
        "SELECT has_function_privilege("
        "format('%%I.bt_index_check(regclass, boolean)', %s::text), 'EXECUTE')",
        (schema,),
    )
    if allowed is None or not allowed[0]:
        check.unavailable.append(
            "amcheck (this role may not execute bt_index_check; a superuser can GRANT it)"
        )
        return None
    return schema


async def _bt_index_check(
    conn: Conn, schema: str, indexes: Sequence[str], full: bool, check: EngineCheck
) -> None:
    for index in indexes:
        try:
            await conn.execute(
                f"SELECT {_ident(schema)}.bt_index_check(%s::regclass, %s)",
                (index, full),
            )
        except psycopg.DatabaseError as exc:
            check.problems.append(f"index {index}: {_first_line(exc)}")
    check.ran.append(
        f"amcheck bt_index_check{' heapallindexed' if full else ''} ({len(indexes)} indexes)"
    )


async def _verify_heapam(
    conn: Conn, schema: str, tables: Sequence[str], check: EngineCheck
) -> None:
    usable = await fetch_one(
        conn,
        "SELECT p IS NOT NULL AND has_function_privilege(p, 'EXECUTE') FROM to_regprocedure("
        "format('%%I.verify_heapam(regclass, boolean, boolean, text, bigint, bigint)', "
        "%s::text)) p",
        (schema,),
    )
    if usable is None or not usable[0]:
        check.unavailable.append(
            "amcheck verify_heapam (needs amcheck 1.3 on PostgreSQL 14+, executable by this role)"
        )
        return
    for table in tables:
        try:
            rows = await fetch(
                conn,
                f"SELECT blkno, offnum, msg FROM {_ident(schema)}.verify_heapam(%s::regclass)",
                (table,),
            )
        except psycopg.DatabaseError as exc:
            check.problems.append(f"table {table}: {_first_line(exc)}")
            continue
        check.problems += [f"table {table} block {b} item {o}: {msg}" for b, o, msg in rows]
    check.ran.append(f"amcheck verify_heapam ({len(tables)} tables)")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
