"""Session reports: ``mnesis report SESSION -o report.html`` writes one self-contained
HTML page (inline SVG, no network) with tokens per turn, the summary DAG, compactions
by level and pruned tool outputs."""

import asyncio
from pathlib import Path

from mnesis.report.data import ReportData, collect
from mnesis.report.html import render_html
from mnesis.store.immutable import ImmutableStore

__all__ = ["ReportData", "collect", "render_html", "write_report"]


async def write_report(store: ImmutableStore, session_id: str, path: str) -> ReportData:
    """Write the report of ``session_id`` to ``path``; returns what it shows."""
    data = await collect(store, session_id)
    await asyncio.to_thread(Path(path).write_text, render_html(data), encoding="utf-8")
    return data
