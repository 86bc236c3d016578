"""Session reports: ``mnesis report SESSION -o report.html`` writes one self-contained
HTML page (inline SVG, no network) with tokens per turn, a search box and a transcript
over the session's messages, the summary DAG, compactions by level and pruned tool outputs.
Reading is one streaming pass over the session (linear time, memory bounded by the
inlined index, see :mod:`mnesis.report.data`)."""

import asyncio
from pathlib import Path

from mnesis.report.data import ReportData, collect
from mnesis.report.html import render_html
from mnesis.report.index import DEFAULT_INDEX_CHARS
from mnesis.store.immutable import ImmutableStore

__all__ = ["DEFAULT_INDEX_CHARS", "ReportData", "collect", "render_html", "write_report"]


async def write_report(
    store: ImmutableStore,
    session_id: str,
    path: str,
    *,
    index_chars: int = DEFAULT_INDEX_CHARS,
) -> ReportData:
    """Write the report of ``session_id`` to ``path``; returns what it shows.
    ``index_chars`` bounds the message text inlined for the search box and the
    transcript (see :mod:`mnesis.report.index`)."""
    data = await collect(store, session_id, index_chars=index_chars)
    await asyncio.to_thread(_write, path, data)
    return data


def _write(path: str, data: ReportData) -> None:
    Path(path).write_text(render_html(data), encoding="utf-8")
