"""``mnesis purge``: remove one session's rows for good (a privacy request).

The only path that deletes history: it needs ``--yes``, removes the session and its
sub-agent sessions in one transaction, logs what it removed, and leaves every other
session untouched (the append-only guard is lifted only inside that transaction).
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from mnesis.cli._common import DbOption, JsonOption, echo_json, fail, stdout_console
from mnesis.cli._store import run_writable
from mnesis.config import MnesisConfig
from mnesis.store.base import PurgeReport
from mnesis.store.immutable import ImmutableStore

__all__ = ["purge_command"]

logger = logging.getLogger("mnesis.cli")


def purge_command(
    session_id: Annotated[str, typer.Argument(metavar="SESSION_ID", help="The session to remove.")],
    db: DbOption = None,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: this cannot be undone.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Delete a session, its sub-agent sessions and everything stored for them
    (messages, parts, summaries, context, search index). Cannot be undone."""
    if not yes:
        fail(f"purging {session_id} deletes it for good; add --yes to confirm", 2)

    async def body(store: ImmutableStore, config: MnesisConfig) -> PurgeReport:
        return await store.purge_session(session_id)

    report, location = run_writable(db, body)
    logger.warning(
        "purged sessions %s from %s: %s", ", ".join(report.session_ids), location, report.rows
    )
    if as_json:
        echo_json({"session_ids": list(report.session_ids), "rows": report.rows})
        return
    removed = ", ".join(f"{n:,} {table}" for table, n in report.rows.items() if n)
    stdout_console().print(f"Purged {', '.join(report.session_ids)}: removed {removed}.")
