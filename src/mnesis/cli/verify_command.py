"""``mnesis verify``: check a session's hash chain and print its head.

The head (the newest link's hash, with the link count and the last ``seq``) is what a
user records elsewhere (a ticket, a commit, a log kept off the machine): a later
``mnesis verify SESSION --expect HEAD`` finds that hash among the session's links
again, which proves the history recorded then is unchanged, even by a writer who
rewrote the whole chain (see ``docs/integrity.md``). The database is opened read-only.

Exit codes: 0 when the chain is intact (and, with ``--expect``, holds the expected
head); 1 when a link is broken, a row has no link, the expected head is not found, the
database has no chain yet, or for a mnesis error; 2 for a usage error.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.markup import escape

from mnesis.cli._common import DbOption, JsonOption, SessionArg, echo_json, stdout_console
from mnesis.cli._store import run_read_only
from mnesis.errors import InvalidArgumentError
from mnesis.store.checks import chain_head_bytes
from mnesis.store.records import ChainReport

__all__ = ["verify_command"]


class OutputFormat(StrEnum):
    """How ``mnesis verify`` prints its result."""

    TEXT = "text"
    JSON = "json"


def report_json(report: ChainReport, expect: str | None) -> dict[str, Any]:
    """The result as JSON data (``--json``)."""
    head = report.head
    broken = report.broken
    out: dict[str, Any] = {
        "session_id": head.session_id,
        "head": head.head,
        "links": head.links,
        "last_seq": head.last_seq,
        "migrated_links": head.migrated_links,
        "chain_available": report.available,
        "intact": report.intact,
        "broken": None
        if broken is None
        else {
            "link": broken.link,
            "kind": broken.kind,
            "row_id": broken.row_id,
            "detail": broken.detail,
        },
        "unchained": report.unchained,
    }
    if expect is not None:
        out["expected"] = {
            "head": expect.strip().lower(),
            "link": report.expected_link,
            "found": report.expected_link is not None,
        }
    return out


def _print_text(report: ChainReport, expect: str | None) -> None:
    console = stdout_console()
    head = report.head
    if not report.available:
        console.print(
            f"{head.session_id}: this database has no hash chain yet (written before "
            "m011); open it for writing once (any writing command) to compute it"
        )
        return
    console.print(f"session   {head.session_id}")
    console.print(f"head      {head.head or '(no links)'}")
    migrated = f" ({head.migrated_links} computed at migration)" if head.migrated_links else ""
    console.print(f"links     {head.links}{migrated}")
    console.print(f"last seq  {head.last_seq}")
    if report.broken is not None:
        b = report.broken
        console.print(
            f"[bold red]BROKEN[/] at link {b.link} ({b.kind} {escape(b.row_id)}): "
            f"{escape(b.detail)}",
            soft_wrap=True,
        )
    for row_id in report.unchained[:20]:
        console.print(f"[bold red]UNCHAINED[/] {escape(row_id)}: no link covers this row")
    if len(report.unchained) > 20:
        console.print(f"... and {len(report.unchained) - 20} more rows without a link")
    if report.intact:
        console.print("[green]intact[/]: every link matches the rows it covers")
    if expect is not None:
        if report.expected_link is None:
            console.print("[bold red]MISMATCH[/]: the expected head is no link of this chain")
        else:
            grown = head.links - report.expected_link
            since = f" (the session grew by {grown} links since)" if grown else ""
            console.print(f"expected head found at link {report.expected_link}{since}")


def verify_command(
    session_id: SessionArg,
    db: DbOption = None,
    expect: Annotated[
        str | None,
        typer.Option(
            "--expect",
            metavar="HASH",
            help="A head recorded earlier (64 hex digits): exit 1 unless it is a link "
            "of the intact chain.",
        ),
    ] = None,
    as_json: JsonOption = False,
    output: Annotated[
        OutputFormat, typer.Option("--format", help="Output format (json = --json).")
    ] = OutputFormat.TEXT,
) -> None:
    """Check a session's hash chain and print its head (hash, links, last seq) to record
    elsewhere; ``--expect`` compares with a head recorded earlier."""
    if expect is not None:
        try:
            chain_head_bytes(expect)
        except InvalidArgumentError as exc:
            raise typer.BadParameter(str(exc), param_hint="--expect") from None
    report, _ = run_read_only(db, lambda store, _: store.verify_chain(session_id, expect))
    if as_json or output is OutputFormat.JSON:
        echo_json(report_json(report, expect))
    else:
        _print_text(report, expect)
    found = expect is None or report.expected_link is not None
    if not (report.intact and found):
        raise typer.Exit(1)
