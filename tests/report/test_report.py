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
        assert 'id="pruned"' in html and 'id="levels"' in html

    def test_an_unknown_session_is_one_error_line(
        self, report: tuple[Path, str, int], capsys: pytest.CaptureFixture[str]
    ) -> None:
        out, _, _ = report
        db = str(out.parent / "mnesis.db")
        code = run(["report", "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", "-o", str(out) + "x", "--db", db])
        assert code == 1
        assert "not found" in capsys.readouterr().err
        assert not Path(str(out) + "x").exists()


class TestInChromium:
    def test_the_dom_has_the_chart_and_the_dag(
        self, report: tuple[Path, str, int], tmp_path: Path
    ) -> None:
        out, _, summaries = report
        dom = _chromium("--dump-dom", out.as_uri(), profile=tmp_path / "profile").stdout
        text = dom.decode("utf-8")
        assert re.search(r'<svg id="token-chart"[^>]*>', text)
        assert re.search(r'<polyline id="context-line" points="[\d., ]+"', text)
        assert re.search(r'<svg id="summary-dag"[^>]*>', text)
        assert len(re.findall(r'<g class="node (leaf|condensed)"', text)) == summaries

    def test_a_screenshot_shows_the_chart_and_the_dag(
        self, report: tuple[Path, str, int], tmp_path: Path
    ) -> None:
        out, _, _ = report
        shot = tmp_path / "shot.png"
        _chromium(
            f"--screenshot={shot}",
            "--window-size=1100,1300",
            "--hide-scrollbars",
            out.as_uri(),
            profile=tmp_path / "profile",
        )
        width, height, pixels = _png_pixels(shot.read_bytes())
        assert (width, height) == (1100, 1300)
        assert len(set(pixels)) > 50, "the screenshot is blank"
        assert _near(pixels, "#2f6fde") > 300, "the context line is drawn"
        assert _near(pixels, "#8a94a6") > 300, "the history line is drawn"
        assert _near(pixels, "#4caf7d") > 200, "leaf summaries are drawn"
