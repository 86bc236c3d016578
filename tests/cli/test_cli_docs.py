"""The sample outputs in docs/cli.md are this test's output, so they cannot go stale.

Each ``<!-- sample: ARGS -->`` block is replaced by the output of ``mnesis ARGS``, run in
order on one database built from ``tests/importers/samples/`` (copied to
``~/transcripts``), with IDs renumbered. ``MNESIS_UPDATE_DOCS=1`` rewrites the file;
otherwise the file must already match."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mnesis.cli import app

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "cli.md"
SAMPLES = ROOT / "tests" / "importers" / "samples"
BLOCK = re.compile(r"(<!-- sample: (.+?) -->\n```\n)(.*?)(```\n<!-- /sample -->)", re.DOTALL)
ID = re.compile(r"\b(sess|msg|part|sum|file)_[0-9A-HJKMNP-TV-Z]{26}\b")


class _Ids:
    """Renumbers IDs in order of first appearance: ``sess_01JZ0000000000000000000001``."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self.counts: dict[str, int] = {}

    def __call__(self, match: re.Match[str]) -> str:
        real = match.group(0)
        if real not in self.seen:
            prefix = match.group(1)
            self.counts[prefix] = self.counts.get(prefix, 0) + 1
            self.seen[real] = f"{prefix}_01JZ{self.counts[prefix]:022d}"
        return self.seen[real]


def _invoke(args: list[str]) -> str:
    result = CliRunner().invoke(app, args, terminal_width=88)
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    shutil.copytree(SAMPLES, tmp_path / "transcripts", ignore=shutil.ignore_patterns("corpus"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.chdir(tmp_path)
    time.tzset()
    yield tmp_path
    monkeypatch.undo()
    time.tzset()


def _render(text: str) -> str:
    ids = _Ids()
    named: dict[str, str] = {}

    def fill(match: re.Match[str]) -> str:
        args = [a.format(**named) for a in shlex.split(match.group(2))]
        output = _invoke(args)
        if args[0] == "import" and not named:
            listed = _invoke(["sessions", "--db", "history.db", "--json"])
            for session in json.loads(listed):
                title = session["title"] or ""
                for key in ("Codex", "JSONL", "OpenAI chat", "Claude Code"):
                    if title.startswith(key):
                        named.setdefault(key.split()[0].lower(), session["id"])
            named["generic"] = named.pop("jsonl")
        body = "\n".join(line.rstrip() for line in output.splitlines()).strip("\n")
        return f"{match.group(1)}$ mnesis {match.group(2)}\n{ID.sub(ids, body)}\n{match.group(4)}"

    return BLOCK.sub(fill, text)


def test_the_sample_outputs_in_the_cli_docs_are_current(sandbox: Path) -> None:
    current = DOCS.read_text(encoding="utf-8")
    assert BLOCK.search(current), "docs/cli.md has no sample blocks"
    rendered = _render(current)
    if os.environ.get("MNESIS_UPDATE_DOCS") == "1":
        DOCS.write_text(rendered, encoding="utf-8")
    assert rendered == current, "docs/cli.md samples are stale: MNESIS_UPDATE_DOCS=1 pytest"
