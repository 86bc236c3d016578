"""The retrieval, maintenance and import commands, through typer's runner, on real
SQLite files: output, --json, read-only guarantees and error paths."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from mnesis import MnesisSession, StorePool
from mnesis.cli import app
from mnesis.llm import FakeLLM

SAMPLES = Path(__file__).resolve().parents[1] / "importers" / "samples"


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=env)


def ok_json(*args: str) -> Any:
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _long_transcript(path: Path, exchanges: int) -> None:
    base = {"sessionId": "long", "cwd": "/srv/app", "isSidechain": False}
    with path.open("w", encoding="utf-8") as handle:
        for i in range(exchanges):
            stamp = f"2025-07-01T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
            word = "kumquat" if i == 7 else "build"
            records = [
                {
                    **base,
                    "type": "user",
                    "timestamp": stamp,
                    "message": {
                        "role": "user",
                        "content": f"step {i}: check the {word} of module {i}",
                    },
                },
                {
                    **base,
                    "type": "assistant",
                    "timestamp": stamp,
                    "message": {
                        "id": f"m{i}",
                        "role": "assistant",
                        "model": "claude-sonnet-4-5",
                        "content": [
                            {"type": "text", "text": f"Module {i} looks fine."},
                            {
                                "type": "tool_use",
                                "id": f"t{i}",
                                "name": "Bash",
                                "input": {"command": f"make m{i}"},
                            },
                        ],
                    },
                },
                {
                    **base,
                    "type": "user",
                    "timestamp": stamp,
                    "message": {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok " * 200}
                        ],
                    },
                },
            ]
            handle.write("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The samples plus a 150-exchange session, imported and compacted offline."""
    root = tmp_path_factory.mktemp("history")
    db = str(root / "history.db")
    shutil.copytree(SAMPLES, root / "samples", ignore=shutil.ignore_patterns("corpus"))
    _long_transcript(root / "samples" / "long.jsonl", 150)
    reports = ok_json("import", str(root / "samples"), "--db", db)
    long_id = next(r["session_ids"][0] for r in reports if r["path"].endswith("long.jsonl"))
    compacted = ok_json("compact", long_id, "--db", db, "--until-under", "6000")
    assert compacted["tokens_after"] < compacted["tokens_before"]
    ids = {Path(r["path"]).stem: r["session_ids"][0] for r in reports}
    return {"db": db, "long": long_id, "claude": ids["claude_code"], "codex": ids["codex_rollout"]}


def _summary_of(history: dict[str, str]) -> str:
    found = ok_json("grep", "kumquat", "--db", history["db"])
    return str(found["matches"][0]["covering_summary_id"])


class TestImport:
    def test_import_reports_sessions_and_a_second_run_adds_nothing(self, tmp_path: Path) -> None:
        db = str(tmp_path / "a.db")
        result = invoke("import", str(SAMPLES / "claude_code.jsonl"), "--db", db)
        assert result.exit_code == 0, result.output
        # Rich wraps long lines at the terminal width, and the sample's path is as long
        # as the checkout's: compare with the whitespace folded.
        assert "new, 6 messages added" in " ".join(result.stdout.split())
        assert "claude_code.jsonl:6: not JSON" in " ".join(result.stderr.split())
        again = ok_json("import", str(SAMPLES / "claude_code.jsonl"), "--db", db)
        assert again[0]["status"] == "unchanged" and again[0]["messages_added"] == 0

    def test_claude_code_and_codex_default_locations(self, tmp_path: Path) -> None:
        project = tmp_path / ".claude" / "projects" / "-home-ada-parser"
        project.mkdir(parents=True)
        shutil.copy(SAMPLES / "claude_code.jsonl", project / "abc.jsonl")
        day = tmp_path / ".codex" / "sessions" / "2025" / "09" / "02"
        day.mkdir(parents=True)
        shutil.copy(SAMPLES / "codex_rollout.jsonl", day / "rollout-2025-09-02T08-15-00-x.jsonl")
        db = str(tmp_path / "h.db")
        env = {"HOME": str(tmp_path)}
        claude = invoke("import", "--claude-code", "--db", db, "--json", env=env)
        codex = invoke("import", "--codex", "--db", db, "--json", env=env)
        assert claude.exit_code == 0 and codex.exit_code == 0, claude.output + codex.output
        assert [r["format"] for r in json.loads(claude.stdout)] == ["claude-code"]
        assert [r["messages_added"] for r in json.loads(codex.stdout)] == [2]

    @pytest.mark.parametrize(
        ("args", "code", "message"),
        [
            (["import"], 2, "give transcript paths"),
            (["import", "--claude-code", "--codex"], 2, "choose one"),
            (["import", "x.jsonl", "--format", "yaml"], 2, "must be one of"),
            (["import", "no/such/file.jsonl"], 1, "no such file or directory"),
        ],
    )
    def test_import_errors(self, args: list[str], code: int, message: str, tmp_path: Path) -> None:
        result = invoke(*args, "--db", str(tmp_path / "x.db"))
        assert result.exit_code == code and message in result.output
        assert "Traceback" not in result.output


class TestRetrieval:
    def test_grep_finds_hits_in_every_session_with_their_covering_summary(
        self, history: dict[str, str]
    ) -> None:
        result = invoke("grep", "kumquat", "--db", history["db"])
        assert result.exit_code == 0, result.output
        assert "kumquat" in result.stdout and "covered by sum_" in result.stdout
        both = ok_json("grep", "datetime", "--db", history["db"], "--limit", "50")
        assert {m["session_id"] for m in both["matches"]} >= {history["claude"]}

    def test_grep_filters(self, history: dict[str, str]) -> None:
        db = history["db"]
        one = ok_json("grep", "module", "--db", db, "--session", history["codex"])
        assert one["matches"] == []
        regex = ok_json("grep", r"kum\w+t", "--regex", "--db", db)
        assert regex["mode"] == "regex" and regex["matches"]
        late = ok_json("grep", "kumquat", "--since", "2025-08-01", "--db", db)
        early = ok_json("grep", "kumquat", "--until", "2025-08-01", "--db", db)
        assert late["matches"] == [] and early["matches"]
        assert len(ok_json("grep", "module", "--limit", "3", "--db", db)["matches"]) == 3

    def test_describe_and_expand_a_summary(self, history: dict[str, str]) -> None:
        summary = _summary_of(history)
        described = ok_json("describe", summary, "--db", history["db"])
        assert described["kind"] == "summary" and described["session_id"] == history["long"]
        text = invoke("describe", summary, "--db", history["db"])
        assert text.exit_code == 0 and "source_message_count" in text.stdout
        ledger = described["ledger"]
        assert ledger["covered_count"] > 0 and len(ledger["dropped"]) <= 10
        assert f"{ledger['tokens_removed']:,} tokens -> " in text.stdout
        assert f"mnesis compactions {history['long']}" in " ".join(text.stdout.split())
        page = ok_json("expand", summary, "--db", history["db"], "--max-tokens", "200")
        assert page["items"] and page["next_cursor"] is not None
        rest = ok_json("expand", summary, "--db", history["db"], "--cursor", page["next_cursor"])
        ids = [i["id"] for i in page["items"]] + [i["id"] for i in rest["items"]]
        assert len(ids) == len(set(ids))
        assert "kumquat" in json.dumps(page["items"] + rest["items"]) or rest["next_cursor"]
        shown = invoke("expand", summary, "--db", history["db"], "--max-tokens", "200")
        assert "--cursor" in shown.stdout

    def test_describe_a_message(self, history: dict[str, str]) -> None:
        found = ok_json("grep", "kumquat", "--db", history["db"])
        message = ok_json("describe", found["matches"][0]["id"], "--db", history["db"])
        assert message["kind"] == "message" and message["role"] == "user"


class TestShowStatsExport:
    def test_show_full_and_one_message(self, history: dict[str, str]) -> None:
        full = invoke("show", history["claude"], "--full", "--db", history["db"])
        assert full.exit_code == 0, full.output
        assert "TZ=UTC pytest" in full.stdout and "AssertionError: 2025-03-30" in full.stdout
        listed = ok_json("show", history["claude"], "--db", history["db"])
        message_id = listed["messages"][1]["id"]
        one = ok_json("show", history["claude"], "--message", message_id, "--db", history["db"])
        assert one["id"] == message_id and any(p["type"] == "tool" for p in one["parts"])
        shown = {"id", "role", "is_summary", "created_at", "token_estimate", "finish_reason"}
        assert set(listed["messages"][1]) == shown | {"seq", "parts"}  # docs/cli.md's list
        assert set(one) == shown | {"session_id", "model_id", "parts"}
        assert one["session_id"] == history["claude"] and one["role"] == "assistant"
        other = invoke("show", history["codex"], "--message", message_id, "--db", history["db"])
        assert other.exit_code == 1 and "belongs to" in other.stderr

    def test_stats(self, history: dict[str, str]) -> None:
        whole = ok_json("stats", "--db", history["db"])
        assert whole["sessions"] == 7
        # The pages that hold data, free pages left out (not the file's size).
        uri = f"{Path(history['db']).resolve().as_uri()}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            pages, free, size = (
                conn.execute(f"PRAGMA {name}").fetchone()[0]
                for name in ("page_count", "freelist_count", "page_size")
            )
        assert whole["db_bytes"] == (pages - free) * size > 0
        one = ok_json("stats", history["long"], "--db", history["db"])
        assert one["messages"] == 300 and one["tool_calls"] == 150
        assert one["summaries"] >= 1 and one["compactions"] == one["summaries"]
        assert sum(one["summaries_by_kind"].values()) == one["summaries"]
        assert one["context_tokens"] < one["message_tokens"]
        table = invoke("stats", "--db", history["db"])
        assert table.exit_code == 0 and "pruned tool outputs" in table.stdout

    @pytest.mark.parametrize("fmt", ["jsonl", "openai", "anthropic", "markdown"])
    def test_export(self, history: dict[str, str], fmt: str) -> None:
        result = invoke("export", history["claude"], "--format", fmt, "--db", history["db"])
        assert result.exit_code == 0, result.output
        assert "toolu_01" in result.stdout or "TZ=UTC" in result.stdout
        if fmt == "openai":
            messages = json.loads(result.stdout)
            assert any(m["role"] == "tool" and m["tool_call_id"] == "toolu_01" for m in messages)
        if fmt == "jsonl":
            assert all(json.loads(line)["message"] for line in result.stdout.splitlines())

    @pytest.mark.parametrize(("fmt", "head"), [("mermaid", "graph TD"), ("dot", "digraph")])
    def test_dag(self, history: dict[str, str], fmt: str, head: str) -> None:
        result = invoke("dag", history["long"], "--format", fmt, "--db", history["db"])
        assert result.exit_code == 0 and result.stdout.startswith(head)
        assert _summary_of(history) in result.stdout


def _fingerprint(directory: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.iterdir())
        if p.is_file()
    }


class TestReadOnly:
    def test_read_only_commands_change_no_file(
        self, history: dict[str, str], tmp_path: Path
    ) -> None:
        # A checkpointed copy: the database file alone, no -wal or -shm beside it.
        db = tmp_path / "copy.db"
        with sqlite3.connect(history["db"]) as src, sqlite3.connect(db) as dst:
            src.backup(dst)
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA journal_mode = WAL")
        before = _fingerprint(tmp_path)
        summary = _summary_of(history)
        sid = history["long"]
        for args in (
            ["sessions"],
            ["show", sid],
            ["show", sid, "--full"],
            ["context", sid],
            ["grep", "kumquat"],
            ["grep", "kum.uat", "--regex"],
            ["describe", summary],
            ["expand", summary],
            ["stats"],
            ["stats", sid],
            ["export", sid, "--format", "markdown"],
            ["dag", sid],
            ["check"],
            ["check", "--deep", "--plan"],
        ):
            result = invoke(*args, "--db", str(db))
            assert result.exit_code == 0, (args, result.output)
        assert _fingerprint(tmp_path) == before


class TestErrors:
    @pytest.mark.parametrize(
        "args",
        [
            ["sessions"],
            ["grep", "x"],
            ["describe", "sum_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
            ["expand", "sum_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
            ["stats"],
            ["export", "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
            ["dag", "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
            ["compact", "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
            ["purge", "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", "--yes"],
        ],
    )
    @pytest.mark.parametrize(
        ("kind", "message"),
        [
            ("missing", "no database at"),
            ("empty", "not a mnesis database"),
            ("directory", "is a directory"),
            ("text", "is not a database"),
            ("foreign", "another application"),
        ],
    )
    def test_bad_databases_are_one_line_and_left_alone(
        self, args: list[str], kind: str, message: str, tmp_path: Path
    ) -> None:
        path = tmp_path / "target.db"
        if kind == "empty":
            path.touch()
        elif kind == "directory":
            path.mkdir()
        elif kind == "text":
            path.write_text("hello\n" * 50)
        elif kind == "foreign":
            with sqlite3.connect(path) as conn:
                conn.execute("CREATE TABLE notes (body TEXT)")
        before = _fingerprint(tmp_path)
        result = invoke(*args, "--db", str(path))
        if kind == "empty" and args[0] in ("compact", "purge"):
            # A writing command migrates an empty file into a database; the ID is unknown.
            assert result.exit_code == 1 and "not found" in result.stderr
            return
        assert result.exit_code == 1, result.output
        assert message in result.stderr and "Traceback" not in result.output
        assert len(result.stderr.strip().splitlines()) <= 2
        assert _fingerprint(tmp_path) == before

    @pytest.mark.parametrize(
        "args",
        [
            ["describe", "sum_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
            ["describe", "msg_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
            ["expand", "sum_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
            ["grep", "x", "--session", "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
            ["stats", "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
            ["export", "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
            ["show", "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", "--full"],
        ],
    )
    def test_unknown_ids(self, args: list[str], history: dict[str, str]) -> None:
        result = invoke(*args, "--db", history["db"])
        assert result.exit_code == 1 and "not found" in result.stderr, result.output
        assert "Traceback" not in result.output

    @pytest.mark.parametrize(
        "args",
        [
            ["grep", "x", "--since", "yesterday"],
            ["grep", "x", "--limit", "0"],
            ["expand", "sum_01ARZ3NDEKTSV4RRFFQ69G5FAV", "--cursor", "abc"],
            ["export", "sess_x", "--format", "pdf"],
            ["dag", "sess_x", "--format", "png"],
            ["compact", "sess_x", "--until-under", "0"],
            ["purge", "sess_x"],
        ],
    )
    def test_bad_flags_exit_2(self, args: list[str], history: dict[str, str]) -> None:
        result = invoke(*args, "--db", history["db"])
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output


class TestPurge:
    def test_purge_removes_one_session_and_the_checker_stays_clean(self, tmp_path: Path) -> None:
        db = str(tmp_path / "p.db")
        reports = ok_json("import", str(SAMPLES), "--db", db)
        claude = next(r for r in reports if r["format"] == "claude-code")
        main, side = claude["session_ids"]
        before = {s["id"] for s in ok_json("sessions", "--db", db)}
        purged = ok_json("purge", main, "--yes", "--db", db)
        assert set(purged["session_ids"]) == {main, side}
        assert purged["rows"]["messages"] == 6
        after = {s["id"] for s in ok_json("sessions", "--db", db)}
        assert after == before - {main, side}
        assert invoke("check", "--db", db).exit_code == 0
        assert ok_json("grep", "daylight", "--db", db)["matches"] == []
        again = ok_json("import", str(SAMPLES / "claude_code.jsonl"), "--db", db)
        assert again[0]["status"] == "new"


async def _close_a_session(path: str) -> None:
    pool = StorePool()
    try:
        session = await MnesisSession.create(
            model="fake/model", db_path=path, pool=pool, llm=FakeLLM()
        )
        created = await session.store.get_session(session.id)
        store = await pool.acquire(db_path=path)
        await session.send("hello")
        await session.close()
        closed = await store.get_session(session.id)
        assert created.status == "active" and closed.status == "closed"
        assert closed.updated_at >= created.updated_at
        await store.close()
    finally:
        await pool.close_all()


def test_close_marks_the_session_closed_and_moves_updated_at(tmp_path: Path) -> None:
    asyncio.run(_close_a_session(str(tmp_path / "c.db")))
    listed = ok_json("sessions", "--db", str(tmp_path / "c.db"))
    assert listed[0]["status"] == "closed" and listed[0]["turns"] == 1


class TestUnexpectedErrors:
    def test_a_bug_is_one_line_and_debug_shows_the_traceback(
        self,
        history: dict[str, str],
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        import importlib

        from mnesis.cli import run

        stats_command = importlib.import_module("mnesis.cli.stats_command")

        def broken(*args: object) -> dict[str, Any]:
            raise RuntimeError("boom")

        monkeypatch.setattr(stats_command, "_session_stats", broken)
        assert run(["stats", "--db", history["db"]]) == 1
        err = capsys.readouterr().err
        assert "unexpected RuntimeError: boom" in err and "Traceback" not in err
        with pytest.raises(RuntimeError, match="boom"):
            run(["--debug", "stats", "--db", history["db"]])
        assert run(["stats", "--db", history["db"], "--json"]) == 1  # --debug does not stick
