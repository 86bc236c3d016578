"""Transcript import rate: a generated Claude Code session file into a fresh SQLite file.

The file has ``turns`` user/assistant exchanges; every other assistant message makes a
tool call answered by a tool result (so 4 lines per exchange with a tool, 2 without).
The rate counts stored messages (a tool-result line becomes part of the assistant
message that made the call, not a message of its own). Run:

    python -m benchmarks.bench_import [--turns 50000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Iterator

from mnesis.importers import import_file
from mnesis.store.immutable import ImmutableStore


def claude_code_lines(turns: int, *, output_bytes: int = 400) -> Iterator[str]:
    """The lines of a Claude Code session file with ``turns`` exchanges."""
    session = "0f9d7a52-1111-4c55-9a7e-2f6d1c0e8b11"
    base = {"sessionId": session, "cwd": "/home/ada/project", "isSidechain": False}
    filler = ("log line with some words and numbers 12345 " * (output_bytes // 40 + 1))[
        :output_bytes
    ]
    for i in range(turns):
        stamp = f"2025-06-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"
        user = {"role": "user", "content": f"Step {i}: please check the build of module {i % 97}"}
        yield json.dumps(
            {**base, "type": "user", "uuid": f"u{i}", "timestamp": stamp, "message": user}
        )
        content: list[dict[str, object]] = [{"type": "text", "text": f"Checking module {i % 97}."}]
        if i % 2 == 0:
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{i}",
                    "name": "Bash",
                    "input": {"command": f"make m{i}"},
                }
            )
        assistant = {
            "id": f"msg_{i}",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": content,
        }
        yield json.dumps(
            {**base, "type": "assistant", "uuid": f"a{i}", "timestamp": stamp, "message": assistant}
        )
        if i % 2 == 0:
            result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": filler}
            yield json.dumps(
                {
                    **base,
                    "type": "user",
                    "uuid": f"r{i}",
                    "timestamp": stamp,
                    "message": {"role": "user", "content": [result]},
                }
            )


def write_transcript(path: str, turns: int) -> int:
    """Write the generated session file; returns its size in bytes."""
    with open(path, "w", encoding="utf-8") as handle:
        for line in claude_code_lines(turns):
            handle.write(line + "\n")
    return os.path.getsize(path)


async def _run(turns: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "session.jsonl")
        size = write_transcript(path, turns)
        store = await ImmutableStore.open(os.path.join(tmp, "import.db"))
        try:
            started = time.perf_counter()
            report = await import_file(store, path)
            elapsed = time.perf_counter() - started
            again = time.perf_counter()
            second = await import_file(store, path)
            unchanged = time.perf_counter() - again
        finally:
            await store.close()
        rate = report.messages_added / elapsed
        print(
            f"{turns:,} exchanges, {size / 1e6:.1f} MB, {report.lines_read:,} lines → "
            f"{report.messages_added:,} messages in {elapsed:.2f} s: {rate:,.0f} messages/s, "
            f"{size / 1e6 / elapsed:.1f} MB/s; "
            f"re-import ({second.status}) {unchanged * 1000:.1f} ms"
        )


def main() -> None:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=50_000)
    asyncio.run(_run(parser.parse_args().turns))


if __name__ == "__main__":
    main()
