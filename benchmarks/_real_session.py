"""A real-shaped Claude Code 2.1 session, seeded: the files of
:mod:`benchmarks.bench_import_real`.

Each exchange is a prompt, one to four tool rounds and an answer. A round is one API
message written as three lines (a thinking block of 0.5-3 KB with its signature, a
sentence, the tool call), hook ``progress`` records around the call and the tool's
result line. The tools and what their lines carry, as Claude Code 2.1 writes them:

* ``Read``: the file numbered as ``cat -n`` with an arrow (``     1→text``: non-ASCII on
  every line), 12-90 lines; ``toolUseResult`` repeats the file unnumbered.
* ``Bash``: a log of 5-45 lines, after a run of ``bash_progress`` records whose
  ``fullOutput`` grows up to the whole output; ``toolUseResult`` repeats it
  (``stdout``).
* ``Grep``: 0.5-3 KB of matches, repeated in ``toolUseResult``.
* ``Edit``: the old and new strings in the call, a numbered snippet in the result and
  the whole file before the edit (``originalFile``) with its patch in ``toolUseResult``.
* ``Task`` (one prompt in twelve): a sub-agent of two to five rounds, its every message
  repeated in an ``agent_progress`` record of the session and written to its own file
  (``<session>/subagents/agent-<id>.jsonl``, ``isSidechain: true``); its report is the
  tool result.

Assistant lines carry the API's whole ``usage`` (cache fields included); prose has the
odd non-ASCII dash; about one prompt in a hundred has a pasted screenshot (30-120 KB of
base64); ``turn_duration`` system records and file-history snapshots come in between.
About 7 KB of file per stored message, as the issue's 1.44 GB / 201,600-message session.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["SESSION_ID", "realistic_lines", "realistic_session"]

SESSION_ID = "3d2c1b0a-9f8e-4d7c-8b6a-5f4e3d2c1b0a"
_WORDS = (
    "the request handler returns cache key value config module import error retry "
    "timeout session token user order invoice total price tax rate country code test "
    "assert fixture build deploy branch commit diff patch review query index table row "
    "column migration schema worker queue job lock lease parser reader writer batch"
).split()
_PROSE = (*_WORDS, "—")  # the model's prose has the odd em dash
_MODEL, _AGENT_MODEL = "claude-opus-4-5-20251101", "claude-haiku-4-5-20251001"
_ROOT = "/home/ada/shop"


class _Text:
    """Seeded text: sentences, source files and logs from a pool (a real session reads
    the same files again and again)."""

    def __init__(self, seed: int, pool: int) -> None:
        self.rng = random.Random(seed)
        self.files = [self._file(self.rng.randint(12, 90)) for _ in range(pool)]
        self.logs = [self._log(self.rng.randint(5, 45)) for _ in range(pool)]

    def words(self, count: int, prose: bool = True) -> str:
        return " ".join(self.rng.choices(_PROSE if prose else _WORDS, k=count))

    def _file(self, lines: int) -> tuple[str, list[str]]:
        path = f"{_ROOT}/{self.words(1, False)}/{self.words(1, False)}.py"
        body = []
        for _ in range(lines):
            indent = "    " * self.rng.randint(0, 3)
            body.append(f"{indent}{self.words(self.rng.randint(2, 9), False)}")
        return path, body

    def _log(self, lines: int) -> str:
        return "\n".join(
            f"[{i:04d}] {self.words(self.rng.randint(3, 12), False)} {self.rng.randint(0, 99999)}"
            for i in range(lines)
        )


def _numbered(lines: list[str], first: int = 1) -> str:
    """Lines as Claude Code's ``Read`` gives them (``cat -n`` with an arrow)."""
    return "\n".join(f"{n:>6}→{line}" for n, line in enumerate(lines, first))


def _compact(record: dict[str, Any]) -> str:
    """One line as Claude Code writes it (no spaces after separators)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def _stamp(second: int) -> str:
    day, rest = divmod(second, 86_400)
    return (
        f"2026-03-{1 + day % 28:02d}T{rest // 3600:02d}:{rest // 60 % 60:02d}:"
        f"{rest % 60:02d}.{second % 1000:03d}Z"
    )


class _Writer:
    """The records of one transcript file (the session's, or a sub-agent's)."""

    def __init__(self, text: _Text, clock: list[int], agent: str | None = None) -> None:
        self.text, self.rng, self.clock = text, text.rng, clock
        self.base: dict[str, Any] = {
            "userType": "external",
            "cwd": _ROOT,
            "sessionId": SESSION_ID,
            "version": "2.1.12",
            "gitBranch": "main",
            "isSidechain": agent is not None,
        }
        if agent is not None:
            self.base["agentId"] = agent
        self.prefix, self.uid = agent or "u", 0

    def record(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.clock[0] += self.rng.randint(1, 20)
        self.uid += 1
        parent = f"{self.prefix}{self.uid - 1}" if self.uid > 1 else None
        uuid = f"{self.prefix}{self.uid}"
        head = {"parentUuid": parent, **self.base, "type": kind, "uuid": uuid}
        return {**head, "timestamp": _stamp(self.clock[0]), **fields}

    def assistant(self, message_id: str, block: dict[str, Any], stop: str | None) -> dict[str, Any]:
        rng = self.rng
        usage = {
            "input_tokens": rng.randint(2, 9),
            "cache_creation_input_tokens": rng.randint(0, 4000),
            "cache_read_input_tokens": rng.randint(10_000, 150_000),
            "cache_creation": {
                "ephemeral_5m_input_tokens": 0,
                "ephemeral_1h_input_tokens": rng.randint(0, 4000),
            },
            "output_tokens": rng.randint(9, 900),
            "service_tier": "standard",
        }
        message = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": _AGENT_MODEL if self.base["isSidechain"] else _MODEL,
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        return self.record("assistant", requestId=f"req_{message_id}", message=message)

    def thinking(self) -> dict[str, Any]:
        thought = self.text.words(self.rng.randint(80, 450))
        size = 200 + len(thought) // 3
        signature = base64.b64encode(self.rng.randbytes(size)).decode()
        return {"type": "thinking", "thinking": thought, "signature": signature}


def _tool(text: _Text, tool: str, call_id: str) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """A call's input, its result's content and the line's ``toolUseResult``."""
    rng = text.rng
    if tool == "Read":
        path, lines = rng.choice(text.files)
        raw = "\n".join(lines)
        file = {"filePath": path, "content": raw, "numLines": len(lines), "startLine": 1,
                "totalLines": len(lines)}  # fmt: skip
        return {"file_path": path}, _numbered(lines), {"type": "text", "file": file}
    if tool == "Grep":
        found = "\n".join(
            f"{rng.choice(text.files)[0]}:{rng.randint(1, 160)}:{text.words(8, False)}"
            for _ in range(rng.randint(8, 50))
        )
        echo = {"mode": "content", "numFiles": 4, "filenames": [], "content": found,
                "numLines": found.count("\n") + 1}  # fmt: skip
        return (
            {"pattern": text.words(1, False), "path": _ROOT, "output_mode": "content"},
            found,
            echo,
        )
    if tool == "Edit":
        path, lines = rng.choice(text.files)
        at = rng.randrange(len(lines))
        old = lines[at : at + rng.randint(2, 6)]
        new = [f"{line} {text.words(2, False)}" for line in old]
        snippet = lines[max(0, at - 4) : at] + new + lines[at + len(old) : at + len(old) + 4]
        result = (
            f"The file {path} has been updated. Here's the result of running `cat -n` on a "
            f"snippet of the edited file:\n{_numbered(snippet, max(1, at - 3))}"
        )
        changed = [f"-{x}" for x in old] + [f"+{x}" for x in new]
        patch = {"oldStart": at + 1, "oldLines": len(old), "newStart": at + 1,
                 "newLines": len(new), "lines": changed}  # fmt: skip
        call = {"file_path": path, "old_string": "\n".join(old), "new_string": "\n".join(new)}
        echo = {"filePath": path, "oldString": call["old_string"], "newString": call["new_string"],
                "originalFile": "\n".join(lines), "structuredPatch": [patch],
                "userModified": False, "replaceAll": False}  # fmt: skip
        return call, result, echo
    log = rng.choice(text.logs)
    command = {"command": f"pytest -q {text.words(1, False)}", "description": text.words(4)}
    return command, log, {"stdout": log, "stderr": "", "interrupted": False, "isImage": False}


def _round(
    w: _Writer, emit: Callable[[dict[str, Any]], None], message_id: str, tool: str, call_id: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One tool round of ``w``'s transcript (the Task tool's result excepted): emits its
    lines and gives its assistant and result records (a sub-agent's, for progress)."""
    emit(w.assistant(message_id, w.thinking(), None))
    emit(w.assistant(message_id, {"type": "text", "text": w.text.words(20)}, None))
    call, output, echo = _tool(w.text, tool, call_id)
    block = {"type": "tool_use", "id": call_id, "name": tool, "input": call}
    asked = w.assistant(message_id, block, "tool_use")
    emit(asked)
    hook = {"type": "hook_progress", "hookEvent": "PreToolUse", "hookName": f"PreToolUse:{tool}",
            "command": "./hooks/guard.sh"}  # fmt: skip
    emit(w.record("progress", toolUseID=call_id, parentToolUseID=call_id, data=hook))
    if tool == "Bash":
        steps = w.rng.randint(3, 8)
        for step in range(1, steps + 1):
            partial = output[: len(output) * step // steps]
            data = {"type": "bash_progress", "output": partial[-200:], "fullOutput": partial,
                    "elapsedTimeSeconds": step, "totalLines": partial.count("\n") + 1}  # fmt: skip
            emit(w.record("progress", toolUseID=f"bash-progress-{step}", parentToolUseID=call_id,
                          data=data))  # fmt: skip
    result = {"type": "tool_result", "tool_use_id": call_id, "content": output}
    answered = w.record("user", message={"role": "user", "content": [result]}, toolUseResult=echo)
    emit(answered)
    hook = {**hook, "hookEvent": "PostToolUse", "hookName": f"PostToolUse:{tool}"}
    emit(w.record("progress", toolUseID=call_id, parentToolUseID=call_id, data=hook))
    return asked, answered


def realistic_session(
    exchanges: int, seed: int = 30, *, pool: int = 120
) -> Iterator[tuple[str | None, str]]:
    """The lines of a real-shaped session with ``exchanges`` prompts, each with the
    sub-agent it belongs to (None: the session's own file); tool outputs drawn from
    ``pool`` files and logs."""
    text = _Text(seed, pool)
    rng = text.rng
    clock = [0]
    main = _Writer(text, clock)
    lines: list[tuple[str | None, str]] = []

    def emit(record: dict[str, Any], agent: str | None = None) -> None:
        lines.append((agent, _compact(record)))

    for exchange in range(exchanges):
        content: Any = f"Step {exchange}: {text.words(rng.randint(8, 40))}"
        if rng.random() < 0.01:
            image = base64.b64encode(rng.randbytes(rng.randint(22_000, 90_000))).decode()
            source = {"type": "base64", "media_type": "image/png", "data": image}
            content = [{"type": "text", "text": content}, {"type": "image", "source": source}]
        emit(main.record("user", message={"role": "user", "content": content}))
        for rounds in range(rng.randint(1, 4)):
            message_id, call_id = f"msg_{exchange}_{rounds}", f"toolu_{exchange}_{rounds}"
            if rounds == 0 and exchange % 12 == 4:
                _task(main, emit, message_id, call_id, f"a{exchange:06x}")
            else:
                tool = rng.choice(("Read", "Read", "Read", "Bash", "Bash", "Bash", "Grep",
                                   "Edit", "Edit"))  # fmt: skip
                _round(main, emit, message_id, tool, call_id)
        answer = {"type": "text", "text": text.words(rng.randint(30, 150))}
        emit(main.assistant(f"msg_{exchange}_end", answer, "end_turn"))
        emit(main.record("system", subtype="turn_duration", durationMs=rng.randint(1000, 90000),
                         isMeta=False))  # fmt: skip
        if exchange % 5 == 0:
            snapshot = {"messageId": f"u{main.uid}", "trackedFileBackups": {},
                        "timestamp": _stamp(clock[0])}  # fmt: skip
            emit({"type": "file-history-snapshot", "messageId": f"u{main.uid}",
                  "snapshot": snapshot, "isSnapshotUpdate": False})  # fmt: skip
        yield from lines
        lines.clear()


def _task(
    main: _Writer,
    emit: Callable[[dict[str, Any], str | None], None],
    message_id: str,
    call_id: str,
    agent: str,
) -> None:
    """A ``Task`` round: the call, the sub-agent's own transcript (each of its messages
    also an ``agent_progress`` record of the session) and its report."""
    text, rng = main.text, main.rng
    prompt = f"Find every caller of {text.words(3, False)} and report how each uses it."
    emit(main.assistant(message_id, main.thinking(), None), None)
    call = {"description": text.words(4), "prompt": prompt, "subagent_type": "Explore"}
    block = {"type": "tool_use", "id": call_id, "name": "Task", "input": call}
    emit(main.assistant(message_id, block, "tool_use"), None)
    sub = _Writer(text, main.clock, agent)
    first = sub.record("user", message={"role": "user", "content": prompt})
    emit(first, agent)
    shown: list[dict[str, Any]] = [first]

    def sub_emit(record: dict[str, Any]) -> None:
        emit(record, agent)
        if record["type"] != "progress":
            shown.append(record)

    for step in range(rng.randint(2, 5)):
        tool = rng.choice(("Read", "Read", "Grep"))
        _round(sub, sub_emit, f"msg_{agent}_{step}", tool, f"toolu_{agent}_{step}")
    report = text.words(rng.randint(150, 500))
    sub_emit(sub.assistant(f"msg_{agent}_end", {"type": "text", "text": report}, "end_turn"))
    for record in shown:
        inner = {"type": record["type"], "message": record["message"], "uuid": record["uuid"],
                 "timestamp": record["timestamp"]}  # fmt: skip
        data = {"type": "agent_progress", "agentId": agent, "prompt": prompt, "message": inner,
                "normalizedMessages": []}  # fmt: skip
        emit(main.record("progress", toolUseID=f"agent_msg_{record['uuid']}",
                         parentToolUseID=call_id, data=data), None)  # fmt: skip
    content = [{"type": "text", "text": report}]
    echo = {"status": "completed", "prompt": prompt, "agentId": agent, "content": content,
            "totalDurationMs": rng.randint(5000, 90000), "totalTokens": rng.randint(5000, 60000),
            "totalToolUseCount": len(shown) // 2}  # fmt: skip
    result = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    emit(main.record("user", message={"role": "user", "content": [result]}, toolUseResult=echo),
         None)  # fmt: skip


def realistic_lines(exchanges: int, seed: int = 30, *, pool: int = 120) -> Iterator[str]:
    """The lines of the session's own file (see :func:`realistic_session`)."""
    return (line for agent, line in realistic_session(exchanges, seed, pool=pool) if agent is None)
