"""``mnesis check``: run the integrity checker on a database; repair only when asked.

The command is a thin adapter: it calls :class:`~mnesis.integrity.IntegrityChecker`,
:func:`~mnesis.integrity.plan_repairs` and :func:`~mnesis.integrity.apply_repairs`
exactly as a program would, and prints what they return. It never writes unless
``--repair`` is given; a repair first writes a backup of the whole database (a copy
of a SQLite file; for PostgreSQL a JSON-lines dump of every table, read in one
snapshot, to ``<database>.before-repair-<time>.jsonl`` unless ``--backup`` names a file).
The database engine's own check runs first (SQLite ``PRAGMA quick_check``; PostgreSQL:
index validity, page-checksum failures and, where installed and granted, ``amcheck``);
``--deep`` makes it the thorough variant and decodes every stored row, reporting damage
as violations. An engine check that cannot run here is printed as not available.

Exit codes: 0 when no violation is found (with ``--repair``: none is left after the
repair), 1 when violations are found (or remain), 1 with a one-line message for a
mnesis error, 2 for a usage error.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlsplit

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from mnesis.cli._common import (
    DbOption,
    JsonOption,
    abbreviate,
    checked_database,
    echo_json,
    fail,
    stdout_console,
)
from mnesis.config import MnesisConfig
from mnesis.integrity import (
    IntegrityChecker,
    IntegrityReport,
    RepairOutcome,
    RepairPlan,
    Violation,
    apply_repairs,
    plan_repairs,
)
from mnesis.store.factory import parse_location
from mnesis.store.immutable import ImmutableStore
from mnesis.store.lease import LeaseRow, lease_started_at, owner_is_dead
from mnesis.store.pool import StorePool
from mnesis.store.readonly import open_read_only

__all__ = ["check_command", "default_backup_path"]


@dataclass(slots=True)
class _CheckRun:
    report: IntegrityReport
    plan: RepairPlan | None = None
    outcome: RepairOutcome | None = None
    after: IntegrityReport | None = None
    """The same check run again after the repair."""
    leases: list[LeaseRow] | None = None
    """The compaction leases found (none on PostgreSQL: its lock is not a row)."""

    @property
    def final(self) -> IntegrityReport:
        return self.after if self.after is not None else self.report


def default_backup_path(db_path: str) -> str:
    """Where ``--repair`` backs up by default, never an existing file.

    A SQLite file: ``<db>.before-repair-<UTC time>.db`` next to it (a copy of the file).
    A PostgreSQL URL: ``<database>.before-repair-<UTC time>.jsonl`` in the current
    directory (the store's JSON-lines dump of every table, read in one snapshot; see
    ``docs/postgres.md``)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    location = parse_location(db_path, key="--db")
    if location.backend == "postgres":
        database = urlsplit(location.target).path.strip("/") or "mnesis"
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in database)
        base, ext = os.path.abspath(f"{safe}.before-repair-{stamp}"), ".jsonl"
    else:
        base = f"{os.path.abspath(os.path.expanduser(location.target))}.before-repair-{stamp}"
        ext = ".db"
    candidate, n = f"{base}{ext}", 1
    while os.path.exists(candidate):
        n += 1
        candidate = f"{base}-{n}{ext}"
    return candidate


def _shown(path: str) -> str:
    """The database for output: a file's absolute path, a URL without its password."""
    location = parse_location(path, key="--db")
    if location.backend == "postgres":
        return location.describe()
    return os.path.abspath(os.path.expanduser(location.target))


async def _check(
    config: MnesisConfig,
    session_id: str | None,
    *,
    tokens: bool,
    deep: bool,
    plan: bool,
    repair: bool,
    backup_path: str,
) -> _CheckRun:
    # Only a repair writes: a check opens the database read-only (no migration either).
    if not repair:
        store = await open_read_only(config.store)
        try:
            return await _check_store(store, session_id, tokens=tokens, deep=deep, plan=plan)
        finally:
            await store.close()
    pool = StorePool()
    try:
        store = await pool.acquire(config.store)
        run = await _check_store(store, session_id, tokens=tokens, deep=deep, plan=True)
        if run.plan is not None and run.plan.actions:
            checker = IntegrityChecker(store, check_tokens=tokens, engine_check=True, deep=deep)
            run.outcome = await apply_repairs(store, run.plan, backup_path=backup_path)
            run.after = await checker.run(session_id)
        return run
    finally:
        await pool.close_all()


async def _check_store(
    store: ImmutableStore, session_id: str | None, *, tokens: bool, deep: bool, plan: bool
) -> _CheckRun:
    checker = IntegrityChecker(store, check_tokens=tokens, engine_check=True, deep=deep)
    run = _CheckRun(await checker.run(session_id))
    run.leases = [
        lease
        for lease in await store.compaction_leases()
        if session_id is None or lease.session_id == session_id
    ]
    if plan:
        run.plan = plan_repairs(run.report)
    return run


def check_command(
    db: DbOption = None,
    session_id: Annotated[
        str | None,
        typer.Option(
            "--session", metavar="SESSION_ID", help="Check one session (default: all of them)."
        ),
    ] = None,
    as_json: JsonOption = False,
    tokens: Annotated[
        bool,
        typer.Option(
            "--tokens", help="Also re-estimate every message and flag stored token estimates."
        ),
    ] = False,
    deep: Annotated[
        bool,
        typer.Option(
            "--deep",
            help="Run the engine's thorough check (SQLite integrity_check; amcheck "
            "heapallindexed on PostgreSQL) and decode every stored row (slower).",
        ),
    ] = False,
    plan: Annotated[
        bool, typer.Option("--plan", help="Print the repair plan (writes nothing).")
    ] = False,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair", help="Back the database up, apply the repair plan and check again."
        ),
    ] = False,
    backup: Annotated[
        str | None,
        typer.Option(
            "--backup",
            metavar="PATH",
            help="Where --repair writes its backup (default: next to the database).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Check the database file, lineage, the context view and file references of every
    session (or one).

    Exits 0 when the store is whole and 1 when violations are found. Nothing is written
    unless --repair is given.
    """
    if backup is not None and not repair:
        raise typer.BadParameter("only makes sense with --repair", param_hint="'--backup'")
    if backup is not None and (not backup.strip() or os.path.exists(backup)):
        fail(f"backup path {backup!r} is empty or already exists; name a new file")
    if backup is not None and "://" in backup:
        fail(f"backup path {backup!r} is a URL, not a file; name a new file")
    with checked_database(db, must_exist=True) as (config, path):
        backup_path = backup if backup is not None else default_backup_path(path)
        run = asyncio.run(
            _check(
                config,
                session_id,
                tokens=tokens,
                deep=deep,
                plan=plan,
                repair=repair,
                backup_path=backup_path,
            )
        )
    if as_json:
        echo_json(_run_json(path, session_id, tokens, run))
    else:
        _print_run(path, run)
    if not run.final.ok:
        raise typer.Exit(1)


# -- output -----------------------------------------------------------------------
def _report_json(report: IntegrityReport) -> dict[str, Any]:
    return {
        "ok": report.ok,
        "sessions_checked": report.sessions_checked,
        "messages_checked": report.messages_checked,
        "elapsed_ms": round(report.elapsed_ms, 3),
        "sessions_per_second": round(report.sessions_per_second, 1),
        "by_kind": report.by_kind(),
        "violations": [v.model_dump(mode="json") for v in report.violations],
        "engine_checks": report.engine_checks,
        "engine_checks_unavailable": report.engine_checks_unavailable,
    }


def _run_json(path: str, session_id: str | None, tokens: bool, run: _CheckRun) -> dict[str, Any]:
    data: dict[str, Any] = {
        "database": _shown(path),
        "session_id": session_id,
        "check_tokens": tokens,
        **_report_json(run.report),
    }
    data["compaction_leases"] = [_lease_json(lease) for lease in run.leases or []]
    if run.plan is not None:
        data["plan"] = run.plan.model_dump(mode="json")
    if run.outcome is not None and run.after is not None:
        data["repair"] = {
            "backup_path": run.outcome.backup_path,
            "applied": run.outcome.applied,
            "after": _report_json(run.after),
        }
    return data


def _lease_json(lease: LeaseRow) -> dict[str, Any]:
    now = time.time()
    started = lease_started_at(lease.owner)
    return {
        "session_id": lease.session_id,
        "holder": lease.owner,
        "age_seconds": None if started is None else round(now - started, 1),
        "expires_in_seconds": round(lease.expires_at_ms / 1000 - now, 1),
        "holder_gone": owner_is_dead(lease.owner),
    }


def _lease_line(lease: LeaseRow) -> str:
    shown = _lease_json(lease)
    age = shown["age_seconds"]
    expires = shown["expires_in_seconds"]
    line = (
        f"compaction lease on session {lease.session_id}: held by {escape(lease.owner)}"
        f"{'' if age is None else f' for {age:,.0f} s'}, "
        + (f"expires in {expires:,.0f} s" if expires > 0 else "expired")
    )
    return line + (
        " [yellow](its process is gone: the next compaction takes it over)[/]"
        if shown["holder_gone"]
        else ""
    )


def _summary_line(path: str, report: IntegrityReport) -> str:
    sessions = report.sessions_checked
    return (
        f"Checked {sessions:,} session{'' if sessions == 1 else 's'} "
        f"({report.messages_checked:,} messages) "
        f"of {escape(parse_location(path, key='--db').describe())} "
        f"in {report.elapsed_ms:,.0f} ms: "
        f"{report.sessions_per_second:,.0f} sessions/s"
    )


def _violations_table(report: IntegrityReport, title: str) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("kind", no_wrap=True)
    table.add_column("count", justify="right")
    table.add_column("sessions", justify="right")
    table.add_column("repairable", justify="center")
    table.add_column("example", overflow="fold", min_width=20)
    first: dict[str, Violation] = {}
    sessions: dict[str, set[str]] = {}
    for v in report.violations:
        first.setdefault(v.kind.value, v)
        sessions.setdefault(v.kind.value, set()).add(v.session_id)
    for kind, count in sorted(report.by_kind().items(), key=lambda kv: (-kv[1], kv[0])):
        example = first[kind]
        table.add_row(
            f"[red]{kind}[/]",
            f"{count:,}",
            f"{len(sessions[kind]):,}",
            "yes" if example.repairable else "[yellow]no[/]",
            escape(abbreviate(f"{example.object_id}: {example.detail}", 200)),
        )
    return table


def _print_report(path: str, report: IntegrityReport, *, title: str) -> None:
    console = stdout_console()
    console.print(_summary_line(path, report))
    if report.engine_checks:
        console.print(f"Engine checks run: {escape(', '.join(report.engine_checks))}")
    for item in report.engine_checks_unavailable:
        console.print(f"[yellow]engine check not available:[/] {escape(item)}")
    if report.ok:
        console.print("[green]✓ no violations[/]")
        return
    n = len(report.violations)
    console.print(_violations_table(report, f"{title}: {n:,} violation{'s' if n != 1 else ''}"))


def _print_run(path: str, run: _CheckRun) -> None:
    console = stdout_console()
    _print_report(path, run.report, title="Violations by kind")
    for lease in run.leases or []:
        console.print(_lease_line(lease))
    if run.plan is not None and not run.report.ok:
        table = Table(
            title="Repair plan", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
        )
        table.add_column("#", justify="right")
        table.add_column("action", no_wrap=True)
        table.add_column("target", overflow="fold", min_width=12)
        table.add_column("reason", overflow="fold", min_width=20)
        for index, action in enumerate(run.plan.actions, 1):
            table.add_row(str(index), action.action, action.target_id, escape(action.reason))
        if run.plan.actions:
            console.print(table)
        else:
            console.print("No repair action applies.")
        for item in run.plan.unrepairable:
            console.print(f"[yellow]cannot be repaired automatically:[/] {escape(item)}")
    if run.outcome is not None and run.after is not None:
        console.print(f"Backup written to {escape(run.outcome.backup_path)}")
        applied = run.outcome.applied
        console.print(
            f"Applied {applied} repair action{'' if applied == 1 else 's'}; checking again:"
        )
        _print_report(path, run.after, title="Left after the repair")
    elif run.plan is not None and run.plan.actions:
        console.print("Nothing was changed; run with --repair to apply the plan.")
