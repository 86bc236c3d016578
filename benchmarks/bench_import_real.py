"""Transcript import rate on real-shaped Claude Code files (issue 30, item 5).

:mod:`benchmarks.bench_import` imports small synthetic exchanges (a sentence, a 400-byte
tool output). A real Claude Code 2.1 session file is different, and this generator
writes one like it: each exchange is a prompt, one to four tool rounds and an answer;
each round is one API message written as three lines (a thinking block of 0.5-3 KB, a
sentence, the tool call), hook ``progress`` records around each call, a run of
``bash_progress`` records whose ``fullOutput`` grows up to the command's output, and a
tool result of 1-40 KB (a numbered file for ``Read``, a log for ``Bash``) that the line
carries twice (``message.content`` and ``toolUseResult``, as Claude Code writes it);
``turn_duration`` system records and file-history snapshots in between. About 7 KB of
file per stored message, as the 1.44 GB / 201,600-message session of the issue.

The floor is reading and decoding the JSONL alone (the import's own reader, orjson),
on one core: what no import of the file can go below. Run:

    python -m benchmarks.bench_import_real [--exchanges 3000] [--profile]

``--profile`` runs the parse side (parser and batch builder, the work of the import's
parser process) under cProfile in this process and prints where its time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import random
import resource
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from mnesis.importers import import_file
from mnesis.importers.batches import BatchBuilder
from mnesis.importers.formats import FORMATS
from mnesis.importers.pipeline import Limits, cut_batches
from mnesis.importers.reader import read_jsonl
from mnesis.store.immutable import ImmutableStore

_WORDS = (
    "the request handler returns cache key value config module import error retry "
    "timeout session token user order invoice total price tax rate country code test "
    "assert fixture build deploy branch commit diff patch review query index table row "
    "column migration schema worker queue job lock lease parser reader writer batch"
).split()
_MODEL = "claude-opus-4-5-20251101"


class _Text:
    """Seeded text: sentences, numbered source files and logs from a pool (a real
    session reads the same files again and again)."""

    def __init__(self, seed: int, pool: int) -> None:
        self.rng = random.Random(seed)
        self.files = [self._file(self.rng.randint(20, 160)) for _ in range(pool)]
        self.logs = [self._log(self.rng.randint(5, 60)) for _ in range(pool)]

    def words(self, count: int) -> str:
        return " ".join(self.rng.choices(_WORDS, k=count))

    def _file(self, lines: int) -> str:
        body = []
        for number in range(1, lines + 1):
            indent = "    " * self.rng.randint(0, 3)
            body.append(f"{number:>6}\t{indent}{self.words(self.rng.randint(2, 9))}")
        return "\n".join(body)

    def _log(self, lines: int) -> str:
        return "\n".join(
            f"[{i:04d}] {self.words(self.rng.randint(3, 12))} {self.rng.randint(0, 99999)}"
            for i in range(lines)
        )


def _compact(record: dict[str, Any]) -> str:
    """One line as Claude Code writes it (no spaces after separators)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def _stamp(second: int) -> str:
    day, rest = divmod(second, 86_400)
    return (
        f"2026-03-{1 + day % 28:02d}T{rest // 3600:02d}:{rest // 60 % 60:02d}:"
        f"{rest % 60:02d}.{second % 1000:03d}Z"
    )


def realistic_lines(exchanges: int, seed: int = 30, *, pool: int = 120) -> Iterator[str]:
    """The lines of a real-shaped Claude Code 2.1 session with ``exchanges`` prompts
    (tool outputs drawn from ``pool`` files and logs)."""
    text = _Text(seed, pool)
    rng = text.rng
    session = "3d2c1b0a-9f8e-4d7c-8b6a-5f4e3d2c1b0a"
    base = {
        "userType": "external",
        "cwd": "/home/ada/shop",
        "sessionId": session,
        "version": "2.1.12",
        "gitBranch": "main",
        "isSidechain": False,
    }
    second, uid = 0, 0

    def line(kind: str, **fields: Any) -> str:
        nonlocal second, uid
        second += rng.randint(1, 20)
        uid += 1
        record = {"parentUuid": f"u{uid - 1}", **base, "type": kind, "uuid": f"u{uid}"}
        return _compact({**record, "timestamp": _stamp(second), **fields})

    def assistant(message_id: str, block: dict[str, Any], stop: str | None) -> str:
        message = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": _MODEL,
            "content": [block],
            "stop_reason": stop,
            "usage": {"input_tokens": rng.randint(2, 9), "output_tokens": rng.randint(9, 900)},
        }
        return line("assistant", requestId=f"req_{message_id}", message=message)

    for exchange in range(exchanges):
        prompt = f"Step {exchange}: {text.words(rng.randint(8, 40))}"
        yield line("user", message={"role": "user", "content": prompt})
        for rounds in range(rng.randint(1, 4)):
            message_id = f"msg_{exchange}_{rounds}"
            thinking = text.words(rng.randint(80, 450))
            yield assistant(message_id, {"type": "thinking", "thinking": thinking}, None)
            yield assistant(message_id, {"type": "text", "text": text.words(20)}, None)
            call_id = f"toolu_{exchange}_{rounds}"
            tool = rng.choice(("Read", "Read", "Bash", "Bash", "Grep", "Edit"))
            output = rng.choice(text.files if tool == "Read" else text.logs)
            if tool == "Grep":
                output = output[: rng.randint(500, 3000)]
            elif tool == "Edit":
                output = "The file /home/ada/shop/tax/rates.py has been updated."
            call = {"type": "tool_use", "id": call_id, "name": tool, "input": {"x": text.words(6)}}
            yield assistant(message_id, call, "tool_use")
            hook = {"type": "hook_progress", "hookEvent": "PreToolUse", "hookName": tool}
            yield line("progress", toolUseID=call_id, parentToolUseID=call_id, data=hook)
            if tool == "Bash":
                steps = rng.randint(3, 8)
                for step in range(1, steps + 1):
                    partial = output[: len(output) * step // steps]
                    progress = {
                        "type": "bash_progress",
                        "output": partial[-200:],
                        "fullOutput": partial,
                        "elapsedTimeSeconds": step,
                        "totalLines": partial.count("\n") + 1,
                    }
                    yield line("progress", toolUseID=f"bash-{step}", data=progress)
            result = {"type": "tool_result", "tool_use_id": call_id, "content": output}
            echo: dict[str, Any] = (
                {"type": "text", "file": {"filePath": "/home/ada/shop/x.py", "content": output}}
                if tool == "Read"
                else {"stdout": output, "stderr": "", "interrupted": False}
            )
            yield line("user", message={"role": "user", "content": [result]}, toolUseResult=echo)
            hook = {"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": tool}
            yield line("progress", toolUseID=call_id, parentToolUseID=call_id, data=hook)
        answer = {"type": "text", "text": text.words(rng.randint(30, 150))}
        yield assistant(f"msg_{exchange}_end", answer, "end_turn")
        yield line("system", subtype="turn_duration", durationMs=rng.randint(1000, 90000))
        if exchange % 5 == 0:
            snapshot = {"messageId": f"u{uid}", "trackedFileBackups": {}, "timestamp": "x"}
            yield _compact({"type": "file-history-snapshot", "snapshot": snapshot})


def write_transcript(path: str, exchanges: int) -> int:
    """Write the generated session file; returns its size in bytes."""
    with open(path, "w", encoding="utf-8") as handle:
        for text in realistic_lines(exchanges):
            handle.write(text + "\n")
    return os.path.getsize(path)


def _cpu() -> float:
    """CPU seconds of this process (every thread) and of its children that ended."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def floor_seconds(path: str) -> tuple[float, int]:
    """CPU seconds to read and decode every line of ``path`` (and the line count)."""
    started = time.process_time()
    count = sum(1 for _ in read_jsonl(path))
    return time.process_time() - started, count


def parse_seconds(path: str) -> float:
    """CPU seconds of the parse side alone: parser and batch builder, light batches (the
    parser process's work before it builds rows)."""
    parser = FORMATS["claude-code"]()
    builder = BatchBuilder(label=parser.label, light=True)
    skip = getattr(parser, "skip_line", None)  # lines left undecoded, where it has one
    started = time.process_time()
    lines = read_jsonl(path, skip=skip) if skip is not None else read_jsonl(path)
    for _ in cut_batches(lines, parser, builder, Limits(5000, 4_000_000), (0, 0)):
        pass
    return time.process_time() - started


def profile(path: str, top: int = 25) -> None:
    """Print where the parse side spends its time."""
    profiler = cProfile.Profile()
    profiler.runcall(parse_seconds, path)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


async def _run(exchanges: int, show_profile: bool) -> None:
    from benchmarks.bench_import import _floor_lines, _floors  # psycopg and the rest

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "session.jsonl")
        size = write_transcript(path, exchanges)
        floor, lines = floor_seconds(path)
        parse = parse_seconds(path)
        if show_profile:
            profile(path)
        db = os.path.join(tmp, "import.db")
        store = await ImmutableStore.open(db)
        try:
            started, cpu = time.perf_counter(), _cpu()
            report = await import_file(store, path)
            wall, cpu = time.perf_counter() - started, _cpu() - cpu
        finally:
            await store.close()
        n, mb = report.messages_added, size / 1e6
        writes = await _floors(tmp, db, ())
        print(
            f"{exchanges:,} exchanges, {mb:.1f} MB, {lines:,} lines "
            f"({size / n / 1e3:.1f} KB of file per message) → {n:,} messages\n"
            f"  import: {wall:.2f} s wall, {cpu:.2f} s CPU (both processes): "
            f"{n / wall:,.0f} messages/s, {mb / wall:.1f} MB/s wall; "
            f"{n / cpu:,.0f} messages and {mb / cpu:.1f} MB per CPU-second\n"
            f"  parse side alone (parser + batch builder): {parse:.2f} s CPU, "
            f"{n / parse:,.0f} messages and {mb / parse:.1f} MB per CPU-second\n"
            f"  floor (read + decode the JSONL): {floor:.2f} s CPU, {n / floor:,.0f} messages "
            f"and {mb / floor:.1f} MB per CPU-second\n"
            f"  import CPU / floor CPU: {cpu / floor:.2f}x\n"
            f"  the database's own share (sqlite3 executemany of the stored rows):\n"
            f"{_floor_lines(writes, n)}"
        )


def main() -> None:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--exchanges", type=int, default=3000)
    parser.add_argument("--profile", action="store_true", help="Profile the parse side.")
    args = parser.parse_args()
    asyncio.run(_run(args.exchanges, args.profile))


if __name__ == "__main__":
    main()
