"""A ~200 MB Claude Code transcript imports in bounded memory (peak RSS growth < 100 MB).

The file is generated on the fly; the import runs in a fresh interpreter so its peak
RSS (``ru_maxrss``) is the import's own. A file this large is parsed in a process of its
own (``mnesis.importers.process``): its peak RSS, whole (interpreter and imports
included), must stay under the writer's starting RSS plus the same 100 MB."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TARGET_BYTES = 200 * 1024 * 1024
OUTPUT_BYTES = 20_000

_CHILD = """
import asyncio, json, resource, sys
from mnesis.importers import import_file
from mnesis.store import ImmutableStore

async def main(db, path):
    store = await ImmutableStore.open(db)
    await store.list_session_ids()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = await import_file(store, path)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    parser = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    await store.close()
    print(json.dumps({"growth_kb": after - before, "parser_peak_kb": parser, "before_kb": before,
                      "messages": report.messages_added, "errors": len(report.errors)}))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def _write_transcript(path: Path) -> int:
    """Exchanges of a user turn, a tool call and a large tool result, until TARGET_BYTES."""
    base = {"sessionId": "big", "cwd": "/srv/big", "isSidechain": False}
    output = ("compiling module with a long build log line 0123456789 " * 400)[:OUTPUT_BYTES]
    written = exchanges = 0
    with path.open("w", encoding="utf-8") as handle:
        while written < TARGET_BYTES:
            i = exchanges
            lines = [
                {**base, "type": "user", "message": {"role": "user", "content": f"build {i}"}},
                {
                    **base,
                    "type": "assistant",
                    "message": {
                        "id": f"m{i}",
                        "role": "assistant",
                        "model": "claude-sonnet-4-5",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": f"t{i}",
                                "name": "Bash",
                                "input": {"command": "make"},
                            }
                        ],
                    },
                },
                {
                    **base,
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": f"t{i}", "content": output}
                        ],
                    },
                },
            ]
            text = "".join(json.dumps(line) + "\n" for line in lines)
            handle.write(text)
            written += len(text)
            exchanges += 1
    return exchanges


@pytest.mark.slow
def test_a_200_mb_transcript_imports_in_bounded_memory(tmp_path: Path) -> None:
    transcript = tmp_path / "big.jsonl"
    exchanges = _write_transcript(transcript)
    assert transcript.stat().st_size >= TARGET_BYTES
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path / "big.db"), str(transcript)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["messages"] == 2 * exchanges and result["errors"] == 0
    assert result["growth_kb"] < 100 * 1024, result
    assert result["parser_peak_kb"] > 0, "a file this large is parsed in its own process"
    assert result["parser_peak_kb"] - result["before_kb"] < 100 * 1024, result
