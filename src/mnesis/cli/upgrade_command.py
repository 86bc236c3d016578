"""``mnesis upgrade PATH``: copy a database of the earlier mnesis library into this schema."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from mnesis.cli._common import JsonOption, cli_errors, echo_json, stdout_console
from mnesis.importers.mnesis_legacy import upgrade_database

__all__ = ["upgrade_command"]


def upgrade_command(
    path: Annotated[str, typer.Argument(help="The earlier library's database file.")],
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="The new database file (default: PATH with .upgraded.db); must not exist.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Copy a database written by the earlier `mnesis` library (0.4.x) into a NEW file in
    this schema: every session, message, part, tool state, tombstone, summary (its span
    becomes its lineage) and file reference. The original is only read (its sha256 is
    compared before and after); counts are verified and the integrity check runs.

    Then use the new file: `mnesis sessions --db NEW`.
    """
    with cli_errors(path):
        report = asyncio.run(upgrade_database(path, output))
    if as_json:
        echo_json(
            {
                "source": report.source,
                "output": report.output,
                "source_sha256": report.source_sha256,
                "source_unchanged": report.source_unchanged,
                "old": report.old,
                "new": report.new,
                "sessions": report.session_ids,
                "integrity_violations": report.integrity_violations,
                "ok": report.ok,
            }
        )
    else:
        console = stdout_console()
        console.print(f"Upgraded {report.source}\n     -> {report.output}")
        for key, count in report.old.items():
            console.print(f"  {key:<16} {count:>8} -> {report.new.get(key, 0)}")
        state = "unchanged" if report.source_unchanged else "CHANGED"
        console.print(f"  original sha256 {report.source_sha256[:16]}… {state}")
        if report.integrity_violations:
            console.print(f"  integrity: {len(report.integrity_violations)} violation(s)")
            for line in report.integrity_violations[:20]:
                console.print(f"    {line}")
        else:
            console.print("  integrity: clean")
    if not report.ok:
        raise typer.Exit(1)
