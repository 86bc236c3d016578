"""``mnesis import``: bring existing agent transcripts into the database.

``mnesis import --claude-code`` (no path) imports every session under
``~/.claude/projects``; ``--codex`` every rollout under ``~/.codex/sessions``. Paths
may be files or directories (searched for ``*.jsonl`` / ``*.json``). Importing is
idempotent: run it again and only new turns are added.
"""

from __future__ import annotations

import asyncio
import glob
import os
import sys
import time
from typing import Annotated, Any

import typer
from rich.markup import escape

from mnesis.cli._common import (
    DbOption,
    JsonOption,
    checked_database,
    echo_json,
    fail,
    stderr_console,
    stdout_console,
)
from mnesis.cli._store import progress_bar
from mnesis.config import MnesisConfig
from mnesis.importers import FORMATS, ImportReport, default_paths, import_file
from mnesis.store.immutable import ImmutableStore

__all__ = ["import_command"]


def _expand(paths: list[str]) -> dict[str, str]:
    """File to import → the path to show (as the user wrote it)."""
    found: dict[str, str] = {}
    for path in paths:
        full = os.path.expanduser(path)
        if os.path.isdir(full):
            for pattern in ("*.jsonl", "*.json"):
                for hit in glob.glob(os.path.join(full, "**", pattern), recursive=True):
                    found[hit] = os.path.join(path, os.path.relpath(hit, full))
        elif os.path.isfile(full):
            found[full] = path
        else:
            fail(f"no such file or directory: {path}")
    return dict(sorted(found.items()))


PROGRESS_SECONDS = 5.0
"""How often a piped import reports on stderr."""


class _PipedProgress:
    """Progress lines on stderr when it is no terminal (a log, a pipe): one every
    :data:`PROGRESS_SECONDS` at most, with bytes done, rate and time left."""

    def __init__(self, total: int, files: int) -> None:
        self.total, self.files = total, files
        self.started = self.last = time.monotonic()
        self.done_files = 0

    def __call__(self, done: float) -> None:
        now = time.monotonic()
        if now - self.last < PROGRESS_SECONDS:
            return
        self.last = now
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        left = f", about {(self.total - done) / rate:,.0f} s left" if rate > 0 else ""
        share = done / self.total * 100 if self.total else 100.0
        sys.stderr.write(
            f"importing: {done / 1e6:,.1f} of {self.total / 1e6:,.1f} MB ({share:.0f}%), "
            f"file {min(self.done_files + 1, self.files)} of {self.files}, "
            f"{rate / 1e6:.1f} MB/s{left}\n"
        )
        sys.stderr.flush()


async def _import_all(
    config: MnesisConfig, files: list[tuple[str, int]], fmt: str | None
) -> list[ImportReport]:
    store = ImmutableStore(config.store)
    await store.initialize()
    reports = []
    total = sum(size for _, size in files)
    piped = None if sys.stderr.isatty() else _PipedProgress(total, len(files))
    try:
        base = 0
        with progress_bar("importing", float(total)) as bar:
            advance = piped or bar
            for path, size in files:

                def on_progress(done: int, _: int, start: int = base) -> None:
                    advance(start + done)

                reports.append(await import_file(store, path, fmt, on_progress=on_progress))
                base += size
                if piped is not None:
                    piped.done_files += 1
                advance(base)
    finally:
        await store.close()
    return reports


def import_command(
    paths: Annotated[
        list[str] | None,
        typer.Argument(metavar="[PATH]...", help="Transcript files or directories."),
    ] = None,
    db: DbOption = None,
    claude_code: Annotated[
        bool,
        typer.Option(
            "--claude-code", help="Claude Code transcripts (default: ~/.claude/projects)."
        ),
    ] = False,
    codex: Annotated[
        bool, typer.Option("--codex", help="Codex CLI rollouts (default: ~/.codex/sessions).")
    ] = False,
    format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help=f"Format of the files: {', '.join(FORMATS)} (default: detected).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Import agent transcripts (Claude Code, Codex, OpenAI chat JSON/JSONL, generic
    JSONL): one session per source session, tool calls paired with their results.
    Safe to repeat: files already imported add only their new turns."""
    if claude_code and codex:
        raise typer.BadParameter("choose one of --claude-code and --codex")
    fmt = "claude-code" if claude_code else "codex" if codex else format
    if fmt is not None and fmt not in FORMATS:
        raise typer.BadParameter(f"must be one of {', '.join(FORMATS)}", param_hint="'--format'")
    if paths:
        shown = _expand(paths)
    elif fmt in ("claude-code", "codex"):
        shown = {path: path for path in default_paths(fmt)}
    else:
        raise typer.BadParameter("give transcript paths, or --claude-code / --codex")
    files = list(shown)
    if not files:
        fail("no transcript files found" + ("" if paths else " in the default location"))
    with checked_database(db, must_exist=False) as (config, _):
        sized = [(f, os.path.getsize(f)) for f in files]
        reports = asyncio.run(_import_all(config, sized, fmt))
    _print(reports, [shown[f] for f in files], as_json)


def _print(reports: list[ImportReport], names: list[str], as_json: bool) -> None:
    if as_json:
        echo_json([_report_json(r) for r in reports])
        return
    console = stdout_console()
    err = stderr_console()
    for r, name in zip(reports, names, strict=True):
        for line, problem in r.errors:
            err.print(f"[yellow]warning:[/] {escape(name)}:{line}: {escape(problem)} (skipped)")
        for note in r.notes:
            err.print(f"[yellow]note:[/] {escape(name)}: {escape(note)}")
        console.print(
            f"{escape(name)}: {r.status}, {r.messages_added:,} messages added "
            f"→ {', '.join(r.session_ids) or '-'}"
        )
    added = sum(r.messages_added for r in reports)
    skipped = sum(len(r.errors) for r in reports)
    console.print(
        f"[bold]{len(reports)} file{'' if len(reports) == 1 else 's'}, {added:,} messages added, "
        f"{skipped} malformed lines skipped[/]"
    )


def _report_json(r: ImportReport) -> dict[str, Any]:
    return {
        "path": r.path,
        "format": r.format,
        "status": r.status,
        "session_ids": r.session_ids,
        "messages_added": r.messages_added,
        "lines_read": r.lines_read,
        "tool_results": r.tool_results,
        "orphan_results": r.orphan_results,
        "errors": [{"line": n, "problem": p} for n, p in r.errors],
        "notes": r.notes,
        "parent_id": r.parent_id,
    }
