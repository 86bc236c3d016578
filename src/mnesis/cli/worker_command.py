"""``mnesis worker`` (run compaction and integrity jobs) and ``mnesis jobs`` (list them)."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from dataclasses import asdict
from typing import Annotated, Any

import typer

from mnesis.cli._common import (
    MAX_COUNT,
    DbOption,
    JsonOption,
    cli_errors,
    echo_json,
    resolve_config,
)
from mnesis.cli._common import stdout_console as console
from mnesis.errors import InvalidArgumentError, MissingDependencyError

__all__ = ["jobs_command", "worker_command"]


class _Formatter(logging.Formatter):
    """One line per record: JSON, or the message followed by ``key=value`` fields."""

    def __init__(self, as_json: bool) -> None:
        super().__init__()
        self.as_json = as_json

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = dict(getattr(record, "mnesis", {}) or {})
        if self.as_json:
            line = {
                "ts": self.formatTime(record),
                "level": record.levelname,
                "logger": record.name,
                "msg": record.getMessage(),
                **fields,
            }
            return json.dumps(line, default=str)
        pairs = " ".join(f"{k}={v}" for k, v in fields.items())
        return f"{self.formatTime(record)} {record.levelname} {record.getMessage()} {pairs}"


def _postgres_url(db: str | None) -> str:
    config, _ = resolve_config(db)
    if not config.store.database_url:
        raise InvalidArgumentError("workers need a PostgreSQL database: --db postgresql://...")
    return config.store.database_url


def worker_command(
    db: DbOption = None,
    concurrency: Annotated[int, typer.Option(min=1, max=MAX_COUNT, help="Jobs run at once.")] = 1,
    queues: Annotated[str, typer.Option(help="Comma-separated queues to take jobs from.")] = (
        "mnesis"
    ),
    metrics_port: Annotated[
        int | None,
        typer.Option(
            min=0, max=65535, help="Serve Prometheus /metrics on this port (extra metrics)."
        ),
    ] = None,
    stalled_after: Annotated[
        float, typer.Option(help="Seconds without heartbeat before a worker's jobs are retried.")
    ] = 30.0,
    max_attempts: Annotated[
        int, typer.Option(min=1, max=MAX_COUNT, help="Runs of a job before it fails.")
    ] = 5,
    log_format: Annotated[str, typer.Option(help="Log lines as 'text' or 'json'.")] = "text",
    setup_only: Annotated[
        bool, typer.Option("--setup-only", help="Install the queue schema and exit.")
    ] = False,
) -> None:
    """Run compaction and integrity jobs from the PostgreSQL database's queue until
    SIGTERM (running jobs finish first). Needs the `workers` extra."""
    with cli_errors():
        url = _postgres_url(db)
        try:
            from mnesis.workers import WorkerSettings, ensure_queue_schema, run_worker
        except ImportError as exc:
            raise MissingDependencyError("mnesis worker", "workers") from exc
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_Formatter(log_format == "json"))
        for name in ("mnesis", "procrastinate"):
            log = logging.getLogger(name)
            log.addHandler(handler)
            log.setLevel(logging.INFO if name == "mnesis" else logging.WARNING)
        if setup_only:
            installed = asyncio.run(ensure_queue_schema(url))
            typer.echo("queue schema installed" if installed else "queue schema present")
            return
        settings = WorkerSettings(
            url=url,
            concurrency=concurrency,
            queues=[q.strip() for q in queues.split(",") if q.strip()],
            metrics_port=metrics_port,
            stalled_after_seconds=stalled_after,
            stalled_check_seconds=max(1.0, stalled_after / 3),
            heartbeat_seconds=max(0.5, stalled_after / 6),
            max_attempts=max_attempts,
        )
        asyncio.run(run_worker(settings))


def jobs_command(
    db: DbOption = None,
    all_states: Annotated[
        bool, typer.Option("--all", help="Also succeeded, cancelled and aborted jobs.")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, max=MAX_COUNT, help="At most this many jobs.")] = 50,
    as_json: JsonOption = False,
) -> None:
    """List the queue's jobs: queued, running and failed, with attempts and last error."""
    with cli_errors():
        url = _postgres_url(db)
        try:
            from mnesis.workers import list_jobs
        except ImportError as exc:
            raise MissingDependencyError("mnesis jobs", "workers") from exc
        statuses: tuple[str, ...] = ("todo", "doing", "failed")
        if all_states:
            statuses += ("succeeded", "cancelled", "aborted")
        rows = asyncio.run(list_jobs(url, statuses, limit))
    if as_json:
        echo_json([asdict(r) for r in rows])
        return
    from rich.table import Table

    table = Table("id", "task", "status", "session", "attempts", "last error")
    for r in rows:
        table.add_row(
            str(r.id),
            r.task,
            r.status,
            r.session_id or "-",
            str(r.attempts),
            (r.last_error or "")[:80],
        )
    console().print(table if rows else "no jobs")
