"""``mnesis hooks``: the hook configuration written into a Claude Code / Codex settings
file (merged, replaced on reinstall, removed alone), and the hook command fed the
documented hook JSON on stdin while the transcript grows: after each call the history in
mnesis is what one import of the transcript so far stores, with no duplicates; after a
compaction the recall note comes back as ``additionalContext``."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from mnesis.cli import app
from mnesis.importers import import_file
from mnesis.store import ImmutableStore
from tests.importers.shapes import shape

CORPUS = Path(__file__).parents[1] / "importers" / "samples" / "corpus" / "claude-code"
SHOP = CORPUS / "-home-ada-shop"
SESSION = "5b1e6c2a-7d4f-4e8a-9c31-0a2b3c4d5e6f"


def _invoke(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(app, list(args), input=stdin, env={"LCM_DATABASE_URL": ""})


def _settings(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _ours(data: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    return [
        (event, group.get("matcher"), hook["command"])
        for event, groups in data["hooks"].items()
        for group in groups
        for hook in group["hooks"]
        if "mnesis.cli hooks run" in hook["command"]
    ]


def test_install_merges_reinstall_replaces_uninstall_removes_only_ours(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"type": "command", "command": "./backup.sh"}
    settings.write_text(
        json.dumps({"model": "opus", "hooks": {"PreCompact": [{"hooks": [theirs]}]}})
    )
    db = tmp_path / "history.db"
    for _ in range(2):
        result = _invoke(
            "hooks", "install", "claude-code", "--file", str(settings), "--db", str(db)
        )
        assert result.exit_code == 0, result.output
    data = _settings(settings)
    assert data["model"] == "opus" and data["hooks"]["PreCompact"][0]["hooks"] == [theirs]
    ours = _ours(data)
    assert [(event, matcher) for event, matcher, _ in ours] == [
        ("PreCompact", None),
        ("SessionStart", "compact"),
    ]
    assert all(command.endswith(f"--db {db}") for _, _, command in ours)
    codex = tmp_path / ".codex" / "hooks.json"
    assert _invoke("hooks", "install", "codex", "--file", str(codex)).exit_code == 0
    assert "statusMessage" in _settings(codex)["hooks"]["PreCompact"][0]["hooks"][0]
    result = _invoke("hooks", "uninstall", "claude-code", "--file", str(settings))
    assert result.exit_code == 0 and "Removed 2" in result.output
    assert _settings(settings)["hooks"] == {"PreCompact": [{"hooks": [theirs]}]}
    settings.write_text("[1, 2]")
    result = _invoke("hooks", "install", "claude-code", "--file", str(settings))
    assert result.exit_code == 1 and "JSON object" in result.output
    assert _invoke("hooks", "install", "cursor").exit_code == 2


async def _one_import(db: Path, transcript: Path, sub: Path | None) -> list[Any]:
    """What a single import of the transcript (and its sub-agent's file) stores."""
    store = await ImmutableStore.open(str(db))
    try:
        ids = (await import_file(store, str(transcript))).session_ids
        if sub is not None:
            ids += (await import_file(store, str(sub))).session_ids
        return await shape(store, ids)
    finally:
        await store.close()


async def _stored(db: Path) -> tuple[list[Any], int]:
    store = await ImmutableStore.open(str(db))
    try:
        sessions = sorted(await store.list_sessions(), key=lambda s: s.parent_id is not None)
        ids = [s.id for s in sessions]
        return await shape(store, ids), sum([await store.count_messages(i) for i in ids])
    finally:
        await store.close()


def test_the_hook_keeps_a_growing_transcript_in_mnesis_without_duplicates(
    tmp_path: Path,
) -> None:
    project = tmp_path / "projects" / "-home-ada-shop"
    transcript = project / f"{SESSION}.jsonl"
    sub = project / SESSION / "subagents" / "agent-a3f9c21.jsonl"
    lines = (SHOP / f"{SESSION}.jsonl").read_text().splitlines(keepends=True)
    sub_lines = next(SHOP.rglob("agent-*.jsonl")).read_text()
    db = tmp_path / "history.db"
    settings = tmp_path / "settings.json"
    assert _invoke("hooks", "install", "claude-code", "--file", str(settings), "--db", str(db))
    (command,) = [c for event, _, c in _ours(_settings(settings)) if event == "PreCompact"]
    hook = {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": "/home/ada/shop",
        "permission_mode": "default",
        "hook_event_name": "PreCompact",
        "trigger": "auto",
        "custom_instructions": "",
    }
    project.mkdir(parents=True)
    counts = []
    for call, (start, end) in enumerate([(0, 9), (9, 20), (20, len(lines))]):
        with transcript.open("a") as handle:
            handle.write("".join(lines[start:end]))
        if call == 1:
            sub.parent.mkdir(parents=True)
            sub.write_text(sub_lines)
        if call < 2:
            result = _invoke("hooks", "run", "--db", str(db), stdin=json.dumps(hook))
            assert result.exit_code == 0 and result.output == "", result.output
        else:  # the command as installed, through a shell, as Claude Code runs it
            ran = subprocess.run(
                command, shell=True, input=json.dumps(hook), capture_output=True, text=True
            )
            assert ran.returncode == 0 and ran.stdout == "", ran.stderr
        stored, count = asyncio.run(_stored(db))
        once = tmp_path / f"once{call}.db"
        assert stored == asyncio.run(_one_import(once, transcript, sub if call else None))
        counts.append(count)
    assert counts[0] < counts[1] < counts[2]

    again = {**hook, "hook_event_name": "SessionStart", "source": "compact"}
    result = _invoke("hooks", "run", "--db", str(db), stdin=json.dumps(again))
    assert result.exit_code == 0, result.output
    context = json.loads(result.output)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert "lcm_grep" in context["additionalContext"] and "sess_" in context["additionalContext"]
    assert asyncio.run(_stored(db))[1] == counts[-1]  # nothing new, nothing repeated


def test_bad_hook_input_never_blocks(tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    for stdin in (
        "not json",
        "[1]",
        json.dumps({"hook_event_name": "PreCompact", "transcript_path": str(tmp_path / "gone")}),
    ):
        result = _invoke("hooks", "run", "--db", db, stdin=stdin)
        assert result.exit_code == 1, result.output  # reported, not exit code 2 (blocking)
    other = {"hook_event_name": "PostToolUse", "transcript_path": str(tmp_path / "gone")}
    assert _invoke("hooks", "run", "--db", db, stdin=json.dumps(other)).exit_code == 0
