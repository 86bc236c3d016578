"""``mnesis report``: one self-contained HTML file, checked in headless Chromium.

Chromium (Debian's ``chromium`` package) is required: these tests fail without it.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from mnesis import MnesisSession, StorePool
from mnesis.cli import run
from mnesis.report import data as report_data
from mnesis.report import write_report
from mnesis.report.charts import MAX_CHART_POINTS, _buckets, token_chart
from mnesis.report.data import PrunedOutput, ReportData, collect
from mnesis.report.html import MAX_SEARCH_HITS, render_html
from mnesis.report.index import IndexEntry, MessageIndex
from mnesis.report.timeline import TurnPoint
from mnesis.store.records import SessionRecord
from tests.compacted import EXTRACTIVE_32K, compact_now, record_steps


async def _session(db_path: str) -> tuple[str, int]:
    pool = StorePool()
    session = await MnesisSession.create(
        model="fake/m", db_path=db_path, pool=pool, config=EXTRACTIVE_32K
    )
    await record_steps(session, range(70))
    await compact_now(session)
    snapshot = await session.store.integrity_snapshot(session.id)
    await session.close()
    await pool.close_all()
    return session.id, len(snapshot.summaries)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, int]:
    """The report of a compacted session, written by the CLI."""
    folder = tmp_path_factory.mktemp("report")
    db_path = str(folder / "mnesis.db")
    session_id, summaries = asyncio.run(_session(db_path))
    out = folder / "report.html"
    assert run(["report", session_id, "-o", str(out), "--db", db_path]) == 0
    return out, session_id, summaries


def _chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[bytes]:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    assert binary, "headless Chromium is required (Debian package `chromium`)"
    return subprocess.run(
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        timeout=180,
        check=True,
    )


def _png_pixels(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Width, height and RGB pixels of an 8-bit RGB/RGBA PNG (stdlib only)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, bit_depth, color_type = struct.unpack(">IIBB", header[:10])
    assert bit_depth == 8 and color_type in (2, 6), (bit_depth, color_type)
    channels = 3 if color_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    rows: list[bytearray] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 0xFF
        rows.append(line)
        previous = line
    pixels = [(row[x], row[x + 1], row[x + 2]) for row in rows for x in range(0, stride, channels)]
    return width, height, pixels


def _near(pixels: list[tuple[int, int, int]], color: str, tolerance: int = 40) -> int:
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return sum(1 for p in pixels if abs(p[0] - r) + abs(p[1] - g) + abs(p[2] - b) <= tolerance)


def _dom(out: Path, fragment: str, profile: Path) -> str:
    """The DOM after the page's script ran, opened at ``#fragment``."""
    url = out.as_uri() + (f"#{fragment}" if fragment else "")
    return _chromium("--dump-dom", url, profile=profile).stdout.decode("utf-8")


def _shot(
    out: Path, fragment: str, tmp_path: Path, *, size: tuple[int, int]
) -> tuple[int, int, list[tuple[int, int, int]]]:
    shot = tmp_path / "shot.png"
    _chromium(
        f"--screenshot={shot}",
        f"--window-size={size[0]},{size[1]}",
        "--hide-scrollbars",
        out.as_uri() + (f"#{fragment}" if fragment else ""),
        profile=tmp_path / "profile",
    )
    return _png_pixels(shot.read_bytes())


class TestReportFile:
    def test_one_self_contained_file(self, report: tuple[Path, str, int]) -> None:
        out, session_id, summaries = report
        html = out.read_text(encoding="utf-8")
        assert session_id in html
        assert not re.search(r"https?://|<link\b|\bsrc=|@import", html), "no network"
        assert html.count('class="node ') == summaries > 0
        assert html.count('class="summary-detail"') == summaries
        assert 'id="context-line"' in html and 'id="history-line"' in html
        assert 'class="compaction"' in html
        assert 'id="pruned-table"' in html and 'id="levels"' in html
        assert 'id="search"' in html and 'id="transcript"' in html

    def test_an_unknown_session_is_one_error_line(
        self, report: tuple[Path, str, int], capsys: pytest.CaptureFixture[str]
    ) -> None:
        out, _, _ = report
        db = str(out.parent / "mnesis.db")
        code = run(["report", "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", "-o", str(out) + "x", "--db", db])
        assert code == 1
        assert "not found" in capsys.readouterr().err
        assert not Path(str(out) + "x").exists()

    def test_a_too_small_index_bound_is_refused_before_anything_is_written(
        self, report: tuple[Path, str, int], capsys: pytest.CaptureFixture[str]
    ) -> None:
        out, session_id, _ = report
        db = str(out.parent / "mnesis.db")
        target = out.parent / "small.html"
        code = run(["report", session_id, "-o", str(target), "--db", db, "--index-chars", "10"])
        assert code == 1
        assert "at least 160" in capsys.readouterr().err
        assert not target.exists()


@pytest.fixture(scope="module")
def searched(report: tuple[Path, str, int], tmp_path_factory: pytest.TempPathFactory) -> str:
    """The report's DOM after its script ran, opened on a search and on message 85."""
    out, _, _ = report
    profile = tmp_path_factory.mktemp("profile")
    return _dom(out, "search=build%20NUMBER%201042&message=85", profile)


class TestInChromium:
    def test_the_dom_has_the_chart_the_dag_and_the_paged_tables(
        self, report: tuple[Path, str, int], searched: str
    ) -> None:
        _, _, summaries = report
        text = searched
        assert re.search(r'<svg id="token-chart"[^>]*>', text)
        assert re.search(r'<polyline id="context-line" points="[\d., ]+"', text)
        assert re.search(r'<svg id="summary-dag"[^>]*>', text)
        assert len(re.findall(r'<g class="node (leaf|condensed)"', text)) == summaries
        # The script drew the first page of the transcript (100 rows, compaction points
        # among them) and of the summaries' table.
        transcript = text[text.index('id="transcript"') :]
        assert "page 1 of 2 (rows 1–100 of " in transcript
        assert (
            len(re.findall(r'<div class="row (user|assistant|compaction)[ "]', transcript)) == 100
        )
        assert '<div class="row compaction"' in transcript
        assert f"(rows 1–{summaries} of {summaries})" in text[text.index('id="summary-table"') :]

    def test_a_search_lists_its_matches_marked_and_opens_the_transcript(
        self, searched: str
    ) -> None:
        text = searched
        results = text[text.index('id="search-results"') :]
        assert "1 matching row" in results
        assert "<mark>build</mark>" in results and "<mark>1042</mark>" in results
        assert "step 42: the" in results
        focused = re.findall(r'<div class="row user focus" data-ordinal="(\d+)"', text)
        assert focused == ["85"]
        # The transcript opened on the page holding message 85 (page 1 of 2 holds
        # 100 rows, compaction points included).
        assert "page 1 of 2 (rows 1–100 of " in text[text.index('id="transcript"') :]

    def test_a_screenshot_of_the_chart(self, report: tuple[Path, str, int], tmp_path: Path) -> None:
        out, _, _ = report
        width, height, pixels = _shot(out, "", tmp_path, size=(1000, 760))
        assert (width, height) == (1000, 760)
        assert len(set(pixels)) > 50, "the screenshot is blank"
        assert _near(pixels, "#2f6fde") > 300, "the context line is drawn"
        assert _near(pixels, "#8a94a6") > 300, "the history line is drawn"
        assert _near(pixels, "#b91c1c", 60) > 100, "the model's window is drawn"

    def test_a_screenshot_of_the_search_box_and_the_transcript(
        self, report: tuple[Path, str, int], tmp_path: Path
    ) -> None:
        out, _, _ = report
        html = out.read_text(encoding="utf-8")
        after = int(re.findall(r'\[(\d+),\d+,"compaction"', html)[0])
        fragment = f"search=build%20number%201042&message={after + 1}"
        width, height, pixels = _shot(out, fragment, tmp_path, size=(1000, 1000))
        assert (width, height) == (1000, 1000)
        top, bottom = pixels[: 1000 * 420], pixels[1000 * 420 :]
        # Measured on Chromium 150: 1,705 / 1,870 / 62,554 / 324 / 5,915 pixels.
        assert _near(top, "#ffd54a", 30) > 1_000, "the search's matches are marked"
        assert _near(top, "#2f6fde", 30) > 800, "the search box is drawn"
        assert _near(bottom, "#fdeee6", 6) > 20_000, "a compaction point is drawn"
        assert _near(bottom, "#e0703a", 30) > 150, "with its orange edge"
        assert _near(bottom, "#2f6fde", 30) > 3_500, "the message opened is outlined"


async def _collect(db_path: str, session_id: str, **options: int) -> ReportData:
    pool = StorePool()
    store = await pool.acquire(db_path)
    try:
        return await collect(store, session_id, **options)
    finally:
        await store.close()
        await pool.close_all()


class TestBounds:
    def test_past_its_bound_the_index_keeps_the_newest_messages(
        self, report: tuple[Path, str, int]
    ) -> None:
        out, session_id, _ = report
        db = str(out.parent / "mnesis.db")
        data = asyncio.run(_collect(db, session_id, index_chars=160 * 10))
        index = data.index
        assert (index.per_message, index.first_indexed, index.left_out) == (160, 131, 130)
        kept = [e for e in index.entries if e.role != "compaction"]
        assert [e.ordinal for e in kept] == list(range(131, 141))
        assert sum(len(e.text) for e in kept) <= 160 * 10
        assert all(len(e.text) <= 160 for e in index.entries)
        # Compaction points are all kept (one per summary), wherever they landed.
        assert sum(e.role == "compaction" for e in index.entries) == len(data.nodes)
        html = render_html(data)
        assert "the 130 earliest messages do not fit that bound" in html
        assert "step 69: the build number is 1069" in html
        assert "step 3: the build number is 1003" not in html

    def test_the_pruned_rows_are_bounded_and_the_totals_count_all(
        self, report: tuple[Path, str, int], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        out, session_id, _ = report
        db = str(out.parent / "mnesis.db")
        full = asyncio.run(_collect(db, session_id))
        monkeypatch.setattr(report_data, "MAX_PRUNED_ROWS", 5)
        bounded = asyncio.run(_collect(db, session_id))
        assert full.pruned_count == len(full.pruned) > 5
        assert bounded.pruned == full.pruned[:5]
        assert (bounded.pruned_count, bounded.pruned_tokens) == (
            full.pruned_count,
            full.pruned_tokens,
        )
        assert sum(t.outputs for t in bounded.pruned_by_tool) == full.pruned_count

    def test_the_curve_takes_one_step_per_message_edge_and_prune(
        self, report: tuple[Path, str, int]
    ) -> None:
        out, session_id, _ = report
        db = str(out.parent / "mnesis.db")
        data = asyncio.run(_collect(db, session_id))
        edges = sum(n.source_message_count if n.kind == "leaf" else 0 for n in data.nodes)
        edges += sum(len(n.children) for n in data.nodes)
        assert data.work == data.message_count + len(data.nodes) + edges + data.pruned_count

    def test_tables_and_search_results_are_paged_and_capped(self, tmp_path: Path) -> None:
        entries = [
            IndexEntry(i, i, "user", f"msg_{i}", 1_700_000_000_000, f"alpha row {i}", False)
            for i in range(1, MAX_SEARCH_HITS + 501)
        ]
        entries[0] = IndexEntry(
            1, 1, "user", "msg_1", 1_700_000_000_000, "alpha </script><b>bold</b>", False
        )
        index = MessageIndex(len(entries))
        index.entries = entries
        pruned = [
            PrunedOutput(f"msg_{i}", "bash", f"call_{i}", 10, 1_700_000_000_000) for i in range(120)
        ]
        data = ReportData(
            session=SessionRecord(id="sess_x", model="fake/m"),
            turns=[],
            nodes=[],
            levels=[],
            pruned=pruned,
            message_count=len(entries),
            context_tokens_now=0,
            pruned_count=120,
            pruned_tokens=1_200,
            index=index,
        )
        out = tmp_path / "paged.html"
        html = render_html(data)
        assert html.count("</script>") == 2, "a message cannot close the data block"
        out.write_text(html, encoding="utf-8")
        text = _dom(out, "search=ALPHA", tmp_path / "profile")
        assert "&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in text, "shown as text"
        assert "<b>bold</b>" not in text
        table = text[text.index('id="pruned-table"') :]
        assert "page 1 of 3 (rows 1–50 of 120)" in table
        assert table[: table.index("</table>")].count("<tr>") == 51
        results = text[text.index('id="search-results"') :]
        assert f"first {MAX_SEARCH_HITS:,} matches" in results
        assert f"page 1 of {MAX_SEARCH_HITS // 20} (rows 1–20 of {MAX_SEARCH_HITS:,})" in results
        transcript = text[text.index('id="transcript"') :]
        assert "page 1 of 15 (rows 1–100 of 1,500)" in transcript


class TestImportedBacklog:
    def test_turns_no_model_saw_are_shaded_and_drawn_without_context(self) -> None:
        turns = [
            TurnPoint(i + 1, f"msg_{i}", 0, 10_000 * (i + 1), 10_000 * (i + 1), False, True)
            for i in range(50)
        ]
        turns += [
            TurnPoint(51, "msg_50", 0, 510_000, 20_000, True),
            TurnPoint(52, "m", 0, 520_000, 30_000, False),
        ]
        data = ReportData(
            session=SessionRecord(id="sess_x", model="fake/m"),
            turns=turns,
            nodes=[],
            levels=[],
            pruned=[],
            message_count=104,
            context_tokens_now=30_000,
            window=32_000,
        )
        html = render_html(data)
        assert data.backlog_turns == 50
        assert "imported backlog<b>50 turns</b>" in html
        assert 'class="backlog"' in html
        context = re.search(r'<polyline id="context-line" points="([^"]*)"', html)
        assert context is not None and len(context.group(1).split()) == 2
        history = re.search(r'<polyline id="history-line" points="([^"]*)"', html)
        assert history is not None and len(history.group(1).split()) == 52
        # The context next to a history 16 times bigger gets a chart of its own.
        assert '<svg id="context-chart"' in html


class TestAxes:
    @pytest.mark.parametrize("history", [900, 45_000, 8_860_000, 3_400_000_000])
    def test_the_y_labels_fit_left_of_the_axis(self, history: int) -> None:
        data = ReportData(
            session=SessionRecord(id="sess_x", model="fake/m"),
            turns=[
                TurnPoint(1, "m0", 0, history // 2, 100, False),
                TurnPoint(2, "m1", 0, history, 100, True),
            ],
            nodes=[],
            levels=[],
            pruned=[],
            message_count=4,
            context_tokens_now=100,
        )
        svg = token_chart(data)
        ticks = re.findall(
            r'<text x="([\d.]+)" y="[\d.]+" class="tick" text-anchor="end">([^<]+)<', svg
        )
        assert len(ticks) == 5
        for x, label in ticks:
            # 11px text: at most ~7px a character, and the label ends at x.
            assert len(label) * 7 <= float(x), (label, x)


class TestBuckets:
    def test_a_long_session_draws_each_bucket_as_its_last_turn_with_the_peak_context(
        self,
    ) -> None:
        # Turns 1-4 an imported backlog; turn 4's context (never seen) is the largest.
        turns = [
            TurnPoint(
                i + 1,
                f"msg_{i}",
                1_000 * i,
                100 * (i + 1),
                900 if i == 3 else 50 + i % 7,
                i == 4,
                i < 4,
            )
            for i in range(3 * MAX_CHART_POINTS)
        ]
        buckets = _buckets(turns)
        assert len(buckets) == MAX_CHART_POINTS
        assert buckets[0] == TurnPoint(3, "msg_2", 2_000, 300, 52, False, True)
        assert buckets[1] == TurnPoint(6, "msg_5", 5_000, 600, 55, True, False)
        assert [b.turn for b in buckets] == list(range(3, 3 * MAX_CHART_POINTS + 1, 3))
        assert _buckets(turns[:MAX_CHART_POINTS]) == turns[:MAX_CHART_POINTS]


class TestEmpty:
    def test_a_session_without_messages_has_a_report(self, tmp_path: Path) -> None:
        async def write() -> ReportData:
            pool = StorePool()
            session = await MnesisSession.create(
                model="fake/m", db_path=str(tmp_path / "m.db"), pool=pool
            )
            try:
                return await write_report(session.store, session.id, str(tmp_path / "r.html"))
            finally:
                await session.close()
                await pool.close_all()

        data = asyncio.run(write())
        assert (data.turns, data.index.entries, data.work) == ([], [], 0)
        html = (tmp_path / "r.html").read_text(encoding="utf-8")
        assert "No turns yet." in html and "No tool outputs were pruned." in html
