"""``mnesis import`` on the fixture corpus: progress lines on stderr when it is not a
terminal, empty files reported as skipped, sub-agent files with their parent."""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mnesis.cli import app

module = importlib.import_module("mnesis.cli.import_command")

CORPUS = Path(__file__).parents[1] / "importers" / "samples" / "corpus" / "claude-code"


def test_a_piped_import_reports_progress_notes_and_parents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "PROGRESS_SECONDS", 0.0)
    shutil.copytree(CORPUS, tmp_path / "projects")
    db = str(tmp_path / "h.db")
    args = ["import", str(tmp_path / "projects"), "--db", db]
    result = CliRunner().invoke(app, args, env={"LCM_DATABASE_URL": ""})
    assert result.exit_code == 0, result.output
    assert "importing: " in result.output and "MB/s" in result.output
    assert "importing: " in result.stderr and "importing: " not in result.stdout
    assert "empty file: skipped" in result.output
    assert "no message in the file" in result.output
    result = CliRunner().invoke(app, [*args, "--json"], env={"LCM_DATABASE_URL": ""})
    reports = json.loads(result.stdout[result.stdout.index("[") :])
    by_name = {Path(r["path"]).name: r for r in reports}
    parent = by_name["5b1e6c2a-7d4f-4e8a-9c31-0a2b3c4d5e6f.jsonl"]
    assert by_name["agent-a3f9c21.jsonl"]["parent_id"] == parent["session_ids"][0]
    assert by_name["0e4a1f2b-empty.jsonl"]["status"] == "empty"
    assert all(r["messages_added"] == 0 for r in reports)
