"""``mnesis compactions SESSION``: the loss ledger, what each compaction took out of the view."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from mnesis.cli._common import (
    DbOption,
    JsonOption,
    abbreviate,
    count_option,
    echo_json,
    format_time,
    stdout_console,
)
from mnesis.cli._store import run_read_only
from mnesis.compaction.ledger_read import LedgerRow, read_ledger
from mnesis.config import MnesisConfig
from mnesis.store.immutable import ImmutableStore

__all__ = ["compactions_command"]


def _row(row: LedgerRow, entities: int) -> dict[str, Any]:
    ledger = row.ledger
    return {
        "at": row.created_at,
        "kind": ledger.kind,
        "summary_id": row.summary_id,
        "level": row.level,
        "removed_messages": len(ledger.removed_message_ids),
        "removed_summaries": len(ledger.removed_summary_ids),
        "tokens_removed": ledger.tokens_removed,
        "tokens_added": ledger.tokens_added,
        "token_delta": ledger.token_delta,
        "entities_seen": ledger.entities_seen,
        "entities_kept": ledger.entities_kept,
        "dropped_total": ledger.dropped_total,
        "dropped": [e.model_dump() for e in ledger.dropped[:entities]],
        "removed_message_ids": ledger.removed_message_ids,
        "removed_summary_ids": ledger.removed_summary_ids,
    }


def compactions_command(
    session_id: Annotated[str, typer.Argument(metavar="SESSION_ID", help="The session.")],
    db: DbOption = None,
    as_json: JsonOption = False,
    entities: Annotated[
        int, count_option("--entities", "Dropped entities shown per compaction.", minimum=0)
    ] = 8,
) -> None:
    """List the session's compactions (summaries and tool-output prunes), oldest first:
    what each took out of the context view (messages or summaries, tokens) and the
    entities (paths, commands, identifiers, numbers, URLs, decisions) that left it, with
    the message or summary IDs that still hold each (`mnesis expand ID`)."""

    async def body(store: ImmutableStore, _config: MnesisConfig) -> dict[str, Any]:
        rows, without = await read_ledger(store, session_id)
        return {"rows": [_row(r, entities) for r in rows], "without_ledger": without}

    data, location = run_read_only(db, body)
    if as_json:
        echo_json({"database": location, "session_id": session_id, **data})
        return
    console = stdout_console()
    table = Table(
        title=f"{session_id} · {len(data['rows'])} compactions · {location}",
        title_justify="left",
        box=box.SIMPLE,
    )
    for name in ("#", "when", "kind", "out of view", "tokens", "dropped"):
        table.add_column(name, no_wrap=True)
    for number, row in enumerate(data["rows"], 1):
        out = (
            f"{row['removed_summaries']} summaries"
            if row["kind"] == "condensed"
            else f"{row['removed_messages']} messages"
        )
        table.add_row(
            str(number),
            format_time(row["at"]),
            row["kind"] + (f" L{row['level']}" if row["level"] else ""),
            out,
            f"{row['tokens_removed']:,} → {row['tokens_added']:,}",
            f"{row['dropped_total']:,} of {row['entities_seen']:,}",
        )
    console.print(table)
    for number, row in enumerate(data["rows"], 1):
        if not row["dropped"]:
            continue
        written = f" wrote {row['summary_id']}" if row["summary_id"] else ""
        console.print(f"#{number} {row['kind']}{written}, dropped:", highlight=False)
        for e in row["dropped"]:
            where = ", ".join(e["found_in"])
            line = f"  {e['kind']} {abbreviate(e['value'], 60)} → {where}"
            console.print(line, highlight=False, markup=False, overflow="fold")
        more = row["dropped_total"] - len(row["dropped"])
        if more > 0:
            console.print(f"  … {more:,} more (--entities N, --json)", highlight=False)
    if data["without_ledger"]:
        console.print(
            f"{data['without_ledger']:,} earlier summaries were written before the ledger "
            "existed (see `mnesis dag`)."
        )
